//! [`Buffer`]: an owned GPU allocation with its mappings.

use super::raw::{GpuAccess, RawAllocation};
use super::shards::DeviceLease;
use super::suballoc::{PoolKey, SubAllocation};
use super::MemoryKind;
use crate::debug::address_map::TrackedMemory;
use crate::device::{Gpu, Kfd};
use crate::error::{Error, Result};
use crate::topology::PeerAccess;
use std::fmt;
use std::sync::{Arc, Mutex};

/// Options of an allocation beyond its kind: start from [`AllocOptions::new`].
///
/// ```
/// use kfdrt::{AllocOptions, MemoryKind};
/// let code = AllocOptions::new(MemoryKind::DeviceLocal).executable().with_alignment(256);
/// assert!(code.executable && !code.dedicated);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AllocOptions {
    /// What memory to allocate.
    pub kind: MemoryKind,
    /// Whether the GPU may execute code from it (code objects, blit kernels).
    pub executable: bool,
    /// Required alignment of the GPU address: a power of two up to 2 MiB (0 = the default:
    /// 64 bytes for sub-allocations, a page or more for dedicated ones).
    pub alignment: u64,
    /// Give the buffer its own KFD allocation even when it is small (bypass the suballocator).
    pub dedicated: bool,
    /// Map it to the GPU without write permission: a GPU write faults (`read_only` in the
    /// memory exception). The CPU may still write it. Read-only buffers are always dedicated.
    pub read_only: bool,
}

impl AllocOptions {
    fn access(&self) -> GpuAccess {
        let mut a = GpuAccess::empty();
        a.set(GpuAccess::WRITE, !self.read_only);
        a.set(GpuAccess::EXECUTE, self.executable);
        a
    }

    /// Non-executable memory of `kind`.
    pub fn new(kind: MemoryKind) -> Self {
        AllocOptions {
            kind,
            executable: false,
            alignment: 0,
            dedicated: false,
            read_only: false,
        }
    }

    /// The GPU may execute code from it.
    pub fn executable(mut self) -> Self {
        self.executable = true;
        self
    }

    /// Its GPU address is aligned to `alignment` (a power of two up to 2 MiB).
    pub fn with_alignment(mut self, alignment: u64) -> Self {
        self.alignment = alignment;
        self
    }

    /// Its own KFD allocation even when small.
    pub fn dedicated(mut self) -> Self {
        self.dedicated = true;
        self
    }

    /// Mapped to the GPU without write permission (always dedicated).
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }
}

/// GPU-accessible memory, mapped to its own GPU and optionally to peers.
///
/// The memory is freed (unmapped from every GPU, then from the CPU, then freed) when the buffer
/// and all GPU work given it are gone: submissions that name a buffer (copies, fills, dispatches
/// whose arguments were built with [`crate::kernel_args::KernelArgs`]) keep its memory until
/// their completion is observed, so dropping a buffer early is safe.
pub struct Buffer {
    inner: Arc<Allocation>,
}

/// The memory behind a [`Buffer`], shared with the GPU work that uses it.
pub(crate) struct Allocation {
    /// Keeps the device open (shared with the other buffers of its allocator shard).
    pub(super) lease: Arc<DeviceLease<Kfd>>,
    pub(super) backing: Option<Backing>,
    pub(super) size: u64,
    /// Allocated with execute permission.
    pub(super) executable: bool,
    /// Peer GPUs this buffer is also mapped to (the owner is implied; empty costs nothing).
    pub(super) peers: Mutex<Vec<u32>>,
}

/// What memory a buffer owns.
pub(super) enum Backing {
    /// A KFD allocation of its own.
    Whole(RawAllocation),
    /// A chunk of a suballocator block, owned by the GPU with this id.
    Sub(SubAllocation, u32),
}

// SAFETY: the allocation is owned; the raw CPU pointer inside refers to a shared mapping that any
// thread may access, and the mutable state (mapping list) is behind a mutex.
unsafe impl Send for Allocation {}
// SAFETY: as above; `&Allocation` only hands out the pointer and reads immutable fields.
unsafe impl Sync for Allocation {}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("address", &format_args!("{:#x}", self.gpu_address()))
            .field("size", &self.size())
            .field("kind", &self.kind())
            .field("mapped", &self.mapped_gpus())
            .finish()
    }
}

