//! Copies and fills of 4 GiB and more through the blit kernels, whose element indices and byte
//! offsets are 32-bit registers: the runtime splits them into launches under 4 GiB, where a
//! single launch would wrap onto the start of the destination. The buffers are sparse; only
//! the destination is ever touched whole. (Byte-wise copies go through the same split; before,
//! those of 4 GiB and more were refused rather than wrapped.)

use crate::common;

use kfdrt::emu::Preset;
use kfdrt::{Buffer, CopyPath, MemoryKind};
use std::time::Duration;

const GIB: u64 = 1 << 30;
const T: Option<Duration> = Some(Duration::from_secs(300));

fn u64_at(b: &Buffer, off: u64) -> u64 {
    let mut v = [0u8; 8];
    b.read(off, &mut v).unwrap();
    u64::from_le_bytes(v)
}

/// Offsets around the 4 GiB boundary, and the first and last words.
fn probes(len: u64) -> Vec<u64> {
    vec![
        0,
        4096,
        4 * GIB - 8,
        4 * GIB,
        4 * GIB + 4096,
        (len - 8) & !7,
    ]
}

#[test]
fn copies_and_fills_past_4_gib_through_blit_kernels() {
    let Some(kfd) = common::under_test(
        "large_copies::copies_and_fills_past_4_gib_through_blit_kernels",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let engine = gpu.copy_engine_preferring(CopyPath::Shader).unwrap();
    let len = 4 * GIB + 64 * 1024;
    let src = gpu.alloc(len, MemoryKind::HostVisibleVram).unwrap();
    let dst = gpu.alloc(len, MemoryKind::HostVisibleVram).unwrap();
    for (i, &off) in probes(len).iter().enumerate() {
        src.write(off, &(0x5A5A_0000_0000_0000 | i as u64).to_le_bytes())
            .unwrap();
    }

    // Aligned: 4-byte elements.
    engine
        .copy(&dst, 0, &src, 0, len, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    for &off in &probes(len) {
        assert_eq!(
            u64_at(&dst, off),
            u64_at(&src, off),
            "aligned copy at {off:#x}"
        );
    }

    // Fill.
    engine
        .fill(&dst, 0, 0xC0DE_F00D, len, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    for &off in &probes(len) {
        assert_eq!(u64_at(&dst, off), 0xC0DE_F00D_C0DE_F00D, "fill at {off:#x}");
    }
}
