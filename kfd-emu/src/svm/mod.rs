//! Shared virtual memory (`AMDKFD_IOC_SVM`, KFD 1.5): attributes on ranges of the process's
//! own memory, as `kfd_svm.c` keeps them, and GPU mappings that follow them.
//!
//! A range is any page-aligned span of mapped host memory (EFAULT otherwise) that overlaps no
//! KFD buffer (EADDRINUSE). `SET_ATTR` splits the ranges it touches and applies each attribute
//! to the part inside; a GPU given `ACCESS` or `ACCESS_IN_PLACE` maps the range (GPU VA = host
//! VA, the bytes are the process's own), `NO_ACCESS` unmaps it. With XNACK off, as on every
//! emulated part, a GPU reaches SVM memory only through such a mapping: anything else is a page
//! fault. `GET_ATTR` merges a span's ranges as the kernel does: a location that differs between
//! them reads as undefined, flags are those all ranges have, access is `ACCESS` only if every
//! range grants it, and an unregistered span reads as the defaults.
//!
//! Migration is shown, not performed: a prefetch to a GPU records the location (reported by
//! `GET_ATTR`) and counts the bytes ([`crate::Emulator::svm_migrated_bytes`]); the bytes stay
//! in host memory, where the CPU and every mapping GPU see them. Unmapping the host memory
//! under a range does not remove it (the kernel's MMU notifier does).

mod gpu_map;
mod notifier;
mod xnack;

use crate::host_vma::HostMap;
use crate::Emulator;
use gpu_map::GpuMappings;
use kfd_sys::bindings::*;
use kfd_sys::Errno;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

const PAGE: u64 = 4096;
/// `svm_default_granularity`: 2^9 pages (2 MiB).
const DEFAULT_GRANULARITY: u32 = 9;
const DEFAULT_FLAGS: u32 = KFD_IOCTL_SVM_FLAG_HOST_ACCESS | KFD_IOCTL_SVM_FLAG_COHERENT;
/// Handle the page table shows for SVM mappings (no KFD buffer behind them).
pub(crate) const SVM_HANDLE: u64 = u64::MAX;

#[derive(Clone, Debug, PartialEq)]
struct Range {
    start: u64,
    end: u64,
    preferred: u32,
    prefetch: u32,
    flags: u32,
    granularity: u32,
    /// GPU ids with access, and with access in place.
    access: BTreeSet<u32>,
    in_place: BTreeSet<u32>,
    /// Queues whose context-save area lies in this range (`prange->queue_refcount`).
    queue_refs: u32,
    /// Where the bytes are said to be (`prange->actual_loc`): 0 for system memory, else a
    /// GPU id. Only prefetches move it; the bytes themselves stay in host memory.
    actual: u32,
}

impl Range {
    fn new(start: u64, end: u64) -> Range {
        Range {
            start,
            end,
            preferred: KFD_IOCTL_SVM_LOCATION_UNDEFINED,
            prefetch: KFD_IOCTL_SVM_LOCATION_UNDEFINED,
            flags: DEFAULT_FLAGS,
            granularity: DEFAULT_GRANULARITY,
            access: BTreeSet::new(),
            in_place: BTreeSet::new(),
            queue_refs: 0,
            actual: 0,
        }
    }

    /// A range with the default attributes as `svm_range_new` makes it: with XNACK on, every
    /// GPU may access it (`bitmap_supported`), since retry faults map it where it is used.
    fn fresh(emu: &Emulator, start: u64, end: u64) -> Range {
        let mut r = Range::new(start, end);
        if emu.svm.xnack() {
            r.access = emu.gpus.iter().map(|g| g.gpu_id).collect();
        }
        r
    }

    pub(super) fn mapped_on(&self, gpu_id: u32) -> bool {
        self.access.contains(&gpu_id) || self.in_place.contains(&gpu_id)
    }
}

