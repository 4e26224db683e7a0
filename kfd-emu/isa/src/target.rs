//! Which GPU the code is for: the target decides the opcode tables, the register model and the
//! start-up state of a wave. Everything generation-specific asks a [`Target`] rather than
//! assuming GFX9, so a later generation (gfx11, wave32) adds variants and tables here.

/// An AMDGPU processor the interpreter knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// MI200 (CDNA2): GFX9.0.a, wave64, unified VGPR/AGPR file.
    Gfx90a,
    /// MI300 (CDNA3): GFX9.4.2 (also accepts gfx940/gfx941 code objects, same ISA), wave64,
    /// architected flat scratch.
    Gfx942,
    /// RX 7900 (RDNA3): GFX11.0.0 (also accepts gfx1101/gfx1102 code objects, same ISA), wave32
    /// or wave64 per kernel, FLAT_SCRATCH a hardware register the SPI sets per wave.
    Gfx1100,
}

/// An instruction-set generation: the encodings and opcode numbering it uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Generation {
    /// GFX9 ("Vega" encodings): gfx900 .. gfx90a, gfx940 .. gfx942.
    Gfx9,
    /// GFX11 (RDNA3 encodings: VOPD, VOP3 with op_sel, DPP8, the renamed memory operations).
    Gfx11,
}

/// `EF_AMDGPU_MACH_AMDGCN_GFX90A` in an ELF header's `e_flags` (low byte).
pub const EF_AMDGPU_MACH_GFX90A: u32 = 0x3F;
/// `EF_AMDGPU_MACH_AMDGCN_GFX940`.
pub const EF_AMDGPU_MACH_GFX940: u32 = 0x40;
/// `EF_AMDGPU_MACH_AMDGCN_GFX941`.
pub const EF_AMDGPU_MACH_GFX941: u32 = 0x4B;
/// `EF_AMDGPU_MACH_AMDGCN_GFX942`.
pub const EF_AMDGPU_MACH_GFX942: u32 = 0x4C;
/// `EF_AMDGPU_MACH_AMDGCN_GFX1100`.
pub const EF_AMDGPU_MACH_GFX1100: u32 = 0x41;
/// `EF_AMDGPU_MACH_AMDGCN_GFX1101`.
pub const EF_AMDGPU_MACH_GFX1101: u32 = 0x46;
/// `EF_AMDGPU_MACH_AMDGCN_GFX1102`.
pub const EF_AMDGPU_MACH_GFX1102: u32 = 0x47;

impl Target {
    /// Every target, in the order they were added.
    pub const ALL: [Target; 3] = [Target::Gfx90a, Target::Gfx942, Target::Gfx1100];

    /// The GFX9 targets (one encoding; tests of hand-encoded GFX9 code run on these).
    pub const GFX9: [Target; 2] = [Target::Gfx90a, Target::Gfx942];

    /// The target named by an LLVM processor name (`gfx90a`, `gfx940`, `gfx941`, `gfx942`),
    /// ignoring feature suffixes such as `:sramecc+:xnack-`.
    pub fn from_name(name: &str) -> Option<Target> {
        let base = name.split(':').next().unwrap_or(name);
        let base = base.rsplit("--").next().unwrap_or(base);
        match base {
            "gfx90a" => Some(Target::Gfx90a),
            "gfx940" | "gfx941" | "gfx942" => Some(Target::Gfx942),
            "gfx1100" | "gfx1101" | "gfx1102" => Some(Target::Gfx1100),
            _ => None,
        }
    }

    /// The target of an AMDGPU ELF from its `e_flags` (`EF_AMDGPU_MACH` in the low byte).
    pub fn from_elf_flags(e_flags: u32) -> Option<Target> {
        match e_flags & 0xFF {
            EF_AMDGPU_MACH_GFX90A => Some(Target::Gfx90a),
            EF_AMDGPU_MACH_GFX940 | EF_AMDGPU_MACH_GFX941 | EF_AMDGPU_MACH_GFX942 => {
                Some(Target::Gfx942)
            }
            EF_AMDGPU_MACH_GFX1100 | EF_AMDGPU_MACH_GFX1101 | EF_AMDGPU_MACH_GFX1102 => {
                Some(Target::Gfx1100)
            }
            _ => None,
        }
    }

