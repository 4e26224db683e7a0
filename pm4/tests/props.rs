//! Properties: valid packets roundtrip on every family, any packet encodes as well-framed
//! packets, and the decoder is total (never panics) and only yields valid packets.

use pm4::*;
use proptest::prelude::*;

fn family() -> impl Strategy<Value = GfxFamily> {
    proptest::sample::select(GfxFamily::ALL.to_vec())
}

fn function() -> impl Strategy<Value = CompareFunction> {
    (0u32..7).prop_map(|f| CompareFunction::from_bits(f).unwrap_or(CompareFunction::Always))
}

/// Packets that pass `validate` on `f`.
fn valid_packet(f: GfxFamily) -> impl Strategy<Value = Pm4Packet> {
    let gcr = if f.is_gfx10_plus() {
        any::<u32>().boxed()
    } else {
        Just(0).boxed()
    };
    prop_oneof![
        (0u32..0x4000).prop_map(|padding| Pm4Packet::Nop { padding }),
        (0u32..0x400, prop::collection::vec(any::<u32>(), 1..16)).prop_map(|(off, values)| {
            // Keep the registers inside the SH space.
            let reg = regs::SH_REG_BASE + off.min(0x400 - values.len() as u32);
            Pm4Packet::SetShReg { reg, values }
        }),
        (any::<[u32; 3]>(), any::<u32>())
            .prop_map(|(dims, initiator)| Pm4Packet::DispatchDirect { dims, initiator }),
        (
            (0u32..64, 0u32..16, any::<u32>(), 0u32..4, 0u32..8, 0u32..8),
            (any::<u64>(), any::<u64>(), any::<u32>())
        )
            .prop_map(
                |((event_type, event_index, cache, dst_sel, int_sel, data_sel), (a, data, id))| {
                    let align = if data_sel <= data_sel::DATA32 { 4 } else { 8 };
                    Pm4Packet::ReleaseMem {
                        event_type,
                        event_index,
                        cache_action: cache & release_mem::CACHE_ACTION_MASK,
                        dst_sel,
                        int_sel,
                        data_sel,
                        addr: a & !(align - 1),
                        data,
                        int_ctxid: id,
                    }
                }
            ),
        (0u32..0x8000_0000, gcr).prop_map(|(coher_cntl, gcr_cntl)| Pm4Packet::AcquireMem {
            coher_cntl,
            gcr_cntl
        }),
        (
            function(),
            0u32..4,
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            0u32..0x10000
        )
            .prop_map(|(function, space, a, reference, mask, poll_interval)| {
                Pm4Packet::WaitRegMem {
                    function,
                    mem_space: space,
                    addr: if space == mem_space::MEMORY {
                        a & !3
                    } else {
                        a
                    },
                    reference,
                    mask,
                    poll_interval,
                }
            }),
        (
            0u32..16,
            any::<bool>(),
            any::<u64>(),
            prop::collection::vec(any::<u32>(), 1..16)
        )
            .prop_map(|(dst_sel, confirm, a, data)| Pm4Packet::WriteData {
                dst_sel,
                confirm,
                addr: if matches!(dst_sel, 1 | 2 | 5) {
                    a & !3
                } else {
                    a
                },
                data,
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
        (0u32..256, 0u32..0x4000).prop_map(|(xcc_mask, exec_dwords)| Pm4Packet::PredExec {
            xcc_mask,
            exec_dwords
        }),
        (
            0u32..16,
            0u32..16,
            any::<bool>(),
            any::<bool>(),
            any::<u64>(),
            any::<u64>()
        )
            .prop_map(|(src_sel, dst_sel, count64, confirm, src, dst)| {
                let align = if count64 { 8 } else { 4 };
                Pm4Packet::CopyData {
                    src_sel,
                    dst_sel,
                    count64,
                    confirm,
                    src: if matches!(src_sel, 1 | 2) {
                        src & !(align - 1)
                    } else {
                        src
                    },
                    dst: if matches!(dst_sel, 2 | 5) {
                        dst & !(align - 1)
                    } else {
                        dst
                    },
                }
            }),
    ]
}

/// Any packet, valid or not: fields anywhere in their types, lengths past one packet.
fn any_packet() -> impl Strategy<Value = Pm4Packet> {
    prop_oneof![
        prop_oneof![0u32..16, 0x3FF0u32..0x4010].prop_map(|padding| Pm4Packet::Nop { padding }),
        (any::<u32>(), prop::collection::vec(any::<u32>(), 0..5))
            .prop_map(|(reg, values)| Pm4Packet::SetShReg { reg, values }),
        (any::<u32>(), 0x3FFCusize..0x4002).prop_map(|(reg, n)| Pm4Packet::SetShReg {
            reg,
            values: vec![reg; n]
        }),
        (any::<u32>(), any::<u32>(), any::<u64>(), 0usize..5).prop_map(|(s, n, addr, len)| {
            Pm4Packet::WriteData {
                dst_sel: s,
                confirm: n & 1 != 0,
                addr,
                data: vec![n; len],
            }
        }),
        (any::<u32>(), any::<u32>(), any::<u32>(), any::<u64>()).prop_map(|(a, b, c, addr)| {
            Pm4Packet::ReleaseMem {
                event_type: a,
                event_index: b,
                cache_action: c,
                dst_sel: a >> 3,
                int_sel: b >> 5,
                data_sel: c >> 7,
                addr,
                data: addr.rotate_left(7),
                int_ctxid: a ^ b,
            }
        }),
        (any::<u32>(), any::<u32>()).prop_map(|(coher_cntl, gcr_cntl)| Pm4Packet::AcquireMem {
            coher_cntl,
            gcr_cntl
        }),
        (function(), any::<u32>(), any::<u64>(), any::<u32>()).prop_map(|(f, s, addr, p)| {
            Pm4Packet::WaitRegMem {
                function: f,
                mem_space: s,
                addr,
                reference: p,
                mask: !p,
                poll_interval: p,
            }
        }),
        (any::<u64>(), any::<u32>(), any::<bool>()).prop_map(|(addr, size_dwords, chain)| {
            Pm4Packet::IndirectBuffer {
                addr,
                size_dwords,
                chain,
            }
        }),
        (any::<u32>(), any::<u32>()).prop_map(|(event_type, event_index)| {
            Pm4Packet::EventWrite {
                event_type,
                event_index,
            }
        }),
        (any::<u32>(), any::<u32>()).prop_map(|(xcc_mask, exec_dwords)| {
            Pm4Packet::PredExec {
                xcc_mask,
                exec_dwords,
            }
        }),
        (any::<u32>(), any::<u32>(), any::<u64>(), any::<u64>()).prop_map(|(s, d, src, dst)| {
            Pm4Packet::CopyData {
                src_sel: s,
                dst_sel: d,
                count64: s & 0x100 != 0,
                confirm: d & 0x100 != 0,
                src,
                dst,
            }
        }),
    ]
}

fn family_and_valid_packet() -> impl Strategy<Value = (GfxFamily, Pm4Packet)> {
    family().prop_flat_map(|f| (Just(f), valid_packet(f)))
}

/// Dwords that look like a packet of a known opcode, with a plausible or arbitrary count.
fn packet_like() -> impl Strategy<Value = Vec<u32>> {
    let op = prop_oneof![
        proptest::sample::select(vec![
            opcode::NOP,
            opcode::SET_SH_REG,
            opcode::DISPATCH_DIRECT,
            opcode::RELEASE_MEM,
            opcode::ACQUIRE_MEM,
            opcode::WAIT_REG_MEM,
            opcode::WRITE_DATA,
            opcode::INDIRECT_BUFFER,
            opcode::EVENT_WRITE,
            opcode::COPY_DATA,
        ]),
        any::<u8>(),
    ];
    let count = prop_oneof![0u32..10, Just(0x3FFF), any::<u32>()];
    (
        op,
        count,
        any::<u8>(),
        prop::collection::vec(any::<u32>(), 0..12),
    )
        .prop_map(|(op, count, low, body)| {
            let h = 3 << 30 | (count & 0x3FFF) << 16 | u32::from(op) << 8 | u32::from(low & 3);
            std::iter::once(h).chain(body).collect()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn valid_packets_roundtrip((f, p) in family_and_valid_packet()) {
        prop_assert_eq!(p.validate(f), Ok(()));
        let mut v = Vec::new();
        prop_assert_eq!(p.try_encode(f, &mut v), Ok(v.len()));
        prop_assert_eq!(p.len_dwords(f), v.len());
        prop_assert_eq!(packet_dwords(v[0]), Some(v.len()));
        prop_assert_eq!(Pm4Packet::decode(f, &v), Ok((p, v.len())));
    }

    #[test]
    fn any_packet_encodes_as_framed_packets(p in any_packet(), f in family()) {
        let mut v = vec![];
        p.encode(f, &mut v);
        prop_assert_eq!(p.len_dwords(f), v.len());
        // Walk the output by headers: each is a type-3 packet (or the filler) and together they
        // cover it exactly.
        let mut at = 0;
        while at < v.len() {
            prop_assert_eq!(v[at] >> 30, 3, "header at {}", at);
            at += packet_dwords(v[at]).unwrap_or(usize::MAX / 2);
        }
        prop_assert_eq!(at, v.len());
        // try_encode agrees with validate and appends nothing when it fails.
        let mut w = vec![];
        match p.validate(f) {
            Ok(()) => prop_assert_eq!(p.try_encode(f, &mut w), Ok(v.len())),
            Err(e) => {
                prop_assert_eq!(p.try_encode(f, &mut w), Err(e));
                prop_assert!(w.is_empty());
            }
        }
    }

    #[test]
    fn decode_is_total_on_random_dwords(d in prop::collection::vec(any::<u32>(), 0..40), f in family()) {
        let _ = Pm4Packet::decode(f, &d);
    }

    #[test]
    fn decode_is_total_and_yields_valid_packets(d in packet_like(), f in family()) {
        if let Ok((p, n)) = Pm4Packet::decode(f, &d) {
            prop_assert!(n >= 1 && n <= d.len());
            prop_assert_eq!(packet_dwords(d[0]), Some(n));
            // What the decoder yields is representable: it validates and re-encodes to itself.
            prop_assert_eq!(p.validate(f), Ok(()));
            let mut v = Vec::new();
            p.encode(f, &mut v);
            prop_assert_eq!(Pm4Packet::decode(f, &v), Ok((p, v.len())));
        }
    }
}
