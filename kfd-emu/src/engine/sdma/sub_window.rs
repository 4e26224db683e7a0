//! COPY LINEAR_SUB_WINDOW as the engine runs it: a `width` x `height` x `depth` box of elements
//! copied one row at a time between two linear surfaces.
//!
//! Offsets, pitches and extents count elements (`1 << element_size_log2` bytes): row `y` of
//! slice `z` of the window starts at
//! `addr + (x + (window y + y) * pitch + (window z + z) * slice_pitch) * element_bytes` on each
//! side and is `width * element_bytes` bytes long. Each row goes through the page table like a
//! COPY_LINEAR of that length, so an unmapped or read-only row is a GPU fault; the rows before
//! it have been copied, as on an engine that stops part-way.
//!
//! Not modelled: endian swaps (`SRC_SW`/`DST_SW`; neither ROCr nor Mesa sets them), which stop
//! the queue as an invalid packet rather than copy without swapping; TMZ and the SDMA 6 cache
//! policies change nothing (the emulator has no trusted memory and no caches).

use super::Stop;
use crate::vm::{GpuFault, GpuVm};
use sdma::{SubWindowCopy, SubWindowSurface};

/// Runs the copy, or refuses what the emulator does not model.
pub(super) fn run(vm: &GpuVm, c: &SubWindowCopy) -> Result<(), Stop> {
    log::trace!("kfd-emu: SDMA LINEAR_SUB_WINDOW {c:?}");
    if c.src.swap != 0 || c.dst.swap != 0 {
        log::warn!(
            "kfd-emu: SDMA LINEAR_SUB_WINDOW with endian swaps (source {}, destination {}) is \
             not emulated",
            c.src.swap,
            c.dst.swap
        );
        return Err(Stop::Malformed);
    }
    copy(vm, c).map_err(Stop::from)
}

/// Copies the box row by row, slices outermost.
fn copy(vm: &GpuVm, c: &SubWindowCopy) -> Result<(), GpuFault> {
    let element = c.element_bytes();
    let len = c.row_bytes();
    for z in 0..c.depth {
        for y in 0..c.height {
            let src = row_start(&c.src, element, y, z)
                .ok_or_else(|| GpuFault::not_present(c.src.addr, false))?;
            let dst = row_start(&c.dst, element, y, z)
                .ok_or_else(|| GpuFault::not_present(c.dst.addr, true))?;
            vm.copy(dst, src, len)?;
        }
    }
    Ok(())
}

