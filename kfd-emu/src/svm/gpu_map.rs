//! What each GPU's page table holds of the SVM ranges (`svm_range_validate_and_map`, XNACK off):
//! every range a GPU may access is mapped at its own address, one mapping per VMA under it, with
//! the VMA's permissions: read-only where the process may not write (`readonly =
//! !(vma->vm_flags & VM_WRITE)`) or the range is `GPU_RO`, absent where the process may not
//! read or nothing is mapped. A GPU access the mapping does not allow is a GPU page fault, as
//! on hardware, never a fault of the emulator's own process.

use super::{Range, SVM_HANDLE};
use crate::host_vma::HostMap;
use crate::vm::{MappingKind, Perms};
use crate::Emulator;
use kfd_sys::bindings::{
    KFD_IOCTL_SVM_FLAG_COHERENT, KFD_IOCTL_SVM_FLAG_GPU_EXEC, KFD_IOCTL_SVM_FLAG_GPU_RO,
};
use std::collections::HashMap;

/// One mapping installed in a GPU's page table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Installed {
    gpu: usize,
    start: u64,
    len: u64,
    perms: Perms,
    kind: MappingKind,
}

/// The SVM mappings the GPUs' page tables hold.
#[derive(Debug, Default)]
pub(super) struct GpuMappings(Vec<Installed>);

impl GpuMappings {
    /// Brings every GPU's page table in line with `ranges` over the memory map `host`. Only
    /// what changed is touched: a GPU working in another range meanwhile sees its mappings
    /// stay (a remove-everything-then-map would give it spurious not-present faults).
    pub(super) fn update(&mut self, emu: &Emulator, ranges: &[Range], host: &HostMap) {
        let mut want = Vec::new();
        for r in ranges {
            for (gpu, g) in emu.gpus.iter().enumerate() {
                if !r.mapped_on(g.gpu_id) {
                    continue;
                }
                for v in host.pieces(r.start, r.end).filter(|v| v.read) {
                    want.push(Installed {
                        gpu,
                        start: v.start,
                        len: v.end - v.start,
                        perms: Perms {
                            write: v.write && r.flags & KFD_IOCTL_SVM_FLAG_GPU_RO == 0,
                            exec: r.flags & KFD_IOCTL_SVM_FLAG_GPU_EXEC != 0,
                        },
                        // The process's memory, coherent unless the range says otherwise.
                        kind: MappingKind {
                            visible_vram: false,
                            atomics: g.host_atomics(
                                r.flags & KFD_IOCTL_SVM_FLAG_COHERENT != 0,
                                emu.config.strict,
                            ),
                        },
                    });
                }
            }
        }
        // Mappings that go (or change where they start) first, then the new and changed ones,
        // which replace what is at their address.
        let key = |m: &Installed| (m.gpu, m.start);
        let wanted: HashMap<(usize, u64), &Installed> = want.iter().map(|w| (key(w), w)).collect();
        let had: HashMap<(usize, u64), &Installed> = self.0.iter().map(|m| (key(m), m)).collect();
        for old in &self.0 {
            if !wanted.contains_key(&key(old)) {
                emu.gpus[old.gpu].vm.unmap(old.start);
            }
        }
        for w in &want {
            if had.get(&key(w)) != Some(&w) {
                emu.gpus[w.gpu].vm.map_memory(
                    w.start,
                    w.len,
                    w.start as *mut u8,
                    SVM_HANDLE,
                    w.perms,
                    w.kind,
                );
            }
        }
        self.0 = want;
    }
}
