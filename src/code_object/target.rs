//! Target IDs (`gfx90a:sramecc+:xnack-`): what a code object was built for, what a GPU is, and
//! whether the one runs on the other.
//!
//! A code object names its processor in `e_flags` (`EF_AMDGPU_MACH`) and, from code object v4 on,
//! in the metadata's `amdhsa.target` string; each target feature (SRAMECC, XNACK) is either
//! required on, required off, or "any". A GPU has each feature on, off, or not at all.

use crate::device::Gpu;
use crate::error::CodeObjectError;
use kfd_sys::DriverExt;
use std::fmt;

/// How a code object (or a GPU) stands on one target feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FeatureSetting {
    /// The processor does not have the feature.
    Unsupported,
    /// Code runs with the feature on or off (a code object's default from v4 on).
    Any,
    /// Code requires (a GPU runs with) the feature on: `feature+`.
    On,
    /// Code requires (a GPU runs with) the feature off: `feature-`.
    Off,
}

impl FeatureSetting {
    /// Whether code built with `self` runs on a GPU whose setting is `gpu`.
    fn runs_on(self, gpu: FeatureSetting) -> bool {
        match self {
            // Built without a choice (v3 objects of processors without the feature too).
            FeatureSetting::Any | FeatureSetting::Unsupported => true,
            FeatureSetting::On | FeatureSetting::Off => self == gpu,
        }
    }

    fn suffix(self) -> Option<char> {
        match self {
            FeatureSetting::On => Some('+'),
            FeatureSetting::Off => Some('-'),
            FeatureSetting::Any | FeatureSetting::Unsupported => None,
        }
    }
}

/// A target ID: processor plus the settings of its target features.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TargetId {
    /// The processor, e.g. `"gfx90a"`.
    pub processor: String,
    /// SRAM ECC.
    pub sramecc: FeatureSetting,
    /// XNACK replay (page-fault retry).
    pub xnack: FeatureSetting,
}

/// `gfx90a`, `gfx90a:xnack+`, `gfx90a:sramecc-:xnack+`: features in LLVM's order, "any" omitted.
impl fmt::Display for TargetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.processor)?;
        for (name, setting) in [("sramecc", self.sramecc), ("xnack", self.xnack)] {
            if let Some(sign) = setting.suffix() {
                write!(f, ":{name}{sign}")?;
            }
        }
        Ok(())
    }
}

impl TargetId {
    /// Parses a target ID (`gfx90a:sramecc+:xnack-`), optionally preceded by the triple as in
    /// the metadata's `amdhsa.target` (`amdgcn-amd-amdhsa--gfx90a:xnack+`).
    pub fn parse(text: &str) -> Result<TargetId, CodeObjectError> {
        let bad = |why: &str| CodeObjectError::Metadata(format!("target ID {text:?}: {why}"));
        let id = match text.strip_prefix("amdgcn-amd-amdhsa-") {
            // The environment component (empty in practice) ends at the next '-'.
            Some(rest) => rest
                .split_once('-')
                .map(|(_, id)| id)
                .ok_or_else(|| bad("no processor"))?,
            None => text,
        };
        let mut parts = id.split(':');
        let processor = parts.next().unwrap_or_default();
        if !processor.starts_with("gfx") || processor.len() < 4 {
            return Err(bad("the processor is not gfxN"));
        }
        let known = Processor::by_name(processor);
        let default = |supported: bool| {
            if supported || known.is_none() {
                FeatureSetting::Any
            } else {
                FeatureSetting::Unsupported
            }
        };
        let mut target = TargetId {
            processor: processor.to_owned(),
            sramecc: default(known.is_some_and(|p| p.sramecc)),
            xnack: default(known.is_some_and(|p| p.xnack)),
        };
        for feature in parts {
            let (name, setting) = if let Some(n) = feature.strip_suffix('+') {
                (n, FeatureSetting::On)
            } else if let Some(n) = feature.strip_suffix('-') {
                (n, FeatureSetting::Off)
            } else {
                return Err(bad("a feature lacks its + or - sign"));
            };
            match name {
                "sramecc" => target.sramecc = setting,
                "xnack" => target.xnack = setting,
                _ => return Err(bad("unknown target feature")),
            }
        }
        Ok(target)
    }

    /// Whether code built for `self` runs on a GPU that is `gpu`.
    pub fn runs_on(&self, gpu: &TargetId) -> bool {
        self.processor == gpu.processor
            && self.sramecc.runs_on(gpu.sramecc)
            && self.xnack.runs_on(gpu.xnack)
    }

