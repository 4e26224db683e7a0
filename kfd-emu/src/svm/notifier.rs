//! The driver's MMU notifier for SVM ranges (`svm_range_cpu_invalidate_pagetables`), told of the
//! process's `munmap` and `mprotect` calls by whoever sees them (the preload interposes both).
//!
//! - Unmapping (`MMU_NOTIFY_UNMAP`, `svm_range_unmap_from_cpu`): the unmapped part of every
//!   range leaves the GPUs' page tables and the range table (split, the rest kept), before the
//!   memory goes. A range holding a queue's context-save area is freed all the same, and the
//!   process's queues are evicted ("Freeing queue vital buffer ..., queue evicted").
//! - A protection change (`svm_range_evict`, XNACK off): the driver quiesces the queues, then
//!   maps the range again with the VMA's new permissions. Here the GPU mappings change in the
//!   order that never lets a GPU do what the process may not: permissions taken away before the
//!   `mprotect`, granted after it.
//!
//! Unmappings the interposer cannot see (the C library's own, inside `free`) are caught the
//! next time an SVM request or an allocation looks at the span (`State::prune`).

use super::State;
use crate::host_vma::HostMap;
use crate::Emulator;

fn overlapping(g: &State, start: u64, end: u64) -> bool {
    g.ranges.iter().any(|r| r.start < end && start < r.end)
}

impl Emulator {
    /// The process is about to unmap `addr..addr + len` of its own memory: SVM ranges there
    /// leave the GPUs' page tables (when this returns, no GPU access to them is in progress)
    /// and the range table, and device mappings there stop being watched. Call it before the
    /// memory goes.
    pub fn host_unmapping(&self, addr: u64, len: u64) {
        // A CPU view of VRAM or a trapped doorbell page going away stops being watched (what
        // `Driver::munmap` does for a runtime that unmaps through the emulator).
        let span = (len as usize).min(usize::MAX - addr as usize);
        crate::hdp::untrack_range(addr as usize, span);
        crate::doorbell_trap::unregister_range(addr as usize, span);
        let (start, end) = (addr, addr.saturating_add(len));
        let mut g = self.svm.state.lock().unwrap_or_else(|p| p.into_inner());
        if !overlapping(&g, start, end) {
            return;
        }
        let vital = g
            .ranges
            .iter()
            .any(|r| r.start < end && start < r.end && r.queue_refs > 0);
        let mut kept = Vec::with_capacity(g.ranges.len() + 1);
        for r in std::mem::take(&mut g.ranges) {
            if r.end <= start || r.start >= end {
                kept.push(r);
                continue;
            }
            if r.start < start {
                kept.push(super::Range {
                    end: start,
                    ..r.clone()
                });
            }
            if r.end > end {
                kept.push(super::Range { start: end, ..r });
            }
        }
        g.ranges = kept;
        let mut host = HostMap::read();
        host.restrict(start, end, false, false);
        let st = &mut *g;
        st.mapped.update(self, &st.ranges, &host);
        drop(g);
        if vital {
            log::warn!(
                "kfd-emu: freeing queue vital buffer at {start:#x}..{end:#x}: the process's \
                 queues are evicted"
            );
            self.faults.evict_queues_for(crate::smi::EVICTION_SVM);
        }
    }

    /// The process is about to `mprotect` `addr..addr + len` to `prot` (`PROT_*`): SVM
    /// mappings there lose now whatever `prot` takes away. Call
    /// [`Emulator::host_protection_changed`] once the call returned.
    pub fn host_protection_changing(&self, addr: u64, len: u64, prot: i32) {
        let (start, end) = (addr, addr.saturating_add(len));
        let mut g = self.svm.state.lock().unwrap_or_else(|p| p.into_inner());
        if !overlapping(&g, start, end) {
            return;
        }
        let mut host = HostMap::read();
        host.restrict(
            start,
            end,
            prot & libc::PROT_READ != 0,
            prot & libc::PROT_WRITE != 0,
        );
        let st = &mut *g;
        st.mapped.update(self, &st.ranges, &host);
    }

    /// The process changed the protection of `addr..addr + len` (or tried to): SVM mappings
    /// there take the permissions the process now has.
    pub fn host_protection_changed(&self, addr: u64, len: u64) {
        let (start, end) = (addr, addr.saturating_add(len));
        let mut g = self.svm.state.lock().unwrap_or_else(|p| p.into_inner());
        if !overlapping(&g, start, end) {
            return;
        }
        let host = HostMap::read();
        let st = &mut *g;
        st.mapped.update(self, &st.ranges, &host);
    }
}