    /// The LLVM processor name.
    pub fn name(self) -> &'static str {
        match self {
            Target::Gfx90a => "gfx90a",
            Target::Gfx942 => "gfx942",
            Target::Gfx1100 => "gfx1100",
        }
    }

    /// The instruction-set generation.
    pub fn generation(self) -> Generation {
        match self {
            Target::Gfx90a | Target::Gfx942 => Generation::Gfx9,
            Target::Gfx1100 => Generation::Gfx11,
        }
    }

    /// Lanes of a wave when the kernel descriptor does not ask for wave32 (GFX9 runs only
    /// wave64; GFX11 runs wave32 kernels too, see [`Target::supports_wave32`]).
    pub fn wave_size(self) -> u32 {
        64
    }

    /// Whether kernels may run as wave32 (the descriptor's `ENABLE_WAVEFRONT_SIZE32`).
    pub fn supports_wave32(self) -> bool {
        self.generation() == Generation::Gfx11
    }

    /// Whether FLAT_SCRATCH is a hardware register the SPI initialises to each wave's
    /// scratch (GFX11: the SGPR field's 102-105 are then ordinary SGPRs), rather than an SGPR
    /// pair at 102-103.
    pub fn hardware_flat_scratch(self) -> bool {
        self.generation() == Generation::Gfx11
    }

    /// Whether the work-item ids arrive packed in v0 (x in bits 0-9, y 10-19, z 20-29) rather
    /// than in v0, v1, v2.
    pub fn packed_work_item_ids(self) -> bool {
        matches!(self, Target::Gfx90a | Target::Gfx942 | Target::Gfx1100)
    }

    /// Whether the hardware sets FLAT_SCRATCH to the wave's scratch base itself (gfx940+), so
    /// kernels have no private-segment-buffer or flat-scratch-init user SGPRs.
    pub fn architected_flat_scratch(self) -> bool {
        matches!(self, Target::Gfx942)
    }

    /// Whether VGPRs and AGPRs share one file split at the descriptor's `accum_offset`.
    pub fn unified_vgpr_file(self) -> bool {
        matches!(self, Target::Gfx90a | Target::Gfx942)
    }

    /// Whether the cache-policy bits are printed as gfx940's `sc0`/`sc1`/`nt` rather than
    /// `glc`/`slc`.
    pub fn gfx940_cache_bits(self) -> bool {
        matches!(self, Target::Gfx942)
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_elf_machines() {
        assert_eq!(Target::from_name("gfx90a"), Some(Target::Gfx90a));
        assert_eq!(
            Target::from_name("gfx90a:sramecc+:xnack-"),
            Some(Target::Gfx90a)
        );
        assert_eq!(
            Target::from_name("amdgcn-amd-amdhsa--gfx942"),
            Some(Target::Gfx942)
        );
        assert_eq!(Target::from_name("gfx940"), Some(Target::Gfx942));
        assert_eq!(Target::from_name("gfx1100"), Some(Target::Gfx1100));
        assert_eq!(Target::from_name("gfx1030"), None);
        assert_eq!(Target::from_elf_flags(0x541), Some(Target::Gfx1100));
        assert_eq!(Target::from_elf_flags(0x53F), Some(Target::Gfx90a));
        assert_eq!(Target::from_elf_flags(0x54C), Some(Target::Gfx942));
        assert_eq!(Target::from_elf_flags(0x36), None);
        for t in Target::ALL {
            assert_eq!(Target::from_name(t.name()), Some(t));
            assert_eq!(t.wave_size(), 64);
        }
        assert!(Target::Gfx1100.supports_wave32() && !Target::Gfx90a.supports_wave32());
    }
}
