//! Golden encodings worked out by hand from the field definitions (shared/reference/SDMA.md),
//! roundtrips, decoder totality, copy splitting and the ring writer.

use proptest::prelude::*;
use sdma::ring::{RingError, SdmaRing};
use sdma::*;
use std::sync::atomic::{AtomicU64, Ordering};

const GFX90A: u32 = 90010;

fn enc(p: &SdmaPacket, v: SdmaVersion) -> Vec<u32> {
    let mut out = Vec::new();
    p.encode(v, GFX90A, &mut out).unwrap();
    out
}

#[test]
fn golden_packets() {
    // COPY_LINEAR: header op 1 | sub-op 0 << 8 = 0x1; DW1 = bytes - 1; DW2 parameters 0.
    let c = SdmaPacket::CopyLinear {
        src: 0x1_0000_1000,
        dst: 0x2_0000_2000,
        bytes: 4096,
    };
    assert_eq!(
        enc(&c, SdmaVersion::V4),
        vec![1, 4095, 0, 0x1000, 1, 0x2000, 2]
    );
    // CONSTANT_FILL: op 11 | fill size 2 (dword) << 30 = 0x8000000B; DW4 = bytes - 1.
    let f = SdmaPacket::ConstantFill {
        dst: 0x3000,
        data: 0xAB,
        bytes: 64,
    };
    assert_eq!(
        enc(&f, SdmaVersion::V6),
        vec![0x8000_000B, 0x3000, 0, 0xAB, 63]
    );
    // FENCE on SDMA 5+: op 5 | MTYPE 3 << 16 = 0x30005; on SDMA 4 MTYPE stays 0.
    let fe = SdmaPacket::Fence {
        addr: 0x4000,
        data: 9,
        mtype_uncached: true,
    };
    assert_eq!(enc(&fe, SdmaVersion::V6), vec![0x3_0005, 0x4000, 0, 9]);
    assert_eq!(enc(&fe, SdmaVersion::V4)[0], 5);
    // TRAP: op 6; DW1 int_context (28 bits).
    assert_eq!(
        enc(
            &SdmaPacket::Trap {
                int_context: 0x1234
            },
            SdmaVersion::V4
        ),
        vec![6, 0x1234]
    );
    // POLL_REGMEM ==: op 8 | FUNC 3 << 28 | MEM_POLL 1 << 31 = 0xB0000008; DW5 interval | retry << 16.
    let p = SdmaPacket::PollRegMem {
        addr: 0x5000,
        reference: 0,
        mask: !0,
        func: CompareFunction::Equal,
        interval: 10,
        retry_count: 0xFFF,
    };
    assert_eq!(
        enc(&p, SdmaVersion::V4),
        vec![0xB000_0008, 0x5000, 0, 0, 0xFFFF_FFFF, 0x0FFF_000A]
    );
    // ATOMIC ADD64: op 10 | 47 << 25 = 0x5E00000A.
    let a = SdmaPacket::Atomic {
        addr: 0x6008,
        op: AtomicOp::Add64,
        src: u64::MAX,
        cmp: 0,
        loop_interval: 0,
    };
    assert_eq!(
        enc(&a, SdmaVersion::V4),
        vec![0x5E00_000A, 0x6008, 0, 0xFFFF_FFFF, 0xFFFF_FFFF, 0, 0, 0]
    );
    // TIMESTAMP GET_GLOBAL: op 13 | sub-op 2 << 8 = 0x20D.
    assert_eq!(
        enc(&SdmaPacket::Timestamp { addr: 0x7020 }, SdmaVersion::V5_2),
        vec![0x20D, 0x7020, 0]
    );
    // WRITE_LINEAR of 2 dwords: op 2; DW3 = count - 1.
    assert_eq!(
        enc(
            &SdmaPacket::Write {
                dst: 0x8000,
                data: vec![5, 6]
            },
            SdmaVersion::V4
        ),
        vec![2, 0x8000, 0, 1, 5, 6]
    );
    // NOP with 2 extra dwords: count in bits 16-29.
    assert_eq!(
        enc(&SdmaPacket::Nop { extra_dwords: 2 }, SdmaVersion::V4),
        vec![0x2_0000, 0, 0]
    );
}

