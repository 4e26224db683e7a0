//! Golden encodings worked out by hand from the field definitions (shared/reference/PM4.md,
//! Linux soc15d.h / nvd.h), roundtrips, decoder totality, and the ring writer.

use pm4::ring::{Pm4Ring, RingError};
use pm4::*;
use proptest::prelude::*;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

fn enc(p: &Pm4Packet, f: GfxFamily) -> Vec<u32> {
    let mut v = Vec::new();
    p.encode(f, &mut v);
    v
}

#[test]
fn release_mem_golden() {
    // Header: 3<<30 | (8-2)<<16 | 0x49<<8 | 1<<1 = 0xC0064902.
    // DW1: EVENT_TYPE 0x14 | EVENT_INDEX 5<<8 = 0x514.
    // DW2: DST_SEL 0 | INT_SEL 2<<24 | DATA_SEL 1<<29 = 0x22000000.
    let p = Pm4Packet::ReleaseMem {
        event_type: event::CACHE_FLUSH_AND_INV_TS,
        event_index: 5,
        cache_action: 0,
        dst_sel: 0,
        int_sel: int_sel::SEND_INT_ON_CONFIRM,
        data_sel: data_sel::DATA32,
        addr: 0x0000_7F12_3456_7000,
        data: 0xDEAD_BEEF,
        int_ctxid: 42,
    };
    assert_eq!(
        enc(&p, GfxFamily::Gfx90a),
        vec![
            0xC006_4902,
            0x514,
            0x2200_0000,
            0x3456_7000,
            0x7F12,
            0xDEAD_BEEF,
            0,
            42
        ]
    );
}

#[test]
fn write_data_and_wait_reg_mem_golden() {
    // WRITE_DATA with 2 data dwords: 6 dwords total, count 4: 3<<30 | 4<<16 | 0x37<<8 | 2 = 0xC0043702.
    // DW1: DST_SEL 5 (memory) << 8 | WR_CONFIRM 1<<20 = 0x100500.
    let w = Pm4Packet::WriteData {
        dst_sel: 5,
        confirm: true,
        addr: 0x1_0000_0010,
        data: vec![7, 8],
    };
    assert_eq!(
        enc(&w, GfxFamily::Gfx11),
        vec![0xC004_3702, 0x0010_0500, 0x10, 1, 7, 8]
    );
    // WAIT_REG_MEM: 7 dwords, count 5: 0xC0053C02; DW1: FUNCTION 3 (==) | MEM_SPACE 1<<4 = 0x13.
    let r = Pm4Packet::WaitRegMem {
        function: CompareFunction::Equal,
        mem_space: 1,
        addr: 0x2000,
        reference: 5,
        mask: 0xFFFF_FFFF,
        poll_interval: 4,
    };
    assert_eq!(
        enc(&r, GfxFamily::Gfx9),
        vec![0xC005_3C02, 0x13, 0x2000, 0, 5, 0xFFFF_FFFF, 4]
    );
}

#[test]
fn dispatch_registers_and_ib_golden() {
    // SET_SH_REG of 2 values at COMPUTE_PGM_LO (0x2E0C): 4 dwords, count 2: 0xC0027602;
    // DW1 = 0x2E0C - 0x2C00 = 0x20C.
    let s = Pm4Packet::SetShReg {
        reg: regs::COMPUTE_PGM_LO,
        values: vec![0x1234_5678, 0x9A],
    };
    assert_eq!(
        enc(&s, GfxFamily::Gfx90a),
        vec![0xC002_7602, 0x20C, 0x1234_5678, 0x9A]
    );
    // DISPATCH_DIRECT: 5 dwords, count 3: 0xC0031502; kfdtest's initiator 0x21.
    let d = Pm4Packet::DispatchDirect {
        dims: [4, 1, 1],
        initiator: 0x21,
    };
    assert_eq!(enc(&d, GfxFamily::Gfx9), vec![0xC003_1502, 4, 1, 1, 0x21]);
    // INDIRECT_BUFFER: 4 dwords, count 2: 0xC0023F02; DW3 = size 16 | VALID 1<<23 = 0x800010.
    let ib = Pm4Packet::IndirectBuffer {
        addr: 0x7F00_0000_1004,
        size_dwords: 16,
        chain: false,
    };
    assert_eq!(
        enc(&ib, GfxFamily::Gfx90a),
        vec![0xC002_3F02, 0x1004, 0x7F00, 0x80_0010]
    );
    // EVENT_WRITE CS_PARTIAL_FLUSH: 2 dwords, count 0: 0xC0004602; DW1 = 7 | 4<<8 = 0x407.
    let e = Pm4Packet::EventWrite {
        event_type: event::CS_PARTIAL_FLUSH,
        event_index: 4,
    };
    assert_eq!(enc(&e, GfxFamily::Gfx103), vec![0xC000_4602, 0x407]);
    // COPY_DATA GPU clock (9) to memory (5), 64-bit: 6 dwords, count 4: 0xC0044002;
    // DW1 = 9 | 5<<8 | 1<<16 | 1<<20 = 0x110509.
    let c = Pm4Packet::CopyData {
        src_sel: 9,
        dst_sel: 5,
        count64: true,
        confirm: true,
        src: 0,
        dst: 0x3000,
    };
    assert_eq!(
        enc(&c, GfxFamily::Gfx90a),
        vec![0xC004_4002, 0x11_0509, 0, 0, 0x3000, 0]
    );
}

