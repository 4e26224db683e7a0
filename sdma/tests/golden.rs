//! Golden encodings, each worked out by hand from the field definitions (shared/reference/SDMA.md,
//! ROCr `sdma_registers.h`) and written next to it, then decoded back.

use sdma::{
    gcr_control, AtomicOp, CompareFunction, SdmaPacket, SdmaVersion, SubWindowCopy,
    SubWindowSurface,
};

const GFX90A: u32 = 90010;
const GFX942: u32 = 90402;
const GFX1030: u32 = 100300;
const GFX1100: u32 = 110000;

/// Encodes `p` for each (version, part), checks every encoding against `want`, and checks that
/// it decodes back to `p` with the right length.
fn golden(p: &SdmaPacket, targets: &[(SdmaVersion, u32)], want: &[u32]) {
    for &(ver, gfx) in targets {
        let mut out = Vec::new();
        p.encode(ver, gfx, &mut out)
            .unwrap_or_else(|e| panic!("{ver:?} gfx {gfx}: {e}"));
        assert_eq!(out, want, "{ver:?} gfx {gfx}: {p:?}");
        assert_eq!(p.encoded_dwords(), want.len());
        assert_eq!(
            SdmaPacket::decode(ver, &out),
            Ok((p.clone(), want.len())),
            "{ver:?}"
        );
    }
}

const ALL: &[(SdmaVersion, u32)] = &[
    (SdmaVersion::V4, GFX90A),
    (SdmaVersion::V4, GFX942),
    (SdmaVersion::V5, GFX1030),
    (SdmaVersion::V6, GFX1100),
];

#[test]
fn copy_linear() {
    // Header: op 1 | sub_op 0 << 8 = 0x00000001. DW1 = bytes - 1 = 4095 = 0xFFF. DW2 (endian
    // swap parameters) = 0. DW3/DW4 = source lo/hi, DW5/DW6 = destination lo/hi.
    golden(
        &SdmaPacket::CopyLinear {
            src: 0x1_0000_1000,
            dst: 0x2_0000_2000,
            bytes: 4096,
        },
        ALL,
        &[0x0000_0001, 0xFFF, 0, 0x1000, 0x1, 0x2000, 0x2],
    );
    // The largest gfx942 copy: 0x3FFFFF bytes, DW1 = 0x3FFFFE (22-bit count).
    golden(
        &SdmaPacket::CopyLinear {
            src: 0,
            dst: 0x10,
            bytes: 0x3F_FFFF,
        },
        &[(SdmaVersion::V4, GFX942)],
        &[0x1, 0x3F_FFFE, 0, 0, 0, 0x10, 0],
    );
    // The largest gfx90a copy: 0x3FFFFFFF bytes, DW1 = 0x3FFFFFFE (30-bit count).
    golden(
        &SdmaPacket::CopyLinear {
            src: 0xFFFF_FFFF,
            dst: 0,
            bytes: 0x3FFF_FFFF,
        },
        &[(SdmaVersion::V4, GFX90A), (SdmaVersion::V6, GFX1100)],
        &[0x1, 0x3FFF_FFFE, 0, 0xFFFF_FFFF, 0, 0, 0],
    );
}

#[test]
fn constant_fill() {
    // Header: op 11 = 0xB | FILLSIZE 2 (dword) << 30 = 0x80000000 -> 0x8000000B. DW1/DW2 =
    // destination, DW3 = pattern, DW4 = bytes - 1 = 63.
    golden(
        &SdmaPacket::ConstantFill {
            dst: 0x7_0000_3000,
            data: 0xDEAD_BEEF,
            bytes: 64,
        },
        ALL,
        &[0x8000_000B, 0x3000, 0x7, 0xDEAD_BEEF, 63],
    );
    // SDMA 6's largest fill: 0x3FFFFFFC bytes, DW4 = 0x3FFFFFFB.
    golden(
        &SdmaPacket::ConstantFill {
            dst: 0,
            data: 1,
            bytes: 0x3FFF_FFFC,
        },
        &[(SdmaVersion::V6, GFX1100)],
        &[0x8000_000B, 0, 0, 1, 0x3FFF_FFFB],
    );
}

