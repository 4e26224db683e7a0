//! COPY LINEAR_SUB_WINDOW's fields: checking, writing and reading its 13 dwords.
//!
//! The layout is the same on SDMA 4, 5 and 6 except for the width of the z fields and the cache
//! policies SDMA 6 adds (Linux `vega10_sdma_pkt_open.h`, `navi10_sdma_pkt_open.h`,
//! `sdma_v6_0_0_pkt_open.h`, `SDMA_PKT_COPY_LINEAR_SUBWIN_*`):
//!
//! | dword | bits |
//! |---|---|
//! | 0 | op 1, sub-op 4, TMZ 18, CPV 19 (SDMA 6), log2 element size 29-31 |
//! | 1-2 | source address |
//! | 3 | source x 0-13, y 16-29 |
//! | 4 | source z 0-10 (SDMA 4) or 0-12, pitch - 1 13-31 |
//! | 5 | source slice pitch - 1 0-27 |
//! | 6-10 | the same for the destination |
//! | 11 | width - 1 0-13, height - 1 16-29 |
//! | 12 | depth - 1 (as z), DST_SW 16-17, dst cache policy 18-20, SRC_SW 24-25, src cache policy 26-28 |
//!
//! Offsets, pitches and extents count elements; pitches and extents are stored minus one (ROCr's
//! `BuildCopyRectCommand` and Mesa's `ac_emit_sdma_copy_linear_sub_window` both write
//! `pitch - 1`, `slice_pitch - 1`, `width - 1`, ...).

use crate::check::{aligned, fits, no_wrap};
use crate::fields::*;
use crate::{DecodeError, EncodeError, SdmaVersion, SubWindowCopy, SubWindowSurface};

pub(crate) const NAME: &str = "COPY_LINEAR_SUB_WINDOW";

/// Field names of one side, for errors.
struct Side {
    addr: &'static str,
    x: &'static str,
    y: &'static str,
    z: &'static str,
    pitch: &'static str,
    slice_pitch: &'static str,
    swap: &'static str,
    cache_policy: &'static str,
}

const SRC: Side = Side {
    addr: "source address",
    x: "src.x",
    y: "src.y",
    z: "src.z",
    pitch: "src.pitch",
    slice_pitch: "src.slice_pitch",
    swap: "src.swap",
    cache_policy: "src.cache_policy",
};

const DST: Side = Side {
    addr: "destination address",
    x: "dst.x",
    y: "dst.y",
    z: "dst.z",
    pitch: "dst.pitch",
    slice_pitch: "dst.slice_pitch",
    swap: "dst.swap",
    cache_policy: "dst.cache_policy",
};

/// `value` is 1 ..= `max`: stored minus one in a field of `log2(max)` bits.
fn extent(field: &'static str, value: u32, max: u64) -> Result<(), EncodeError> {
    if value == 0 {
        return Err(EncodeError::Zero {
            packet: NAME,
            field,
        });
    }
    fits(NAME, field, u64::from(value), max)
}

/// Bytes from a surface's address to the end of the last element the window touches. Only
/// called on checked fields, whose products stay below 2^47.
fn span(c: &SubWindowCopy, s: &SubWindowSurface) -> u64 {
    let last_x = u64::from(s.x) + u64::from(c.width) - 1;
    let last_y = u64::from(s.y) + u64::from(c.height) - 1;
    let last_z = u64::from(s.z) + u64::from(c.depth) - 1;
    let last = last_x + last_y * u64::from(s.pitch) + last_z * u64::from(s.slice_pitch);
    (last + 1) * c.element_bytes()
}

fn max_z(ver: SdmaVersion) -> u32 {
    (1 << ver.sub_window_z_bits()) - 1
}

pub(crate) fn validate(c: &SubWindowCopy, ver: SdmaVersion) -> Result<(), EncodeError> {
    fits(
        NAME,
        "element size",
        u64::from(c.element_size_log2),
        u64::from(SUB_WINDOW_ELEMENT_MAX),
    )?;
    let policies = ver.has_copy_cache_policy();
    fits(
        NAME,
        "cache_policy_valid",
        u64::from(c.cache_policy_valid),
        u64::from(policies),
    )?;
    let xy_max = u64::from(SUB_WINDOW_XY_MASK);
    let z_max = u64::from(max_z(ver));
    extent("width", c.width, xy_max + 1)?;
    extent("height", c.height, xy_max + 1)?;
    extent("depth", c.depth, z_max + 1)?;
    let policy_max = if policies { CACHE_POLICY_MASK } else { 0 };
    for (n, s) in [(&SRC, &c.src), (&DST, &c.dst)] {
        aligned(NAME, s.addr, 4)?;
        fits(NAME, n.x, u64::from(s.x), xy_max)?;
        fits(NAME, n.y, u64::from(s.y), xy_max)?;
        fits(NAME, n.z, u64::from(s.z), z_max)?;
        extent(n.pitch, s.pitch, 1 << SUB_WINDOW_PITCH_BITS)?;
        extent(n.slice_pitch, s.slice_pitch, 1 << SUB_WINDOW_SLICE_BITS)?;
        fits(NAME, n.swap, u64::from(s.swap), u64::from(SWAP_MASK))?;
        fits(
            NAME,
            n.cache_policy,
            u64::from(s.cache_policy),
            u64::from(policy_max),
        )?;
        no_wrap(NAME, s.addr, span(c, s))?;
    }
    Ok(())
}

