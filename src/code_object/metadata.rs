//! Code-object metadata: what the compiler records about each kernel in the `NT_AMDGPU_METADATA`
//! note (msgpack, code object v3 and later) — its arguments' layout and kinds, segment sizes,
//! register counts — as typed values. Parsing lives in `note.rs`.

use super::target::TargetId;
use std::fmt;

/// A code-object version (`e_ident[EI_ABIVERSION]` + 2 for the HSA ABI).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CodeObjectVersion {
    /// Code object v3 (metadata 1.0).
    V3,
    /// Code object v4 (metadata 1.1): target IDs with "any" features.
    V4,
    /// Code object v5 (metadata 1.2): the 256-byte implicit-argument block.
    V5,
}

impl CodeObjectVersion {
    /// The version number: 3, 4 or 5.
    pub fn number(self) -> u32 {
        match self {
            CodeObjectVersion::V3 => 3,
            CodeObjectVersion::V4 => 4,
            CodeObjectVersion::V5 => 5,
        }
    }

    pub(crate) fn from_number(n: u32) -> Option<CodeObjectVersion> {
        match n {
            3 => Some(CodeObjectVersion::V3),
            4 => Some(CodeObjectVersion::V4),
            5 => Some(CodeObjectVersion::V5),
            _ => None,
        }
    }
}

impl fmt::Display for CodeObjectVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.number())
    }
}

/// An axis of the launch grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// X.
    X,
    /// Y.
    Y,
    /// Z.
    Z,
}

impl Dim {
    /// 0, 1 or 2.
    pub fn index(self) -> usize {
        match self {
            Dim::X => 0,
            Dim::Y => 1,
            Dim::Z => 2,
        }
    }

    fn suffix(self) -> &'static str {
        ["x", "y", "z"][self.index()]
    }
}

/// What an argument is (`.value_kind`). Hidden kinds are filled by the runtime at dispatch;
/// the others are the kernel's own parameters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ArgKind {
    /// A value copied into the kernarg segment.
    ByValue,
    /// A pointer to global memory.
    GlobalBuffer,
    /// An LDS pointer (OpenCL `local` parameter): its value is an offset into the work-group's
    /// dynamically allocated LDS.
    DynamicSharedPointer,
    /// An image sampler handle.
    Sampler,
    /// An image handle.
    Image,
    /// A pipe.
    Pipe,
    /// A device-enqueue queue.
    Queue,
    /// Global offset of the grid along an axis (0 in HIP and in kfdrt's launches).
    HiddenGlobalOffset(Dim),
    /// Padding the runtime leaves zero.
    HiddenNone,
    /// The printf buffer (OpenCL).
    HiddenPrintfBuffer,
    /// The hostcall buffer (HIP printf, device malloc).
    HiddenHostcallBuffer,
    /// The queue for device-side enqueue.
    HiddenDefaultQueue,
    /// Completion action of device-side enqueue.
    HiddenCompletionAction,
    /// Multi-grid synchronisation (cooperative launches); 0 for ordinary ones.
    HiddenMultigridSyncArg,
    /// The device heap (code object v5).
    HiddenHeapV1,
    /// Work-groups along an axis that are full (grid / work-group size, rounded down; v5).
    HiddenBlockCount(Dim),
    /// Work-group size along an axis (v5).
    HiddenGroupSize(Dim),
    /// Work-items in the last, partial work-group along an axis, 0 when there is none (v5).
    HiddenRemainder(Dim),
    /// Number of grid dimensions, 1 to 3 (v5).
    HiddenGridDims,
    /// Dynamic LDS bytes per work-group (v5).
    HiddenDynamicLdsSize,
    /// High 32 bits of the private (scratch) aperture base (v5).
    HiddenPrivateBase,
    /// High 32 bits of the shared (LDS) aperture base (v5).
    HiddenSharedBase,
    /// Address of the dispatching AQL queue's `amd_queue_t` (v5).
    HiddenQueuePtr,
    /// A kind kfdrt does not know, kept as written.
    Unknown(String),
}

