//! kfdrt's own blit kernels (blit/gfx9.s, assembled into blit/gfx90a.co and blit/gfx942.co)
//! run as machine code with the kernargs and grid kfdrt's CopyEngine builds (src/copy.rs):
//! dst @0, src-or-pattern @8, bytes @16, stride @24; work-groups of 64; as many groups as
//! needed up to 1024, each work-item striding through the rest.

use crate::common;

use common::elf::{blit_dir, CodeObject};
use common::gpu::*;
use kfd_emu_isa::{Memory, Target};

const GROUP: u64 = 64;
const MAX_GROUPS: u64 = 1024;

fn setup(t: Target) -> (Gpu, u64) {
    let co = CodeObject::load(&blit_dir().join(format!("{}.co", t.name())));
    let mut gpu = Gpu::new(t);
    let base = gpu.load(&co);
    (gpu, base)
}

/// Launches a blit as kfdrt does.
fn blit(gpu: &mut Gpu, kernel: u64, dst: u64, src: u64, bytes: u64, elem: u64) {
    let items = bytes / elem;
    let groups = items.div_ceil(GROUP).clamp(1, MAX_GROUPS);
    let stride = groups * GROUP;
    let args = Args::new()
        .ptr(dst)
        .ptr(src)
        .ptr(bytes)
        .u32(stride as u32)
        .u32(0)
        .done();
    let mut l = Launch::linear(stride as u32, GROUP as u16, args);
    l.scratch = None;
    gpu.run(kernel, &l).unwrap();
}

/// A buffer of `len` bytes whose data starts `off` bytes into its first page, with guard
/// bytes around it in the same mapping; returns (data address, mapping start, mapping length).
fn buffer(gpu: &mut Gpu, off: u64, len: u64, fill: u8) -> (u64, u64, u64) {
    let total = off + len + 64;
    let base = gpu.alloc(total);
    gpu.mem.write(base, &vec![fill; total as usize]).unwrap();
    (base + off, base, total)
}

fn check_copy(
    t: Target,
    kernel: u64,
    gpu: &mut Gpu,
    src_off: u64,
    dst_off: u64,
    bytes: u64,
    elem: u64,
) {
    let data: Vec<u8> = (0..bytes).map(|i| (i * 7 + i / 251) as u8).collect();
    let (src, _, _) = buffer(gpu, src_off, bytes, 0);
    gpu.mem.write(src, &data).unwrap();
    let (dst, dbase, dlen) = buffer(gpu, dst_off, bytes, 0xEE);
    blit(gpu, kernel, dst, src, bytes, elem);
    let all = gpu.download(dbase, dlen as usize);
    let start = (dst - dbase) as usize;
    assert!(
        all[..start].iter().all(|&b| b == 0xEE),
        "{t}: bytes before the copy changed"
    );
    assert_eq!(
        &all[start..start + bytes as usize],
        &data[..],
        "{t}: copy of {bytes} bytes (src +{src_off}, dst +{dst_off})"
    );
    assert!(
        all[start + bytes as usize..].iter().all(|&b| b == 0xEE),
        "{t}: bytes after the copy changed"
    );
}

#[test]
fn aligned_copies_crossing_pages() {
    for t in Target::ALL {
        let (mut gpu, base) = setup(t);
        let co = CodeObject::load(&blit_dir().join(format!("{}.co", t.name())));
        let k = base + co.symbol("kfdrt_blit_copy_aligned.kd");
        // Sizes that are not a multiple of the 64-lane width; offsets that put the data
        // across page boundaries; one copy big enough that work-items loop (> 64 Ki dwords).
        for (so, d_o, bytes) in [
            (0, 0, 4),
            (4092, 8, 4100),
            (4000, 4088, 12 * 1024 + 4),
            (0, 4, 300_004),
            // Whole quads, and tails of two and three dwords after them.
            (16, 32, 4096),
            (0, 8, 24),
            (4, 0, 65_548),
        ] {
            check_copy(t, k, &mut gpu, so, d_o, bytes, 4);
        }
    }
}

#[test]
fn unaligned_copies() {
    for t in Target::ALL {
        let (mut gpu, base) = setup(t);
        let co = CodeObject::load(&blit_dir().join(format!("{}.co", t.name())));
        let k = base + co.symbol("kfdrt_blit_copy_unaligned.kd");
        for (so, d_o, bytes) in [(1, 3, 1), (4095, 1, 77), (3, 4093, 5000), (2, 4094, 70_001)] {
            check_copy(t, k, &mut gpu, so, d_o, bytes, 1);
        }
    }
}

#[test]
fn fills() {
    for t in Target::ALL {
        let (mut gpu, base) = setup(t);
        let co = CodeObject::load(&blit_dir().join(format!("{}.co", t.name())));
        let k = base + co.symbol("kfdrt_blit_fill.kd");
        for (off, bytes) in [(0u64, 4u64), (4092, 4104), (8, 65_540), (0, 4096), (4, 44)] {
            let (dst, dbase, dlen) = buffer(&mut gpu, off, bytes, 0x11);
            let pattern = 0xA1B2_C3D4u64;
            blit(&mut gpu, k, dst, pattern, bytes, 4);
            let all = gpu.download(dbase, dlen as usize);
            let start = (dst - dbase) as usize;
            assert!(
                all[..start].iter().all(|&b| b == 0x11),
                "{t}: before the fill"
            );
            for (i, c) in all[start..start + bytes as usize]
                .chunks_exact(4)
                .enumerate()
            {
                assert_eq!(
                    u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                    pattern as u32,
                    "{t}: dword {i} of {bytes}"
                );
            }
            assert!(
                all[start + bytes as usize..].iter().all(|&b| b == 0x11),
                "{t}: after the fill"
            );
        }
    }
}

/// A PM4 DISPATCH_DIRECT runs from registers: the entry from COMPUTE_PGM_LO/HI, the user SGPRs
/// from COMPUTE_USER_DATA_*, the rest from COMPUTE_PGM_RSRC*; the descriptor's enable bits play
/// no part (here cleared to prove it).
#[test]
fn fill_dispatched_from_pm4_registers() {
    for t in Target::ALL {
        let (mut gpu, base) = setup(t);
        let co = CodeObject::load(&blit_dir().join(format!("{}.co", t.name())));
        let k = base + co.symbol("kfdrt_blit_fill.kd");
        let bytes = 1000u64;
        let dst = gpu.alloc(bytes);
        let args = Args::new()
            .ptr(dst)
            .ptr(0x0102_0304)
            .ptr(bytes)
            .u32(256)
            .u32(0)
            .done();
        let mut l = Launch::linear(256, 64, args);
        l.scratch = None;
        let mut s = gpu.setup(k, &l);
        let entry = s.entry();
        // A PM4 dispatch says wave32 in DISPATCH_INITIATOR.CS_W32_EN, which the caller turns
        // into the descriptor's wave32 bit; nothing else of the properties applies.
        s.descriptor.kernel_code_properties &= 1 << 10;
        s.entry_override = Some(entry);
        s.kernel_object = 0;
        s.user_sgprs_override = Some(vec![
            s.kernarg_address as u32,
            (s.kernarg_address >> 32) as u32,
        ]);
        for g in s.workgroup_ids() {
            kfd_emu_isa::run_workgroup(&s, g, &gpu.mem, &kfd_emu_isa::RunControl::default())
                .unwrap();
        }
        let out = to_u32(&gpu.download(dst, bytes as usize));
        assert!(out.iter().all(|&v| v == 0x0102_0304), "{t}");
    }
}
