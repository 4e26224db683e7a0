//! The queue table: `CREATE/DESTROY/UPDATE_QUEUE` with amdkfd's checks, doorbell slots, and the
//! packet-processor thread of each queue (started by [`crate::engine`], stopped and joined here).
//!
//! Checks follow `kfd_ioctl_create_queue` / `set_queue_properties_from_user` (percentage,
//! priority, power-of-two ring size, queue type) and Linux 6.12's `kfd_queue_acquire_buffers`:
//! the ring, the pages of the read and write pointers, the EOP buffer and the CWSR area must each
//! be a whole GPU mapping of exactly the size KFD expects, and the queue holds a reference on
//! each, so unmapping one while the queue lives fails with EBUSY.

use crate::device::GpuState;
use crate::engine::{self, EngineEnv, EngineOptions, QueueCtl, QueueErrorCode};
use crate::Emulator;
use kfd_sys::bindings::*;
use kfd_sys::queue_sizes::expected_ring_bytes;
use kfd_sys::Errno;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Queues per process per GPU (one doorbell each, 1024 doorbells).
const MAX_QUEUES_PER_GPU: usize = 1024;
/// KFD's smallest ring; smaller requests are clamped to it.
const MIN_RING_SIZE: u32 = 1024;

struct Entry {
    ctl: Arc<QueueCtl>,
    thread: Option<JoinHandle<()>>,
    /// Buffers the queue holds a reference on (ring, pointers, EOP, CWSR).
    buffers: QueueBuffers,
    /// What a debugger's queue snapshot shows of it.
    snapshot: kfd_queue_snapshot_entry,
    /// The queue holds the GPU's global wave sync resources (`ALLOC_QUEUE_GWS`).
    gws: bool,
    /// An SDMA queue's slot: whether it is on an XGMI engine, its `sdma_id` among the slots of
    /// its kind, and its engine (see [`sdma_slot`]).
    sdma: Option<SdmaSlot>,
}

/// Where `allocate_sdma_queue` put an SDMA queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SdmaSlot {
    xgmi: bool,
    sdma_id: u32,
    engine: u32,
}

/// The slot amdkfd's `allocate_sdma_queue` gives a new SDMA queue of `gpu`: the lowest free
/// `sdma_id` of its kind (PCIe or XGMI engines; a queue asked for on engine `by_engine`, only
/// ids of that engine), on engine `sdma_id % engines` of that kind (XGMI engines numbered after
/// the PCIe ones). `None` when the kind's slots are all taken (the driver's ENOMEM).
fn sdma_slot(
    p: &crate::config::GpuParams,
    taken: &[SdmaSlot],
    xgmi: bool,
    by_engine: Option<u32>,
) -> Option<SdmaSlot> {
    let (offset, engines) = if xgmi {
        (p.sdma_engines, p.sdma_xgmi_engines)
    } else {
        (0, p.sdma_engines)
    };
    if engines == 0 {
        return None;
    }
    (0..engines * p.sdma_queues_per_engine)
        .map(|sdma_id| SdmaSlot {
            xgmi,
            sdma_id,
            engine: offset + sdma_id % engines,
        })
        .filter(|s| by_engine.is_none_or(|e| e == s.engine))
        .find(|s| {
            !taken
                .iter()
                .any(|t| t.xgmi == xgmi && t.sdma_id == s.sdma_id)
        })
}

#[derive(Default)]
pub(crate) struct QueueTable {
    inner: Mutex<(HashMap<u32, Entry>, u32)>,
}

impl QueueTable {
    /// Queue `id`'s control block, if it exists.
    pub(crate) fn ctl(&self, id: u32) -> Option<Arc<QueueCtl>> {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.0.get(&id).map(|e| e.ctl.clone())
    }

    /// Every queue's control block.
    pub(crate) fn ctls(&self) -> Vec<Arc<QueueCtl>> {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.0.values().map(|e| e.ctl.clone()).collect()
    }

    /// The CWSR area queue `id` was created with (0 for none), if the queue exists.
    pub(crate) fn cwsr_of(&self, id: u32) -> Option<u64> {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.0.get(&id).map(|e| e.ctl.cwsr)
    }