    /// Features explicitly required on or off: the more, the more specific the code object.
    pub(crate) fn specificity(&self) -> usize {
        [self.sramecc, self.xnack]
            .iter()
            .filter(|s| s.suffix().is_some())
            .count()
    }
}

/// What kfdrt knows of a processor: its `EF_AMDGPU_MACH` value and which features it has.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Processor {
    pub(crate) name: &'static str,
    pub(crate) mach: u32,
    pub(crate) xnack: bool,
    pub(crate) sramecc: bool,
}

const fn p(name: &'static str, mach: u32, xnack: bool, sramecc: bool) -> Processor {
    Processor {
        name,
        mach,
        xnack,
        sramecc,
    }
}

/// Processors ROCm has supported since code object v3 (values from LLVM's AMDGPUUsage).
const PROCESSORS: [Processor; 37] = [
    p("gfx801", 0x28, true, false),
    p("gfx802", 0x29, false, false),
    p("gfx803", 0x2A, false, false),
    p("gfx805", 0x3C, false, false),
    p("gfx810", 0x2B, true, false),
    p("gfx900", 0x2C, true, false),
    p("gfx902", 0x2D, true, false),
    p("gfx904", 0x2E, true, false),
    p("gfx906", 0x2F, true, true),
    p("gfx908", 0x30, true, true),
    p("gfx909", 0x31, true, false),
    p("gfx90a", 0x3F, true, true),
    p("gfx90c", 0x32, true, false),
    p("gfx940", 0x40, true, true),
    p("gfx941", 0x4B, true, true),
    p("gfx942", 0x4C, true, true),
    p("gfx950", 0x4F, true, true),
    p("gfx1010", 0x33, true, false),
    p("gfx1011", 0x34, true, false),
    p("gfx1012", 0x35, true, false),
    p("gfx1013", 0x42, true, false),
    p("gfx1030", 0x36, false, false),
    p("gfx1031", 0x37, false, false),
    p("gfx1032", 0x38, false, false),
    p("gfx1033", 0x39, false, false),
    p("gfx1034", 0x3E, false, false),
    p("gfx1035", 0x3D, false, false),
    p("gfx1036", 0x45, false, false),
    p("gfx1100", 0x41, false, false),
    p("gfx1101", 0x46, false, false),
    p("gfx1102", 0x47, false, false),
    p("gfx1103", 0x44, false, false),
    p("gfx1150", 0x43, false, false),
    p("gfx1151", 0x4A, false, false),
    p("gfx1152", 0x55, false, false),
    p("gfx1200", 0x48, false, false),
    p("gfx1201", 0x4E, false, false),
];

impl Processor {
    pub(crate) fn by_name(name: &str) -> Option<Processor> {
        PROCESSORS.iter().copied().find(|p| p.name == name)
    }

    pub(crate) fn by_mach(mach: u32) -> Option<Processor> {
        PROCESSORS.iter().copied().find(|p| p.mach == mach)
    }
}

/// `e_flags` bits of the target features, code object v3 (one bit each: on or off).
const EF_XNACK_V3: u32 = 0x100;
const EF_SRAMECC_V3: u32 = 0x200;
/// Code object v4 and later: two-bit fields (0 unsupported, 1 any, 2 off, 3 on).
const EF_XNACK_V4_SHIFT: u32 = 8;
const EF_SRAMECC_V4_SHIFT: u32 = 10;

/// The target an ELF header declares: `EF_AMDGPU_MACH` and the feature bits, read with the
/// layout of code-object version `version` (3, 4, 5).
pub(crate) fn from_e_flags(e_flags: u32, version: u32) -> Result<TargetId, CodeObjectError> {
    let mach = e_flags & 0xFF;
    let processor = Processor::by_mach(mach).ok_or(CodeObjectError::UnknownProcessor { mach })?;
    let (sramecc, xnack) = if version == 3 {
        let bit = |mask: u32, supported: bool| match (e_flags & mask != 0, supported) {
            (true, _) => FeatureSetting::On,
            (false, true) => FeatureSetting::Off,
            (false, false) => FeatureSetting::Unsupported,
        };
        (
            bit(EF_SRAMECC_V3, processor.sramecc),
            bit(EF_XNACK_V3, processor.xnack),
        )
    } else {
        let field = |shift: u32| match (e_flags >> shift) & 3 {
            0 => FeatureSetting::Unsupported,
            1 => FeatureSetting::Any,
            2 => FeatureSetting::Off,
            _ => FeatureSetting::On,
        };
        (field(EF_SRAMECC_V4_SHIFT), field(EF_XNACK_V4_SHIFT))
    };
    Ok(TargetId {
        processor: processor.name.to_owned(),
        sramecc,
        xnack,
    })
}

