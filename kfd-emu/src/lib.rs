//! kfd-emu: an emulated KFD device, in process, implementing kfdrt's [`kfd_sys::Driver`] seam.
//!
//! It answers amdkfd's ioctls with the driver's errnos and runs the GPU's AQL, PM4 and SDMA
//! packet processors, a thread per queue. Machine code runs on the wave interpreter
//! ([`kfd_emu_isa`]), every access checked by the GPU's page table; a test may bind a host
//! function to a kernel object instead ([`Emulator::bind_kernel`]). GPU VA equals host VA, and
//! CPU and GPU share the pages. The render nodes answer libdrm ([`drm`]), so unmodified ROCm and
//! HIP programs run on it through the `kfd-emu-preload` interposer. Which module does what is in
//! the repository's `docs/architecture.md` ("Inside kfd-emu").
//!
//! [`Emulator::new`] takes an [`EmuConfig`]: [`EmuConfig::new`] with a [`Preset`] and a GPU
//! count, or [`EmuConfig::from_env`], which reads the `KFDRT_EMU_*` variables ([`PRESET_ENV`],
//! [`STRICT_ENV`] and the other `*_ENV` constants). Its fields set the KFD ABI version, the
//! host ([`Platform`]) and strict mode ([`EmuConfig::strict`], on unless `KFDRT_EMU_STRICT=0`).
//! Tests inject failures ([`Emulator::faults`]) and read counters ([`Emulator::stats`]).
//!
//! Besides memory, events, queues and topology it models the debugger's ABI (launch modes halt
//! and single step are accepted but not modelled), SVM, dma-buf, SDMA IBs submitted through the
//! render node ([`drm_cs`]), global wave sync (one queue per GPU), SMI events, module parameters
//! ([`Emulator::module_parameters`]) and queue priorities. More queues than the GPU has slots
//! all run at once (the hardware would time-slice them). An idle processor parks after 10 ms; a
//! doorbell hint, a watcher (within 8 ms) or, with [`EmuConfig::trap_doorbell_writes`], a store
//! to the write-protected doorbell wakes it (the `SIGSEGV` handler passes other faults on). An
//! exported buffer moves to a file of its own, and a write racing the export can be lost, where
//! the driver has no such window.
//!
//! # What it refuses, as the driver and the GPU do
//!
//! - `CREATE_QUEUE` as Linux 6.12+ checks it: ring, pointer pages, EOP and CWSR areas are each a
//!   whole GPU mapping of the size KFD expects ([`kfd_sys::queue_sizes`]), held by the live queue
//!   (unmapping one: EBUSY). Under MES (gfx1100) the write pointer's page must also be a GTT
//!   buffer of the queue's own GPU.
//! - Writes to memory allocated without `WRITABLE` fault; so does code outside `EXECUTABLE`.
//! - A page fault or an illegal PM4 or SDMA packet evicts the process's queues on that GPU for
//!   good (later ones are created evicted) and signals the memory-exception events; no
//!   completion signal is written. Bad AQL packets or arguments go to the queue's error signal.
//! - Interrupts set only signal events whose mailbox slot was written. AQL ordering is the
//!   spec's: a packet without the barrier bit runs alongside the dispatch before it, and a slot
//!   is read only once the write index passed it.
//! - Machine code starts as the CP starts it: the packet's geometry and segment sizes, the
//!   descriptor's enabled registers, the queue's scratch in the GPU's format, KFD's apertures. A
//!   dispatch needing more scratch asks the runtime (inactive signal, wave size) and waits. XCC
//!   `x` of a gfx942 uses the scratch moved up by `x * scratch_backing_memory_byte_size`, so a
//!   whole-device layout makes the later XCCs fault. An instruction the interpreter cannot run
//!   stops the queue with an illegal-instruction error naming the PC and its disassembly.
//! - Traps: with no handler, `s_trap` is stepped over and an exception halts the wave (its
//!   dispatch never completes). A handler with the runtime enabled runs; its `MSG_INTERRUPT`
//!   reaches the runtime through the CWSR header (lost if that is unreachable). A handler with
//!   no runtime enabled (ROCr 5.2.3) stops the queue with an exception code.
//! - One emulator is one process: a forked child's ioctls get EBADF and its mmaps EINVAL
//!   (dropping the emulator there leaves the parent's threads alone), and `ACQUIRE_VM` with a
//!   second render-node file (a second runtime) is EBUSY.
//! - A GPU hidden by the device cgroup ([`EmuConfig::cgroup_hidden_gpus`]) answers EPERM for its
//!   topology files, its render node does not open, and requests naming it find no GPU.
//! - [`Platform`]'s host traits act as its fields say. Not modelled: whether the CP needs PCIe
//!   atomics (its signal decrements still land) and KFD refusing GPUs that do; a virtual
//!   function's limits beyond its missing MMIO-remap page (counters, queues, scheduling); the
//!   slower access to VRAM moved to system memory for want of a peer path
//!   ([`EmuStats::vram_moved_to_system`]), P2PDMA and IOMMU checks, engine speeds (one for all);
//!   larger pages for SVM ranges and the HDP and doorbell traps, which keep the host's page.
//! - SDMA register polls other than the HDP flush are malformed packets: no registers exist.
//! - Memory requests get `kfd_chardev.c`'s answers (ENODEV before `ACQUIRE_VM`, ENOMEM for a
//!   handle the GPU does not know, `n_success` device by device) and amdgpu's limits: VRAM and
//!   visible VRAM, GTT, pinned memory, SDMA queue slots, mmap lengths, SDMA count widths.
//!
//! # Strict mode
//!
//! [`EmuConfig::strict`] catches mistakes a GPU does not report but punishes with wrong results:
//! a packet whose header was published before its body ([`EmuStats::torn_packets`]); a kernarg
//! segment not 16-byte aligned; a GPU read of host-visible VRAM the CPU wrote since the last HDP
//! flush ([`EmuStats::unflushed_vram_reads`]), or a system call writing such VRAM (EFAULT); code
//! rewritten since the instruction cache fetched it and not invalidated (on gfx10+ through GL1
//! and GL2: [`EmuStats::stale_code_fetches`]); a PM4 `RELEASE_MEM` telling the CPU of
//! dispatches with no L2 write-back since them ([`EmuStats::fences_before_writeback`]); on
//! several XCCs, PM4 dispatches whose XCCs' scratch overlaps ([`EmuStats::xcc_scratch_overlaps`])
//! and a `RELEASE_MEM` each XCC writes when its own share is done
//! ([`EmuStats::unjoined_xcc_fences`]). On gfx90a, float atomics to fine-grained host memory do
//! nothing, as an MI200's do over PCIe.
//!
//! # What it still forgives
//!
//! - Injected faults are gentler: a GPU reset keeps VRAM's contents (KFD reports them lost), and
//!   eviction or suspend stops queues at packet boundaries (a GPU preempts running waves).
//! - Memory is coherent. Not caught: a CPU read after an AQL agent-scope release, stale scalar
//!   cache, SDMA reading around the L2 (SDMA 5+ GCR requests are only counted,
//!   [`EmuStats::sdma_cache_requests`]), which lines a fence needed (any dispatch counts).
//! - New VRAM reads as zero. The instruction-cache model compares only a kernel's first 256 bytes.
//! - SDMA endian swaps are ignored (a LINEAR_SUB_WINDOW asking for one stops its queue), and so
//!   are TMZ and SDMA 6 cache-policy bits.
//! - A PM4 stream runs in step across XCCs: a packet runs once, after every XCC's share of the
//!   dispatches before it. A dispatch or IB predicated to some XCCs stops the queue. Emulated
//!   kernels use one XCC's layout. Where an NPS4 partition's VRAM lies is not modelled.
//! - Emulated kernels run their work-groups one after another; machine code runs on the host's
//!   cores (`KFDRT_EMU_WAVE_THREADS`), not one thread per CU.
//! - Float arithmetic is the host's IEEE (round to nearest, denormals kept; MODE changes
//!   nothing); transcendentals are exact where hardware is within an ulp. Images are linear at
//!   their pitch, whatever their tiling. On gfx1100, images and formatted buffer accesses stop
//!   the queue; `kfd-emu-isa`'s `COVERAGE.md` lists what else it decodes but does not run.
//! - A system-scope acquire flushes the HDP: inferred from HIP 5.2, not from a firmware document.
//! - Overlapping VA ranges are refused at allocation (EINVAL); amdgpu refuses them at mapping.
//! - The driver's own events page (the APU path) is not modelled; `F_GETFL` on a device
//!   descriptor (under the preload) does not reflect its open flags.
//! - SVM keeps the bytes in host memory: a prefetch moves nothing. GPU mappings follow `munmap`
//!   and `mprotect` when told ([`Emulator::host_unmapping`]; the preload does). An unreported
//!   unmapping (inside `free`) is seen only when an SVM request or allocation next looks there;
//!   until then a GPU access to it faults the emulator's process. XNACK retry faults are
//!   resolved once `SET_XNACK_MODE` turns them on (gfx90a, gfx942).
//! - `GET_TILE_CONFIG` and `GB_ADDR_CONFIG` report an MI210's value for every preset.
//! - ROCm's out-of-tree requests (IPC handles, 0x80 and up) get ENOTTY, as from a current kernel,
//!   so ROCm 5.2.3's `hipIpcGetMemHandle` fails as it does there.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod arbiter;
mod config;
mod debugger;
mod device;
mod dmabuf;
mod doorbell_trap;
pub mod drm;
pub mod drm_cs;
pub mod drm_gem;
mod engine;
mod events;
mod fault;
mod fault_log;
mod gfx_config;
mod hdp;
mod host_vma;
mod icache;
mod ioctl;
mod isa_memory;
mod kernel;
mod live;
mod memfd;
mod memory;
mod module_params;
mod pagesize;
mod queue;
mod sanitize;
mod segv;
mod smi;
mod stats;
mod svm;
mod topology;
mod user_access;
mod vm;
mod wake;
mod watch;
mod wave_state;

