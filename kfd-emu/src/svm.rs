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

use crate::Emulator;
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
        }
    }

    fn mapped_on(&self, gpu_id: u32) -> bool {
        self.access.contains(&gpu_id) || self.in_place.contains(&gpu_id)
    }
}

#[derive(Default)]
struct State {
    /// Disjoint, sorted by start.
    ranges: Vec<Range>,
    /// (GPU index, start) of every SVM mapping installed in a GPU's page table.
    mapped: Vec<(usize, u64)>,
}

/// The process's SVM ranges.
#[derive(Default)]
pub(crate) struct SvmTable {
    state: Mutex<State>,
    migrated: AtomicU64,
}

impl SvmTable {
    /// Whether `start..end` overlaps a registered range (KFD refuses buffers there).
    pub(crate) fn overlaps(&self, start: u64, end: u64) -> bool {
        let g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        g.ranges.iter().any(|r| r.start < end && start < r.end)
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
    if a.start_addr % PAGE != 0 || a.size % PAGE != 0 || a.start_addr == 0 || a.size == 0 {
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
                    return Err(Errno::EINVAL);
                }
            }
            if !crate::memory::user_range_mapped(start, end - start) {
                return Err(Errno::EFAULT);
            }
            if crate::memory::overlaps_buffer(emu, start, end) {
                return Err(Errno::EADDRINUSE);
            }
            set(emu, start, end, attrs);
            Ok(())
        }
        KFD_IOCTL_SVM_OP_GET_ATTR => get(emu, start, end, attrs),
        _ => Err(Errno::EINVAL),
    }
}

fn set(emu: &Emulator, start: u64, end: u64, attrs: &[kfd_ioctl_svm_attribute]) {
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
            pieces.push(Range::new(at, r.start.max(start)));
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
        pieces.push(Range::new(at, end));
    }
    pieces.sort_by_key(|r| r.start);
    let mut migrated = 0;
    for r in pieces
        .iter_mut()
        .filter(|r| r.start >= start && r.end <= end)
    {
        for at in attrs {
            let v = at.value;
            match at.type_ {
                KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => r.preferred = v,
                KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => {
                    if v != r.prefetch && v != KFD_IOCTL_SVM_LOCATION_UNDEFINED {
                        migrated += r.end - r.start;
                    }
                    r.prefetch = v;
                }
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
    }
    g.ranges = pieces;
    emu.svm.migrated.fetch_add(migrated, Ordering::Relaxed);
    remap(emu, &mut g);
}

/// Rebuilds every GPU's SVM mappings from the ranges.
fn remap(emu: &Emulator, g: &mut State) {
    for (gpu, va) in std::mem::take(&mut g.mapped) {
        emu.gpus[gpu].vm.unmap(va);
    }
    for r in &g.ranges {
        for (i, gpu) in emu.gpus.iter().enumerate() {
            if r.mapped_on(gpu.gpu_id) {
                let perms = crate::vm::Perms {
                    write: r.flags & KFD_IOCTL_SVM_FLAG_GPU_RO == 0,
                    exec: r.flags & KFD_IOCTL_SVM_FLAG_GPU_EXEC != 0,
                };
                gpu.vm.map_memory(
                    r.start,
                    r.end - r.start,
                    r.start as *mut u8,
                    SVM_HANDLE,
                    perms,
                    false,
                );
                g.mapped.push((i, r.start));
            }
        }
    }
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
    let default = Range::new(start, end);
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
    // svm_range_get_attr: access is queried with ACCESS and the GPU's id; IN_PLACE, NO_ACCESS
    // and CLR_FLAGS are not queries.
    let queries_ok = attrs.iter().all(|at| match at.type_ {
        KFD_IOCTL_SVM_ATTR_ACCESS => emu.gpu(at.value).is_some(),
        KFD_IOCTL_SVM_ATTR_PREFERRED_LOC
        | KFD_IOCTL_SVM_ATTR_PREFETCH_LOC
        | KFD_IOCTL_SVM_ATTR_SET_FLAGS
        | KFD_IOCTL_SVM_ATTR_GRANULARITY => true,
        _ => false,
    });
    if !queries_ok {
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
            KFD_IOCTL_SVM_ATTR_GRANULARITY => {
                at.value = inside.iter().map(|r| r.granularity).min().unwrap_or(0);
            }
            _ => {}
        }
    }
    Ok(())
}
