//! Golden encodings worked out by hand from the field definitions (shared/reference/PM4.md,
//! Linux soc15d.h / nvd.h, kfdtest PM4Packet.cpp). Each derivation is next to its values.
//! Header: PACKET3(op, count) = 3 << 30 | count << 16 | op << 8 | 1 << 1 (compute), where count
//! is the packet's total dwords minus 2.

use pm4::*;

fn enc(p: &Pm4Packet, f: GfxFamily) -> Vec<u32> {
    let mut v = Vec::new();
    p.encode(f, &mut v);
    v
}

/// Encodes on every family, checks the golden dwords, and that they decode back to `p`.
fn golden_all(p: Pm4Packet, want: &[u32]) {
    for f in GfxFamily::ALL {
        assert_eq!(enc(&p, f), want, "{p:?} on {f:?}");
        assert_eq!(p.len_dwords(f), want.len());
        assert_eq!(
            Pm4Packet::decode(f, want),
            Ok((p.clone(), want.len())),
            "{f:?}"
        );
    }
}

#[test]
fn nop() {
    // The filler is a NOP with count 0x3FFF: 3<<30 | 0x3FFF<<16 | 0x10<<8 | 1<<1 = 0xFFFF1002.
    golden_all(Pm4Packet::Nop { padding: 0 }, &[0xFFFF_1002]);
    // NOP with 3 padding dwords: 4 dwords, count 2: 0xC0000000 | 2<<16 | 0x1000 | 2 = 0xC0021002.
    golden_all(Pm4Packet::Nop { padding: 3 }, &[0xC002_1002, 0, 0, 0]);
    // kfdtest's PM4NopPacket(2): 2 dwords, count 0: 0xC0001002.
    golden_all(Pm4Packet::Nop { padding: 1 }, &[0xC000_1002, 0]);
}

#[test]
fn set_sh_reg() {
    // PGM_LO/HI: 4 dwords, count 2: 0xC0000000 | 2<<16 | 0x76<<8 | 2 = 0xC0027602;
    // DW1 = 0x2E0C - 0x2C00 = 0x20C.
    golden_all(
        Pm4Packet::SetShReg {
            reg: regs::COMPUTE_PGM_LO,
            values: vec![0x1234_5678, 0x9A],
        },
        &[0xC002_7602, 0x20C, 0x1234_5678, 0x9A],
    );
    // One value at USER_DATA_15: 3 dwords, count 1: 0xC0017602; DW1 = 0x2E4F - 0x2C00 = 0x24F.
    golden_all(
        Pm4Packet::SetShReg {
            reg: regs::COMPUTE_USER_DATA_15,
            values: vec![7],
        },
        &[0xC001_7602, 0x24F, 7],
    );
}

#[test]
fn dispatch_direct() {
    // 5 dwords, count 3: 0xC0000000 | 3<<16 | 0x15<<8 | 2 = 0xC0031502. kfdtest's initiator
    // COMPUTE_SHADER_EN | USE_THREAD_DIMENSIONS = 1 | 1<<5 = 0x21, + CS_W32_EN 1<<15 on gfx10+.
    use regs::initiator::*;
    assert_eq!(COMPUTE_SHADER_EN | USE_THREAD_DIMENSIONS, 0x21);
    golden_all(
        Pm4Packet::DispatchDirect {
            dims: [4, 2, 1],
            initiator: COMPUTE_SHADER_EN | USE_THREAD_DIMENSIONS | CS_W32_EN,
        },
        &[0xC003_1502, 4, 2, 1, 0x8021],
    );
}

