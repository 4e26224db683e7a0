//! Decoder errors and framing, encoder validation, families, registers and comparisons.

use pm4::*;

const F: GfxFamily = GfxFamily::Gfx90a;

#[test]
fn framing_and_fillers() {
    assert_eq!(Pm4Packet::decode(F, &[]), Err(DecodeError::Empty));
    // Any NOP with count 0x3FFF is one dword: kfdtest's 0xFFFF1002 and Linux's compute-ring
    // filler 0xFFFF1000 (no shader-type bit); a type-2 packet is one dword too.
    for filler in [NOP_FILLER, 0xFFFF_1000, TYPE2_FILLER, 0x8000_1234] {
        assert_eq!(
            Pm4Packet::decode(F, &[filler, 0x1234]),
            Ok((Pm4Packet::Nop { padding: 0 }, 1)),
            "{filler:#x}"
        );
        assert_eq!(packet_dwords(filler), Some(1));
    }
    // Type 0 and 1 headers (e.g. a zeroed ring) are not compute packets.
    assert_eq!(Pm4Packet::decode(F, &[0]), Err(DecodeError::NotType3(0)));
    assert_eq!(packet_dwords(0x4000_0000), None);
    assert_eq!(packet_dwords(header(opcode::RELEASE_MEM, 7)), Some(8));
    assert_eq!(
        Pm4Packet::decode(F, &[header(0x99, 1), 0]),
        Err(DecodeError::UnknownOpcode(0x99))
    );
    assert_eq!(
        Pm4Packet::decode(F, &[header(opcode::DISPATCH_DIRECT, 4), 1]),
        Err(DecodeError::Truncated {
            needed: 5,
            available: 2
        })
    );
    assert_eq!(
        Pm4Packet::decode(F, &[header(opcode::DISPATCH_DIRECT, 2), 1, 1]),
        Err(DecodeError::BadLength {
            opcode: opcode::DISPATCH_DIRECT,
            dwords: 2
        })
    );
    // A NOP's length is its count; the dwords after it are not looked at.
    assert_eq!(
        Pm4Packet::decode(F, &[header(opcode::NOP, 2), 5, 6, 0xDEAD]),
        Ok((Pm4Packet::Nop { padding: 2 }, 3))
    );
}

#[test]
fn header_never_panics_and_wraps_its_count() {
    // A body of 0 dwords wraps to count 0x3FFF, as the 14-bit field would.
    assert_eq!(header(opcode::NOP, 0), NOP_FILLER);
    assert_eq!(header(opcode::NOP, MAX_BODY_DWORDS), 0xFFFF_1002);
    assert_eq!(header_opcode(header(opcode::COPY_DATA, 5)), 0x40);
}

#[test]
fn set_sh_reg_offsets_are_checked() {
    let sh = |offset: u32, n: usize| {
        let mut v = vec![header(opcode::SET_SH_REG, 1 + n as u32), offset];
        v.extend(std::iter::repeat_n(0, n));
        Pm4Packet::decode(F, &v)
    };
    // Regression: an offset near u32::MAX once overflowed SH_REG_BASE + offset (a panic in
    // debug builds).
    assert!(matches!(
        sh(0xFFFF_FFFF, 1),
        Err(DecodeError::BadField { opcode: 0x76, .. })
    ));
    // The last register, 0x2FFF, is offset 0x3FF; two registers from there run past the end.
    assert_eq!(
        sh(0x3FF, 1),
        Ok((
            Pm4Packet::SetShReg {
                reg: 0x2FFF,
                values: vec![0]
            },
            3
        ))
    );
    assert!(matches!(sh(0x3FF, 2), Err(DecodeError::BadField { .. })));
    assert!(matches!(sh(0x3FFF, 1), Err(DecodeError::BadField { .. })));
    // No values: wrong length.
    assert!(matches!(sh(0x200, 0), Err(DecodeError::BadLength { .. })));
}

