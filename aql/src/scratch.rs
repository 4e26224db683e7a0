//! How an AQL queue describes its scratch (private segment memory) to the CP, in the
//! `amd_queue_t` fields ROCr fills (`AqlQueue::InitScratchSRD`), on GFX9 (gfx90a, gfx942) and
//! GFX11 (gfx1100).
//!
//! The backing is divided into `waves` equal slots, one per wave that may run at once, each
//! `WAVESIZE` units: a work-item's private bytes are swizzled across its wave's slot, four
//! bytes per lane at a time. `compute_tmpring_size` holds the slot count and size, the buffer
//! resource (V#) covers the backing with swizzling on, and `scratch_wave64_lane_byte_size` is
//! the largest `private_segment_size` a wave64 dispatch may ask for (half as much again for a
//! wave32 one: the field counts bytes over 64 lanes); a larger one stops the CP, which asks the
//! runtime for more ([`crate::queue_error::INSUFFICIENT_SCRATCH_WAVE64`] or `_WAVE32`).
//!
//! The formats differ by generation ([`ScratchFormat`]): GFX9 counts `WAVESIZE` in KiB and all
//! the device's `WAVES`; GFX11 counts `WAVESIZE` in 256-byte units (15 bits) and `WAVES` per
//! shader engine (`FillComputeTmpRingSize_Gfx11`), and its resource has another dword 1
//! (`SWIZZLE_ENABLE` at bit 30) and dword 3 (`FillBufRsrcWord3_Gfx11`).
//!
//! A GPU of several XCCs (gfx942) splits the backing: each XCC's command processor lays out
//! its own `waves` slots in its share, the XCCs one after another, so the queue describes one
//! XCC's share (`WAVES`, the resource's size and `scratch_backing_memory_byte_size` are per XCC:
//! ROCr's `FillComputeTmpRingSize`, `FillBufRsrcWord2` and `InitScratchSRD`, "report size per
//! XCC") while the backing holds all of them.

/// Bytes per unit of `COMPUTE_TMPRING_SIZE.WAVESIZE` on GFX9.
pub const WAVESIZE_GRANULE: u64 = 1024;
/// Per-work-item sizes are rounded up to this for wave64 on GFX9 (one `WAVESIZE` unit over 64
/// lanes).
pub const LANE_GRANULE_WAVE64: u32 = 16;
/// The most one wave's slot may hold on GFX9: `WAVESIZE` is 13 bits of KiB.
pub const MAX_WAVE_BYTES: u64 = 0x1FFF * WAVESIZE_GRANULE;
/// The most slots `COMPUTE_TMPRING_SIZE.WAVES` (12 bits) can count.
pub const MAX_WAVES: u32 = 0xFFF;
/// Dword 3 of the scratch buffer resource ROCr gives GFX9 dGPU queues: DST_SEL XYZW, NUM_FORMAT
/// UINT, DATA_FORMAT 32, ELEMENT_SIZE 4 bytes, INDEX_STRIDE 64, ADD_TID_ENABLE.
pub const GFX9_RESOURCE_DWORD3: u32 = 0x00EA_4FAC;
/// Dword 3 of ROCr's GFX11 scratch resource: DST_SEL XYZW, FORMAT 32_UINT (0x14),
/// INDEX_STRIDE 0 (the CP fills it in), ADD_TID_ENABLE, OOB_SELECT 2 (no bounds check when
/// swizzled), TYPE buffer.
pub const GFX11_RESOURCE_DWORD3: u32 = 0x2081_4FAC;

/// Which generation's register and resource formats a layout is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ScratchFormat {
    /// GFX9 (gfx90a, gfx942).
    #[default]
    Gfx9,
    /// GFX11 (gfx1100).
    Gfx11,
}

impl ScratchFormat {
    /// The format of a `gfx_target_version`, or `None` where kfdrt sets up no scratch (gfx10,
    /// gfx12).
    pub fn for_gfx_target_version(v: u32) -> Option<ScratchFormat> {
        match v / 10000 {
            9 => Some(ScratchFormat::Gfx9),
            11 => Some(ScratchFormat::Gfx11),
            _ => None,
        }
    }

