//! A GPU's view of memory: its page table (which VA ranges are mapped to it, and where the
//! bytes live on the host) and checked accessors for the packet processors and emulated kernels.
//!
//! GPU VA equals host VA, but the bytes behind a GPU mapping are reached through the emulator's
//! own mapping of the buffer (device-local VRAM has no CPU mapping at its VA). Every access is
//! checked against the page table, and no unmap can pull memory from under an access; an access
//! outside the table is a [`GpuFault`], as a GPU page fault.
//!
//! Accesses are frequent (every load and store of an emulated wave, every packet-processor
//! read) and the table changes rarely, so the hit path takes no shared lock: each thread keeps
//! the few mappings it used last with the table's generation when it looked them up, and an
//! access that finds its range there pins itself in its thread's reader slot (no shared cache
//! line is written), checks the generation is still current and goes ahead. A table change
//! bumps the generation and then waits until no pinned access remains, so an access that saw
//! the old generation finishes before the unmap returns (as one holding the table's read lock
//! would). Everything else (a miss, a fault) looks the table up under its read lock.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::RwLock;

/// A GPU page fault: an access the page table does not allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("GPU page fault at {va:#x} ({}, {kind})", if *write { "write" } else { "read" })]
pub struct GpuFault {
    /// The faulting address.
    pub va: u64,
    /// Whether the access was a write.
    pub write: bool,
    /// Why the page table refused it.
    pub kind: FaultKind,
}

impl GpuFault {
    /// An access to an address with no mapping.
    pub fn not_present(va: u64, write: bool) -> GpuFault {
        GpuFault {
            va,
            write,
            kind: FaultKind::NotPresent,
        }
    }
}

/// Why a GPU access faulted, as KFD reports it in a memory exception's failure flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// No mapping at the address (`NotPresent`).
    NotPresent,
    /// A write to a page mapped without write permission (`ReadOnly`).
    ReadOnly,
    /// An instruction fetch from a page mapped without execute permission (`NoExecute`).
    NoExecute,
}

impl std::fmt::Display for FaultKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FaultKind::NotPresent => "page not present",
            FaultKind::ReadOnly => "write to a read-only page",
            FaultKind::NoExecute => "fetch from a non-executable page",
        })
    }
}

/// What a mapping allows besides reading (amdgpu maps every page readable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Perms {
    /// `AMDGPU_VM_PAGE_WRITEABLE`: the BO was allocated with `KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE`.
    pub write: bool,
    /// `AMDGPU_VM_PAGE_EXECUTABLE`: allocated with `KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE`.
    pub exec: bool,
}

impl Perms {
    /// Readable, writable and executable.
    pub const ALL: Perms = Perms {
        write: true,
        exec: true,
    };
}

/// One mapping of the page table, as [`GpuVm::mapping_at`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MappingInfo {
    /// First address.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// The buffer's KFD handle.
    pub handle: u64,
    /// Permissions.
    pub perms: Perms,
}

#[derive(Clone, Copy, Debug)]
struct Mapping {
    len: u64,
    /// Host address of the mapping's first byte.
    host: usize,
    handle: u64,
    perms: Perms,
    /// Host-visible VRAM: the CPU may have written it through the HDP (see [`crate::hdp`]).
    visible_vram: bool,
    /// Which atomics to it happen (see [`HostAtomics`]).
    atomics: HostAtomics,
}

/// What a mapping's memory is, beyond what it allows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MappingKind {
    /// Host-visible VRAM, which the CPU writes through the HDP.
    pub(crate) visible_vram: bool,
    /// Which of the GPU's atomics on it happen.
    pub(crate) atomics: HostAtomics,
}

/// Which atomics a GPU's access to some memory performs. An atomic that does not happen leaves
/// the memory as it was and returns what it held, as a wave sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum HostAtomics {
    /// Every atomic happens (VRAM; system memory on a host that routes PCIe AtomicOps).
    #[default]
    Performed,
    /// Fine-grained (coherent) system memory that gfx90a reaches over PCIe: its float atomics
    /// (`global_atomic_add_f32` and kin) do not happen, as on an MI200 (HIP's documentation
    /// of unsafe FP atomics; strict mode only).
    FloatDropped,
    /// System memory on a host without PCIe AtomicOps ([`crate::Platform::pcie_atomics`]):
    /// no atomic happens.
    Dropped,
}