pub use config::{
    host_memory_bytes, EmuConfig, EmuError, GpuParams, Platform, Preset, GPUS_ENV, HIDDEN_GPUS_ENV,
    KFD_VERSION_ENV, PLATFORM_ENV, PRESET_ENV, SANITIZE_ENV, SPIN_ENV, STRICT_ENV,
    TRAP_DOORBELLS_ENV, WATCH_ENV, WATCH_READS_ENV, WAVE_THREADS_ENV,
};
pub use device::FIRST_RENDER_MINOR;
pub use engine::QueueErrorCode;
pub use fault::FaultInjector;
pub use fault_log::MachineFault;
pub use ioctl::OLDEST_VERSION as OLDEST_KFD_VERSION;
pub use kernel::{KernelFn, WorkGroup};
pub use kfd_emu_isa::sanitize::{self as sanitizer, Finding, FindingKind, OtherAccess};
pub use live::LiveObjects;
pub use pagesize::{classify as classify_pages, PageSizeStats};
pub use sanitize::Symbolizer;
pub use stats::EmuStats;
pub use vm::{GpuFault, GpuVm};

use device::GpuState;
use kfd_sys::{Driver, DriverKind, Errno, IoctlRequest, MapSource, Node};
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The emulated KFD device. Create it with [`Emulator::new`] and use it through the
/// [`Driver`] trait; dropping the last handle stops every thread it started.
pub struct Emulator {
    pub(crate) config: EmuConfig,
    pub(crate) gpus: Vec<Arc<GpuState>>,
    pub(crate) memory: memory::MemoryTable,
    pub(crate) events: Arc<events::EventTable>,
    pub(crate) queues: queue::QueueTable,
    pub(crate) debug: Arc<debugger::DebugState>,
    pub(crate) dmabufs: dmabuf::DmabufTable,
    pub(crate) svm: svm::SvmTable,
    pub(crate) gem: drm_gem::GemTable,
    pub(crate) cs: drm_cs::CsTable,
    pub(crate) kernels: Arc<kernel::KernelRegistry>,
    /// Shared with every queue's processor thread (its stall controls).
    pub(crate) faults: Arc<FaultInjector>,
    pub(crate) stats: Arc<stats::Counters>,
    pub(crate) topology: topology::TopologyTree,
    pub(crate) epoch: std::time::Instant,
    /// CPU mappings made through the driver seam (leak accounting).
    pub(crate) cpu_maps: live::CpuMaps,
    /// The doorbell watcher's state (its thread ends when the emulator drops).
    pub(crate) watch: Arc<engine::watcher::Watch>,
    /// This emulator, for what it hands out that must not keep it alive (the GPUs' retry-fault
    /// handlers).
    pub(crate) me: std::sync::Weak<Emulator>,
    /// The process that created the emulator, as KFD's `kfd_process` belongs to the process
    /// that opened `/dev/kfd`: a forked child's calls are refused (see [`Emulator::check_process`]).
    pub(crate) owner_pid: u32,
}

