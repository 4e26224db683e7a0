//! An idle emulated device sleeps deeply (no timed wake-ups) and still notices work: through
//! the doorbell hint an in-process runtime gives, and through the doorbell watcher for a
//! runtime that gives none (ROCr under the preload writes doorbells like hardware, and says
//! nothing), by the doorbell watcher's polling or, with doorbell traps, by the first doorbell
//! store faulting. Figures are in `benches/idle.rs` and `examples/rocr_roundtrip.rs --idle`;
//! these tests check only that nothing is missed.

use crate::common;

use kfd_sys::{Driver, DriverKind, Errno, IoctlRequest, MapSource, Node};
use kfdrt::emu::{EmuConfig, Emulator, Preset};
use kfdrt::{AqlQueueOptions, DebugOptions, Kfd, MemoryKind, Pm4QueueOptions};
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(20));
/// Longer than it takes every processor to go from busy to a deep sleep (about 10 ms).
const IDLE: Duration = Duration::from_millis(60);

/// The emulator, minus the doorbell hints: what kfdrt sees of real hardware.
struct NoHints(Arc<Emulator>);

impl Driver for NoHints {
    fn kind(&self) -> DriverKind {
        self.0.kind()
    }
    fn describe(&self) -> String {
        format!("{} without doorbell hints", self.0.describe())
    }
    unsafe fn ioctl(
        &self,
        node: Node,
        request: IoctlRequest,
        arg: *mut c_void,
    ) -> Result<i32, Errno> {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.ioctl(node, request, arg) }
    }
    fn open_render_node(&self, minor: u32) -> Result<i32, Errno> {
        self.0.open_render_node(minor)
    }
    unsafe fn mmap(
        &self,
        source: MapSource,
        addr: *mut c_void,
        len: usize,
        prot: i32,
        flags: i32,
        offset: u64,
    ) -> Result<*mut c_void, Errno> {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.mmap(source, addr, len, prot, flags, offset) }
    }
    unsafe fn munmap(&self, addr: *mut c_void, len: usize) -> Result<(), Errno> {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.munmap(addr, len) }
    }
    fn read_topology(&self, path: &str) -> Result<String, Errno> {
        self.0.read_topology(path)
    }
    fn list_topology(&self, path: &str) -> Result<Vec<String>, Errno> {
        self.0.list_topology(path)
    }
}

/// Every kind of queue gets work after an idle spell, several times over.
fn work_after_idle(kfd: &Kfd) {
    let gpu = kfd.gpu(0).unwrap();
    let aql = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let pm4 = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    let engine = gpu.copy_engine().unwrap();
    let src = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let dst = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    for round in 0..4u8 {
        std::thread::sleep(IDLE);
        aql.barrier_and(&[]).unwrap().wait(T).unwrap();
        std::thread::sleep(IDLE);
        pm4.finish(T.unwrap()).unwrap();
        std::thread::sleep(IDLE);
        src.write(0, &[round; 64]).unwrap();
        engine
            .copy(&dst, 0, &src, 0, 64, &[])
            .unwrap()
            .wait(T)
            .unwrap();
        assert_eq!(dst.to_vec().unwrap()[..64], [round; 64]);
    }
}

/// On the device under test; kfdrt's doorbell hints are counted when it is emulated in-process
/// (through the preload, kfdrt sees hardware and gives none: the watcher notices the work).
#[test]
fn hinted_doorbells_wake_idle_processors() {
    let Some(kfd) = common::under_test(
        "idle_wake::hinted_doorbells_wake_idle_processors",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let id = kfd.gpu(0).unwrap().id();
    let hints = kfd.emulator().map(|e| e.doorbell_hints(id));
    work_after_idle(&kfd);
    if let (Some(emu), Some(hints)) = (kfd.emulator(), hints) {
        assert!(
            emu.doorbell_hints(id) > hints,
            "kfdrt gives hints in-process"
        );
    }
}

#[test]
fn doorbells_without_hints_are_noticed_by_the_watcher() {
    let emu = Emulator::new(EmuConfig::new(Preset::Gfx90a, 1)).unwrap();
    let driver: Arc<dyn Driver> = Arc::new(NoHints(emu.clone()));
    let kfd = Kfd::builder()
        .driver(driver)
        .debug(DebugOptions::default())
        .open()
        .unwrap();
    work_after_idle(&kfd);
    assert_eq!(emu.doorbell_hints(kfd.gpu(0).unwrap().id()), 0);
    drop(kfd);
    common::assert_all_released(&emu);
}

#[test]
fn doorbells_without_hints_spring_the_trap_and_still_land() {
    let mut config = EmuConfig::new(Preset::Gfx90a, 1);
    config.trap_doorbell_writes = true;
    let emu = Emulator::new(config).unwrap();
    let driver: Arc<dyn Driver> = Arc::new(NoHints(emu.clone()));
    let kfd = Kfd::builder()
        .driver(driver)
        .debug(DebugOptions::default())
        .open()
        .unwrap();
    let gpu = kfd.gpu(0).unwrap().id();
    // Each doorbell after an idle spell faults (its GPU's processors sleep deeply), wakes them
    // and completes: the packets run and the rings move on.
    work_after_idle(&kfd);
    let sprung = emu.doorbell_traps(gpu);
    assert!(
        sprung >= 4,
        "only {sprung} doorbell stores trapped after idle spells"
    );
    // A busy queue's doorbells do not fault: a trap lifts the protection until a processor of
    // the GPU sleeps deeply again (the idle copy engine's may, every 10 ms or so).
    let q = kfd
        .gpu(0)
        .unwrap()
        .create_aql_queue(AqlQueueOptions::default())
        .unwrap();
    let before = emu.doorbell_traps(gpu);
    for _ in 0..200 {
        q.barrier_and(&[]).unwrap().wait(T).unwrap();
    }
    let busy = emu.doorbell_traps(gpu) - before;
    assert!(busy < 20, "{busy} of 200 doorbells of a busy queue faulted");
    assert_eq!(emu.doorbell_hints(gpu), 0);
    drop(q);
    drop(kfd);
    common::assert_all_released(&emu);
}

/// A busy queue beside an idle one: the idle queue's processor stays in its deep sleep. The
/// doorbell watcher (running while any processor sleeps deeply) sees the busy queue's doorbell
/// move at every look; it used to wake every processor of the GPU for it, so the idle one fell
/// back to light sleeps that every doorbell hint ended, and each submission paid for its
/// wake-ups (a single dispatch cost 6 times more with one idle queue beside it, on 2 cores).
#[test]
fn a_busy_queue_does_not_keep_an_idle_one_awake() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let emu = kfd.emulator().unwrap().clone();
    let gpu = kfd.gpu(0).unwrap();
    let busy = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let _idle = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    // Both fall asleep.
    std::thread::sleep(Duration::from_millis(100));
    let before = emu.deep_sleeps(gpu.id());
    let start = std::time::Instant::now();
    let mut round_trips = 0;
    while start.elapsed() < Duration::from_millis(300) {
        busy.barrier_and(&[]).unwrap().wait(T).unwrap();
        round_trips += 1;
    }
    let slept = emu.deep_sleeps(gpu.id()) - before;
    assert!(round_trips > 100, "{round_trips} round trips");
    // The idle processor sleeps on (its safety timeout is 1 s), and the busy one idles 10 ms
    // only if this thread is kept off the CPU that long. Woken at every look of the watcher,
    // the idle one began about 600 here.
    assert!(
        slept <= 10,
        "{slept} deep sleeps begun in 300 ms beside a busy queue"
    );
}
