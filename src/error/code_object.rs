//! [`CodeObjectError`]: why a code object was refused. Each message names what it found and,
//! for mismatches, what was expected, so that a log line is enough to act on.

/// Why a code object cannot be read or loaded. Wrapped in [`crate::Error::CodeObject`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodeObjectError {
    /// The bytes are not an ELF file kfdrt can read (truncated, wrong class or byte order, a
    /// header or table pointing outside the file).
    #[error("malformed ELF: {0}")]
    Malformed(String),
    /// The ELF is not an AMDGPU HSA code object.
    #[error("not an AMDGPU HSA code object: {0}")]
    NotAmdgpu(String),
    /// A code-object version kfdrt does not load.
    #[error("code object v{version} is not supported (kfdrt loads v3, v4 and v5){hint}")]
    UnsupportedVersion {
        /// The version (from `e_ident[EI_ABIVERSION]`).
        version: u32,
        /// Extra advice, may be empty.
        hint: &'static str,
    },
    /// `EF_AMDGPU_MACH` names a processor kfdrt does not know.
    #[error("unknown processor (EF_AMDGPU_MACH {mach:#x})")]
    UnknownProcessor {
        /// The `e_flags` machine field.
        mach: u32,
    },
    /// The ELF header and the metadata disagree about the code object.
    #[error("the ELF header says {elf}, the metadata says {metadata}")]
    Inconsistent {
        /// What the ELF header says.
        elf: String,
        /// What the metadata says.
        metadata: String,
    },
    /// Built for another GPU, or with target features this GPU does not run with.
    #[error("code object is for {code_object}, this GPU is {gpu}")]
    TargetMismatch {
        /// The code object's target ID.
        code_object: String,
        /// The GPU's target ID.
        gpu: String,
    },
    /// An offload bundle with no code object for this GPU.
    #[error("no code object in the offload bundle runs on this GPU ({gpu}); the bundle holds: {}", entries.join(", "))]
    NoBundleEntry {
        /// The GPU's target ID.
        gpu: String,
        /// The bundle's entry IDs.
        entries: Vec<String>,
    },
    /// An offload bundle kfdrt cannot read.
    #[error("offload bundle: {0}")]
    Bundle(String),
    /// The `NT_AMDGPU_METADATA` note is malformed or incomplete.
    #[error("metadata: {0}")]
    Metadata(String),
    /// Loadable segments overlap.
    #[error(
        "segments overlap: [{:#x}, {:#x}) and [{:#x}, {:#x})",
        first.0, first.1, second.0, second.1
    )]
    OverlappingSegments {
        /// Virtual address range of one segment.
        first: (u64, u64),
        /// Virtual address range of the other.
        second: (u64, u64),
    },
    /// The loaded image would be larger than the loader's limit.
    #[error("image spans {span} bytes, more than the limit of {limit} bytes")]
    ImageTooLarge {
        /// Bytes from the lowest to the highest loaded address.
        span: u64,
        /// The limit ([`crate::code_object::LoadOptions::max_image_bytes`]).
        limit: u64,
    },
    /// A dynamic relocation of a type kfdrt does not apply.
    #[error("unsupported dynamic relocation {} ({r_type}) at {offset:#x}", reloc_type_name(*r_type))]
    UnsupportedRelocation {
        /// `ELF64_R_TYPE`.
        r_type: u32,
        /// Where it applies (virtual address).
        offset: u64,
    },
    /// A relocation whose target or value does not fit the image.
    #[error("relocation {} at {offset:#x}: {why}", reloc_type_name(*r_type))]
    BadRelocation {
        /// `ELF64_R_TYPE`.
        r_type: u32,
        /// Where it applies (virtual address).
        offset: u64,
        /// What is wrong.
        why: String,
    },
    /// A relocation refers to a symbol nothing defines.
    #[error("undefined symbol {name:?} (relocation at {offset:#x})")]
    UndefinedSymbol {
        /// The symbol's name.
        name: String,
        /// Where the relocation applies.
        offset: u64,
    },
    /// A kernel descriptor that is misaligned, outside the image, or whose code is.
    #[error("kernel {kernel:?}: {why}")]
    BadDescriptor {
        /// The kernel.
        kernel: String,
        /// What is wrong.
        why: String,
    },
    /// The code object defines no kernel.
    #[error("no kernel descriptors (.kd symbols)")]
    NoKernels,
    /// A lookup of a kernel that is not in the code object.
    #[error("no kernel {name:?} (the code object has: {})", available.join(", "))]
    NoSuchKernel {
        /// The name looked up.
        name: String,
        /// The kernels there are.
        available: Vec<String>,
    },
    /// A C++ kernel name that matches several overloads: give the parameter types, or the
    /// symbol.
    #[error("kernel name {name:?} is ambiguous: it matches {matches:?}")]
    AmbiguousKernel {
        /// The name looked up.
        name: String,
        /// The demangled names it matches.
        matches: Vec<String>,
    },
    /// A lookup of a symbol the code object does not define.
    #[error("no symbol {0:?} in .dynsym")]
    NoSuchSymbol(String),
}

/// The name of relocation type `r_type`.
fn reloc_type_name(r_type: u32) -> &'static str {
    const NAMES: [&str; 15] = [
        "R_AMDGPU_NONE",
        "R_AMDGPU_ABS32_LO",
        "R_AMDGPU_ABS32_HI",
        "R_AMDGPU_ABS64",
        "R_AMDGPU_REL32",
        "R_AMDGPU_REL64",
        "R_AMDGPU_ABS32",
        "R_AMDGPU_GOTPCREL",
        "R_AMDGPU_GOTPCREL32_LO",
        "R_AMDGPU_GOTPCREL32_HI",
        "R_AMDGPU_REL32_LO",
        "R_AMDGPU_REL32_HI",
        "relocation type 12",
        "R_AMDGPU_RELATIVE64",
        "R_AMDGPU_REL16",
    ];
    NAMES
        .get(r_type as usize)
        .copied()
        .unwrap_or("an unknown relocation type")
}