#[test]
fn write_linear() {
    // Header: op 2 | sub_op 0 (linear) << 8 = 0x2. DW1/DW2 = destination, DW3 = dwords - 1 = 2,
    // then the three data dwords.
    golden(
        &SdmaPacket::Write {
            dst: 0x1_0000_8000,
            data: vec![5, 6, 0xFFFF_FFFF],
        },
        ALL,
        &[0x2, 0x8000, 0x1, 2, 5, 6, 0xFFFF_FFFF],
    );
}

#[test]
fn fence() {
    // SDMA 5+: op 5 | MTYPE 3 (uncached) << 16 = 0x30000 -> 0x00030005; DW3 = the value.
    let uc = SdmaPacket::Fence {
        addr: 0x4000,
        data: 9,
        mtype_uncached: true,
    };
    golden(
        &uc,
        &[(SdmaVersion::V5, GFX1030), (SdmaVersion::V6, GFX1100)],
        &[0x0003_0005, 0x4000, 0, 9],
    );
    // Without MTYPE: just op 5. SDMA 4 has no MTYPE, so the uncached request encodes the same
    // and reads back as cached.
    let plain = SdmaPacket::Fence {
        addr: 0x4000,
        data: 9,
        mtype_uncached: false,
    };
    golden(&plain, ALL, &[0x5, 0x4000, 0, 9]);
    let mut out = Vec::new();
    uc.encode(SdmaVersion::V4, GFX90A, &mut out).unwrap();
    assert_eq!(out, [0x5, 0x4000, 0, 9]);
    assert_eq!(SdmaPacket::decode(SdmaVersion::V4, &out), Ok((plain, 4)));
}

#[test]
fn trap() {
    // Header: op 6. DW1 = INT_CONTEXT (28 bits): the event id, up to 0x0FFFFFFF.
    golden(
        &SdmaPacket::Trap {
            int_context: 0x1234,
        },
        ALL,
        &[0x6, 0x1234],
    );
    golden(
        &SdmaPacket::Trap {
            int_context: 0x0FFF_FFFF,
        },
        ALL,
        &[0x6, 0x0FFF_FFFF],
    );
}

#[test]
fn poll_regmem() {
    // Header: op 8 | FUNC 3 (==) << 28 = 0x30000000 | MEM_POLL 1 << 31 = 0x80000000
    // -> 0xB0000008. DW3 reference, DW4 mask, DW5 = interval 10 | retry 0xFFF << 16 = 0x0FFF000A.
    golden(
        &SdmaPacket::PollRegMem {
            addr: 0x5004,
            reference: 0,
            mask: u32::MAX,
            func: CompareFunction::Equal,
            interval: 10,
            retry_count: 0xFFF,
        },
        ALL,
        &[0xB000_0008, 0x5004, 0, 0, 0xFFFF_FFFF, 0x0FFF_000A],
    );
    // FUNC 5 (>=) << 28 = 0x50000000 | 0x80000000 | 8 = 0xD0000008; DW5 = 4 | 2 << 16 = 0x20004.
    golden(
        &SdmaPacket::PollRegMem {
            addr: 0x1_0000_0000,
            reference: 7,
            mask: 0xFF,
            func: CompareFunction::GreaterEqual,
            interval: 4,
            retry_count: 2,
        },
        ALL,
        &[0xD000_0008, 0, 1, 7, 0xFF, 0x0002_0004],
    );
}

#[test]
fn atomic() {
    // ADD64: op 10 = 0xA | operation 47 << 25 = 0x5E000000 -> 0x5E00000A. DW3/DW4 = source
    // (-1: ROCr's signal decrement), DW5/DW6 = compare, DW7 = loop interval.
    golden(
        &SdmaPacket::Atomic {
            addr: 0x6008,
            op: AtomicOp::Add64,
            src: u64::MAX,
            cmp: 0,
            loop_interval: 0,
        },
        ALL,
        &[0x5E00_000A, 0x6008, 0, 0xFFFF_FFFF, 0xFFFF_FFFF, 0, 0, 0],
    );
    // CMPSWAP_RTN_64 = 0x28: 0x28 << 25 = 0x50000000 -> 0x5000000A; loop interval 0x1FFF.
    golden(
        &SdmaPacket::Atomic {
            addr: 0x2_0000_0010,
            op: AtomicOp::Other(sdma::atomic_op::CMPSWAP_RTN_64),
            src: 0x1111_2222_3333_4444,
            cmp: 0x5555_6666_7777_8888,
            loop_interval: 0x1FFF,
        },
        ALL,
        &[
            0x5000_000A,
            0x10,
            0x2,
            0x3333_4444,
            0x1111_2222,
            0x7777_8888,
            0x5555_6666,
            0x1FFF,
        ],
    );
}

