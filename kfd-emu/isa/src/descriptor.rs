//! The 64-byte kernel descriptor (code object v3+): what the CP reads to start a kernel's
//! waves. Field offsets and bit positions from LLVM's AMDGPUUsage ("Kernel Descriptor").

/// A parsed kernel descriptor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelDescriptor {
    /// Static LDS bytes per work-group.
    pub group_segment_fixed_size: u32,
    /// Static scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// Kernel-argument bytes.
    pub kernarg_size: u32,
    /// Entry point relative to the descriptor's address.
    pub kernel_code_entry_byte_offset: i64,
    /// `COMPUTE_PGM_RSRC3` (gfx90a+: accum_offset in bits 0-5, tg_split bit 16).
    pub compute_pgm_rsrc3: u32,
    /// `COMPUTE_PGM_RSRC1` (register counts, float modes).
    pub compute_pgm_rsrc1: u32,
    /// `COMPUTE_PGM_RSRC2` (scratch, user SGPR count, system SGPR/VGPR enables).
    pub compute_pgm_rsrc2: u32,
    /// `KERNEL_CODE_PROPERTY_*` bits (user SGPR enables, wave32).
    pub kernel_code_properties: u16,
    /// Kernel-argument preload (gfx940+): count in bits 0-6, offset in bits 7-15.
    pub kernarg_preload: u16,
}

/// User SGPRs a descriptor can enable, in the order the hardware loads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserSgpr {
    /// The private segment buffer resource (4 SGPRs).
    PrivateSegmentBuffer,
    /// Address of the AQL dispatch packet (2).
    DispatchPtr,
    /// Address of the amd_queue_t (2).
    QueuePtr,
    /// Address of the kernel arguments (2).
    KernargSegmentPtr,
    /// The 64-bit dispatch id (2).
    DispatchId,
    /// Flat scratch initialisation (2).
    FlatScratchInit,
    /// Private segment size per work-item (1).
    PrivateSegmentSize,
}

impl UserSgpr {
    /// Every user SGPR in load order.
    pub const ORDER: [UserSgpr; 7] = [
        UserSgpr::PrivateSegmentBuffer,
        UserSgpr::DispatchPtr,
        UserSgpr::QueuePtr,
        UserSgpr::KernargSegmentPtr,
        UserSgpr::DispatchId,
        UserSgpr::FlatScratchInit,
        UserSgpr::PrivateSegmentSize,
    ];

    /// How many SGPRs it takes.
    pub fn count(self) -> usize {
        match self {
            UserSgpr::PrivateSegmentBuffer => 4,
            UserSgpr::PrivateSegmentSize => 1,
            _ => 2,
        }
    }

    /// Its enable bit in `kernel_code_properties`.
    pub fn enable_bit(self) -> u16 {
        1 << UserSgpr::ORDER.iter().position(|&u| u == self).unwrap_or(0)
    }
}

fn u32_at(b: &[u8; 64], off: usize) -> u32 {
    let mut w = [0; 4];
    if let Some(s) = b.get(off..off + 4) {
        w.copy_from_slice(s);
    }
    u32::from_le_bytes(w)
}

impl KernelDescriptor {
    /// Parses the 64 bytes of a descriptor.
    pub fn from_bytes(b: &[u8; 64]) -> KernelDescriptor {
        let lo = u64::from(u32_at(b, 16));
        let hi = u64::from(u32_at(b, 20));
        KernelDescriptor {
            group_segment_fixed_size: u32_at(b, 0),
            private_segment_fixed_size: u32_at(b, 4),
            kernarg_size: u32_at(b, 8),
            kernel_code_entry_byte_offset: (lo | hi << 32) as i64,
            compute_pgm_rsrc3: u32_at(b, 44),
            compute_pgm_rsrc1: u32_at(b, 48),
            compute_pgm_rsrc2: u32_at(b, 52),
            kernel_code_properties: u32_at(b, 56) as u16,
            kernarg_preload: (u32_at(b, 56) >> 16) as u16,
        }
    }

