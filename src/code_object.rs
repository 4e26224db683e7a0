//! Loading AMDGPU code objects: place an ELF's loadable segments in executable GPU memory and
//! find its kernels by their `.kd` (kernel descriptor) symbols.
//!
//! The two failures people hit most are named: an ELF for another machine, and a code object
//! built for another GPU target (`e_flags`' `EF_AMDGPU_MACH`).

use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::memory::{AllocOptions, Buffer, MemoryKind};
use object::{Object, ObjectSegment, ObjectSymbol};
use std::sync::Arc;

const EM_AMDGPU: u16 = 224;
/// `EF_AMDGPU_MACH` values of the targets kfdrt knows.
const MACHS: [(u32, &str); 8] = [
    (0x2C, "gfx900"),
    (0x2F, "gfx906"),
    (0x30, "gfx908"),
    (0x3F, "gfx90a"),
    (0x4B, "gfx941"),
    (0x4C, "gfx942"),
    (0x36, "gfx1030"),
    (0x41, "gfx1100"),
];

fn mach_name(mach: u32) -> String {
    MACHS
        .iter()
        .find(|(m, _)| *m == mach)
        .map_or_else(|| format!("mach {mach:#x}"), |(_, n)| n.to_string())
}

/// A code object loaded on one GPU.
pub struct CodeObject {
    memory: Arc<Buffer>,
    kernels: Vec<(String, u64)>,
}

impl std::fmt::Debug for CodeObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeObject")
            .field("kernels", &self.kernels)
            .finish()
    }
}

impl Gpu {
    /// Loads an AMDGPU code object (an ELF shared object) for this GPU.
    pub fn load_code_object(&self, elf: &[u8]) -> Result<CodeObject> {
        let bad = |m: String| Error::InvalidArgument(format!("code object: {m}"));
        // The ELF reader wants its input 8-byte aligned; embedded bytes need not be.
        let mut words = vec![0u64; elf.len().div_ceil(8)];
        // SAFETY: `words` has at least `elf.len()` bytes; u8 has no alignment requirement and
        // every bit pattern is valid for both types.
        let aligned =
            unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), elf.len()) };
        aligned.copy_from_slice(elf);
        let elf: &[u8] = aligned;
        let file = object::File::parse(elf).map_err(|e| bad(format!("not an ELF file ({e})")))?;
        let object::FileFlags::Elf { e_flags, .. } = file.flags() else {
            return Err(bad("not an ELF file".into()));
        };
        // e_machine sits at byte 18 of every ELF header.
        let machine = elf
            .get(18..20)
            .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
        if machine != EM_AMDGPU {
            return Err(bad(format!(
                "e_machine {machine} is not EM_AMDGPU ({EM_AMDGPU})"
            )));
        }
        let mach = e_flags & 0xFF;
        let want = &self.info().gfx_target;
        if mach_name(mach) != *want {
            return Err(bad(format!(
                "built for {}, this GPU is {want}",
                mach_name(mach)
            )));
        }
        let span = file
            .segments()
            .map(|s| s.address() + s.size())
            .max()
            .ok_or_else(|| bad("no loadable segment".into()))?;
        let memory = self.alloc_with(
            span,
            AllocOptions {
                executable: true,
                alignment: 4096,
                ..AllocOptions::new(MemoryKind::HostVisibleVram)
            },
        )?;
        memory.write(0, &vec![0u8; span as usize])?;
        for seg in file.segments() {
            let data = seg.data().map_err(|e| bad(format!("segment data: {e}")))?;
            memory.write(seg.address(), data)?;
        }
        let mut kernels = Vec::new();
        for sym in file.symbols() {
            let Ok(name) = sym.name() else { continue };
            if let Some(kernel) = name.strip_suffix(".kd") {
                if sym.address() % 64 != 0 || sym.address() + 64 > span {
                    return Err(bad(format!("descriptor of {kernel} is misplaced")));
                }
                kernels.push((kernel.to_owned(), sym.address()));
            }
        }
        if kernels.is_empty() {
            return Err(bad("no kernel descriptors (.kd symbols)".into()));
        }
        Ok(CodeObject {
            memory: Arc::new(memory),
            kernels,
        })
    }
}

impl CodeObject {
    /// Names of the kernels in the code object.
    pub fn kernel_names(&self) -> impl Iterator<Item = &str> {
        self.kernels.iter().map(|(n, _)| n.as_str())
    }

    /// The kernel `name`, ready to dispatch.
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let &(_, off) = self
            .kernels
            .iter()
            .find(|(n, _)| n == name)
            .ok_or_else(|| Error::InvalidArgument(format!("code object has no kernel {name:?}")))?;
        let mut raw = [0u8; 64];
        self.memory.read(off, &mut raw)?;
        let kd = aql::KernelDescriptor::from_bytes(&raw);
        let object = self.memory.gpu_address() + off;
        let entry = object.checked_add_signed(kd.kernel_code_entry_byte_offset);
        if entry.is_none_or(|e| e % 256 != 0 || e >= self.memory.gpu_address() + self.memory.size())
        {
            return Err(Error::InvalidArgument(format!(
                "kernel {name:?} has an invalid entry point"
            )));
        }
        Ok(Kernel::loaded(name, object, kd, self.memory.clone()))
    }
}
