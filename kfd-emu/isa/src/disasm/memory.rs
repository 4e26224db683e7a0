//! Memory instruction text: SMEM, DS, FLAT/GLOBAL/SCRATCH, MUBUF/MTBUF.

use super::operand::operand;
use super::sep;
use crate::decode::{flags, Format, Inst, Operand};
use crate::target::{Generation, Target};
use std::fmt::Write;

/// Cache-policy modifiers: gfx940 names the GLC/SLC/SCC bits sc0/nt/sc1.
fn cache_bits(out: &mut String, t: Target, i: &Inst) {
    if t.gfx940_cache_bits() {
        for (f, name) in [
            (flags::GLC, " sc0"),
            (flags::SLC, " nt"),
            (flags::SCC, " sc1"),
        ] {
            if i.has(f) {
                out.push_str(name);
            }
        }
    } else {
        // GFX11 has DLC where GFX9 has SCC.
        let third = if t.generation() == Generation::Gfx11 {
            " dlc"
        } else {
            " scc"
        };
        for (f, name) in [
            (flags::GLC, " glc"),
            (flags::SLC, " slc"),
            (flags::SCC, third),
        ] {
            if i.has(f) {
                out.push_str(name);
            }
        }
    }
}

fn smem(out: &mut String, t: Target, i: &Inst) {
    let mut first = true;
    if i.name.starts_with("s_atc_probe") {
        if i.offset1 <= 64 {
            let _ = write!(out, " {}", i.offset1);
        } else {
            let _ = write!(out, " {:#x}", i.offset1);
        }
        first = false;
    }
    for op in [i.dst, i.saddr] {
        if op != Operand::None {
            sep(out, &mut first);
            operand(out, t, op);
        }
    }
    if i.name.starts_with("s_dcache_discard")
        || i.name.starts_with("s_atc_probe")
        || (i.dst != Operand::None && i.saddr != Operand::None)
    {
        sep(out, &mut first);
        if t.generation() == Generation::Gfx11 {
            // GFX11 always has both offsets: the SGPR (or `null`) and an immediate printed
            // after it when not zero (alone when the SGPR is null).
            if i.has(flags::SOE) {
                operand(out, t, i.soffset);
                if i.offset != 0 {
                    let _ = write!(out, " offset:{}", hex_offset(i.offset));
                }
            } else if i.offset != 0 {
                out.push_str(&hex_offset(i.offset));
            } else {
                out.push_str("null");
            }
        } else if i.has(flags::IMM) {
            if i.has(flags::SOE) {
                operand(out, t, i.soffset);
                out.push_str(" offset:");
            }
            if i.offset < 0 {
                let _ = write!(out, "-{:#x}", i.offset.unsigned_abs());
            } else {
                let _ = write!(out, "{:#x}", i.offset);
            }
        } else {
            operand(out, t, i.soffset);
        }
    }
    // Only loads, stores and atomics take glc.
    let no_glc = i.name.starts_with("s_dcache")
        || i.name.starts_with("s_atc_probe")
        || i.name.starts_with("s_mem");
    if i.has(flags::GLC) && !no_glc {
        out.push_str(" glc");
    }
    if i.has(flags::DLC) && t.generation() == Generation::Gfx11 {
        out.push_str(" dlc");
    }
}

/// A signed byte offset in hex, as LLVM prints SMEM offsets.
fn hex_offset(off: i32) -> String {
    if off < 0 {
        format!("-{:#x}", off.unsigned_abs())
    } else {
        format!("{off:#x}")
    }
}

fn ds(out: &mut String, t: Target, i: &Inst) {
    let mut first = true;
    // The GFX11 decoder swaps a compare-store's data operands into GFX9's order for the
    // executor; the text keeps the encoding's.
    let (d0, d1) = if t.generation() == Generation::Gfx11 && i.name.starts_with("ds_cmpstore") {
        (i.src[2], i.src[1])
    } else {
        (i.src[1], i.src[2])
    };
    for op in [i.dst, i.src[0], d0, d1] {
        if op != Operand::None {
            sep(out, &mut first);
            operand(out, t, op);
        }
    }
    // By the GFX9 name (GFX11 spells these `_2addr_`).
    let name = i.op.name();
    if name.contains("read2") || name.contains("write2") || name.contains("xchg2") {
        if i.offset != 0 {
            let _ = write!(out, " offset0:{}", i.offset);
        }
        if i.offset1 != 0 {
            let _ = write!(out, " offset1:{}", i.offset1);
        }
    } else {
        let off = (i.offset as u32) | u32::from(i.offset1) << 8;
        if i.name.starts_with("ds_swizzle") {
            if off != 0 {
                let _ = write!(out, " offset:{}", swizzle_text(off as u16));
            }
        } else if off != 0 {
            let _ = write!(out, " offset:{off}");
        }
    }
    if i.has(flags::GDS) {
        out.push_str(" gds");
    }
}