const NAMED_KINDS: [(&str, ArgKind); 19] = [
    ("by_value", ArgKind::ByValue),
    ("global_buffer", ArgKind::GlobalBuffer),
    ("dynamic_shared_pointer", ArgKind::DynamicSharedPointer),
    ("sampler", ArgKind::Sampler),
    ("image", ArgKind::Image),
    ("pipe", ArgKind::Pipe),
    ("queue", ArgKind::Queue),
    ("hidden_none", ArgKind::HiddenNone),
    ("hidden_printf_buffer", ArgKind::HiddenPrintfBuffer),
    ("hidden_hostcall_buffer", ArgKind::HiddenHostcallBuffer),
    ("hidden_default_queue", ArgKind::HiddenDefaultQueue),
    ("hidden_completion_action", ArgKind::HiddenCompletionAction),
    ("hidden_multigrid_sync_arg", ArgKind::HiddenMultigridSyncArg),
    ("hidden_heap_v1", ArgKind::HiddenHeapV1),
    ("hidden_grid_dims", ArgKind::HiddenGridDims),
    ("hidden_dynamic_lds_size", ArgKind::HiddenDynamicLdsSize),
    ("hidden_private_base", ArgKind::HiddenPrivateBase),
    ("hidden_shared_base", ArgKind::HiddenSharedBase),
    ("hidden_queue_ptr", ArgKind::HiddenQueuePtr),
];

/// Builds the per-axis kind of a `.value_kind` prefix.
type AxisKind = fn(Dim) -> ArgKind;

const PER_AXIS: [(&str, AxisKind); 4] = [
    ("hidden_global_offset_", ArgKind::HiddenGlobalOffset),
    ("hidden_block_count_", ArgKind::HiddenBlockCount),
    ("hidden_group_size_", ArgKind::HiddenGroupSize),
    ("hidden_remainder_", ArgKind::HiddenRemainder),
];

impl ArgKind {
    /// The kind a `.value_kind` string names; unknown strings become [`ArgKind::Unknown`].
    pub fn from_name(name: &str) -> ArgKind {
        if let Some((_, kind)) = NAMED_KINDS.iter().find(|(n, _)| *n == name) {
            return kind.clone();
        }
        for (prefix, make) in PER_AXIS {
            let dim = match name.strip_prefix(prefix) {
                Some("x") => Dim::X,
                Some("y") => Dim::Y,
                Some("z") => Dim::Z,
                _ => continue,
            };
            return make(dim);
        }
        ArgKind::Unknown(name.to_owned())
    }

    /// The `.value_kind` string.
    pub fn name(&self) -> String {
        let axis = |prefix: &str, d: &Dim| format!("{prefix}{}", d.suffix());
        match self {
            ArgKind::HiddenGlobalOffset(d) => axis("hidden_global_offset_", d),
            ArgKind::HiddenBlockCount(d) => axis("hidden_block_count_", d),
            ArgKind::HiddenGroupSize(d) => axis("hidden_group_size_", d),
            ArgKind::HiddenRemainder(d) => axis("hidden_remainder_", d),
            ArgKind::Unknown(s) => s.clone(),
            other => NAMED_KINDS
                .iter()
                .find(|(_, k)| k == other)
                .map_or_else(String::new, |(n, _)| (*n).to_owned()),
        }
    }

    /// Whether the runtime, not the caller, supplies this argument.
    pub fn is_hidden(&self) -> bool {
        match self {
            ArgKind::Unknown(s) => s.starts_with("hidden_"),
            ArgKind::ByValue
            | ArgKind::GlobalBuffer
            | ArgKind::DynamicSharedPointer
            | ArgKind::Sampler
            | ArgKind::Image
            | ArgKind::Pipe
            | ArgKind::Queue => false,
            _ => true,
        }
    }

    /// The size the ABI gives a hidden argument of this kind (`None`: any size).
    pub(crate) fn required_size(&self) -> Option<u32> {
        Some(match self {
            ArgKind::GlobalBuffer
            | ArgKind::HiddenGlobalOffset(_)
            | ArgKind::HiddenPrintfBuffer
            | ArgKind::HiddenHostcallBuffer
            | ArgKind::HiddenDefaultQueue
            | ArgKind::HiddenCompletionAction
            | ArgKind::HiddenMultigridSyncArg
            | ArgKind::HiddenHeapV1
            | ArgKind::HiddenQueuePtr => 8,
            ArgKind::HiddenBlockCount(_)
            | ArgKind::HiddenDynamicLdsSize
            | ArgKind::HiddenPrivateBase
            | ArgKind::HiddenSharedBase => 4,
            ArgKind::HiddenGroupSize(_) | ArgKind::HiddenRemainder(_) | ArgKind::HiddenGridDims => {
                2
            }
            _ => return None,
        })
    }
}