#[test]
fn release_mem_gfx9_cache_actions() {
    // kfdtest's gfx9 (AI) RELEASE_MEM, 64-bit data with interrupt after write confirm.
    // Header: 8 dwords, count 6: 3<<30 | 6<<16 | 0x49<<8 | 1<<1 = 0xC0064902.
    // DW1: EVENT_TYPE 0x14 | EVENT_INDEX 5<<8 (0x500) | TC_WB_ACTION_EN 1<<15 (0x8000)
    //      | TC_ACTION_EN 1<<17 (0x20000) = 0x28514.
    // DW2: DST_SEL 0 | INT_SEL 2<<24 (0x02000000) | DATA_SEL 2<<29 (0x40000000) = 0x42000000.
    use release_mem::gfx9::*;
    let p = Pm4Packet::ReleaseMem {
        event_type: event::CACHE_FLUSH_AND_INV_TS,
        event_index: event_index::END_OF_PIPE,
        cache_action: TC_WB_ACTION_EN | TC_ACTION_EN,
        dst_sel: 0,
        int_sel: int_sel::SEND_INT_ON_CONFIRM,
        data_sel: data_sel::DATA64,
        addr: 0x7F12_3456_7008,
        data: 0x1122_3344_5566_7788,
        int_ctxid: 7,
    };
    let want = [
        0xC006_4902,
        0x0002_8514,
        0x4200_0000,
        0x3456_7008,
        0x7F12,
        0x5566_7788,
        0x1122_3344,
        7,
    ];
    for f in [GfxFamily::Gfx9, GfxFamily::Gfx90a, GfxFamily::Gfx94x] {
        assert_eq!(enc(&p, f), want);
        assert_eq!(Pm4Packet::decode(f, &want), Ok((p.clone(), 8)));
    }
}

#[test]
fn release_mem_gfx10_gcr() {
    // Linux gfx_v11_0_ring_emit_fence, 32-bit data with interrupt:
    // DW1: SEQ 1<<22 (0x400000) | GL2_WB 1<<21 (0x200000) | GLM_INV 1<<13 (0x2000)
    //      | GLM_WB 1<<12 (0x1000) | CACHE_POLICY(3) 3<<25 (0x6000000) | 0x14 | 5<<8
    //      = 0x06603514.
    // DW2: INT_SEL 2<<24 | DATA_SEL 1<<29 = 0x22000000.
    use release_mem::gcr::*;
    let p = Pm4Packet::ReleaseMem {
        event_type: event::CACHE_FLUSH_AND_INV_TS,
        event_index: event_index::END_OF_PIPE,
        cache_action: SEQ | GL2_WB | GLM_INV | GLM_WB | release_mem::cache_policy(3),
        dst_sel: 0,
        int_sel: int_sel::SEND_INT_ON_CONFIRM,
        data_sel: data_sel::DATA32,
        addr: 0x1_0000_0004,
        data: 0xDEAD_BEEF,
        int_ctxid: 42,
    };
    let want = [
        0xC006_4902,
        0x0660_3514,
        0x2200_0000,
        4,
        1,
        0xDEAD_BEEF,
        0,
        42,
    ];
    for f in [GfxFamily::Gfx103, GfxFamily::Gfx11] {
        assert_eq!(enc(&p, f), want);
        assert_eq!(Pm4Packet::decode(f, &want), Ok((p.clone(), 8)));
    }
    // kfdtest's NV gcr_cntl field (1<<10 | 1<<9 | 1<<8 | 1<<3 | 1<<2) sits at bit 12:
    // SEQ | GL2_WB | GL2_INV | GL1_INV | GLV_INV = 0x70C000.
    assert_eq!(SEQ | GL2_WB | GL2_INV | GL1_INV | GLV_INV, 0x70C << 12);
}

