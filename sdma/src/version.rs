//! [`SdmaVersion`]: the SDMA engine generation of a GPU, and the per-packet limits that differ
//! between generations and, within one, between parts.

/// The largest byte count a 22-bit "count - 1" field holds (SDMA 4.0-4.2, 4.4.2, 5.0).
const COUNT_22_BITS: u64 = 0x3F_FFFF;
/// The largest byte count a 30-bit "count - 1" field holds (gfx90a's SDMA 4.4.0, 5.2, 6).
const COUNT_30_BITS: u64 = 0x3FFF_FFFF;

/// An SDMA engine generation.
///
/// The packets kfdrt writes have one layout per generation; what differs inside a generation is
/// only how many bytes one COPY_LINEAR or CONSTANT_FILL may move, which is why the limits take
/// the `gfx_target_version` as well.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SdmaVersion {
    /// SDMA 4.x: gfx9 (gfx900 ... gfx90c, gfx90a, gfx94x, gfx950).
    V4,
    /// SDMA 5.x: gfx10 (5.0 on gfx10.1, 5.2 on gfx10.3; they differ in the copy limit only).
    V5,
    /// SDMA 6.x: gfx11.
    V6,
}

/// `gfx_target_version` is `major * 10000 + minor * 100 + stepping` (KFD topology).
fn major(gfx_target_version: u32) -> u32 {
    gfx_target_version / 10_000
}

fn minor(gfx_target_version: u32) -> u32 {
    gfx_target_version / 100 % 100
}

impl SdmaVersion {
    /// The engine generation of a KFD `gfx_target_version` (for example 90010 for gfx90a,
    /// 100300 for gfx1030), or `None` for a GPU whose SDMA engine kfdrt does not drive (before
    /// gfx9, or gfx12's SDMA 7 whose packets differ).
    pub fn from_gfx_target_version(gfx_target_version: u32) -> Option<SdmaVersion> {
        match major(gfx_target_version) {
            9 => Some(SdmaVersion::V4),
            10 => Some(SdmaVersion::V5),
            11 => Some(SdmaVersion::V6),
            _ => None,
        }
    }

    /// The most bytes one COPY_LINEAR may copy on this part.
    ///
    /// ROCr's limits (`GpuAgent::CreateBlitSdma`): 0x3FFFFFFF on gfx90a, on SDMA 5.2 (gfx10.3)
    /// and on SDMA 6; 0x3FFFFF on every other gfx9 part (gfx94x included) and on SDMA 5.0. Linux
    /// agrees for gfx94x and SDMA 5.0/6 (4 MiB, then 1 GiB on 5.2/6 once AMD's hardware team
    /// confirmed the wider field); Mesa caps at 0x3FFFFF00 for alignment, not correctness. Where
    /// the part is unknown (a `gfx_target_version` from another generation) the 22-bit limit
    /// is used, which every engine accepts.
    pub fn max_copy_bytes(self, gfx_target_version: u32) -> u64 {
        let wide = match self {
            // gfx90a (SDMA 4.4.0) has the 30-bit COUNT; ROCr uses it there only.
            SdmaVersion::V4 => gfx_target_version == 90010,
            SdmaVersion::V5 => major(gfx_target_version) == 10 && minor(gfx_target_version) >= 3,
            SdmaVersion::V6 => true,
        };
        if wide {
            COUNT_30_BITS
        } else {
            COUNT_22_BITS
        }
    }

    /// The most bytes one CONSTANT_FILL may write on this part (a multiple of 4: fills write
    /// whole dwords).
    ///
    /// Sources disagree, so this takes the smaller value wherever one source says less: Mesa
    /// uses a 22-bit count before SDMA 6 and 30 bits from SDMA 6 on; ROCr uses the 22-bit count
    /// everywhere, gfx90a included (its copy override does not apply to fills); Linux patches
    /// raise SDMA 5.2 and 6 to 1 GiB. Hence 0x3FFFFC except on SDMA 6 (0x3FFFFFFC). The
    /// `gfx_target_version` is taken for symmetry with [`max_copy_bytes`](Self::max_copy_bytes):
    /// no source gives a part-specific fill limit today.
    pub fn max_fill_bytes(self, _gfx_target_version: u32) -> u64 {
        match self {
            SdmaVersion::V4 | SdmaVersion::V5 => COUNT_22_BITS & !3,
            SdmaVersion::V6 => COUNT_30_BITS & !3,
        }
    }

    /// Whether the engine has GCR_REQ (cache writeback/invalidate packets): SDMA 5 and later.
    pub fn has_gcr(self) -> bool {
        !matches!(self, SdmaVersion::V4)
    }

    /// Width of LINEAR_SUB_WINDOW's z fields (the start slices and depth - 1): 11 bits on
    /// SDMA 4 (`vega10_sdma_pkt_open.h`), 13 on SDMA 5 and 6 (`navi10_sdma_pkt_open.h`,
    /// `sdma_v6_0_0_pkt_open.h`). ROCr's own header gives 11 for every generation before
    /// gfx12, so what it writes fits everywhere.
    pub fn sub_window_z_bits(self) -> u32 {
        match self {
            SdmaVersion::V4 => 11,
            SdmaVersion::V5 | SdmaVersion::V6 => 13,
        }
    }

    /// Whether copies carry cache policies (LINEAR_SUB_WINDOW's per-surface policies and the
    /// header's CPV bit): SDMA 6 only; the bits are reserved before it.
    pub fn has_copy_cache_policy(self) -> bool {
        matches!(self, SdmaVersion::V6)
    }

    /// Whether FENCE carries a memory type (MTYPE, set to uncached by ROCr and Linux from
    /// SDMA 5 on; SDMA 4 fences are written without one).
    pub fn has_fence_mtype(self) -> bool {
        !matches!(self, SdmaVersion::V4)
    }
}