#[test]
fn acquire_mem_differs_by_family() {
    // gfx9: 7 dwords, count 5: 0xC0055802, kfdtest's COHER_CNTL 0x28C00000.
    let a = Pm4Packet::AcquireMem {
        coher_cntl: 0x28C0_0000,
        gcr_cntl: 0,
    };
    assert_eq!(
        enc(&a, GfxFamily::Gfx90a),
        vec![0xC005_5802, 0x28C0_0000, 0xFFFF_FFFF, 0xFF_FFFF, 0, 0, 0xA]
    );
    // gfx10+: 8 dwords, count 6: 0xC0065802, GCR_CNTL last.
    let g = Pm4Packet::AcquireMem {
        coher_cntl: 0,
        gcr_cntl: 0x1 | 1 << 8,
    };
    assert_eq!(
        enc(&g, GfxFamily::Gfx11),
        vec![0xC006_5802, 0, 0xFFFF_FFFF, 0xFF_FFFF, 0, 0, 0xA, 0x101]
    );
}

#[test]
fn nops_and_errors() {
    assert_eq!(
        enc(&Pm4Packet::Nop { padding: 0 }, GfxFamily::Gfx9),
        vec![NOP_FILLER]
    );
    assert_eq!(
        Pm4Packet::decode(GfxFamily::Gfx9, &[NOP_FILLER, 5]),
        Ok((Pm4Packet::Nop { padding: 0 }, 1))
    );
    assert_eq!(
        Pm4Packet::decode(GfxFamily::Gfx9, &[]),
        Err(DecodeError::Empty)
    );
    assert_eq!(
        Pm4Packet::decode(GfxFamily::Gfx9, &[0x1234]),
        Err(DecodeError::NotType3(0x1234))
    );
    assert_eq!(
        Pm4Packet::decode(GfxFamily::Gfx9, &[header(0x99, 1), 0]),
        Err(DecodeError::UnknownOpcode(0x99))
    );
    assert!(matches!(
        Pm4Packet::decode(GfxFamily::Gfx9, &[header(opcode::DISPATCH_DIRECT, 4), 1]),
        Err(DecodeError::Truncated { .. })
    ));
    assert!(matches!(
        Pm4Packet::decode(GfxFamily::Gfx9, &[header(opcode::DISPATCH_DIRECT, 2), 1, 1]),
        Err(DecodeError::BadLength { .. })
    ));
    assert!(CompareFunction::GreaterEqual.eval(0x1_0005, 5, 0xFFFF));
    assert!(!CompareFunction::Less.eval(5, 5, !0));
    assert_eq!(
        GfxFamily::from_gfx_target_version(90402),
        Some(GfxFamily::Gfx94x)
    );
    assert_eq!(GfxFamily::from_gfx_target_version(12345), None);
    assert_eq!(regs::compute_pgm_rsrc3(GfxFamily::Gfx90a), Some(0x2E2D));
    assert_eq!(regs::compute_pgm_rsrc3(GfxFamily::Gfx11), Some(0x2E28));
}

fn family() -> impl Strategy<Value = GfxFamily> {
    prop_oneof![
        Just(GfxFamily::Gfx9),
        Just(GfxFamily::Gfx90a),
        Just(GfxFamily::Gfx94x),
        Just(GfxFamily::Gfx103),
        Just(GfxFamily::Gfx11)
    ]
}

