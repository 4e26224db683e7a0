//! Compute SH registers: dword addresses (`SET_SH_REG` takes them relative to [`SH_REG_BASE`]).
//! They are the same on every supported family except `COMPUTE_PGM_RSRC3`.

use crate::GfxFamily;

/// Start of the SH register space (`PACKET3_SET_SH_REG_START`).
pub const SH_REG_BASE: u32 = 0x2C00;
/// End (exclusive) of the SH register space.
pub const SH_REG_END: u32 = 0x3000;

/// `COMPUTE_DISPATCH_INITIATOR` (bits in [`initiator`]).
pub const COMPUTE_DISPATCH_INITIATOR: u32 = 0x2E00;
/// `COMPUTE_DIM_X`: grid size (written by DISPATCH_DIRECT).
pub const COMPUTE_DIM_X: u32 = 0x2E01;
/// `COMPUTE_DIM_Y`.
pub const COMPUTE_DIM_Y: u32 = 0x2E02;
/// `COMPUTE_DIM_Z`.
pub const COMPUTE_DIM_Z: u32 = 0x2E03;
/// `COMPUTE_START_X`: the first work-group.
pub const COMPUTE_START_X: u32 = 0x2E04;
/// `COMPUTE_START_Y`.
pub const COMPUTE_START_Y: u32 = 0x2E05;
/// `COMPUTE_START_Z`.
pub const COMPUTE_START_Z: u32 = 0x2E06;
/// `COMPUTE_NUM_THREAD_X`: the work-group size.
pub const COMPUTE_NUM_THREAD_X: u32 = 0x2E07;
/// `COMPUTE_NUM_THREAD_Y`.
pub const COMPUTE_NUM_THREAD_Y: u32 = 0x2E08;
/// `COMPUTE_NUM_THREAD_Z`.
pub const COMPUTE_NUM_THREAD_Z: u32 = 0x2E09;
/// `COMPUTE_PGM_LO`: entry address bits 8-39 (the address >> 8).
pub const COMPUTE_PGM_LO: u32 = 0x2E0C;
/// `COMPUTE_PGM_HI`: entry address bits 40-47.
pub const COMPUTE_PGM_HI: u32 = 0x2E0D;
/// `COMPUTE_DISPATCH_SCRATCH_BASE_LO` (scratch base >> 8).
pub const COMPUTE_DISPATCH_SCRATCH_BASE_LO: u32 = 0x2E10;
/// `COMPUTE_DISPATCH_SCRATCH_BASE_HI`.
pub const COMPUTE_DISPATCH_SCRATCH_BASE_HI: u32 = 0x2E11;
/// `COMPUTE_PGM_RSRC1`.
pub const COMPUTE_PGM_RSRC1: u32 = 0x2E12;
/// `COMPUTE_PGM_RSRC2`.
pub const COMPUTE_PGM_RSRC2: u32 = 0x2E13;
/// `COMPUTE_RESOURCE_LIMITS`.
pub const COMPUTE_RESOURCE_LIMITS: u32 = 0x2E15;
/// `COMPUTE_TMPRING_SIZE`: WAVES bits 0-11, WAVESIZE from bit 12 (kfdtest writes
/// `wave_size << 12 | waves`).
pub const COMPUTE_TMPRING_SIZE: u32 = 0x2E18;
/// `COMPUTE_RESTART_X`: where a preempted dispatch resumes (0 for a new one).
pub const COMPUTE_RESTART_X: u32 = 0x2E1B;
/// `COMPUTE_RESTART_Y`.
pub const COMPUTE_RESTART_Y: u32 = 0x2E1C;
/// `COMPUTE_RESTART_Z`.
pub const COMPUTE_RESTART_Z: u32 = 0x2E1D;
/// `COMPUTE_USER_DATA_0`: the first user SGPR's initial value.
pub const COMPUTE_USER_DATA_0: u32 = 0x2E40;
/// `COMPUTE_USER_DATA_15`: the last.
pub const COMPUTE_USER_DATA_15: u32 = 0x2E4F;
/// Number of user-data registers.
pub const USER_DATA_COUNT: u32 = 16;

/// `COMPUTE_USER_DATA_n`, or `None` past 15.
pub const fn compute_user_data(n: u32) -> Option<u32> {
    if n < USER_DATA_COUNT {
        Some(COMPUTE_USER_DATA_0 + n)
    } else {
        None
    }
}

/// `COMPUTE_PGM_RSRC3`, which moved between families: 0x2E2D on gfx90a and gfx94x, 0x2E28 on
/// gfx10+. Plain gfx9 has no RSRC3 state to program (kfdtest writes it only on gfx90a/gfx94x).
pub const fn compute_pgm_rsrc3(family: GfxFamily) -> Option<u32> {
    match family {
        GfxFamily::Gfx90a | GfxFamily::Gfx94x => Some(0x2E2D),
        GfxFamily::Gfx103 | GfxFamily::Gfx11 => Some(0x2E28),
        GfxFamily::Gfx9 => None,
    }
}

/// `COMPUTE_DISPATCH_INITIATOR` bits. kfdtest dispatches with
/// `COMPUTE_SHADER_EN | USE_THREAD_DIMENSIONS` (0x21), plus `CS_W32_EN` on gfx10+.
pub mod initiator {
    /// Start the compute shader.
    pub const COMPUTE_SHADER_EN: u32 = 1 << 0;
    /// Allow partial work-groups at the grid's edge.
    pub const PARTIAL_TG_EN: u32 = 1 << 1;
    /// Start at work-group 0,0,0 regardless of `COMPUTE_START_*`.
    pub const FORCE_START_AT_000: u32 = 1 << 2;
    /// `COMPUTE_DIM_*` count threads instead of work-groups.
    pub const USE_THREAD_DIMENSIONS: u32 = 1 << 5;
    /// Translate the shader's addresses through the IOMMU (APUs; kfdtest sets it when not dGPU).
    pub const DATA_ATC: u32 = 1 << 12;
    /// Wave32 (gfx10+).
    pub const CS_W32_EN: u32 = 1 << 15;
}
