//! kfdrt's hardware path (`DevKfd`: real `open`, `ioctl` and `mmap` system calls on `/dev/kfd`
//! and the render nodes) against kfd-emu, through the LD_PRELOAD interposer.
//!
//! The rest of the suite reaches kfd-emu through the `Driver` trait in-process. This test runs
//! itself again as a child process with `libkfd_emu_preload.so` preloaded and
//! `KFDRT_DEVICE=hw`, so the same scenarios go through the system-call marshalling a real GPU
//! would see: sysfs parsing, the render node's mmap offsets, doorbell and events-page mappings,
//! userptr registration, and one process-wide KFD context shared by every `Kfd::open`.

mod common;

use kfdrt::{Condition, CopyPath, DriverKind, EventKind, EventReset, Kfd, MemoryKind};
use sdma::SdmaPacket;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// Set in the child process, which runs the scenarios.
const CHILD_ENV: &str = "KFDRT_HARDWARE_PATH_CHILD";
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
    if std::env::var_os(CHILD_ENV).is_some() {
        scenarios();
        return;
    }
    let lib = preload().expect("libkfd_emu_preload.so was not built with the tests");
    let exe = std::env::current_exe().expect("test executable");
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "devkfd_runs_on_kfd_emu_through_the_preload",
            "--nocapture",
        ])
        .env(CHILD_ENV, "1")
        .env("LD_PRELOAD", &lib)
        .env("KFDRT_DEVICE", "hw")
        .env("KFDRT_EMU_PRESET", "gfx90a")
        .env("KFDRT_EMU_GPUS", "2")
        .env_remove("KFDRT_DISABLE_SDMA")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run the child");
    // Read the pipes on threads so a chatty child cannot block on them, and bound the wait so
    // a deadlock fails the test instead of hanging the suite.
    let mut pipe_out = child.stdout.take().expect("stdout");
    let mut pipe_err = child.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut pipe_out, &mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut pipe_err, &mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for the child") {
            break Some(s);
        }
        if start.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    let Some(status) = status else {
        panic!("the child hung for 180 s and was killed:\n{stdout}\n{stderr}");
    };
    assert!(
        status.success() && stdout.contains("1 passed"),
        "child failed ({status}):\n{stdout}\n{stderr}"
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