    pub(crate) fn live(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).0.len()
    }

    pub(crate) fn stop_all(&self) {
        let entries: Vec<Entry> = {
            let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            g.0.drain().map(|(_, e)| e).collect()
        };
        for e in entries {
            stop(e);
        }
    }

    /// Forgets every queue without touching its thread: in a forked child the threads do not
    /// exist, and joining one would wait for ever on a thread id nobody clears. The table is
    /// only tried: a thread of the parent may have held its lock at the fork, and nobody in the
    /// child would ever release it (then the queues are leaked with the table).
    pub(crate) fn abandon_all(&self) {
        let mut g = match self.inner.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        for (_, e) in g.0.drain() {
            std::mem::forget(e);
        }
    }
}

fn stop(mut e: Entry) {
    e.ctl.stop.store(true, Ordering::Release);
    e.ctl.gpu.doorbell_rung();
    if let Some(t) = e.thread.take() {
        let _ = t.join();
    }
}

/// Doorbells of each 512-doorbell half from this index on are reserved for SDMA and other
/// engines (as amdgpu's SOC15 layout reserves them); compute queues use the rest, so the
/// 241st compute queue of a process lands on the second doorbell page.
const FIRST_NON_CP_DOORBELL: u32 = 0xF0;

fn is_cp_doorbell(i: u32) -> bool {
    i % 512 < FIRST_NON_CP_DOORBELL
}

/// Logs why `CREATE_QUEUE` is refused and gives its errno: every refusal says why, as the
/// driver's `pr_debug` lines do.
fn refuse(why: std::fmt::Arguments<'_>, errno: Errno) -> Errno {
    log::warn!("kfd-emu: CREATE_QUEUE refused ({errno}): {why}");
    errno
}

/// `kfd_queue_buffer_get`: the page holding `addr` must be the first page of a GPU mapping and,
/// when `expected` is a page or more, that mapping must end exactly `expected` bytes' worth of
/// pages later (a shorter `expected`, such as a small SDMA ring, only checks the start). Returns
/// the buffer's handle, which the queue then holds a reference on, or why there is none.
fn buffer_get(gpu: &GpuState, addr: u64, expected: u64) -> Result<u64, String> {
    let page = addr >> 12;
    let pages = expected >> 12;
    let m = gpu
        .vm
        .mapping_at(addr)
        .ok_or_else(|| "not mapped to the GPU".to_string())?;
    let (first, last) = (m.start >> 12, (m.start + m.len - 1) >> 12);
    if page != first || (pages != 0 && page + pages - 1 != last) {
        return Err(format!(
            "must be a whole buffer of {expected:#x} bytes, but lies in the mapping {:#x}..{:#x}",
            m.start,
            m.start + m.len
        ));
    }
    if m.handle == crate::svm::SVM_HANDLE {
        return Err("lies in an SVM range, not a KFD buffer".into());
    }
    Ok(m.handle)
}

/// [`buffer_get`] for a buffer a queue cannot do without: a refusal is logged and is EINVAL.
fn required_buffer(gpu: &GpuState, what: &str, addr: u64, expected: u64) -> Result<u64, Errno> {
    buffer_get(gpu, addr, expected)
        .map_err(|why| refuse(format_args!("{what} at {addr:#x}: {why}"), Errno::EINVAL))
}

/// The MES scheduler (gfx11 and later) reads a queue's write pointer through the GART to see
/// work on unmapped queues, so `init_user_queue` wants its one-page buffer on the queue's own
/// device ("Queue memory allocated to wrong device") and maps it with
/// `amdgpu_amdkfd_map_gtt_bo_to_gart`, which pins it in GTT: the emulator refuses one in VRAM
/// (the write pointer belongs in system memory, where the CPU updates it).
fn mes_write_pointer(emu: &Emulator, gpu: &GpuState, handle: u64) -> Result<(), Errno> {
    let (owner, flags) = emu.memory.placement(handle).ok_or(Errno::EINVAL)?;
    if owner != gpu.index {
        return Err(refuse(
            format_args!("MES: the write pointer's buffer belongs to another device"),
            Errno::EINVAL,
        ));
    }
    if flags & (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) == 0 {
        return Err(refuse(
            format_args!("MES: the write pointer's buffer is not in GTT"),
            Errno::EINVAL,
        ));
    }
    Ok(())
}

