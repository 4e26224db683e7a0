//! Loading AMDGPU code objects as a loader does, and reading what the compiler says about them.
//!
//! [`crate::Gpu::load_code_object`] takes what a compiler writes — an ELF code object (v3, v4
//! or v5) or a clang offload bundle (`hipcc --genco`), from which it picks the entry for the
//! GPU — and:
//! - checks the target: processor and features (`gfx90a:sramecc+:xnack-`) from `e_flags` and
//!   the metadata, which must agree with each other and run on the GPU ([`crate::Gpu::target_id`]);
//! - reads the `NT_AMDGPU_METADATA` note ([`CodeObjectMetadata`]): each kernel's arguments with
//!   their kinds (hidden ones included), segment sizes, register counts;
//! - places every `PT_LOAD` segment at its offset in one executable allocation and applies the
//!   dynamic relocations (`R_AMDGPU_RELATIVE64`, `ABS64`, `ABS32`, `ABS32_LO`, `ABS32_HI`)
//!   against `.dynsym`;
//! - invalidates the GPU's instruction cache and waits for it, so the code is runnable when the
//!   call returns.
//!
//! Permissions: KFD sets write and execute permission per allocation, not per page, and
//! position-independent code finds its data at fixed distances, so all segments share one
//! writable, executable allocation. Each segment's own permissions (`p_flags`) are recorded in
//! [`LoadedSegment`] but not enforced by the GPU.
//!
//! Unloading is dropping: the code memory is freed when the [`CodeObject`] and every
//! [`Kernel`] taken from it (which submissions keep alive) are gone.

mod bundle;
pub(crate) mod demangle;
mod elf;
mod load;
mod metadata;
mod note;
mod reloc;
mod substitute;
mod target;

pub use crate::error::CodeObjectError;
pub use bundle::{is_bundle, BundleEntry, OffloadBundle, BUNDLE_MAGIC};
pub use load::{parse_without_device, LoadOptions, DEFAULT_MAX_IMAGE_BYTES};
pub use metadata::{
    AddressSpace, ArgKind, CodeObjectMetadata, CodeObjectVersion, Dim, KernelArg, KernelMetadata,
};
pub use target::{FeatureSetting, TargetId};

use crate::error::Result;
use crate::kernel::Kernel;
use crate::memory::Buffer;
use demangle::demangle;
use std::sync::Arc;

/// A loadable segment as placed in GPU memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadedSegment {
    /// `p_vaddr`.
    pub vaddr: u64,
    /// Its GPU address.
    pub address: u64,
    /// `p_memsz`.
    pub mem_size: u64,
    /// `p_filesz` (the rest, up to `mem_size`, is zero).
    pub file_size: u64,
    /// `PF_R`.
    pub readable: bool,
    /// `PF_W`.
    pub writable: bool,
    /// `PF_X`.
    pub executable: bool,
}

/// What a `.dynsym` symbol is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    /// `STT_OBJECT`: a variable or a kernel descriptor.
    Object,
    /// `STT_FUNC`: code.
    Function,
    /// Anything else.
    Other,
}

/// A symbol a loaded code object defines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolInfo {
    /// Its name.
    pub name: String,
    /// Its GPU address (the value itself for absolute symbols).
    pub address: u64,
    /// `st_size`.
    pub size: u64,
    /// `st_type`.
    pub kind: SymbolKind,
}

/// A kernel of a loaded code object.
struct LoadedKernel {
    name: String,
    /// Offset of the descriptor in the code memory.
    descriptor_offset: u64,
    descriptor: aql::KernelDescriptor,
    metadata: Option<Arc<KernelMetadata>>,
}

/// A code object loaded on one GPU.
pub struct CodeObject {
    memory: Arc<Buffer>,
    version: CodeObjectVersion,
    target: TargetId,
    metadata: Option<CodeObjectMetadata>,
    kernels: Vec<LoadedKernel>,
    symbols: Vec<SymbolInfo>,
    segments: Vec<LoadedSegment>,
    /// The GPU, when a kernel takes the hostcall buffer (its service starts on first use).
    hostcall_gpu: Option<crate::Gpu>,
    /// Keeps the GPU's loader queue alive while code objects use it.
    _icache_queue: Option<Arc<load::LoaderQueue>>,
    /// Its entry in the debugger's list of loaded code objects.
    _debugger_entry: crate::debug::r_debug::Registration,
}

impl std::fmt::Debug for CodeObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeObject")
            .field("version", &self.version)
            .field("target", &self.target.to_string())
            .field("base", &format_args!("{:#x}", self.base_address()))
            .field("kernels", &self.kernel_names().collect::<Vec<_>>())
            .finish()
    }
}

impl CodeObject {
    /// Names of the kernels (those with a `.kd` descriptor symbol), in symbol-table order.
    pub fn kernel_names(&self) -> impl Iterator<Item = &str> {
        self.kernels.iter().map(|k| k.name.as_str())
    }

    /// The kernel named `name`: its symbol name (mangled, for C++), or its C++ name, with its
    /// parameter types (`vector_add(float const*, float*)`, as the demangler prints them) or
    /// without when only one overload has it, namespaces included (`ns::vector_add`).
    fn find(&self, name: &str) -> Result<&LoadedKernel> {
        if let Some(k) = self.kernels.iter().find(|k| k.name == name) {
            return Ok(k);
        }
        let demangled: Vec<(&LoadedKernel, String)> = self
            .kernels
            .iter()
            .filter_map(|k| Some((k, demangle(&k.name)?)))
            .collect();
        let wanted = name.replace(' ', "");
        if let Some((k, _)) = demangled.iter().find(|(_, d)| d.replace(' ', "") == wanted) {
            return Ok(k);
        }
        let matches: Vec<&(&LoadedKernel, String)> = demangled
            .iter()
            .filter(|(_, d)| d.split('(').next() == Some(name))
            .collect();
        match matches[..] {
            [(k, _)] => Ok(k),
            [] => Err(CodeObjectError::NoSuchKernel {
                name: name.to_owned(),
                available: self.kernel_names().map(str::to_owned).collect(),
            }
            .into()),
            _ => Err(CodeObjectError::AmbiguousKernel {
                name: name.to_owned(),
                matches: matches.iter().map(|(_, d)| d.clone()).collect(),
            }
            .into()),
        }
    }

