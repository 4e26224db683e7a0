//! What a compute queue of a node must hand KFD beside its ring: the sizes of its EOP buffer and
//! context save/restore (CWSR) area, which Linux 6.12+ checks exactly. The numbers come from
//! [`kfd_sys::queue_sizes`] (the kernel's formula, shared with the emulated driver); a kernel
//! that publishes `cwsr_size` and `ctl_stack_size` in the topology is taken at its word.

use super::GpuInfo;
use kfd_sys::queue_sizes::{NodeShape, QueueAreaSizes};

/// CWSR sizes for one queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CwsrSizes {
    /// `ctx_save_restore_size` passed to `CREATE_QUEUE` (per XCC): control stack + work-group data.
    pub ctx_save_restore_size: u32,
    /// `ctl_stack_size` passed to `CREATE_QUEUE`.
    pub ctl_stack_size: u32,
    /// Bytes to allocate: (ctx_save_restore_size + debug area) for every XCC, page aligned.
    pub total_bytes: u64,
    /// The EOP buffer size the node asks for.
    pub eop_buffer_size: u32,
    /// Bytes kept for a debugger after each XCC's area.
    pub debug_memory_size: u32,
    /// XCCs of the node: the area holds one part per XCC.
    pub num_xcc: u32,
}

/// The node's queue-area sizes, from the topology, on a kernel of `page_size` pages.
fn queue_area_sizes(gpu: &GpuInfo, page_size: u64) -> Option<QueueAreaSizes> {
    let props = &gpu.properties;
    let prop = |k: &str| u32::try_from(props.get_or_zero(k)).unwrap_or(u32::MAX);
    let mut sizes = QueueAreaSizes::for_node_with_pages(
        &NodeShape {
            gfx_target_version: gpu.gfx_target_version,
            simd_count: prop("simd_count"),
            simd_per_cu: prop("simd_per_cu"),
            array_count: prop("array_count"),
            simd_arrays_per_engine: prop("simd_arrays_per_engine"),
            lds_size_in_kb: prop("lds_size_in_kb"),
            num_xcc: gpu.num_xcc,
        },
        page_size,
    )?;
    // Newer kernels publish what they will check.
    if let Some(v) = props.get("cwsr_size").and_then(|v| u32::try_from(v).ok()) {
        sizes.cwsr_size = v;
    }
    if let Some(v) = props
        .get("ctl_stack_size")
        .and_then(|v| u32::try_from(v).ok())
    {
        sizes.ctl_stack_size = v;
    }
    Some(sizes)
}

/// Computes the CWSR sizes for `gpu` on a kernel of `page_size` pages (the driver's
/// [`kfd_sys::Driver::page_size`]), or `None` for a part without CWSR.
fn cwsr_sizes(gpu: &GpuInfo, page_size: u64) -> Option<CwsrSizes> {
    let s = queue_area_sizes(gpu, page_size)?;
    Some(CwsrSizes {
        ctx_save_restore_size: s.cwsr_size,
        ctl_stack_size: s.ctl_stack_size,
        total_bytes: s.cwsr_total_bytes(),
        eop_buffer_size: s.eop_buffer_size,
        debug_memory_size: s.debug_memory_size,
        num_xcc: s.num_xcc,
    })
}

impl GpuInfo {
    /// The EOP and CWSR sizes a compute queue of this GPU needs on a kernel of `page_size`
    /// pages (the driver's [`kfd_sys::Driver::page_size`]), or `None` for a part without CWSR.
    pub fn cwsr_sizes(&self, page_size: u64) -> Option<CwsrSizes> {
        cwsr_sizes(self, page_size)
    }
}