impl std::fmt::Debug for Emulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulator")
            .field("gpus", &self.gpus.len())
            .finish()
    }
}

impl Emulator {
    /// Creates an emulated device.
    pub fn new(config: EmuConfig) -> Result<Arc<Emulator>, EmuError> {
        if config.gpus.is_empty() || config.gpus.len() > 8 {
            return Err(EmuError::Config(format!(
                "{} GPUs (1 to 8 supported)",
                config.gpus.len()
            )));
        }
        let page = config.platform.page_size;
        let host = kfd_sys::host_page_size();
        if !page.is_power_of_two() || page < host || page > 64 << 10 {
            return Err(EmuError::Config(format!(
                "page size {page:#x} (a power of two from the host's {host:#x} to 64 KiB)"
            )));
        }
        let v = config.kfd_version;
        if v < OLDEST_KFD_VERSION || v > kfd_sys::KFD_ABI {
            return Err(EmuError::Config(format!(
                "KFD version {v} (the emulator models {OLDEST_KFD_VERSION} to {})",
                kfd_sys::KFD_ABI
            )));
        }
        let id = segv::next_emulator_id();
        let sanitizer = Arc::new(sanitize::SanitizerState::new(config.sanitize));
        let mut gpus = Vec::new();
        for (i, p) in config.gpus.iter().enumerate() {
            let mut g = GpuState::new(i, p.clone(), config.platform, config.strict, id)
                .map_err(EmuError::Host)?;
            g.sanitizer = sanitizer.clone();
            g.watch.set(&config.watch, config.watch_reads);
            gpus.push(Arc::new(g));
        }
        let topology = topology::TopologyTree::build(&config, &gpus);
        let faults = Arc::new(FaultInjector::default());
        let watch = Arc::new(engine::watcher::Watch::default());
        engine::watcher::spawn(watch.clone(), faults.clone()).map_err(|e| {
            EmuError::Host(Errno::from_raw(e.raw_os_error().unwrap_or(libc::EAGAIN)))
        })?;
        Ok(Arc::new_cyclic(|me| Emulator {
            me: me.clone(),
            owner_pid: std::process::id(),
            gpus,
            memory: memory::MemoryTable::default(),
            events: Arc::new(events::EventTable::default()),
            queues: queue::QueueTable::default(),
            debug: Default::default(),
            dmabufs: dmabuf::DmabufTable::default(),
            svm: svm::SvmTable::new(config.platform.page_size),
            gem: drm_gem::GemTable::default(),
            cs: drm_cs::CsTable::default(),
            kernels: Arc::new(kernel::KernelRegistry::default()),
            faults,
            stats: Arc::new(stats::Counters::default()),
            topology,
            epoch: std::time::Instant::now(),
            cpu_maps: live::CpuMaps::default(),
            watch,
            config,
        }))
    }