impl Gpu {
    /// Allocates `size` bytes of `kind` on this GPU, mapped to it. The contents of a new buffer
    /// are undefined: a sub-allocation may reuse memory a freed buffer of this process used.
    #[inline]
    pub fn alloc(&self, size: u64, kind: MemoryKind) -> Result<Buffer> {
        self.alloc_with(size, AllocOptions::new(kind))
    }

    /// Allocates with explicit [`AllocOptions`]. Requests below the suballocation threshold
    /// (2 MiB by default; see [`Kfd::set_suballocation_threshold`]) come from shared 2 MiB blocks,
    /// unless the kind is pageable, the options ask for a dedicated allocation, or
    /// `KFDRT_DISABLE_SUBALLOCATOR=1` was set when the Kfd opened.
    pub fn alloc_with(&self, size: u64, options: AllocOptions) -> Result<Buffer> {
        match &self.kfd.shared.recorder {
            None => self.alloc_unrecorded(size, options),
            Some(rec) => {
                let started = crate::device::host_ns();
                let r = self.alloc_unrecorded(size, options);
                rec.host_span(
                    &format!("alloc {size} B of {}", options.kind.name()),
                    started,
                );
                r
            }
        }
    }

    fn alloc_unrecorded(&self, size: u64, options: AllocOptions) -> Result<Buffer> {
        let a = options.alignment;
        if a != 0 && (!a.is_power_of_two() || a > super::suballoc::BLOCK_SIZE) {
            return Err(Error::BadAlignment {
                align: a,
                max: super::suballoc::BLOCK_SIZE,
            });
        }
        if size == 0 {
            return Err(Error::ZeroSize { what: "allocation" });
        }
        let info = self.info();
        let shared = &self.kfd.shared;
        shared.dev.check_process()?;
        let threshold = shared
            .suballoc_threshold
            .load(std::sync::atomic::Ordering::Relaxed);
        if !options.dedicated
            && !options.read_only
            && options.kind != MemoryKind::Pageable
            && size < threshold
        {
            let key = PoolKey {
                gpu_index: self.index,
                kind: options.kind,
                executable: options.executable,
            };
            let (chunk, lease) = shared
                .suballoc
                .alloc(&shared.dev, &self.kfd, key, size, a)?;
            return Ok(Buffer::new(Allocation {
                lease,
                backing: Some(Backing::Sub(chunk, info.gpu_id)),
                size,
                executable: options.executable,
                peers: Mutex::new(Vec::new()),
            }));
        }
        let raw = RawAllocation::new(
            &**self.kfd.driver(),
            info.gpu_id,
            info.drm_render_minor,
            size,
            options.kind,
            options.access(),
        )?;
        Ok(Buffer::new(Allocation {
            lease: shared.suballoc.lease_for_this_thread(&self.kfd),
            backing: Some(Backing::Whole(raw)),
            size,
            executable: options.executable,
            peers: Mutex::new(Vec::new()),
        }))
    }
}

impl Buffer {
    pub(super) fn new(a: Allocation) -> Buffer {
        let b = Buffer { inner: Arc::new(a) };
        #[cfg(feature = "emu")]
        if let Some(emu) = b.inner.lease.kfd.sanitizing_emulator() {
            emu.track_buffer(b.gpu_address(), b.inner.size);
        }
        if let Some(map) = &b.inner.lease.kfd.shared.buffers {
            let weak = Arc::downgrade(&b.inner);
            map.insert(
                b.gpu_address(),
                b.inner.size,
                b.inner.executable,
                Box::new(move || {
                    let live = weak.upgrade()?;
                    Some(Box::new(Buffer::from_allocation(live)) as Box<dyn TrackedMemory>)
                }),
            );
        }
        b
    }

    /// A handle on an existing allocation (debugging code that found it by address).
    pub(crate) fn from_allocation(inner: Arc<Allocation>) -> Buffer {
        Buffer { inner }
    }

    /// A handle that keeps the memory allocated (for GPU work that uses it).
    pub(crate) fn retain(&self) -> Arc<dyn Send + Sync> {
        self.inner.clone()
    }

    /// Another handle on the same memory, for kfdrt's own bookkeeping (it never hands out a
    /// mutable view through it).
    pub(crate) fn shared_handle(&self) -> Buffer {
        Buffer {
            inner: self.inner.clone(),
        }
    }

    /// Whether anything besides this handle keeps the memory: GPU work that has not been seen
    /// to complete, or another handle.
    pub(crate) fn is_retained_elsewhere(&self) -> bool {
        Arc::strong_count(&self.inner) > 1
    }

    /// Whether the two buffers belong to the same open KFD.
    pub(crate) fn kfd(&self) -> &Kfd {
        &self.inner.lease.kfd
    }

