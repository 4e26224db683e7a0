//! [`Buffer`]: an owned GPU allocation with its mappings.

use super::raw::RawAllocation;
use super::MemoryKind;
use crate::device::{Gpu, Kfd};
use crate::error::{Error, Result};
use std::fmt;
use std::sync::Mutex;

/// Options of an allocation beyond its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocOptions {
    /// What memory to allocate.
    pub kind: MemoryKind,
    /// Whether the GPU may execute code from it (code objects, blit kernels).
    pub executable: bool,
}

impl AllocOptions {
    /// Non-executable memory of `kind`.
    pub fn new(kind: MemoryKind) -> Self {
        AllocOptions {
            kind,
            executable: false,
        }
    }
}

/// GPU-accessible memory, mapped to its own GPU and optionally to peers.
///
/// Dropping a buffer unmaps it from every GPU, removes the CPU mapping and frees it, in that
/// order. The caller must not drop a buffer the GPU is still using (the runtime's queues keep the
/// buffers their packets reference alive).
pub struct Buffer {
    kfd: Kfd,
    raw: Option<RawAllocation>,
    size: u64,
    /// GPU ids this buffer is mapped to, the owner first.
    mapped: Mutex<Vec<u32>>,
}

// SAFETY: the buffer owns its allocation; the raw CPU pointer inside refers to a shared mapping
// that any thread may access, and the mutable state (mapping list) is behind a mutex.
unsafe impl Send for Buffer {}
// SAFETY: as above; `&Buffer` only hands out the pointer and reads immutable fields.
unsafe impl Sync for Buffer {}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("address", &format_args!("{:#x}", self.gpu_address()))
            .field("size", &self.size)
            .field("kind", &self.kind())
            .field("mapped", &self.mapped_gpus())
            .finish()
    }
}

impl Gpu {
    /// Allocates `size` bytes of `kind` on this GPU, mapped to it.
    pub fn alloc(&self, size: u64, kind: MemoryKind) -> Result<Buffer> {
        self.alloc_with(size, AllocOptions::new(kind))
    }

    /// Allocates with explicit [`AllocOptions`].
    pub fn alloc_with(&self, size: u64, options: AllocOptions) -> Result<Buffer> {
        let info = self.info();
        let raw = RawAllocation::new(
            &**self.kfd.driver(),
            info.gpu_id,
            info.drm_render_minor,
            size,
            options.kind,
            options.executable,
        )?;
        Ok(Buffer {
            kfd: self.kfd.clone(),
            raw: Some(raw),
            size,
            mapped: Mutex::new(vec![info.gpu_id]),
        })
    }
}

impl Buffer {
    fn raw(&self) -> &RawAllocation {
        // `raw` is only taken in Drop.
        self.raw
            .as_ref()
            .unwrap_or_else(|| unreachable!("buffer used after drop"))
    }

    /// The GPU virtual address (equal to the CPU address where the CPU can access it).
    pub fn gpu_address(&self) -> u64 {
        self.raw().va.addr
    }

    /// The size requested, in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The size of the underlying allocation (rounded up to a page).
    pub fn allocated_size(&self) -> u64 {
        self.raw().va.len
    }

    /// The memory kind.
    pub fn kind(&self) -> MemoryKind {
        self.raw().kind
    }

    /// KFD's handle of the allocation.
    pub fn handle(&self) -> u64 {
        self.raw().handle
    }

    /// The GPU that owns the allocation.
    pub fn owner_gpu_id(&self) -> u32 {
        self.raw().gpu_id
    }

    /// The CPU pointer, or `None` for device-local VRAM.
    pub fn as_ptr(&self) -> Option<*mut u8> {
        self.raw().cpu_ptr()
    }

    /// The contents as a byte slice, or `None` when the CPU cannot access this kind.
    ///
    /// The GPU may write the memory concurrently; synchronise through signals before reading.
    pub fn as_slice(&self) -> Option<&[u8]> {
        // SAFETY: the mapping is `size` bytes long and lives as long as `self`.
        self.as_ptr()
            .map(|p| unsafe { std::slice::from_raw_parts(p, self.size as usize) })
    }