    /// Bytes per unit of `WAVESIZE` (ROCr's `mem_alignment_size`).
    pub fn wavesize_granule(self) -> u64 {
        match self {
            ScratchFormat::Gfx9 => WAVESIZE_GRANULE,
            ScratchFormat::Gfx11 => 256,
        }
    }

    /// The largest `WAVESIZE` field value.
    fn max_wavesize(self) -> u64 {
        match self {
            ScratchFormat::Gfx9 => 0x1FFF,
            ScratchFormat::Gfx11 => 0x7FFF,
        }
    }

    /// The wave slots and bytes per wave a `compute_tmpring_size` describes on an XCC of
    /// `shader_engines` engines (GFX11 counts `WAVES` per engine, GFX9 per XCC).
    pub fn tmpring_slots(self, tmpring: u32, shader_engines: u32) -> (u64, u64) {
        let (waves, wave_bytes) = self.decode_tmpring(tmpring);
        let per = match self {
            ScratchFormat::Gfx9 => 1,
            ScratchFormat::Gfx11 => u64::from(shader_engines.max(1)),
        };
        (u64::from(waves) * per, wave_bytes)
    }

    /// Decodes `compute_tmpring_size`: (`WAVES` field, bytes per wave).
    pub fn decode_tmpring(self, tmpring: u32) -> (u32, u64) {
        let mask = self.max_wavesize() as u32;
        (
            tmpring & 0xFFF,
            u64::from((tmpring >> 12) & mask) * self.wavesize_granule(),
        )
    }
}

/// A queue's scratch, as the `amd_queue_t` fields describe it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ScratchLayout {
    /// GPU address of the backing (0: none).
    pub base: u64,
    /// Bytes per work-item each slot serves (a multiple of the granule over `lanes`).
    pub lane_bytes: u32,
    /// Lanes per wave the slots are sized for (64, or 32 for wave32 dispatches; 0 is 64).
    pub lanes: u32,
    /// Slots per XCC: waves that may run at once on one XCC.
    pub waves: u32,
    /// XCCs sharing the backing, each with `waves` slots (0 is taken as 1).
    pub xccs: u32,
    /// The register and resource formats.
    pub format: ScratchFormat,
    /// Shader engines per XCC: GFX11 counts `WAVES` per engine (0 is taken as 1).
    pub shader_engines: u32,
}

impl ScratchLayout {
    /// The GFX9 wave64 layout serving `private_segment_size` bytes per work-item for `waves`
    /// waves, or `None` when one wave's share would not fit `WAVESIZE` or the count is 0.
    pub fn for_dispatch(private_segment_size: u32, waves: u32) -> Option<ScratchLayout> {
        Self::for_xccs(private_segment_size, waves, 1)
    }

    /// The GFX9 wave64 layout serving `private_segment_size` bytes per work-item for
    /// `waves_per_xcc` waves on each of `xccs` XCCs (clamped to what `WAVES` counts), or `None`
    /// as [`ScratchLayout::for_dispatch`].
    pub fn for_xccs(
        private_segment_size: u32,
        waves_per_xcc: u32,
        xccs: u32,
    ) -> Option<ScratchLayout> {
        Self::new(
            ScratchFormat::Gfx9,
            64,
            private_segment_size,
            waves_per_xcc,
            xccs,
            1,
        )
    }