    /// The configuration.
    pub fn config(&self) -> &EmuConfig {
        &self.config
    }

    /// KFD ids of the GPUs, in node order.
    pub fn gpu_ids(&self) -> Vec<u32> {
        self.gpus.iter().map(|g| g.gpu_id).collect()
    }

    /// The GPU `gpu_id` names, if this process has it: one the device cgroup hides has no
    /// process device data (`kfd_init_apertures` skips it), so requests naming it find none.
    pub(crate) fn gpu(&self, gpu_id: u32) -> Option<&Arc<GpuState>> {
        self.process_gpus().find(|g| g.gpu_id == gpu_id)
    }

    /// The GPUs this process may use (all but those the device cgroup hides).
    pub(crate) fn process_gpus(&self) -> impl Iterator<Item = &Arc<GpuState>> {
        self.gpus
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.config.cgroup_hidden_gpus.contains(i))
            .map(|(_, g)| g)
    }

    /// Counters for tests.
    pub fn stats(&self) -> EmuStats {
        let per_gpu = |count: fn(&GpuState) -> u64| self.gpus.iter().map(|g| count(g)).sum();
        EmuStats {
            live_allocations: self.memory.live(),
            live_events: self.events.live(),
            live_queues: self.queues.live(),
            packets_run: self.stats.packets_run.load(Ordering::Acquire),
            torn_packets: self.stats.torn_packets.load(Ordering::Acquire),
            stale_code_fetches: per_gpu(|g| g.stale_code_fetches.load(Ordering::Acquire)),
            sdma_cache_requests: self.stats.sdma_cache_requests.load(Ordering::Acquire),
            unflushed_vram_reads: per_gpu(|g| g.vm.unflushed_reads.load(Ordering::Acquire)),
            machine_dispatches: self.stats.machine_dispatches.load(Ordering::Acquire),
            wave_instructions: self.stats.wave_instructions.load(Ordering::Acquire),
            scratch_requests: self.stats.scratch_requests.load(Ordering::Acquire),
            vram_moved_to_system: self.stats.vram_moved_to_system.load(Ordering::Acquire),
            sdma_xgmi_packets: self.stats.sdma_xgmi_packets.load(Ordering::Acquire),
            sdma_engine_packets: std::array::from_fn(|e| {
                self.stats.sdma_engine_packets[e].load(Ordering::Acquire)
            }),
            fences_before_writeback: self.stats.fences_before_writeback.load(Ordering::Acquire),
            xcc_scratch_overlaps: self.stats.xcc_scratch_overlaps.load(Ordering::Acquire),
            unjoined_xcc_fences: self.stats.unjoined_xcc_fences.load(Ordering::Acquire),
        }
    }

    /// What the client holds of the device: buffers, GPU mappings, CPU mappings made through
    /// [`Driver::mmap`] (by what they map), queues and events. A runtime that cleans up leaves
    /// all of them at zero once it has dropped. CPU mappings made around the driver seam (the
    /// preload's clients call `munmap` directly) are not seen.
    pub fn live_objects(&self) -> LiveObjects {
        use live::CpuMapKind as K;
        LiveObjects {
            allocations: self.memory.live(),
            gpu_mappings: self.memory.live_gpu_mappings(),
            buffer_cpu_mappings: self.cpu_maps.count(K::Buffer),
            doorbell_mappings: self.cpu_maps.count(K::Doorbell),
            mmio_mappings: self.cpu_maps.count(K::Mmio),
            anonymous_mappings: self.cpu_maps.count(K::Anonymous),
            queues: self.queues.live(),
            events: self.events.live(),
        }
    }

    /// Resets GPU `gpu_id` as amdgpu's recovery does after a hang (`ecc`: after an uncorrectable
    /// ECC error): every queue the process has on it stops for good (queues created afterwards
    /// run), and the process's hardware-exception events report a whole-GPU reset with memory
    /// lost (`kfd_signal_reset_event`); with `ecc`, its memory-exception events also report an
    /// imprecise SRAM-ECC error. VRAM keeps its contents here, where a real reset loses them.
    /// Fails with `None` for an unknown GPU.
    pub fn inject_gpu_reset(&self, gpu_id: u32, ecc: bool) -> Option<()> {
        use kfd_sys::bindings::{KFD_HW_EXCEPTION_ECC, KFD_HW_EXCEPTION_GPU_HANG};
        let gpu = self.gpu(gpu_id)?;
        log::warn!(
            "kfd-emu: GPU {gpu_id:#x} reset (injected{})",
            if ecc { ", ECC" } else { "" }
        );
        gpu.raise_exception();
        self.faults
            .smi
            .gpu_reset(gpu_id, if ecc { "RAS error" } else { "GPU hang" });
        self.events.signal_reset(events::ResetReport {
            gpu_id,
            cause: if ecc {
                KFD_HW_EXCEPTION_ECC
            } else {
                KFD_HW_EXCEPTION_GPU_HANG
            },
            memory_lost: true,
        });
        Some(())
    }

    /// The recent wave errors of machine-code dispatches on `gpu_id` (faults, illegal
    /// instructions, traps), oldest first, each with the instructions around its PC
    /// disassembled: what a runtime's fault report shows on the emulated device.
    pub fn machine_faults(&self, gpu_id: u32) -> Vec<MachineFault> {
        self.gpu(gpu_id)
            .map(|g| g.fault_log.all())
            .unwrap_or_default()
    }

    /// The context save/restore area queue `queue_id` was created with (`None` for an unknown
    /// queue or one without): where the driver reads the header that says how to report the
    /// queue's wave exceptions.
    pub fn queue_cwsr_address(&self, queue_id: u32) -> Option<u64> {
        self.queues.cwsr_of(queue_id).filter(|&a| a != 0)
    }

    /// Binds `f` to the kernel descriptor at `kernel_object`: dispatches of that object run it.
    pub fn bind_kernel(&self, kernel_object: u64, name: &str, f: Arc<KernelFn>) {
        self.kernels.bind(kernel_object, name, f);
    }

    /// Removes a binding.
    pub fn unbind_kernel(&self, kernel_object: u64) {
        self.kernels.unbind(kernel_object);
    }

    /// Doorbell hints `gpu_id` has received so far ([`Driver::doorbell_hint`], which a runtime
    /// gives after writing a doorbell), or 0 for an unknown GPU. Hints from several threads
    /// at the same instant may count once: the figure says whether hints arrive, not exactly
    /// how many.
    pub fn doorbell_hints(&self, gpu_id: u32) -> u64 {
        self.gpu(gpu_id).map_or(0, |g| g.hints())
    }

    /// Reports every access of machine code on any GPU to the `[start, end)` `ranges` from
    /// now on (stores and atomics; loads too with `reads`), as a debugger's address watch:
    /// logged at `warn` and kept for [`Emulator::watch_hits`]. No ranges: watch nothing.
    /// Dispatches already running keep what they started with.
    pub fn watch(&self, ranges: &[(u64, u64)], reads: bool) {
        for g in &self.gpus {
            g.watch.set(ranges, reads);
        }
    }

    /// Whether dispatches run the sanitizer ([`EmuConfig::sanitize`], `KFDRT_EMU_SANITIZE=1`).
    pub fn sanitizing(&self) -> bool {
        self.config.sanitize
    }

    /// Registers the buffer `[start, start + len)` for the sanitizer's bounds checks: accesses
    /// through pointers into it must stay inside it. A runtime that suballocates registers each
    /// buffer at the size it was asked for. Nothing when the sanitizer is off.
    pub fn track_buffer(&self, start: u64, len: u64) {
        self.sanitizer().track(start, len);
    }

    /// Forgets the buffer registered at `start` (it was freed).
    pub fn untrack_buffer(&self, start: u64) {
        self.sanitizer().untrack(start);
    }

    /// What the sanitizer found since the last call, oldest first: each kind of finding once
    /// per instruction (at most 1024 are kept).
    pub fn sanitizer_findings(&self) -> Vec<kfd_emu_isa::sanitize::Finding> {
        self.sanitizer().take_findings()
    }

    /// Names source lines in the sanitizer's log lines: `f(pc)` gives the lines of a PC,
    /// innermost first (kfdrt installs one that reads the line tables of the code objects it
    /// loaded). `None` removes it.
    pub fn set_symbolizer(&self, f: Option<Arc<Symbolizer>>) {
        self.sanitizer().set_symbolizer(f);
    }

    fn sanitizer(&self) -> &sanitize::SanitizerState {
        &self.gpus[0].sanitizer
    }

    /// The watched accesses reported since the last call, oldest first (at most 4096 per GPU
    /// are kept).
    pub fn watch_hits(&self) -> Vec<kfd_emu_isa::WatchHit> {
        self.gpus.iter().flat_map(|g| g.watch.take_hits()).collect()
    }

    /// The waves of machine code running on `gpu_id` now, with what each is doing and its
    /// registers: each work-group notes its waves the next time it switches waves, and this
    /// collects what was noted within `within` (a few milliseconds suffice: work-groups
    /// switch every few hundred instructions). For hang reports.
    pub fn running_waves(
        &self,
        gpu_id: u32,
        within: std::time::Duration,
    ) -> Vec<kfd_emu_isa::RunningWave> {
        let Some(g) = self.gpu(gpu_id) else {
            return Vec::new();
        };
        let request = g.probe.ask();
        std::thread::sleep(within);
        g.probe.answers(request)
    }

    /// Deep sleeps `gpu_id`'s packet processors have begun (each after about 10 ms without
    /// work; see `engine::backoff`), or 0 for an unknown GPU. An idle processor left alone
    /// sleeps once per second at most; more means something keeps waking it.
    pub fn deep_sleeps(&self, gpu_id: u32) -> u64 {
        self.gpu(gpu_id).map_or(0, |g| {
            g.deep_sleeps.load(std::sync::atomic::Ordering::Relaxed)
        })
    }

    /// Doorbell stores to `gpu_id`'s pages that faulted because its processors slept
    /// ([`EmuConfig::trap_doorbell_writes`]), or 0 for an unknown GPU.
    pub fn doorbell_traps(&self, gpu_id: u32) -> u64 {
        self.gpu(gpu_id).map_or(0, |g| {
            let slots = g.doorbell_traps.lock().unwrap_or_else(|p| p.into_inner());
            doorbell_trap::sprung(&slots)
        })
    }

    /// Bytes mapped to `gpu_id` (`None` for an unknown GPU).
    pub fn mapped_bytes(&self, gpu_id: u32) -> Option<u64> {
        self.gpu(gpu_id).map(|g| g.vm.mapped_bytes())
    }

    /// Whether `va..va+len` is mapped to `gpu_id`.
    pub fn is_mapped(&self, gpu_id: u32, va: u64, len: u64) -> bool {
        self.gpu(gpu_id).is_some_and(|g| g.vm.is_mapped(va, len))
    }

    /// The page table of `gpu_id` as `(va, len)` ranges.
    pub fn mappings(&self, gpu_id: u32) -> Vec<(u64, u64)> {
        self.gpu(gpu_id)
            .map(|g| g.vm.mappings())
            .unwrap_or_default()
    }

    /// The memory view of `gpu_id`, as its engines see it.
    pub fn gpu_vm(&self, gpu_id: u32) -> Option<&GpuVm> {
        self.gpu(gpu_id).map(|g| &g.vm)
    }

    /// Declares `fd` another descriptor of the render node `minor`, so `ACQUIRE_VM` accepts it.
    ///
    /// [`Driver::open_render_node`] hands out the emulator's own descriptor; a process that opens
    /// `/dev/dri/renderD<minor>` itself (libhsakmt does, under the preload interposer) gets a
    /// different one, which the interposer attaches here.
    ///
    /// `dup_of` names the descriptor `fd` duplicates (same open file), if any: KFD binds a GPU's
    /// VM to one open file of its render node and refuses `ACQUIRE_VM` with another (EBUSY).
    pub fn attach_render_fd(&self, minor: u32, fd: i32, dup_of: Option<i32>) -> Result<(), Errno> {
        let g = self
            .gpus
            .iter()
            .find(|g| g.render_minor == minor)
            .ok_or(Errno::ENOENT)?;
        g.attach_render_fd(fd, dup_of);
        Ok(())
    }

    /// Forgets a descriptor given to [`Emulator::attach_render_fd`] (it was closed).
    pub fn detach_render_fd(&self, fd: i32) {
        for g in &self.gpus {
            g.detach_render_fd(fd);
        }
    }

    /// Every file of the topology tree as `(path relative to KFD_TOPOLOGY_ROOT, contents)`, for
    /// laying the tree out as files.
    pub fn topology_files(&self) -> Vec<(String, String)> {
        self.topology.files()
    }

    /// amdgpu's module parameters as `/sys/module/amdgpu/parameters/<name>` shows them (name,
    /// contents): the kernel's defaults for what the emulator models (CWSR on, the hardware
    /// scheduler, XNACK off), which test suites read to decide what to run.
    pub fn module_parameters(&self) -> Vec<(&'static str, String)> {
        module_params::defaults()
    }

    /// Bytes of shared virtual memory prefetched to a GPU so far (migrations the emulator
    /// records; the bytes stay in host memory).
    pub fn svm_migrated_bytes(&self) -> u64 {
        self.svm.migrated()
    }

    /// Fault injection controls.
    pub fn faults(&self) -> &FaultInjector {
        &self.faults
    }

    /// Refuses a call from any process but the one that created the emulator, with the errno
    /// the driver gives a forked child. `kfd_ioctl` compares the caller with the file's owner
    /// (`if (process->lead_thread != current->group_leader) { dev_dbg(.., "Using KFD FD in
    /// wrong process\n"); retcode = -EBADF; }`), and `kfd_mmap` finds no `kfd_process` for the
    /// child's new mm (`kfd_get_process` answers `-EINVAL`). The child also has none of the
    /// emulator's threads, so nothing it submitted would ever run.
    fn check_process(&self, refused: Errno) -> Result<(), Errno> {
        if std::process::id() == self.owner_pid {
            return Ok(());
        }
        log::debug!(
            "kfd-emu: using the KFD of process {} in process {}",
            self.owner_pid,
            std::process::id()
        );
        Err(refused)
    }

    /// The GPU timestamp counter (ticks at the preset's clock since the emulator started).
    pub fn gpu_clock(&self) -> u64 {
        let hz = self
            .gpus
            .first()
            .map_or(100_000_000, |g| g.params.gpu_clock_hz);
        engine::Clock::new(self.epoch, hz).gpu_ticks()
    }
}

