//! What the encoder refuses (and that it then appends nothing), and what the decoder refuses.

use sdma::{
    gcr_control, AtomicOp, CompareFunction, DecodeError, EncodeError, SdmaPacket, SdmaVersion,
};

const GFX90A: u32 = 90010;
const GFX942: u32 = 90402;
const GFX1010: u32 = 100100;
const GFX1030: u32 = 100300;
const GFX1100: u32 = 110000;

/// Encodes into a buffer holding a sentinel and checks the error and that nothing was appended.
fn refuse(p: &SdmaPacket, ver: SdmaVersion, gfx: u32) -> EncodeError {
    let mut out = vec![0xAAAA_AAAA];
    let e = p
        .encode(ver, gfx, &mut out)
        .expect_err("the packet must be refused");
    assert_eq!(out, [0xAAAA_AAAA], "nothing appended on {e}");
    e
}

#[test]
fn copy_lengths_follow_the_part() {
    let copy = |bytes| SdmaPacket::CopyLinear {
        src: 0,
        dst: 0,
        bytes,
    };
    let mut out = Vec::new();
    // 4 MiB is one byte over the 22-bit parts' limit, well under the 30-bit parts'.
    for (ver, gfx) in [(SdmaVersion::V4, GFX942), (SdmaVersion::V5, GFX1010)] {
        assert_eq!(
            refuse(&copy(0x40_0000), ver, gfx),
            EncodeError::Length {
                packet: "COPY_LINEAR",
                bytes: 0x40_0000,
                max: 0x3F_FFFF
            }
        );
    }
    for (ver, gfx) in [
        (SdmaVersion::V4, GFX90A),
        (SdmaVersion::V5, GFX1030),
        (SdmaVersion::V6, GFX1100),
    ] {
        copy(0x40_0000).encode(ver, gfx, &mut out).unwrap();
        assert!(matches!(
            refuse(&copy(0x4000_0000), ver, gfx),
            EncodeError::Length {
                max: 0x3FFF_FFFF,
                ..
            }
        ));
    }
    assert!(matches!(
        refuse(&copy(0), SdmaVersion::V6, GFX1100),
        EncodeError::Length { bytes: 0, .. }
    ));
}

#[test]
fn ranges_may_not_wrap() {
    let p = SdmaPacket::CopyLinear {
        src: u64::MAX - 2,
        dst: 0,
        bytes: 4,
    };
    assert_eq!(
        refuse(&p, SdmaVersion::V4, GFX90A),
        EncodeError::AddressWrap {
            packet: "COPY_LINEAR",
            addr: u64::MAX - 2,
            bytes: 4
        }
    );
    // Ending exactly at the last byte is fine.
    let last = SdmaPacket::CopyLinear {
        src: u64::MAX - 3,
        dst: 0,
        bytes: 4,
    };
    last.encode(SdmaVersion::V4, GFX90A, &mut Vec::new())
        .unwrap();
    let fill = SdmaPacket::ConstantFill {
        dst: u64::MAX - 3,
        data: 0,
        bytes: 8,
    };
    assert!(matches!(
        refuse(&fill, SdmaVersion::V6, GFX1100),
        EncodeError::AddressWrap { .. }
    ));
}

#[test]
fn fills_are_whole_aligned_dwords_within_the_fill_limit() {
    let fill = |dst, bytes| SdmaPacket::ConstantFill {
        dst,
        data: 0,
        bytes,
    };
    assert_eq!(
        refuse(&fill(0, 6), SdmaVersion::V4, GFX90A),
        EncodeError::NotDwords {
            packet: "CONSTANT_FILL",
            bytes: 6
        }
    );
    assert_eq!(
        refuse(&fill(2, 8), SdmaVersion::V4, GFX90A),
        EncodeError::Misaligned {
            packet: "CONSTANT_FILL",
            addr: 2,
            align: 4
        }
    );
    // gfx90a copies up to 1 GiB but fills only up to 4 MiB - 4 (22-bit count; ROCr and Mesa).
    assert_eq!(
        refuse(&fill(0, 0x40_0000), SdmaVersion::V4, GFX90A),
        EncodeError::Length {
            packet: "CONSTANT_FILL",
            bytes: 0x40_0000,
            max: 0x3F_FFFC
        }
    );
    fill(0, 0x40_0000)
        .encode(SdmaVersion::V6, GFX1100, &mut Vec::new())
        .unwrap();
}

