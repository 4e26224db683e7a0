//! GPU families whose PM4 dialects differ.

/// A GPU family whose PM4 dialect kfdrt speaks. The families differ in ACQUIRE_MEM's layout,
/// RELEASE_MEM's cache-action bits, where `COMPUTE_PGM_RSRC3` lives and whether wave32 exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GfxFamily {
    /// gfx900/902/904/906/908/909/90c (Vega, MI50/MI60, MI100).
    Gfx9,
    /// gfx90a (MI200).
    Gfx90a,
    /// gfx940/941/942 (MI300).
    Gfx94x,
    /// gfx1030-gfx1036 (RDNA2).
    Gfx103,
    /// gfx1100-gfx1103 and gfx1150-gfx1153 (RDNA3, RDNA3.5).
    Gfx11,
}

impl GfxFamily {
    /// Every family, oldest first.
    pub const ALL: [GfxFamily; 5] = [
        GfxFamily::Gfx9,
        GfxFamily::Gfx90a,
        GfxFamily::Gfx94x,
        GfxFamily::Gfx103,
        GfxFamily::Gfx11,
    ];

    /// The family of a KFD `gfx_target_version` (major * 10000 + minor * 100 + stepping, so
    /// gfx90a is 90010 and gfx1030 is 100300), or `None` for targets kfdrt has no PM4 dialect
    /// for (gfx8, gfx10.1, gfx950, gfx12, ...).
    pub fn from_gfx_target_version(v: u32) -> Option<GfxFamily> {
        Some(match v {
            // Stepping 10 (a) is gfx90a; 12 (c) is the gfx90c APU, plain gfx9.
            90010 => GfxFamily::Gfx90a,
            90000..=90009 | 90012 => GfxFamily::Gfx9,
            90400..=90499 => GfxFamily::Gfx94x,
            100300..=100399 => GfxFamily::Gfx103,
            110000..=110099 | 110500..=110599 => GfxFamily::Gfx11,
            _ => return None,
        })
    }

    /// Whether the family is gfx10 or newer: GCR-style cache control (ACQUIRE_MEM with a
    /// GCR_CNTL dword, RELEASE_MEM GCR bits) and wave32.
    pub fn is_gfx10_plus(self) -> bool {
        matches!(self, GfxFamily::Gfx103 | GfxFamily::Gfx11)
    }
}
