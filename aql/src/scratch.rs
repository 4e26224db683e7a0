//! How an AQL queue describes its scratch (private segment memory) to the CP on GFX9 (gfx90a,
//! gfx942), in the `amd_queue_t` fields ROCr fills (`AqlQueue::InitScratchSRD`).
//!
//! The backing is divided into `waves` equal slots, one per wave that may run at once, each
//! `WAVESIZE` KiB: a work-item's private bytes are swizzled across its wave's slot, four bytes
//! per lane at a time. `compute_tmpring_size` holds the slot count and size, the buffer
//! resource (V#) covers the backing with swizzling on, and `scratch_wave64_lane_byte_size` is
//! the largest `private_segment_size` a dispatch may ask for; a larger one stops the CP, which
//! asks the runtime for more ([`crate::queue_error::INSUFFICIENT_SCRATCH_WAVE64`]).
//!
//! A GPU of several XCCs (gfx942) splits the backing: each XCC's command processor lays out
//! its own `waves` slots in its share, the XCCs one after another, so the queue describes one
//! XCC's share (`WAVES`, the resource's size and `scratch_backing_memory_byte_size` are per XCC:
//! ROCr's `FillComputeTmpRingSize`, `FillBufRsrcWord2` and `InitScratchSRD`, "report size per
//! XCC") while the backing holds all of them.

/// Bytes per unit of `COMPUTE_TMPRING_SIZE.WAVESIZE`.
pub const WAVESIZE_GRANULE: u64 = 1024;
/// Per-work-item sizes are rounded up to this for wave64 (one `WAVESIZE` unit over 64 lanes).
pub const LANE_GRANULE_WAVE64: u32 = 16;
/// The most one wave's slot may hold: `WAVESIZE` is 13 bits of KiB.
pub const MAX_WAVE_BYTES: u64 = 0x1FFF * WAVESIZE_GRANULE;
/// The most slots `COMPUTE_TMPRING_SIZE.WAVES` (12 bits) can count.
pub const MAX_WAVES: u32 = 0xFFF;
/// Dword 3 of the scratch buffer resource ROCr gives GFX9 dGPU queues: DST_SEL XYZW, NUM_FORMAT
/// UINT, DATA_FORMAT 32, ELEMENT_SIZE 4 bytes, INDEX_STRIDE 64, ADD_TID_ENABLE.
pub const GFX9_RESOURCE_DWORD3: u32 = 0x00EA_4FAC;
/// Dword 1's SWIZZLE_ENABLE bit.
const SWIZZLE_ENABLE: u32 = 1 << 31;

/// A queue's scratch on GFX9, as the `amd_queue_t` fields describe it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Gfx9Scratch {
    /// GPU address of the backing (0: none).
    pub base: u64,
    /// Bytes per work-item each slot serves (a multiple of [`LANE_GRANULE_WAVE64`]).
    pub lane_bytes: u32,
    /// Slots per XCC: waves that may run at once on one XCC.
    pub waves: u32,
    /// XCCs sharing the backing, each with `waves` slots (0 is taken as 1).
    pub xccs: u32,
}

impl Gfx9Scratch {
    /// The layout serving `private_segment_size` bytes per work-item for `waves` waves, or
    /// `None` when one wave's share would not fit `WAVESIZE` or the count is 0.
    pub fn for_dispatch(private_segment_size: u32, waves: u32) -> Option<Gfx9Scratch> {
        Self::for_xccs(private_segment_size, waves, 1)
    }

    /// The layout serving `private_segment_size` bytes per work-item for `waves_per_xcc` waves
    /// on each of `xccs` XCCs (clamped to what `WAVES` counts), or `None` as
    /// [`Gfx9Scratch::for_dispatch`].
    pub fn for_xccs(
        private_segment_size: u32,
        waves_per_xcc: u32,
        xccs: u32,
    ) -> Option<Gfx9Scratch> {
        let lane_bytes = private_segment_size.checked_next_multiple_of(LANE_GRANULE_WAVE64)?;
        let s = Gfx9Scratch {
            base: 0,
            lane_bytes,
            waves: waves_per_xcc.min(MAX_WAVES),
            xccs: xccs.max(1),
        };
        (s.waves > 0 && lane_bytes > 0 && s.wave_bytes() <= MAX_WAVE_BYTES).then_some(s)
    }

    /// Bytes of one wave's slot.
    pub fn wave_bytes(&self) -> u64 {
        (u64::from(self.lane_bytes) * 64).next_multiple_of(WAVESIZE_GRANULE)
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

    /// `compute_tmpring_size`: WAVES in bits 11:0, WAVESIZE (KiB) in bits 24:12.
    pub fn tmpring(&self) -> u32 {
        if self.base == 0 {
            return 0;
        }
        (self.waves & 0xFFF) | (((self.wave_bytes() / WAVESIZE_GRANULE) as u32) & 0x1FFF) << 12
    }

    /// `scratch_resource_descriptor`: the swizzled buffer resource over the backing (a null
    /// resource, size 0, when there is none).
    pub fn resource(&self) -> [u32; 4] {
        [
            self.base as u32,
            ((self.base >> 32) as u32 & 0xFFFF) | SWIZZLE_ENABLE,
            self.xcc_bytes().min(u64::from(u32::MAX)) as u32 * u32::from(self.base != 0),
            GFX9_RESOURCE_DWORD3,
        ]
    }

    /// `scratch_wave64_lane_byte_size`: what a dispatch may ask for (0 with no backing).
    pub fn wave64_lane_bytes(&self) -> u32 {
        if self.base == 0 {
            0
        } else {
            self.lane_bytes
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
        let mut s = Gfx9Scratch::for_dispatch(100, 3328).unwrap();
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
        let mut s = Gfx9Scratch::for_xccs(100, 1216, 8).unwrap();
        s.base = 0x7F00_0000_0000;
        assert_eq!(s.xcc_bytes(), 1216 * 7 * 1024);
        assert_eq!(s.size(), 8 * s.xcc_bytes());
        assert_eq!(s.backing_byte_size(), s.xcc_bytes());
        assert_eq!(s.tmpring() & 0xFFF, 1216);
        assert_eq!(u64::from(s.resource()[2]), s.xcc_bytes());
        // 9728 waves would not fit WAVES: a whole-device count is clamped, per XCC is not.
        assert_eq!(
            Gfx9Scratch::for_dispatch(100, 9728).unwrap().waves,
            MAX_WAVES
        );
    }

    #[test]
    fn no_backing_is_a_null_resource() {
        let s = Gfx9Scratch::default();
        assert_eq!(s.resource(), [0, 0x8000_0000, 0, 0x00EA_4FAC]);
        assert_eq!(s.tmpring(), 0);
        assert_eq!(s.wave64_lane_bytes(), 0);
    }

    #[test]
    fn too_much_per_work_item_does_not_fit_a_wave() {
        assert!(Gfx9Scratch::for_dispatch(128 * 1024, 1).is_none());
        assert!(Gfx9Scratch::for_dispatch(16, 0).is_none());
        let big = Gfx9Scratch::for_dispatch(130_000, 1).unwrap();
        assert!(big.wave_bytes() <= MAX_WAVE_BYTES);
    }
}