#[test]
fn timestamp() {
    // GET_GLOBAL: op 13 = 0xD | sub_op 2 << 8 = 0x200 -> 0x20D; DW1/DW2 = address.
    golden(
        &SdmaPacket::Timestamp {
            addr: 0x3_0000_7020,
        },
        ALL,
        &[0x20D, 0x7020, 0x3],
    );
}

#[test]
fn hdp_flush() {
    // ROCr's hdp_flush_cmd: POLL_REGMEM (op 8) of a register, the rest as ROCr writes it.
    golden(&SdmaPacket::HdpFlush, ALL, &[0x8, 0, 0x8000_0000, 0, 0, 0]);
}

#[test]
fn gcr() {
    // ROCr's invalidate before a copy. Header: op 17 = 0x11 | sub_op 1 (user GCR) << 8 = 0x100
    // -> 0x111. GCR_CONTROL = GL2_WB (bit 15) | GL2_INV (14) | GL1_INV (9) | GLV_INV (8) |
    // GLK_INV (7) | GLK_WB (6) = 0x8000 + 0x4000 + 0x200 + 0x100 + 0x80 + 0x40 = 0xC3C0; its bits
    // 0-15 go to DW2 bits 16-31 -> 0xC3C00000 (ROCr's DW2 bit 31 GL2_WB, 30 GL2_INV, 25 GL1_INV,
    // 24 GLV_INV, 23 GLK_INV, 22 GLK_WB agree). Base and limit 0: the whole cache.
    golden(
        &SdmaPacket::Gcr {
            base: 0,
            limit: 0,
            control: gcr_control::WRITEBACK_INVALIDATE,
        },
        &[(SdmaVersion::V5, GFX1030), (SdmaVersion::V6, GFX1100)],
        &[0x111, 0, 0xC3C0_0000, 0, 0],
    );
    // A range: base 0x1234_5678_9A80 -> DW1 = bits 7-31 = 0x56789A80, DW2 = bits 32-47 0x1234
    // | (GL2_WB | GLK_WB = 0x8040) << 16 = 0x80401234. Control bits 16-18 (RANGE_IS_PA 1 << 16 |
    // SEQ 2 << 17 = 0x50000) go to DW3 bits 0-2 = 0b101, under the limit 0xABCD_0000_0100.
    golden(
        &SdmaPacket::Gcr {
            base: 0x1234_5678_9A80,
            limit: 0xABCD_0000_0100,
            control: gcr_control::WRITEBACK
                | gcr_control::RANGE_IS_PA
                | 2 << gcr_control::SEQ_SHIFT,
        },
        &[(SdmaVersion::V5, GFX1030)],
        &[0x111, 0x5678_9A80, 0x8040_1234, 0x0000_0105, 0xABCD],
    );
}

#[test]
fn nop() {
    // Header: op 0, COUNT (dwords after the header) in bits 16-29: 2 << 16 = 0x20000.
    golden(
        &SdmaPacket::Nop { extra_dwords: 2 },
        ALL,
        &[0x0002_0000, 0, 0],
    );
    // The one-dword NOP is a zero dword: the ring's padding.
    golden(&SdmaPacket::Nop { extra_dwords: 0 }, ALL, &[0]);
    let longest = SdmaPacket::Nop {
        extra_dwords: 0x3FFF,
    };
    let mut out = Vec::new();
    longest.encode(SdmaVersion::V4, GFX90A, &mut out).unwrap();
    assert_eq!(out.len(), 0x4000);
    assert_eq!(out[0], 0x3FFF_0000);
    assert!(out[1..].iter().all(|&d| d == 0));
}