impl Driver for Emulator {
    fn kind(&self) -> DriverKind {
        DriverKind::Emulated
    }

    fn describe(&self) -> String {
        let first = self
            .gpus
            .first()
            .map(|g| g.params.name.as_str())
            .unwrap_or("?");
        format!("kfd-emu (emulated device: {} x {first})", self.gpus.len())
    }

    fn page_size(&self) -> u64 {
        self.config.platform.page_size
    }

    unsafe fn ioctl(
        &self,
        node: Node,
        request: IoctlRequest,
        arg: *mut c_void,
    ) -> Result<i32, Errno> {
        if node == Node::Kfd {
            self.check_process(Errno::EBADF)?;
        }
        // SAFETY: forwarded from the caller's contract on `arg`.
        unsafe { ioctl::dispatch(self, node, request, arg) }
    }

    fn open_render_node(&self, minor: u32) -> Result<i32, Errno> {
        let (i, g) = self
            .gpus
            .iter()
            .enumerate()
            .find(|(_, g)| g.render_minor == minor)
            .ok_or(Errno::ENOENT)?;
        if self.config.cgroup_hidden_gpus.contains(&i) {
            // The device cgroup refuses the open of /dev/dri/renderD<minor>.
            return Err(Errno::EPERM);
        }
        Ok(g.open_render())
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
        if source == MapSource::File(Node::Kfd) {
            self.check_process(Errno::EINVAL)?;
        }
        // SAFETY: forwarded from the caller's contract (see the trait).
        let (p, kind) = unsafe { memory::mmap(self, source, addr, len, prot, flags, offset) }?;
        self.cpu_maps.mapped(p as usize, len, kind);
        Ok(p)
    }

