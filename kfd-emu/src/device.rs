//! Per-GPU state of the emulated device.

use crate::config::{GpuParams, Platform};
use crate::memfd::SharedMem;
use crate::vm::GpuVm;
use kfd_sys::Errno;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Base of the LDS aperture of flat addresses, the same for every GPU of a process
/// (`MAKE_LDS_APP_BASE_V9`).
pub(crate) const LDS_APERTURE_BASE: u64 = 1 << 48;
/// Base of the scratch (private) aperture of flat addresses (`MAKE_SCRATCH_APP_BASE_V9`).
pub(crate) const SCRATCH_APERTURE_BASE: u64 = 2 << 48;

/// The apertures of GPU `gpu_id` in KFD's gfx9+ layout (`kfd_init_apertures_v9`): the same LDS
/// and scratch apertures for every GPU, in the non-canonical high range the shaders'
/// SH_MEM_BASES point at; GPUVM covering all of user space (GPU VA = host VA). What
/// `GET_PROCESS_APERTURES_NEW` and the debugger's device snapshot report.
pub(crate) fn process_apertures(gpu_id: u32) -> kfd_sys::bindings::kfd_process_device_apertures {
    kfd_sys::bindings::kfd_process_device_apertures {
        lds_base: LDS_APERTURE_BASE,
        lds_limit: LDS_APERTURE_BASE | 0xFFFF_FFFF,
        scratch_base: SCRATCH_APERTURE_BASE,
        scratch_limit: SCRATCH_APERTURE_BASE | 0xFFFF_FFFF,
        gpuvm_base: 0x1_0000,
        gpuvm_limit: 0x0000_7FFF_FFFF_FFFF,
        gpu_id,
        pad: 0,
    }
}

/// The first render-node minor of emulated GPUs.
pub const FIRST_RENDER_MINOR: u32 = 128;

/// KFD mmap offset types (`KFD_MMAP_TYPE_*`, bits 62-63) and the GPU id field (bits 46-61).
pub(crate) const MMAP_TYPE_SHIFT: u32 = 62;
pub(crate) const MMAP_TYPE_DOORBELL: u64 = 3 << MMAP_TYPE_SHIFT;
pub(crate) const MMAP_TYPE_MMIO: u64 = 1 << MMAP_TYPE_SHIFT;
pub(crate) const MMAP_GPU_ID_SHIFT: u32 = 46;
/// Bytes of doorbells per process per GPU: 1024 doorbells of 8 bytes, two pages.
pub(crate) const DOORBELL_SLICE: u64 = 8192;

/// The process's doorbell slice on a kernel of `page_size` pages
/// (`kfd_doorbell_process_slice`: `roundup(doorbell_size * KFD_MAX_NUM_OF_QUEUES_PER_PROCESS,
/// PAGE_SIZE)`, 8 KiB of doorbells).
pub(crate) fn doorbell_slice(page_size: u64) -> u64 {
    DOORBELL_SLICE.next_multiple_of(page_size.max(1))
}
/// What the MMIO-remap page's HDP_MEM_FLUSH_CNTL holds between flushes in the emulator: any
/// store (amdgpu writes 0, HIP and kfdtest 1) replaces it, which is how a flush is noticed.
const HDP_IDLE: u32 = 0xFFFF_FFFF;