fn packet() -> impl Strategy<Value = Pm4Packet> {
    prop_oneof![
        (0u32..20).prop_map(|padding| Pm4Packet::Nop { padding }),
        (0x2C00u32..0x2FF0, prop::collection::vec(any::<u32>(), 1..8))
            .prop_map(|(reg, values)| Pm4Packet::SetShReg { reg, values }),
        (any::<[u32; 3]>(), any::<u32>())
            .prop_map(|(dims, initiator)| Pm4Packet::DispatchDirect { dims, initiator }),
        (
            0u32..64,
            0u32..16,
            0u32..3,
            0u32..8,
            0u32..8,
            any::<u64>(),
            any::<u64>(),
            any::<u32>()
        )
            .prop_map(
                |(event_type, event_index, dst_sel, int_sel, data_sel, addr, data, int_ctxid)| {
                    Pm4Packet::ReleaseMem {
                        event_type,
                        event_index,
                        cache_action: 0,
                        dst_sel,
                        int_sel,
                        data_sel,
                        addr,
                        data,
                        int_ctxid,
                    }
                }
            ),
        (
            0u32..7,
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            0u32..0x10000
        )
            .prop_map(|(f, a, r, m, p)| Pm4Packet::WaitRegMem {
                function: CompareFunction::from_bits(f).unwrap(),
                mem_space: 1,
                addr: a,
                reference: r,
                mask: m,
                poll_interval: p
            }),
        (
            0u32..16,
            any::<bool>(),
            any::<u64>(),
            prop::collection::vec(any::<u32>(), 1..8)
        )
            .prop_map(|(dst_sel, confirm, addr, data)| Pm4Packet::WriteData {
                dst_sel,
                confirm,
                addr,
                data
            }),
        (any::<u64>(), 0u32..(1 << 20), any::<bool>()).prop_map(|(a, size_dwords, chain)| {
            Pm4Packet::IndirectBuffer {
                addr: a & !3,
                size_dwords,
                chain,
            }
        }),
        (0u32..64, 0u32..16).prop_map(|(event_type, event_index)| Pm4Packet::EventWrite {
            event_type,
            event_index
        }),
    ]
}

proptest! {
    #[test]
    fn roundtrip(p in packet(), f in family()) {
        let v = enc(&p, f);
        prop_assert_eq!(Pm4Packet::decode(f, &v), Ok((p, v.len())));
    }

    #[test]
    fn decode_is_total(d in prop::collection::vec(any::<u32>(), 0..40), f in family()) {
        let _ = Pm4Packet::decode(f, &d);
    }
}

struct Mem {
    ring: Vec<u32>,
    rptr: AtomicU32,
    wptr: AtomicU64,
    doorbell: AtomicU64,
}

fn ring(m: &mut Mem) -> Pm4Ring {
    let n = m.ring.len() as u32;
    // SAFETY (test): the memory lives in `m`, which outlives the ring in each test.
    unsafe { Pm4Ring::new(m.ring.as_mut_ptr(), n, &m.rptr, &m.wptr, &m.doorbell) }.unwrap()
}

#[test]
fn ring_wraps_with_nop_padding_and_never_overruns() {
    let mut m = Mem {
        ring: vec![0; 64],
        rptr: AtomicU32::new(0),
        wptr: AtomicU64::new(0),
        doorbell: AtomicU64::new(0),
    };
    let mut r = ring(&mut m);
    assert_eq!(r.space(), 63, "one dword is kept free");
    let packet = |v: u32| {
        enc(
            &Pm4Packet::WriteData {
                dst_sel: 5,
                confirm: false,
                addr: 0x1000,
                data: vec![v, v],
            },
            GfxFamily::Gfx9,
        )
    };
    // 6-dword packets do not divide 64: the 11th would cross the end.
    let mut seen = Vec::new();
    for v in 0..40u32 {
        loop {
            match r.try_write(&packet(v)) {
                Ok(_) => break,
                Err(RingError::Full) => {
                    // Play the CP: consume everything committed, decoding as it goes.
                    r.commit();
                    let w = m.wptr.load(Ordering::Acquire);
                    let mut pos = u64::from(m.rptr.load(Ordering::Acquire));
                    while pos % 64 != w % 64 {
                        let at = (pos % 64) as usize;
                        let (p, n) = Pm4Packet::decode(GfxFamily::Gfx9, &m.ring[at..]).unwrap();
                        if let Pm4Packet::WriteData { data, .. } = p {
                            seen.push(data[0]);
                        }
                        pos += n as u64;
                    }
                    m.rptr.store((pos % 64) as u32, Ordering::Release);
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
    assert!(
        seen.len() >= 30,
        "the ring wrapped and the CP saw {} packets",
        seen.len()
    );
    assert_eq!(
        seen,
        (0..seen.len() as u32).collect::<Vec<_>>(),
        "every packet in order, none lost"
    );
    assert_eq!(r.try_write(&vec![0; 64]), Err(RingError::TooLarge(64)));
    assert!(
        m.doorbell.load(Ordering::Acquire) > 64,
        "the 64-bit pointer is monotonic"
    );
}
