//! kfdrt's hardware path (`DevKfd`: real `open`, `ioctl` and `mmap` system calls on `/dev/kfd`
//! and the render nodes) against kfd-emu, through the LD_PRELOAD interposer.
//!
//! The rest of the suite reaches kfd-emu through the `Driver` trait in-process. This test runs
//! itself again as a child process (`common::own_process`) with `libkfd_emu_preload.so` preloaded and
//! `KFDRT_DEVICE=hw`, so the same scenarios go through the system-call marshalling a real GPU
//! would see: sysfs parsing, the render node's mmap offsets, doorbell and events-page mappings,
//! userptr registration, and one process-wide KFD context shared by every `Kfd::open`.

use crate::common;
use kfdrt::{Condition, CopyPath, DriverKind, EventKind, EventReset, Kfd, MemoryKind};
use sdma::SdmaPacket;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const T: Option<Duration> = Some(Duration::from_secs(30));

/// The interposer cargo built for this test run (kfd-emu-preload is a dev-dependency, so its
/// cdylib is in `deps/` beside this executable).
fn preload() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let deps = exe.parent()?;
    [deps.to_path_buf(), deps.parent()?.to_path_buf()]
        .iter()
        .map(|d| d.join("libkfd_emu_preload.so"))
        .find(|p| p.exists())
}

#[test]
fn devkfd_runs_on_kfd_emu_through_the_preload() {
    // The preload must be in the process from its start: the scenarios run in a child.
    let lib = preload().expect("libkfd_emu_preload.so was not built with the tests");
    common::own_process::OwnProcess::default()
        .env("LD_PRELOAD", lib)
        .env("KFDRT_DEVICE", "hw")
        .env("KFDRT_EMU_PRESET", "gfx90a")
        .env("KFDRT_EMU_GPUS", "2")
        .env_remove("KFDRT_DISABLE_SDMA")
        .timeout(Duration::from_secs(180))
        .run(
            "hardware_path::devkfd_runs_on_kfd_emu_through_the_preload",
            scenarios,
        );
}

fn scenarios() {
    let kfd = Kfd::builder()
        .hardware()
        .open()
        .expect("open /dev/kfd (the preloaded emulator)");
    assert_eq!(kfd.kind(), DriverKind::Hardware);
    assert_eq!(kfd.gpus().len(), 2);
    // A second open shares the process's KFD context; a second independent bring-up would be
    // refused by the driver (events page, ACQUIRE_VM), so using both proves they are one.
    let again = Kfd::builder().hardware().open().expect("second open");
    let e1 = kfd
        .create_event(EventKind::Signal, EventReset::Auto)
        .expect("event");
    let e2 = again
        .create_event(EventKind::Signal, EventReset::Auto)
        .expect("event");
    e2.set().unwrap();
    assert!(e2.wait(T).unwrap());
    assert!(!e1.wait(Some(Duration::ZERO)).unwrap());

    let gpus = kfd.gpus();
    let (g0, g1) = (&gpus[0], &gpus[1]);
    memory_kinds(g0);
    signals_and_aql(g0);
    sdma_and_host_memory(g0);
    peer_copy(g0, g1);
}

fn memory_kinds(gpu: &kfdrt::Gpu) {
    for kind in [
        MemoryKind::DeviceLocal,
        MemoryKind::HostVisibleVram,
        MemoryKind::GttCoherent,
        MemoryKind::GttUncached,
        MemoryKind::Pageable,
    ] {
        for size in [10_000u64, 4 << 20] {
            let buf = gpu.alloc(size, kind).expect("alloc");
            assert_eq!(buf.mapped_gpus(), vec![gpu.id()]);
            if kind.host_accessible() {
                buf.write(size - 4, &[1, 2, 3, 4]).unwrap();
                let mut back = [0u8; 4];
                buf.read(size - 4, &mut back).unwrap();
                assert_eq!(back, [1, 2, 3, 4], "{kind:?} {size}");
            }
        }
    }
}

fn signals_and_aql(gpu: &kfdrt::Gpu) {
    let queue = gpu.create_aql_queue(Default::default()).expect("AQL queue");
    let gate = gpu.kfd().create_signal(1).expect("signal");
    let barrier = queue.barrier_and(&[&gate]).expect("barrier");
    std::thread::sleep(Duration::from_millis(20));
    assert!(!barrier.is_complete(), "ran before its dependency");
    gate.store(0).unwrap();
    barrier.wait(T).expect("barrier completes");
    for _ in 0..1000 {
        queue.barrier_and(&[]).unwrap().wait(T).unwrap();
    }
    let s = gpu.kfd().create_signal(3).unwrap();
    s.subtract(3).unwrap();
    assert_eq!(s.wait(Condition::Eq(0), T).unwrap(), 0);
}

fn sdma_and_host_memory(gpu: &kfdrt::Gpu) {
    let q = gpu.create_sdma_queue().expect("SDMA queue");
    let n = 1u64 << 20;
    let src = gpu.alloc(n, MemoryKind::GttCoherent).unwrap();
    let dst = gpu.alloc(n, MemoryKind::HostVisibleVram).unwrap();
    let data: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
    src.write(0, &data).unwrap();
    q.copy(&dst, 0, &src, 0, n, &[]).unwrap().wait(T).unwrap();
    assert!(dst.to_vec().unwrap() == data);

    // User memory registered with the GPU (userptr), written by the engine.
    let mut host = vec![0u8; 8192];
    let reg = gpu.register_host_memory(&mut host).expect("register");
    common::sdma_submit(
        &q,
        &[SdmaPacket::CopyLinear {
            src: src.gpu_address(),
            dst: reg.gpu_address(),
            bytes: 8192,
        }],
        Duration::from_secs(10),
    )
    .unwrap();
    let start = Instant::now();
    loop {
        // SAFETY: the engine writes the bytes; reading them volatile while it may still be
        // running is what a host polling user memory does.
        let last = unsafe { std::ptr::read_volatile((reg.gpu_address() + 8191) as *const u8) };
        if last == data[8191] {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "userptr copy never landed"
        );
        std::thread::yield_now();
    }
    drop(reg);
    assert_eq!(&host[..8192], &data[..8192]);
}

fn peer_copy(g0: &kfdrt::Gpu, g1: &kfdrt::Gpu) {
    let n = 256u64 << 10;
    let src = g0.alloc(n, MemoryKind::HostVisibleVram).unwrap();
    let dst = g1.alloc(n, MemoryKind::HostVisibleVram).unwrap();
    dst.map_to(g0).expect("peer mapping");
    let data: Vec<u8> = (0..n).map(|i| (i % 253) as u8).collect();
    src.write(0, &data).unwrap();
    let engine = g0.copy_engine().expect("copy engine");
    assert_eq!(engine.path(), CopyPath::Sdma);
    engine
        .copy(&dst, 0, &src, 0, n, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    assert!(dst.to_vec().unwrap() == data);
}