fn lo(v: u64) -> u32 {
    v as u32
}

fn hi(v: u64) -> u32 {
    (v >> 32) as u32
}

/// Appends the packet; `validate` has passed, so every field fits.
pub(crate) fn encode(c: &SubWindowCopy, out: &mut Vec<u32>) {
    let tmz = if c.tmz { COPY_TMZ } else { 0 };
    let cpv = if c.cache_policy_valid { COPY_CPV } else { 0 };
    let flags = tmz | cpv | u32::from(c.element_size_log2) << SUB_WINDOW_ELEMENT_SHIFT;
    out.push(header(op::COPY, sub_op::COPY_LINEAR_SUB_WINDOW, flags));
    for s in [&c.src, &c.dst] {
        out.extend_from_slice(&[
            lo(s.addr),
            hi(s.addr),
            s.x | s.y << SUB_WINDOW_Y_SHIFT,
            s.z | (s.pitch - 1) << SUB_WINDOW_PITCH_SHIFT,
            s.slice_pitch - 1,
        ]);
    }
    out.extend_from_slice(&[
        (c.width - 1) | (c.height - 1) << SUB_WINDOW_Y_SHIFT,
        (c.depth - 1)
            | u32::from(c.dst.swap) << SUB_WINDOW_DST_SWAP_SHIFT
            | u32::from(c.dst.cache_policy) << SUB_WINDOW_DST_POLICY_SHIFT
            | u32::from(c.src.swap) << SUB_WINDOW_SRC_SWAP_SHIFT
            | u32::from(c.src.cache_policy) << SUB_WINDOW_SRC_POLICY_SHIFT,
    ]);
}

/// Reads the packet at `d` (its header already known to be LINEAR_SUB_WINDOW). Reserved bits,
/// and SDMA 6's cache-policy bits on earlier engines, are ignored; an element size above 16
/// bytes or an unaligned address is refused.
pub(crate) fn decode(ver: SdmaVersion, d: &[u32]) -> Result<SubWindowCopy, DecodeError> {
    let d = d.get(..SUB_WINDOW_DWORDS).ok_or(DecodeError::Truncated {
        needed: SUB_WINDOW_DWORDS,
        available: d.len(),
    })?;
    let bad = |field, value| DecodeError::BadField {
        op: op::COPY,
        field,
        value,
    };
    let h = d[0];
    let element = h >> SUB_WINDOW_ELEMENT_SHIFT;
    if element > SUB_WINDOW_ELEMENT_MAX {
        return Err(bad("element size", element));
    }
    let policies = ver.has_copy_cache_policy();
    let z_mask = max_z(ver);
    let d12 = d[12];
    let policy = |shift: u32| {
        if policies {
            ((d12 >> shift) & CACHE_POLICY_MASK) as u8
        } else {
            0
        }
    };
    let side = |n: &Side, w: &[u32], swap_shift: u32, policy_shift: u32| {
        let addr = u64::from(w[0]) | u64::from(w[1]) << 32;
        if addr % 4 != 0 {
            return Err(bad(n.addr, w[0]));
        }
        Ok(SubWindowSurface {
            addr,
            x: w[2] & SUB_WINDOW_XY_MASK,
            y: (w[2] >> SUB_WINDOW_Y_SHIFT) & SUB_WINDOW_XY_MASK,
            z: w[3] & z_mask,
            pitch: (w[3] >> SUB_WINDOW_PITCH_SHIFT) + 1,
            slice_pitch: (w[4] & ((1 << SUB_WINDOW_SLICE_BITS) - 1)) + 1,
            swap: ((d12 >> swap_shift) & SWAP_MASK) as u8,
            cache_policy: policy(policy_shift),
        })
    };
    Ok(SubWindowCopy {
        element_size_log2: element as u8,
        tmz: h & COPY_TMZ != 0,
        cache_policy_valid: policies && h & COPY_CPV != 0,
        src: side(
            &SRC,
            &d[1..6],
            SUB_WINDOW_SRC_SWAP_SHIFT,
            SUB_WINDOW_SRC_POLICY_SHIFT,
        )?,
        dst: side(
            &DST,
            &d[6..11],
            SUB_WINDOW_DST_SWAP_SHIFT,
            SUB_WINDOW_DST_POLICY_SHIFT,
        )?,
        width: (d[11] & SUB_WINDOW_XY_MASK) + 1,
        height: ((d[11] >> SUB_WINDOW_Y_SHIFT) & SUB_WINDOW_XY_MASK) + 1,
        depth: (d12 & z_mask) + 1,
    })
}
