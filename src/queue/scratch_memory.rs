//! Scratch backings for compute queues (AQL and PM4), laid out as ROCr lays them out on GFX9
//! and GFX11 (see [`aql::scratch`]): one slot per wave the GPU can run at once.

use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::memory::{AllocOptions, Buffer, MemoryKind};
use aql::scratch::{ScratchFormat, ScratchLayout};

/// Above this, a backing for every wave slot is not kept: the dispatch gets one sized for its
/// own waves, lent for that dispatch (ROCr's `HSA_SCRATCH_SINGLE_LIMIT` default).
pub const SINGLE_LIMIT: u64 = 140 << 20;

/// Waves of the GPU that may hold scratch at once: its compute units (rounded up to a whole
/// number per shader engine) times `max_slots_scratch_cu`, as ROCr counts them.
pub(crate) fn wave_slots(gpu: &Gpu) -> u32 {
    let info = gpu.info();
    info.compute_units
        .next_multiple_of(info.shader_engines.max(1))
        .saturating_mul(info.max_slots_scratch_cu.max(1))
}

/// Allocates a backing serving `private` bytes per work-item on `gpu`: for every wave slot of
/// the GPU, or, past [`SINGLE_LIMIT`], for the `waves_needed` of one dispatch only (lent).
/// Returns the buffer, the layout over it and whether it is lent.
///
/// The slots are split over `xccs` XCCs, each XCC's share after the one before, as an AQL
/// queue of a multi-XCC GPU needs (ROCr's per-XCC `WAVES` and sizes): the whole device's slots
/// do not fit one `WAVES` count (an MI300X has 9728), and each XCC's CP lays out its own.
/// Slots are sized for waves of `lanes` lanes (wave32 dispatches on GFX11 need half a wave64
/// slot per work-item byte).
pub(crate) fn allocate(
    gpu: &Gpu,
    private: u32,
    waves_needed: u64,
    xccs: u32,
    lanes: u32,
) -> Result<(Buffer, ScratchLayout, bool)> {
    let info = gpu.info();
    let format =
        ScratchFormat::for_gfx_target_version(info.gfx_target_version).ok_or_else(|| {
            Error::Unsupported(format!(
                "scratch for {} queues (kfdrt sets up GFX9 and GFX11 scratch)",
                info.gfx_target
            ))
        })?;
    let xccs = xccs.max(1);
    let engines = (info.shader_engines / xccs).max(1);
    let slots = wave_slots(gpu).div_ceil(xccs);
    // Past what a scratch resource can describe: a wave's share is at most MAX_WAVE_BYTES.
    let too_big = || Error::TooLarge {
        what: "scratch bytes per work-item",
        requested: u64::from(private),
        limit: aql::scratch::MAX_WAVE_BYTES / u64::from(lanes.max(1)),
    };
    let layout_for = |waves| ScratchLayout::new(format, lanes, private, waves, xccs, engines);
    let mut layout = layout_for(slots).ok_or_else(too_big)?;
    let mut lent = false;
    if layout.size() > SINGLE_LIMIT {
        // A dispatch's work-groups are spread over the XCCs in turn.
        let per_xcc = waves_needed.div_ceil(u64::from(xccs));
        let waves = u32::try_from(per_xcc.min(u64::from(slots))).unwrap_or(slots);
        // GFX11 counts waves per engine: at least one each.
        layout = layout_for(waves.max(engines)).ok_or_else(too_big)?;
        lent = true;
    }
    let buffer = gpu.alloc_with(
        layout.size(),
        AllocOptions::new(MemoryKind::DeviceLocal).dedicated(),
    )?;
    layout.base = buffer.gpu_address();
    Ok((buffer, layout, lent))
}