pub(crate) struct GpuState {
    pub(crate) index: usize,
    pub(crate) gpu_id: u32,
    pub(crate) params: GpuParams,
    pub(crate) render_minor: u32,
    pub(crate) vm: GpuVm,
    pub(crate) vram_used: AtomicU64,
    pub(crate) visible_vram_used: AtomicU64,
    pub(crate) vm_acquired: AtomicBool,
    /// `SET_SCRATCH_BACKING_VA`'s value (SH_HIDDEN_PRIVATE_BASE, 64 KiB units).
    pub(crate) scratch_backing_va: AtomicU64,
    /// `SET_TRAP_HANDLER`'s trap base and trap memory addresses.
    pub(crate) trap_handler_tba: AtomicU64,
    pub(crate) trap_handler_tma: AtomicU64,
    pub(crate) doorbells: SharedMem,
    pub(crate) mmio: SharedMem,
    /// Bumped on every doorbell hint; processors waiting for work sleep on the condvar, and
    /// only then does a hint take the lock (so submission stays cheap while they spin).
    wake_generation: AtomicU64,
    sleepers: AtomicU32,
    wake: Mutex<()>,
    wake_cv: Condvar,
    /// Bumped by every wake-up that is not a doorbell hint (a queue enabled or destroyed, an
    /// exception, the watcher seeing a change).
    rung_generation: AtomicU64,
    /// Doorbell hints received: counted with a load and a store, not a read-modify-write, so
    /// two hints at the same instant may count once. A read-modify-write here would make
    /// every submission wait for its packet's stores to reach the cache (about 7 ns of a
    /// 120 ns dispatch); the count only tells whether hints arrive.
    hints: AtomicU64,
    /// Deep sleeps its processors began.
    pub(crate) deep_sleeps: AtomicU64,
    /// The address watch its dispatches check.
    pub(crate) watch: crate::watch::WatchState,
    /// The emulator's sanitizer (one for all its GPUs).
    pub(crate) sanitizer: std::sync::Arc<crate::sanitize::SanitizerState>,
    /// Where its running waves note their state when a hang report asks.
    pub(crate) probe: std::sync::Arc<kfd_emu_isa::WaveProbe>,
    /// Recent wave errors of machine-code dispatches, with their code.
    pub(crate) fault_log: crate::fault_log::FaultLog,
    /// The CP's arbitration between the GPU's queues by priority.
    pub(crate) arbiter: crate::arbiter::PipeArbiter,
    /// The GPU's global wave sync resources, which waves of the queue holding them reach.
    pub(crate) gws: std::sync::Arc<kfd_emu_isa::gws::Gws>,
    /// Processors in a deep sleep, woken queue by queue.
    pub(crate) deep: crate::wake::DeepSleepers,
    /// Device exceptions raised so far (page faults, engine exceptions): each evicts the queues
    /// created before it.
    exceptions: AtomicU64,
    /// A fault evicted the process's queues on this GPU for good (`kfd_dqm_evict_pasid` with no
    /// restore to follow): queues created from now on are created evicted.
    faulted: AtomicBool,
    /// The strict personality's detectors are on.
    pub(crate) strict: bool,
    /// The host around the GPU.
    pub(crate) platform: Platform,
    /// This GPU in the HDP model (emulator instance and GPU index).
    pub(crate) hdp_owner: u64,
    /// Slots of the client's doorbell mappings trapped while this GPU sleeps
    /// ([`crate::doorbell_trap`]).
    pub(crate) doorbell_traps: Mutex<Vec<usize>>,
    /// What the instruction cache holds (strict mode's stale-fetch detector).
    pub(crate) icache: crate::icache::InstructionCache,
    /// Machine code decoded for the wave interpreter, shared by every dispatch on this GPU;
    /// like the instruction cache it stands for, it is emptied only by an invalidate. `None`
    /// for a target the interpreter does not run (its dispatches of machine code fail with an
    /// illegal-instruction queue error).
    pub(crate) code: Option<std::sync::Arc<kfd_emu_isa::CodeCache>>,
    /// Dispatches that fetched code changed since the last instruction-cache invalidate.
    pub(crate) stale_code_fetches: AtomicU64,
    /// Descriptors of this render node opened by the process itself (see
    /// `Emulator::attach_render_fd`), and which open file each one is.
    render_files: Mutex<RenderFiles>,
}

/// Open files of a render node, as KFD tells them apart: `ACQUIRE_VM` binds the GPU's VM to one
/// file, and any descriptor of that file (a dup) may repeat it; another file gets EBUSY.
#[derive(Default)]
struct RenderFiles {
    /// Descriptor -> file id (file 0 is the emulator's own `render_fd`).
    fds: std::collections::HashMap<i32, u64>,
    next_file: u64,
    /// Whether `open_render_node` has handed out the emulator's own descriptor.
    own_opened: bool,
    /// The file the VM was acquired with.
    acquired: Option<u64>,
}

/// The interpreter's target for a GPU of `gfx_target_version`, if it runs that one.
fn interpreter_target(gfx_target_version: u32) -> Option<kfd_emu_isa::Target> {
    match gfx_target_version {
        90010 => Some(kfd_emu_isa::Target::Gfx90a),
        90400..=90402 => Some(kfd_emu_isa::Target::Gfx942),
        110000..=110002 => Some(kfd_emu_isa::Target::Gfx1100),
        _ => None,
    }
}

