//! Packet encodings: golden values worked out from the layouts in shared/reference/AQL.md, and
//! encode/decode roundtrips.

use aql::*;
use proptest::prelude::*;

#[test]
fn dispatch_golden() {
    let p = Packet::KernelDispatch(KernelDispatchPacket {
        barrier: true,
        acquire: FenceScope::System,
        release: FenceScope::Agent,
        dimensions: 1,
        workgroup_size: [256, 1, 1],
        grid_size: [1 << 20, 1, 1],
        private_segment_size: 0,
        group_segment_size: 4096,
        kernel_object: 0x7f00_1234_5600,
        kernarg_address: 0x7f00_0000_0040,
        completion_signal: 0x7f00_0000_1000,
    });
    let d = p.encode();
    // Header: type 2 | barrier 1<<8 | acquire SYSTEM(2)<<9 | release AGENT(1)<<11
    //       = 0x2 | 0x100 | 0x400 | 0x800 = 0x0D02; setup = 1 in bits 16-31.
    assert_eq!(d[0], 0x0001_0D02);
    // Bytes 4..8: workgroup x (256) | y (1) << 16; bytes 8..12: z (1) | reserved 0.
    assert_eq!(d[1], 0x0001_0100);
    assert_eq!(d[2], 1);
    // Grid at bytes 12, 16, 20.
    assert_eq!(&d[3..6], &[1 << 20, 1, 1]);
    // Private segment at 24, group segment at 28.
    assert_eq!((d[6], d[7]), (0, 4096));
    // kernel_object at 32, kernarg at 40, reserved at 48, completion at 56.
    assert_eq!((d[8], d[9]), (0x1234_5600, 0x7f00));
    assert_eq!((d[10], d[11]), (0x40, 0x7f00));
    assert_eq!((d[12], d[13]), (0, 0));
    assert_eq!((d[14], d[15]), (0x1000, 0x7f00));
    assert_eq!(p.header_word(), d[0]);
}

#[test]
fn barrier_and_pm4ib_golden() {
    let b = Packet::BarrierAnd(BarrierPacket {
        barrier: true,
        acquire: FenceScope::None,
        release: FenceScope::System,
        dep_signal: [0x10, 0, 0, 0, 0x50],
        completion_signal: 0x60,
    });
    let d = b.encode();
    // type 3 | barrier | release SYSTEM (2 << 11 = 0x1000) = 0x1103.
    assert_eq!(d[0], 0x1103);
    // dep_signal[0] at byte 8 (dword 2), dep_signal[4] at byte 40 (dword 10).
    assert_eq!((d[2], d[10]), (0x10, 0x50));
    assert_eq!(d[14], 0x60);

    let ib = Packet::VendorPm4Ib(Pm4IbPacket {
        barrier: false,
        acquire: FenceScope::System,
        release: FenceScope::System,
        ib_address: 0x1_0000_1000,
        ib_size_dwords: 8,
        completion_signal: 0,
    });
    let d = ib.encode();
    // Vendor type 0, acquire 2<<9 = 0x400, release 2<<11 = 0x1000: 0x1400; AmdFormat 1 at byte 2.
    assert_eq!(d[0], 0x0001_1400);
    // PM4 INDIRECT_BUFFER header: 3<<30 | 2<<16 | 0x3F<<8 = 0xC0023F00.
    assert_eq!(d[1], 0xC002_3F00);
    assert_eq!((d[2], d[3]), (0x1000, 1));
    // size 8 | VALID (1<<23) = 0x0080_0008; dw_cnt_remain 0xA at byte 20.
    assert_eq!((d[4], d[5]), (0x0080_0008, 0xA));
}