#[test]
fn alignment() {
    let cases = [
        (
            SdmaPacket::Fence {
                addr: 2,
                data: 0,
                mtype_uncached: false,
            },
            2,
            4,
        ),
        (
            SdmaPacket::Write {
                dst: 0x1001,
                data: vec![1],
            },
            0x1001,
            4,
        ),
        (
            SdmaPacket::PollRegMem {
                addr: 6,
                reference: 0,
                mask: 0,
                func: CompareFunction::Always,
                interval: 0,
                retry_count: 0,
            },
            6,
            4,
        ),
        (
            SdmaPacket::Atomic {
                addr: 0x6004,
                op: AtomicOp::Add64,
                src: 1,
                cmp: 0,
                loop_interval: 0,
            },
            0x6004,
            8,
        ),
        (SdmaPacket::Timestamp { addr: 0x7004 }, 0x7004, 8),
        (
            SdmaPacket::Gcr {
                base: 0x40,
                limit: 0,
                control: 0,
            },
            0x40,
            128,
        ),
    ];
    for (p, addr, align) in cases {
        assert_eq!(
            refuse(&p, SdmaVersion::V6, GFX1100),
            EncodeError::Misaligned {
                packet: p.name(),
                addr,
                align
            }
        );
    }
}

#[test]
fn fields_are_never_truncated() {
    let field = |p: SdmaPacket| match refuse(&p, SdmaVersion::V6, GFX1100) {
        EncodeError::FieldRange {
            field, value, max, ..
        } => (field, value, max),
        e => panic!("{e}"),
    };
    assert_eq!(
        field(SdmaPacket::Trap {
            int_context: 0x1000_0000
        }),
        ("int_context", 0x1000_0000, 0x0FFF_FFFF)
    );
    assert_eq!(
        field(SdmaPacket::Nop {
            extra_dwords: 0x4000
        }),
        ("count", 0x4000, 0x3FFF)
    );
    let poll = |interval, retry_count| SdmaPacket::PollRegMem {
        addr: 0,
        reference: 0,
        mask: 0,
        func: CompareFunction::Equal,
        interval,
        retry_count,
    };
    assert_eq!(field(poll(0x1_0000, 0)), ("interval", 0x1_0000, 0xFFFF));
    assert_eq!(field(poll(0, 0x1000)), ("retry_count", 0x1000, 0xFFF));
    let atomic = |op, loop_interval| SdmaPacket::Atomic {
        addr: 0,
        op,
        src: 0,
        cmp: 0,
        loop_interval,
    };
    assert_eq!(
        field(atomic(AtomicOp::Other(0x80), 0)),
        ("operation", 0x80, 0x7F)
    );
    assert_eq!(
        field(atomic(AtomicOp::Add64, 0x2000)),
        ("loop_interval", 0x2000, 0x1FFF)
    );
    let gcr = |base, control| SdmaPacket::Gcr {
        base,
        limit: 0,
        control,
    };
    assert_eq!(field(gcr(1 << 48, 0)), ("base", 1 << 48, (1 << 48) - 1));
    assert_eq!(field(gcr(0, 1 << 19)), ("control", 1 << 19, (1 << 19) - 1));
    let too_long = SdmaPacket::Write {
        dst: 0,
        data: vec![0; (1 << 20) + 1],
    };
    assert_eq!(
        refuse(&too_long, SdmaVersion::V6, GFX1100),
        EncodeError::Length {
            packet: "WRITE_LINEAR",
            bytes: ((1 << 20) + 1) * 4,
            max: (1 << 20) * 4
        }
    );
    let empty = SdmaPacket::Write {
        dst: 0,
        data: vec![],
    };
    assert!(matches!(
        refuse(&empty, SdmaVersion::V6, GFX1100),
        EncodeError::Length { bytes: 0, .. }
    ));
}

#[test]
fn gcr_needs_sdma5() {
    let p = SdmaPacket::Gcr {
        base: 0,
        limit: 0,
        control: gcr_control::WRITEBACK,
    };
    assert_eq!(
        refuse(&p, SdmaVersion::V4, GFX90A),
        EncodeError::Unsupported {
            packet: "GCR_REQ",
            version: SdmaVersion::V4
        }
    );
    // And SDMA 4 does not decode op 17 either.
    assert_eq!(
        SdmaPacket::decode(SdmaVersion::V4, &[0x111, 0, 0, 0, 0]),
        Err(DecodeError::UnknownOpcode { op: 17, sub_op: 1 })
    );
}