/// What a queue holds while it lives: references on KFD buffers and, for a context-save area
/// in shared virtual memory, one on the SVM ranges under it.
#[derive(Default)]
struct QueueBuffers {
    handles: Vec<u64>,
    /// `(address, bytes)` of a context-save area held through SVM ranges.
    svm_cwsr: Option<(u64, u64)>,
}

/// `kfd_queue_acquire_buffers` (Linux 6.12+): every buffer a queue names is a whole GPU mapping
/// of the size KFD expects, and compute queues pass the node's EOP and CWSR sizes; the CWSR
/// area alone may instead lie in SVM ranges (`kfd_queue_buffer_svm_get`, tried when no buffer
/// fits, as the driver does). Returns what the queue holds. The emulator also asks for an EOP
/// buffer on every compute queue but gfx94x AQL ones: the ioctl would take none, but the
/// command processor writes end-of-pipe events there, so on hardware the queue would fault on
/// its first dispatch.
fn acquire_buffers(
    emu: &Emulator,
    gpu: &GpuState,
    a: &kfd_ioctl_create_queue_args,
    ring_size: u32,
    is_sdma: bool,
) -> Result<QueueBuffers, Errno> {
    let p = &gpu.params;
    let aql = a.queue_type == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL;
    let page = gpu.platform.page_size;
    let wptr = required_buffer(gpu, "write pointer", a.write_pointer_address, page)?;
    if p.gfx_target_version >= 110000 {
        mes_write_pointer(emu, gpu, wptr)?;
    }
    let mut held = QueueBuffers {
        handles: vec![
            wptr,
            required_buffer(gpu, "read pointer", a.read_pointer_address, page)?,
            required_buffer(
                gpu,
                "ring",
                a.ring_base_address,
                expected_ring_bytes(
                    p.gfx_target_version,
                    a.queue_type,
                    u64::from(ring_size),
                    page,
                ),
            )?,
        ],
        svm_cwsr: None,
    };
    if is_sdma {
        return Ok(held);
    }
    let sizes = p.queue_area_sizes(page).ok_or_else(|| {
        refuse(
            format_args!("the node has no context-save sizes"),
            Errno::EINVAL,
        )
    })?;
    let gfx94x = (90400..90500).contains(&p.gfx_target_version);
    if a.eop_buffer_address != 0 {
        // Since the fix for 64 KiB pages: at least the node's size, mapped page aligned. The
        // size is kept in a u32 (`eop_ring_buffer_size`), so the ioctl's upper half is lost.
        let eop = u64::from(a.eop_buffer_size as u32);
        if eop < u64::from(sizes.eop_buffer_size) {
            return Err(refuse(
                format_args!(
                    "EOP buffer of {eop:#x} bytes, less than the node's {:#x}",
                    sizes.eop_buffer_size
                ),
                Errno::EINVAL,
            ));
        }
        held.handles.push(required_buffer(
            gpu,
            "EOP buffer",
            a.eop_buffer_address,
            sizes.eop_mapping_bytes(eop),
        )?);
    } else if !(gfx94x && aql) {
        return Err(refuse(
            format_args!("a compute queue without an EOP buffer"),
            Errno::EINVAL,
        ));
    }
    if a.ctl_stack_size != sizes.ctl_stack_size || a.ctx_save_restore_size < sizes.cwsr_size {
        return Err(refuse(
            format_args!(
                "CWSR sizes {:#x}/{:#x}, the node's are {:#x}/{:#x}",
                a.ctx_save_restore_size, a.ctl_stack_size, sizes.cwsr_size, sizes.ctl_stack_size
            ),
            Errno::EINVAL,
        ));
    }
    let (cwsr, cwsr_bytes) = (
        a.ctx_save_restore_address,
        sizes.cwsr_mapping_bytes(a.ctx_save_restore_size),
    );
    match buffer_get(gpu, cwsr, cwsr_bytes) {
        Ok(h) => held.handles.push(h),
        Err(no_buffer) => match emu.svm.queue_get(gpu.gpu_id, cwsr, cwsr_bytes) {
            Ok(()) => held.svm_cwsr = Some((cwsr, cwsr_bytes)),
            Err(no_svm) => {
                return Err(refuse(
                    format_args!(
                        "CWSR area of {cwsr_bytes:#x} bytes at {cwsr:#x}: as a buffer, it \
                         {no_buffer}; as SVM, {no_svm}"
                    ),
                    Errno::EINVAL,
                ))
            }
        },
    }
    Ok(held)
}