#[test]
fn encode_errors() {
    let mut out = Vec::new();
    let big = SdmaPacket::CopyLinear {
        src: 0,
        dst: 0,
        bytes: 0x40_0000,
    };
    assert_eq!(
        big.encode(SdmaVersion::V4, 90402, &mut out),
        Err(EncodeError::BadLength(0x40_0000))
    );
    assert!(
        big.encode(SdmaVersion::V4, GFX90A, &mut out).is_ok(),
        "gfx90a copies up to 1 GiB"
    );
    let gcr = SdmaPacket::Gcr {
        base: 0,
        limit: 0,
        control: 0,
    };
    assert_eq!(
        gcr.encode(SdmaVersion::V4, GFX90A, &mut out),
        Err(EncodeError::Unsupported(SdmaVersion::V4))
    );
    let fence = SdmaPacket::Fence {
        addr: 2,
        data: 0,
        mtype_uncached: false,
    };
    assert_eq!(
        fence.encode(SdmaVersion::V4, GFX90A, &mut out),
        Err(EncodeError::Misaligned(2))
    );
}

#[test]
fn large_copies_split_exactly() {
    let parts: Vec<_> =
        copy_linear_split(SdmaVersion::V4, 90402, 0x1000, 0x9000_0000, 10 << 20).collect();
    assert_eq!(parts.len(), (10u64 << 20).div_ceil(0x3F_FFFF) as usize);
    let mut next = 0u64;
    for p in &parts {
        let SdmaPacket::CopyLinear { src, dst, bytes } = p else {
            panic!()
        };
        assert_eq!(*src, 0x1000 + next);
        assert_eq!(*dst, 0x9000_0000 + next);
        next += bytes;
    }
    assert_eq!(next, 10 << 20);
}

fn packet() -> impl Strategy<Value = SdmaPacket> {
    prop_oneof![
        (0u32..8).prop_map(|extra_dwords| SdmaPacket::Nop { extra_dwords }),
        (any::<u64>(), any::<u64>(), 1u64..0x3F_FFFF)
            .prop_map(|(src, dst, bytes)| SdmaPacket::CopyLinear { src, dst, bytes }),
        (any::<u64>(), any::<u32>(), 1u64..1000).prop_map(|(d, data, n)| {
            SdmaPacket::ConstantFill {
                dst: d & !3,
                data,
                bytes: n * 4,
            }
        }),
        (any::<u64>(), prop::collection::vec(any::<u32>(), 1..10))
            .prop_map(|(d, data)| SdmaPacket::Write { dst: d & !3, data }),
        (any::<u64>(), any::<u32>()).prop_map(|(a, data)| SdmaPacket::Fence {
            addr: a & !3,
            data,
            mtype_uncached: true
        }),
        (0u32..0x1000_0000).prop_map(|int_context| SdmaPacket::Trap { int_context }),
        (any::<u64>(), any::<u64>(), any::<u64>()).prop_map(|(a, src, cmp)| SdmaPacket::Atomic {
            addr: a & !7,
            op: AtomicOp::Add64,
            src,
            cmp,
            loop_interval: 0
        }),
        any::<u64>().prop_map(|a| SdmaPacket::Timestamp { addr: a & !7 }),
    ]
}

proptest! {
    #[test]
    fn roundtrip(p in packet()) {
        let v = enc(&p, SdmaVersion::V6);
        prop_assert_eq!(SdmaPacket::decode(SdmaVersion::V6, &v), Ok((p, v.len())));
    }

    #[test]
    fn decode_is_total(d in prop::collection::vec(any::<u32>(), 0..40)) {
        let _ = SdmaPacket::decode(SdmaVersion::V4, &d);
        let _ = SdmaPacket::decode(SdmaVersion::V6, &d);
    }
}

#[test]
fn ring_wraps_with_nop_padding() {
    let mut mem = vec![0xFFFF_FFFFu32; 64]; // 256 bytes
    let (rptr, wptr, doorbell) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    // SAFETY (test): all of it outlives the ring.
    let mut r =
        unsafe { SdmaRing::new(mem.as_mut_ptr().cast(), 256, &rptr, &wptr, &doorbell) }.unwrap();
    let sizes = [7usize, 5, 3, 8];
    let mut seen = 0;
    let mut pos = 0u64;
    for i in 0..60 {
        let d: Vec<u32> = vec![(i as u32) << 8 | op::TRAP as u32; sizes[i % 4]];
        loop {
            match r.try_write(&d) {
                Ok(_) => break,
                Err(RingError::Full) => {
                    // Play the engine: consume up to the write pointer, checking padding.
                    r.commit();
                    let w = wptr.load(Ordering::Acquire);
                    while pos < w {
                        let at = ((pos % 256) / 4) as usize;
                        if mem[at] == 0 {
                            pos += 4; // NOP padding
                            continue;
                        }
                        seen += 1;
                        pos += 4;
                    }
                    rptr.store(pos, Ordering::Release);
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
    assert!(
        seen > 100,
        "the ring wrapped several times ({seen} dwords consumed)"
    );
    assert_eq!(r.try_write(&[0; 64]), Err(RingError::TooLarge(64)));
}
