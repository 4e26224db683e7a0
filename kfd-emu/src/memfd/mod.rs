//! Shared memory backing emulated buffers, mapped by the emulator (for its engines) and by the
//! runtime at the buffer's VA (for the CPU), so both see the same pages.
//!
//! A buffer of up to [`arena::POOLED_MAX`] bytes is a range of a pooled file ([`arena`]): the
//! kernel's buffers cost no descriptor, and neither may the emulator's, or a process that holds
//! more buffers than its `RLIMIT_NOFILE` would fail with `EMFILE` where the driver does not.
//! Larger buffers have a file of their own. A dma-buf export needs a file that is the buffer
//! alone (its importers map it from offset 0 and tell buffers apart by their file), so an
//! exported pooled buffer first moves to its own file ([`SharedMem::dup`]).

mod arena;
mod maps;

use arena::Arena;
use kfd_sys::Errno;
use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Where a buffer's bytes live.
#[derive(Debug)]
enum Place {
    /// A range of a pooled file.
    Pooled { arena: Arc<Arena>, offset: u64 },
    /// A file of its own. `was` is the arena range it moved from, still holding the emulator's
    /// view address (given back when the buffer drops).
    Own {
        fd: OwnedFd,
        was: Option<(Arc<Arena>, u64)>,
    },
}

/// A buffer's memory and the emulator's mapping of it, at an address that never changes.
#[derive(Debug)]
pub(crate) struct SharedMem {
    host: usize,
    len: usize,
    place: Mutex<Place>,
    /// The runtime mapped it for the CPU at least once.
    caller_mapped: AtomicBool,
}

/// A new sparse memory file of `len` bytes.
fn create_file(len: u64, name: &CStr) -> Result<OwnedFd, Errno> {
    // SAFETY: the name is NUL-terminated; memfd_create returns a new fd or -1.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(Errno::last());
    }
    // SAFETY: `fd` was just created and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let len = libc::off_t::try_from(len).map_err(|_| Errno::ENOMEM)?;
    // SAFETY: plain syscall on our own fd.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len) } != 0 {
        return Err(Errno::ENOMEM);
    }
    Ok(fd)
}

/// Maps all `len` bytes of `fd` read-write and shared, at `at` (replacing what is there) or
/// where the kernel chooses.
fn map_file(
    fd: BorrowedFd<'_>,
    len: usize,
    offset: u64,
    at: Option<usize>,
) -> Result<usize, Errno> {
    let (addr, fixed) = match at {
        Some(a) => (a as *mut libc::c_void, libc::MAP_FIXED),
        None => (std::ptr::null_mut(), 0),
    };
    // SAFETY: a shared mapping of our own file. With MAP_FIXED, `at` is a range of the emulator's
    // own mapping of this buffer (the callers' contract), which this replaces.
    let host = unsafe {
        libc::mmap(
            addr,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_NORESERVE | fixed,
            fd.as_raw_fd(),
            offset as libc::off_t,
        )
    };
    if host == libc::MAP_FAILED {
        return Err(Errno::ENOMEM);
    }
    Ok(host as usize)
}

fn map_whole(fd: &OwnedFd, len: usize) -> Result<usize, Errno> {
    map_file(fd.as_fd(), len, 0, None)
}

/// Zeroes a range of a memory file and gives its pages back to the host.
fn punch_hole(fd: BorrowedFd<'_>, offset: u64, len: u64) {
    // SAFETY: plain syscall on a borrowed open fd; the range is the caller's own.
    let r = unsafe {
        libc::fallocate(
            fd.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            offset as libc::off_t,
            len as libc::off_t,
        )
    };
    if r != 0 {
        log::error!(
            "kfd-emu: cannot release {len:#x} bytes of a memory file: {}",
            Errno::last()
        );
    }
}

