//! Emulated kernels: host functions bound to kernel-object addresses, run once per work-group.

use crate::vm::{GpuFault, GpuVm};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// An emulated kernel: called once per work-group; an access outside the GPU's page table
/// returns the [`GpuFault`], which stops the queue as a memory violation.
pub type KernelFn = dyn Fn(&WorkGroup<'_>) -> Result<(), GpuFault> + Send + Sync;

/// What an emulated kernel sees of one work-group.
pub struct WorkGroup<'a> {
    /// Work-group id per dimension.
    pub group_id: [u32; 3],
    /// Work-group size per dimension (work-items).
    pub workgroup_size: [u32; 3],
    /// Grid size per dimension (work-items).
    pub grid_size: [u32; 3],
    /// Address of the kernel arguments.
    pub kernarg_address: u64,
    /// GPU memory as this GPU sees it (every access checked).
    pub mem: &'a GpuVm,
    /// The GPU running the work-group.
    pub gpu_id: u32,
}

impl WorkGroup<'_> {
    /// Reads a u64 kernel argument at byte `offset`.
    pub fn kernarg_u64(&self, offset: u64) -> Result<u64, GpuFault> {
        self.mem.read_u64(self.kernarg_address + offset)
    }

    /// Reads a u32 kernel argument at byte `offset`.
    pub fn kernarg_u32(&self, offset: u64) -> Result<u32, GpuFault> {
        self.mem.read_u32(self.kernarg_address + offset)
    }

    /// Global ids of the work-items of this group that fall inside the grid (partial groups at
    /// the grid's edge are cut).
    pub fn work_items(&self) -> impl Iterator<Item = [u32; 3]> + '_ {
        let base: [u32; 3] = std::array::from_fn(|d| self.group_id[d] * self.workgroup_size[d]);
        let end: [u32; 3] =
            std::array::from_fn(|d| (base[d] + self.workgroup_size[d]).min(self.grid_size[d]));
        (base[2]..end[2]).flat_map(move |z| {
            (base[1]..end[1]).flat_map(move |y| (base[0]..end[0]).map(move |x| [x, y, z]))
        })
    }
}

#[derive(Default)]
pub(crate) struct KernelRegistry {
    map: RwLock<HashMap<u64, (String, Arc<KernelFn>)>>,
}

impl KernelRegistry {
    /// Binds `f` to the kernel descriptor at `object`, replacing any earlier binding.
    pub(crate) fn bind(&self, object: u64, name: &str, f: Arc<KernelFn>) {
        let mut m = self.map.write().unwrap_or_else(|p| p.into_inner());
        m.insert(object, (name.to_owned(), f));
    }

    /// Removes the binding of `object`, if any.
    pub(crate) fn unbind(&self, object: u64) {
        self.map
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&object);
    }

    /// The kernel bound to `object`.
    pub(crate) fn get(&self, object: u64) -> Option<Arc<KernelFn>> {
        self.map
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&object)
            .map(|(_, f)| f.clone())
    }
}
