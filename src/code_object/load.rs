//! [`crate::Gpu::load_code_object`]: checking a code object completely, then placing,
//! relocating and publishing it (instruction cache invalidated) on a GPU.

use super::bundle::{is_bundle, OffloadBundle};
use super::elf::{ParsedElf, PAGE};
use super::metadata::{ArgKind, CodeObjectMetadata, KernelMetadata};
use super::target::{self, TargetId};
use super::{note, reloc, CodeObject, LoadedKernel, LoadedSegment, SymbolInfo, SymbolKind};
use crate::device::Gpu;
use crate::error::CodeObjectError;
use crate::error::{Error, Result};
use crate::memory::{AllocOptions, MemoryKind};
use crate::queue::{AqlQueue, AqlQueueOptions};
use object::elf::{PF_R, PF_W, PF_X, STT_FUNC, STT_OBJECT};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// [`LoadOptions::max_image_bytes`] by default: 1 GiB, more than any compiled kernel library
/// needs and little enough that a corrupt size is refused before memory is taken for it.
pub const DEFAULT_MAX_IMAGE_BYTES: u64 = 1 << 30;

/// How long a load waits for the instruction-cache invalidation (a GPU that takes longer is
/// hung, and the load fails with [`Error::Timeout`] instead of hanging the caller).
const ICACHE_TIMEOUT: Duration = Duration::from_secs(60);

/// Options of [`Gpu::load_code_object_with`]: start from `default()` and change what you need.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct LoadOptions<'q> {
    /// Largest image (lowest to highest loaded address) the load accepts; larger ones fail with
    /// [`CodeObjectError::ImageTooLarge`] before any memory is allocated.
    pub max_image_bytes: u64,
    /// The queue to invalidate the instruction cache on (it must belong to the GPU). `None`:
    /// a queue the GPU keeps for its loads, created on first use and kept while code objects
    /// loaded through it exist.
    pub icache_queue: Option<&'q AqlQueue>,
}

impl Default for LoadOptions<'_> {
    fn default() -> Self {
        LoadOptions {
            max_image_bytes: DEFAULT_MAX_IMAGE_BYTES,
            icache_queue: None,
        }
    }
}

impl<'q> LoadOptions<'q> {
    /// Largest image the load accepts.
    pub fn with_max_image_bytes(mut self, bytes: u64) -> Self {
        self.max_image_bytes = bytes;
        self
    }

    /// Invalidates the instruction cache on `queue` (of the GPU the code is loaded on).
    pub fn with_icache_queue(mut self, queue: &'q AqlQueue) -> Self {
        self.icache_queue = Some(queue);
        self
    }
}

/// A copy of the input, 8-byte aligned as `object` reads ELF structures in place (embedded
/// bytes, bundle entries and slices of files need not be).
pub(crate) struct AlignedBytes {
    words: Vec<u64>,
    len: usize,
}

impl AlignedBytes {
    pub(crate) fn copy(bytes: &[u8]) -> AlignedBytes {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        for (word, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            *word = u64::from_ne_bytes(b);
        }
        AlignedBytes {
            words,
            len: bytes.len(),
        }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: `words` holds at least `len` initialised bytes (8 per word, `len` rounded up);
        // u8 has no alignment requirement, and the slice borrows `self`.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }
}

/// A kernel descriptor found in `.dynsym`.
pub(crate) struct Descriptor {
    pub(crate) name: String,
    pub(crate) vaddr: u64,
    pub(crate) metadata: Option<Arc<KernelMetadata>>,
}

/// A code object that passed every check that needs no GPU.
pub(crate) struct Checked<'a> {
    pub(crate) elf: ParsedElf<'a>,
    pub(crate) target: TargetId,
    pub(crate) metadata: Option<CodeObjectMetadata>,
    pub(crate) kernels: Vec<Descriptor>,
}