impl fmt::Display for ArgKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// The address space a pointer argument points into (`.address_space`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AddressSpace {
    /// `private` (scratch).
    Private,
    /// `global`.
    Global,
    /// `constant`.
    Constant,
    /// `local` (LDS).
    Local,
    /// `generic` (flat).
    Generic,
    /// `region` (GDS).
    Region,
    /// Anything else, as written.
    Other(String),
}

impl AddressSpace {
    pub(crate) fn from_name(name: &str) -> AddressSpace {
        match name {
            "private" => AddressSpace::Private,
            "global" => AddressSpace::Global,
            "constant" => AddressSpace::Constant,
            "local" => AddressSpace::Local,
            "generic" => AddressSpace::Generic,
            "region" => AddressSpace::Region,
            other => AddressSpace::Other(other.to_owned()),
        }
    }
}

/// The `.address_space` string.
impl fmt::Display for AddressSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddressSpace::Private => "private",
            AddressSpace::Global => "global",
            AddressSpace::Constant => "constant",
            AddressSpace::Local => "local",
            AddressSpace::Generic => "generic",
            AddressSpace::Region => "region",
            AddressSpace::Other(s) => s,
        })
    }
}

/// One kernel argument (an entry of `.args`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelArg {
    /// `.name`: the parameter's name, when the compiler recorded it (OpenCL with
    /// `-cl-kernel-arg-info`; HIP objects usually have none).
    pub name: Option<String>,
    /// `.type_name`, when recorded.
    pub type_name: Option<String>,
    /// Byte offset in the kernarg segment.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
    /// Alignment in bytes. The v3+ metadata does not state it, so it is derived: the natural
    /// alignment of a value of this size (at most 16), reduced to what the offset allows.
    pub align: u32,
    /// `.value_kind`.
    pub kind: ArgKind,
    /// `.address_space` of pointer arguments.
    pub address_space: Option<AddressSpace>,
    /// `.pointee_align` of LDS pointers.
    pub pointee_align: Option<u32>,
    /// `.access` / `.actual_access` (`read_only`, `write_only`, `read_write`), when recorded.
    pub access: Option<String>,
    /// `.is_const`.
    pub is_const: bool,
    /// `.is_restrict`.
    pub is_restrict: bool,
    /// `.is_volatile`.
    pub is_volatile: bool,
}

impl KernelArg {
    /// An argument of `kind` at `offset` of `size` bytes, nothing else recorded (for building
    /// metadata by hand, e.g. in tests or for code objects without a note).
    pub fn new(kind: ArgKind, offset: u32, size: u32) -> KernelArg {
        KernelArg {
            name: None,
            type_name: None,
            offset,
            size,
            align: derived_align(offset, size),
            kind,
            address_space: None,
            pointee_align: None,
            access: None,
            is_const: false,
            is_restrict: false,
            is_volatile: false,
        }
    }

    /// Whether the runtime supplies this argument (see [`ArgKind::is_hidden`]).
    pub fn is_hidden(&self) -> bool {
        self.kind.is_hidden()
    }
}

/// The alignment [`KernelArg::align`] documents.
pub(crate) fn derived_align(offset: u32, size: u32) -> u32 {
    let natural = size
        .max(1)
        .checked_next_power_of_two()
        .unwrap_or(16)
        .min(16);
    let allowed = if offset == 0 {
        16
    } else {
        1 << offset.trailing_zeros().min(4)
    };
    natural.min(allowed)
}

/// What the metadata says about one kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelMetadata {
    /// `.name`: the kernel's source-level name.
    pub name: String,
    /// `.symbol`: its descriptor's symbol (`name.kd`).
    pub symbol: String,
    /// `.args`, in kernarg order: explicit parameters, then the hidden arguments.
    pub args: Vec<KernelArg>,
    /// `.kernarg_segment_size`: bytes of kernel arguments, hidden ones included.
    pub kernarg_segment_size: u32,
    /// `.kernarg_segment_align`.
    pub kernarg_segment_align: u32,
    /// `.group_segment_fixed_size`: static LDS bytes per work-group.
    pub group_segment_fixed_size: u32,
    /// `.private_segment_fixed_size`: scratch bytes per work-item (without a dynamic stack).
    pub private_segment_fixed_size: u32,
    /// `.uses_dynamic_stack`: scratch needs are not known at compile time.
    pub uses_dynamic_stack: bool,
    /// `.wavefront_size`: 32 or 64.
    pub wavefront_size: u32,
    /// `.sgpr_count`.
    pub sgpr_count: u32,
    /// `.vgpr_count`.
    pub vgpr_count: u32,
    /// `.agpr_count` (0 when absent: processors without accumulation registers).
    pub agpr_count: u32,
    /// `.sgpr_spill_count` (0 when absent).
    pub sgpr_spill_count: u32,
    /// `.vgpr_spill_count` (0 when absent).
    pub vgpr_spill_count: u32,
    /// `.max_flat_workgroup_size`: the largest work-group the kernel was compiled for.
    pub max_flat_workgroup_size: u32,
    /// `.reqd_workgroup_size`, when the source requires one.
    pub reqd_workgroup_size: Option<[u32; 3]>,
    /// `.language`, when recorded (`OpenCL C`, `HIP`, ...).
    pub language: Option<String>,
}

