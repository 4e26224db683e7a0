//! What the encoder refuses (and that it then appends nothing), and what the decoder refuses.

use sdma::{
    gcr_control, AtomicOp, CompareFunction, DecodeError, EncodeError, SdmaPacket, SdmaVersion,
    SubWindowCopy, SubWindowSurface,
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
    // Opcodes without a packet type here: INDIRECT (4), SEM (7), the tiled and backward-
    // compatible copies (TILED_SUB_WINDOW 5, LINEAR_SUB_WINDOW_BC 20), TIMESTAMP GET (1),
    // FENCE with a sub-op.
    for (h, op, sub_op) in [
        (0x4, 4, 0),
        (0x7, 7, 0),
        (0x501, 1, 5),
        (0x1401, 1, 20),
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
    // The broadcast bit makes a 9-dword copy to two destinations (decoded, not refused).
    assert!(matches!(
        SdmaPacket::decode(v, &with(0x1 | 1 << 27)),
        Err(DecodeError::Truncated { needed: 9, .. })
    ));
    assert_eq!(bad(&with(0xB)), ("fill size", 0)); // byte fill
    assert_eq!(bad(&with(0xB | 1 << 30)), ("fill size", 1)); // 16-bit fill
                                                             // ROCr's HDP flush packet: POLL_REGMEM without MEM_POLL (a register poll).
    assert_eq!(
        SdmaPacket::decode(v, &[0x8, 0, 0x8000_0000, 0, 0, 0]),
        Ok((SdmaPacket::HdpFlush, 6))
    );
    // Linux's: a register poll with the HDP_FLUSH bit (registers, reference and mask vary).
    assert_eq!(
        SdmaPacket::decode(v, &[0x8 | 1 << 26 | 3 << 28, 0x1FC, 0x1F8, 1, 1, 10]),
        Ok((SdmaPacket::HdpFlush, 6))
    );
    // Another register poll: registers are not modelled.
    assert_eq!(bad(&[0x8, 0x1FC, 0, 0, 0, 0]), ("register poll", 1));
    assert_eq!(
        bad(&with(0x8 | 1 << 31 | 1 << 26)),
        ("HDP flush of a memory poll", 1)
    );
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

/// A valid 2D sub-window copy to derive refused ones from.
fn sub_window() -> SubWindowCopy {
    SubWindowCopy::new(
        2,
        SubWindowSurface::new(0x1000, 64, 64 * 16),
        SubWindowSurface::new(0x8000, 32, 32 * 16),
        [16, 8, 1],
    )
}

#[test]
fn sub_window_fields_are_checked_per_generation() {
    let refuse_sw =
        |c: SubWindowCopy, ver, gfx| refuse(&SdmaPacket::CopyLinearSubWindow(c), ver, gfx);
    let ok = |c: SubWindowCopy, ver, gfx| {
        SdmaPacket::CopyLinearSubWindow(c)
            .encode(ver, gfx, &mut Vec::new())
            .unwrap()
    };
    let range = |field, value, max| EncodeError::FieldRange {
        packet: "COPY_LINEAR_SUB_WINDOW",
        field,
        value,
        max,
    };
    let base = sub_window();
    ok(base, SdmaVersion::V4, GFX942);
    // z: 11 bits on SDMA 4, 13 from SDMA 5.
    let deep = SubWindowCopy {
        src: base.src.at(0, 0, 0x800),
        ..base
    };
    assert_eq!(
        refuse_sw(deep, SdmaVersion::V4, GFX90A),
        range("src.z", 0x800, 0x7FF)
    );
    ok(deep, SdmaVersion::V5, GFX1010);
    let thick = SubWindowCopy {
        depth: 0x801,
        ..base
    };
    assert_eq!(
        refuse_sw(thick, SdmaVersion::V4, GFX942),
        range("depth", 0x801, 0x800)
    );
    ok(thick, SdmaVersion::V6, GFX1100);
    assert_eq!(
        refuse_sw(
            SubWindowCopy {
                depth: 0x2001,
                ..base
            },
            SdmaVersion::V6,
            GFX1100
        ),
        range("depth", 0x2001, 0x2000)
    );
    // Cache policies exist on SDMA 6 only.
    let policy = SubWindowCopy {
        dst: SubWindowSurface {
            cache_policy: 2,
            ..base.dst
        },
        ..base
    };
    assert_eq!(
        refuse_sw(policy, SdmaVersion::V5, GFX1030),
        range("dst.cache_policy", 2, 0)
    );
    ok(policy, SdmaVersion::V6, GFX1100);
    let cpv = SubWindowCopy {
        cache_policy_valid: true,
        ..base
    };
    assert_eq!(
        refuse_sw(cpv, SdmaVersion::V4, GFX90A),
        range("cache_policy_valid", 1, 0)
    );
    // Field widths everywhere.
    for (c, want) in [
        (
            SubWindowCopy {
                element_size_log2: 5,
                ..base
            },
            range("element size", 5, 4),
        ),
        (
            SubWindowCopy {
                width: 0x4001,
                ..base
            },
            range("width", 0x4001, 0x4000),
        ),
        (
            SubWindowCopy {
                height: 0x4001,
                ..base
            },
            range("height", 0x4001, 0x4000),
        ),
        (
            SubWindowCopy {
                src: base.src.at(0x4000, 0, 0),
                ..base
            },
            range("src.x", 0x4000, 0x3FFF),
        ),
        (
            SubWindowCopy {
                dst: base.dst.at(0, 0x4000, 0),
                ..base
            },
            range("dst.y", 0x4000, 0x3FFF),
        ),
        (
            SubWindowCopy {
                src: SubWindowSurface::new(0x1000, (1 << 19) + 1, 1),
                ..base
            },
            range("src.pitch", (1 << 19) + 1, 1 << 19),
        ),
        (
            SubWindowCopy {
                dst: SubWindowSurface::new(0x8000, 32, (1 << 28) + 1),
                ..base
            },
            range("dst.slice_pitch", (1 << 28) + 1, 1 << 28),
        ),
        (
            SubWindowCopy {
                src: SubWindowSurface {
                    swap: 4,
                    ..base.src
                },
                ..base
            },
            range("src.swap", 4, 3),
        ),
        (
            SubWindowCopy { width: 0, ..base },
            EncodeError::Zero {
                packet: "COPY_LINEAR_SUB_WINDOW",
                field: "width",
            },
        ),
        (
            SubWindowCopy {
                dst: SubWindowSurface::new(0x8000, 0, 1),
                ..base
            },
            EncodeError::Zero {
                packet: "COPY_LINEAR_SUB_WINDOW",
                field: "dst.pitch",
            },
        ),
        // Base addresses are dword aligned (ROCr moves the rest into x).
        (
            SubWindowCopy {
                src: SubWindowSurface::new(0x1002, 64, 1024),
                ..base
            },
            EncodeError::Misaligned {
                packet: "COPY_LINEAR_SUB_WINDOW",
                addr: 0x1002,
                align: 4,
            },
        ),
        // The last element of the destination window is at (15, 7) of a 32-element pitch, 4
        // bytes each: (15 + 7 * 32 + 1) * 4 = 960 bytes from the base, one past 2^64.
        (
            SubWindowCopy {
                dst: SubWindowSurface::new(0u64.wrapping_sub(956), 32, 512),
                ..base
            },
            EncodeError::AddressWrap {
                packet: "COPY_LINEAR_SUB_WINDOW",
                addr: 0u64.wrapping_sub(956),
                bytes: 960,
            },
        ),
    ] {
        for (ver, gfx) in [
            (SdmaVersion::V4, GFX90A),
            (SdmaVersion::V5, GFX1030),
            (SdmaVersion::V6, GFX1100),
        ] {
            assert_eq!(refuse_sw(c, ver, gfx), want, "{ver:?}");
        }
    }
    // The window may end at the last byte of the address space.
    ok(
        SubWindowCopy {
            dst: SubWindowSurface::new(0u64.wrapping_sub(960), 32, 512),
            ..base
        },
        SdmaVersion::V4,
        GFX942,
    );
}

#[test]
fn sub_window_decode_errors() {
    let mut d = Vec::new();
    SdmaPacket::CopyLinearSubWindow(sub_window())
        .encode(SdmaVersion::V6, GFX1100, &mut d)
        .unwrap();
    assert_eq!(
        SdmaPacket::decode(SdmaVersion::V6, &d[..12]),
        Err(DecodeError::Truncated {
            needed: 13,
            available: 12
        })
    );
    // Element sizes 5-7 (32 to 128 bytes) are not defined.
    for e in 5..8 {
        let mut bad = d.clone();
        bad[0] = bad[0] & !(7 << 29) | e << 29;
        assert_eq!(
            SdmaPacket::decode(SdmaVersion::V6, &bad),
            Err(DecodeError::BadField {
                op: 1,
                field: "element size",
                value: e
            })
        );
    }
    // Unaligned base addresses.
    let mut bad = d.clone();
    bad[1] |= 2;
    assert_eq!(
        SdmaPacket::decode(SdmaVersion::V4, &bad),
        Err(DecodeError::BadField {
            op: 1,
            field: "source address",
            value: 0x1002
        })
    );
    let mut bad = d.clone();
    bad[6] |= 1;
    assert_eq!(
        SdmaPacket::decode(SdmaVersion::V5, &bad),
        Err(DecodeError::BadField {
            op: 1,
            field: "destination address",
            value: 0x8001
        })
    );
}