/// Reads and checks `data` (see [`super::inspect`]).
pub(crate) fn check(data: &[u8], max_span: u64) -> Result<Checked<'_>, CodeObjectError> {
    let elf = ParsedElf::parse(data, max_span)?;
    let metadata = elf.metadata_note.map(note::parse).transpose()?;
    let target = target::from_e_flags(elf.e_flags, elf.version.number())?;
    if let Some(md) = &metadata {
        if md.version != elf.version {
            return Err(CodeObjectError::Inconsistent {
                elf: format!("code object {}", elf.version),
                metadata: format!(
                    "{} (amdhsa.version {}.{})",
                    md.version, md.metadata_version.0, md.metadata_version.1
                ),
            });
        }
        if let Some(t) = md.target.as_ref().filter(|t| **t != target) {
            return Err(CodeObjectError::Inconsistent {
                elf: format!("target {target}"),
                metadata: format!("target {t}"),
            });
        }
    }
    // Every relocation must be one the loader can apply (the address does not matter here).
    reloc::resolve(&elf, 0)?;
    let kernels = descriptors(&elf, metadata.as_ref())?;
    Ok(Checked {
        elf,
        target,
        metadata,
        kernels,
    })
}

/// The `.kd` symbols, each checked: 64-byte aligned, inside a loaded segment, its code entry
/// 256-byte aligned inside an executable segment. Each metadata kernel must have one.
fn descriptors(
    elf: &ParsedElf<'_>,
    metadata: Option<&CodeObjectMetadata>,
) -> Result<Vec<Descriptor>, CodeObjectError> {
    // Kernel libraries hold thousands of kernels: look metadata up by descriptor symbol.
    let mut described: HashMap<&str, &KernelMetadata> = metadata
        .map(|md| md.kernels.iter().map(|k| (k.symbol.as_str(), k)).collect())
        .unwrap_or_default();
    let mut found: Vec<Descriptor> = Vec::new();
    let mut names: HashSet<&str> = HashSet::new();
    for sym in elf.symbols.iter().filter(|s| s.defined && !s.absolute) {
        let Some(name) = sym.name.strip_suffix(".kd").filter(|n| !n.is_empty()) else {
            continue;
        };
        let mut raw = [0u8; 64];
        check_descriptor(elf, name, sym.value, &mut raw)?;
        if !names.insert(name) {
            return Err(CodeObjectError::BadDescriptor {
                kernel: name.to_owned(),
                why: "two descriptor symbols".into(),
            });
        }
        found.push(Descriptor {
            name: name.to_owned(),
            vaddr: sym.value,
            metadata: described
                .remove(sym.name.as_str())
                .map(|k| Arc::new(k.clone())),
        });
    }
    // What is left is metadata without a descriptor; report the first in note order.
    if let Some(k) = metadata
        .into_iter()
        .flat_map(|md| &md.kernels)
        .find(|k| described.contains_key(k.symbol.as_str()))
    {
        return Err(CodeObjectError::Metadata(format!(
            "kernel {:?}: its descriptor symbol {:?} is not in .dynsym",
            k.name, k.symbol
        )));
    }
    if found.is_empty() {
        return Err(CodeObjectError::NoKernels);
    }
    Ok(found)
}

/// Checks the descriptor of `kernel` at `vaddr`, reading it into `raw` from the file.
fn check_descriptor(
    elf: &ParsedElf<'_>,
    kernel: &str,
    vaddr: u64,
    raw: &mut [u8; 64],
) -> Result<(), CodeObjectError> {
    let bad = |why: String| CodeObjectError::BadDescriptor {
        kernel: kernel.to_owned(),
        why,
    };
    if vaddr % 64 != 0 {
        return Err(bad(format!(
            "descriptor at {vaddr:#x} is not 64-byte aligned"
        )));
    }
    if !elf.read_at(vaddr, raw) {
        return Err(bad(format!(
            "descriptor at {vaddr:#x} is outside the loaded segments"
        )));
    }
    check_entry(elf, kernel, vaddr, &aql::KernelDescriptor::from_bytes(raw))
}

fn check_entry(
    elf: &ParsedElf<'_>,
    kernel: &str,
    vaddr: u64,
    kd: &aql::KernelDescriptor,
) -> Result<(), CodeObjectError> {
    let offset = kd.kernel_code_entry_byte_offset;
    let entry = vaddr.checked_add_signed(offset);
    let runnable = entry.is_some_and(|e| {
        e % 256 == 0
            && elf
                .segment_holding(e, 4)
                .is_some_and(|s| s.flags & PF_X != 0)
    });
    if runnable {
        Ok(())
    } else {
        Err(CodeObjectError::BadDescriptor {
            kernel: kernel.to_owned(),
            why: format!(
                "code entry (descriptor {vaddr:#x} {offset:+#x}) is not 256-byte aligned code \
                 in an executable segment"
            ),
        })
    }
}