    /// The layout in `format` serving `private_segment_size` bytes per work-item of waves of
    /// `lanes` lanes, `waves_per_xcc` of them on each of `xccs` XCCs of `shader_engines`
    /// engines each (ROCr: `size_per_thread = AlignUp(private, granule / lanes)`), or `None`
    /// when a wave's share would not fit `WAVESIZE`, or a count is 0.
    pub fn new(
        format: ScratchFormat,
        lanes: u32,
        private_segment_size: u32,
        waves_per_xcc: u32,
        xccs: u32,
        shader_engines: u32,
    ) -> Option<ScratchLayout> {
        if lanes != 32 && lanes != 64 {
            return None;
        }
        let lane_granule = (format.wavesize_granule() / u64::from(lanes)) as u32;
        let lane_bytes = private_segment_size.checked_next_multiple_of(lane_granule)?;
        let engines = shader_engines.max(1);
        // GFX11's WAVES counts per engine: keep the total a whole number per engine.
        let per_engine_max = match format {
            ScratchFormat::Gfx9 => MAX_WAVES,
            ScratchFormat::Gfx11 => MAX_WAVES.saturating_mul(engines),
        };
        let mut waves = waves_per_xcc.min(per_engine_max);
        if format == ScratchFormat::Gfx11 {
            waves = waves / engines * engines;
        }
        let s = ScratchLayout {
            base: 0,
            lane_bytes,
            lanes,
            waves,
            xccs: xccs.max(1),
            format,
            shader_engines: engines,
        };
        let fits = s.wave_bytes() <= format.max_wavesize() * format.wavesize_granule();
        (s.waves > 0 && lane_bytes > 0 && fits).then_some(s)
    }

    fn lanes(&self) -> u32 {
        if self.lanes == 0 {
            64
        } else {
            self.lanes
        }
    }

    /// Bytes of one wave's slot.
    pub fn wave_bytes(&self) -> u64 {
        let g = self.format.wavesize_granule();
        (u64::from(self.lane_bytes) * u64::from(self.lanes())).next_multiple_of(g)
    }

    /// Bytes of one XCC's share: its `waves` slots.
    pub fn xcc_bytes(&self) -> u64 {
        u64::from(self.waves) * self.wave_bytes()
    }

    /// Bytes of the whole backing: every XCC's share.
    pub fn size(&self) -> u64 {
        u64::from(self.xccs.max(1)) * self.xcc_bytes()
    }

    /// `scratch_backing_memory_byte_size`: one XCC's share (0 with no backing).
    pub fn backing_byte_size(&self) -> u64 {
        if self.base == 0 {
            0
        } else {
            self.xcc_bytes()
        }
    }

    /// `compute_tmpring_size`: `WAVES` in bits 11:0 (per engine on GFX11), `WAVESIZE` from bit
    /// 12 (13 bits of KiB on GFX9, 15 bits of 256 bytes on GFX11).
    pub fn tmpring(&self) -> u32 {
        if self.base == 0 {
            return 0;
        }
        let units = (self.wave_bytes() / self.format.wavesize_granule()) as u32;
        let waves = match self.format {
            ScratchFormat::Gfx9 => self.waves,
            ScratchFormat::Gfx11 => self.waves / self.shader_engines.max(1),
        };
        (waves & 0xFFF) | (units & self.format.max_wavesize() as u32) << 12
    }

    /// `scratch_resource_descriptor`: the swizzled buffer resource over one XCC's share (a
    /// null resource, size 0, when there is none).
    pub fn resource(&self) -> [u32; 4] {
        let (swizzle, dword3) = match self.format {
            ScratchFormat::Gfx9 => (1 << 31, GFX9_RESOURCE_DWORD3),
            ScratchFormat::Gfx11 => (1 << 30, GFX11_RESOURCE_DWORD3),
        };
        [
            self.base as u32,
            ((self.base >> 32) as u32 & 0xFFFF) | swizzle,
            self.xcc_bytes().min(u64::from(u32::MAX)) as u32 * u32::from(self.base != 0),
            dword3,
        ]
    }

    /// `scratch_wave64_lane_byte_size`: the per-lane bytes of a slot counted over 64 lanes
    /// (what a wave64 dispatch may ask for; 0 with no backing).
    pub fn wave64_lane_bytes(&self) -> u32 {
        if self.base == 0 {
            0
        } else {
            self.lane_bytes * self.lanes() / 64
        }
    }