impl GpuState {
    pub(crate) fn new(
        index: usize,
        params: GpuParams,
        platform: Platform,
        strict: bool,
        emulator_id: u64,
    ) -> Result<GpuState, Errno> {
        let code = interpreter_target(params.gfx_target_version)
            .map(|t| std::sync::Arc::new(kfd_emu_isa::CodeCache::new(t)));
        let mmio = SharedMem::new(4096)?;
        // SAFETY: the first word of the fresh 4 KiB MMIO page, 4-byte aligned.
        unsafe { &*(mmio.host() as *const AtomicU32) }.store(HDP_IDLE, Ordering::Release);
        Ok(GpuState {
            index,
            // KFD derives ids from a hash of the device; any stable non-zero 16-bit value will do.
            gpu_id: 0xA1B0 + index as u32 * 0x0F13,
            params,
            render_minor: FIRST_RENDER_MINOR + index as u32,
            vm: GpuVm::new(strict),
            vram_used: AtomicU64::new(0),
            visible_vram_used: AtomicU64::new(0),
            vm_acquired: AtomicBool::new(false),
            scratch_backing_va: AtomicU64::new(0),
            trap_handler_tba: AtomicU64::new(0),
            trap_handler_tma: AtomicU64::new(0),
            doorbells: SharedMem::new(doorbell_slice(platform.page_size))?,
            mmio,
            hdp_owner: crate::segv::owner(emulator_id, index),
            wake_generation: AtomicU64::new(0),
            sleepers: AtomicU32::new(0),
            wake: Mutex::new(()),
            wake_cv: Condvar::new(),
            rung_generation: AtomicU64::new(0),
            hints: AtomicU64::new(0),
            deep_sleeps: AtomicU64::new(0),
            watch: Default::default(),
            sanitizer: Default::default(),
            probe: Default::default(),
            deep: crate::wake::DeepSleepers::default(),
            fault_log: Default::default(),
            arbiter: Default::default(),
            gws: Default::default(),
            exceptions: AtomicU64::new(0),
            faulted: AtomicBool::new(false),
            strict,
            platform,
            doorbell_traps: Mutex::new(Vec::new()),
            icache: Default::default(),
            code,
            stale_code_fetches: AtomicU64::new(0),
            render_files: Mutex::new(RenderFiles::default()),
        })
    }

    /// Applies an HDP flush the CPU asked for through the MMIO-remap page since the last look
    /// (strict mode): any store to `HDP_MEM_FLUSH_CNTL` (offset 0) flushes, as on hardware,
    /// whatever the value. Called by the packet processors before each packet, so a flush the
    /// CPU wrote before ringing the doorbell is applied before the GPU reads anything.
    pub(crate) fn poll_hdp_flush(&self) {
        if !self.strict {
            return;
        }
        // SAFETY: the first word of the MMIO page, which lives as long as `self`.
        let reg = unsafe { &*(self.mmio.host() as *const AtomicU32) };
        if reg.load(Ordering::Acquire) != HDP_IDLE
            && reg.swap(HDP_IDLE, Ordering::AcqRel) != HDP_IDLE
        {
            crate::hdp::flush(self.hdp_owner);
        }
    }

    /// A kernel's first instruction fetch at `entry` (strict mode): reports code that changed
    /// since the instruction cache last fetched it without an invalidate in between.
    pub(crate) fn fetch_code(&self, entry: u64) {
        if self.strict && self.icache.fetch_is_stale(&self.vm, entry) {
            self.stale_code_fetches.fetch_add(1, Ordering::Relaxed);
            log::error!(
                "kfd-emu: GPU {:#x}: the kernel at {entry:#x} was rewritten since the instruction \
                 cache fetched it, with no invalidate in between: a GPU may run the old code",
                self.gpu_id
            );
        }
    }

    /// The instruction-cache invalidate of an `ACQUIRE_MEM` (`SH_ICACHE` on gfx9, `GLI_INV`
    /// on gfx10+): code written since is fetched anew.
    pub(crate) fn invalidate_icache(&self) {
        self.icache.invalidate();
        if let Some(code) = &self.code {
            code.invalidate();
        }
    }

