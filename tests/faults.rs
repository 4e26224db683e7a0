//! Faults end waits; they do not hang them. A GPU page fault (or an engine exception) is
//! reported by KFD through the process's memory-exception events, with every queue of the
//! faulting GPU stopped and no completion or error signal written; every kfdrt wait (AQL
//! completions, copies on SDMA or blit kernels, PM4 fences) watches those events and returns
//! `Error::DeviceFault` naming the address, the kind and the queue. Other GPUs keep working.

use crate::common;

use common::raw_dispatch;

use kfd_sys::bindings::*;
use kfd_sys::DriverExt;
use kfdrt::emu::{GpuFault, Preset, WorkGroup};
use kfdrt::memory::AllocOptions;
use kfdrt::{
    AqlQueueOptions, Buffer, CopyPath, Dispatch, Error, Gpu, Kernel, MemoryKind, Pm4QueueOptions,
};
use sdma::{AtomicOp, SdmaPacket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Long enough for anything that will complete; a hang shows as a timeout, not a stuck test.
const T: Option<Duration> = Some(Duration::from_secs(20));
const BAD: u64 = 0x7e57_0000_1000;

fn wild_kernel(gpu: &Gpu, addr: u64) -> Kernel {
    gpu.emulated_kernel(
        "wild",
        0,
        Arc::new(move |wg: &WorkGroup<'_>| wg.mem.write_u32(addr + 8, 1)),
    )
    .unwrap()
}

fn counting_kernel(gpu: &Gpu, runs: Arc<AtomicU64>) -> Kernel {
    gpu.emulated_kernel(
        "count",
        0,
        Arc::new(move |_: &WorkGroup<'_>| -> Result<(), GpuFault> {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }),
    )
    .unwrap()
}

fn expect_fault(r: kfdrt::Result<()>, gpu: &Gpu, queue: u32, what: &str) -> kfdrt::MemoryException {
    match r {
        Err(Error::DeviceFault {
            queue_id, fault, ..
        }) => {
            assert_eq!(fault.gpu_id, gpu.id(), "{what}: {fault}");
            assert_eq!(queue_id, Some(queue), "{what}");
            fault
        }
        other => panic!("{what}: expected a device fault, got {other:?}"),
    }
}

/// Unmaps `buf` from its own GPU behind kfdrt's back, so the GPU faults on it.
fn pull_mapping(gpu: &Gpu, buf: &Buffer) {
    let ids = [gpu.id()];
    let mut u = kfd_ioctl_unmap_memory_from_gpu_args {
        handle: buf.handle(),
        device_ids_array_ptr: ids.as_ptr() as u64,
        n_devices: 1,
        n_success: 0,
    };
    // SAFETY: the device list outlives the call.
    unsafe { gpu.kfd().driver().kfd_ioctl_unchecked(&mut u) }.unwrap();
}

#[test]
fn a_page_fault_stops_every_queue_of_its_gpu_and_ends_their_waits() {
    let kfd = common::emulated(Preset::Gfx90a, 2);
    let (gpu, other) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    let runs = Arc::new(AtomicU64::new(0));
    let wild = wild_kernel(&gpu, BAD);
    let count = counting_kernel(&gpu, runs.clone());
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let sibling = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let sdma = gpu.create_sdma_queue().unwrap();
    let pm4 = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();

    // The faulting dispatch, then one queued behind it that must never run.
    let faulting = q.dispatch(&Dispatch::linear(&wild, 1, 1)).unwrap();
    let behind = q.dispatch(&Dispatch::linear(&count, 1, 1)).unwrap();
    let f = expect_fault(faulting.wait(T), &gpu, q.id(), "the faulting dispatch");
    assert_eq!(f.va, BAD, "the page of the faulting access");
    assert!(f.not_present && !f.read_only && !f.no_execute && !f.imprecise);
    expect_fault(behind.wait(T), &gpu, q.id(), "the packet behind it");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "a later packet ran");
    // The driver wrote no error signal: the fault came through the event.
    assert!(q.fault().is_none());

    // Every other queue of the GPU was evicted with it: their work is refused at submission
    // once the fault is known.
    expect_fault(
        sibling.dispatch(&Dispatch::linear(&count, 1, 1)).map(drop),
        &gpu,
        sibling.id(),
        "another AQL queue",
    );
    let buf = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    expect_fault(
        sdma.fill(&buf, 0, 7, 64, &[]).map(drop),
        &gpu,
        sdma.id(),
        "an SDMA copy",
    );
    expect_fault(
        pm4.finish(Duration::from_secs(20)),
        &gpu,
        pm4.id(),
        "a PM4 fence",
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // The other GPU is not affected.
    let runs2 = Arc::new(AtomicU64::new(0));
    let count2 = counting_kernel(&other, runs2.clone());
    let q2 = other.create_aql_queue(AqlQueueOptions::default()).unwrap();
    q2.dispatch(&Dispatch::linear(&count2, 1, 1))
        .unwrap()
        .wait(T)
        .unwrap();
    assert_eq!(runs2.load(Ordering::SeqCst), 1);
    let ob = other.alloc(4096, MemoryKind::GttCoherent).unwrap();
    other
        .create_sdma_queue()
        .unwrap()
        .fill(&ob, 0, 5, 64, &[])
        .unwrap()
        .wait(T)
        .unwrap();

    // The faulted GPU stays faulted for the process (KFD creates later queues evicted, and
    // never restores them): creating a queue there is the fault, at once, of every kind.
    let no_queue = |r: kfdrt::Result<()>, what: &str| match r {
        Err(Error::DeviceFault {
            queue_id: None,
            fault,
            ..
        }) => assert_eq!(fault.gpu_id, gpu.id(), "{what}"),
        other => panic!("{what} on the faulted GPU: {other:?}"),
    };
    no_queue(gpu.health(), "health");
    no_queue(
        gpu.create_aql_queue(AqlQueueOptions::default()).map(drop),
        "a new AQL queue",
    );
    no_queue(gpu.create_sdma_queue().map(drop), "a new SDMA queue");
    no_queue(
        gpu.create_pm4_queue(Pm4QueueOptions::default()).map(drop),
        "a new PM4 queue",
    );
    other.health().expect("the other GPU is healthy");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "nothing ran on the faulted GPU"
    );
    // The old ones stay stopped.
    expect_fault(
        sibling.dispatch(&Dispatch::linear(&count, 1, 1)).map(drop),
        &gpu,
        sibling.id(),
        "an evicted queue, later",
    );
}

#[test]
fn an_sdma_copy_that_faults_ends_its_wait() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_sdma_queue().unwrap();
    let src = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let dst = gpu
        .alloc_with(4096, AllocOptions::new(MemoryKind::GttCoherent).dedicated())
        .unwrap();
    pull_mapping(&gpu, &dst);
    let c = q.copy(&dst, 0, &src, 0, 4096, &[]).unwrap();
    let f = expect_fault(c.wait(T), &gpu, q.id(), "SDMA copy");
    assert_eq!(f.va, dst.gpu_address());
}

#[test]
fn a_blit_copy_that_faults_ends_its_wait() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let engine = gpu.copy_engine_preferring(CopyPath::Shader).unwrap();
    let src = gpu.alloc(1 << 16, MemoryKind::GttCoherent).unwrap();
    let dst = gpu
        .alloc_with(
            1 << 16,
            AllocOptions::new(MemoryKind::GttCoherent).dedicated(),
        )
        .unwrap();
    pull_mapping(&gpu, &dst);
    let c = engine.copy(&dst, 0, &src, 0, 1 << 16, &[]).unwrap();
    match c.wait(T) {
        Err(Error::DeviceFault { fault, .. }) => assert_eq!(fault.va, dst.gpu_address()),
        other => panic!("expected a device fault, got {other:?}"),
    }
}

