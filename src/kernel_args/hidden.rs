//! Hidden kernel arguments: the values the runtime writes into the kernarg segment for each
//! launch, at the offsets the metadata gives (AMDGPUUsage's code-object v4/v5 kernarg layouts;
//! values as ROCm's runtimes fill them for an ordinary, non-cooperative launch).

use super::KernelArgError;
use crate::code_object::{ArgKind, KernelMetadata};
use crate::device::Gpu;
use crate::queue::AqlQueue;

/// The shape of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchGeometry {
    /// Grid size in work-items per dimension.
    pub grid: [u32; 3],
    /// Work-group size per dimension.
    pub workgroup: [u16; 3],
    /// Dynamic LDS bytes per work-group, on top of the kernel's static LDS.
    pub dynamic_lds: u32,
}

impl LaunchGeometry {
    /// A 1-D launch of `grid` work-items in groups of `workgroup`, no dynamic LDS.
    pub fn linear(grid: u32, workgroup: u16) -> LaunchGeometry {
        LaunchGeometry {
            grid: [grid, 1, 1],
            workgroup: [workgroup, 1, 1],
            dynamic_lds: 0,
        }
    }

    /// Grid dimensions, 1 to 3: the highest axis with more than one work-item or group size.
    pub fn dimensions(&self) -> u16 {
        if self.grid[2] > 1 || self.workgroup[2] > 1 {
            3
        } else if self.grid[1] > 1 || self.workgroup[1] > 1 {
            2
        } else {
            1
        }
    }
}

/// Where a launch runs: what hidden arguments take from the queue and the GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchContext {
    /// The dispatching AQL queue's `amd_queue_t` address (0 for PM4 dispatches).
    pub queue_address: u64,
    /// High 32 bits of the private (scratch) aperture base.
    pub private_base_hi: u32,
    /// High 32 bits of the shared (LDS) aperture base.
    pub shared_base_hi: u32,
    /// LDS bytes a work-group may use on the GPU (0: not checked).
    pub lds_bytes: u32,
}

impl LaunchContext {
    /// A launch on `gpu` outside any AQL queue (a PM4 dispatch): queue pointer 0.
    pub fn for_gpu(gpu: &Gpu) -> LaunchContext {
        let apertures = &gpu.state().apertures;
        LaunchContext {
            queue_address: 0,
            private_base_hi: (apertures.scratch_base >> 32) as u32,
            shared_base_hi: (apertures.lds_base >> 32) as u32,
            lds_bytes: gpu.info().lds_bytes,
        }
    }

    /// A launch on `queue`.
    pub fn for_queue(queue: &AqlQueue) -> LaunchContext {
        LaunchContext {
            queue_address: queue.amd_queue_address(),
            ..LaunchContext::for_gpu(queue.gpu())
        }
    }
}

/// Checks the launch against the kernel (work-group size it was compiled for) and the GPU (LDS).
pub(crate) fn check_launch(
    md: &KernelMetadata,
    g: &LaunchGeometry,
    context: &LaunchContext,
) -> Result<(), KernelArgError> {
    let geometry = |why: String| KernelArgError::Geometry {
        kernel: md.name.clone(),
        why,
    };
    if g.grid.contains(&0) || g.workgroup.contains(&0) {
        return Err(geometry(format!(
            "grid {:?} / work-group {:?} has a zero dimension",
            g.grid, g.workgroup
        )));
    }
    let items: u32 = g.workgroup.iter().map(|&w| u32::from(w)).product();
    if md.max_flat_workgroup_size != 0 && items > md.max_flat_workgroup_size {
        return Err(geometry(format!(
            "a work-group of {items} work-items exceeds its .max_flat_workgroup_size {}",
            md.max_flat_workgroup_size
        )));
    }
    if let Some(reqd) = md.reqd_workgroup_size {
        if reqd != g.workgroup.map(u32::from) {
            return Err(geometry(format!(
                "work-group {:?} differs from its .reqd_workgroup_size {reqd:?}",
                g.workgroup
            )));
        }
    }
    let lds = u64::from(md.group_segment_fixed_size) + u64::from(g.dynamic_lds);
    if context.lds_bytes != 0 && lds > u64::from(context.lds_bytes) {
        return Err(KernelArgError::LdsTooLarge {
            kernel: md.name.clone(),
            static_bytes: md.group_segment_fixed_size,
            dynamic_bytes: g.dynamic_lds,
            gpu_bytes: context.lds_bytes,
        });
    }
    Ok(())
}

/// The value of a hidden argument of `kind` for this launch (written in the argument's size).
fn value(
    kind: &ArgKind,
    g: &LaunchGeometry,
    c: &LaunchContext,
    pointers: &[(ArgKind, u64)],
) -> u64 {
    let axis = |d: &crate::code_object::Dim| d.index();
    match kind {
        // Work-groups that are full; the partial one, if any, is described by the remainder.
        ArgKind::HiddenBlockCount(d) => {
            u64::from(g.grid[axis(d)] / u32::from(g.workgroup[axis(d)]))
        }
        ArgKind::HiddenGroupSize(d) => u64::from(g.workgroup[axis(d)]),
        ArgKind::HiddenRemainder(d) => u64::from(g.grid[axis(d)] % u32::from(g.workgroup[axis(d)])),
        ArgKind::HiddenGridDims => u64::from(g.dimensions()),
        ArgKind::HiddenDynamicLdsSize => u64::from(g.dynamic_lds),
        ArgKind::HiddenPrivateBase => u64::from(c.private_base_hi),
        ArgKind::HiddenSharedBase => u64::from(c.shared_base_hi),
        ArgKind::HiddenQueuePtr => c.queue_address,
        // Pointers the caller provided, else null; the multigrid argument is 0 for a launch
        // that is not cooperative.
        ArgKind::HiddenHeapV1
        | ArgKind::HiddenHostcallBuffer
        | ArgKind::HiddenPrintfBuffer
        | ArgKind::HiddenDefaultQueue
        | ArgKind::HiddenCompletionAction
        | ArgKind::HiddenMultigridSyncArg => pointers
            .iter()
            .find(|(k, _)| k == kind)
            .map_or(0, |(_, p)| *p),
        // Global offsets are 0 (no launch has one); padding and unknown kinds stay zero.
        _ => 0,
    }
}

/// Writes every hidden argument of `md` into `out` (the kernarg segment).
pub(crate) fn fill(
    md: &KernelMetadata,
    out: &mut [u8],
    g: &LaunchGeometry,
    c: &LaunchContext,
    pointers: &[(ArgKind, u64)],
) -> Result<(), KernelArgError> {
    for a in md.hidden_args() {
        let layout = || KernelArgError::Layout {
            kernel: md.name.clone(),
            offset: a.offset,
            size: a.size,
            segment: md.kernarg_segment_size,
        };
        let (offset, size) = (a.offset as usize, a.size as usize);
        let slot = out.get_mut(offset..offset + size).ok_or_else(layout)?;
        let bytes = value(&a.kind, g, c, pointers).to_le_bytes();
        // Sizes beyond 8 bytes (padding) are zero past the value.
        slot.fill(0);
        let n = size.min(8);
        slot[..n].copy_from_slice(&bytes[..n]);
    }
    Ok(())
}