    /// Device exceptions raised so far.
    pub(crate) fn exceptions(&self) -> u64 {
        self.exceptions.load(Ordering::Acquire)
    }

    /// Marks the GPU faulted for the rest of the process (see [`GpuState::faulted`]), then
    /// raises the exception.
    pub(crate) fn raise_fault(&self) {
        self.faulted.store(true, Ordering::Release);
        self.raise_exception();
    }

    /// Whether float atomics to fine-grained host memory are dropped: gfx90a reaches it over
    /// PCIe, where an MI200's FP atomics do not happen (modelled in strict mode only).
    pub(crate) fn drops_host_fp_atomics(&self, strict: bool) -> bool {
        strict && self.params.gfx_target_version == 90010
    }

    /// What happens to this GPU's atomics on system memory (GTT, userptr, SVM system pages)
    /// that is fine-grained (`fine`) or not.
    pub(crate) fn host_atomics(&self, fine: bool, strict: bool) -> crate::vm::HostAtomics {
        if !self.platform.pcie_atomics {
            crate::vm::HostAtomics::Dropped
        } else if fine && self.drops_host_fp_atomics(strict) {
            crate::vm::HostAtomics::FloatDropped
        } else {
            crate::vm::HostAtomics::Performed
        }
    }

    /// Whether a fault evicted the process's queues on this GPU for good.
    pub(crate) fn faulted(&self) -> bool {
        self.faulted.load(Ordering::Acquire)
    }

    /// Counts a device exception (evicting every queue that exists now) and wakes the
    /// processors so they notice.
    pub(crate) fn raise_exception(&self) {
        self.exceptions.fetch_add(1, Ordering::AcqRel);
        self.doorbell_rung();
    }

    /// The fake descriptor `open_render_node` hands out for this GPU.
    pub(crate) fn render_fd(&self) -> i32 {
        10_000 + self.render_minor as i32
    }

    /// An open of the render node through the driver seam. Every open of
    /// `/dev/dri/renderD<n>` is a new `drm_file`: the first gets the emulator's own descriptor,
    /// each later one a new (fake, above it) descriptor of a new file, so that a second runtime
    /// in the process acquiring the VM with it is refused as the driver refuses it.
    pub(crate) fn open_render(&self) -> i32 {
        let mut files = self.render_files();
        if !files.own_opened {
            files.own_opened = true;
            return self.render_fd();
        }
        files.next_file += 1;
        let file = files.next_file;
        let fd = 100_000 + 1_000 * self.render_minor as i32 + (file % 1_000) as i32;
        files.fds.insert(fd, file);
        fd
    }

    fn render_files(&self) -> std::sync::MutexGuard<'_, RenderFiles> {
        self.render_files.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `ACQUIRE_VM` with descriptor `fd`: EINVAL if it is not this GPU's render node, EBUSY if
    /// the VM is already bound to another open file of it (`kfd_process_device_init_vm`).
    pub(crate) fn acquire_vm(&self, fd: i32) -> Result<(), Errno> {
        let mut files = self.render_files();
        let file = if fd == self.render_fd() {
            0
        } else {
            *files.fds.get(&fd).ok_or(Errno::EINVAL)?
        };
        match files.acquired {
            Some(f) if f != file => Err(Errno::EBUSY),
            _ => {
                files.acquired = Some(file);
                self.vm_acquired.store(true, Ordering::Release);
                Ok(())
            }
        }
    }

    /// Records `fd` as a new open file of this render node, or, with `dup_of`, as another
    /// descriptor of the file `dup_of` is.
    pub(crate) fn attach_render_fd(&self, fd: i32, dup_of: Option<i32>) {
        let mut files = self.render_files();
        let file = match dup_of.and_then(|d| files.fds.get(&d).copied()) {
            Some(f) => f,
            None => {
                files.next_file += 1;
                files.next_file
            }
        };
        files.fds.insert(fd, file);
    }

    pub(crate) fn detach_render_fd(&self, fd: i32) {
        self.render_files().fds.remove(&fd);
    }

    /// The KFD mmap offset of this GPU's doorbell pages.
    pub(crate) fn doorbell_mmap_offset(&self) -> u64 {
        MMAP_TYPE_DOORBELL | u64::from(self.gpu_id) << MMAP_GPU_ID_SHIFT
    }