#[test]
fn a_pm4_write_to_an_unmapped_address_ends_finish() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    let p = q.write_data(BAD, &[1, 2]);
    common::pm4_submit(&q, &[p], Duration::from_secs(5)).unwrap();
    let f = expect_fault(q.finish(Duration::from_secs(20)), &gpu, q.id(), "PM4");
    assert_eq!(f.va, BAD);
}

#[test]
fn an_illegal_sdma_packet_is_an_exception_without_an_address() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_sdma_queue().unwrap();
    let buf = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    common::sdma_submit(
        &q,
        &[SdmaPacket::Atomic {
            addr: buf.gpu_address(),
            op: AtomicOp::Other(0x7F),
            src: 1,
            cmp: 0,
            loop_interval: 0,
        }],
        Duration::from_secs(5),
    )
    .unwrap();
    // Refused at submission if the exception is already known, else its wait ends with it.
    let r = q.fill(&buf, 0, 1, 64, &[]).and_then(|c| c.wait(T));
    let f = expect_fault(r, &gpu, q.id(), "after an illegal packet");
    assert!(f.imprecise && f.va == 0, "{f:?}");
}

#[test]
fn a_write_to_a_read_only_buffer_faults_as_read_only() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let ro = gpu
        .alloc_with(4096, AllocOptions::new(MemoryKind::GttCoherent).read_only())
        .unwrap();
    // The CPU may write it; the GPU may read it.
    ro.write(0, &[9, 0, 0, 0]).unwrap();
    let out = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let (src, dst) = (ro.gpu_address(), out.gpu_address());
    let copy = gpu
        .emulated_kernel(
            "copy_word",
            0,
            Arc::new(move |wg: &WorkGroup<'_>| {
                let v = wg.mem.read_u32(src)?;
                wg.mem.write_u32(dst, v)
            }),
        )
        .unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    q.dispatch(&Dispatch::linear(&copy, 1, 1))
        .unwrap()
        .wait(T)
        .unwrap();
    let mut v = [0u8; 4];
    out.read(0, &mut v).unwrap();
    assert_eq!(v, [9, 0, 0, 0]);
    let wild = wild_kernel(&gpu, src - 8);
    let s = q.dispatch(&Dispatch::linear(&wild, 1, 1)).unwrap();
    let f = expect_fault(s.wait(T), &gpu, q.id(), "write to read-only");
    assert!(f.read_only && !f.not_present, "{f:?}");
    assert_eq!(f.va, src);
}