#[test]
fn acquire_mem_differs_by_family() {
    // gfx9: 7 dwords, count 5: 3<<30 | 5<<16 | 0x58<<8 | 2 = 0xC0055802; kfdtest's COHER_CNTL
    // SH_ICACHE 1<<29 | SH_KCACHE 1<<27 | TC 1<<23 | TCL1 1<<22 = 0x28C00000; then the whole
    // range: size 0xFFFFFFFF, size hi 0xFFFFFF, base 0, 0, poll 0xA.
    use acquire_mem::{coher_cntl::*, gcr_cntl::*};
    let a = Pm4Packet::AcquireMem {
        coher_cntl: SH_ICACHE | SH_KCACHE | TC | TCL1,
        gcr_cntl: 0,
    };
    let want9 = [0xC005_5802, 0x28C0_0000, 0xFFFF_FFFF, 0xFF_FFFF, 0, 0, 0xA];
    for f in [GfxFamily::Gfx9, GfxFamily::Gfx90a, GfxFamily::Gfx94x] {
        assert_eq!(enc(&a, f), want9);
        assert_eq!(Pm4Packet::decode(f, &want9), Ok((a.clone(), 7)));
    }
    // gfx10+: 8 dwords, count 6: 0xC0065802, DW1 0, GCR_CNTL last. kfdtest's NV GCR_CNTL
    // GL2_INV 1<<14 | GL1_INV 1<<9 | GLV_INV 1<<8 | GLK_INV 1<<7 | GLI_INV(1) = 0x4381.
    let g = Pm4Packet::AcquireMem {
        coher_cntl: 0,
        gcr_cntl: GL2_INV | GL1_INV | GLV_INV | GLK_INV | gli_inv(1),
    };
    let want10 = [0xC006_5802, 0, 0xFFFF_FFFF, 0xFF_FFFF, 0, 0, 0xA, 0x4381];
    for f in [GfxFamily::Gfx103, GfxFamily::Gfx11] {
        assert_eq!(enc(&g, f), want10);
        assert_eq!(Pm4Packet::decode(f, &want10), Ok((g.clone(), 8)));
        // The gfx9 form has the wrong length for gfx10+, and the reverse.
        assert!(matches!(
            Pm4Packet::decode(f, &want9),
            Err(DecodeError::BadLength { opcode: 0x58, .. })
        ));
        assert!(matches!(
            Pm4Packet::decode(GfxFamily::Gfx9, &want10),
            Err(DecodeError::BadLength { opcode: 0x58, .. })
        ));
    }
    // gfx9's form has no GCR_CNTL: validate says so, encode leaves it out.
    assert_eq!(
        g.validate(GfxFamily::Gfx90a),
        Err(EncodeError::NotOnFamily {
            field: "gcr_cntl",
            family: GfxFamily::Gfx90a
        })
    );
    assert_eq!(enc(&g, GfxFamily::Gfx90a)[0], 0xC005_5802);
}

#[test]
fn wait_reg_mem() {
    // 7 dwords, count 5: 3<<30 | 5<<16 | 0x3C<<8 | 2 = 0xC0053C02.
    // DW1: FUNCTION 3 (==) | MEM_SPACE 1<<4 = 0x13; DW6: poll interval 4 (kfdtest).
    golden_all(
        Pm4Packet::WaitRegMem {
            function: CompareFunction::Equal,
            mem_space: mem_space::MEMORY,
            addr: 0x7F00_0000_2000,
            reference: 0xDEAD_BEEF,
            mask: 0xFFFF_FFFF,
            poll_interval: 4,
        },
        &[
            0xC005_3C02,
            0x13,
            0x2000,
            0x7F00,
            0xDEAD_BEEF,
            0xFFFF_FFFF,
            4,
        ],
    );
    // FUNCTION 5 (>=) on a register: DW1 = 5; the address is a register offset, kept whole.
    golden_all(
        Pm4Packet::WaitRegMem {
            function: CompareFunction::GreaterEqual,
            mem_space: mem_space::REGISTER,
            addr: 0x1A3,
            reference: 1,
            mask: 1,
            poll_interval: 0x20,
        },
        &[0xC005_3C02, 5, 0x1A3, 0, 1, 1, 0x20],
    );
}

