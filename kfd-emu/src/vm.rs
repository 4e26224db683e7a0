//! A GPU's view of memory: its page table (which VA ranges are mapped to it, and where the
//! bytes live on the host) and checked accessors for the packet processors and emulated kernels.
//!
//! GPU VA equals host VA, but the bytes behind a GPU mapping are reached through the emulator's
//! own mapping of the buffer (device-local VRAM has no CPU mapping at its VA). Every access is
//! checked against the page table while its read lock is held, so an unmap cannot pull memory
//! from under an access; an access outside the table is a [`GpuFault`], as a GPU page fault.

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
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

/// One GPU's page table and memory accessors.
#[derive(Debug, Default)]
pub struct GpuVm {
    table: RwLock<Table>,
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
    pub(crate) fn map(&self, va: u64, len: u64, host: *mut u8, handle: u64, perms: Perms) {
        let mut t = self.table.write().unwrap_or_else(|p| p.into_inner());
        t.insert(
            va,
            Mapping {
                len,
                host: host as usize,
                handle,
                perms,
            },
        );
    }

    pub(crate) fn unmap(&self, va: u64) -> bool {
        let mut t = self.table.write().unwrap_or_else(|p| p.into_inner());
        t.remove(va)
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

    /// Checks that the GPU may fetch instructions from `va..va+len`: mapped, and executable.
    pub fn check_exec(&self, va: u64, len: u64) -> Result<(), GpuFault> {
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        find(&t, va, len.max(1), false)?;
        match t.entry_at(va) {
            Some((_, m)) if m.perms.exec => Ok(()),
            _ => Err(GpuFault {
                va,
                write: false,
                kind: FaultKind::NoExecute,
            }),
        }
    }

    /// Runs `f` with a host pointer to `va..va+len`, holding the table so the range stays mapped.
    pub fn with_range<R>(
        &self,
        va: u64,
        len: u64,
        write: bool,
        f: impl FnOnce(*mut u8) -> R,
    ) -> Result<R, GpuFault> {
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        let host = find(&t, va, len.max(1), write)?;
        Ok(f(host as *mut u8))
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
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        let s = find(&t, src, len.max(1), false)?;
        let d = find(&t, dst, len.max(1), true)?;
        Ok(f(d as *mut u8, s as *const u8))
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
        let t = self.table.read().unwrap_or_else(|p| p.into_inner());
        let s = find(&t, src, len.max(1), false)?;
        let d = find(&t, dst, len.max(1), true)?;
        // SAFETY: both ranges are mapped while the lock is held; `copy` tolerates overlap.
        unsafe { std::ptr::copy(s as *const u8, d as *mut u8, len as usize) };
        Ok(())
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
