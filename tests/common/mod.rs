//! Shared helpers of the integration tests.
//!
//! Tests open the device `KFDRT_DEVICE` names (default `auto`: `/dev/kfd` when present, else the
//! emulator): [`device`], or [`under_test`] for tests that fall back to an emulated preset when
//! no device is selected. Tests that need the emulator's counters, controls or presets create
//! their own emulated device; tests that need real hardware call [`hardware_or_skip`].
#![allow(dead_code)]

pub mod own_process;

use kfdrt::emu::{EmuConfig, Emulator, Preset};
use kfdrt::{DebugOptions, Kfd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A device under test that checks, when it drops, that kfdrt gave back everything it took from
/// the emulated device: buffers, GPU and CPU mappings, doorbells, queues and events (leak
/// accounting). Declare it before anything made from it, so it drops last. On hardware it
/// checks nothing (the process keeps `/dev/kfd` open).
pub struct Checked {
    kfd: Option<Kfd>,
}

impl Checked {
    /// Wraps `kfd` so its drop is checked.
    pub fn new(kfd: Kfd) -> Checked {
        Checked { kfd: Some(kfd) }
    }

    /// The device (a clone, for code that needs a `Kfd` by value).
    pub fn kfd(&self) -> Kfd {
        (**self).clone()
    }

    /// The device, no longer checked when it drops (for tests about the check itself).
    pub fn unchecked(mut self) -> Kfd {
        match self.kfd.take() {
            Some(k) => k,
            None => unreachable!("a Checked device is only emptied by its drop"),
        }
    }
}

impl std::ops::Deref for Checked {
    type Target = Kfd;
    fn deref(&self) -> &Kfd {
        match &self.kfd {
            Some(k) => k,
            None => unreachable!("a Checked device is only emptied by its drop"),
        }
    }
}

impl Drop for Checked {
    fn drop(&mut self) {
        let Some(kfd) = self.kfd.take() else { return };
        let Some(emu) = kfd.emulator().cloned() else {
            return;
        };
        drop(kfd);
        if !std::thread::panicking() {
            assert_all_released(&emu);
        }
    }
}

/// Waits (up to 10 s: threads kfdrt started may hold the device a moment longer) for the
/// emulated device to hold nothing of its client, and panics with what is left if it does.
pub fn assert_all_released(emu: &Arc<Emulator>) {
    let start = Instant::now();
    loop {
        let live = emu.live_objects();
        if live.is_empty() {
            return;
        }
        if start.elapsed() > Duration::from_secs(10) {
            panic!("leak: the device was dropped but the emulator still holds {live}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The device under test, as `KFDRT_DEVICE` selects (checked for leaks when it drops).
pub fn device() -> Checked {
    match Kfd::from_env() {
        Ok(k) => {
            hardware_capable(&k);
            Checked::new(k)
        }
        Err(e) => panic!("cannot open the device under test: {e}"),
    }
}

/// Says, for `kfdrt-check` to count, that the running test opens no device at all: it checks
/// host-side code (metadata, the source tree) and runs the same on any machine.
pub fn device_free() {
    eprintln!("kfdrt-test: device-free");
}

/// Says, for `kfdrt-check` to count, that the running test needs no emulator-only control and
/// runs on the device under test when one is selected.
fn hardware_capable(kfd: &Kfd) {
    eprintln!("kfdrt-test: hardware-capable, on {}", kfd.describe());
}

/// The device under test for a test that needs no emulator-only control: the one the
/// environment selects when it selects one (`KFDRT_DEVICE` set, or `/dev/kfd` present), else a
/// fresh emulated `preset` with `gpus` GPUs. `None`, after printing why, when the device has fewer
/// than `gpus` GPUs or no code object `stems` names is built for its target (see
/// [`code_object_for`]).
pub fn under_test(test: &str, preset: Preset, gpus: usize, stems: &[&str]) -> Option<Checked> {
    let selected = std::env::var_os(kfdrt::DEVICE_ENV).is_some() || kfd_sys::DevKfd::present();
    let kfd = if selected {
        device()
    } else {
        let kfd = emulated(preset, gpus);
        hardware_capable(&kfd);
        kfd
    };
    let have = kfd.gpus().len();
    if have < gpus {
        eprintln!("{test}: skipped: needs {gpus} GPUs, the device under test has {have}");
        return None;
    }
    let target = kfd.gpu(0)?.info().gfx_target.clone();
    if let Some(stem) = stems.iter().find(|s| code_object_for(s, &target).is_none()) {
        eprintln!("{test}: skipped: no {stem} code object is built for {target}");
        return None;
    }
    Some(kfd)
}

/// The device under test opened with the debugging switches `options` (an emulated MI210 with
/// `gpus` GPUs when none is selected); `None`, after saying why, when [`under_test`] skips
/// `test`, or when the process's one `/dev/kfd` device was opened before with other switches
/// (`kfdrt-check` runs each test in a process of its own; `cargo test` runs them all in one).
pub fn under_test_with(
    test: &str,
    gpus: usize,
    stems: &[&str],
    options: DebugOptions,
) -> Option<Checked> {
    let selected = std::env::var_os(kfdrt::DEVICE_ENV).is_some() || kfd_sys::DevKfd::present();
    // Opened first with `options`, the hardware device is the one `under_test` opens again.
    let first = selected.then(|| Kfd::builder().debug(options.clone()).open().unwrap());
    let probe = under_test(test, Preset::Gfx90a, gpus, stems)?;
    if probe.emulator().is_some() {
        // An emulated device: a fresh one of its own with the switches.
        drop(probe);
        let kfd = match first {
            Some(k) => k,
            None => Kfd::builder()
                .emulated(EmuConfig::new(Preset::Gfx90a, gpus))
                .debug(options)
                .open()
                .unwrap(),
        };
        return Some(Checked::new(kfd));
    }
    if *probe.debug_options() != options {
        eprintln!("{test}: skipped: the process's device was opened with other debugging switches");
        return None;
    }
    Some(probe)
}

/// The checked-in code object `tests/fixtures/code_objects/{stem}-{target}.elf` (or `.co`), if
/// one is built for `target`.
pub fn code_object_for(stem: &str, target: &str) -> Option<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/code_objects");
    ["elf", "co"]
        .iter()
        .map(|ext| dir.join(format!("{stem}-{target}.{ext}")))
        .find(|p| p.exists())
        .and_then(|p| std::fs::read(p).ok())
}

/// `stem`'s checked-in code object for `gpu`'s target, loaded on it (after [`under_test`] checked
/// that one is built for the target).
pub fn load_for(gpu: &kfdrt::Gpu, stem: &str) -> kfdrt::CodeObject {
    let target = &gpu.info().gfx_target;
    let elf = code_object_for(stem, target)
        .unwrap_or_else(|| panic!("no {stem} code object is built for {target}"));
    gpu.load_code_object(&elf)
        .unwrap_or_else(|e| panic!("loading the {stem} code object for {target}: {e}"))
}

/// A fresh emulated device (checked for leaks when it drops).
pub fn emulated(preset: Preset, gpus: usize) -> Checked {
    emulated_with(EmuConfig::new(preset, gpus))
}

/// A fresh emulated device with `config` (checked for leaks when it drops).
pub fn emulated_with(config: EmuConfig) -> Checked {
    match Kfd::builder().emulated(config).open() {
        Ok(k) => Checked::new(k),
        Err(e) => panic!("cannot create an emulated device: {e}"),
    }
}

/// `/dev/kfd`, or `None` after printing why the test is skipped.
pub fn hardware_or_skip(test: &str) -> Option<Kfd> {
    if !kfd_sys::DevKfd::present() {
        eprintln!("{test}: skipped: /dev/kfd is absent (no AMD GPU on this machine)");
        return None;
    }
    match Kfd::builder().hardware().open() {
        Ok(k) => Some(k),
        Err(e) => {
            eprintln!("{test}: skipped: {e}");
            None
        }
    }
}

/// A raw end-of-pipe RELEASE_MEM writing `data` (32 bits) to `addr` with the cache actions
/// `cache_action`, and raising interrupt `int_ctxid` when it is `Some`.
pub fn release_mem(
    addr: u64,
    data: u32,
    cache_action: u32,
    int_ctxid: Option<u32>,
) -> pm4::Pm4Packet {
    pm4::Pm4Packet::ReleaseMem {
        event_type: pm4::event::CACHE_FLUSH_AND_INV_TS,
        event_index: 5,
        cache_action,
        dst_sel: 0,
        int_sel: if int_ctxid.is_some() {
            pm4::int_sel::SEND_INT_ON_CONFIRM
        } else {
            pm4::int_sel::NONE
        },
        data_sel: pm4::data_sel::DATA32,
        addr,
        data: u64::from(data),
        int_ctxid: int_ctxid.unwrap_or(0),
    }
}

/// Submits raw PM4 packets.
pub fn pm4_submit(
    q: &kfdrt::Pm4Queue,
    packets: &[pm4::Pm4Packet],
    timeout: std::time::Duration,
) -> kfdrt::Result<u64> {
    // SAFETY: every address the tests' packets name is a buffer the test keeps until
    // the packets have run (it waits with `finish` or on what they signal), or an address
    // chosen to fault.
    unsafe { q.submit(packets, timeout) }
}

/// Submits raw SDMA packets.
pub fn sdma_submit(
    q: &kfdrt::SdmaQueue,
    packets: &[sdma::SdmaPacket],
    timeout: std::time::Duration,
) -> kfdrt::Result<u64> {
    // SAFETY: as `pm4_submit`.
    unsafe { q.submit(packets, timeout) }
}

/// A dispatch with raw kernel arguments.
pub fn raw_dispatch<'a>(
    kernel: &'a kfdrt::Kernel,
    grid: u32,
    workgroup: u16,
    args: &'a [u8],
) -> kfdrt::Dispatch<'a> {
    // SAFETY: the addresses in every test's arguments are buffers the test keeps until it has
    // waited for the dispatch (or the queue is gone), or addresses chosen to fault.
    unsafe { kfdrt::Dispatch::linear(kernel, grid, workgroup).with_raw_args(args) }
}

/// Maps `len` fresh private read-write bytes exactly at `addr`, or `None` if anything is
/// mapped there (nothing is replaced).
pub fn map_anonymous_at(addr: u64, len: usize) -> Option<*mut u8> {
    // SAFETY: MAP_FIXED_NOREPLACE maps only if nothing is there, so nothing is replaced.
    let p = unsafe {
        libc::mmap(
            addr as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    (p as u64 == addr).then_some(p.cast())
}

/// Anonymous process memory (private, read-write, page aligned), unmapped on drop: what SVM
/// ranges and userptr registrations are made of.
pub struct HostPages(pub *mut u8, pub usize);

impl HostPages {
    /// `len` fresh bytes, placed far below where the kernel puts other mappings (it searches
    /// top-down from the mmap base), so that a hole a test makes in them is not taken by
    /// another thread's small mapping (a new thread's signal stack) before the test maps it
    /// again.
    pub fn new(len: usize) -> HostPages {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        const LOW: u64 = 0x1000_0000_0000;
        let span = (len as u64 + (1 << 21)) & !((1 << 21) - 1);
        for _ in 0..64 {
            let hint = LOW + NEXT.fetch_add(span, std::sync::atomic::Ordering::Relaxed);
            if let Some(p) = map_anonymous_at(hint, len) {
                return HostPages(p, len);
            }
        }
        panic!("no room for {len} bytes of test memory near {LOW:#x}");
    }

    /// The first byte's address.
    pub fn addr(&self) -> u64 {
        self.0 as u64
    }

    /// A copy of the contents.
    pub fn bytes(&self) -> Vec<u8> {
        // SAFETY: reading the mapping, which nothing writes concurrently at this point.
        unsafe { std::slice::from_raw_parts(self.0, self.1) }.to_vec()
    }
}

impl Drop for HostPages {
    fn drop(&mut self) {
        // SAFETY: unmapping what `new` mapped (parts already unmapped are no error).
        unsafe { libc::munmap(self.0.cast(), self.1) };
    }
}

/// Publishes `p` on `queue` the way a correct producer does (body, then the header with
/// release; the processor starts on a valid header), bypassing kfdrt's dispatch API and its
/// checks. Returns the packet's index.
pub fn raw_publish(queue: &kfdrt::AqlQueue, p: &aql::Packet) -> u64 {
    use std::sync::atomic::{AtomicU32, Ordering};
    // SAFETY: the amd_queue_t and the ring are live memory owned by `queue`.
    let q = unsafe { &*(queue.amd_queue_address() as *const aql::AmdQueue) };
    let id = q.write_dispatch_id.fetch_add(1, Ordering::AcqRel);
    let slot = (queue.ring_address() + (id % u64::from(queue.size())) * 64) as *const AtomicU32;
    let d = p.encode();
    for (i, w) in d.iter().enumerate().skip(1) {
        // SAFETY: dwords of the reserved slot.
        unsafe { &*slot.add(i) }.store(*w, Ordering::Relaxed);
    }
    // SAFETY: dword 0 of the reserved slot.
    unsafe { &*slot }.store(d[0], Ordering::Release);
    id
}

/// An emulated kernel whose every work-group reads an address no GPU maps: a page fault.
pub fn page_faulting_kernel(gpu: &kfdrt::Gpu) -> kfdrt::Kernel {
    gpu.emulated_kernel(
        "fault",
        0,
        std::sync::Arc::new(
            |wg: &kfdrt::emu::WorkGroup<'_>| -> Result<(), kfdrt::emu::GpuFault> {
                wg.mem.read_u32(0xDEAD_0000)?;
                Ok(())
            },
        ),
    )
    .unwrap()
}

/// Maps `len` bytes of the render node `minor` at `offset` (what `GEM_MMAP` gave a GEM object)
/// for the CPU, read-write and shared, as libdrm's `amdgpu_bo_cpu_map` does. The caller unmaps
/// it with the driver's `munmap`.
pub fn map_render_node(kfd: &Kfd, minor: u32, offset: u64, len: usize) -> *mut std::ffi::c_void {
    use kfd_sys::{MapSource, Node};
    // SAFETY: a new shared mapping at an address the kernel picks (no MAP_FIXED): nothing
    // existing is replaced.
    unsafe {
        kfd.driver().mmap(
            MapSource::File(Node::Render(minor)),
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            offset,
        )
    }
    .unwrap()
}