    /// The kernel `name`, ready to dispatch; it keeps the code memory alive. With
    /// `KFDRT_SUBSTITUTE` naming it, the kernel comes from that code object instead (logged).
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        if let Some(substitute) = substitute::substitute(self, name) {
            return substitute;
        }
        self.kernel_unsubstituted(name)
    }

    /// [`CodeObject::kernel`] from this code object whatever the substitutions.
    pub(crate) fn kernel_unsubstituted(&self, name: &str) -> Result<Kernel> {
        let k = self.find(name)?;
        let object = self.memory.gpu_address() + k.descriptor_offset;
        let pointers = k.metadata.as_deref().map(|m| {
            m.args
                .iter()
                .filter(|a| a.kind == ArgKind::GlobalBuffer && a.size == 8)
                .map(|a| a.offset)
                .collect()
        });
        let kernarg_size = k
            .metadata
            .as_deref()
            .map_or(k.descriptor.kernarg_size, |m| {
                m.kernarg_segment_size.max(k.descriptor.kernarg_size)
            });
        self.memory.kfd().shared.reports.name_kernel(
            object,
            name,
            kernarg_size,
            pointers,
            object.checked_add_signed(k.descriptor.kernel_code_entry_byte_offset),
        );
        Ok(Kernel::loaded(
            name,
            object,
            k.descriptor,
            self.memory.clone(),
            k.metadata.clone(),
            k.metadata
                .as_deref()
                .is_some_and(|m| m.hidden_arg(&ArgKind::HiddenHostcallBuffer).is_some())
                .then(|| self.hostcall_gpu.clone())
                .flatten(),
        ))
    }

    /// The metadata of kernel `name` (`None` when the code object has no metadata note or the
    /// note does not describe it).
    pub fn kernel_metadata(&self, name: &str) -> Option<&KernelMetadata> {
        self.kernels
            .iter()
            .find(|k| k.name == name)
            .and_then(|k| k.metadata.as_deref())
    }

    /// The whole metadata note, when the code object has one.
    pub fn metadata(&self) -> Option<&CodeObjectMetadata> {
        self.metadata.as_ref()
    }

    /// The code-object version.
    pub fn version(&self) -> CodeObjectVersion {
        self.version
    }

    /// The target the code object was built for.
    pub fn target(&self) -> &TargetId {
        &self.target
    }

    /// Every symbol of `.dynsym` the code object defines, with its GPU address.
    pub fn symbols(&self) -> &[SymbolInfo] {
        &self.symbols
    }

    /// The defined symbol `name` (a `__device__` variable, a function, a descriptor).
    pub fn symbol(&self, name: &str) -> Option<&SymbolInfo> {
        self.symbols.iter().find(|s| s.name == name)
    }

    /// The GPU address of the defined symbol `name`, e.g. a `__device__` variable to read or
    /// write with a copy.
    pub fn symbol_address(&self, name: &str) -> Result<u64> {
        self.symbol(name)
            .map(|s| s.address)
            .ok_or_else(|| CodeObjectError::NoSuchSymbol(name.to_owned()).into())
    }

    /// The loaded segments, by address, with the permissions the ELF asks for.
    pub fn segments(&self) -> &[LoadedSegment] {
        &self.segments
    }

    /// GPU address where the image (its lowest segment, rounded down to a page) starts.
    pub fn base_address(&self) -> u64 {
        self.memory.gpu_address()
    }

    /// Bytes of GPU memory the image occupies.
    pub fn size(&self) -> u64 {
        self.memory.size()
    }

    /// The memory holding the image (read it to inspect what was loaded and relocated).
    pub fn memory(&self) -> &Buffer {
        &self.memory
    }
}

/// What a code object declares, read without loading it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeObjectInfo {
    /// Its version.
    pub version: CodeObjectVersion,
    /// Its target (from `e_flags`, checked against the metadata's).
    pub target: TargetId,
    /// The metadata note, when there is one.
    pub metadata: Option<CodeObjectMetadata>,
    /// Names of the kernels with a descriptor in `.dynsym`.
    pub kernels: Vec<String>,
}

/// Reads a code object's ELF (not a bundle: pick an entry with [`OffloadBundle`] first) and
/// checks it as [`crate::Gpu::load_code_object`] would, short of a GPU: header, segments,
/// target, metadata, descriptor placement, relocation types.
pub fn inspect(elf: &[u8]) -> std::result::Result<CodeObjectInfo, CodeObjectError> {
    if is_bundle(elf) {
        return Err(CodeObjectError::Bundle(
            "inspect takes an ELF: choose a bundle entry with OffloadBundle first".into(),
        ));
    }
    let aligned = load::AlignedBytes::copy(elf);
    let checked = load::check(aligned.as_slice(), u64::MAX)?;
    Ok(CodeObjectInfo {
        version: checked.elf.version,
        target: checked.target,
        kernels: checked.kernels.iter().map(|k| k.name.clone()).collect(),
        metadata: checked.metadata,
    })
}