/// `ds_swizzle_b32` offsets as LLVM spells them (`printSwizzle`): QUAD_PERM when bit 15 is
/// set and bits 14:8 clear, a bit-mask pattern when bit 15 is clear, the number otherwise.
fn swizzle_text(off: u16) -> String {
    if off & 0xFF00 == 0x8000 {
        let p = off;
        return format!(
            "swizzle(QUAD_PERM,{},{},{},{})",
            p & 3,
            (p >> 2) & 3,
            (p >> 4) & 3,
            (p >> 6) & 3
        );
    }
    if off & 0x8000 != 0 {
        return off.to_string();
    }
    let and = off & 0x1F;
    let or = (off >> 5) & 0x1F;
    let xor = (off >> 10) & 0x1F;
    // LLVM names the bit-mask patterns that are swaps, reversals and broadcasts.
    let group = 0x20 - and;
    if and == 0x1F && or == 0 && xor.count_ones() == 1 {
        format!("swizzle(SWAP,{xor})")
    } else if and == 0x1F && or == 0 && xor > 0 && (xor + 1).is_power_of_two() {
        format!("swizzle(REVERSE,{})", xor + 1)
    } else if group > 1 && group.is_power_of_two() && or < group && xor == 0 {
        format!("swizzle(BROADCAST,{group},{or})")
    } else {
        format!("swizzle(BITMASK_PERM,\"{}\")", bitmask_perm(and, or, xor))
    }
}

/// Each lane-id bit's fate, as LLVM probes it: the bit of lane 0 and of lane 31 after the
/// masks (`1`/`0` constant, `p` kept, `i` inverted).
fn bitmask_perm(and: u16, or: u16, xor: u16) -> String {
    let probe0 = or ^ xor;
    let probe1 = ((0x1F & and) | or) ^ xor;
    (0..5)
        .rev()
        .map(|b| match (probe0 >> b & 1, probe1 >> b & 1) {
            (1, 1) => '1',
            (0, 0) => '0',
            (0, _) => 'p',
            _ => 'i',
        })
        .collect()
}

fn flat(out: &mut String, t: Target, i: &Inst) {
    let mut first = true;
    // A load into LDS has no destination register.
    if i.dst != Operand::None && !i.has(flags::LDS) {
        sep(out, &mut first);
        operand(out, t, i.dst);
    }
    // GFX11's addtid forms have no address register.
    if i.src[0] != Operand::None {
        sep(out, &mut first);
        operand(out, t, i.src[0]);
    }
    if i.src[1] != Operand::None {
        sep(out, &mut first);
        operand(out, t, i.src[1]);
    }
    if i.format != Format::Flat {
        sep(out, &mut first);
        operand(out, t, i.saddr);
    }
    // GFX11 FLAT ignores the offset field's top bit (a 12-bit unsigned offset); LLVM prints
    // the whole 13-bit field.
    let offset = if i.format == Format::Flat && t.generation() == Generation::Gfx11 {
        (i.words[0] & 0x1FFF) as i32
    } else {
        i.offset
    };
    if offset != 0 {
        let _ = write!(out, " offset:{offset}");
    }
    cache_bits(out, t, i);
    // gfx940 names its loads into LDS `global_load_lds_*` instead of the modifier.
    if i.has(flags::LDS) && !i.name.contains("_lds_") {
        out.push_str(" lds");
    }
}