#[test]
fn invalid_and_unknown_headers_are_errors() {
    let mut d = [0u32; 16];
    d[0] = INVALID_HEADER_WORD;
    assert_eq!(Packet::decode(&d), Err(DecodeError::NotPublished));
    d[0] = 9;
    assert_eq!(Packet::decode(&d), Err(DecodeError::UnknownType(9)));
    d[0] = 2 | 3 << 9;
    assert_eq!(Packet::decode(&d), Err(DecodeError::BadFenceScope(3)));
    // A zeroed slot is a valid-looking vendor packet header, which is why rings start INVALID.
    assert!(is_valid_header_word(0));
    assert!(!is_valid_header_word(INVALID_HEADER_WORD));
}

fn scope() -> impl Strategy<Value = FenceScope> {
    prop_oneof![
        Just(FenceScope::None),
        Just(FenceScope::Agent),
        Just(FenceScope::System)
    ]
}

fn packet() -> impl Strategy<Value = Packet> {
    let dispatch = (
        any::<bool>(),
        scope(),
        scope(),
        1u16..=3,
        any::<[u16; 3]>(),
        any::<[u32; 3]>(),
        any::<(u32, u32, u64, u64, u64)>(),
    )
        .prop_map(
            |(
                barrier,
                acquire,
                release,
                dimensions,
                workgroup_size,
                grid_size,
                (ps, gs, ko, ka, cs),
            )| {
                Packet::KernelDispatch(KernelDispatchPacket {
                    barrier,
                    acquire,
                    release,
                    dimensions,
                    workgroup_size,
                    grid_size,
                    private_segment_size: ps,
                    group_segment_size: gs,
                    kernel_object: ko,
                    kernarg_address: ka,
                    completion_signal: cs,
                })
            },
        );
    let barrier = (
        any::<bool>(),
        any::<bool>(),
        scope(),
        scope(),
        any::<[u64; 5]>(),
        any::<u64>(),
    )
        .prop_map(
            |(or, barrier, acquire, release, dep_signal, completion_signal)| {
                let p = BarrierPacket {
                    barrier,
                    acquire,
                    release,
                    dep_signal,
                    completion_signal,
                };
                if or {
                    Packet::BarrierOr(p)
                } else {
                    Packet::BarrierAnd(p)
                }
            },
        );
    let ib = (
        any::<bool>(),
        scope(),
        scope(),
        any::<u64>(),
        0u32..(1 << 20),
        any::<u64>(),
    )
        .prop_map(|(barrier, acquire, release, a, n, completion_signal)| {
            Packet::VendorPm4Ib(Pm4IbPacket {
                barrier,
                acquire,
                release,
                ib_address: a & !3,
                ib_size_dwords: n,
                completion_signal,
            })
        });
    let bv = (
        any::<bool>(),
        scope(),
        scope(),
        any::<(u64, i64, i64, u32, u64)>(),
    )
        .prop_map(
            |(barrier, acquire, release, (signal, value, mask, condition, completion_signal))| {
                Packet::BarrierValue(BarrierValuePacket {
                    barrier,
                    acquire,
                    release,
                    signal,
                    value,
                    mask,
                    condition,
                    completion_signal,
                })
            },
        );
    prop_oneof![dispatch, barrier, ib, bv]
}

proptest! {
    #[test]
    fn roundtrip(p in packet()) {
        prop_assert_eq!(Packet::decode(&p.encode()), Ok(p));
    }

    #[test]
    fn decode_never_panics(d in any::<[u32; 16]>()) {
        let _ = Packet::decode(&d);
    }

    /// Patching an encoded packet gives what encoding the patched packet gives.
    #[test]
    fn encoded_patches_match_packet_setters(
        mut p in packet(),
        barrier in any::<bool>(),
        signal in any::<u64>(),
        base in any::<u64>(),
    ) {
        let mut e = p.encode();
        aql::set_encoded_barrier(&mut e, barrier);
        aql::set_encoded_completion_signal(&mut e, signal);
        p.set_barrier(barrier);
        p.set_completion_signal(signal);
        if let Packet::KernelDispatch(d) = &mut p {
            aql::add_encoded_kernarg_base(&mut e, base);
            d.kernarg_address = d.kernarg_address.wrapping_add(base);
        }
        prop_assert_eq!(e, p.encode());
    }
}