/// What the processors of `emu`'s queues take from it.
fn engine_env(emu: &Emulator) -> EngineEnv {
    EngineEnv {
        kernels: emu.kernels.clone(),
        stats: emu.stats.clone(),
        epoch: emu.epoch,
        options: EngineOptions::of(&emu.config),
    }
}

pub(crate) fn create(emu: &Emulator, a: &mut kfd_ioctl_create_queue_args) -> Result<(), Errno> {
    let gpu = emu
        .gpu(a.gpu_id)
        .ok_or_else(|| refuse(format_args!("no GPU {:#x}", a.gpu_id), Errno::EINVAL))?
        .clone();
    if a.queue_percentage & 0xFF > KFD_MAX_QUEUE_PERCENTAGE
        || a.queue_priority > KFD_MAX_QUEUE_PRIORITY
    {
        return Err(refuse(
            format_args!(
                "queue percentage {} or priority {} out of range",
                a.queue_percentage & 0xFF,
                a.queue_priority
            ),
            Errno::EINVAL,
        ));
    }
    if a.ring_size != 0 && !a.ring_size.is_power_of_two() {
        return Err(refuse(
            format_args!("ring size {:#x} is not a power of two", a.ring_size),
            Errno::EINVAL,
        ));
    }
    let ring_size = a.ring_size.max(MIN_RING_SIZE);
    // An SDMA queue on a chosen engine exists from KFD 1.17 on; older drivers refuse the type.
    let by_engine = a.queue_type == KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID
        && emu
            .config
            .kfd_version
            .supports(kfd_sys::Feature::SdmaEngineId);
    let is_sdma = by_engine
        || matches!(
            a.queue_type,
            KFD_IOC_QUEUE_TYPE_SDMA | KFD_IOC_QUEUE_TYPE_SDMA_XGMI
        );
    if !is_sdma
        && a.queue_type != KFD_IOC_QUEUE_TYPE_COMPUTE_AQL
        && a.queue_type != KFD_IOC_QUEUE_TYPE_COMPUTE
    {
        return Err(refuse(
            format_args!("unknown queue type {}", a.queue_type),
            Errno::EINVAL,
        ));
    }
    // The command processor takes the ring base in 256-byte units.
    if a.ring_base_address % 256 != 0 {
        return Err(refuse(
            format_args!("ring {:#x} is not 256-byte aligned", a.ring_base_address),
            Errno::EINVAL,
        ));
    }
    let held = acquire_buffers(emu, &gpu, a, ring_size, is_sdma)?;
    let svm_cwsr = held.svm_cwsr;
    let r = install(emu, &gpu, a, ring_size, is_sdma, by_engine, held);
    if let (Err(_), Some((addr, bytes))) = (&r, svm_cwsr) {
        emu.svm.queue_put(addr, bytes);
    }
    r
}

