//! Cross-lane data movement: DPP permutations and masks, SDWA sub-dword selects, and the
//! lane patterns of `ds_swizzle_b32`.

use super::wave::{Lanes, LANES};
use crate::decode::Dpp;

/// The lane a DPP control makes `lane` read, or `None` when the source is out of range.
pub(super) fn dpp_source(ctrl: u16, lane: usize) -> Option<usize> {
    let row = lane & !15;
    let in_row = lane & 15;
    let c = usize::from(ctrl);
    match ctrl {
        0x000..=0x0FF => Some((lane & !3) | (c >> (2 * (lane & 3))) & 3),
        0x101..=0x10F => {
            let n = c & 15;
            (in_row + n < 16).then_some(lane + n)
        }
        0x111..=0x11F => {
            let n = c & 15;
            (in_row >= n).then(|| lane - n)
        }
        0x121..=0x12F => Some(row | ((in_row + 16 - (c & 15)) % 16)),
        0x130 => (lane + 1 < LANES).then_some(lane + 1),
        0x134 => Some((lane + 1) % LANES),
        0x138 => lane.checked_sub(1),
        0x13C => Some((lane + LANES - 1) % LANES),
        0x140 => Some(row | (15 - in_row)),
        0x141 => Some((lane & !7) | (7 - (lane & 7))),
        0x142 => (lane >= 16).then(|| row - 1),
        0x143 => (lane >= 32).then_some(31),
        // row_newbcast:n (gfx90a, gfx94x) and GFX10+'s row_share:n: every lane of a row reads
        // its row's lane n.
        0x150..=0x15F => Some(row | (c & 15)),
        // row_xmask:n (GFX10+): lane i of a row reads lane i ^ n.
        0x160..=0x16F => Some(row | (in_row ^ (c & 15))),
        _ => None,
    }
}

/// The lane `lane` reads under DPP `d`: its DPP16 control, or GFX10+'s DPP8 selects (each
/// lane reads a lane of its group of eight).
fn dpp_lane(d: &Dpp, lane: usize) -> Option<usize> {
    match d.lanes8 {
        Some(sel) => Some((lane & !7) | ((sel >> (3 * (lane & 7))) & 7) as usize),
        None => dpp_source(d.ctrl, lane),
    }
}

/// The lane `lane` reads under DPP `d`, if that source is valid: in range, and enabled in
/// `exec` unless GFX10+'s fetch-inactive (FI) bit reads disabled lanes too. Without FI (GFX9
/// has none) a lane EXEC disables is an invalid source like one out of range (HIP's
/// `__syncthreads_and` in a partial wave relies on it).
fn dpp_valid_source(d: &Dpp, lane: usize, exec: u64) -> Option<usize> {
    dpp_lane(d, lane).filter(|&s| d.fetch_inactive || (exec >> s) & 1 != 0)
}

/// Source values as DPP delivers them (invalid sources read 0).
pub(super) fn dpp_permute(vals: &Lanes, d: &Dpp, exec: u64) -> Lanes {
    std::array::from_fn(|l| {
        dpp_valid_source(d, l, exec)
            .and_then(|s| vals.get(s).copied())
            .unwrap_or(0)
    })
}

/// Lanes DPP lets write: those of enabled rows and banks, and without BOUND_CTRL only those
/// whose source is valid.
pub(super) fn dpp_write_mask(d: &Dpp, exec: u64) -> u64 {
    let mut m = 0u64;
    for l in 0..LANES {
        let row_on = (d.row_mask >> (l / 16)) & 1 != 0;
        let bank_on = (d.bank_mask >> ((l % 16) / 4)) & 1 != 0;
        // DPP8 writes every lane (an invalid source reads 0).
        let src_ok = d.bound_ctrl || d.lanes8.is_some() || dpp_valid_source(d, l, exec).is_some();
        if row_on && bank_on && src_ok {
            m |= 1 << l;
        }
    }
    m
}

/// SDWA source select: BYTE_0..3 (0-3), WORD_0/1 (4, 5), DWORD (6).
pub(super) fn sdwa_select(v: u32, sel: u8, sext: bool) -> u32 {
    match sel {
        0..=3 => {
            let b = (v >> (8 * u32::from(sel))) & 0xFF;
            if sext {
                b as u8 as i8 as i32 as u32
            } else {
                b
            }
        }
        4 | 5 => {
            let h = (v >> (16 * u32::from(sel - 4))) & 0xFFFF;
            if sext {
                h as u16 as i16 as i32 as u32
            } else {
                h
            }
        }
        _ => v,
    }
}

/// SDWA destination: `new` placed at `sel` in `old`; the rest zero (UNUSED_PAD, 0),
/// sign-extended (UNUSED_SEXT, 1) or kept (UNUSED_PRESERVE, 2).
pub(super) fn sdwa_place(old: u32, new: u32, sel: u8, unused: u8) -> u32 {
    let (shift, bits) = match sel {
        0..=3 => (8 * u32::from(sel), 8),
        4 | 5 => (16 * u32::from(sel - 4), 16),
        _ => return new,
    };
    let field = (new & ((1 << bits) - 1)) << shift;
    let mask = ((1u32 << bits) - 1) << shift;
    match unused {
        2 => (old & !mask) | field,
        1 => {
            let top = shift + bits;
            let negative = (new >> (bits - 1)) & 1 != 0;
            if negative && top < 32 {
                field | (u32::MAX << top)
            } else {
                field
            }
        }
        _ => field,
    }
}