    /// The KFD mmap offset of this GPU's MMIO remap page.
    pub(crate) fn mmio_mmap_offset(&self) -> u64 {
        MMAP_TYPE_MMIO | u64::from(self.gpu_id) << MMAP_GPU_ID_SHIFT
    }

    /// Reads doorbell `index` (8-byte doorbells). SeqCst: a sleeper reads it after registering
    /// (see [`GpuState::doorbell_hinted`]), which the memory model orders only for a SeqCst load
    /// (on x86-64 it is the same instruction as an acquire load).
    pub(crate) fn doorbell(&self, index: u32) -> u64 {
        let p = self.doorbells.host() as *const AtomicU64;
        // SAFETY: `index` < 1024 (queue creation hands out no more), inside the 8 KiB mapping.
        unsafe { (*p.add(index as usize % 1024)).load(Ordering::SeqCst) }
    }

    /// Wakes every processor of the GPU: something other than a doorbell may have given any of
    /// them work (or told it to stop).
    pub(crate) fn doorbell_rung(&self) {
        self.rung_generation.fetch_add(1, Ordering::SeqCst);
        self.wake_light_sleepers();
        self.deep.wake_all();
    }

    /// The doorbell watcher saw the queue with doorbell `doorbell_index` given work (its
    /// doorbell or write pointer moved) by a client that gave no hint: wakes that queue's
    /// processor if it sleeps deeply. Not the GPU's other processors: a busy queue beside idle
    /// ones would otherwise wake them at every look, keep them from their deep sleep, and on a
    /// 2-core host cost each of the busy queue's submissions several times its time.
    pub(crate) fn queue_moved(&self, doorbell_index: u32) {
        self.deep.wake_queue(doorbell_index);
    }