/// The rest of `CREATE_QUEUE` once the queue's buffers are found: a doorbell, the references
/// and the processor. On failure the caller drops the SVM reference; BO references taken here
/// are given back here.
fn install(
    emu: &Emulator,
    gpu: &Arc<GpuState>,
    a: &mut kfd_ioctl_create_queue_args,
    ring_size: u32,
    is_sdma: bool,
    by_engine: bool,
    held: QueueBuffers,
) -> Result<(), Errno> {
    let refs = held.handles.clone();
    if emu.config.strict && a.queue_type == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL {
        engine::mark_free_aql_slots(&gpu.vm, a.ring_base_address, u64::from(ring_size));
    }
    let mut g = emu.queues.inner.lock().unwrap_or_else(|p| p.into_inner());
    let used: Vec<u32> =
        g.0.values()
            .filter(|e| e.ctl.gpu.index == gpu.index)
            .map(|e| e.ctl.doorbell_index)
            .collect();
    if used.len() >= MAX_QUEUES_PER_GPU || emu.faults.queues_exhausted() {
        return Err(Errno::ENOSPC);
    }
    // Compute queues fill the first page, then the second (SDMA queues will start there).
    let mut sdma = None;
    if is_sdma {
        let xgmi = a.queue_type == KFD_IOC_QUEUE_TYPE_SDMA_XGMI;
        let p = &gpu.params;
        // allocate_sdma_queue: a chosen engine must exist (EINVAL) and have a free slot.
        if by_engine && a.sdma_engine_id >= p.sdma_engines + p.sdma_xgmi_engines {
            return Err(refuse(
                format_args!("no SDMA engine {}", a.sdma_engine_id),
                Errno::EINVAL,
            ));
        }
        // A queue on a chosen engine takes a slot of that engine's kind.
        let xgmi = xgmi || (by_engine && a.sdma_engine_id >= p.sdma_engines);
        let taken: Vec<SdmaSlot> =
            g.0.values()
                .filter(|e| e.ctl.gpu.index == gpu.index)
                .filter_map(|e| e.sdma)
                .collect();
        sdma = sdma_slot(p, &taken, xgmi, by_engine.then_some(a.sdma_engine_id));
        if emu.faults.sdma_exhausted() || sdma.is_none() {
            // kfd's allocate_sdma_queue: "No more SDMA queue to allocate".
            return Err(Errno::ENOMEM);
        }
    }
    let doorbell_index = (0..MAX_QUEUES_PER_GPU as u32)
        .filter(|&i| is_cp_doorbell(i) != is_sdma)
        .find(|i| !used.contains(i))
        .ok_or(Errno::ENOSPC)?;
    g.1 += 1;
    let id = g.1;
    let ctl = Arc::new(QueueCtl {
        id,
        queue_type: a.queue_type,
        sdma_engine: sdma.map(|s| s.engine),
        gpu: gpu.clone(),
        ring: a.ring_base_address,
        ring_size: u64::from(ring_size),
        rptr: a.read_pointer_address,
        wptr: a.write_pointer_address,
        doorbell_index,
        stop: AtomicBool::new(false),
        enabled: AtomicBool::new(a.queue_percentage & 0xFF > 0 && a.ring_base_address != 0),
        error: Mutex::new(None),
        failed: AtomicBool::new(false),
        events: emu.events.clone(),
        faults: emu.faults.clone(),
        cu_mask: Mutex::new(Vec::new()),
        // create_queue_cpsch: `q->properties.is_evicted = !!qpd->evicted`. On a GPU a fault
        // evicted for good the queue is created, but evicted: it never runs.
        exception_epoch: if gpu.faulted() { 0 } else { gpu.exceptions() },
        watch: emu.watch.clone(),
        holds_gws: AtomicBool::new(false),
        cwsr: a.ctx_save_restore_address,
        cwsr_size: a.ctx_save_restore_size,
        ctl_stack_size: a.ctl_stack_size,
        debug: emu.debug.clone(),
        wedged: AtomicBool::new(false),
        priority: std::sync::atomic::AtomicU32::new(a.queue_priority),
        sink: Default::default(),
    });
    // The references come before the processor starts: it resolves the ring's and the
    // pointers' host addresses once, which only the references keep valid. A buffer freed
    // since `acquire_buffers` found it fails the call, as its mapping would have.
    let release = |taken: &[u64]| {
        for &h in taken {
            crate::memory::queue_ref(emu, h, gpu.index, false);
        }
    };
    for (i, &h) in refs.iter().enumerate() {
        if !crate::memory::queue_ref(emu, h, gpu.index, true) {
            release(&refs[..i]);
            return Err(refuse(
                format_args!("a buffer was freed while the queue was being created"),
                Errno::EINVAL,
            ));
        }
    }
    emu.watch.add(&ctl);
    let thread = match engine::spawn(ctl.clone(), &engine_env(emu)) {
        Ok(t) => t,
        Err(_) => {
            release(&refs);
            return Err(Errno::ENOMEM);
        }
    };
    g.0.insert(
        id,
        Entry {
            ctl,
            thread: Some(thread),
            buffers: held,
            snapshot: kfd_queue_snapshot_entry {
                ring_base_address: a.ring_base_address,
                write_pointer_address: a.write_pointer_address,
                read_pointer_address: a.read_pointer_address,
                ctx_save_restore_address: a.ctx_save_restore_address,
                queue_id: id,
                gpu_id: gpu.gpu_id,
                ring_size,
                queue_type: a.queue_type,
                ctx_save_restore_area_size: a.ctx_save_restore_size,
                ..Default::default()
            },
            gws: false,
            sdma,
        },
    );
    drop(g);
    emu.debug.queue_created(gpu.gpu_id, id);
    log::debug!(
        "kfd-emu: queue {id} created: type {} on GPU {:#x}, ring {:#x} ({ring_size} bytes), doorbell {doorbell_index}, EOP {:#x}, CWSR {:#x} ({} + {} bytes)",
        a.queue_type,
        gpu.gpu_id,
        a.ring_base_address,
        a.eop_buffer_address,
        a.ctx_save_restore_address,
        a.ctx_save_restore_size,
        a.ctl_stack_size
    );
    a.queue_id = id;
    a.doorbell_offset = gpu.doorbell_mmap_offset() | (u64::from(doorbell_index) * 8);
    Ok(())
}

