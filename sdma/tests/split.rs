//! Engine generations of parts, per-part limits, and splitting of transfers larger than one
//! packet.

use proptest::prelude::*;
use sdma::{constant_fill_split, copy_linear_split, EncodeError, SdmaPacket, SdmaVersion};

const GFX90A: u32 = 90010;
const GFX942: u32 = 90402;
const GFX1100: u32 = 110000;

#[test]
fn generation_of_parts() {
    use SdmaVersion::*;
    for (gfx, want) in [
        (90000, Some(V4)),  // gfx900
        (90010, Some(V4)),  // gfx90a
        (90402, Some(V4)),  // gfx942
        (90500, Some(V4)),  // gfx950
        (100100, Some(V5)), // gfx1010 (SDMA 5.0)
        (100300, Some(V5)), // gfx1030 (SDMA 5.2)
        (110000, Some(V6)), // gfx1100
        (110501, Some(V6)), // gfx1151
        (80003, None),      // gfx803: SDMA 3
        (120000, None),     // gfx1200: SDMA 7
        (0, None),
    ] {
        assert_eq!(SdmaVersion::from_gfx_target_version(gfx), want, "{gfx}");
    }
}

#[test]
fn copy_and_fill_limits_per_part() {
    use SdmaVersion::*;
    for (ver, gfx, copy, fill) in [
        (V4, 90000, 0x3F_FFFF, 0x3F_FFFC),
        (V4, GFX90A, 0x3FFF_FFFF, 0x3F_FFFC),
        (V4, GFX942, 0x3F_FFFF, 0x3F_FFFC),
        (V5, 100100, 0x3F_FFFF, 0x3F_FFFC),
        (V5, 100300, 0x3FFF_FFFF, 0x3F_FFFC),
        (V6, GFX1100, 0x3FFF_FFFF, 0x3FFF_FFFC),
        // A part from another generation gets the limit every engine accepts.
        (V5, GFX90A, 0x3F_FFFF, 0x3F_FFFC),
    ] {
        assert_eq!(ver.max_copy_bytes(gfx), copy, "{ver:?} {gfx}");
        assert_eq!(ver.max_fill_bytes(gfx), fill, "{ver:?} {gfx}");
    }
}

fn copies(ps: impl Iterator<Item = SdmaPacket>) -> Vec<(u64, u64, u64)> {
    ps.map(|p| match p {
        SdmaPacket::CopyLinear { src, dst, bytes } => (src, dst, bytes),
        other => panic!("{other:?}"),
    })
    .collect()
}

#[test]
fn ten_mib_on_gfx942_is_three_packets() {
    // 10 MiB = 10485760 bytes; 10485760 / 0x3FFFFF (4194303) = 2.5 -> 3 packets: two full ones
    // and 10485760 - 2 * 4194303 = 2097154 bytes.
    let got = copies(copy_linear_split(
        SdmaVersion::V4,
        GFX942,
        0x1000,
        0x9000_0000,
        10 << 20,
    ));
    assert_eq!(
        got,
        [
            (0x1000, 0x9000_0000, 0x3F_FFFF),
            (0x1000 + 0x3F_FFFF, 0x9000_0000 + 0x3F_FFFF, 0x3F_FFFF),
            (0x1000 + 0x7F_FFFE, 0x9000_0000 + 0x7F_FFFE, 2_097_154),
        ]
    );
    // gfx90a moves it in one.
    assert_eq!(
        copies(copy_linear_split(SdmaVersion::V4, GFX90A, 0, 0, 10 << 20)),
        [(0, 0, 10 << 20)]
    );
}

#[test]
fn edge_sizes() {
    let max = SdmaVersion::V6.max_copy_bytes(GFX1100);
    let count = |bytes| copy_linear_split(SdmaVersion::V6, GFX1100, 0, 0, bytes).count();
    assert_eq!(count(0), 0);
    assert_eq!(count(1), 1);
    assert_eq!(count(max), 1);
    assert_eq!(count(max + 1), 2);
    assert_eq!(count(2 * max), 2);
    // 3 GiB over 0x3FFFFFFF-byte packets: three full ones and 3 bytes.
    let got = copies(copy_linear_split(SdmaVersion::V6, GFX1100, 0, 0, 3 << 30));
    assert_eq!(got.len(), 4);
    assert_eq!(got[3], (3 * max, 3 * max, 3));
}

#[test]
fn a_range_past_the_end_of_memory_splits_without_panicking_and_is_refused() {
    let ps: Vec<_> =
        copy_linear_split(SdmaVersion::V4, GFX942, u64::MAX - 0x3F_FFFF, 0, 10 << 20).collect();
    assert_eq!(ps.len(), 3);
    let mut out = Vec::new();
    assert!(ps[0].encode(SdmaVersion::V4, GFX942, &mut out).is_ok());
    assert!(matches!(
        ps[1].encode(SdmaVersion::V4, GFX942, &mut out),
        Err(EncodeError::AddressWrap { .. })
    ));
}

#[test]
fn fills_split_at_the_fill_limit() {
    // 10 MiB / 0x3FFFFC (4194300) -> 3 packets: 4194300, 4194300, 2097160 bytes.
    let got: Vec<_> = constant_fill_split(SdmaVersion::V4, GFX90A, 0x100, 0xA5A5_A5A5, 10 << 20)
        .map(|p| match p {
            SdmaPacket::ConstantFill { dst, data, bytes } => {
                assert_eq!(data, 0xA5A5_A5A5);
                (dst, bytes)
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        got,
        [
            (0x100, 0x3F_FFFC),
            (0x100 + 0x3F_FFFC, 0x3F_FFFC),
            (0x100 + 0x7F_FFF8, 2_097_160)
        ]
    );
}

proptest! {
    /// ceil(bytes / max) packets, each 1..=max bytes, contiguous, covering exactly the range,
    /// and each encodes on its part.
    #[test]
    fn split_covers_exactly(
        (ver, gfx) in prop::sample::select(vec![
            (SdmaVersion::V4, GFX942), (SdmaVersion::V4, GFX90A), (SdmaVersion::V6, GFX1100),
        ]),
        src in 0u64..1 << 48,
        dst in 0u64..1 << 48,
        bytes in 0u64..1 << 34,
    ) {
        let max = ver.max_copy_bytes(gfx);
        let got = copies(copy_linear_split(ver, gfx, src, dst, bytes));
        prop_assert_eq!(got.len() as u64, bytes.div_ceil(max));
        let mut next = 0;
        for (s, d, n) in &got {
            prop_assert_eq!((*s, *d), (src + next, dst + next));
            prop_assert!(*n >= 1 && *n <= max);
            next += n;
            let p = SdmaPacket::CopyLinear { src: *s, dst: *d, bytes: *n };
            prop_assert!(p.encode(ver, gfx, &mut Vec::new()).is_ok());
        }
        prop_assert_eq!(next, bytes);
    }
}