impl HostAtomics {
    /// Whether an atomic (a float one: `float`) does not happen.
    pub(crate) fn drops(self, float: bool) -> bool {
        match self {
            HostAtomics::Performed => false,
            HostAtomics::FloatDropped => float,
            HostAtomics::Dropped => true,
        }
    }
}

/// Mappings sorted by start address. A sorted vector rather than a tree: lookups dominate (every
/// packet-processor access), the table is small (buffers, not pages), and a lookup can start at
/// the entry the thread hit last.
#[derive(Debug, Default)]
struct Table {
    entries: Vec<(u64, Mapping)>,
}

thread_local! {
    /// Index of the entry this thread's last lookup found (in whichever table; only a hint,
    /// checked before use). Packet processors touch the same few buffers over and over.
    static LAST_HIT: Cell<usize> = const { Cell::new(0) };
}

impl Table {
    /// The entry containing `va`: start and mapping.
    fn entry_at(&self, va: u64) -> Option<&(u64, Mapping)> {
        let hint = LAST_HIT.with(Cell::get);
        if let Some(e) = self.entries.get(hint) {
            if e.0 <= va && va - e.0 < e.1.len {
                return Some(e);
            }
        }
        let i = self.entries.partition_point(|e| e.0 <= va).checked_sub(1)?;
        LAST_HIT.with(|h| h.set(i));
        self.entries.get(i)
    }

    fn insert(&mut self, va: u64, m: Mapping) {
        match self.entries.binary_search_by_key(&va, |e| e.0) {
            Ok(i) => self.entries[i].1 = m,
            Err(i) => self.entries.insert(i, (va, m)),
        }
    }

    fn remove(&mut self, va: u64) -> bool {
        match self.entries.binary_search_by_key(&va, |e| e.0) {
            Ok(i) => {
                self.entries.remove(i);
                true
            }
            Err(_) => false,
        }
    }
}

/// Threads that can use the lock-free hit path at once (each owns a reader slot while it
/// lives); threads beyond them, and threads being torn down, use the table's lock.
const READER_SLOTS: usize = 256;
/// Mappings each thread remembers: a copy reads one buffer and writes another; a kernel reads
/// its dispatch packet and kernarg segment besides its buffers (a vector add: five mappings,
/// which four entries missed on every access, each miss taking the table's lock).
const CACHED_MAPPINGS: usize = 8;

/// One thread's count of pinned fast-path accesses (written by that thread only, read by table
/// changes), alone on its cache line.
#[repr(align(128))]
struct ReaderSlot {
    pins: AtomicUsize,
    owned: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE_SLOT: ReaderSlot = ReaderSlot {
    pins: AtomicUsize::new(0),
    owned: AtomicBool::new(false),
};
/// Reader slots of every thread and every GPU (a table change waits for the pinned accesses of
/// all of them, each a single copy).
static READERS: [ReaderSlot; READER_SLOTS] = [FREE_SLOT; READER_SLOTS];

/// A thread's claim on a reader slot, given back when the thread ends.
struct SlotClaim(Option<usize>);

impl SlotClaim {
    fn new() -> SlotClaim {
        SlotClaim(READERS.iter().position(|s| {
            s.owned
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        }))
    }
}

impl Drop for SlotClaim {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            READERS[i].owned.store(false, Ordering::Release);
        }
    }
}

/// A mapping as a thread remembers it: valid while its GPU's generation is `generation`.
#[derive(Clone, Copy, Debug)]
struct CachedMapping {
    /// [`GpuVm::id`] (0: empty).
    vm: u64,
    generation: u64,
    start: u64,
    len: u64,
    host: usize,
    perms: Perms,
    visible_vram: bool,
}

const NO_MAPPING: CachedMapping = CachedMapping {
    vm: 0,
    generation: 0,
    start: 0,
    len: 0,
    host: 0,
    perms: Perms {
        write: false,
        exec: false,
    },
    visible_vram: false,
};

thread_local! {
    /// The mappings this thread looked up last, most recent first.
    static CACHE: [Cell<CachedMapping>; CACHED_MAPPINGS] =
        const { [const { Cell::new(NO_MAPPING) }; CACHED_MAPPINGS] };
    /// This thread's reader slot.
    static SLOT: SlotClaim = SlotClaim::new();
}

/// A fast-path access in progress: its thread's pin count raised by one until dropped (also on
/// a panic inside the access).
struct Pin {
    slot: &'static AtomicUsize,
    before: usize,
}