/// The GPU's global wave sync resources, as the topology's `num_gws` reports them.
pub(crate) const GWS_PER_GPU: u32 = 64;

/// `AMDKFD_IOC_ALLOC_QUEUE_GWS`, as `kfd_ioctl_alloc_queue_gws` and `pqm_set_gws` do it: the
/// queue must exist (EINVAL) and be a compute queue; one queue per GPU of the process holds
/// the GWS (EBUSY for a second); `num_gws` 0 gives them back (EINVAL if none were held).
pub(crate) fn alloc_gws(
    emu: &Emulator,
    a: &mut kfd_ioctl_alloc_queue_gws_args,
) -> Result<(), Errno> {
    let mut g = emu.queues.inner.lock().unwrap_or_else(|p| p.into_inner());
    let (gpu_index, compute) = {
        let e = g.0.get(&a.queue_id).ok_or(Errno::EINVAL)?;
        let t = e.snapshot.queue_type;
        (
            e.ctl.gpu.index,
            t == KFD_IOC_QUEUE_TYPE_COMPUTE || t == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
        )
    };
    if !compute {
        return Err(Errno::EINVAL);
    }
    let held = g.0.values().any(|e| e.ctl.gpu.index == gpu_index && e.gws);
    let want = a.num_gws != 0;
    if want && held {
        return Err(Errno::EBUSY);
    }
    if !want && !held {
        return Err(Errno::EINVAL);
    }
    for e in g.0.values_mut().filter(|e| e.ctl.gpu.index == gpu_index) {
        e.gws = want && e.snapshot.queue_id == a.queue_id;
        e.ctl.holds_gws.store(e.gws, Ordering::Release);
    }
    a.first_gws = 0;
    Ok(())
}

/// Whether queue `id` exists.
pub(crate) fn exists(emu: &Emulator, id: u32) -> bool {
    let g = emu.queues.inner.lock().unwrap_or_else(|p| p.into_inner());
    g.0.contains_key(&id)
}

/// A debugger's view of every queue, by id.
pub(crate) fn snapshots(emu: &Emulator) -> Vec<kfd_queue_snapshot_entry> {
    let g = emu.queues.inner.lock().unwrap_or_else(|p| p.into_inner());
    let mut v: Vec<_> = g.0.values().map(|e| e.snapshot).collect();
    v.sort_by_key(|e| e.queue_id);
    v
}

