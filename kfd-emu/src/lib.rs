//! kfd-emu: an emulated KFD device, in process, implementing kfdrt's [`kfd_sys::Driver`] seam.
//!
//! It models amdkfd's ioctls with their errno values (memory, events, queues, topology) and the
//! GPU's command processors: AQL, PM4 and SDMA packet processors run in their own threads,
//! consume packets the moment their headers become valid, run kernels' real AMDGPU machine code
//! on the wave interpreter ([`kfd_emu_isa`], gfx90a and gfx942) with every access checked by the
//! GPU's page table, and report faults the way hardware does (memory exception events, stopped
//! queues). A test may bind a host function to a kernel object instead (an *emulated kernel*,
//! run once per work-group), the quick way to fake a kernel.
//!
//! GPU VA equals host VA. Buffers are ranges of pooled `memfd`s (large ones a file each) mapped
//! by the emulator for its engines and by the runtime at the buffer's VA through the render
//! node, so CPU and GPU share the pages; a buffer costs the process no file descriptor. A freed
//! buffer's memory lives while a CPU mapping of it does, as a GEM object's. An exported buffer
//! moves to a file of its own (a dma-buf is that buffer alone); a write racing the export (a
//! GPU engine or another thread writing the buffer meanwhile) can be lost there, where the
//! driver has no such window.
//!
//! The render nodes answer the amdgpu queries libdrm makes ([`drm`]), KFD answers what ROCr's
//! image support asks when HIP starts it (`GET_TILE_CONFIG` with gfx9's address configuration),
//! and the CP asks the runtime for scratch as the firmware does, so unmodified ROCm and HIP
//! programs, their own kernels and ROCr's and HIP's blit kernels, run on the emulator through
//! the `kfd-emu-preload` interposer.
//!
//! # The newer KFD
//!
//! It reports a configurable KFD ABI version ([`EmuConfig::kfd_version`], 1.11 to the
//! bindings' 1.18, default the newest) and answers each request from the version that brought
//! it, looking requests up by number and zero-extending shorter arguments as `kfd_ioctl` does.
//! Besides memory, events and queues it models: the debugger's ABI (`debugger`: runtime
//! enable, debug-trap attach and detach, also to another process through a record file per
//! target (`debugger::remote`), exception reporting, queue and device snapshots, queue suspend
//! and resume, the trap-mask override with wave start and end traps where the GPU has them,
//! address watches that trap the wave, the precise-memory flag; launch modes halt and single
//! step are taken but not modelled), shared virtual memory (`svm`),
//! dma-buf export and import, also of render-node GEM objects (`dmabuf`, `drm_gem`), graphics
//! command submission of SDMA IBs into the same VM (`drm_cs`), global wave
//! sync for one queue per GPU, SMI event streams (`smi`), and amdgpu's module parameters
//! ([`Emulator::module_parameters`]). A process may have more queues than the GPU has hardware
//! queue slots; every queue has a processor of its own, so all of them progress at once (the
//! hardware scheduler would time-slice them: only the cost differs). Queue priorities are the
//! CP's (`arbiter`): while a queue of a higher pipe priority has work-groups to start,
//! lower ones start none.
//!
//! # Shape
//!
//! Imports run one way, from the driver's interface down to the GPU's state:
//! `ioctl` → `queue` → `engine` → `device`, `vm`, `events`, `kernel`, `icache`, `hdp`,
//! `doorbell_trap`, `wake`.
//!
//! - `ioctl` decodes each request and answers with KFD's errno; `memory` (allocations and
//!   mappings) and `drm` (render-node queries) sit beside `queue` under it.
//! - `queue` is the queue table: `CREATE/DESTROY/UPDATE_QUEUE` with the driver's checks,
//!   doorbell slots, and the processor thread of each queue, which it starts through `engine`
//!   and stops and joins itself.
//! - `engine` runs packets, one thread per queue: `engine::aql`, `engine::pm4` and
//!   `engine::sdma` each run one packet language. What they share lives in small modules under
//!   `engine` that import none of the three: the queue control block (stop, enable, errors, the
//!   pause check with the fault injector's stalls, the HDP-flush poll at packet start, device
//!   exceptions), the error codes (as [`aql::queue_error`] defines them), the back-off loop,
//!   the clock, the work-group loop of an emulated kernel, the launch of machine code on the
//!   wave interpreter over a pool of host threads (`machine`), the queue's scratch as
//!   `amd_queue_t` describes it (`scratch`), and the PM4 interpreter that PM4 queues and AQL
//!   PM4-IB packets both use. The three never import each other, and no engine module
//!   imports `queue`.
//! - Below the engines: `device` (per-GPU state: doorbells, exceptions, the instruction-cache
//!   model `icache`), `vm` (the page table every engine access goes through, but an AQL
//!   processor's ring and pointer pages: its queue holds them, so it resolves them once), `events`,
//!   `kernel` (bound kernels), `host_vma` (the process's memory map, which SVM mappings
//!   follow), `hdp` and `doorbell_trap` (CPU writes seen through write
//!   protection, one `SIGSEGV` handler for both), `wake` (processors in a deep sleep), `fault`
//!   (injection controls, shared with the processors by `Arc`), `stats` and `isa_memory` (the
//!   page table as the interpreter's memory). None of them imports an engine, `queue` or the
//!   crate root.
//!
//! # Idle, faults and accounting
//!
//! - An idle processor parks (no timed wake-ups) about 10 ms after its last packet; a doorbell
//!   hint wakes the parked processors whose doorbell moved (`wake`), and one watcher thread
//!   per emulator (`engine::watcher`, running only while something is parked) notices doorbells
//!   and write pointers moved without a hint (ROCr under the preload) within 8 ms. With
//!   [`EmuConfig::trap_doorbell_writes`] (the preload's default) a parked GPU's doorbell
//!   mappings are also write-protected, and the client's first store wakes it from the
//!   `SIGSEGV` handler (`doorbell_trap`). That handler is shared with the HDP model. It lifts
//!   the protection, so the store completes, and it passes other faults on.
//! - Tests inject what KFD reports ([`FaultInjector`]): a failed allocation, exhausted SDMA
//!   engines, stalled queues, evicted and restored queues, a suspended system, and
//!   ([`Emulator::inject_gpu_reset`]) a GPU reset with its hardware-exception event.
//! - Machine-code faults are kept per GPU with the code around the PC
//!   ([`Emulator::machine_faults`]); what a client holds of the device is counted
//!   ([`Emulator::live_objects`]) so tests can check nothing leaks.
//!
//! # What it refuses, as the driver and the GPU do
//!
//! Always (these are the driver's and the page table's own rules):
//! - `CREATE_QUEUE` as Linux 6.12+ checks it: the ring, the pages of the read and write
//!   pointers, the EOP buffer and the CWSR area are each a whole GPU mapping of exactly the size
//!   KFD expects ([`kfd_sys::queue_sizes`]), and a live queue holds them (unmapping one: EBUSY).
//!   Under MES (gfx11, the gfx1100 preset) the write pointer's page is also a GTT buffer of the
//!   queue's own device, which the driver maps into the GART (`init_user_queue`).
//! - Page permissions: a GPU write to a buffer allocated without `WRITABLE` faults as read-only,
//!   a kernel whose code is not in `EXECUTABLE` memory faults as no-execute.
//! - Faults as amdkfd reports them: a page fault (or an illegal PM4 or SDMA packet) evicts every
//!   queue the process has on that GPU, for good (queues created later are created evicted and
//!   never run, as `create_queue_cpsch` creates them), and signals the memory-exception events
//!   with the address and kind; no completion signal is written. Packet errors the CP reports per queue (bad AQL
//!   packets, bad arguments) go to the queue's error signal, as ROCr expects.
//! - Interrupts set only signal events whose mailbox slot was written (KFD's slot lookup).
//! - AQL ordering is no stronger than the spec: a dispatch followed by a published packet
//!   without the barrier bit runs alongside it. A slot is read only once the write index passed
//!   it.
//! - Machine code runs as the CP starts it: the packet's geometry and segment sizes (not the
//!   descriptor's), the registers the descriptor's enable bits ask for, the queue's scratch as
//!   `amd_queue_t` describes it, KFD's apertures. A dispatch needing more scratch than its queue
//!   has stops the CP, which asks the runtime through the queue's inactive signal and waits;
//!   scratch lent for one dispatch is handed back after it; the request says the wave size
//!   (`INSUFFICIENT_SCRATCH_WAVE32` for a wave32 kernel), and the queue's fields are read in
//!   the GPU's format (GFX11: `WAVESIZE` in 256 bytes, `WAVES` per engine). On a GPU of several XCCs (gfx942)
//!   the work-groups go to the XCCs in turn, and XCC `x`'s waves use the queue's scratch moved
//!   up by `x * scratch_backing_memory_byte_size` (each XCC's CP lays out its own `WAVES` slots
//!   in its share, as ROCr describes them per XCC): a layout for the whole device puts the
//!   later XCCs past the backing, where their waves fault. An instruction the interpreter does
//!   not know or run stops the queue with an illegal-instruction error naming the PC and its
//!   disassembly; a wave's access outside the page table is a GPU page fault.
//! - Traps and wave exceptions (`s_trap`, an undecodable word) go where the hardware sends them
//!   (`engine::wave_exception`): with no `SET_TRAP_HANDLER`, the first-level handler's way (an
//!   `s_trap` is stepped over, an exception halts the wave and its dispatch never completes);
//!   with a handler and the runtime enabled, the handler's machine code runs in trap mode and
//!   its `s_sendmsg(MSG_INTERRUPT)` reaches the runtime through the queue's CWSR header, read
//!   with `get_user` semantics (an unreachable header loses it); with a handler but no runtime
//!   enabled (ROCr 5.2.3 under the preload), the pre-debugger handler's effect is modelled: the
//!   queue stops with an exception code in its inactive signal.
//! - One emulator is one process's `kfd_process`. A forked child's calls are refused: ioctls on
//!   the KFD file with EBADF (`kfd_ioctl`: "Using KFD FD in wrong process"), its mmaps with
//!   EINVAL (`kfd_get_process` finds no process for the child's mm); dropping the emulator in
//!   the child leaves the parent's threads alone. Each `open_render_node` is a new render-node
//!   file, and `ACQUIRE_VM` with any file but the first answers EBUSY
//!   (`kfd_process_device_init_vm`): a second runtime in the process. The VM stays bound to the
//!   first file for the emulator's life.
//! - A container's device cgroup ([`EmuConfig::cgroup_hidden_gpus`]): every topology file of a
//!   hidden GPU's node answers EPERM (`node_show`), its render node cannot be opened, and the
//!   process has no device data for it (`kfd_init_apertures` skips it), so it is missing from
//!   the apertures and requests naming it find no GPU.
//! - A host without PCIe AtomicOps ([`Platform::pcie_atomics`], `KFDRT_EMU_PLATFORM=
//!   no-pcie-atomics`): the GPUs' PCIe links carry `NO_ATOMICS_32_BIT | NO_ATOMICS_64_BIT`
//!   (`kfd_set_iolink_no_atomics`), and an SDMA atomic or a wave's atomic on system memory
//!   (GTT, userptr, SVM system pages) does not happen. The command processor's signal
//!   decrements still do (not modelled: whether its firmware needs atomics, KFD's
//!   `needs_pci_atomics` refusing such GPUs).
//! - SR-IOV virtual functions ([`Platform::sriov_vf`], `KFDRT_EMU_PLATFORM=vf`): no
//!   MMIO-remap page (`MMIO_REMAP` allocations answer ENOMEM), so the HDP is flushed only by
//!   an SDMA HDP flush packet or a system-scope acquire; strict mode reports a GPU read of VRAM
//!   the CPU wrote before either. Only the page is modelled: not a VF's other limits (no
//!   performance counters, fewer queues, the host's scheduling).
//! - Peer-to-peer as the driver builds it ([`Platform::peer_to_peer`], `KFDRT_EMU_PLATFORM=
//!   no-p2p`): a hive's XGMI links are `io_links`, PCIe peers `p2p_links`, present only where
//!   the platform has P2P and the owner's VRAM is all in its BAR
//!   (`amdgpu_device_is_peer_accessible`). Mapping VRAM to a GPU without a path moves it to
//!   system memory, as the DMA-buf attachment amdgpu then uses does
//!   ([`EmuStats::vram_moved_to_system`]). Not modelled: the slower access that follows, the
//!   P2PDMA distance and IOMMU checks. Packets on XGMI SDMA queues are counted
//!   ([`EmuStats::sdma_xgmi_packets`]); all engines copy at the same speed.
//! - A kernel of larger pages ([`Platform::page_size`], `KFDRT_EMU_PLATFORM=pages-64k`):
//!   buffers round up to the page, the doorbell slice is `roundup(8 KiB, PAGE_SIZE)`, queue
//!   pointers want a one-page buffer, the ring, EOP and CWSR mappings are page aligned
//!   (`kfd_queue_acquire_buffers`), `MMIO_REMAP` answers ENOMEM, and mappings need page-aligned
//!   fixed addresses and offsets. Not modelled: SVM ranges and the HDP and doorbell traps keep
//!   the host's page.
//! - SDMA register polls other than the HDP flush (ROCr's `hdp_flush_cmd`, Linux's `HDP_FLUSH`
//!   bit) are malformed packets: no registers are modelled.
//! - Memory requests as `kfd_chardev.c` answers them: before `ACQUIRE_VM` a GPU's
//!   allocations and mappings are ENODEV (`kfd_bind_process_to_device`); a handle its GPU does
//!   not know is ENOMEM to map or unmap; mapping and unmapping go device by device, keep what
//!   they did before a failing device and report it in `n_success` (`tests/ioctls.rs` checks
//!   these through the driver seam alone).
//! - amdgpu's limits: VRAM and visible VRAM per GPU, GTT and pinned memory against system memory,
//!   SDMA queue slots, exact doorbell and MMIO mmap lengths, each part's SDMA count width.
//!
//! The strict personality ([`EmuConfig::strict`], on unless `KFDRT_EMU_STRICT=0`) adds detectors
//! for mistakes a GPU does not report but punishes with wrong results:
//! - a packet whose header was published before its body (free slots are marked; such a packet
//!   stops the queue and counts in [`EmuStats::torn_packets`]);
//! - a kernarg segment that is not 16-byte aligned (the queue stops with an argument error);
//! - a GPU read of host-visible VRAM the CPU wrote since the last HDP flush
//!   ([`EmuStats::unflushed_vram_reads`]; see the `hdp` module for how writes are seen);
//! - a dispatch of code rewritten since the instruction cache fetched it, with no invalidate in
//!   between ([`EmuStats::stale_code_fetches`]; on gfx10+ the invalidate must reach GL1 and GL2
//!   too, through which code refills);
//! - a PM4 `RELEASE_MEM` that tells the CPU of dispatches (a data write or an interrupt) with
//!   no L2 write-back since them (gfx9 `TC_WB_ACTION_EN`, gfx10+ `GL2_WB`, in it or in an
//!   `ACQUIRE_MEM` between): the CPU may read what they wrote before it leaves the L2
//!   ([`EmuStats::fences_before_writeback`]);
//! - on a GPU of several XCCs (MI300X), a PM4 dispatch whose XCCs' scratch ranges overlap (every
//!   XCC runs the stream with its own registers, so one base for all of them lets their waves
//!   overwrite each other's private memory: [`EmuStats::xcc_scratch_overlaps`]), and a PM4
//!   `RELEASE_MEM` that tells the CPU of dispatches and that every XCC runs (each would write it
//!   when its own share is done: [`EmuStats::unjoined_xcc_fences`]);
//! - on gfx90a, float atomics (`global_atomic_add_f32` and kin) to fine-grained host memory
//!   (coherent or uncached GTT and userptr buffers, coherent SVM ranges) do nothing, as an
//!   MI200's do over PCIe (HIP documents unsafe FP atomics as silently failing there).
//!
//! # What it still forgives
//!
//! - Injected faults are gentler than the real ones: a GPU reset (`inject_gpu_reset`) keeps
//!   VRAM's contents (KFD reports them lost, and a runtime must not trust them), and an
//!   eviction or suspend stops queues at packet boundaries (a GPU preempts running waves
//!   through CWSR and resumes them).
//! - Caches: the memory is coherent; the cache model is two detectors (above: stale code, PM4
//!   fences before an L2 write-back), not stale data. Not caught: a CPU read after an AQL
//!   packet with an agent-scope release (the CP writes the L2 back only for system scope), the
//!   scalar cache (K$) holding old constants, SDMA and other engines reading around the L2
//!   (SDMA 5+ GCR requests are only counted, [`EmuStats::sdma_cache_requests`]), and which
//!   lines a fence actually needed (any dispatch since the last write-back counts).
//! - Contents of new VRAM are zero (a GPU gives whatever the last owner left, or a poison
//!   pattern).
//! - Only the first 256 bytes at each kernel entry are compared by the instruction-cache model.
//! - SDMA endian swaps: COPY_LINEAR's swap bits are not read, and a LINEAR_SUB_WINDOW copy
//!   that asks for a swap stops its queue as an invalid packet rather than copy unswapped
//!   (ROCr and Mesa never set them); TMZ and SDMA 6 cache-policy bits change nothing.
//! - A system call that writes into host-visible VRAM (`read(2)` into a VRAM mapping) fails with
//!   EFAULT in strict mode instead of silently bypassing the HDP model.
//! - XCCs: work-group `g` runs on XCC `g % XCCs` (what `HW_REG_XCC_ID` reads), with that XCC's
//!   share of the scratch (AQL) or the scratch its SH registers name (PM4, where `PRED_EXEC`
//!   sets registers per XCC). A PM4 stream runs in step across the XCCs: a packet runs once,
//!   after every XCC's share of the dispatches before it, where on the GPU each XCC runs it
//!   when it gets there (strict mode counts the fences that relies on); a `DISPATCH_DIRECT` or
//!   `INDIRECT_BUFFER` predicated to some XCCs stops the queue (not modelled). Emulated kernels
//!   (host functions) use one XCC's layout. Compute partitions are presets (`gfx942` is SPX,
//!   `gfx942-dpx`/`-qpx`/`-cpx` one partition each) in NPS1 memory mode, and the partitions of
//!   one card are separate GPUs of a hive. The NPS4 presets (`gfx942-qpx-nps4`,
//!   `gfx942-cpx-nps4`) report what KFD reports there, which is what it reports in NPS1 for
//!   one node (`amdgpu_amdkfd_xcp_memory_size`: the memory partition over the nodes sharing
//!   it, 48 GiB / 2 = 192 GiB / 8; `num_xcc`, io-links and proximity are unchanged); where
//!   VRAM is placed (the node's quarter, `amdgpu_bo_placement_from_domain`) is not modelled,
//!   since a node's own cap (`amdgpu_amdkfd_reserve_mem_limit`) keeps it from filling its
//!   quarter before the cap.
//! - Emulated kernels (host functions) run their work-groups one after another; packets
//!   overlap only as described above. Machine code's work-groups run on as many host threads as
//!   the host has (`KFDRT_EMU_WAVE_THREADS`), not on as many CUs as the GPU has.
//! - The interpreter's float arithmetic is the host's (IEEE, round to nearest, denormals kept):
//!   MODE's rounding and denormal controls change nothing, transcendentals are exact where the
//!   hardware is within an ulp; `COVERAGE.md` of `kfd-emu-isa` lists the instructions it
//!   decodes but does not run. Images are laid out linearly at their descriptor's pitch,
//!   whatever their tiling (a CPU or DMA view of a tiled image's bytes is not the hardware's).
//! - A system-scope acquire fence flushes the HDP (so a packet sees what the CPU wrote to VRAM
//!   through the BAR), as HIP relies on; this is inferred from HIP 5.2's direct VRAM writes,
//!   not from a public description of the firmware.
//! - A buffer whose VA range overlaps another's is refused at `ALLOC_MEMORY_OF_GPU` (EINVAL);
//!   amdgpu takes the allocation and refuses the overlap when it is mapped
//!   (`amdgpu_vm_bo_map`), so a client that allocates overlapping ranges it never maps is
//!   refused here only.
//! - The events page the driver allocates itself when user space gives none (the APU path) is
//!   not modelled; `F_GETFL` on a device descriptor (under the preload) does not reflect its
//!   open flags.
//! - The wave interpreter runs GFX9 (gfx90a, gfx942) and GFX11 (gfx1100, wave32 and wave64)
//!   code; on gfx1100 it refuses images and formatted buffer access (GFX10+ descriptor and
//!   format layouts are not modelled), which stop the queue with an illegal-instruction error
//!   (see kfd-emu-isa's `COVERAGE.md`).
//! - Shared virtual memory (`AMDKFD_IOC_SVM`) keeps the bytes in host memory: a prefetch
//!   records the location, counts the bytes and reports the migration, but moves nothing.
//!   GPU mappings of a range follow the process's VMAs (read-only where it may not write, as
//!   `svm_range_validate_and_map` maps them), and the MMU notifier's work on `munmap` and
//!   `mprotect` is done when someone tells the emulator ([`Emulator::host_unmapping`]; the
//!   preload does, for the calls it sees). An unmapping nobody reported (the C library's own,
//!   inside `free`) is noticed only when an SVM request or allocation next looks at the span:
//!   until then the GPU mapping stays, and a GPU access to it faults the emulator's process.
//!   XNACK is off until the process turns it on (`SET_XNACK_MODE`, on the parts whose
//!   driver allows it per process: gfx90a and gfx942); then a GPU's miss on the process's
//!   memory is a retry fault resolved as `svm_range_restore_pages` does (see the `svm`
//!   module's `xnack`).
//! - `GET_TILE_CONFIG` and the `GB_ADDR_CONFIG` register read report an MI210's value
//!   (0x2a114042) for every preset; amdgpu reads the gfx942 and gfx1100 values from the hardware.
//! - Requests that exist only in ROCm's out-of-tree driver (`IPC_IMPORT_HANDLE`/`EXPORT_HANDLE`,
//!   numbers 0x80 and up) get ENOTTY, as from a current upstream kernel (older ones said
//!   EINVAL), so ROCm 5.2.3's IPC (`hipIpcGetMemHandle`, which asks `IPC_EXPORT_HANDLE`) fails
//!   as it does there.
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