impl Gpu {
    /// Loads an AMDGPU code object — an ELF (code object v3 to v5) or a clang offload bundle,
    /// from which the entry for this GPU is taken — with [`LoadOptions::default`]. See the
    /// [`crate::code_object`] module for what a load does; every refusal is an
    /// [`Error::CodeObject`] naming what is wrong.
    pub fn load_code_object(&self, bytes: &[u8]) -> Result<CodeObject> {
        self.load_code_object_with(bytes, &LoadOptions::default())
    }

    /// [`Gpu::load_code_object`] with explicit options.
    pub fn load_code_object_with(
        &self,
        bytes: &[u8],
        options: &LoadOptions<'_>,
    ) -> Result<CodeObject> {
        let gpu_target = self.target_id();
        let elf = if is_bundle(bytes) {
            OffloadBundle::parse(bytes)?.select(&gpu_target)?
        } else {
            bytes
        };
        let aligned = AlignedBytes::copy(elf);
        let checked = check(aligned.as_slice(), options.max_image_bytes)?;
        if !checked.target.runs_on(&gpu_target) {
            return Err(CodeObjectError::TargetMismatch {
                code_object: checked.target.to_string(),
                gpu: gpu_target.to_string(),
            }
            .into());
        }
        let queue = self.icache_queue(options)?;
        let elf = &checked.elf;
        let memory = self.alloc_with(
            elf.span(),
            AllocOptions {
                executable: true,
                alignment: PAGE,
                ..AllocOptions::new(MemoryKind::HostVisibleVram)
            },
        )?;
        let base = memory.gpu_address();
        let mut image = elf.image()?;
        reloc::apply(&mut image, &reloc::resolve(elf, base)?)?;
        let mut kernels = Vec::with_capacity(checked.kernels.len());
        for d in checked.kernels {
            let offset = d.vaddr - elf.image_start;
            let raw = image
                .get(offset as usize..offset as usize + 64)
                .and_then(|b| <&[u8; 64]>::try_from(b).ok())
                .ok_or_else(|| CodeObjectError::Malformed("descriptor outside the image".into()))?;
            let descriptor = aql::KernelDescriptor::from_bytes(raw);
            // Relocations could have rewritten it; the entry must still be code.
            check_entry(elf, &d.name, d.vaddr, &descriptor)?;
            kernels.push(LoadedKernel {
                name: d.name,
                descriptor_offset: offset,
                descriptor,
                metadata: d.metadata,
            });
        }
        memory.write(0, &image)?;
        let wants_hostcall = kernels.iter().any(|k| {
            k.metadata
                .as_deref()
                .is_some_and(|m| m.hidden_arg(&ArgKind::HiddenHostcallBuffer).is_some())
        });
        // The hostcall service starts when arguments are first built for such a kernel: many
        // compilers' kernels declare the buffer without ever printing.
        let hostcall_gpu = wants_hostcall.then(|| self.clone());
        let at = |vaddr: u64| base.wrapping_add(vaddr.wrapping_sub(elf.image_start));
        let segments = elf
            .segments
            .iter()
            .map(|s| LoadedSegment {
                vaddr: s.vaddr,
                address: at(s.vaddr),
                mem_size: s.mem_size,
                file_size: s.file_size,
                readable: s.flags & PF_R != 0,
                writable: s.flags & PF_W != 0,
                executable: s.flags & PF_X != 0,
            })
            .collect();
        let symbols = elf
            .symbols
            .iter()
            .filter(|s| s.defined && !s.name.is_empty())
            .filter(|s| s.absolute || (elf.image_start..=elf.image_end).contains(&s.value))
            .map(|s| SymbolInfo {
                name: s.name.clone(),
                address: if s.absolute { s.value } else { at(s.value) },
                size: s.size,
                kind: match s.kind {
                    STT_OBJECT => SymbolKind::Object,
                    STT_FUNC => SymbolKind::Function,
                    _ => SymbolKind::Other,
                },
            })
            .collect();
        // The code is in memory; the GPU must not run stale instructions from a previous
        // occupant of these addresses.
        let (queue, owned) = queue;
        queue.invalidate_icache()?.wait(Some(ICACHE_TIMEOUT))?;
        log::debug!(
            "kfdrt: loaded code object {} for {} at {base:#x} ({} bytes, {} kernels)",
            elf.version,
            checked.target,
            elf.span(),
            kernels.len()
        );
        if let Some(rec) = &self.kfd().shared.recorder {
            rec.code_object(memory.gpu_address(), memory.size(), bytes);
        }
        let memory = Arc::new(memory);
        self.kfd().shared.reports.sources.register(
            aligned.as_slice(),
            elf.image_start,
            memory.gpu_address()..memory.gpu_address() + memory.size(),
            &memory,
        );
        Ok(CodeObject {
            memory,
            version: elf.version,
            target: checked.target,
            metadata: checked.metadata,
            kernels,
            symbols,
            segments,
            hostcall_gpu,
            _icache_queue: owned,
            _debugger_entry: crate::debug::r_debug::register(
                aligned.as_slice(),
                base.wrapping_sub(elf.image_start),
            ),
        })
    }