#[test]
fn code_in_memory_without_execute_permission_faults_as_no_execute() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let real = counting_kernel(&gpu, Arc::new(AtomicU64::new(0)));
    // The same descriptor and code, copied into ordinary (non-executable) memory.
    let plain = gpu
        .alloc_with(
            4096,
            AllocOptions::new(MemoryKind::HostVisibleVram).dedicated(),
        )
        .unwrap();
    let kd = real.descriptor().unwrap();
    // SAFETY: the descriptor is 64 bytes of plain data.
    let kd_bytes = unsafe {
        std::slice::from_raw_parts((kd as *const aql::KernelDescriptor).cast::<u8>(), 64)
    };
    plain.write(0, kd_bytes).unwrap();
    plain.write(256, &0xBF81_0000u32.to_le_bytes()).unwrap();
    let emu = kfd.emulator().unwrap();
    emu.bind_kernel(
        plain.gpu_address(),
        "copied",
        Arc::new(|_: &WorkGroup<'_>| -> Result<(), GpuFault> { Ok(()) }),
    );
    // SAFETY: a valid descriptor at `plain`, which outlives the dispatch.
    let k = unsafe { Kernel::from_raw("copied", plain.gpu_address(), 0, 0, 0) };
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let s = q.dispatch(&Dispatch::linear(&k, 1, 1)).unwrap();
    let f = expect_fault(s.wait(T), &gpu, q.id(), "fetch from non-executable memory");
    assert!(f.no_execute, "{f:?}");
    // The entry is 256 bytes in, on the buffer's first page: KFD reports the page.
    assert_eq!(f.va, (plain.gpu_address() + 256) & !0xFFF);
    emu.unbind_kernel(plain.gpu_address());
}

/// hipcc's `vector_add(a, b, c, n)` (`tests/fixtures/code_objects/kernels.hip`), as machine code.
fn compiled_vector_add(gpu: &Gpu) -> (kfdrt::CodeObject, Kernel) {
    let co = gpu
        .load_code_object(include_bytes!("fixtures/code_objects/kernels-gfx90a.co"))
        .unwrap();
    let k = co.kernel("vector_add").unwrap();
    (co, k)
}

/// hipcc's `vector_add` run with its first input at [`BAD`], which nothing maps: the first
/// wave's load of it faults. Returns the wait's result and the queue.
fn wild_vector_add(gpu: &Gpu) -> (kfdrt::Result<()>, u32) {
    let (_co, k) = compiled_vector_add(gpu);
    let out = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let mut args = kfdrt::KernelArgs::new(&k).unwrap();
    // SAFETY: the address is chosen to fault; no memory is named that could be freed.
    unsafe { args.set_address(0, BAD) }.unwrap();
    args.set_buffer(1, &out)
        .unwrap()
        .set_buffer(2, &out)
        .unwrap();
    args.set_u32(3, 64).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let r = q
        .dispatch(&Dispatch::linear(&k, 64, 64).with_args(&args))
        .unwrap()
        .wait(T);
    (r, q.id())
}