impl KernelMetadata {
    /// Metadata by hand, for a kernel without a note (an emulated kernel, assembly): named
    /// `name`, `kernarg_segment_size` bytes of arguments, none listed yet (push them onto
    /// `args`), wave64, up to 1024 work-items per group.
    pub fn new(name: &str, kernarg_segment_size: u32) -> KernelMetadata {
        KernelMetadata {
            name: name.to_owned(),
            symbol: format!("{name}.kd"),
            args: Vec::new(),
            kernarg_segment_size,
            kernarg_segment_align: 16,
            group_segment_fixed_size: 0,
            private_segment_fixed_size: 0,
            uses_dynamic_stack: false,
            wavefront_size: 64,
            sgpr_count: 0,
            vgpr_count: 0,
            agpr_count: 0,
            sgpr_spill_count: 0,
            vgpr_spill_count: 0,
            max_flat_workgroup_size: 1024,
            reqd_workgroup_size: None,
            language: None,
        }
    }

    /// The arguments the caller supplies, in order (index `i` of [`crate::kernel_args::KernelArgs`]).
    pub fn explicit_args(&self) -> impl Iterator<Item = &KernelArg> {
        self.args.iter().filter(|a| !a.is_hidden())
    }

    /// The arguments the runtime fills in.
    pub fn hidden_args(&self) -> impl Iterator<Item = &KernelArg> {
        self.args.iter().filter(|a| a.is_hidden())
    }

    /// The hidden argument of `kind`, if the kernel has one.
    pub fn hidden_arg(&self, kind: &ArgKind) -> Option<&KernelArg> {
        self.args.iter().find(|a| a.kind == *kind)
    }
}

/// The whole metadata note of a code object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeObjectMetadata {
    /// The code-object version the metadata's `amdhsa.version` implies.
    pub version: CodeObjectVersion,
    /// `amdhsa.version` as written (major, minor).
    pub metadata_version: (u32, u32),
    /// `amdhsa.target` (v4 and later; v3 metadata has none).
    pub target: Option<TargetId>,
    /// `amdhsa.kernels`.
    pub kernels: Vec<KernelMetadata>,
    /// `amdhsa.printf`: the printf format strings (OpenCL), as written.
    pub printf: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_unknowns_are_kept() {
        for name in [
            "by_value",
            "global_buffer",
            "hidden_global_offset_z",
            "hidden_block_count_y",
            "hidden_group_size_x",
            "hidden_remainder_z",
            "hidden_multigrid_sync_arg",
            "hidden_queue_ptr",
            "hidden_dynamic_lds_size",
        ] {
            let kind = ArgKind::from_name(name);
            assert!(!matches!(kind, ArgKind::Unknown(_)), "{name}");
            assert_eq!(kind.name(), name);
        }
        assert_eq!(
            ArgKind::from_name("hidden_block_count_w"),
            ArgKind::Unknown("hidden_block_count_w".into())
        );
        assert!(ArgKind::from_name("hidden_future_thing").is_hidden());
        assert!(!ArgKind::from_name("future_thing").is_hidden());
        assert!(!ArgKind::GlobalBuffer.is_hidden());
    }

    #[test]
    fn derived_alignment() {
        assert_eq!(derived_align(0, 8), 8);
        assert_eq!(derived_align(24, 4), 4);
        assert_eq!(derived_align(44, 2), 2);
        assert_eq!(derived_align(4, 8), 4);
        assert_eq!(derived_align(32, 16), 16);
        assert_eq!(derived_align(32, 12), 16);
        assert_eq!(derived_align(8, 1), 1);
    }
}