    /// The descriptor equivalent to a code-object-v2 `amd_kernel_code_t` header (256 bytes,
    /// the entry usually right after it), the layout older runtimes build kernel objects in.
    /// Its layout differs from the v3 descriptor except for the entry offset (16) and the
    /// resource registers (48, 52): reading such a header as a v3 descriptor would take the
    /// version fields for segment sizes. Errors name what the v3 model cannot express (the
    /// v2-only grid work-group-count SGPRs).
    pub fn from_amd_kernel_code_t(b: &[u8; 256]) -> Result<KernelDescriptor, String> {
        let u32_at = |off: usize| -> u32 {
            let mut w = [0; 4];
            if let Some(s) = b.get(off..off + 4) {
                w.copy_from_slice(s);
            }
            u32::from_le_bytes(w)
        };
        let major = u32_at(0);
        if major != 1 {
            return Err(format!("amd_kernel_code_t version {major}, expected 1"));
        }
        let props = u32_at(56);
        if props & (7 << 7) != 0 {
            return Err("grid work-group-count SGPRs (code object v2 only) are enabled".into());
        }
        Ok(KernelDescriptor {
            group_segment_fixed_size: u32_at(64),
            private_segment_fixed_size: u32_at(60),
            kernarg_size: u32_at(72),
            kernel_code_entry_byte_offset: (u64::from(u32_at(16)) | u64::from(u32_at(20)) << 32)
                as i64,
            compute_pgm_rsrc3: 0,
            compute_pgm_rsrc1: u32_at(48),
            compute_pgm_rsrc2: u32_at(52),
            kernel_code_properties: (props & 0x7F) as u16,
            kernarg_preload: 0,
        })
    }

    /// The descriptor's 64 bytes.
    pub fn to_bytes(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        let mut put = |off: usize, v: u32| {
            if let Some(d) = b.get_mut(off..off + 4) {
                d.copy_from_slice(&v.to_le_bytes());
            }
        };
        put(0, self.group_segment_fixed_size);
        put(4, self.private_segment_fixed_size);
        put(8, self.kernarg_size);
        put(16, self.kernel_code_entry_byte_offset as u64 as u32);
        put(20, (self.kernel_code_entry_byte_offset as u64 >> 32) as u32);
        put(44, self.compute_pgm_rsrc3);
        put(48, self.compute_pgm_rsrc1);
        put(52, self.compute_pgm_rsrc2);
        put(
            56,
            u32::from(self.kernel_code_properties) | u32::from(self.kernarg_preload) << 16,
        );
        b
    }

    /// Whether a user SGPR is enabled.
    pub fn user_sgpr_enabled(&self, u: UserSgpr) -> bool {
        self.kernel_code_properties & u.enable_bit() != 0
    }

    /// `COMPUTE_PGM_RSRC2.USER_SGPR_COUNT`: where the system SGPRs start.
    pub fn user_sgpr_count(&self) -> usize {
        ((self.compute_pgm_rsrc2 >> 1) & 0x1F) as usize
    }

    /// `ENABLE_PRIVATE_SEGMENT` (SCRATCH_EN): the kernel uses scratch.
    pub fn scratch_enabled(&self) -> bool {
        self.compute_pgm_rsrc2 & 1 != 0
    }

    /// Whether the trap handler is enabled (TRAP_PRESENT, bit 6).
    pub fn trap_present(&self) -> bool {
        self.compute_pgm_rsrc2 & (1 << 6) != 0
    }

    /// Work-group id X/Y/Z SGPR enables (bits 7-9).
    pub fn workgroup_id_enabled(&self) -> [bool; 3] {
        [7, 8, 9].map(|b| self.compute_pgm_rsrc2 & (1 << b) != 0)
    }

    /// Work-group info SGPR enable (bit 10).
    pub fn workgroup_info_enabled(&self) -> bool {
        self.compute_pgm_rsrc2 & (1 << 10) != 0
    }

    /// Work-item id VGPR enables (bits 11-12): 0 = x, 1 = x/y, 2 = x/y/z.
    pub fn workitem_id_dims(&self) -> u32 {
        (self.compute_pgm_rsrc2 >> 11) & 3
    }