#[derive(Default)]
struct State {
    /// Disjoint, sorted by start.
    ranges: Vec<Range>,
    /// What the GPUs' page tables hold of the ranges.
    mapped: GpuMappings,
}

impl State {
    /// Drops the parts of the ranges in `start..end` that lie in no VMA any more: the process
    /// unmapped them behind the emulator's back (the C library's own `munmap`, which no
    /// interposer sees), and the driver's MMU notifier would have removed them then
    /// (`svm_range_unmap_from_cpu`). Returns whether anything went.
    fn prune(&mut self, host: &HostMap, start: u64, end: u64) -> bool {
        let stale = |r: &Range| r.start < end && start < r.end && !host.covers(r.start, r.end);
        if !self.ranges.iter().any(stale) {
            return false;
        }
        let mut kept = Vec::with_capacity(self.ranges.len());
        for r in std::mem::take(&mut self.ranges) {
            if !stale(&r) {
                kept.push(r);
                continue;
            }
            // Keep the pieces still backed by memory (one per VMA).
            kept.extend(host.pieces(r.start, r.end).map(|v| Range {
                start: v.start,
                end: v.end,
                ..r.clone()
            }));
        }
        self.ranges = kept;
        true
    }
}

/// The process's SVM ranges.
pub(crate) struct SvmTable {
    state: Mutex<State>,
    migrated: AtomicU64,
    /// The process runs with XNACK on (`SET_XNACK_MODE`).
    xnack: std::sync::atomic::AtomicBool,
    /// The kernel's page (`PAGE_SIZE`): the unit of every SVM request's address and size.
    page: u64,
}

impl SvmTable {
    /// The table of a kernel whose page is `page` bytes.
    pub(crate) fn new(page: u64) -> SvmTable {
        SvmTable {
            state: Mutex::default(),
            migrated: AtomicU64::new(0),
            xnack: std::sync::atomic::AtomicBool::new(false),
            page: page.max(PAGE),
        }
    }

    /// Whether the process runs with XNACK on.
    pub(crate) fn xnack(&self) -> bool {
        self.xnack.load(Ordering::Acquire)
    }

    /// Whether `start..end` overlaps a registered range (KFD refuses buffers there). Ranges
    /// whose memory the process has since unmapped do not count (see `State::prune`).
    pub(crate) fn overlaps(&self, emu: &Emulator, start: u64, end: u64) -> bool {
        let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let any = |g: &State| g.ranges.iter().any(|r| r.start < end && start < r.end);
        if !any(&g) {
            return false;
        }
        let host = HostMap::read();
        if g.prune(&host, start, end) {
            let st = &mut *g;
            st.mapped.update(emu, &st.ranges, &host);
        }
        any(&g)
    }

    /// `kfd_queue_buffer_svm_get`: a queue's context-save area may lie in SVM ranges instead of
    /// a KFD buffer (libhsakmt puts it there when the node supports SVM). Every page of
    /// `addr..addr + size` must be in a range that is mapped to GPU `gpu_id` (access or access
    /// in place) and flagged `GPU_ALWAYS_MAPPED`; then each such range counts one more queue
    /// reference. The error says which page broke the rule (the driver's "not registered").
    pub(crate) fn queue_get(&self, gpu_id: u32, addr: u64, size: u64) -> Result<(), String> {
        let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        // In pages, as the driver walks it. Like the driver, each range found advances the walk
        // by its whole length, wherever in it the walk stood.
        let page = self.page;
        let (mut at, mut left) = (addr / page, size.div_ceil(page));
        let mut taken = Vec::new();
        while left > 0 {
            let va = at * page;
            let Some(i) = g.ranges.iter().position(|r| r.start <= va && va < r.end) else {
                return Err(format!("{va:#x} is in no SVM range"));
            };
            let r = &g.ranges[i];
            if !r.mapped_on(gpu_id) {
                return Err(format!(
                    "the SVM range {:#x}..{:#x} is not mapped to GPU {gpu_id:#x}",
                    r.start, r.end
                ));
            }
            if r.flags & KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED == 0 {
                return Err(format!(
                    "the SVM range {:#x}..{:#x} is not GPU_ALWAYS_MAPPED",
                    r.start, r.end
                ));
            }
            taken.push(i);
            let pages = (r.end - r.start) / page;
            left = left.saturating_sub(pages);
            at += pages;
        }
        for i in taken {
            g.ranges[i].queue_refs += 1;
        }
        Ok(())
    }