#[test]
fn write_data() {
    // 2 data dwords: 6 dwords, count 4: 3<<30 | 4<<16 | 0x37<<8 | 2 = 0xC0043702.
    // DW1: DST_SEL 5 (memory) << 8 = 0x500 | WR_CONFIRM 1<<20 = 0x100500.
    golden_all(
        Pm4Packet::WriteData {
            dst_sel: sel::MEMORY,
            confirm: true,
            addr: 0x1_0000_0010,
            data: vec![7, 8],
        },
        &[0xC004_3702, 0x0010_0500, 0x10, 1, 7, 8],
    );
}

#[test]
fn indirect_buffer() {
    // 4 dwords, count 2: 3<<30 | 2<<16 | 0x3F<<8 | 2 = 0xC0023F02.
    // DW3: IB_SIZE 16 | VALID 1<<23 = 0x800010; with CHAIN 1<<20: 0x900010.
    golden_all(
        Pm4Packet::IndirectBuffer {
            addr: 0x7F00_0000_1004,
            size_dwords: 16,
            chain: false,
        },
        &[0xC002_3F02, 0x1004, 0x7F00, 0x80_0010],
    );
    golden_all(
        Pm4Packet::IndirectBuffer {
            addr: 0x40,
            size_dwords: 0xF_FFFF,
            chain: true,
        },
        &[0xC002_3F02, 0x40, 0, 0x9F_FFFF],
    );
}

#[test]
fn event_write() {
    // CS_PARTIAL_FLUSH: 2 dwords, count 0: 3<<30 | 0x46<<8 | 2 = 0xC0004602;
    // DW1 = EVENT_TYPE 7 | EVENT_INDEX 4<<8 = 0x407.
    golden_all(
        Pm4Packet::EventWrite {
            event_type: event::CS_PARTIAL_FLUSH,
            event_index: event_index::PARTIAL_FLUSH,
        },
        &[0xC000_4602, 0x407],
    );
}

#[test]
fn pred_exec() {
    // 2 dwords, count 0: 3<<30 | 0x23<<8 | 2 = 0xC0002302; DW1 = VIRTUAL_XCC_ID_SELECT (bits
    // 24-31) | EXEC_COUNT (bits 0-13): XCC 2 only, for the 4 dwords of a two-register SET_SH_REG.
    golden_all(
        Pm4Packet::PredExec {
            xcc_mask: 1 << 2,
            exec_dwords: 4,
        },
        &[0xC000_2302, 0x0400_0004],
    );
    let set = Pm4Packet::SetShReg {
        reg: pm4::regs::COMPUTE_DISPATCH_SCRATCH_BASE_LO,
        values: vec![1, 2],
    };
    let p = Pm4Packet::predicated(GfxFamily::Gfx94x, 1 << 2, std::slice::from_ref(&set));
    assert_eq!(
        p,
        Some(vec![
            Pm4Packet::PredExec {
                xcc_mask: 4,
                exec_dwords: 4
            },
            set
        ])
    );
}

#[test]
fn copy_data() {
    // 6 dwords, count 4: 3<<30 | 4<<16 | 0x40<<8 | 2 = 0xC0044002.
    // GPU clock (SRC_SEL 9) to memory (DST_SEL 5<<8), 64-bit (COUNT_SEL 1<<16), WR_CONFIRM 1<<20:
    // DW1 = 9 | 0x500 | 0x10000 | 0x100000 = 0x110509.
    golden_all(
        Pm4Packet::CopyData {
            src_sel: sel::GPU_CLOCK,
            dst_sel: sel::MEMORY,
            count64: true,
            confirm: true,
            src: 0,
            dst: 0x3000,
        },
        &[0xC004_4002, 0x11_0509, 0, 0, 0x3000, 0],
    );
    // Immediate (5) 32-bit: DW1 = 5 | 5<<8 = 0x505; the immediate is kept whole.
    golden_all(
        Pm4Packet::CopyData {
            src_sel: sel::IMMEDIATE,
            dst_sel: sel::MEMORY,
            count64: false,
            confirm: false,
            src: 0xABCD_0003,
            dst: 0x3004,
        },
        &[0xC004_4002, 0x505, 0xABCD_0003, 0, 0x3004, 0],
    );
}