    /// Whether the kernel runs in wave32 mode (gfx10+).
    pub fn wavefront_size32(&self) -> bool {
        self.kernel_code_properties & (1 << 10) != 0
    }

    /// Allocated vector registers (GFX9 wave64: granules of 8 on gfx90a/gfx942, covering the
    /// unified VGPR+AGPR file).
    pub fn vgpr_count(&self) -> usize {
        (((self.compute_pgm_rsrc1 & 0x3F) + 1) * 8) as usize
    }

    /// `accum_offset` (gfx90a+): the first AGPR's index in the unified register file.
    pub fn accum_offset(&self) -> usize {
        (((self.compute_pgm_rsrc3 & 0x3F) + 1) * 4) as usize
    }

    /// The entry point for a descriptor at `kernel_object`.
    pub fn entry(&self, kernel_object: u64) -> u64 {
        kernel_object.wrapping_add(self.kernel_code_entry_byte_offset as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_and_decode() {
        let d = KernelDescriptor {
            group_segment_fixed_size: 1024,
            private_segment_fixed_size: 816,
            kernarg_size: 20,
            kernel_code_entry_byte_offset: -0x1000,
            compute_pgm_rsrc3: 0xC,
            compute_pgm_rsrc1: 0xAF0046,
            compute_pgm_rsrc2: 0x95 | (2 << 11),
            kernel_code_properties: 0x2B,
            kernarg_preload: 0,
        };
        assert_eq!(KernelDescriptor::from_bytes(&d.to_bytes()), d);
        assert_eq!(d.user_sgpr_count(), 10);
        assert!(d.scratch_enabled());
        assert_eq!(d.workgroup_id_enabled(), [true, false, false]);
        assert_eq!(d.workitem_id_dims(), 2);
        assert_eq!(d.accum_offset(), 52);
        assert_eq!(d.vgpr_count(), 56);
        assert!(d.user_sgpr_enabled(UserSgpr::PrivateSegmentBuffer));
        assert!(d.user_sgpr_enabled(UserSgpr::FlatScratchInit));
        assert!(!d.user_sgpr_enabled(UserSgpr::QueuePtr));
        assert_eq!(d.entry(0x2000), 0x1000);
    }

    #[test]
    fn code_object_v2_headers() {
        let mut h = [0u8; 256];
        h[0] = 1; // version 1.1
        h[4] = 1;
        h[8] = 1; // AMD_MACHINE_KIND_AMDGPU
        h[16] = 0; // entry 256 bytes on
        h[17] = 1;
        h[48..52].copy_from_slice(&0x00AF_0040u32.to_le_bytes());
        h[52..56].copy_from_slice(&0x0000_0090u32.to_le_bytes());
        h[56..60].copy_from_slice(&(1u32 << 3 | 1 << 19).to_le_bytes());
        h[60..64].copy_from_slice(&32u32.to_le_bytes());
        h[64..68].copy_from_slice(&512u32.to_le_bytes());
        h[72..80].copy_from_slice(&48u64.to_le_bytes());
        let d = KernelDescriptor::from_amd_kernel_code_t(&h).unwrap();
        assert_eq!(d.kernel_code_entry_byte_offset, 256);
        assert_eq!(
            (d.compute_pgm_rsrc1, d.compute_pgm_rsrc2),
            (0xAF_0040, 0x90)
        );
        assert_eq!(d.kernel_code_properties, 1 << 3);
        assert_eq!(
            (
                d.private_segment_fixed_size,
                d.group_segment_fixed_size,
                d.kernarg_size
            ),
            (32, 512, 48)
        );
        // Read as a v3 descriptor, the version fields would become segment sizes.
        let mut first = [0u8; 64];
        first.copy_from_slice(&h[..64]);
        assert_eq!(
            KernelDescriptor::from_bytes(&first).private_segment_fixed_size,
            1
        );
        h[56] |= 1 << 7;
        assert!(KernelDescriptor::from_amd_kernel_code_t(&h).is_err());
        h[0] = 2;
        assert!(KernelDescriptor::from_amd_kernel_code_t(&h).is_err());
    }
}