    /// `kfd_queue_buffer_svm_put`: every range overlapping `addr..addr + size` loses one queue
    /// reference (never below zero), whatever the ranges were split into since.
    pub(crate) fn queue_put(&self, addr: u64, size: u64) {
        let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let end = addr.saturating_add(size);
        for r in g
            .ranges
            .iter_mut()
            .filter(|r| r.start < end && addr < r.end)
        {
            r.queue_refs = r.queue_refs.saturating_sub(1);
        }
    }

    /// Bytes prefetched to a GPU so far.
    pub(crate) fn migrated(&self) -> u64 {
        self.migrated.load(Ordering::Relaxed)
    }
}

/// `AMDKFD_IOC_SVM`.
///
/// # Safety
/// `a` must be followed by `a.nattr` attributes (the request's size covers them).
pub(crate) unsafe fn ioctl(emu: &Emulator, a: &mut kfd_ioctl_svm_args) -> Result<(), Errno> {
    // kfd_ioctl_svm: "if ((args->start_addr & ~PAGE_MASK) || (args->size & ~PAGE_MASK))
    // return -EINVAL", in the kernel's pages (64 KiB on some AArch64 hosts).
    let page = emu.svm.page;
    if a.start_addr % page != 0 || a.size % page != 0 || a.start_addr == 0 || a.size == 0 {
        return Err(Errno::EINVAL);
    }
    let start = a.start_addr;
    let end = start.checked_add(a.size).ok_or(Errno::EINVAL)?;
    // SAFETY: the caller's contract: `nattr` attributes follow the struct.
    let attrs = unsafe { a.attrs.as_mut_slice(a.nattr as usize) };
    match a.op {
        KFD_IOCTL_SVM_OP_SET_ATTR => {
            // svm_range_check_attr: locations are system memory, a GPU (or, preferred only,
            // undefined); access attributes name a GPU.
            for at in attrs.iter() {
                let v = at.value;
                let gpu = emu.gpu(v).is_some();
                let ok = match at.type_ {
                    KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => {
                        v == KFD_IOCTL_SVM_LOCATION_SYSMEM
                            || v == KFD_IOCTL_SVM_LOCATION_UNDEFINED
                            || gpu
                    }
                    KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => v == KFD_IOCTL_SVM_LOCATION_SYSMEM || gpu,
                    KFD_IOCTL_SVM_ATTR_ACCESS
                    | KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE
                    | KFD_IOCTL_SVM_ATTR_NO_ACCESS => gpu,
                    KFD_IOCTL_SVM_ATTR_SET_FLAGS
                    | KFD_IOCTL_SVM_ATTR_CLR_FLAGS
                    | KFD_IOCTL_SVM_ATTR_GRANULARITY => true,
                    _ => false,
                };
                if !ok {
                    // svm_range_check_attr.
                    log::debug!(
                        "kfd-emu: SVM SET_ATTR refused: attribute {:#x} = {v:#x}",
                        at.type_
                    );
                    return Err(Errno::EINVAL);
                }
            }
            let host = is_valid(emu, start, end)?;
            set(emu, &host, start, end, attrs);
            Ok(())
        }
        KFD_IOCTL_SVM_OP_GET_ATTR => {
            is_valid(emu, start, end)?;
            get(emu, start, end, attrs)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// `svm_range_is_valid`, which both operations run first: every page of the span is in a VMA
/// (EFAULT otherwise) and no GPU VM maps a KFD buffer there (`svm_range_check_vm`:
/// EADDRINUSE). Returns the memory map it read.
/// Unmapped memory's stale ranges in the span go first (`State::prune`), whatever the answer.
fn is_valid(emu: &Emulator, start: u64, end: u64) -> Result<HostMap, Errno> {
    let host = HostMap::read();
    {
        let mut g = emu.svm.state.lock().unwrap_or_else(|p| p.into_inner());
        if g.prune(&host, start, end) {
            let st = &mut *g;
            st.mapped.update(emu, &st.ranges, &host);
        }
    }
    if !host.covers(start, end) {
        return Err(Errno::EFAULT);
    }
    if crate::memory::overlaps_buffer(emu, start, end) {
        return Err(Errno::EADDRINUSE);
    }
    Ok(host)
}

fn set(emu: &Emulator, host: &HostMap, start: u64, end: u64, attrs: &[kfd_ioctl_svm_attribute]) {
    let mut g = emu.svm.state.lock().unwrap_or_else(|p| p.into_inner());
    // Split at the boundaries, fill the holes, then apply to every piece inside.
    let mut pieces: Vec<Range> = Vec::new();
    let mut at = start;
    for r in std::mem::take(&mut g.ranges) {
        if r.end <= start || r.start >= end {
            pieces.push(r);
            continue;
        }
        if r.start < start {
            pieces.push(Range {
                end: start,
                ..r.clone()
            });
        }
        if at < r.start.max(start) {
            pieces.push(Range::fresh(emu, at, r.start.max(start)));
        }
        pieces.push(Range {
            start: r.start.max(start),
            end: r.end.min(end),
            ..r.clone()
        });
        at = r.end.min(end);
        if r.end > end {
            pieces.push(Range { start: end, ..r });
        }
    }
    if at < end {
        pieces.push(Range::fresh(emu, at, end));
    }
    pieces.sort_by_key(|r| r.start);
    let mut migrations = Vec::new();
    for r in pieces
        .iter_mut()
        .filter(|r| r.start >= start && r.end <= end)
    {
        for at in attrs {
            let v = at.value;
            match at.type_ {
                KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => r.preferred = v,
                KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => r.prefetch = v,
                KFD_IOCTL_SVM_ATTR_ACCESS => {
                    r.in_place.remove(&v);
                    r.access.insert(v);
                }
                KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE => {
                    r.access.remove(&v);
                    r.in_place.insert(v);
                }
                KFD_IOCTL_SVM_ATTR_NO_ACCESS => {
                    r.access.remove(&v);
                    r.in_place.remove(&v);
                }
                KFD_IOCTL_SVM_ATTR_SET_FLAGS => r.flags |= v,
                KFD_IOCTL_SVM_ATTR_CLR_FLAGS => r.flags &= !v,
                KFD_IOCTL_SVM_ATTR_GRANULARITY => r.granularity = v.min(0x3F),
                _ => {}
            }
        }
        migrations.extend(trigger_migration(r));
    }
    g.ranges = pieces;
    let migrated: u64 = migrations.iter().map(|m| m.end - m.start).sum();
    emu.svm.migrated.fetch_add(migrated, Ordering::Relaxed);
    let st = &mut *g;
    st.mapped.update(emu, &st.ranges, host);
    drop(g);
    for m in migrations {
        emu.faults.smi.migration(&m);
    }
}

/// One move of a range's bytes between system memory (0) and a GPU, as the SMI stream
/// reports it (`kfd_smi_event_migration_start` / `_end`).
pub(crate) struct Migration {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) from: u32,
    pub(crate) to: u32,
    pub(crate) prefetch: u32,
    pub(crate) preferred: u32,
}

/// `svm_range_trigger_migration`, run on every range a `SET_ATTR` touched once all its
/// attributes are applied: a prefetch location that is defined and is not where the range
/// is moves it there. To system memory is one migration from the GPU; to a GPU from system
/// memory is one; from one GPU to another goes through system memory
/// (`svm_migrate_vram_to_vram`), two.
fn trigger_migration(r: &mut Range) -> Vec<Migration> {
    let best = r.prefetch;
    if best == KFD_IOCTL_SVM_LOCATION_UNDEFINED || best == r.actual {
        return Vec::new();
    }
    let step = |from: u32, to: u32| Migration {
        start: r.start,
        end: r.end,
        from,
        to,
        prefetch: r.prefetch,
        preferred: r.preferred,
    };
    let mut moves = Vec::new();
    if r.actual != 0 {
        moves.push(step(r.actual, 0));
    }
    if best != 0 {
        moves.push(step(0, best));
    }
    r.actual = best;
    moves
}

fn get(
    emu: &Emulator,
    start: u64,
    end: u64,
    attrs: &mut [kfd_ioctl_svm_attribute],
) -> Result<(), Errno> {
    let g = emu.svm.state.lock().unwrap_or_else(|p| p.into_inner());
    let inside: Vec<&Range> = g
        .ranges
        .iter()
        .filter(|r| r.start < end && start < r.end)
        .collect();
    let default = Range::fresh(emu, start, end);
    let inside = if inside.is_empty() {
        vec![&default]
    } else {
        inside
    };
    let same = |f: fn(&Range) -> u32| {
        let first = f(inside[0]);
        if inside.iter().all(|r| f(r) == first) {
            first
        } else {
            KFD_IOCTL_SVM_LOCATION_UNDEFINED
        }
    };
    // svm_range_get_attr: access is queried with ACCESS and the GPU's id; SET_FLAGS answers the
    // flags every range has, CLR_FLAGS those no range has (`~flags_or`); IN_PLACE and
    // NO_ACCESS are not queries.
    let queries_ok = attrs.iter().all(|at| match at.type_ {
        KFD_IOCTL_SVM_ATTR_ACCESS => emu.gpu(at.value).is_some(),
        KFD_IOCTL_SVM_ATTR_PREFERRED_LOC
        | KFD_IOCTL_SVM_ATTR_PREFETCH_LOC
        | KFD_IOCTL_SVM_ATTR_SET_FLAGS
        | KFD_IOCTL_SVM_ATTR_CLR_FLAGS
        | KFD_IOCTL_SVM_ATTR_GRANULARITY => true,
        _ => false,
    });
    if !queries_ok {
        // svm_range_get_attr: "get invalid attr type".
        log::debug!(
            "kfd-emu: SVM GET_ATTR refused: attributes {:?}",
            attrs.iter().map(|a| (a.type_, a.value)).collect::<Vec<_>>()
        );
        return Err(Errno::EINVAL);
    }
    for at in attrs.iter_mut() {
        match at.type_ {
            KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => at.value = same(|r| r.preferred),
            KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => at.value = same(|r| r.prefetch),
            KFD_IOCTL_SVM_ATTR_ACCESS => {
                let id = at.value;
                at.type_ = if inside.iter().all(|r| r.access.contains(&id)) {
                    KFD_IOCTL_SVM_ATTR_ACCESS
                } else if inside.iter().all(|r| r.mapped_on(id)) {
                    KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE
                } else {
                    KFD_IOCTL_SVM_ATTR_NO_ACCESS
                };
            }
            KFD_IOCTL_SVM_ATTR_SET_FLAGS => {
                at.value = inside.iter().fold(u32::MAX, |acc, r| acc & r.flags);
            }
            KFD_IOCTL_SVM_ATTR_CLR_FLAGS => {
                at.value = !inside.iter().fold(0, |acc, r| acc | r.flags);
            }
            KFD_IOCTL_SVM_ATTR_GRANULARITY => {
                at.value = inside.iter().map(|r| r.granularity).min().unwrap_or(0);
            }
            _ => {}
        }
    }
    Ok(())
}
