//! The EOP buffer and context save/restore (CWSR) area every compute queue hands KFD.
//!
//! Linux 6.12+ refuses a compute queue unless its EOP buffer and CWSR area are each a whole
//! buffer of exactly the size KFD computes for the node, and `ctl_stack_size` is the node's.
//! The numbers come from [`kfd_sys::queue_sizes`] (the kernel's formula, shared with the
//! emulated driver); a kernel that publishes `cwsr_size` and `ctl_stack_size` in the topology
//! is taken at its word.

use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::memory::{AllocOptions, Buffer, MemoryKind};
use crate::topology::GpuInfo;
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
pub(crate) fn queue_area_sizes(gpu: &GpuInfo, page_size: u64) -> Option<QueueAreaSizes> {
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
pub fn cwsr_sizes(gpu: &GpuInfo, page_size: u64) -> Option<CwsrSizes> {
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

/// A compute queue's EOP buffer and CWSR area: each its own KFD allocation of exactly the size
/// KFD checks, never suballocated (a sub-allocation is not a whole mapping). The CWSR area is
/// in memory the CPU maps: KFD reads its header with `get_user` to report a wave's exceptions
/// (see [`super::wave_exception`]), and a debugger reads the saved waves there.
pub(crate) struct ComputeAreas {
    pub(crate) sizes: CwsrSizes,
    pub(crate) eop: Option<Buffer>,
    pub(crate) cwsr: Buffer,
    /// Where KFD reports the queue's wave exceptions.
    pub(crate) exceptions: super::wave_exception::ExceptionReport,
    /// kfdrt's trap handler on the GPU, which must outlive the queue's waves.
    pub(crate) _trap_handler: Option<std::sync::Arc<super::wave_exception::InstalledTrapHandler>>,
}

impl ComputeAreas {
    /// Allocates the areas for a queue on `gpu`; `with_eop` is false only for gfx94x AQL queues,
    /// whose command processor keeps no EOP queue in memory.
    pub(crate) fn new(gpu: &Gpu, with_eop: bool) -> Result<ComputeAreas> {
        let info = gpu.info();
        let sizes = cwsr_sizes(info, gpu.kfd().driver().page_size()).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{} has no context save/restore: kfdrt needs gfx8.0.1 or newer",
                info.gfx_target
            ))
        })?;
        let eop = if with_eop {
            Some(queue_buffer(
                gpu,
                u64::from(sizes.eop_buffer_size),
                MemoryKind::DeviceLocal,
            )?)
        } else {
            None
        };
        // The CPU must reach the header (KFD reads it with `get_user`). VRAM the CPU maps, on
        // a GPU whose VRAM it all maps (a large BAR, as every MI200 and MI300 has); else system
        // memory, which costs the area's whole size in pinned host memory per queue.
        let kind = if info.host_visible_vram_bytes >= info.vram_bytes && info.vram_bytes > 0 {
            MemoryKind::HostVisibleVram
        } else {
            MemoryKind::GttCoherent
        };
        let cwsr = queue_buffer(gpu, sizes.total_bytes, kind)?;
        let exceptions = super::wave_exception::ExceptionReport::new(gpu)?;
        exceptions.fill_headers(&cwsr, &sizes)?;
        let trap_handler = super::wave_exception::trap_handler(gpu)?;
        Ok(ComputeAreas {
            sizes,
            eop,
            cwsr,
            exceptions,
            _trap_handler: trap_handler,
        })
    }
}

/// Memory a queue hands the command processor (ring, pointer page, EOP, CWSR): a KFD allocation
/// of its own. Its contents are whatever the driver gives; callers initialise what the engine
/// reads.
pub(crate) fn queue_buffer(gpu: &Gpu, size: u64, kind: MemoryKind) -> Result<Buffer> {
    gpu.alloc_with(
        size,
        AllocOptions {
            dedicated: true,
            ..AllocOptions::new(kind)
        },
    )
}