    unsafe fn munmap(&self, addr: *mut c_void, len: usize) -> Result<(), Errno> {
        // A tracked CPU view of VRAM or a trapped doorbell mapping is going away: stop
        // watching it first.
        hdp::untrack_range(addr as usize, len);
        doorbell_trap::unregister_range(addr as usize, len);
        // SAFETY: the caller owns the range (see the trait).
        if unsafe { libc::munmap(addr, len) } != 0 {
            Err(Errno::last())
        } else {
            self.cpu_maps.unmapped(addr as usize, len);
            Ok(())
        }
    }

    fn read_topology(&self, path: &str) -> Result<String, Errno> {
        self.topology.read(path)
    }

    fn list_topology(&self, path: &str) -> Result<Vec<String>, Errno> {
        self.topology.list(path)
    }

    fn doorbell_hint(&self, gpu_id: u32) {
        if let Some(g) = self.gpu(gpu_id) {
            g.doorbell_hinted();
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        if std::process::id() != self.owner_pid {
            // A forked child dropping its copy: the processor threads stayed in the parent.
            self.queues.abandon_all();
            return;
        }
        self.queues.stop_all();
        self.watch.stop();
        if let Some(g) = self.gpus.first() {
            doorbell_trap::unregister_emulator(g.hdp_owner >> 8);
        }
    }
}

#[cfg(test)]
mod fork_tests {
    use super::*;