#[test]
fn decode_errors() {
    let v = SdmaVersion::V6;
    assert_eq!(SdmaPacket::decode(v, &[]), Err(DecodeError::Empty));
    // Opcodes without a packet type here: INDIRECT (4), SEM (7), and a linear copy's sibling
    // sub-ops (LINEAR_SUB_WINDOW 4), TIMESTAMP GET (1), FENCE with a sub-op.
    for (h, op, sub_op) in [
        (0x4, 4, 0),
        (0x7, 7, 0),
        (0x401, 1, 4),
        (0x10D, 13, 1),
        (0x205, 5, 2),
        (0xFF, 0xFF, 0),
        (0x100, 0, 1),
    ] {
        assert_eq!(
            SdmaPacket::decode(v, &[h, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(DecodeError::UnknownOpcode { op, sub_op }),
            "{h:#x}"
        );
    }
    // Truncated: a COPY needs 7 dwords; a WRITE of 3 dwords needs 4 + 3; a NOP of 5 extra 6.
    assert_eq!(
        SdmaPacket::decode(v, &[0x1, 0, 0]),
        Err(DecodeError::Truncated {
            needed: 7,
            available: 3
        })
    );
    assert_eq!(
        SdmaPacket::decode(v, &[0x2, 0, 0, 2, 9, 9]),
        Err(DecodeError::Truncated {
            needed: 7,
            available: 6
        })
    );
    assert_eq!(
        SdmaPacket::decode(v, &[0x5_0000, 0]),
        Err(DecodeError::Truncated {
            needed: 6,
            available: 2
        })
    );
    // Bits that change what the packet does and that the type cannot carry.
    let bad = |dwords: &[u32]| match SdmaPacket::decode(v, dwords) {
        Err(DecodeError::BadField { field, value, .. }) => (field, value),
        r => panic!("{r:?}"),
    };
    let z = [0u32; 8];
    let with = |h: u32| {
        let mut d = z;
        d[0] = h;
        d
    };
    assert_eq!(bad(&with(0x1 | 1 << 27)), ("broadcast", 1));
    assert_eq!(bad(&with(0xB)), ("fill size", 0)); // byte fill
    assert_eq!(bad(&with(0xB | 1 << 30)), ("fill size", 1)); // 16-bit fill
                                                             // ROCr's HDP flush packet: POLL_REGMEM without MEM_POLL (a register poll).
    assert_eq!(bad(&[0x8, 0, 0x8000_0000, 0, 0, 0]), ("register poll", 1));
    assert_eq!(bad(&with(0x8 | 1 << 31 | 1 << 26)), ("HDP flush", 1));
    assert_eq!(bad(&with(0x8 | 1 << 31 | 7 << 28)), ("function", 7));
    assert_eq!(bad(&with(0xA | 1 << 16)), ("loop", 1));
}

#[test]
fn the_decoder_of_a_part_refuses_counts_its_field_cannot_hold() {
    // gfx90a's COPY_LINEAR count has 30 bits; gfx942's (SDMA 4.4.2) 22: the same 8 MiB copy is
    // one packet on the first and a field overflow on the second.
    let copy = SdmaPacket::CopyLinear {
        src: 0x10_0000,
        dst: 0x90_0000,
        bytes: 8 << 20,
    };
    let mut d = Vec::new();
    copy.encode(SdmaVersion::V4, GFX90A, &mut d).unwrap();
    assert_eq!(
        SdmaPacket::decode_for_part(SdmaVersion::V4, GFX90A, &d),
        Ok((copy.clone(), 7))
    );
    assert!(matches!(
        SdmaPacket::decode_for_part(SdmaVersion::V4, GFX942, &d),
        Err(DecodeError::BadField { field: "count", .. })
    ));
    // Fills have the 22-bit count before SDMA 6 on every part: a 30-bit count is refused.
    let mut fill = vec![0u32; 5];
    fill[0] = 0xB | 2 << 30; // CONSTANT_FILL, dword fill size
    fill[4] = (16 << 20) - 1;
    assert!(matches!(
        SdmaPacket::decode_for_part(SdmaVersion::V4, GFX90A, &fill),
        Err(DecodeError::BadField { field: "count", .. })
    ));
    assert!(SdmaPacket::decode_for_part(SdmaVersion::V6, GFX1100, &fill).is_ok());
    fill[4] = (4 << 20) - 1;
    assert!(SdmaPacket::decode_for_part(SdmaVersion::V4, GFX90A, &fill).is_ok());
}
