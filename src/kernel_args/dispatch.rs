//! Dispatching with [`KernelArgs`]: the arguments are encoded for the queue the launch runs on
//! (the hidden queue pointer is that queue's), then dispatched as any raw-bytes dispatch is.

use super::{KernelArgError, KernelArgs, LaunchContext, LaunchGeometry};
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::memory::Buffer;
use crate::queue::{AqlQueue, Batch, Dispatch, Pm4Queue, Submission};
use std::sync::Arc;

/// Refuses arguments built from another kernel's metadata.
fn check_kernel(kernel: &Kernel, args: &KernelArgs) -> Result<(), KernelArgError> {
    let same = match kernel.metadata_arc() {
        Some(md) => Arc::ptr_eq(md, args.metadata_arc()) || **md == *args.metadata(),
        // A kernel without metadata (built by hand): the caller vouches for the layout.
        None => true,
    };
    if same {
        Ok(())
    } else {
        Err(KernelArgError::OtherKernel {
            built_for: args.metadata().name.clone(),
            kernel: kernel.name().to_owned(),
        })
    }
}

/// `d` with `kernargs` as its arguments; its own must be empty (the arguments come from a
/// [`KernelArgs`]), so that no caller believes both are used.
fn with_bytes<'a>(d: &Dispatch<'a>, kernargs: &'a [u8]) -> Result<Dispatch<'a>> {
    if !d.kernargs.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "dispatch of {:?} with KernelArgs also carries {} bytes of raw kernel arguments",
            d.kernel.name(),
            d.kernargs.len()
        )));
    }
    Ok(Dispatch { kernargs, ..*d })
}

impl AqlQueue {
    /// Dispatches `d` (its kernel, geometry and ordering; its `kernargs` empty) with `args`,
    /// the hidden arguments filled for the launch on this queue, and returns its completion.
    pub fn dispatch_with_args(&self, d: &Dispatch<'_>, args: &KernelArgs) -> Result<Submission> {
        let mut b = self.batch()?;
        b.dispatch_with_args(d, args)?;
        b.submit()
    }
}

impl Batch<'_> {
    /// Adds the dispatch `d` (its `kernargs` empty) with `args`, the hidden arguments filled
    /// for the launch on the batch's queue.
    pub fn dispatch_with_args(&mut self, d: &Dispatch<'_>, args: &KernelArgs) -> Result<&mut Self> {
        check_kernel(d.kernel, args)?;
        let bytes = args.encode(
            &LaunchGeometry::of(d),
            &LaunchContext::for_queue(self.queue()),
        )?;
        self.dispatch(&with_bytes(d, &bytes)?)
    }
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
        check_kernel(kernel, args)?;
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
        self.dispatch_packets(kernel, groups, wg, kernarg.gpu_address())
    }
}
