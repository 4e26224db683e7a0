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
}

/// An instruction-set generation: the encodings and opcode numbering it uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Generation {
    /// GFX9 ("Vega" encodings): gfx900 .. gfx90a, gfx940 .. gfx942.
    Gfx9,
}

/// `EF_AMDGPU_MACH_AMDGCN_GFX90A` in an ELF header's `e_flags` (low byte).
pub const EF_AMDGPU_MACH_GFX90A: u32 = 0x3F;
/// `EF_AMDGPU_MACH_AMDGCN_GFX940`.
pub const EF_AMDGPU_MACH_GFX940: u32 = 0x40;
/// `EF_AMDGPU_MACH_AMDGCN_GFX941`.
pub const EF_AMDGPU_MACH_GFX941: u32 = 0x4B;
/// `EF_AMDGPU_MACH_AMDGCN_GFX942`.
pub const EF_AMDGPU_MACH_GFX942: u32 = 0x4C;

impl Target {
    /// Every target, in the order they were added.
    pub const ALL: [Target; 2] = [Target::Gfx90a, Target::Gfx942];

    /// The target named by an LLVM processor name (`gfx90a`, `gfx940`, `gfx941`, `gfx942`),
    /// ignoring feature suffixes such as `:sramecc+:xnack-`.
    pub fn from_name(name: &str) -> Option<Target> {
        let base = name.split(':').next().unwrap_or(name);
        let base = base.rsplit("--").next().unwrap_or(base);
        match base {
            "gfx90a" => Some(Target::Gfx90a),
            "gfx940" | "gfx941" | "gfx942" => Some(Target::Gfx942),
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
            _ => None,
        }
    }

    /// The LLVM processor name.
    pub fn name(self) -> &'static str {
        match self {
            Target::Gfx90a => "gfx90a",
            Target::Gfx942 => "gfx942",
        }
    }

    /// The instruction-set generation.
    pub fn generation(self) -> Generation {
        match self {
            Target::Gfx90a | Target::Gfx942 => Generation::Gfx9,
        }
    }

    /// Lanes per wave (GFX9 runs only wave64).
    pub fn wave_size(self) -> u32 {
        64
    }

    /// Whether the work-item ids arrive packed in v0 (x in bits 0-9, y 10-19, z 20-29) rather
    /// than in v0, v1, v2.
    pub fn packed_work_item_ids(self) -> bool {
        matches!(self, Target::Gfx90a | Target::Gfx942)
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
        assert_eq!(Target::from_name("gfx1100"), None);
        assert_eq!(Target::from_elf_flags(0x53F), Some(Target::Gfx90a));
        assert_eq!(Target::from_elf_flags(0x54C), Some(Target::Gfx942));
        assert_eq!(Target::from_elf_flags(0x41), None);
        for t in Target::ALL {
            assert_eq!(Target::from_name(t.name()), Some(t));
            assert_eq!(t.wave_size(), 64);
        }
    }
}
