//! XNACK on (`SET_XNACK_MODE`): a GPU's miss on the process's memory is a retry fault, which the
//! driver resolves before the access is replayed (`svm_range_restore_pages`):
//!
//! - the page must lie in a VMA the process may read, and may write for a write
//!   (`svm_fault_allowed`); otherwise the fault stands (`-EFAULT`, `-EPERM`) and is reported;
//! - in a registered range, the GPU must have access to it (`-EACCES` otherwise); ranges made
//!   while XNACK is on give every GPU access;
//! - outside every range, a new one is made around the page
//!   (`svm_range_create_unregistered_range`): the 2 MiB-aligned block, clipped to the VMA and
//!   to the neighbouring ranges, and never over a KFD buffer;
//! - then the range is mapped for the GPU with the VMA's permissions and the access is tried
//!   again.
//!
//! Only the parts whose driver lets a process choose (`KFD_SUPPORT_XNACK_PER_PROCESS`: GC
//! 9.4.2, 9.4.3 and later 9.4/9.5, so gfx90a and gfx942 here) may turn it on.

use super::{Range, PAGE};
use crate::host_vma::HostMap;
use crate::Emulator;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// `svm_range_create_unregistered_range`'s block: the default granularity, 2 MiB.
const BLOCK: u64 = 2 << 20;

impl Emulator {
    /// Whether every GPU lets a process turn XNACK on (`kfd_process_xnack_mode`).
    pub(crate) fn xnack_supported(&self) -> bool {
        self.gpus.iter().all(|g| {
            let v = g.params.gfx_target_version;
            v == 90010 || (90400..90600).contains(&v)
        })
    }

    /// Turns XNACK on or off for the process: the GPUs' misses go to the retry-fault handler,
    /// or are faults again.
    pub(crate) fn set_xnack(&self, on: bool) {
        self.svm.xnack.store(on, Ordering::Release);
        for (index, g) in self.gpus.iter().enumerate() {
            let handler = on.then(|| {
                let me = self.me.clone();
                Arc::new(move |va: u64, _len: u64, write: bool| {
                    me.upgrade()
                        .is_some_and(|emu| restore_pages(&emu, index, va, write))
                }) as Arc<crate::vm::RetryFaultHandler>
            });
            g.vm.set_retry_handler(handler);
        }
    }
}

/// `svm_range_restore_pages` for a miss of GPU `gpu` at `va`: whether the page is now mapped
/// for the access.
fn restore_pages(emu: &Emulator, gpu: usize, va: u64, write: bool) -> bool {
    let gpu_id = emu.gpus[gpu].gpu_id;
    let page = va & !(PAGE - 1);
    let host = HostMap::read();
    let Some(vma) = host.vma_at(page) else {
        return false;
    };
    if !vma.read || (write && !vma.write) {
        return false;
    }
    let mut g = emu.svm.state.lock().unwrap_or_else(|p| p.into_inner());
    match g
        .ranges
        .iter()
        .position(|r| r.start <= page && page < r.end)
    {
        Some(i) if !g.ranges[i].mapped_on(gpu_id) => return false,
        Some(_) => {}
        None => {
            if crate::memory::overlaps_buffer(emu, page, page + PAGE) {
                return false;
            }
            let mut start = (page & !(BLOCK - 1)).max(vma.start);
            let mut end = (start + BLOCK).min(vma.end);
            for r in &g.ranges {
                if r.end <= page {
                    start = start.max(r.end);
                } else if r.start > page {
                    end = end.min(r.start);
                }
            }
            let r = Range::fresh(emu, start, end);
            let at = g.ranges.partition_point(|x| x.start < start);
            g.ranges.insert(at, r);
            log::debug!(
                "kfd-emu: XNACK: GPU {gpu_id:#x} faulted at {va:#x}: new SVM range {start:#x}..{end:#x}"
            );
        }
    }
    let st = &mut *g;
    st.mapped.update(emu, &st.ranges, &host);
    true
}
