//! kfd-emu's sanitizer (issue 31 item 5): planted bugs in hipcc kernels
//! (`fixtures/code_objects/sanitize.hip`) are each reported once, with the source line, the
//! wave, the lane and the conflicting access; their correct twins, and kfdrt's own kernels,
//! report nothing.

use crate::common;

use kfdrt::emu::{EmuConfig, Emulator, Preset};
use kfdrt::emu::{Finding, FindingKind};
use kfdrt::kernel_args::KernelArgs;
use kfdrt::{AqlQueue, AqlQueueOptions, Buffer, CodeObject, Dispatch, Gpu, Kfd, MemoryKind};
use std::sync::Arc;
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(60));

/// Fields drop in order: the device last.
struct Bench {
    co: CodeObject,
    queue: AqlQueue,
    gpu: Gpu,
    emu: Arc<Emulator>,
    kfd: common::Checked,
}

fn sanitized() -> Bench {
    let config = EmuConfig {
        sanitize: true,
        ..EmuConfig::new(Preset::Gfx90a, 1)
    };
    let kfd = common::Checked::new(Kfd::builder().emulated(config).open().unwrap());
    let emu = kfd.emulator().unwrap().clone();
    let gpu = kfd.gpu(0).unwrap();
    let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let co = gpu
        .load_code_object(&crate::co_util::fixture("sanitize-gfx90a.elf"))
        .unwrap();
    Bench {
        kfd,
        emu,
        gpu,
        queue,
        co,
    }
}

impl Bench {
    /// Runs `kernel` on `grid` work-items in groups of `group`, the first argument `buffer`
    /// and the second (if any) `n`.
    fn run(&self, kernel: &str, buffer: &Buffer, n: Option<i32>, grid: u32, group: u16) {
        let k = self.co.kernel(kernel).unwrap();
        let mut args = KernelArgs::new(&k).unwrap();
        args.set_buffer(0, buffer).unwrap();
        if let Some(n) = n {
            args.set_i32(1, n).unwrap();
        }
        self.queue
            .dispatch(&Dispatch::linear(&k, grid, group).with_args(&args))
            .unwrap()
            .wait(T)
            .unwrap();
    }

    fn line(&self, pc: u64) -> Vec<String> {
        self.kfd.source_location(pc)
    }
}