#[test]
fn kernel_and_rocr_forms_decode() {
    // The kernel's GCR_REQ has sub_op 0 (header 0x11); it decodes, and re-encodes as the user
    // form (sub_op 1).
    let kernel = [0x11, 0, 0x8040_0000, 0, 0];
    let (p, n) = SdmaPacket::decode(SdmaVersion::V6, &kernel).unwrap();
    assert_eq!(n, 5);
    assert_eq!(
        p,
        SdmaPacket::Gcr {
            base: 0,
            limit: 0,
            control: gcr_control::WRITEBACK
        }
    );
    // ROCr writes a fill's count as (dwords - 1) * 4 = bytes - 4; Linux as bytes - 1. The low two
    // bits do not count for dword fills, so both mean 64 bytes.
    for count in [60, 63] {
        let rocr = [0x8000_000B, 0x100, 0, 7, count];
        assert_eq!(
            SdmaPacket::decode(SdmaVersion::V4, &rocr),
            Ok((
                SdmaPacket::ConstantFill {
                    dst: 0x100,
                    data: 7,
                    bytes: 64
                },
                5
            ))
        );
    }
}

#[test]
fn copy_linear_sub_window_as_rocr_writes_it() {
    // HIP's hipMemcpy2D of a 100 x 37 byte window from a 100-byte pitch into a pitched
    // allocation (hipMallocPitch gives 256 bytes). The first eight dwords are the ones kfd-emu
    // logged when it could not yet decode the packet; the rest follow ROCr's
    // BuildCopyRectCommand and match what the emulator decoded from a later run. ROCr picks the
    // largest element dividing the pitches and the width: 4 bytes, so everything counts dwords.
    // Header: op 1 | sub_op 4 << 8 = 0x401 | element log2 2 << 29 = 0x40000000 -> 0x40000401.
    // DW4: src z 0 | (pitch 25 - 1 = 24) << 13 = 0x30000. DW5: slice pitch - 1 = 0 (one slice).
    // DW9: (256 / 4 - 1 = 63) << 13 = 0x7E000. DW11: width 25 - 1 = 24 = 0x18 | (37 - 1 = 36
    // = 0x24) << 16 = 0x00240018. DW12: depth 1 - 1 = 0, no swaps.
    let c = SubWindowCopy::new(
        2,
        SubWindowSurface::new(0x7F0D_3440_0000, 25, 1),
        SubWindowSurface::new(0x7F0D_3490_0000, 64, 1),
        [25, 37, 1],
    );
    golden(
        &SdmaPacket::CopyLinearSubWindow(c),
        ALL,
        &[
            0x4000_0401,
            0x3440_0000,
            0x7F0D,
            0,
            0x0003_0000,
            0,
            0x3490_0000,
            0x7F0D,
            0,
            0x0007_E000,
            0,
            0x0024_0018,
            0,
        ],
    );
}

#[test]
fn copy_linear_sub_window_offsets_and_sdma4_limits() {
    // 2-byte elements: header 0x401 | 1 << 29 = 0x20000401. Source at 0x1000, window at
    // (1, 2, 0x7FF): DW3 = 1 | 2 << 16 = 0x00020001; DW4 = z 0x7FF (SDMA 4's widest, 11 bits)
    // | (pitch 64 - 1 = 63) << 13 = 0x7E000 -> 0x0007E7FF; DW5 = 1024 - 1 = 0x3FF.
    // Destination 0x2_0000_0000 (DW6 0, DW7 2), window at the origin, pitch 32: DW9 = 31 << 13
    // = 0x3E000; DW10 = 256 - 1 = 0xFF. DW11 = (8 - 1) | (4 - 1) << 16 = 0x00030007;
    // DW12 = depth 0x800 - 1 = 0x7FF (the deepest SDMA 4 box). Every generation writes it so.
    let c = SubWindowCopy::new(
        1,
        SubWindowSurface::new(0x1000, 64, 1024).at(1, 2, 0x7FF),
        SubWindowSurface::new(0x2_0000_0000, 32, 256),
        [8, 4, 0x800],
    );
    golden(
        &SdmaPacket::CopyLinearSubWindow(c),
        ALL,
        &[
            0x2000_0401,
            0x1000,
            0,
            0x0002_0001,
            0x0007_E7FF,
            0x3FF,
            0,
            2,
            0,
            0x0003_E000,
            0xFF,
            0x0003_0007,
            0x7FF,
        ],
    );
}