    /// The most a dispatch of waves of `lanes` lanes may ask for per work-item.
    pub fn serves_lane_bytes(&self, lanes: u32) -> u32 {
        if self.base == 0 || lanes == 0 {
            0
        } else {
            self.wave64_lane_bytes() * 64 / lanes
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocr_layout_of_a_worked_example() {
        // gfx90a, 104 CUs over 8 engines, 32 slots per CU, 100 bytes per work-item: ROCr
        // rounds to 112 bytes, 7 KiB per wave, 3328 waves.
        let mut s = ScratchLayout::for_dispatch(100, 3328).unwrap();
        s.base = 0x7F12_3456_0000;
        assert_eq!(s.lane_bytes, 112);
        assert_eq!(s.wave_bytes(), 7 * 1024);
        assert_eq!(s.size(), 0x16C_0000);
        assert_eq!(s.tmpring(), 0x7D00);
        assert_eq!(
            s.resource(),
            [0x3456_0000, 0x8000_7F12, 0x16C_0000, 0x00EA_4FAC]
        );
        assert_eq!(s.wave64_lane_bytes(), 112);
    }

    #[test]
    fn an_mi300x_describes_one_xcc_of_eight() {
        // 304 CUs over 8 XCCs, 32 slots per CU: 1216 waves per XCC, each XCC's share after
        // the one before; the queue sees one share.
        let mut s = ScratchLayout::for_xccs(100, 1216, 8).unwrap();
        s.base = 0x7F00_0000_0000;
        assert_eq!(s.xcc_bytes(), 1216 * 7 * 1024);
        assert_eq!(s.size(), 8 * s.xcc_bytes());
        assert_eq!(s.backing_byte_size(), s.xcc_bytes());
        assert_eq!(s.tmpring() & 0xFFF, 1216);
        assert_eq!(u64::from(s.resource()[2]), s.xcc_bytes());
        // 9728 waves would not fit WAVES: a whole-device count is clamped, per XCC is not.
        assert_eq!(
            ScratchLayout::for_dispatch(100, 9728).unwrap().waves,
            MAX_WAVES
        );
    }

    #[test]
    fn rocr_gfx11_layout_for_wave32() {
        // gfx1100: 96 CUs over 6 engines, 32 slots per CU (3072 waves), 100 bytes per work-item
        // of wave32 dispatches: ROCr aligns to 256 / 32 = 8 bytes (104), 104 x 32 = 3328 bytes
        // = 13 units of 256 per wave, and WAVES counts per engine (512).
        let mut s = ScratchLayout::new(ScratchFormat::Gfx11, 32, 100, 3072, 1, 6).unwrap();
        s.base = 0x7F12_3456_0000;
        assert_eq!((s.lane_bytes, s.wave_bytes()), (104, 3328));
        assert_eq!(s.size(), 3072 * 3328);
        assert_eq!(s.tmpring(), 512 | 13 << 12);
        assert_eq!(
            s.resource(),
            [0x3456_0000, 0x4000_7F12, 3072 * 3328, 0x2081_4FAC]
        );
        // Over 64 lanes: what a wave64 dispatch could use, half a wave32 one's.
        assert_eq!(s.wave64_lane_bytes(), 52);
        assert_eq!(s.serves_lane_bytes(32), 104);
        assert_eq!(
            ScratchFormat::Gfx11.decode_tmpring(s.tmpring()),
            (512, 3328)
        );
        // A wave count that is not a whole number per engine is cut to one.
        assert_eq!(
            ScratchLayout::new(ScratchFormat::Gfx11, 32, 100, 3073, 1, 6)
                .unwrap()
                .waves,
            3072
        );
        assert!(ScratchLayout::new(ScratchFormat::Gfx11, 48, 100, 64, 1, 6).is_none());
    }

    #[test]
    fn no_backing_is_a_null_resource() {
        let s = ScratchLayout::default();
        assert_eq!(s.resource(), [0, 0x8000_0000, 0, 0x00EA_4FAC]);
        assert_eq!(s.tmpring(), 0);
        assert_eq!(s.wave64_lane_bytes(), 0);
    }

    #[test]
    fn too_much_per_work_item_does_not_fit_a_wave() {
        assert!(ScratchLayout::for_dispatch(128 * 1024, 1).is_none());
        assert!(ScratchLayout::for_dispatch(16, 0).is_none());
        let big = ScratchLayout::for_dispatch(130_000, 1).unwrap();
        assert!(big.wave_bytes() <= MAX_WAVE_BYTES);
    }
}