/// Address of the first element of row `y` of slice `z` of the window in `s`, or `None` past
/// the end of the address space (a decoded packet's fields keep the offset below 2^47, so only
/// a base address near 2^64 gets there).
fn row_start(s: &SubWindowSurface, element: u64, y: u32, z: u32) -> Option<u64> {
    let row = u64::from(s.y) + u64::from(y);
    let slice = u64::from(s.z) + u64::from(z);
    let elements = u64::from(s.x)
        .checked_add(row.checked_mul(u64::from(s.pitch))?)?
        .checked_add(slice.checked_mul(u64::from(s.slice_pitch))?)?;
    s.addr.checked_add(elements.checked_mul(element)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::{FaultKind, Perms};
    use sdma::{SdmaPacket, SdmaVersion};

    const GFX90A: u32 = 90010;
    const GFX1030: u32 = 100300;
    const GFX1100: u32 = 110000;

    /// Host memory behind a GPU mapping at `va`, filled with `fill`.
    struct Buffer {
        va: u64,
        bytes: Vec<u8>,
    }

    impl Buffer {
        fn map(vm: &GpuVm, va: u64, len: usize, fill: impl Fn(usize) -> u8, perms: Perms) -> Self {
            let mut bytes: Vec<u8> = (0..len).map(fill).collect();
            vm.map(va, len as u64, bytes.as_mut_ptr(), va, perms);
            Buffer { va, bytes }
        }
    }

    fn source_pattern(i: usize) -> u8 {
        (i as u8).wrapping_mul(7).wrapping_add(1)
    }

    /// Encodes the copy with the packet crate, decodes it as the engine of `gfx` does, and runs
    /// what was decoded.
    fn run_encoded(vm: &GpuVm, ver: SdmaVersion, gfx: u32, c: SubWindowCopy) -> Result<(), Stop> {
        let mut dwords = Vec::new();
        SdmaPacket::CopyLinearSubWindow(c)
            .encode(ver, gfx, &mut dwords)
            .expect("a valid packet");
        match SdmaPacket::decode_for_part(ver, gfx, &dwords) {
            Ok((SdmaPacket::CopyLinearSubWindow(d), 13)) => {
                assert_eq!(d, c);
                run(vm, &d)
            }
            other => panic!("decoded as {other:?}"),
        }
    }

    /// What the destination holds after copying a box, worked out byte by byte from the
    /// surface geometry in bytes: `(x, y, z)` offsets and pitches already multiplied out.
    #[allow(clippy::too_many_arguments)]
    fn expect_box(
        src: &[u8],
        dst_before: &[u8],
        (src_start, src_pitch, src_slice): (usize, usize, usize),
        (dst_start, dst_pitch, dst_slice): (usize, usize, usize),
        row_bytes: usize,
        rows: usize,
        slices: usize,
    ) -> Vec<u8> {
        let mut want = dst_before.to_vec();
        for z in 0..slices {
            for y in 0..rows {
                for b in 0..row_bytes {
                    want[dst_start + z * dst_slice + y * dst_pitch + b] =
                        src[src_start + z * src_slice + y * src_pitch + b];
                }
            }
        }
        want
    }

    #[test]
    fn a_2d_window_between_different_pitches() {
        // 4-byte elements. Source: 40 elements (160 bytes) a row, window at (3, 2); destination:
        // 16 elements (64 bytes) a row, window at (1, 5); 5 x 4 elements.
        let vm = GpuVm::default();
        let src = Buffer::map(&vm, 0x10_0000, 4096, source_pattern, Perms::ALL);
        let dst = Buffer::map(&vm, 0x20_0000, 4096, |_| 0xEE, Perms::ALL);
        let c = SubWindowCopy::new(
            2,
            SubWindowSurface::new(src.va, 40, 1).at(3, 2, 0),
            SubWindowSurface::new(dst.va, 16, 1).at(1, 5, 0),
            [5, 4, 1],
        );
        let want = expect_box(
            &src.bytes,
            &dst.bytes,
            (3 * 4 + 2 * 160, 160, 0),
            (4 + 5 * 64, 64, 0),
            20,
            4,
            1,
        );
        assert!(run_encoded(&vm, SdmaVersion::V5, GFX1030, c).is_ok());
        assert_eq!(dst.bytes, want);
        // Spot checks of the arithmetic above: the first byte of the window and the byte just
        // past its first row.
        assert_eq!(dst.bytes[4 + 5 * 64], src.bytes[12 + 2 * 160]);
        assert_eq!(dst.bytes[4 + 5 * 64 + 20], 0xEE);
    }

    #[test]
    fn a_3d_box_with_slice_pitches_and_odd_offsets() {
        // 2-byte elements. Source: pitch 24, slice pitch 300 (not a whole number of rows), box
        // at (1, 2, 1); destination: pitch 9, slice pitch 40, box at (2, 0, 2); 7 x 3 x 3.
        let vm = GpuVm::default();
        let src = Buffer::map(&vm, 0x30_0000, 8192, source_pattern, Perms::ALL);
        let dst = Buffer::map(&vm, 0x40_0000, 1024, |_| 0x5A, Perms::ALL);
        let c = SubWindowCopy::new(
            1,
            SubWindowSurface::new(src.va, 24, 300).at(1, 2, 1),
            SubWindowSurface::new(dst.va, 9, 40).at(2, 0, 2),
            [7, 3, 3],
        );
        let want = expect_box(
            &src.bytes,
            &dst.bytes,
            ((1 + 2 * 24 + 300) * 2, 48, 600),
            ((2 + 2 * 40) * 2, 18, 80),
            14,
            3,
            3,
        );
        assert!(run_encoded(&vm, SdmaVersion::V4, GFX90A, c).is_ok());
        assert_eq!(dst.bytes, want);

        // The same box in 16-byte elements on SDMA 6, with TMZ and cache policies (which change
        // nothing here): pitches and offsets scale by 16.
        let dst16 = Buffer::map(&vm, 0x50_0000, 16384, |_| 0, Perms::ALL);
        let c16 = SubWindowCopy {
            tmz: true,
            cache_policy_valid: true,
            src: SubWindowSurface {
                cache_policy: 3,
                ..SubWindowSurface::new(src.va, 6, 40).at(1, 1, 2)
            },
            ..SubWindowCopy::new(
                4,
                SubWindowSurface::new(0, 1, 1),
                SubWindowSurface::new(dst16.va, 10, 35).at(0, 3, 1),
                [2, 2, 4],
            )
        };
        let want = expect_box(
            &src.bytes,
            &dst16.bytes,
            ((1 + 6 + 2 * 40) * 16, 96, 640),
            ((3 * 10 + 35) * 16, 160, 560),
            32,
            2,
            4,
        );
        assert!(run_encoded(&vm, SdmaVersion::V6, GFX1100, c16).is_ok());
        assert_eq!(dst16.bytes, want);
    }

    #[test]
    fn an_unmapped_row_is_a_gpu_fault() {
        // Rows of 256 bytes, 1024 bytes apart in the destination: rows 0-3 land in its 4 KiB
        // mapping, row 4 at 4096 is past it.
        let vm = GpuVm::default();
        let src = Buffer::map(&vm, 0x60_0000, 8192, source_pattern, Perms::ALL);
        let dst = Buffer::map(&vm, 0x70_0000, 4096, |_| 0, Perms::ALL);
        let c = SubWindowCopy::new(
            2,
            SubWindowSurface::new(src.va, 64, 1),
            SubWindowSurface::new(dst.va, 256, 1),
            [64, 6, 1],
        );
        match run_encoded(&vm, SdmaVersion::V4, GFX90A, c) {
            Err(Stop::Fault(f)) => assert_eq!(f, GpuFault::not_present(dst.va + 4096, true)),
            _ => panic!("the fifth row must fault"),
        }
        // The rows before the fault were copied.
        for row in 0..4 {
            assert_eq!(
                dst.bytes[row * 1024..row * 1024 + 256],
                src.bytes[row * 256..row * 256 + 256]
            );
        }

        // A source window reaching past its mapping faults as a read, before anything is
        // written; a read-only destination faults as a write to a read-only page.
        let c = SubWindowCopy::new(
            0,
            SubWindowSurface::new(src.va, 4096, 1).at(0, 1, 0),
            SubWindowSurface::new(dst.va, 64, 1),
            [64, 2, 1],
        );
        match run_encoded(&vm, SdmaVersion::V6, GFX1100, c) {
            Err(Stop::Fault(f)) => assert_eq!(f, GpuFault::not_present(src.va + 8192, false)),
            _ => panic!("the second source row must fault"),
        }
        let ro = Buffer::map(&vm, 0x80_0000, 4096, |_| 0, Perms::default());
        let c = SubWindowCopy::new(
            0,
            SubWindowSurface::new(src.va, 64, 1),
            SubWindowSurface::new(ro.va, 64, 1),
            [8, 1, 1],
        );
        match run_encoded(&vm, SdmaVersion::V5, GFX1030, c) {
            Err(Stop::Fault(f)) => assert_eq!(f.kind, FaultKind::ReadOnly),
            _ => panic!("a read-only destination must fault"),
        }
        assert!(ro.bytes.iter().all(|&b| b == 0));
    }

    #[test]
    fn endian_swaps_are_refused_not_ignored() {
        let vm = GpuVm::default();
        let src = Buffer::map(&vm, 0x90_0000, 4096, source_pattern, Perms::ALL);
        let dst = Buffer::map(&vm, 0xA0_0000, 4096, |_| 0, Perms::ALL);
        let c = SubWindowCopy {
            dst: SubWindowSurface {
                swap: 2,
                ..SubWindowSurface::new(dst.va, 16, 1)
            },
            ..SubWindowCopy::new(
                2,
                SubWindowSurface::new(src.va, 16, 1),
                SubWindowSurface::new(0, 1, 1),
                [4, 4, 1],
            )
        };
        assert!(matches!(
            run_encoded(&vm, SdmaVersion::V6, GFX1100, c),
            Err(Stop::Malformed)
        ));
        assert!(dst.bytes.iter().all(|&b| b == 0));
    }

    #[test]
    fn rows_past_the_end_of_the_address_space_fault() {
        // A decoded packet can hold any dword-aligned base: the last rows of this one would
        // wrap past 2^64.
        let s = SubWindowSurface::new(u64::MAX - 3, 1 << 19, 1);
        assert_eq!(row_start(&s, 16, 0, 0), Some(u64::MAX - 3));
        assert_eq!(row_start(&s, 16, 1, 0), None);
        let vm = GpuVm::default();
        let c = SubWindowCopy::new(4, s, SubWindowSurface::new(0x1000, 1, 1), [1, 2, 1]);
        assert!(matches!(run(&vm, &c), Err(Stop::Fault(_))));
    }
}