#[test]
fn copy_linear_sub_window_every_field_on_sdma6() {
    // 16-byte elements (log2 4 << 29 = 0x80000000), TMZ (bit 18 = 0x40000), CPV (bit 19 =
    // 0x80000): header 0x800C0401.
    // Source 0x1_2345_6780 at (3, 5, 0x1ABC): DW3 = 3 | 5 << 16 = 0x00050003; DW4 = 0x1ABC
    // (13-bit z) | (pitch 2^19 - 1 = 0x7FFFF) << 13 = 0xFFFFE000 -> 0xFFFFFABC; DW5 = slice
    // pitch 2^28 - 1 = 0x0FFFFFFF.
    // Destination 0xFFFF_0000_0000_0100 at (0x3FFF, 0x3FFF, 7): DW8 = 0x3FFF3FFF; DW9 = 7 |
    // (2 - 1) << 13 = 0x2007; DW10 = 0x12345 - 1 = 0x12344.
    // DW11 = (0x4000 - 1) | (2 - 1) << 16 = 0x00013FFF.
    // DW12 = depth 0x2000 - 1 = 0x1FFF | DST_SW 1 << 16 = 0x10000 | dst policy 5 << 18 =
    // 0x140000 | SRC_SW 2 << 24 = 0x2000000 | src policy 3 << 26 = 0xC000000 -> 0x0E151FFF.
    let c = SubWindowCopy {
        element_size_log2: 4,
        tmz: true,
        cache_policy_valid: true,
        src: SubWindowSurface {
            swap: 2,
            cache_policy: 3,
            ..SubWindowSurface::new(0x1_2345_6780, 1 << 19, 1 << 28).at(3, 5, 0x1ABC)
        },
        dst: SubWindowSurface {
            swap: 1,
            cache_policy: 5,
            ..SubWindowSurface::new(0xFFFF_0000_0000_0100, 2, 0x12345).at(0x3FFF, 0x3FFF, 7)
        },
        width: 0x4000,
        height: 2,
        depth: 0x2000,
    };
    golden(
        &SdmaPacket::CopyLinearSubWindow(c),
        &[(SdmaVersion::V6, GFX1100)],
        &[
            0x800C_0401,
            0x2345_6780,
            0x1,
            0x0005_0003,
            0xFFFF_FABC,
            0x0FFF_FFFF,
            0x100,
            0xFFFF_0000,
            0x3FFF_3FFF,
            0x2007,
            0x1_2344,
            0x0001_3FFF,
            0x0E15_1FFF,
        ],
    );
    // Before SDMA 6 the CPV bit and the policy bits are reserved: the same dwords read back
    // without them (and with SDMA 4's 11-bit z fields, 0x1ABC & 0x7FF = 0x2BC, depth
    // (0x1FFF & 0x7FF) + 1 = 0x800).
    let mut dwords = Vec::new();
    SdmaPacket::CopyLinearSubWindow(c)
        .encode(SdmaVersion::V6, GFX1100, &mut dwords)
        .unwrap();
    let plain = |z, depth| SubWindowCopy {
        cache_policy_valid: false,
        src: SubWindowSurface {
            cache_policy: 0,
            z,
            ..c.src
        },
        dst: SubWindowSurface {
            cache_policy: 0,
            ..c.dst
        },
        depth,
        ..c
    };
    assert_eq!(
        SdmaPacket::decode(SdmaVersion::V5, &dwords),
        Ok((SdmaPacket::CopyLinearSubWindow(plain(0x1ABC, 0x2000)), 13))
    );
    assert_eq!(
        SdmaPacket::decode(SdmaVersion::V4, &dwords),
        Ok((SdmaPacket::CopyLinearSubWindow(plain(0x2BC, 0x800)), 13))
    );
}