fn buffer(out: &mut String, t: Target, i: &Inst) {
    if i.src[1] == Operand::None && i.dst == Operand::None && !i.has(flags::LDS) {
        // Cache maintenance: the L2 write-back and gfx940's invalidate take cache bits.
        if i.name.starts_with("buffer_wbl2") || i.name == "buffer_inv" {
            // Their scope bits (glc/scc, sc0/sc1); slc means nothing to them.
            let mut scope = *i;
            scope.flags &= !flags::SLC;
            cache_bits(out, t, &scope);
        }
        return;
    }
    let mut data = if i.name.contains("_load_") {
        i.dst
    } else {
        i.src[1]
    };
    // GFX11 TFE: LLVM counts the status register TFE writes after a load's data into the data
    // operand (a store's too).
    let tfe = t.generation() == Generation::Gfx11 && i.has(flags::NV);
    if let (true, Operand::Vgpr(r, n)) = (tfe, data) {
        data = Operand::Vgpr(r, n + 1);
    }
    out.push(' ');
    // A load into LDS has no data register.
    if !i.has(flags::LDS) {
        operand(out, t, data);
        out.push_str(", ");
    }
    operand(out, t, i.src[0]);
    out.push_str(", ");
    operand(out, t, i.saddr);
    out.push_str(", ");
    operand(out, t, i.soffset);
    if i.format == Format::Mtbuf && t.generation() == Generation::Gfx11 {
        unified_format(out, i.offset1);
    } else if i.format == Format::Mtbuf {
        mtbuf_format(out, i.offset1 & 0xF, i.offset1 >> 4);
    }
    if i.has(flags::IDXEN) {
        out.push_str(" idxen");
    }
    if i.has(flags::OFFEN) {
        out.push_str(" offen");
    }
    if i.offset != 0 {
        let _ = write!(out, " offset:{}", i.offset);
    }
    cache_bits(out, t, i);
    if tfe {
        out.push_str(" tfe");
    }
    // GFX11 names its loads into LDS `buffer_load_lds_*` instead of the modifier.
    if i.has(flags::LDS) && !i.name.contains("_lds_") {
        out.push_str(" lds");
    }
}

/// GFX10+ unified buffer formats (`format:[BUF_FMT_*]`), leaving out the default 8_UNORM.
fn unified_format(out: &mut String, format: u8) {
    const NAMES: [&str; 64] = [
        "INVALID",
        "8_UNORM",
        "8_SNORM",
        "8_USCALED",
        "8_SSCALED",
        "8_UINT",
        "8_SINT",
        "16_UNORM",
        "16_SNORM",
        "16_USCALED",
        "16_SSCALED",
        "16_UINT",
        "16_SINT",
        "16_FLOAT",
        "8_8_UNORM",
        "8_8_SNORM",
        "8_8_USCALED",
        "8_8_SSCALED",
        "8_8_UINT",
        "8_8_SINT",
        "32_UINT",
        "32_SINT",
        "32_FLOAT",
        "16_16_UNORM",
        "16_16_SNORM",
        "16_16_USCALED",
        "16_16_SSCALED",
        "16_16_UINT",
        "16_16_SINT",
        "16_16_FLOAT",
        "10_11_11_FLOAT",
        "11_11_10_FLOAT",
        "10_10_10_2_UNORM",
        "10_10_10_2_SNORM",
        "10_10_10_2_UINT",
        "10_10_10_2_SINT",
        "2_10_10_10_UNORM",
        "2_10_10_10_SNORM",
        "2_10_10_10_USCALED",
        "2_10_10_10_SSCALED",
        "2_10_10_10_UINT",
        "2_10_10_10_SINT",
        "8_8_8_8_UNORM",
        "8_8_8_8_SNORM",
        "8_8_8_8_USCALED",
        "8_8_8_8_SSCALED",
        "8_8_8_8_UINT",
        "8_8_8_8_SINT",
        "32_32_UINT",
        "32_32_SINT",
        "32_32_FLOAT",
        "16_16_16_16_UNORM",
        "16_16_16_16_SNORM",
        "16_16_16_16_USCALED",
        "16_16_16_16_SSCALED",
        "16_16_16_16_UINT",
        "16_16_16_16_SINT",
        "16_16_16_16_FLOAT",
        "32_32_32_UINT",
        "32_32_32_SINT",
        "32_32_32_FLOAT",
        "32_32_32_32_UINT",
        "32_32_32_32_SINT",
        "32_32_32_32_FLOAT",
    ];
    match NAMES.get(usize::from(format)) {
        Some(_) if format == 1 => {}
        Some(n) => {
            let _ = write!(out, " format:[BUF_FMT_{n}]");
        }
        None => {
            let _ = write!(out, " format:{format}");
        }
    }
}