    pub(super) fn backing(&self) -> &Backing {
        // `backing` is only taken in Drop.
        self.inner
            .backing
            .as_ref()
            .unwrap_or_else(|| unreachable!("buffer used after drop"))
    }

    /// The GPU virtual address (equal to the CPU address where the CPU can access it).
    pub fn gpu_address(&self) -> u64 {
        match self.backing() {
            Backing::Whole(r) => r.va.addr,
            Backing::Sub(s, _) => s.va,
        }
    }

    /// The size requested, in bytes.
    pub fn size(&self) -> u64 {
        self.inner.size
    }

    /// The bytes reserved for the buffer: the page-rounded size of a dedicated allocation, or
    /// the power-of-two chunk of a sub-allocation.
    pub fn allocated_size(&self) -> u64 {
        match self.backing() {
            Backing::Whole(r) => r.va.len,
            Backing::Sub(s, _) => s.chunk.size(),
        }
    }

    /// Whether the buffer is a chunk of a shared suballocator block.
    pub fn is_suballocated(&self) -> bool {
        matches!(self.backing(), Backing::Sub(..))
    }

    /// The memory kind.
    pub fn kind(&self) -> MemoryKind {
        match self.backing() {
            Backing::Whole(r) => r.kind,
            Backing::Sub(s, _) => s.chunk.kind,
        }
    }

    /// KFD's handle of the allocation (of the shared block for a sub-allocation).
    pub fn handle(&self) -> u64 {
        match self.backing() {
            Backing::Whole(r) => r.handle,
            Backing::Sub(s, _) => s.handle,
        }
    }

    /// The GPU that owns the allocation.
    pub fn owner_gpu_id(&self) -> u32 {
        match self.backing() {
            Backing::Whole(r) => r.gpu_id,
            Backing::Sub(_, gpu_id) => *gpu_id,
        }
    }

    /// The CPU pointer, or `None` for device-local VRAM. Reading or writing through it is the
    /// caller's `unsafe` business: other threads may write the buffer ([`Buffer::write`] takes
    /// `&self`) and the GPU may be using it. Safe code copies with [`Buffer::read`] and
    /// [`Buffer::write`].
    ///
    /// ```compile_fail,E0599
    /// # fn f(buf: &kfdrt::Buffer) {
    /// let view: &[u8] = buf.as_slice().unwrap(); // no shared view: `write(&self)` could change it
    /// # }
    /// ```
    pub fn as_ptr(&self) -> Option<*mut u8> {
        // The caller may write VRAM through it: the next submission flushes the HDP.
        self.note_cpu_write();
        self.cpu_ptr()
    }

    fn cpu_ptr(&self) -> Option<*mut u8> {
        match self.backing() {
            Backing::Whole(r) => r.cpu_ptr(),
            Backing::Sub(s, _) => (!s.cpu.is_null()).then_some(s.cpu),
        }
    }

    /// Records a CPU write (or the chance of one) to host-visible VRAM, which must reach the
    /// GPU through an HDP flush before it reads the memory.
    fn note_cpu_write(&self) {
        if self.kind() == MemoryKind::HostVisibleVram {
            self.inner
                .lease
                .kfd
                .shared
                .cpu_wrote_vram(self.owner_gpu_id());
        }
    }

    /// The contents as a mutable byte slice, or `None` when the CPU cannot access this kind.
    pub fn as_mut_slice(&mut self) -> Option<&mut [u8]> {
        let size = self.inner.size as usize;
        // SAFETY: as `as_slice`, and `&mut self` excludes other CPU borrows.
        self.as_ptr()
            .map(|p| unsafe { std::slice::from_raw_parts_mut(p, size) })
    }

