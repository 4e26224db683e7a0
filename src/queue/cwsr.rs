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
use crate::topology::CwsrSizes;

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
        let sizes = info
            .cwsr_sizes(gpu.kfd().driver().page_size())
            .ok_or_else(|| Error::NotOnThisGpu {
                gfx_target: info.gfx_target.clone(),
                what: "context save/restore (kfdrt needs gfx8.0.1 or newer)".into(),
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