fn ints(b: &Buffer) -> Vec<i32> {
    b.to_vec()
        .unwrap()
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn an_access_past_a_suballocated_buffer_into_its_neighbour_is_reported_once() {
    let b = sanitized();
    // Two 512-byte buffers, one after the other in a suballocator block.
    let x = b.gpu.alloc(512, MemoryKind::GttCoherent).unwrap();
    let y = b.gpu.alloc(512, MemoryKind::GttCoherent).unwrap();
    assert!(x.is_suballocated());
    assert_eq!(y.gpu_address(), x.gpu_address() + 512, "neighbours");
    y.write(0, &7.0f32.to_le_bytes()).unwrap();
    // x holds 128 floats; work-item 128 (group 1, wave 0, lane 32 with groups of 96) reads
    // and doubles y's first float.
    b.run("scale_overrun", &x, Some(128), 192, 96);
    let found = b.emu.sanitizer_findings();
    assert_eq!(found.len(), 2, "{found:#?}");
    for (f, write) in found.iter().zip([false, true]) {
        assert_eq!(f.kind, FindingKind::OutOfBounds);
        assert_eq!(
            (f.address, f.bytes, f.write, f.work_group, f.wave, f.lane),
            (y.gpu_address(), 4, write, [1, 0, 0], 0, 32)
        );
        assert_eq!(f.buffer, Some((x.gpu_address(), x.gpu_address() + 512)));
        assert_eq!(b.line(f.pc), ["./sanitize.hip:8 in scale_overrun"]);
    }
    assert!(found[1].instruction.starts_with("global_store_dword"));
    // The corruption happened, as on hardware.
    let mut f = [0u8; 4];
    y.read(0, &mut f).unwrap();
    assert_eq!(f32::from_le_bytes(f), 14.0);
    // Reported once per instruction, however often it happens again.
    b.run("scale_overrun", &x, Some(128), 192, 96);
    assert_eq!(b.emu.sanitizer_findings(), Vec::<Finding>::new());
    // The correct bound: nothing.
    b.run("scale", &x, Some(128), 192, 96);
    assert_eq!(b.emu.sanitizer_findings(), Vec::<Finding>::new());
}

#[test]
fn a_read_into_a_buffers_padding_is_reported() {
    let b = sanitized();
    // 100 floats: the chunk's last 112 bytes belong to nobody.
    let x = b.gpu.alloc(400, MemoryKind::GttCoherent).unwrap();
    b.run("scale_overrun", &x, Some(100), 128, 64);
    let found = b.emu.sanitizer_findings();
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_eq!(
        (found[0].address, found[0].work_group, found[0].lane),
        (x.gpu_address() + 400, [1, 0, 0], 36)
    );
    assert_eq!(
        found[0].buffer,
        Some((x.gpu_address(), x.gpu_address() + 400))
    );
}

#[test]
fn a_read_of_lds_no_wave_wrote_is_reported() {
    let b = sanitized();
    let out = b.gpu.alloc(4 * 64, MemoryKind::GttCoherent).unwrap();
    b.run("tile_half_written", &out, None, 64, 64);
    let found = b.emu.sanitizer_findings();
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!(f.kind, FindingKind::UninitializedLds);
    // Lane 32 reads tile[32], the first element nobody wrote.
    assert_eq!((f.address, f.bytes, f.write, f.lane), (128, 4, false, 32));
    assert!(
        f.instruction.starts_with("ds_read_b32"),
        "{}",
        f.instruction
    );
    assert_eq!(b.line(f.pc), ["./sanitize.hip:23 in tile_half_written"]);
}

#[test]
fn an_lds_race_between_waves_is_reported_and_barriers_and_atomics_are_not() {
    let b = sanitized();
    let out = b.gpu.alloc(4 * 128, MemoryKind::GttCoherent).unwrap();
    b.run("mirror_racy", &out, None, 128, 128);
    let found = b.emu.sanitizer_findings();
    assert!(!found.is_empty(), "no race found");
    assert!(
        found.iter().all(|f| f.kind == FindingKind::LdsRace),
        "{found:#?}"
    );
    for f in &found {
        let other = f.other.as_ref().unwrap();
        assert_ne!(other.wave, f.wave, "{f:#?}");
        // One of the two accesses is the write of line 33, the other the read of line 34.
        let lines = [b.line(f.pc), b.line(other.pc)].concat();
        assert!(
            lines.contains(&"./sanitize.hip:33 in mirror_racy".to_owned()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"./sanitize.hip:34 in mirror_racy".to_owned()),
            "{lines:?}"
        );
        assert!(f.write || other.write);
    }
    b.run("mirror", &out, None, 128, 128);
    assert_eq!(b.emu.sanitizer_findings(), Vec::<Finding>::new());
    assert_eq!(ints(&out), (0..128).rev().collect::<Vec<i32>>());
    let counter = b.gpu.alloc(4, MemoryKind::GttCoherent).unwrap();
    b.run("count", &counter, None, 256, 256);
    assert_eq!(b.emu.sanitizer_findings(), Vec::<Finding>::new());
    assert_eq!(ints(&counter), [256]);
}

/// kfdrt's own kernels (blit copies and fills of odd sizes and offsets) and a printf kernel
/// touch only what they were given.
#[test]
fn kfdrt_kernels_and_copies_stay_inside_their_buffers() {
    let b = sanitized();
    let src = b.gpu.alloc(1000, MemoryKind::GttCoherent).unwrap();
    let dst = b.gpu.alloc(1003, MemoryKind::GttCoherent).unwrap();
    let big = b.gpu.alloc(3 << 20, MemoryKind::GttCoherent).unwrap();
    src.write(0, &[5u8; 1000]).unwrap();
    let engine = b.gpu.shader_copy_engine().unwrap();
    engine
        .copy(&dst, 3, &src, 1, 997, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    engine
        .copy(&dst, 0, &src, 0, 1000, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    engine
        .fill(&dst, 4, 0x5a, 996, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    engine
        .copy(&big, 5, &src, 0, 1000, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    engine
        .copy(&big, 0, &big, 4096, (3 << 20) - 4096, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    engine
        .fill(&big, 8, 0x11, (3 << 20) - 8, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    let co = b
        .gpu
        .load_code_object(&crate::co_util::fixture("printf-gfx90a.elf"))
        .unwrap();
    b.kfd.set_printf_handler(|_| {});
    let greet = co.kernel("greet").unwrap();
    let out = b.gpu.alloc(4 * 100, MemoryKind::GttCoherent).unwrap();
    let mut args = KernelArgs::new(&greet).unwrap();
    args.set_buffer(0, &out).unwrap().set_f32(1, 1.0).unwrap();
    b.queue
        .dispatch(&Dispatch::linear(&greet, 100, 64).with_args(&args))
        .unwrap()
        .wait(T)
        .unwrap();
    assert_eq!(b.emu.sanitizer_findings(), Vec::<Finding>::new());
}