    fn check_range(&self, offset: u64, len: usize) -> Result<*mut u8> {
        let ptr = self.cpu_ptr().ok_or_else(|| Error::NoCpuAccess {
            kind: self.kind().name(),
        })?;
        let end = offset.checked_add(len as u64);
        if end.is_none_or(|e| e > self.inner.size) {
            return Err(Error::OutOfBounds {
                what: "access",
                offset,
                len: len as u64,
                size: self.inner.size,
            });
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
        self.note_cpu_write();
        Ok(())
    }

    /// Copies from the buffer at `offset` into `out` (host-accessible kinds only).
    pub fn read(&self, offset: u64, out: &mut [u8]) -> Result<()> {
        let src = self.check_range(offset, out.len())?;
        // SAFETY: as in `write`, reversed.
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// A copy of the whole contents (host-accessible kinds only).
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        let mut v = vec![
            0u8;
            usize::try_from(self.size()).map_err(|_| Error::TooLarge {
                what: "bytes to copy into host memory",
                requested: self.size(),
                limit: usize::MAX as u64,
            })?
        ];
        self.read(0, &mut v)?;
        Ok(v)
    }

    /// GPU ids the buffer is mapped to, owner first.
    pub fn mapped_gpus(&self) -> Vec<u32> {
        self.inner.mapped_gpus()
    }

    /// Whether the GPU with KFD id `gpu_id` can reach the buffer (it owns it, or it was mapped
    /// there).
    pub fn is_mapped_on(&self, gpu_id: u32) -> bool {
        self.inner.is_mapped_on(gpu_id)
    }

    fn same_kfd(&self, gpu: &Gpu) -> Result<()> {
        if std::sync::Arc::ptr_eq(&self.inner.lease.kfd.shared, &gpu.kfd.shared) {
            Ok(())
        } else {
            Err(Error::ForeignObject { what: "GPU" })
        }
    }

    /// Maps the buffer to `gpu` too (peer access). Mapping twice is a no-op. A sub-allocated
    /// buffer shares its 2 MiB block, so the peer sees the whole block (page tables work in
    /// blocks); the block stays mapped while any of its buffers asks for the peer.
    ///
    /// VRAM maps only to a GPU with a peer-to-peer path to its owner
    /// ([`Gpu::peer_access`]); [`Error::NoPeerAccess`] otherwise, since the driver would move
    /// the buffer to system memory to map it. Host memory maps to every GPU.
    pub fn map_to(&self, gpu: &Gpu) -> Result<()> {
        self.same_kfd(gpu)?;
        let mut mapped = self.inner.peers.lock().unwrap_or_else(|p| p.into_inner());
        if gpu.id() == self.owner_gpu_id() || mapped.contains(&gpu.id()) {
            return Ok(());
        }
        if self.kind().is_vram() {
            let owner = self.inner.lease.kfd.gpu_by_id(self.owner_gpu_id());
            if owner.is_none_or(|o| gpu.peer_access(&o) == PeerAccess::None) {
                return Err(Error::NoPeerAccess {
                    gpu_id: gpu.id(),
                    owner_gpu_id: self.owner_gpu_id(),
                });
            }
        }
        let shared = &self.inner.lease.kfd.shared;
        match self.backing() {
            Backing::Whole(r) => r.map_to_gpus(shared.dev.driver(), &[gpu.id()])?,
            Backing::Sub(s, _) => {
                let mut sub = shared.suballoc.of(&s.chunk);
                sub.map_peer(&shared.dev, &s.chunk, gpu.id())?
            }
        }
        mapped.push(gpu.id());
        Ok(())
    }

    /// Makes the buffer mapped to exactly its owner and `gpus`: maps the ones it lacks and
    /// unmaps peers not listed (the owner stays mapped whether listed or not). Stops at the
    /// first driver error; the GPUs changed before it keep their new state, which
    /// [`Buffer::mapped_gpus`] reports.
    pub fn set_mapped_gpus(&self, gpus: &[&Gpu]) -> Result<()> {
        for gpu in gpus {
            self.same_kfd(gpu)?;
        }
        let stale: Vec<u32> = {
            let mapped = self.inner.peers.lock().unwrap_or_else(|p| p.into_inner());
            mapped
                .iter()
                .copied()
                .filter(|&id| !gpus.iter().any(|g| g.id() == id))
                .collect()
        };
        for id in stale {
            let mut mapped = self.inner.peers.lock().unwrap_or_else(|p| p.into_inner());
            // Another thread may have unmapped it since the list was taken.
            if let Some(pos) = mapped.iter().position(|&g| g == id) {
                self.unmap_peer(id)?;
                mapped.remove(pos);
            }
        }
        for gpu in gpus {
            self.map_to(gpu)?;
        }
        Ok(())
    }

    /// Removes `gpu`'s mapping. The owning GPU's mapping cannot be removed while the buffer lives.
    pub fn unmap_from(&self, gpu: &Gpu) -> Result<()> {
        self.same_kfd(gpu)?;
        if gpu.id() == self.owner_gpu_id() {
            return Err(Error::UnmapFromOwner { gpu_id: gpu.id() });
        }
        let mut mapped = self.inner.peers.lock().unwrap_or_else(|p| p.into_inner());
        let Some(pos) = mapped.iter().position(|&g| g == gpu.id()) else {
            return Err(Error::NotOnGpu {
                what: "the buffer to unmap".into(),
                gpu_id: gpu.id(),
            });
        };
        self.unmap_peer(gpu.id())?;
        mapped.remove(pos);
        Ok(())
    }

    fn unmap_peer(&self, gpu_id: u32) -> Result<()> {
        let shared = &self.inner.lease.kfd.shared;
        match self.backing() {
            Backing::Whole(r) => r.unmap_from_gpus(shared.dev.driver(), &[gpu_id]),
            Backing::Sub(s, _) => {
                let mut sub = shared.suballoc.of(&s.chunk);
                sub.unmap_peer(&shared.dev, &s.chunk, gpu_id)
            }
        }
    }

    /// Unmaps the buffer from its own GPU and maps it again (contents are kept). For a
    /// sub-allocation this remaps its whole block: only call it while the GPU is idle.
    pub fn remap(&self) -> Result<()> {
        let owner = [self.owner_gpu_id()];
        let shared = &self.inner.lease.kfd.shared;
        let sub;
        let raw = match self.backing() {
            Backing::Whole(r) => r,
            Backing::Sub(s, _) => {
                sub = shared.suballoc.of(&s.chunk);
                // A block is freed only once its last chunk is: this buffer holds one.
                sub.block_raw(&s.chunk)
                    .expect("a suballocated buffer's block lives as long as the buffer")
            }
        };
        raw.unmap_from_gpus(shared.dev.driver(), &owner)?;
        raw.map_to_gpus(shared.dev.driver(), &owner)
    }
}

impl Allocation {
    /// Whether the memory is mapped to the GPU with KFD id `gpu_id` (its owner's, without a
    /// lock).
    pub(crate) fn is_mapped_on(&self, gpu_id: u32) -> bool {
        let owner = match &self.backing {
            Some(Backing::Whole(r)) => r.gpu_id,
            Some(Backing::Sub(_, gpu_id)) => *gpu_id,
            None => return false,
        };
        owner == gpu_id
            || self
                .peers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&gpu_id)
    }