impl Pin {
    /// Pins this thread, if it has a reader slot. The SeqCst store orders the pin before the
    /// caller's SeqCst load of a table's generation (see [`GpuVm::change`]).
    #[inline]
    fn new() -> Option<Pin> {
        let i = SLOT.try_with(|s| s.0).ok().flatten()?;
        let slot = &READERS[i].pins;
        // Only this thread writes its slot: no read-modify-write needed.
        let before = slot.load(Ordering::Relaxed);
        slot.store(before + 1, Ordering::SeqCst);
        Some(Pin { slot, before })
    }
}

impl Drop for Pin {
    #[inline]
    fn drop(&mut self) {
        // A plain store (Release: the access happens before a table change sees it gone), so
        // the copy just made need not drain before the wave goes on.
        self.slot.store(self.before, Ordering::Release);
    }
}

/// What a GPU's retry faults go to with XNACK on: asked about a miss at `va..va+len` (a
/// write if `write`), it maps what the process's memory allows and says whether the access
/// may be tried again (`svm_range_restore_pages`).
pub(crate) type RetryFaultHandler = dyn Fn(u64, u64, bool) -> bool + Send + Sync;

/// One GPU's page table and memory accessors.
#[derive(Debug)]
pub struct GpuVm {
    table: RwLock<Table>,
    /// Distinguishes this table from every other in the threads' caches.
    id: u64,
    /// Bumped by every change of the table (under its write lock).
    generation: AtomicU64,
    /// Strict mode: reads of host-visible VRAM are checked for unflushed CPU writes.
    hdp_checks: bool,
    /// Reads that saw VRAM the CPU wrote and no HDP flush made visible yet.
    pub(crate) unflushed_reads: std::sync::atomic::AtomicU64,
    /// The retry-fault handler while the process runs with XNACK on (`None`: every miss is a
    /// fault, as with XNACK off).
    retry: RwLock<Option<RetryHandler>>,
    /// A mapping that drops every atomic ([`HostAtomics::Dropped`]) was ever made: until then
    /// an integer atomic needs no look-up (the interpreter's atomics stay one load away).
    drops_any_atomic: AtomicBool,
}

/// [`RetryFaultHandler`], shareable and printable.
#[derive(Clone)]
struct RetryHandler(std::sync::Arc<RetryFaultHandler>);

impl std::fmt::Debug for RetryHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RetryHandler")
    }
}

impl Default for GpuVm {
    fn default() -> GpuVm {
        GpuVm::new(false)
    }
}

impl GpuVm {
    pub(crate) fn new(hdp_checks: bool) -> GpuVm {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        GpuVm {
            table: RwLock::default(),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            generation: AtomicU64::new(0),
            hdp_checks,
            unflushed_reads: AtomicU64::new(0),
            retry: RwLock::new(None),
            drops_any_atomic: AtomicBool::new(false),
        }
    }

    /// Sets (XNACK on) or clears (off) the handler of retry faults.
    pub(crate) fn set_retry_handler(&self, h: Option<std::sync::Arc<RetryFaultHandler>>) {
        *self.retry.write().unwrap_or_else(|p| p.into_inner()) = h.map(RetryHandler);
    }

    /// A miss that XNACK may resolve: a not-present `fault` goes to the retry handler, if any,
    /// with no lock of the table held (it maps). `true`: try the access again.
    fn retried(&self, fault: GpuFault, va: u64, len: u64) -> bool {
        if fault.kind != FaultKind::NotPresent {
            return false;
        }
        let h = self.retry.read().unwrap_or_else(|p| p.into_inner()).clone();
        h.is_some_and(|h| (h.0)(va, len, fault.write))
    }

    /// Runs `f` with the table held for reading, once more if it fails with a miss XNACK
    /// resolves (the handler runs between the two, with the table free).
    fn held_retrying<R>(
        &self,
        len: u64,
        mut f: impl FnMut(&Table) -> Result<R, GpuFault>,
    ) -> Result<R, GpuFault> {
        let fault = {
            let t = self.table.read().unwrap_or_else(|p| p.into_inner());
            match f(&t) {
                Err(fault) => fault,
                ok => return ok,
            }
        };
        if !self.retried(fault, fault.va, len) {
            return Err(fault);
        }
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        f(&t)
    }