/// The lane `ds_swizzle_b32` with `offset` makes `lane` read.
pub(super) fn swizzle_source(offset: u16, lane: usize) -> usize {
    if offset & 0x8000 != 0 {
        // Quad permute.
        let sel = usize::from(offset) >> (2 * (lane & 3)) & 3;
        (lane & !3) | sel
    } else {
        // Bit-mask permute within groups of 32 lanes.
        let and = usize::from(offset & 0x1F);
        let or = usize::from((offset >> 5) & 0x1F);
        let xor = usize::from((offset >> 10) & 0x1F);
        (lane & !31) | ((((lane & 31) & and) | or) ^ xor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dpp_patterns() {
        assert_eq!(dpp_source(0x1B, 0), Some(3)); // quad_perm [3,2,1,0]
        assert_eq!(dpp_source(0x111, 16), None); // row_shr:1 at row start
        assert_eq!(dpp_source(0x111, 17), Some(16));
        assert_eq!(dpp_source(0x101, 15), None);
        assert_eq!(dpp_source(0x121, 16), Some(31)); // row_ror:1
        assert_eq!(dpp_source(0x142, 20), Some(15));
        assert_eq!(
            dpp_source(0x152, 20),
            Some(18),
            "row_newbcast:2 in the second row"
        );
        assert_eq!(dpp_source(0x15F, 0), Some(15));
        assert_eq!(dpp_source(0x143, 40), Some(31));
        assert_eq!(dpp_source(0x138, 0), None);
        let d = Dpp {
            ctrl: 0x111,
            row_mask: 0xF,
            bank_mask: 0xF,
            bound_ctrl: false,
            fetch_inactive: false,
            lanes8: None,
        };
        assert_eq!(dpp_write_mask(&d, u64::MAX) & 0x3, 0b10);
        let v: Lanes = std::array::from_fn(|l| l as u32);
        assert_eq!(dpp_permute(&v, &d, u64::MAX)[17], 16);
        // A disabled source lane is invalid: lane 17 reads lane 16, which EXEC disables.
        let exec = !(1u64 << 16);
        assert_eq!(dpp_write_mask(&d, exec) & (1 << 17), 0);
        assert_eq!(dpp_permute(&v, &d, exec)[17], 0);
        let bound = Dpp {
            bound_ctrl: true,
            ..d
        };
        assert_ne!(
            dpp_write_mask(&bound, exec) & (1 << 17),
            0,
            "written, with 0"
        );
        // GFX10+ fetch-inactive reads the disabled lane.
        let fi = Dpp {
            fetch_inactive: true,
            ..d
        };
        assert_eq!(dpp_permute(&v, &fi, exec)[17], 16);
    }

    #[test]
    fn gfx11_dpp_forms() {
        assert_eq!(dpp_source(0x161, 16), Some(17), "row_xmask:1");
        assert_eq!(dpp_source(0x16F, 20), Some(16 + (4 ^ 15)));
        // dpp8:[7,6,5,4,3,2,1,0] reverses each group of eight lanes.
        let sel = (0..8).fold(0u32, |a, i| a | (7 - i) << (3 * i));
        let d = Dpp {
            ctrl: 0,
            row_mask: 0xF,
            bank_mask: 0xF,
            bound_ctrl: false,
            fetch_inactive: false,
            lanes8: Some(sel),
        };
        let v: Lanes = std::array::from_fn(|l| l as u32);
        let p = dpp_permute(&v, &d, u64::MAX);
        assert_eq!((p[0], p[7], p[8], p[63]), (7, 0, 15, 56));
        // A disabled source reads 0 without FI; DPP8 still writes every lane.
        let exec = !(1u64 << 7);
        assert_eq!(dpp_permute(&v, &d, exec)[0], 0);
        assert_eq!(dpp_write_mask(&d, exec), u64::MAX);
    }

    #[test]
    fn sdwa_selects() {
        assert_eq!(sdwa_select(0x1234_80FF, 1, true), 0xFFFF_FF80);
        assert_eq!(sdwa_select(0x1234_80FF, 5, false), 0x1234);
        assert_eq!(sdwa_place(0xAAAA_AAAA, 0x1FF, 1, 2), 0xAAAA_FFAA);
        assert_eq!(sdwa_place(0xAAAA_AAAA, 0x80, 0, 1), 0xFFFF_FF80);
        assert_eq!(sdwa_place(0xAAAA_AAAA, 0x1234, 5, 0), 0x1234_0000);
        assert_eq!(swizzle_source(0x10, 5), 0); // broadcast lane 0 of groups of 16
        assert_eq!(swizzle_source(0x041F, 5), 4); // swap neighbours
    }
}