impl SharedMem {
    /// Creates `len` bytes, zeroed (sparse: pages cost memory only when touched).
    pub(crate) fn new(len: u64) -> Result<SharedMem, Errno> {
        let size = usize::try_from(len).map_err(|_| Errno::ENOMEM)?;
        let pooled = if len <= arena::POOLED_MAX {
            // A process whose address space is capped (`ulimit -v`) may have no room for an
            // arena's mapping: its buffers then get files of their own, as large ones do.
            arena::allocate(len)
                .inspect_err(|e| log::debug!("kfd-emu: no pooled memory ({e}); a file of its own"))
                .ok()
        } else {
            None
        };
        let (host, place) = match pooled {
            Some((arena, offset)) => (arena.host(offset), Place::Pooled { arena, offset }),
            None => {
                let fd = create_file(len, c"kfd-emu-bo")?;
                (map_whole(&fd, size)?, Place::Own { fd, was: None })
            }
        };
        Ok(SharedMem {
            host,
            len: size,
            place: Mutex::new(place),
            caller_mapped: AtomicBool::new(false),
        })
    }

    fn place(&self) -> MutexGuard<'_, Place> {
        self.place.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The emulator's pointer to the first byte.
    pub(crate) fn host(&self) -> *mut u8 {
        self.host as *mut u8
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// A new descriptor of this memory alone (what a dma-buf export hands out). A pooled
    /// buffer moves to a file of its own first (see [`relocate`](Self::relocate)).
    pub(crate) fn dup(&self, cloexec: bool) -> Result<OwnedFd, Errno> {
        let mut place = self.place();
        if let Place::Pooled { .. } = *place {
            self.relocate(&mut place)?;
        }
        let Place::Own { fd, .. } = &*place else {
            return Err(Errno::EIO);
        };
        let cmd = if cloexec {
            libc::F_DUPFD_CLOEXEC
        } else {
            libc::F_DUPFD
        };
        // SAFETY: duplicating our own open descriptor.
        let fd = unsafe { libc::fcntl(fd.as_raw_fd(), cmd, 0) };
        if fd < 0 {
            return Err(Errno::last());
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Moves a pooled buffer to a file of its own: its bytes are copied (only the pages that
    /// hold data), and the emulator's view and every CPU mapping of the range are remapped in
    /// place, with their protection and fork and dump advice, to the new file.
    ///
    /// A write racing the move (a GPU engine or another CPU thread writing the buffer while it
    /// is exported) can be lost; the driver has no such window. Exports are made of buffers at
    /// rest in practice (IPC handles, interop), and this is written in kfd-emu's docs.
    fn relocate(&self, place: &mut Place) -> Result<(), Errno> {
        let Place::Pooled { arena, offset } = &*place else {
            return Ok(());
        };
        let (arena, offset) = (arena.clone(), *offset);
        let len = self.len as u64;
        let fd = create_file(len, c"kfd-emu-bo")?;
        copy_data(arena.fd(), offset, fd.as_fd(), len)?;
        let mut moved = Vec::new();
        if self.caller_mapped.load(Ordering::Acquire) {
            let end = offset + len;
            for m in maps::mappings(arena.id(), arena.own_mapping())? {
                let m_end = m.offset + (m.end - m.start) as u64;
                if m_end <= offset || m.offset >= end {
                    continue;
                }
                // The part of this mapping that shows the buffer.
                let from = m.offset.max(offset);
                let to = m_end.min(end);
                let addr = m.start + (from - m.offset) as usize;
                moved.push((addr, (to - from) as usize, from - offset, m));
            }
        }
        map_file(fd.as_fd(), self.len, 0, Some(self.host))?;
        for (addr, n, file_offset, m) in moved {
            // SAFETY: `addr..addr+n` is the process's mapping of this buffer's arena range
            // (read from smaps under the buffer's lock, which every new CPU mapping of it
            // takes); it is replaced by the same bytes of the new file.
            let p = unsafe {
                libc::mmap(
                    addr as *mut libc::c_void,
                    n,
                    m.prot,
                    libc::MAP_SHARED | libc::MAP_FIXED,
                    fd.as_raw_fd(),
                    file_offset as libc::off_t,
                )
            };
            if p == libc::MAP_FAILED {
                log::error!(
                    "kfd-emu: a CPU mapping at {addr:#x} of an exported buffer could not move: {}",
                    Errno::last()
                );
                continue;
            }
            for (set, advice) in [
                (m.dont_fork, libc::MADV_DONTFORK),
                (m.dont_dump, libc::MADV_DONTDUMP),
            ] {
                if set {
                    // SAFETY: advice on the mapping just made.
                    unsafe { libc::madvise(p, n, advice) };
                }
            }
        }
        // The arena's pages are free now; the address range stays the buffer's view.
        arena.punch(offset, arena::footprint(len));
        *place = Place::Own {
            fd,
            was: Some((arena, offset)),
        };
        Ok(())
    }

    /// Maps `len` bytes from `offset` of the memory at `addr` for the caller (the runtime's CPU
    /// view).
    ///
    /// # Safety
    /// As `mmap(2)` with the caller's flags (MAP_FIXED replaces what is at `addr`).
    pub(crate) unsafe fn map_for_caller(
        &self,
        addr: *mut libc::c_void,
        len: usize,
        prot: i32,
        flags: i32,
        offset: u64,
    ) -> Result<*mut libc::c_void, Errno> {
        if offset
            .checked_add(len as u64)
            .is_none_or(|end| end > self.len as u64)
        {
            return Err(Errno::EINVAL);
        }
        let place = self.place();
        let (fd, base) = match &*place {
            Place::Pooled { arena, offset } => (arena.fd(), *offset),
            Place::Own { fd, .. } => (fd.as_fd(), 0),
        };
        // Before mapping: a scan for this buffer's mappings must not miss this one.
        self.caller_mapped.store(true, Ordering::Release);
        // SAFETY: forwarded to the caller; the file range exists (checked above).
        let p = unsafe {
            libc::mmap(
                addr,
                len,
                prot,
                flags | libc::MAP_SHARED,
                fd.as_raw_fd(),
                (base + offset) as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            Err(Errno::last())
        } else {
            Ok(p)
        }
    }
}

/// Copies the data extents of `len` bytes at `from_offset` of `from` to the start of `to`,
/// leaving holes holes (a fresh buffer stays sparse).
fn copy_data(
    from: BorrowedFd<'_>,
    from_offset: u64,
    to: BorrowedFd<'_>,
    len: u64,
) -> Result<(), Errno> {
    let end = from_offset + len;
    let mut at = from_offset;
    while at < end {
        // SAFETY: lseek on a borrowed open fd.
        let data = unsafe { libc::lseek(from.as_raw_fd(), at as libc::off_t, libc::SEEK_DATA) };
        if data < 0 || data as u64 >= end {
            break; // ENXIO: no data past `at`.
        }
        // SAFETY: as above.
        let hole = unsafe { libc::lseek(from.as_raw_fd(), data, libc::SEEK_HOLE) };
        let stop = if hole < 0 {
            end
        } else {
            (hole as u64).min(end)
        };
        let mut src = data;
        let mut dst = data - from_offset as libc::off_t;
        let mut left = (stop - data as u64) as usize;
        while left > 0 {
            // SAFETY: both fds are open; the offsets are locals the call advances.
            let n = unsafe {
                libc::copy_file_range(
                    from.as_raw_fd(),
                    &mut src,
                    to.as_raw_fd(),
                    &mut dst,
                    left,
                    0,
                )
            };
            if n <= 0 {
                return Err(if n < 0 { Errno::last() } else { Errno::EIO });
            }
            left -= n as usize;
        }
        at = stop;
    }
    Ok(())
}

impl Drop for SharedMem {
    fn drop(&mut self) {
        // Buffers drop after they are unmapped from every GPU page table: no engine reads this
        // memory any more.
        let caller_mapped = self.caller_mapped.load(Ordering::Acquire);
        let len = self.len;
        match self.place.get_mut().unwrap_or_else(|p| p.into_inner()) {
            Place::Pooled { arena, offset } => {
                arena.give_back(*offset, arena::footprint(len as u64), caller_mapped)
            }
            Place::Own {
                was: Some((arena, offset)),
                ..
            } => {
                // The view's addresses go back to the arena's mapping before the range does.
                // Its bytes moved with the buffer, so no CPU mapping reaches the range.
                if map_file(arena.fd(), len, *offset, Some(self.host)).is_ok() {
                    arena.give_back(*offset, arena::footprint(len as u64), false);
                }
            }
            Place::Own { was: None, .. } => {
                // SAFETY: our own mapping, no longer referenced.
                unsafe { libc::munmap(self.host as *mut libc::c_void, len) };
            }
        }
    }
}