#[test]
fn machine_code_touching_unmapped_memory_is_a_gpu_page_fault() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let (r, queue) = wild_vector_add(&gpu);
    let f = expect_fault(r, &gpu, queue, "wild load");
    assert_eq!(f.va & !0xFFF, BAD & !0xFFF, "{f}");
    assert!(f.not_present && !f.read_only, "{f}");
}

#[test]
fn an_instruction_the_gpu_cannot_run_stops_the_queue_with_an_illegal_instruction() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let emu = kfd.emulator().unwrap();
    for (what, words, code, exceptions) in [
        // A graphics-only instruction the interpreter decodes but does not run: the emulator's
        // limit, which it reports as the CP would an illegal instruction.
        (
            "unimplemented",
            [0xD1C4_0003u32, 0x0406_0501],
            kfdrt::queue::error_bits::ILLEGAL_INSTRUCTION,
            kfdrt::WaveExceptions::empty(),
        ),
        // s_trap 2 (what HIP's abort() compiles to): kfdrt's trap handler reports it, and KFD
        // passes it on through the queue's context-save area.
        (
            "trap",
            [0xBF92_0002, 0xBF81_0000],
            0,
            kfdrt::WaveExceptions::ABORT,
        ),
    ] {
        let (_co, k) = compiled_vector_add(&gpu);
        let entry = k.entry_address().unwrap();
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        emu.gpu_vm(gpu.id()).unwrap().write(entry, &bytes).unwrap();
        let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
        q.invalidate_icache().unwrap().wait(T).unwrap();
        let r = q
            .dispatch(&raw_dispatch(&k, 64, 64, &[0; 28]))
            .unwrap()
            .wait(T);
        match r {
            Err(Error::QueueError {
                queue_id, fault, ..
            }) => {
                assert_eq!(queue_id, q.id(), "{what}");
                assert_eq!(fault.code, code, "{what}: {fault}");
                assert_eq!(fault.exceptions, exceptions, "{what}: {fault}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

#[test]
fn a_fault_report_names_the_source_line_from_the_code_objects_line_tables() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let co = gpu
        .load_code_object(&crate::co_util::fixture("lines-gfx90a.elf"))
        .unwrap();
    let k = co.kernel("poke_through").unwrap();
    let mut args = kfdrt::KernelArgs::new(&k).unwrap();
    // SAFETY: the address is chosen to fault; no memory is named that could be freed.
    unsafe { args.set_address(0, BAD) }.unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let e = q
        .dispatch(&Dispatch::linear(&k, 64, 64).with_args(&args))
        .unwrap()
        .wait(T)
        .unwrap_err();
    let report = e.report().expect("a fault carries a report");
    let fault = &report.faults[0];
    // The store is line 7, in `poke`, inlined into the kernel at line 11 (lines.hip).
    assert_eq!(
        fault.source,
        ["./lines.hip:7 in poke", "./lines.hip:11 in poke_through"],
        "{fault}"
    );
    let text = e.to_string();
    assert!(text.contains("at ./lines.hip:7 in poke"), "{text}");
    // The wave's registers: the pointer in s[0:1] from the kernel arguments, threadIdx.x in v0
    // and the store's offset (threadIdx.x * 4096) in v1, for all 64 lanes.
    let wave = fault.wave.as_deref().expect("the failed wave's state");
    assert!(
        wave.starts_with("wave 0 of work-group [0, 0, 0]: pc ")
            && wave.contains("exec 0xffffffffffffffff"),
        "{wave}"
    );
    assert!(wave.contains("\n  s0   00001000 00007e57 "), "{wave}");
    assert!(wave.contains("(and 60 more active lanes)"), "{wave}");
    assert!(
        wave.contains("\n  v0    00000000 00000001 00000002 00000003"),
        "{wave}"
    );
    assert!(
        wave.contains("\n  v1    00000000 00001000 00002000 00003000"),
        "{wave}"
    );
    assert!(text.contains(wave.lines().next().unwrap_or("-")), "{text}");
    assert!(
        text.contains("inlined into ./lines.hip:11 in poke_through"),
        "{text}"
    );
    // A code object without line tables gives none (on a fresh device: this GPU faulted).
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let (r, _) = wild_vector_add(&kfd.gpu(0).unwrap());
    let e = r.unwrap_err();
    let fault = &e.report().expect("a report").faults[0];
    assert!(fault.pc.is_some() && fault.source.is_empty(), "{fault}");
}