    /// Changes the table: `f` runs under the write lock, then the generation moves on and the
    /// change waits for every fast-path access that may have seen the table as it was.
    fn change<R>(&self, f: impl FnOnce(&mut Table) -> R) -> R {
        let mut t = self.table.write().unwrap_or_else(|p| p.into_inner());
        let r = f(&mut t);
        // SeqCst pairs with the readers' pin-then-load (`pinned`): either a reader sees the new
        // generation, or this sees its pin and waits for it to go.
        self.generation.fetch_add(1, Ordering::SeqCst);
        for slot in &READERS {
            let mut spins = 0u32;
            while slot.pins.load(Ordering::SeqCst) != 0 {
                spins += 1;
                if spins < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        drop(t);
        r
    }

    /// The host address of `va..va+len` for an access allowed by `ok`, from this thread's
    /// cached mappings, with the access pinned (the mapping stays until the pin is dropped);
    /// `None` when the cache cannot answer (not cached, stale, out of range or refused: the
    /// table decides, under its lock).
    #[inline]
    fn pinned(
        &self,
        va: u64,
        len: u64,
        ok: impl Fn(&CachedMapping) -> bool,
    ) -> Option<(Pin, usize, bool)> {
        let end = va.checked_add(len)?;
        let pin = Pin::new()?;
        let generation = self.generation.load(Ordering::SeqCst);
        CACHE
            .with(|cache| {
                cache.iter().find_map(|c| {
                    let m = c.get();
                    (m.vm == self.id
                        && m.generation == generation
                        && m.start <= va
                        && end <= m.start + m.len
                        && ok(&m))
                    .then(|| (m.host + (va - m.start) as usize, m.visible_vram))
                })
            })
            .map(|(host, visible_vram)| (pin, host, visible_vram))
    }

    /// Remembers the mapping at `start` (looked up under the table's lock) for this thread.
    fn remember(&self, start: u64, m: &Mapping) {
        let entry = CachedMapping {
            vm: self.id,
            // Under the table's lock: the generation of the table `m` came from.
            generation: self.generation.load(Ordering::Acquire),
            start,
            len: m.len,
            host: m.host,
            perms: m.perms,
            visible_vram: m.visible_vram,
        };
        CACHE.with(|cache| {
            // Most recent first: shift the others down over the entry for the same mapping (or
            // the oldest).
            let at = cache
                .iter()
                .position(|c| {
                    let c = c.get();
                    c.vm == self.id && c.start == start
                })
                .unwrap_or(CACHED_MAPPINGS - 1);
            for i in (1..=at).rev() {
                cache[i].set(cache[i - 1].get());
            }
            cache[0].set(entry);
        });
    }

    /// Counts and reports a read of `va..va+len` that would miss CPU writes still in the HDP.
    fn check_hdp(&self, va: u64, len: u64) {
        if let Some(page) = crate::hdp::unflushed(va, len) {
            let n = self.unflushed_reads.fetch_add(1, Ordering::Relaxed);
            if n < 8 {
                log::error!(
                    "kfd-emu: a GPU read of {va:#x}+{len:#x} hits VRAM page {page:#x}, which the \
                     CPU wrote with no HDP flush since: a GPU may read the old data"
                );
            }
        }
    }

    fn find(&self, table: &Table, va: u64, len: u64, write: bool) -> Result<usize, GpuFault> {
        let host = find(table, va, len, write)?;
        if let Some((start, m)) = table.entry_at(va) {
            self.remember(*start, m);
            if self.hdp_checks && !write && m.visible_vram {
                self.check_hdp(va, len);
            }
        }
        Ok(host)
    }

    /// [`GpuVm::pinned`] for a read or write of `va..va+len`, with the HDP check of a read.
    #[inline]
    fn pinned_access(&self, va: u64, len: u64, write: bool) -> Option<(Pin, usize)> {
        let (pin, host, visible_vram) = self.pinned(va, len, |m| !write || m.perms.write)?;
        if self.hdp_checks && !write && visible_vram {
            self.check_hdp(va, len);
        }
        Some((pin, host))
    }
}

fn find(table: &Table, va: u64, len: u64, write: bool) -> Result<usize, GpuFault> {
    let fault = GpuFault::not_present(va, write);
    let &(start, m) = table.entry_at(va).ok_or(fault)?;
    let end = va.checked_add(len).ok_or(fault)?;
    if end > start + m.len {
        // Report the first unmapped byte, as the hardware would.
        return Err(GpuFault::not_present((start + m.len).max(va), write));
    }
    if write && !m.perms.write {
        return Err(GpuFault {
            va,
            write,
            kind: FaultKind::ReadOnly,
        });
    }
    Ok(m.host + (va - start) as usize)
}

impl GpuVm {
    #[cfg(test)]
    pub(crate) fn map(&self, va: u64, len: u64, host: *mut u8, handle: u64, perms: Perms) {
        self.map_memory(va, len, host, handle, perms, MappingKind::default());
    }

    /// [`GpuVm::map`] of memory of `kind`.
    pub(crate) fn map_memory(
        &self,
        va: u64,
        len: u64,
        host: *mut u8,
        handle: u64,
        perms: Perms,
        kind: MappingKind,
    ) {
        let MappingKind {
            visible_vram,
            atomics,
        } = kind;
        if atomics == HostAtomics::Dropped {
            self.drops_any_atomic.store(true, Ordering::Release);
        }
        let m = Mapping {
            atomics,
            len,
            host: host as usize,
            handle,
            perms,
            visible_vram,
        };
        self.change(|t| t.insert(va, m));
    }

    /// Removes the mapping at `va`; when this returns, no access to it is in progress.
    pub(crate) fn unmap(&self, va: u64) -> bool {
        self.change(|t| t.remove(va))
    }

    /// Whether `va..va+len` is entirely mapped.
    pub fn is_mapped(&self, va: u64, len: u64) -> bool {
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        find(&t, va, len.max(1), false).is_ok()
    }

    /// Every mapping as `(va, len)`, in address order.
    pub fn mappings(&self) -> Vec<(u64, u64)> {
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        t.entries.iter().map(|&(va, m)| (va, m.len)).collect()
    }

    /// Total mapped bytes.
    pub fn mapped_bytes(&self) -> u64 {
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        t.entries.iter().map(|e| e.1.len).sum()
    }

    /// Handle of the buffer mapped at `va`, if any.
    pub fn handle_at(&self, va: u64) -> Option<u64> {
        self.mapping_at(va).map(|m| m.handle)
    }

    /// The mapping containing `va`, if any (`amdgpu_vm_bo_lookup_mapping`).
    pub fn mapping_at(&self, va: u64) -> Option<MappingInfo> {
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        let &(start, m) = t.entry_at(va)?;
        (va < start + m.len).then_some(MappingInfo {
            start,
            len: m.len,
            handle: m.handle,
            perms: m.perms,
        })
    }

    /// The host address of `va..va+len`, for a caller that holds the mapping so that it cannot
    /// be unmapped (a queue holds its ring and pointers: `kfd_queue_acquire_buffers`) and may
    /// then access it directly. `None` when the range is not mapped within one mapping, is not
    /// writable and `write` asks for it, or is host-visible VRAM in strict mode (whose reads the
    /// page table checks against unflushed CPU writes, which a direct access would skip).
    pub(crate) fn held_host(&self, va: u64, len: u64, write: bool) -> Option<usize> {
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        let &(start, m) = t.entry_at(va)?;
        let end = va.checked_add(len)?;
        let usable = end <= start + m.len
            && (!write || m.perms.write)
            && !(self.hdp_checks && m.visible_vram);
        usable.then(|| m.host + (va - start) as usize)
    }

    /// Whether an atomic (a float one: `float`) at `va` does not happen ([`HostAtomics`]).
    pub(crate) fn drops_atomic(&self, va: u64, float: bool) -> bool {
        if !float && !self.drops_any_atomic.load(Ordering::Acquire) {
            return false;
        }
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        t.entry_at(va).is_some_and(|(_, m)| m.atomics.drops(float))
    }

    /// Checks that the GPU may fetch instructions from `va..va+len`: mapped, and executable.
    pub fn check_exec(&self, va: u64, len: u64) -> Result<(), GpuFault> {
        if self.pinned(va, len.max(1), |m| m.perms.exec).is_some() {
            return Ok(());
        }
        self.held_retrying(len.max(1), |t| {
            self.find(t, va, len.max(1), false)?;
            match t.entry_at(va) {
                Some((_, m)) if m.perms.exec => Ok(()),
                _ => Err(GpuFault {
                    va,
                    write: false,
                    kind: FaultKind::NoExecute,
                }),
            }
        })
    }

    /// Runs `f` with a host pointer to `va..va+len`, holding the table so the range stays mapped.
    pub fn with_range<R>(
        &self,
        va: u64,
        len: u64,
        write: bool,
        f: impl FnOnce(*mut u8) -> R,
    ) -> Result<R, GpuFault> {
        if let Some((_pin, host)) = self.pinned_access(va, len.max(1), write) {
            return Ok(f(host as *mut u8));
        }
        let mut f = Some(f);
        self.held_retrying(len.max(1), |t| {
            let host = self.find(t, va, len.max(1), write)?;
            Ok(f.take().map(|f| f(host as *mut u8)))
        })
        .map(|r| r.expect("the access runs once"))
    }

    /// Runs `f` with host pointers to a destination range (written) and a source range (read),
    /// both checked under one hold of the table (as [`GpuVm::copy`] does).
    pub fn with_dst_src<R>(
        &self,
        dst: u64,
        src: u64,
        len: u64,
        f: impl FnOnce(*mut u8, *const u8) -> R,
    ) -> Result<R, GpuFault> {
        let n = len.max(1);
        if let Some((_s_pin, s, visible_vram)) = self.pinned(src, n, |_| true) {
            if let Some((_d_pin, d, _)) = self.pinned(dst, n, |m| m.perms.write) {
                if self.hdp_checks && visible_vram {
                    self.check_hdp(src, n);
                }
                return Ok(f(d as *mut u8, s as *const u8));
            }
        }
        let mut f = Some(f);
        // Each range may miss once (XNACK resolves one miss per try).
        let mut tries = 0;
        loop {
            tries += 1;
            let r = self.held_retrying(len.max(1), |t| {
                let s = self.find(t, src, len.max(1), false)?;
                let d = self.find(t, dst, len.max(1), true)?;
                Ok(f.take().map(|f| f(d as *mut u8, s as *const u8)))
            });
            match r {
                Ok(r) => return Ok(r.expect("the copy runs once")),
                Err(fault) if tries < 2 && self.retried(fault, fault.va, len.max(1)) => {}
                Err(fault) => return Err(fault),
            }
        }
    }

    fn aligned<T>(va: u64, write: bool) -> Result<(), GpuFault> {
        if va % std::mem::align_of::<T>() as u64 != 0 {
            // Misaligned atomics are not something the emulated memory path supports; report it
            // like an access fault so the queue stops instead of the emulator crashing.
            return Err(GpuFault::not_present(va, write));
        }
        Ok(())
    }

    /// Reads a u32.
    pub fn read_u32(&self, va: u64) -> Result<u32, GpuFault> {
        Self::aligned::<u32>(va, false)?;
        // SAFETY: the range is mapped (checked under the lock) and 4-byte aligned.
        self.with_range(va, 4, false, |p| unsafe {
            (*(p as *const AtomicU32)).load(Ordering::Acquire)
        })
    }

    /// Writes a u32.
    pub fn write_u32(&self, va: u64, v: u32) -> Result<(), GpuFault> {
        Self::aligned::<u32>(va, true)?;
        // SAFETY: as in `read_u32`.
        self.with_range(va, 4, true, |p| unsafe {
            (*(p as *const AtomicU32)).store(v, Ordering::Release)
        })
    }

    /// Reads a u64.
    pub fn read_u64(&self, va: u64) -> Result<u64, GpuFault> {
        Self::aligned::<u64>(va, false)?;
        // SAFETY: mapped and 8-byte aligned.
        self.with_range(va, 8, false, |p| unsafe {
            (*(p as *const AtomicU64)).load(Ordering::Acquire)
        })
    }

    /// Writes a u64.
    pub fn write_u64(&self, va: u64, v: u64) -> Result<(), GpuFault> {
        Self::aligned::<u64>(va, true)?;
        // SAFETY: mapped and 8-byte aligned.
        self.with_range(va, 8, true, |p| unsafe {
            (*(p as *const AtomicU64)).store(v, Ordering::Release)
        })
    }

    /// Atomically adds to a u64 and returns the old value.
    pub fn atomic_add_u64(&self, va: u64, v: u64) -> Result<u64, GpuFault> {
        Self::aligned::<u64>(va, true)?;
        // SAFETY: mapped and 8-byte aligned.
        self.with_range(va, 8, true, |p| unsafe {
            (*(p as *const AtomicU64)).fetch_add(v, Ordering::AcqRel)
        })
    }

    /// Atomically adds to an i64 and returns the new value (signal decrements).
    pub fn atomic_add_i64(&self, va: u64, v: i64) -> Result<i64, GpuFault> {
        Self::aligned::<i64>(va, true)?;
        // SAFETY: mapped and 8-byte aligned.
        self.with_range(va, 8, true, |p| unsafe {
            (*(p as *const AtomicI64)).fetch_add(v, Ordering::AcqRel) + v
        })
    }

    /// Reads `out.len()` bytes.
    pub fn read(&self, va: u64, out: &mut [u8]) -> Result<(), GpuFault> {
        // SAFETY: `out.len()` bytes at `p` are mapped; `out` is a separate Rust buffer. Racing
        // CPU writes may be observed torn, as on hardware.
        self.with_range(va, out.len() as u64, false, |p| unsafe {
            std::ptr::copy_nonoverlapping(p, out.as_mut_ptr(), out.len())
        })
    }

    /// Writes `data`.
    pub fn write(&self, va: u64, data: &[u8]) -> Result<(), GpuFault> {
        // SAFETY: as in `read`, reversed.
        self.with_range(va, data.len() as u64, true, |p| unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len())
        })
    }