/// `HSA_CAP_SRAM_EDCSUPPORTED` of a topology node's `capability`: the GPU runs with SRAM ECC on.
const HSA_CAP_SRAM_EDCSUPPORTED: u64 = 0x0008_0000;

impl Gpu {
    /// The GPU's target ID as a loader matches code objects against it: the processor, SRAM
    /// ECC from the topology's capability bits and XNACK from KFD's process setting (as ROCr
    /// determines them). Features the processor lacks are [`FeatureSetting::Unsupported`].
    pub fn target_id(&self) -> TargetId {
        let info = self.info();
        let known = Processor::by_name(&info.gfx_target);
        let sramecc = match known {
            Some(p) if p.sramecc => {
                if info.properties.get_or_zero("capability") & HSA_CAP_SRAM_EDCSUPPORTED != 0 {
                    FeatureSetting::On
                } else {
                    FeatureSetting::Off
                }
            }
            _ => FeatureSetting::Unsupported,
        };
        let xnack = match known {
            Some(p) if p.xnack => {
                // -1 asks for the current mode without changing it.
                let mut query =
                    kfd_sys::bindings::kfd_ioctl_set_xnack_mode_args { xnack_enabled: -1 };
                match self.kfd().driver().kfd_ioctl(&mut query) {
                    Ok(_) if query.xnack_enabled > 0 => FeatureSetting::On,
                    // A driver without the query runs with XNACK off.
                    _ => FeatureSetting::Off,
                }
            }
            _ => FeatureSetting::Unsupported,
        };
        TargetId {
            processor: info.gfx_target.clone(),
            sramecc,
            xnack,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print() {
        let t = TargetId::parse("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-").unwrap();
        assert_eq!(t.processor, "gfx90a");
        assert_eq!(t.sramecc, FeatureSetting::On);
        assert_eq!(t.xnack, FeatureSetting::Off);
        assert_eq!(t.to_string(), "gfx90a:sramecc+:xnack-");
        let any = TargetId::parse("gfx90a").unwrap();
        assert_eq!(
            (any.sramecc, any.xnack),
            (FeatureSetting::Any, FeatureSetting::Any)
        );
        let rdna = TargetId::parse("gfx1100").unwrap();
        assert_eq!(rdna.xnack, FeatureSetting::Unsupported);
        assert!(TargetId::parse("gfx90a:xnack").is_err());
        assert!(TargetId::parse("gfx90a:wavefrontsize64+").is_err());
        assert!(TargetId::parse("sm_80").is_err());
    }

    #[test]
    fn compatibility() {
        let gpu = TargetId::parse("gfx90a:sramecc+:xnack-").unwrap();
        assert!(TargetId::parse("gfx90a").unwrap().runs_on(&gpu));
        assert!(TargetId::parse("gfx90a:xnack-").unwrap().runs_on(&gpu));
        assert!(!TargetId::parse("gfx90a:xnack+").unwrap().runs_on(&gpu));
        assert!(!TargetId::parse("gfx90a:sramecc-").unwrap().runs_on(&gpu));
        assert!(!TargetId::parse("gfx942").unwrap().runs_on(&gpu));
    }

    #[test]
    fn e_flags_v3_and_v4() {
        // v4: mach gfx90a, xnack any (1 << 8), sramecc any (1 << 10).
        let t = from_e_flags(0x53F, 4).unwrap();
        assert_eq!(t.to_string(), "gfx90a");
        // v4: xnack on (3 << 8), sramecc any.
        assert_eq!(from_e_flags(0x73F, 4).unwrap().to_string(), "gfx90a:xnack+");
        // v3: sramecc bit only.
        assert_eq!(
            from_e_flags(0x23F, 3).unwrap().to_string(),
            "gfx90a:sramecc+:xnack-"
        );
        assert_eq!(from_e_flags(0x41, 5).unwrap().to_string(), "gfx1100");
        assert!(matches!(
            from_e_flags(0xEE, 4),
            Err(CodeObjectError::UnknownProcessor { mach: 0xEE })
        ));
    }
}
