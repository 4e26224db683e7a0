//! kfd-emu's strict personality (on by default; `KFDRT_EMU_STRICT=0` turns it off): detectors
//! for mistakes a GPU punishes with wrong results rather than an error. Each check is shown
//! firing on a deliberately wrong client, and kfdrt's own use passes them all (the rest of the
//! suite runs with the default, strict, configuration).

use crate::common;

use common::raw_dispatch;

use aql::{FenceScope, KernelDispatchPacket, Packet};
use kfdrt::emu::{EmuConfig, GpuFault, Preset, WorkGroup};
use kfdrt::{AqlQueueOptions, Dispatch, Kernel, Kfd, MemoryKind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const T: Duration = Duration::from_secs(20);

fn counting_kernel(kfd: &Kfd, runs: Arc<AtomicU64>) -> Kernel {
    kfd.gpu(0)
        .unwrap()
        .emulated_kernel(
            "count",
            8,
            Arc::new(move |_: &WorkGroup<'_>| -> Result<(), GpuFault> {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }),
        )
        .unwrap()
}

fn dispatch_with_kernargs_at(kernel: &Kernel, kernarg_address: u64) -> Packet {
    Packet::KernelDispatch(KernelDispatchPacket {
        barrier: true,
        acquire: FenceScope::System,
        release: FenceScope::System,
        dimensions: 1,
        workgroup_size: [1, 1, 1],
        grid_size: [1, 1, 1],
        private_segment_size: 0,
        group_segment_size: 0,
        kernel_object: kernel.object(),
        kernarg_address,
        completion_signal: 0,
    })
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = std::time::Instant::now();
    while !f() {
        assert!(t0.elapsed() < T, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_misaligned_kernarg_segment_is_refused() {
    for strict in [true, false] {
        let mut c = EmuConfig::new(Preset::Gfx90a, 1);
        c.strict = strict;
        let kfd = common::emulated_with(c);
        let gpu = kfd.gpu(0).unwrap();
        let runs = Arc::new(AtomicU64::new(0));
        let kernel = counting_kernel(&kfd, runs.clone());
        let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
        let args = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
        common::raw_publish(
            &q,
            &dispatch_with_kernargs_at(&kernel, args.gpu_address() + 4),
        );
        if strict {
            wait_for("the queue error", || q.fault().is_some());
            assert_eq!(
                q.fault().unwrap().code & kfdrt::queue::error_bits::INVALID_ARGUMENT,
                kfdrt::queue::error_bits::INVALID_ARGUMENT
            );
            assert_eq!(runs.load(Ordering::SeqCst), 0);
        } else {
            wait_for("the lenient run", || runs.load(Ordering::SeqCst) == 1);
        }
    }
}

#[test]
fn code_rewritten_without_an_icache_invalidate_is_reported() {
    for preset in [Preset::Gfx90a, Preset::Gfx1100] {
        code_rewritten_on(preset);
    }
}

fn code_rewritten_on(preset: Preset) {
    let kfd = common::emulated(preset, 1);
    let gpu = kfd.gpu(0).unwrap();
    let emu = kfd.emulator().unwrap();
    let runs = Arc::new(AtomicU64::new(0));
    let kernel = counting_kernel(&kfd, runs.clone());
    let entry = kernel.entry_address().unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let run = || {
        q.dispatch(&raw_dispatch(&kernel, 1, 1, &[0; 8]))
            .unwrap()
            .wait(Some(T))
            .unwrap()
    };
    run();
    assert_eq!(emu.stats().stale_code_fetches, 0);
    // New instructions at the same address (s_nop; s_endpgm), written from the CPU through the
    // emulator's view of the code buffer, with no invalidate: the GPU may run the old ones.
    let vm = emu.gpu_vm(gpu.id()).unwrap();
    vm.write(entry, &[0x00, 0x00, 0x80, 0xBF, 0x00, 0x00, 0x81, 0xBF])
        .unwrap();
    run();
    assert_eq!(
        emu.stats().stale_code_fetches,
        1,
        "the stale fetch went unnoticed"
    );
    // With the invalidate kfdrt issues after writing code, the same change is fine.
    q.invalidate_icache().unwrap().wait(Some(T)).unwrap();
    vm.write(entry, &[0x00, 0x00, 0x81, 0xBF]).unwrap();
    q.invalidate_icache().unwrap().wait(Some(T)).unwrap();
    run();
    assert_eq!(
        emu.stats().stale_code_fetches,
        1,
        "{preset}: kfdrt's invalidate left code cached"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    if preset == Preset::Gfx1100 {
        // On gfx10+ the instruction cache refills through GL1 and GL2: invalidating it alone
        // (GLI_INV) leaves the old code there.
        let pm4q = gpu.create_pm4_queue(Default::default()).unwrap();
        vm.write(entry, &[0x00, 0x00, 0x80, 0xBF]).unwrap();
        let gli_only = pm4::Pm4Packet::AcquireMem {
            coher_cntl: 0,
            gcr_cntl: 1,
        };
        common::pm4_submit(&pm4q, &[gli_only], T).unwrap();
        pm4q.finish(T).unwrap();
        run();
        assert_eq!(
            emu.stats().stale_code_fetches,
            2,
            "GLI_INV alone went unnoticed"
        );
    }
}

/// Host-visible VRAM, a GTT word and a kernel copying the VRAM's first word there.
fn copy_word_kernel(gpu: &kfdrt::Gpu) -> (kfdrt::Buffer, kfdrt::Buffer, Kernel) {
    let vram = gpu.alloc(8192, MemoryKind::HostVisibleVram).unwrap();
    let out = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let (src, dst) = (vram.gpu_address(), out.gpu_address());
    let copy = gpu
        .emulated_kernel(
            "copy_word",
            0,
            Arc::new(move |wg: &WorkGroup<'_>| wg.mem.write_u32(dst, wg.mem.read_u32(src)?)),
        )
        .unwrap();
    (vram, out, copy)
}

#[test]
fn a_gpu_read_of_vram_the_cpu_wrote_without_an_hdp_flush_is_reported() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let emu = kfd.emulator().unwrap();
    let (vram, out, copy) = copy_word_kernel(&gpu);
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    // Agent-scope acquire: the CP does not flush the HDP for these (a system-scope acquire
    // does, see below), so what the CPU wrote is visible only after an explicit flush.
    let run = || {
        q.dispatch(
            &Dispatch::linear(&copy, 1, 1).with_fences(FenceScope::Agent, FenceScope::System),
        )
        .unwrap()
        .wait(Some(T))
        .unwrap();
        let mut v = [0u8; 4];
        out.read(0, &mut v).unwrap();
        u32::from_le_bytes(v)
    };
    // kfdrt's own writes are flushed before the next submission.
    vram.write(0, &11u32.to_le_bytes()).unwrap();
    assert_eq!(run(), 11);
    assert_eq!(emu.stats().unflushed_vram_reads, 0);

    // A pointer kept from before a submission: its writes are the caller's to flush.
    let p = vram.as_ptr().unwrap() as *mut u32;
    q.barrier_and(&[]).unwrap().wait(Some(T)).unwrap();
    // SAFETY: the first word of the live, host-visible buffer.
    unsafe { p.write_volatile(22) };
    run();
    assert!(
        emu.stats().unflushed_vram_reads >= 1,
        "the GPU read VRAM the CPU wrote with no HDP flush, unnoticed"
    );
    let reported = emu.stats().unflushed_vram_reads;
    // SAFETY: as above.
    unsafe { p.write_volatile(33) };
    kfd.flush_hdp().unwrap();
    assert_eq!(run(), 33);
    assert_eq!(emu.stats().unflushed_vram_reads, reported);
    // A system-scope acquire (kfdrt's default) makes the CP flush the HDP itself.
    // SAFETY: as above.
    unsafe { p.write_volatile(44) };
    q.dispatch(&Dispatch::linear(&copy, 1, 1))
        .unwrap()
        .wait(Some(T))
        .unwrap();
    assert_eq!(emu.stats().unflushed_vram_reads, reported);
    assert_eq!(out.to_vec().unwrap()[..4], 44u32.to_le_bytes());
}

#[test]
fn on_a_virtual_function_without_an_mmio_remap_page_cpu_writes_to_vram_are_flushed_through_sdma() {
    // amdgpu gives a VF no MMIO-remap page (kfd_ioctl_alloc_memory_of_gpu: ENOMEM), so the CPU
    // cannot flush the HDP: kfdrt does it with an SDMA HDP flush before the work that follows.
    let mut config = EmuConfig::new(Preset::Gfx90a, 2);
    config.platform.sriov_vf = true;
    let kfd = common::emulated_with(config);
    let emu = kfd.emulator().unwrap();
    let gpu = kfd.gpu(0).unwrap();
    let (vram, out, copy) = copy_word_kernel(&gpu);
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let word = || u32::from_le_bytes(out.to_vec().unwrap()[..4].try_into().unwrap());
    // An agent-scope acquire: the CP does not flush the HDP itself.
    let run = || {
        q.dispatch(
            &Dispatch::linear(&copy, 1, 1).with_fences(FenceScope::Agent, FenceScope::System),
        )
        .unwrap()
        .wait(Some(T))
        .unwrap();
        word()
    };
    vram.write(0, &11u32.to_le_bytes()).unwrap();
    assert_eq!(run(), 11);
    assert_eq!(
        emu.stats().unflushed_vram_reads,
        0,
        "the kernel read VRAM the CPU wrote with no HDP flush"
    );
    // The same through a batch, and after a write through a kept pointer and flush_hdp.
    vram.write(0, &12u32.to_le_bytes()).unwrap();
    let mut b = q.batch().unwrap();
    b.dispatch(&Dispatch::linear(&copy, 1, 1).with_fences(FenceScope::Agent, FenceScope::System))
        .unwrap();
    b.submit().unwrap().wait(Some(T)).unwrap();
    assert_eq!(word(), 12);
    let p = vram.as_ptr().unwrap() as *mut u32;
    // SAFETY: the first word of the live, host-visible buffer; no GPU work is in flight.
    unsafe { p.write_volatile(13) };
    kfd.flush_hdp().unwrap();
    assert_eq!(run(), 13);
    assert_eq!(emu.stats().unflushed_vram_reads, 0);

    // An SDMA copy of the GPU's own VRAM, and of a peer's (flushed through the peer's queue).
    let sdma = gpu.create_sdma_queue().unwrap();
    vram.write(4, &14u32.to_le_bytes()).unwrap();
    sdma.copy(&out, 4, &vram, 4, 4, &[])
        .unwrap()
        .wait(Some(T))
        .unwrap();
    let peer = kfd.gpu(1).unwrap();
    let far = peer.alloc(4096, MemoryKind::HostVisibleVram).unwrap();
    far.map_to(&gpu).unwrap();
    far.write(0, &15u32.to_le_bytes()).unwrap();
    sdma.copy(&out, 8, &far, 0, 4, &[])
        .unwrap()
        .wait(Some(T))
        .unwrap();
    let o = out.to_vec().unwrap();
    assert_eq!(o[4..8], 14u32.to_le_bytes());
    assert_eq!(o[8..12], 15u32.to_le_bytes());
    assert_eq!(
        emu.stats().unflushed_vram_reads,
        0,
        "an SDMA copy read VRAM the CPU wrote with no HDP flush"
    );
}

#[test]
fn a_pm4_fence_without_an_l2_write_back_after_dispatches_is_reported() {
    for preset in [Preset::Gfx90a, Preset::Gfx1100] {
        let kfd = common::emulated(preset, 1);
        let gpu = kfd.gpu(0).unwrap();
        let emu = kfd.emulator().unwrap();
        let runs = Arc::new(AtomicU64::new(0));
        let kernel = counting_kernel(&kfd, runs.clone());
        let q = gpu
            .create_pm4_queue(kfdrt::Pm4QueueOptions::default())
            .unwrap();
        let karg = gpu.alloc(64, MemoryKind::GttCoherent).unwrap();
        let dispatch = || {
            q.dispatch_packets(&kernel, [1, 1, 1], [1, 1, 1], karg.gpu_address(), 0)
                .unwrap()
        };
        // kfdrt's fences write the L2 back, as Linux's do.
        common::pm4_submit(&q, &dispatch(), T).unwrap();
        q.finish(T).unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(emu.stats().fences_before_writeback, 0, "{preset}");
        // A fence with no cache action after a dispatch: the CPU may read stale data.
        let word = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
        let mut packets = dispatch();
        packets.push(common::release_mem(word.gpu_address(), 7, 0, None));
        common::pm4_submit(&q, &packets, T).unwrap();
        wait_for("the raw fence", || word.to_vec().unwrap()[0] == 7);
        assert_eq!(
            emu.stats().fences_before_writeback,
            1,
            "{preset}: a fence without the write-back went unnoticed"
        );
        // A fence with nothing run since the last write-back is fine.
        q.finish(T).unwrap();
        common::pm4_submit(&q, &packets[packets.len() - 1..], T).unwrap();
        q.finish(T).unwrap();
        assert_eq!(emu.stats().fences_before_writeback, 1, "{preset}");
    }
}