    /// A forked child that drops its copy of an emulator ends (nothing waits for the threads,
    /// such as the doorbell watcher, that stayed in the parent), and the child's calls are
    /// refused as the driver refuses them.
    #[test]
    fn a_forked_child_refuses_calls_and_drops_the_emulator_without_hanging() {
        let emu = Emulator::new(EmuConfig::new(Preset::Gfx90a, 1)).expect("an emulator");
        let mut version = kfd_sys::bindings::kfd_ioctl_get_version_args::default();
        kfd_sys::DriverExt::kfd_ioctl(&*emu, &mut version).expect("GET_VERSION in the parent");
        // SAFETY: the child only makes one driver call, drops the emulator and `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let refused = kfd_sys::DriverExt::kfd_ioctl(&*emu, &mut version) == Err(Errno::EBADF);
            drop(emu);
            // SAFETY: ends the child without running the test harness's teardown.
            unsafe { libc::_exit(if refused { 0 } else { 1 }) };
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let mut status = 0;
        loop {
            // SAFETY: polls the child just forked; `status` is writable.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r == pid {
                break;
            }
            if std::time::Instant::now() > deadline {
                // SAFETY: kills the hung child this test forked.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                panic!("the forked child hung dropping the emulator");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child's GET_VERSION was not refused with EBADF (status {status:#x})"
        );
    }
}