    /// A runtime rang a doorbell and said so ([`kfd_sys::Driver::doorbell_hint`]): wakes the
    /// processors sleeping lightly, and of those sleeping deeply the ones whose doorbell moved.
    pub(crate) fn doorbell_hinted(&self) {
        let hints = self.hints.load(Ordering::Relaxed);
        self.hints.store(hints.wrapping_add(1), Ordering::Relaxed);
        // The runtime's doorbell store comes before this fence and the loads of who sleeps after
        // it; a sleeper registers (a SeqCst read-modify-write) before it looks at its doorbell
        // again (`wait_for_hint`, `DeepSleepers::sleep`). So either a sleeper is seen here, or
        // it sees the doorbell move and does not sleep. With nobody asleep, a hint is this fence
        // and two loads: no read-modify-write on a line every idle processor reads.
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::Relaxed) > 0 {
            self.wake_light_sleepers();
        }
        self.deep.wake_moved(|i| self.doorbell(i));
    }

    /// Doorbell hints received so far.
    pub(crate) fn hints(&self) -> u64 {
        self.hints.load(Ordering::Relaxed)
    }

    fn wake_light_sleepers(&self) {
        // SeqCst pairs with `wait_for_hint`: either the sleeper sees the new generation, or we
        // see the sleeper and notify it under the lock.
        self.wake_generation.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = self.wake.lock().unwrap_or_else(|p| p.into_inner());
            self.wake_cv.notify_all();
        }
    }

    /// What a processor notes before it looks for work, so that a sleep after finding none
    /// ends on anything that happened since: `doorbell_index` is its queue's doorbell.
    pub(crate) fn wake_snapshot(&self, doorbell_index: Option<u32>) -> WakeSnapshot {
        WakeSnapshot {
            generation: self.wake_generation.load(Ordering::SeqCst),
            rung: self.rung_generation.load(Ordering::SeqCst),
            doorbell: doorbell_index.map(|i| (i, self.doorbell(i))),
        }
    }

    /// [`GpuState::wake_snapshot`] for a processor about to look for work, which it passes to
    /// [`crate::engine::backoff::idle`]: nothing when it spin-polls, since it then never
    /// sleeps (and reading the lines every doorbell hint writes would only slow it down).
    pub(crate) fn idle_snapshot(
        &self,
        spin_poll: bool,
        doorbell_index: Option<u32>,
    ) -> WakeSnapshot {
        if spin_poll {
            return WakeSnapshot {
                generation: 0,
                rung: 0,
                doorbell: None,
            };
        }
        self.wake_snapshot(doorbell_index)
    }

    /// A processor of this GPU goes to sleep deeply: the client's next doorbell store faults
    /// and wakes it ([`crate::doorbell_trap`]). Returns whether the GPU has trapped mappings
    /// (the sleeper then waits on the trap futex).
    pub(crate) fn arm_doorbell_traps(&self) -> bool {
        let slots = self
            .doorbell_traps
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        crate::doorbell_trap::arm(&slots);
        !slots.is_empty()
    }

    /// Whether nothing that would wake a deep sleeper with `snap` happened since it was taken.
    pub(crate) fn unchanged_since(&self, snap: &WakeSnapshot) -> bool {
        self.rung_generation.load(Ordering::SeqCst) == snap.rung
            && snap.doorbell.is_none_or(|(i, v)| self.doorbell(i) == v)
    }

    /// Sleeps until a wake-up newer than `snap` or `timeout`. A sleeper with a doorbell
    /// (`snap.doorbell`) does not sleep if it moved: a doorbell hint that found nobody asleep
    /// wakes nobody (see [`GpuState::doorbell_hinted`]), so the doorbell is looked at again
    /// once this thread counts as asleep.
    pub(crate) fn wait_for_hint(&self, snap: &WakeSnapshot, timeout: Duration) {
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let g = self.wake.lock().unwrap_or_else(|p| p.into_inner());
        let doorbell_still = snap.doorbell.is_none_or(|(i, v)| self.doorbell(i) == v);
        if self.wake_generation.load(Ordering::SeqCst) == snap.generation && doorbell_still {
            let _ = self.wake_cv.wait_timeout(g, timeout);
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What [`GpuState::wake_snapshot`] noted.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WakeSnapshot {
    /// Wake-ups of any kind so far (light sleeps end on a newer one).
    pub(crate) generation: u64,
    /// Wake-ups other than doorbell hints so far.
    pub(crate) rung: u64,
    /// The queue's doorbell and its value.
    pub(crate) doorbell: Option<(u32, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Preset;
    use std::sync::Arc;

    fn gpu() -> Arc<GpuState> {
        Arc::new(
            GpuState::new(0, Preset::Gfx90a.params(), Default::default(), false, 1)
                .expect("GPU state"),
        )
    }

    fn ring_doorbell(gpu: &GpuState, index: u32, value: u64) {
        let p = gpu.doorbells.host() as *const AtomicU64;
        // SAFETY: doorbell `index` < 1024 inside the GPU's 8 KiB doorbell page.
        unsafe { &*p.add(index as usize) }.store(value, Ordering::SeqCst);
    }

    /// Runs `wait_for_hint` on another thread and says whether it returned within `within`.
    fn returns_within(gpu: &Arc<GpuState>, snap: WakeSnapshot, within: Duration) -> bool {
        let (tx, rx) = std::sync::mpsc::channel();
        let g = gpu.clone();
        std::thread::spawn(move || {
            g.wait_for_hint(&snap, Duration::from_secs(60));
            let _ = tx.send(());
        });
        rx.recv_timeout(within).is_ok()
    }

    /// A hint that finds nobody asleep wakes nobody; a processor that looked for work before
    /// the doorbell moved, and goes to sleep after the hint, must see the doorbell itself.
    #[test]
    fn a_sleeper_late_for_a_hint_sees_its_doorbell_move() {
        let gpu = gpu();
        let snap = gpu.wake_snapshot(Some(3));
        ring_doorbell(&gpu, 3, 1);
        gpu.doorbell_hinted();
        assert!(
            returns_within(&gpu, snap, Duration::from_secs(20)),
            "slept through a doorbell rung before it went to sleep"
        );
    }

    /// A hint for a sleeper already asleep wakes it, whichever doorbell moved.
    #[test]
    fn a_hint_wakes_a_light_sleeper() {
        let gpu = gpu();
        let snap = gpu.wake_snapshot(None);
        let (tx, rx) = std::sync::mpsc::channel();
        let g = gpu.clone();
        std::thread::spawn(move || {
            g.wait_for_hint(&snap, Duration::from_secs(60));
            let _ = tx.send(());
        });
        while gpu.sleepers.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        ring_doorbell(&gpu, 5, 1);
        gpu.doorbell_hinted();
        assert!(
            rx.recv_timeout(Duration::from_secs(20)).is_ok(),
            "a light sleeper slept through a hint"
        );
    }
}