pub(super) fn print(out: &mut String, t: Target, i: &Inst) {
    out.push_str(i.name);
    match i.format {
        Format::Smem => smem(out, t, i),
        Format::Ds => ds(out, t, i),
        Format::Flat | Format::Global | Format::Scratch => flat(out, t, i),
        Format::Mimg if t.generation() == Generation::Gfx11 => image_gfx11(out, t, i),
        Format::Mimg => image(out, t, i),
        _ => buffer(out, t, i),
    }
}

/// MTBUF `format:[...]`, leaving out the default data (8) and number (UNORM) formats.
fn mtbuf_format(out: &mut String, dfmt: u8, nfmt: u8) {
    const DFMT: [&str; 16] = [
        "INVALID",
        "8",
        "16",
        "8_8",
        "32",
        "16_16",
        "10_11_11",
        "11_11_10",
        "10_10_10_2",
        "2_10_10_10",
        "8_8_8_8",
        "32_32",
        "16_16_16_16",
        "32_32_32",
        "32_32_32_32",
        "RESERVED_15",
    ];
    const NFMT: [&str; 8] = [
        "UNORM",
        "SNORM",
        "USCALED",
        "SSCALED",
        "UINT",
        "SINT",
        "RESERVED_6",
        "FLOAT",
    ];
    let mut parts = Vec::new();
    if dfmt != 1 {
        parts.push(format!(
            "BUF_DATA_FORMAT_{}",
            DFMT.get(usize::from(dfmt)).unwrap_or(&"?")
        ));
    }
    if nfmt != 0 {
        parts.push(format!(
            "BUF_NUM_FORMAT_{}",
            NFMT.get(usize::from(nfmt)).unwrap_or(&"?")
        ));
    }
    if !parts.is_empty() {
        let _ = write!(out, " format:[{}]", parts.join(","));
    }
}

/// An image instruction's operands: data, address, resource (and sampler).
fn image_operands(out: &mut String, t: Target, i: &Inst) {
    out.push(' ');
    let data = if matches!(i.dst, Operand::None) {
        i.src[1]
    } else {
        i.dst
    };
    operand(out, t, data);
    out.push_str(", ");
    operand(out, t, i.src[0]);
    out.push_str(", ");
    operand(out, t, i.saddr);
    if !matches!(i.soffset, Operand::None) {
        out.push_str(", ");
        operand(out, t, i.soffset);
    }
}

/// MIMG: data, address, resource (and sampler), then the modifiers in LLVM's order.
fn image(out: &mut String, t: Target, i: &Inst) {
    image_operands(out, t, i);
    if i.offset1 != 0 {
        let _ = write!(out, " dmask:{:#x}", i.offset1);
    }
    for (flag, name) in [
        (flags::UNORM, " unorm"),
        (flags::GLC, " glc"),
        (flags::SLC, " slc"),
        (flags::A16, " a16"),
        (flags::NV, " lwe"),
        (flags::DA, " da"),
        (flags::D16, " d16"),
    ] {
        if i.has(flag) {
            out.push_str(name);
        }
    }
}

/// GFX11 MIMG: as GFX9's, with the image's dimension named and GFX11's modifiers.
fn image_gfx11(out: &mut String, t: Target, i: &Inst) {
    const DIMS: [&str; 8] = [
        "1D",
        "2D",
        "3D",
        "CUBE",
        "1D_ARRAY",
        "2D_ARRAY",
        "2D_MSAA",
        "2D_MSAA_ARRAY",
    ];
    image_operands(out, t, i);
    if i.offset1 != 0 {
        let _ = write!(out, " dmask:{:#x}", i.offset1);
    }
    let dim = DIMS.get(i.offset as usize).unwrap_or(&"1D");
    let _ = write!(out, " dim:SQ_RSRC_IMG_{dim}");
    for (flag, name) in [
        (flags::UNORM, " unorm"),
        (flags::GLC, " glc"),
        (flags::SLC, " slc"),
        (flags::DLC, " dlc"),
        (flags::DA, " r128"),
        (flags::A16, " a16"),
        (flags::NV, " tfe"),
        (flags::ACC, " lwe"),
        (flags::D16, " d16"),
    ] {
        if i.has(flag) {
            out.push_str(name);
        }
    }
}