    /// The queue to invalidate the instruction cache on, and the GPU's own loader queue when it
    /// is that one (which code objects then keep alive).
    fn icache_queue(
        &self,
        options: &LoadOptions<'_>,
    ) -> Result<(AqlQueue, Option<Arc<LoaderQueue>>)> {
        if let Some(q) = options.icache_queue {
            if q.gpu() != self {
                return Err(Error::NotOnGpu {
                    what: format!("the instruction-cache queue (of GPU {:#x})", q.gpu().id()),
                    gpu_id: self.id(),
                });
            }
            return Ok((q.clone(), None));
        }
        let own = self.kfd.shared.slots.get_or_make(self.index, || {
            self.create_aql_queue(AqlQueueOptions {
                size_packets: 64,
                kernarg_bytes: 4096,
                ..Default::default()
            })
            .map(|q| Arc::new(LoaderQueue(q)))
        })?;
        Ok((own.0.clone(), Some(own)))
    }
}

/// The queue a GPU keeps for invalidating the instruction cache after loads, while code
/// objects loaded through it exist.
pub(crate) struct LoaderQueue(AqlQueue);

/// Everything loading does to a code object's bytes short of touching a device: bundle
/// selection (for `gpu`), ELF checks, metadata, relocations against a made-up base, and the
/// kernel descriptors. Returns the number of kernels. For fuzzing the loader (the `fuzz/`
/// targets and their corpus replay); not part of the API.
#[doc(hidden)]
pub fn parse_without_device(bytes: &[u8], gpu: &str) -> Result<usize> {
    let gpu_target = TargetId::parse(gpu)?;
    let elf = if is_bundle(bytes) {
        OffloadBundle::parse(bytes)?.select(&gpu_target)?
    } else {
        bytes
    };
    let aligned = AlignedBytes::copy(elf);
    let checked = check(aligned.as_slice(), 64 << 20)?;
    let elf = &checked.elf;
    let mut image = elf.image()?;
    reloc::apply(&mut image, &reloc::resolve(elf, 0x7f00_0000_0000)?)?;
    for d in &checked.kernels {
        let offset = d.vaddr.wrapping_sub(elf.image_start);
        let raw = image
            .get(offset as usize..(offset as usize).saturating_add(64))
            .and_then(|b| <&[u8; 64]>::try_from(b).ok())
            .ok_or_else(|| CodeObjectError::Malformed("descriptor outside the image".into()))?;
        let descriptor = aql::KernelDescriptor::from_bytes(raw);
        check_entry(elf, &d.name, d.vaddr, &descriptor)?;
    }
    Ok(checked.kernels.len())
}

impl crate::Kfd {
    /// Loads `bytes` on every GPU, as a HIP module is loaded on each device: one
    /// [`CodeObject`] per GPU, in [`crate::Kfd::gpus`] order (from a multi-target bundle each
    /// takes its own target's entry). The first GPU that refuses it ends the call.
    pub fn load_code_object_on_all(&self, bytes: &[u8]) -> Result<Vec<CodeObject>> {
        self.gpus()
            .iter()
            .map(|g| g.load_code_object(bytes))
            .collect()
    }
}