pub(crate) fn destroy(emu: &Emulator, id: u32) -> Result<(), Errno> {
    let mut e = {
        let mut g = emu.queues.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.0.remove(&id).ok_or(Errno::EINVAL)?
    };
    let gpu_index = e.ctl.gpu.index;
    let buffers = std::mem::take(&mut e.buffers);
    stop(e);
    for h in buffers.handles {
        let _ = crate::memory::queue_ref(emu, h, gpu_index, false);
    }
    if let Some((addr, bytes)) = buffers.svm_cwsr {
        emu.svm.queue_put(addr, bytes);
    }
    Ok(())
}

pub(crate) fn update(emu: &Emulator, a: &kfd_ioctl_update_queue_args) -> Result<(), Errno> {
    if a.queue_percentage > KFD_MAX_QUEUE_PERCENTAGE || a.queue_priority > KFD_MAX_QUEUE_PRIORITY {
        return Err(Errno::EINVAL);
    }
    if a.ring_size != 0 && !a.ring_size.is_power_of_two() {
        return Err(Errno::EINVAL);
    }
    let g = emu.queues.inner.lock().unwrap_or_else(|p| p.into_inner());
    let e = g.0.get(&a.queue_id).ok_or(Errno::EINVAL)?;
    let on = a.queue_percentage > 0 && a.ring_base_address != 0;
    e.ctl.enabled.store(on, Ordering::Release);
    e.ctl.priority.store(a.queue_priority, Ordering::Release);
    e.ctl.gpu.doorbell_rung();
    Ok(())
}

/// `SET_CU_MASK`, with `kfd_ioctl_set_cu_mask`'s checks: a bit count that is zero or not a
/// multiple of 32 is EINVAL, more than 1024 bits are cut to 1024, an unreadable mask is EFAULT,
/// and an unknown queue is EFAULT (`pqm_update_mqd`).
pub(crate) fn set_cu_mask(emu: &Emulator, a: &kfd_ioctl_set_cu_mask_args) -> Result<(), Errno> {
    const MAX_CUS: u32 = 1024;
    if a.num_cu_mask == 0 || a.num_cu_mask % 32 != 0 {
        return Err(Errno::EINVAL);
    }
    if a.cu_mask_ptr == 0 {
        return Err(Errno::EFAULT);
    }
    let words = (a.num_cu_mask.min(MAX_CUS) / 32) as usize;
    // SAFETY: the caller of the ioctl guarantees `num_cu_mask / 32` words at the pointer (the
    // Driver::ioctl contract); this is what copy_from_user reads.
    let mask = unsafe { std::slice::from_raw_parts(a.cu_mask_ptr as *const u32, words) }.to_vec();
    let g = emu.queues.inner.lock().unwrap_or_else(|p| p.into_inner());
    let e = g.0.get(&a.queue_id).ok_or(Errno::EFAULT)?;
    *e.ctl.cu_mask.lock().unwrap_or_else(|p| p.into_inner()) = mask;
    Ok(())
}

impl Emulator {
    /// The CU mask last set on queue `queue_id` (empty if none), `None` for an unknown queue.
    pub fn queue_cu_mask(&self, queue_id: u32) -> Option<Vec<u32>> {
        let g = self.queues.inner.lock().unwrap_or_else(|p| p.into_inner());
        let e = g.0.get(&queue_id)?;
        let mask = e
            .ctl
            .cu_mask
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        Some(mask)
    }

    /// Whether queue `queue_id` holds its GPU's global wave sync resources.
    pub fn queue_holds_gws(&self, queue_id: u32) -> bool {
        let g = self.queues.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.0.get(&queue_id).is_some_and(|e| e.gws)
    }

    /// The error queue `queue_id` stopped with, if any.
    pub fn queue_error(&self, queue_id: u32) -> Option<QueueErrorCode> {
        let g = self.queues.inner.lock().unwrap_or_else(|p| p.into_inner());
        let e = g.0.get(&queue_id)?;
        let err = *e.ctl.error.lock().unwrap_or_else(|p| p.into_inner());
        err
    }
}