#[test]
fn fields_that_change_meaning_are_refused() {
    // WAIT_REG_MEM FUNCTION 7 is reserved; OPERATION 1 (write, then wait) is not modelled.
    let wait = |dw1: u32| {
        Pm4Packet::decode(
            F,
            &[header(opcode::WAIT_REG_MEM, 6), dw1, 0x100, 0, 1, 1, 4],
        )
    };
    assert_eq!(
        wait(0x17),
        Err(DecodeError::BadField {
            opcode: 0x3C,
            field: "function",
            value: 7
        })
    );
    assert!(matches!(
        wait(0x13 | 1 << 6),
        Err(DecodeError::BadField { .. })
    ));
    assert!(wait(0x13).is_ok());
    // WRITE_DATA with WR_ONE_ADDR (bit 16) writes every dword to one address.
    assert!(matches!(
        Pm4Packet::decode(
            F,
            &[header(opcode::WRITE_DATA, 4), 0x500 | 1 << 16, 0x10, 0, 1]
        ),
        Err(DecodeError::BadField { opcode: 0x37, .. })
    ));
    // EVENT_WRITE with an address is a graphics form.
    assert!(matches!(
        Pm4Packet::decode(F, &[header(opcode::EVENT_WRITE, 3), 0x407, 0, 0]),
        Err(DecodeError::BadLength { .. })
    ));
}

#[test]
fn validate_rejects_what_one_packet_cannot_carry() {
    let release = |addr, data_sel, cache_action| Pm4Packet::ReleaseMem {
        event_type: event::CACHE_FLUSH_AND_INV_TS,
        event_index: event_index::END_OF_PIPE,
        cache_action,
        dst_sel: 0,
        int_sel: 0,
        data_sel,
        addr,
        data: 0,
        int_ctxid: 0,
    };
    assert!(release(0x1004, data_sel::DATA32, 0).validate(F).is_ok());
    assert_eq!(
        release(0x1004, data_sel::DATA64, 0).validate(F),
        Err(EncodeError::Misaligned {
            field: "addr",
            addr: 0x1004,
            align: 8
        })
    );
    // Cache actions overlapping the event fields would corrupt them.
    assert!(matches!(
        release(0, 0, 0x3F).validate(F),
        Err(EncodeError::FieldOverflow { .. })
    ));
    let nop = Pm4Packet::Nop { padding: 0x4000 };
    assert!(matches!(
        nop.validate(F),
        Err(EncodeError::BadLength { .. })
    ));
    let empty = Pm4Packet::SetShReg {
        reg: regs::COMPUTE_PGM_LO,
        values: vec![],
    };
    let mut out = vec![1];
    assert!(empty.try_encode(F, &mut out).is_err());
    assert_eq!(out, [1], "nothing appended on error");
    assert_eq!(
        Pm4Packet::SetShReg {
            reg: 0x2BFF,
            values: vec![0]
        }
        .validate(F),
        Err(EncodeError::RegisterOutOfRange {
            first: 0x2BFF,
            end: 0x2C00
        })
    );
    let ib = Pm4Packet::IndirectBuffer {
        addr: 0x1000,
        size_dwords: 1 << 20,
        chain: false,
    };
    assert!(matches!(
        ib.validate(F),
        Err(EncodeError::FieldOverflow { bits: 20, .. })
    ));
}

#[test]
fn oversized_packets_encode_as_several_with_the_same_effect() {
    // 0x4000 padding dwords: one NOP of 0x3FFF padding (count 0x3FFE) and the one-dword filler,
    // 0x4001 dwords in all, like the requested NOP.
    let mut v = Vec::new();
    Pm4Packet::Nop { padding: 0x4000 }.encode(F, &mut v);
    assert_eq!(v.len(), 0x4001);
    assert_eq!(v[0], header(opcode::NOP, 0x3FFF));
    assert_eq!(v[0x4000], NOP_FILLER);
    // 0x4000 WRITE_DATA dwords: 0x3FFD in the first packet, 3 in a second one 4 * 0x3FFD bytes on.
    let data: Vec<u32> = (0..0x4000).collect();
    let w = Pm4Packet::WriteData {
        dst_sel: sel::MEMORY,
        confirm: false,
        addr: 0x10_0000,
        data: data.clone(),
    };
    let mut v = Vec::new();
    w.encode(F, &mut v);
    assert_eq!(v.len(), w.len_dwords(F));
    let (first, n) = Pm4Packet::decode(F, &v).unwrap();
    let (second, m) = Pm4Packet::decode(F, &v[n..]).unwrap();
    assert_eq!(n + m, v.len());
    let Pm4Packet::WriteData { data: d1, .. } = first else {
        panic!("{first:?}")
    };
    let Pm4Packet::WriteData {
        addr: a2, data: d2, ..
    } = second
    else {
        panic!("{second:?}")
    };
    assert_eq!((d1.len(), d2.len()), (0x3FFD, 3));
    assert_eq!(a2, 0x10_0000 + 4 * 0x3FFD);
    assert_eq!([d1, d2].concat(), data);
}

