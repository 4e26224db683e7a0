//! Running an emulated kernel over its grid: what an AQL kernel-dispatch packet and a PM4
//! `DISPATCH_DIRECT` both end in, once each has worked out the geometry and kernel arguments.

use crate::kernel::{KernelFn, WorkGroup};
use crate::vm::{GpuFault, GpuVm};

/// A kernel launch: the kernel bound to the dispatched object and the geometry the packet gave.
pub(crate) struct KernelLaunch<'a> {
    pub(crate) kernel: &'a KernelFn,
    /// The memory of the GPU running it.
    pub(crate) vm: &'a GpuVm,
    pub(crate) gpu_id: u32,
    /// Work-groups per dimension.
    pub(crate) groups: [u32; 3],
    /// Work-items per work-group, per dimension.
    pub(crate) workgroup_size: [u32; 3],
    /// Work-items in the grid, per dimension.
    pub(crate) grid_size: [u32; 3],
    pub(crate) kernarg_address: u64,
    /// The GPU's arbitration between queues, and this dispatch's pipe priority.
    pub(crate) arbiter: &'a crate::arbiter::PipeArbiter,
    pub(crate) pipe_priority: usize,
}

/// Why a launch did not run to the end.
#[derive(Debug)]
pub(crate) enum LaunchStop {
    /// The queue is being destroyed.
    Stopped,
    /// A work-group accessed memory outside the GPU's page table.
    Fault(GpuFault),
}

impl KernelLaunch<'_> {
    /// Runs every work-group in order (x fastest), checking `stopped` before each so a queue
    /// being destroyed does not wait for a long grid, and giving way to queues of a higher
    /// priority (`crate::arbiter`).
    pub(crate) fn run(&self, stopped: &dyn Fn() -> bool) -> Result<(), LaunchStop> {
        let launching = self.arbiter.begin(self.pipe_priority);
        for z in 0..self.groups[2] {
            for y in 0..self.groups[1] {
                for x in 0..self.groups[0] {
                    launching.wait_turn(stopped);
                    if stopped() {
                        return Err(LaunchStop::Stopped);
                    }
                    let w = WorkGroup {
                        group_id: [x, y, z],
                        workgroup_size: self.workgroup_size,
                        grid_size: self.grid_size,
                        kernarg_address: self.kernarg_address,
                        mem: self.vm,
                        gpu_id: self.gpu_id,
                    };
                    (self.kernel)(&w).map_err(LaunchStop::Fault)?;
                }
            }
        }
        Ok(())
    }
}