    /// Copies `len` bytes from `src` to `dst` (both through this GPU's page table; possibly
    /// overlapping).
    pub fn copy(&self, dst: u64, src: u64, len: u64) -> Result<(), GpuFault> {
        self.with_dst_src(dst, src, len, |d, s| {
            // SAFETY: both ranges are mapped while `with_dst_src` runs this; `copy` tolerates
            // overlap.
            unsafe { std::ptr::copy(s, d, len as usize) }
        })
    }

    /// Fills `len` bytes at `dst` with the 32-bit `pattern` (len a multiple of 4).
    pub fn fill_u32(&self, dst: u64, pattern: u32, len: u64) -> Result<(), GpuFault> {
        self.with_range(dst, len, true, |p| {
            let bytes = pattern.to_le_bytes();
            for i in 0..len as usize {
                // SAFETY: `i` < len, inside the mapped range.
                unsafe { p.add(i).write_volatile(bytes[i % 4]) };
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translate_and_fault() {
        let vm = GpuVm::default();
        let mut backing = vec![0u64; 512];
        vm.map(0x10_0000, 4096, backing.as_mut_ptr().cast(), 1, Perms::ALL);
        vm.write_u64(0x10_0008, 42).unwrap();
        assert_eq!(backing[1], 42);
        assert_eq!(vm.read_u64(0x10_0008), Ok(42));
        assert_eq!(
            vm.read_u32(0x10_1000),
            Err(GpuFault::not_present(0x10_1000, false))
        );
        assert_eq!(
            vm.write(0x10_0FFC, &[0; 8]),
            Err(GpuFault::not_present(0x10_1000, true))
        );
        assert_eq!(
            vm.read_u32(0xF_FFFC),
            Err(GpuFault::not_present(0xF_FFFC, false))
        );
        assert!(vm.is_mapped(0x10_0000, 4096) && !vm.is_mapped(0x10_0000, 4097));
        assert_eq!(vm.atomic_add_i64(0x10_0008, -2), Ok(40));
        vm.fill_u32(0x10_0010, 0xAABBCCDD, 8).unwrap();
        assert_eq!(backing[2], 0xAABBCCDD_AABBCCDD);
        vm.copy(0x10_0018, 0x10_0010, 8).unwrap();
        assert_eq!(backing[3], backing[2]);
        assert!(vm.unmap(0x10_0000));
        assert!(vm.read_u64(0x10_0008).is_err());
    }

    #[test]
    fn cached_mappings_follow_the_table() {
        // The same VA mapped to one buffer, then (after unmap) to another, then read-only: a
        // thread's cached mapping must not outlive any of those changes.
        let vm = GpuVm::default();
        let mut a = vec![1u64; 512];
        let mut b = vec![2u64; 512];
        vm.map(0x20_0000, 4096, a.as_mut_ptr().cast(), 1, Perms::ALL);
        assert_eq!(vm.read_u64(0x20_0000), Ok(1));
        assert_eq!(vm.read_u64(0x20_0008), Ok(1));
        assert!(vm.unmap(0x20_0000));
        assert!(vm.read_u64(0x20_0000).is_err());
        vm.map(0x20_0000, 4096, b.as_mut_ptr().cast(), 2, Perms::ALL);
        assert_eq!(vm.read_u64(0x20_0000), Ok(2));
        vm.write_u64(0x20_0000, 3).unwrap();
        assert_eq!(b[0], 3);
        // Replaced in place by a read-only mapping: writes fault, reads still work.
        vm.map(0x20_0000, 4096, b.as_mut_ptr().cast(), 2, Perms::default());
        assert_eq!(
            vm.write_u64(0x20_0000, 4).map_err(|f| f.kind),
            Err(FaultKind::ReadOnly)
        );
        assert_eq!(vm.read_u64(0x20_0000), Ok(3));
        // Another GPU's table with the same VA is not confused with this one.
        let other = GpuVm::default();
        other.map(0x20_0000, 4096, a.as_mut_ptr().cast(), 1, Perms::ALL);
        assert_eq!(other.read_u64(0x20_0000), Ok(1));
        assert_eq!(vm.read_u64(0x20_0000), Ok(3));
        // A range running off the cached mapping faults at its first unmapped byte.
        assert_eq!(
            vm.read(0x20_0FFC, &mut [0; 8]),
            Err(GpuFault::not_present(0x20_1000, false))
        );
    }

    #[test]
    fn unmap_waits_for_accesses_in_progress() {
        // Readers hammer a mapping through the fast path; once `unmap` returns, the backing is
        // overwritten with a marker no reader may ever see (a read that began before the unmap
        // finished before it returned; later ones fault).
        const MARKER: u64 = 0xDEAD_BEEF_DEAD_BEEF;
        for round in 0..20u64 {
            let vm = GpuVm::default();
            let mut backing = vec![round; 512];
            let ptr = backing.as_mut_ptr();
            vm.map(0x30_0000, 4096, ptr.cast(), 1, Perms::ALL);
            let stop = AtomicBool::new(false);
            std::thread::scope(|scope| {
                for _ in 0..3 {
                    scope.spawn(|| {
                        let mut buf = [0u8; 4096];
                        while !stop.load(Ordering::Relaxed) {
                            match vm.read(0x30_0000, &mut buf) {
                                Ok(()) => {
                                    for c in buf.chunks_exact(8) {
                                        let v = u64::from_le_bytes(c.try_into().unwrap());
                                        assert_ne!(v, MARKER, "read after unmap returned");
                                    }
                                }
                                Err(_) => break,
                            }
                        }
                    });
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
                assert!(vm.unmap(0x30_0000));
                for i in 0..512 {
                    // SAFETY: `backing` is alive; no reader touches it once unmap returned
                    // (what the test checks).
                    unsafe { ptr.add(i).write_volatile(MARKER) };
                }
                stop.store(true, Ordering::Relaxed);
            });
            drop(backing);
        }
    }

    #[test]
    fn lookups_across_many_mappings_and_gaps() {
        // Lookups jump between mappings (so the last-hit hint is wrong most of the time) and
        // into the gaps between them, and the table changes under the hint.
        let vm = GpuVm::default();
        let mut backing: Vec<Vec<u64>> = (0..16).map(|_| vec![0u64; 512]).collect();
        for (i, b) in backing.iter_mut().enumerate() {
            vm.map(
                0x100_0000 + i as u64 * 0x2000,
                4096,
                b.as_mut_ptr().cast(),
                i as u64,
                Perms::ALL,
            );
        }
        for round in 0..3u64 {
            for i in (0..16u64).rev().chain(0..16) {
                let va = 0x100_0000 + i * 0x2000;
                vm.write_u64(va + 8 * round, i * 100 + round).unwrap();
                assert_eq!(vm.read_u64(va + 8 * round), Ok(i * 100 + round));
                assert_eq!(vm.handle_at(va + 4095), Some(i));
                // The page after each mapping is a gap.
                assert_eq!(vm.handle_at(va + 4096), None);
                assert!(vm.read_u32(va + 4096).is_err());
            }
        }
        assert!(vm.unmap(0x100_0000 + 5 * 0x2000));
        assert!(vm.read_u64(0x100_0000 + 5 * 0x2000).is_err());
        assert_eq!(vm.read_u64(0x100_0000 + 6 * 0x2000), Ok(600));
        assert_eq!(vm.mappings().len(), 15);
        assert_eq!(vm.mapped_bytes(), 15 * 4096);
        for (i, b) in backing.iter().enumerate() {
            if i != 5 {
                assert_eq!(b[0], i as u64 * 100);
            }
        }
    }
}
