//! Dispatching with [`KernelArgs`]: through AQL, `Dispatch::with_args` (the arguments are encoded
//! for the queue the launch runs on at submission: the hidden queue pointer is that queue's);
//! through PM4, the packets that launch with them.

use crate::error::Result;
use crate::kernel::Kernel;
use crate::kernel_args::{KernelArgError, KernelArgs, LaunchContext, LaunchGeometry};
use crate::memory::Buffer;
use crate::queue::Pm4Queue;
use std::sync::Arc;

/// Refuses `args` for `kernel` on `gpu`: built for another kernel, or naming a buffer not mapped
/// on the GPU (unless the checks are off, or `validated`: `KFDRT_VALIDATE` checks every address
/// and names the field).
pub(crate) fn check_kernel(
    kernel: &Kernel,
    args: &KernelArgs,
    gpu: &crate::Gpu,
    validated: bool,
) -> Result<()> {
    let same = match kernel.metadata_arc() {
        Some(md) => Arc::ptr_eq(md, args.metadata_arc()) || **md == *args.metadata(),
        // A kernel without metadata (built by hand): the caller vouches for the layout.
        None => true,
    };
    if !same {
        return Err(KernelArgError::OtherKernel {
            built_for: args.metadata().name.clone(),
            kernel: kernel.name().to_owned(),
        }
        .into());
    }
    if validated || gpu.kfd().shared.debug.unchecked {
        return Ok(());
    }
    args.check_mapped(gpu.id())
}

impl Pm4Queue {
    /// The packets that dispatch `kernel` with `args` (see [`Pm4Queue::dispatch_packets`]): the
    /// arguments, hidden ones filled for `geometry` (queue pointer 0: a PM4 dispatch has no AQL
    /// queue), are written at the start of `kernarg`, which must outlive the dispatch. The grid
    /// must be a whole number of work-groups.
    pub fn dispatch_packets_with_args(
        &self,
        kernel: &Kernel,
        geometry: &LaunchGeometry,
        args: &KernelArgs,
        kernarg: &Buffer,
    ) -> Result<Vec<pm4::Pm4Packet>> {
        check_kernel(kernel, args, self.gpu(), false)?;
        let bytes = args.encode(geometry, &LaunchContext::for_gpu(self.gpu()))?;
        let wg = geometry.workgroup.map(u32::from);
        if (0..3).any(|i| geometry.grid[i] % wg[i] != 0) {
            return Err(KernelArgError::Geometry {
                kernel: kernel.name().to_owned(),
                why: format!(
                    "a PM4 dispatch runs whole work-groups: grid {:?} is not a multiple of {wg:?}",
                    geometry.grid
                ),
            }
            .into());
        }
        kernarg.write(0, &bytes)?;
        let groups = [0, 1, 2].map(|i| geometry.grid[i] / wg[i]);
        self.dispatch_packets(
            kernel,
            groups,
            wg,
            kernarg.gpu_address(),
            geometry.dynamic_lds,
        )
    }
}
