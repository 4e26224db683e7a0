//! A GPU's page table as the wave interpreter's memory: every access a wave makes (loads,
//! stores, atomics, instruction fetches) goes through [`GpuVm`]'s checks, so a wave touching
//! memory its GPU has not mapped, writing a read-only page or fetching from a non-executable
//! one faults exactly as an emulated engine would.

use crate::vm::{FaultKind, GpuFault, GpuVm};
use kfd_emu_isa::{AccessKind, AtomicOp, MemFault, Memory};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

fn to_isa(f: GpuFault, kind: AccessKind) -> MemFault {
    MemFault { va: f.va, kind }
}

/// The page table's reason for refusing a wave's access (`MemFault` only says what the access
/// was): what KFD reports in the memory exception.
pub(crate) fn gpu_fault(vm: &GpuVm, f: MemFault) -> GpuFault {
    let mapped = vm.mapping_at(f.va).is_some();
    let kind = match f.kind {
        AccessKind::Execute if mapped => FaultKind::NoExecute,
        AccessKind::Write if mapped => FaultKind::ReadOnly,
        _ => FaultKind::NotPresent,
    };
    GpuFault {
        va: f.va,
        write: f.kind == AccessKind::Write,
        kind,
    }
}

/// Float read-modify-writes, which some memory drops ([`crate::vm::HostAtomics`]).
fn is_float(op: AtomicOp) -> bool {
    matches!(
        op,
        AtomicOp::FAdd | AtomicOp::FMin | AtomicOp::FMax | AtomicOp::PkAddF16 | AtomicOp::PkAddBf16
    )
}

impl Memory for GpuVm {
    fn read(&self, va: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        GpuVm::read(self, va, buf).map_err(|f| to_isa(f, AccessKind::Read))
    }

    fn write(&self, va: u64, data: &[u8]) -> Result<(), MemFault> {
        GpuVm::write(self, va, data).map_err(|f| to_isa(f, AccessKind::Write))
    }

    fn fetch(&self, va: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        let exec = |f| to_isa(f, AccessKind::Execute);
        self.check_exec(va, buf.len() as u64).map_err(exec)?;
        GpuVm::read(self, va, buf).map_err(exec)
    }

    fn atomic32(&self, va: u64, op: AtomicOp, src: u32, cmp: u32) -> Result<u32, MemFault> {
        if va % 4 != 0 {
            return Err(MemFault {
                va,
                kind: AccessKind::Write,
            });
        }
        let dropped = self.drops_atomic(va, is_float(op));
        self.with_range(va, 4, true, |p| {
            // SAFETY: the 4 bytes at `p` are mapped for writing while the page table is held
            // (`with_range`), and `va` (hence `p`: GPU pages map to page-aligned host memory)
            // is 4-byte aligned. Every other access to them is atomic or a plain copy that
            // may observe either value, as on hardware.
            let cell = unsafe { &*(p as *const AtomicU32) };
            if dropped {
                return cell.load(Ordering::Acquire);
            }
            let mut old = cell.load(Ordering::Acquire);
            loop {
                let new = op.apply32(old, src, cmp);
                match cell.compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => return old,
                    Err(seen) => old = seen,
                }
            }
        })
        .map_err(|f| to_isa(f, AccessKind::Write))
    }

    fn atomic64(&self, va: u64, op: AtomicOp, src: u64, cmp: u64) -> Result<u64, MemFault> {
        if va % 8 != 0 {
            return Err(MemFault {
                va,
                kind: AccessKind::Write,
            });
        }
        let dropped = self.drops_atomic(va, is_float(op));
        self.with_range(va, 8, true, |p| {
            // SAFETY: as in `atomic32`, for 8 aligned bytes.
            let cell = unsafe { &*(p as *const AtomicU64) };
            if dropped {
                return cell.load(Ordering::Acquire);
            }
            let mut old = cell.load(Ordering::Acquire);
            loop {
                let new = op.apply64(old, src, cmp);
                match cell.compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => return old,
                    Err(seen) => old = seen,
                }
            }
        })
        .map_err(|f| to_isa(f, AccessKind::Write))
    }

    fn read_u32(&self, va: u64) -> Result<u32, MemFault> {
        if va % 4 == 0 {
            return GpuVm::read_u32(self, va).map_err(|f| to_isa(f, AccessKind::Read));
        }
        let mut b = [0; 4];
        Memory::read(self, va, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn read_u64(&self, va: u64) -> Result<u64, MemFault> {
        if va % 8 == 0 {
            return GpuVm::read_u64(self, va).map_err(|f| to_isa(f, AccessKind::Read));
        }
        let mut b = [0; 8];
        Memory::read(self, va, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }
}
