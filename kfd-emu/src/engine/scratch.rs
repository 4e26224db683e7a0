//! An AQL queue's scratch (private segment memory) as the CP reads it from `amd_queue_t`.
//!
//! The runtime owns the scratch and describes it in the queue: `compute_tmpring_size` (how many
//! waves fit, `WAVES`, bits 11:0, and each wave's share, `WAVESIZE`, bits 24:12, in KiB), the
//! buffer resource the waves get, the backing's address and the largest per-work-item size it
//! serves (`scratch_wave64_lane_byte_size`). Before launching a dispatch whose
//! `private_segment_size` is larger, the CP stops and asks the runtime for more through the
//! queue's inactive signal ([`aql::queue_error::INSUFFICIENT_SCRATCH_WAVE64`]), leaving the
//! packet unconsumed; the runtime grows the scratch and stores 0 to the signal, and the CP
//! looks again. Scratch lent for one dispatch (`QUEUE_PROPERTY_USE_SCRATCH_ONCE`) is handed back
//! after it ([`aql::queue_error::SCRATCH_RECLAIM`]).

use crate::vm::{GpuFault, GpuVm};
use aql::queue_offsets as q;
use aql::scratch::ScratchFormat;
use kfd_emu_isa::ScratchBacking;

/// What a queue's `amd_queue_t` says about its scratch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QueueScratch {
    /// The largest `private_segment_size` a wave64 dispatch may ask for
    /// (`scratch_wave64_lane_byte_size`; twice that for a wave32 one).
    pub(crate) lane_bytes: u32,
    /// The backing as the waves use it; `None` when the queue has none.
    pub(crate) backing: Option<ScratchBacking>,
    /// The scratch is lent for one dispatch.
    pub(crate) use_once: bool,
    /// `scratch_backing_memory_byte_size`: one XCC's share of the backing. A GPU of several
    /// XCCs lays them out one after another: XCC `x`'s waves use `backing` moved up by
    /// `x * xcc_stride`.
    pub(crate) xcc_stride: u64,
}

impl QueueScratch {
    /// Reads the scratch fields of the `amd_queue_t` at `amd_queue`, written in `format` for a
    /// GPU of `shader_engines` engines per XCC (GFX11 counts `WAVES` per engine).
    pub(crate) fn read(
        vm: &GpuVm,
        amd_queue: u64,
        format: ScratchFormat,
        shader_engines: u32,
    ) -> Result<QueueScratch, GpuFault> {
        let tmpring = vm.read_u32(amd_queue + q::COMPUTE_TMPRING_SIZE)?;
        let (waves, wave_bytes) = format.tmpring_slots(tmpring, shader_engines);
        let mut resource = [0u32; 4];
        for (i, w) in resource.iter_mut().enumerate() {
            *w = vm.read_u32(amd_queue + q::SCRATCH_RESOURCE_DESCRIPTOR + 4 * i as u64)?;
        }
        let base = vm.read_u64(amd_queue + q::SCRATCH_BACKING_MEMORY_LOCATION)?;
        let lane_bytes = vm.read_u32(amd_queue + q::SCRATCH_WAVE64_LANE_BYTE_SIZE)?;
        let properties = vm.read_u32(amd_queue + q::QUEUE_PROPERTIES)?;
        let xcc_stride = vm.read_u64(amd_queue + q::SCRATCH_BACKING_MEMORY_BYTE_SIZE)?;
        let backing = (base != 0 && waves > 0 && wave_bytes > 0).then_some(ScratchBacking {
            base,
            // What the layout covers: WAVES slots of WAVESIZE each (a runtime may have
            // allocated more, as ROCr's per-XCC split does).
            size: waves * wave_bytes,
            wave_bytes,
            resource: Some(resource),
        });
        Ok(QueueScratch {
            lane_bytes,
            backing,
            use_once: properties & aql::QUEUE_PROPERTY_USE_SCRATCH_ONCE != 0,
            xcc_stride,
        })
    }

    /// XCC `xcc`'s view of the backing: moved up by `xcc` shares, its buffer resource too.
    pub(crate) fn for_xcc(backing: ScratchBacking, stride: u64, xcc: u32) -> ScratchBacking {
        let shift = stride * u64::from(xcc);
        let resource = backing.resource.map(|mut r| {
            let base = (u64::from(r[1] & 0xFFFF) << 32 | u64::from(r[0])) + shift;
            r[0] = base as u32;
            r[1] = (r[1] & !0xFFFF) | ((base >> 32) as u32 & 0xFFFF);
            r
        });
        ScratchBacking {
            base: backing.base + shift,
            resource,
            ..backing
        }
    }

    /// Whether a dispatch of waves of `lanes` lanes asking for `private_segment_size` bytes
    /// per work-item can start.
    pub(crate) fn serves(&self, private_segment_size: u32, lanes: u32) -> bool {
        let most = u64::from(self.lane_bytes) * 64 / u64::from(lanes.max(1));
        private_segment_size == 0
            || (self.backing.is_some() && u64::from(private_segment_size) <= most)
    }
}