    /// The contents as a mutable byte slice, or `None` when the CPU cannot access this kind.
    pub fn as_mut_slice(&mut self) -> Option<&mut [u8]> {
        let size = self.size as usize;
        // SAFETY: as `as_slice`, and `&mut self` excludes other CPU borrows.
        self.as_ptr()
            .map(|p| unsafe { std::slice::from_raw_parts_mut(p, size) })
    }

    fn check_range(&self, offset: u64, len: usize) -> Result<*mut u8> {
        let ptr = self.as_ptr().ok_or_else(|| {
            Error::InvalidArgument(format!("{} is not host-accessible", self.kind().name()))
        })?;
        let end = offset.checked_add(len as u64);
        if end.is_none_or(|e| e > self.size) {
            return Err(Error::InvalidArgument(format!(
                "range {offset}+{len} is outside a buffer of {} bytes",
                self.size
            )));
        }
        // SAFETY: offset is within the mapping per the check above.
        Ok(unsafe { ptr.add(offset as usize) })
    }

    /// Copies `data` into the buffer at `offset` (host-accessible kinds only).
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        let dst = self.check_range(offset, data.len())?;
        // SAFETY: `dst..dst+len` lies inside the mapping (checked) and cannot overlap `data`,
        // which is an ordinary Rust borrow.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        Ok(())
    }

    /// Copies from the buffer at `offset` into `out` (host-accessible kinds only).
    pub fn read(&self, offset: u64, out: &mut [u8]) -> Result<()> {
        let src = self.check_range(offset, out.len())?;
        // SAFETY: as in `write`, reversed.
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// GPU ids the buffer is mapped to, owner first.
    pub fn mapped_gpus(&self) -> Vec<u32> {
        self.mapped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn same_kfd(&self, gpu: &Gpu) -> Result<()> {
        if std::sync::Arc::ptr_eq(&self.kfd.shared, &gpu.kfd.shared) {
            Ok(())
        } else {
            Err(Error::InvalidArgument("GPU belongs to another Kfd".into()))
        }
    }

    /// Maps the buffer to `gpu` too (peer access). Mapping twice is a no-op.
    pub fn map_to(&self, gpu: &Gpu) -> Result<()> {
        self.same_kfd(gpu)?;
        let mut mapped = self.mapped.lock().unwrap_or_else(|p| p.into_inner());
        if mapped.contains(&gpu.id()) {
            return Ok(());
        }
        self.raw().map_to_gpus(&**self.kfd.driver(), &[gpu.id()])?;
        mapped.push(gpu.id());
        Ok(())
    }

    /// Removes `gpu`'s mapping. The owning GPU's mapping cannot be removed while the buffer lives.
    pub fn unmap_from(&self, gpu: &Gpu) -> Result<()> {
        self.same_kfd(gpu)?;
        if gpu.id() == self.owner_gpu_id() {
            return Err(Error::InvalidArgument(
                "cannot unmap a buffer from the GPU that owns it".into(),
            ));
        }
        let mut mapped = self.mapped.lock().unwrap_or_else(|p| p.into_inner());
        let Some(pos) = mapped.iter().position(|&g| g == gpu.id()) else {
            return Err(Error::InvalidArgument(format!(
                "buffer is not mapped to GPU {:#x}",
                gpu.id()
            )));
        };
        self.raw()
            .unmap_from_gpus(&**self.kfd.driver(), &[gpu.id()])?;
        mapped.remove(pos);
        Ok(())
    }

    /// Unmaps the buffer from its own GPU and maps it again (contents are kept).
    pub fn remap(&self) -> Result<()> {
        let owner = [self.owner_gpu_id()];
        let driver = &**self.kfd.driver();
        self.raw().unmap_from_gpus(driver, &owner)?;
        self.raw().map_to_gpus(driver, &owner)
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        let mapped = std::mem::take(self.mapped.get_mut().unwrap_or_else(|p| p.into_inner()));
        if let Some(raw) = self.raw.take() {
            raw.release(&**self.kfd.driver(), &mapped);
        }
    }
}