#[test]
fn families_from_target_versions() {
    use GfxFamily::*;
    for (v, want) in [
        (90000, Some(Gfx9)),
        (90006, Some(Gfx9)),
        (90008, Some(Gfx9)),
        (90012, Some(Gfx9)),
        (90010, Some(Gfx90a)),
        (90400, Some(Gfx94x)),
        (90402, Some(Gfx94x)),
        (100300, Some(Gfx103)),
        (100302, Some(Gfx103)),
        (110000, Some(Gfx11)),
        (110501, Some(Gfx11)),
        (80003, None),
        (90500, None),
        (100100, None),
        (120000, None),
        (0, None),
    ] {
        assert_eq!(GfxFamily::from_gfx_target_version(v), want, "{v}");
    }
    assert!(Gfx11.is_gfx10_plus() && Gfx103.is_gfx10_plus());
    assert!(!Gfx94x.is_gfx10_plus() && !Gfx9.is_gfx10_plus());
}

#[test]
fn compute_registers() {
    use regs::*;
    // PM4.md: DISPATCH_INITIATOR 0x2E00, DIM 0x2E01-03, START 0x2E04-06, NUM_THREAD 0x2E07-09,
    // PGM_LO/HI 0x2E0C/D, RSRC1/2 0x2E12/13, RESOURCE_LIMITS 0x2E15, TMPRING_SIZE 0x2E18,
    // RESTART 0x2E1B-1D, USER_DATA 0x2E40-4F.
    assert_eq!(
        [
            COMPUTE_DISPATCH_INITIATOR,
            COMPUTE_DIM_Z,
            COMPUTE_START_Y,
            COMPUTE_NUM_THREAD_Z
        ],
        [0x2E00, 0x2E03, 0x2E05, 0x2E09]
    );
    assert_eq!([COMPUTE_PGM_LO, COMPUTE_PGM_HI], [0x2E0C, 0x2E0D]);
    assert_eq!([COMPUTE_PGM_RSRC1, COMPUTE_PGM_RSRC2], [0x2E12, 0x2E13]);
    assert_eq!(
        [COMPUTE_RESOURCE_LIMITS, COMPUTE_TMPRING_SIZE],
        [0x2E15, 0x2E18]
    );
    assert_eq!([COMPUTE_RESTART_X, COMPUTE_RESTART_Z], [0x2E1B, 0x2E1D]);
    assert_eq!(compute_user_data(15), Some(0x2E4F));
    assert_eq!(compute_user_data(16), None);
    assert_eq!(compute_pgm_rsrc3(GfxFamily::Gfx90a), Some(0x2E2D));
    assert_eq!(compute_pgm_rsrc3(GfxFamily::Gfx94x), Some(0x2E2D));
    assert_eq!(compute_pgm_rsrc3(GfxFamily::Gfx103), Some(0x2E28));
    assert_eq!(compute_pgm_rsrc3(GfxFamily::Gfx11), Some(0x2E28));
    assert_eq!(compute_pgm_rsrc3(GfxFamily::Gfx9), None);
}

#[test]
fn compare_functions() {
    use CompareFunction::*;
    // (value & mask) op reference: 0x1_0005 & 0xFFFF = 5.
    let cases = [
        (Always, 0, 1, 0, true),
        (Less, 4, 5, !0, true),
        (Less, 5, 5, !0, false),
        (LessEqual, 5, 5, !0, true),
        (Equal, 0x1_0005, 5, 0xFFFF, true),
        (Equal, 0x1_0005, 5, !0, false),
        (NotEqual, 6, 5, !0, true),
        (GreaterEqual, 0x1_0005, 5, 0xFFFF, true),
        (Greater, 5, 5, !0, false),
        (Greater, 0xFFFF_FFFF, 5, !0, true),
    ];
    for (f, v, r, m, want) in cases {
        assert_eq!(f.eval(v, r, m), want, "{f:?} {v:#x} {r:#x} {m:#x}");
        assert_eq!(CompareFunction::from_bits(f.bits()), Some(f));
    }
    assert_eq!(CompareFunction::from_bits(7), None);
    // Higher bits are ignored (SDMA passes a shifted header).
    assert_eq!(CompareFunction::from_bits(0x13), Some(Equal));
}