    /// GPU ids the memory is mapped to, owner first.
    pub(crate) fn mapped_gpus(&self) -> Vec<u32> {
        let owner = match &self.backing {
            Some(Backing::Whole(r)) => r.gpu_id,
            Some(Backing::Sub(_, gpu_id)) => *gpu_id,
            None => return Vec::new(),
        };
        let peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        std::iter::once(owner)
            .chain(peers.iter().copied())
            .collect()
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        #[cfg(feature = "emu")]
        if let Some(emu) = self.lease.kfd.sanitizing_emulator() {
            match &self.backing {
                Some(Backing::Whole(r)) => emu.untrack_buffer(r.va.addr),
                Some(Backing::Sub(s, _)) => emu.untrack_buffer(s.va),
                None => {}
            }
        }
        if let Some(map) = &self.lease.kfd.shared.buffers {
            match &self.backing {
                Some(Backing::Whole(r)) => map.remove(r.va.addr),
                Some(Backing::Sub(s, _)) => map.remove(s.va),
                None => {}
            }
        }
        let peers = std::mem::take(self.peers.get_mut().unwrap_or_else(|p| p.into_inner()));
        match self.backing.take() {
            Some(Backing::Whole(raw)) => {
                let mut mapped = vec![raw.gpu_id];
                mapped.extend(peers);
                raw.release(&**self.lease.kfd.driver(), &mapped)
            }
            Some(Backing::Sub(SubAllocation { chunk, .. }, _)) => {
                let shared = &self.lease.kfd.shared;
                let mut sub = shared.suballoc.of(&chunk);
                for peer in peers {
                    if let Err(e) = sub.unmap_peer(&shared.dev, &chunk, peer) {
                        log::warn!("kfdrt: dropping peer mapping at free: {e}");
                    }
                }
                sub.free(&shared.dev, chunk);
            }
            None => {}
        }
    }
}

impl TrackedMemory for Buffer {
    fn gpu_address(&self) -> u64 {
        Buffer::gpu_address(self)
    }

    fn size(&self) -> u64 {
        Buffer::size(self)
    }

    fn mapped_gpus(&self) -> Vec<u32> {
        Buffer::mapped_gpus(self)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<()> {
        Buffer::read(self, offset, out)
    }

    fn to_vec(&self) -> Result<Vec<u8>> {
        Buffer::to_vec(self)
    }
}
