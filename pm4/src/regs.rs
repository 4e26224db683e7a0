//! Compute SH registers (dword addresses; `SET_SH_REG` takes them relative to [`SH_REG_BASE`]).

use crate::GfxFamily;

/// Base of the SH register space.
pub const SH_REG_BASE: u32 = 0x2C00;
/// End (exclusive) of the SH register space.
pub const SH_REG_END: u32 = 0x3000;

/// `COMPUTE_DISPATCH_INITIATOR`.
pub const COMPUTE_DISPATCH_INITIATOR: u32 = 0x2E00;
/// `COMPUTE_DIM_X` (Y, Z follow).
pub const COMPUTE_DIM_X: u32 = 0x2E01;
/// `COMPUTE_START_X` (Y, Z follow).
pub const COMPUTE_START_X: u32 = 0x2E04;
/// `COMPUTE_NUM_THREAD_X` (Y, Z follow): the work-group size.
pub const COMPUTE_NUM_THREAD_X: u32 = 0x2E07;
/// `COMPUTE_PGM_LO`: entry address bits 8-39.
pub const COMPUTE_PGM_LO: u32 = 0x2E0C;
/// `COMPUTE_PGM_HI`: entry address bits 40-47.
pub const COMPUTE_PGM_HI: u32 = 0x2E0D;
/// `COMPUTE_DISPATCH_SCRATCH_BASE_LO`.
pub const COMPUTE_DISPATCH_SCRATCH_BASE_LO: u32 = 0x2E10;
/// `COMPUTE_PGM_RSRC1`.
pub const COMPUTE_PGM_RSRC1: u32 = 0x2E12;
/// `COMPUTE_PGM_RSRC2`.
pub const COMPUTE_PGM_RSRC2: u32 = 0x2E13;
/// `COMPUTE_RESOURCE_LIMITS`.
pub const COMPUTE_RESOURCE_LIMITS: u32 = 0x2E15;
/// `COMPUTE_TMPRING_SIZE`.
pub const COMPUTE_TMPRING_SIZE: u32 = 0x2E18;
/// `COMPUTE_RESTART_X` (Y, Z follow).
pub const COMPUTE_RESTART_X: u32 = 0x2E1B;
/// `COMPUTE_USER_DATA_0` (1..15 follow).
pub const COMPUTE_USER_DATA_0: u32 = 0x2E40;
/// Number of user-data registers.
pub const USER_DATA_COUNT: u32 = 16;

/// `COMPUTE_PGM_RSRC3`, which moved between families.
pub fn compute_pgm_rsrc3(family: GfxFamily) -> Option<u32> {
    match family {
        GfxFamily::Gfx90a | GfxFamily::Gfx94x => Some(0x2E2D),
        GfxFamily::Gfx103 | GfxFamily::Gfx11 => Some(0x2E28),
        GfxFamily::Gfx9 => None,
    }
}

/// `DISPATCH_INITIATOR` bits.
pub mod initiator {
    /// Start the compute shader.
    pub const COMPUTE_SHADER_EN: u32 = 1 << 0;
    /// Allow partial work-groups at the grid's edge.
    pub const PARTIAL_TG_EN: u32 = 1 << 1;
    /// Reset the start position to 0,0,0.
    pub const FORCE_START_AT_000: u32 = 1 << 2;
    /// DIM_X/Y/Z count threads instead of groups.
    pub const USE_THREAD_DIMENSIONS: u32 = 1 << 5;
    /// Wave32 (gfx10+).
    pub const CS_W32_EN: u32 = 1 << 15;
}
