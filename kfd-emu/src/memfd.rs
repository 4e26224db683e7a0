//! Shared memory files backing emulated buffers: one `memfd` per buffer, mapped by the emulator
//! (for its engines) and by the runtime at the buffer's VA (for the CPU), so both see the same pages.

use kfd_sys::Errno;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A memfd and the emulator's own mapping of it. Unmapped and closed on drop.
#[derive(Debug)]
pub(crate) struct SharedMem {
    fd: OwnedFd,
    host: usize,
    len: usize,
}

impl SharedMem {
    /// Creates `len` bytes (sparse: pages cost memory only when touched).
    pub(crate) fn new(len: u64) -> Result<SharedMem, Errno> {
        let len = usize::try_from(len).map_err(|_| Errno::ENOMEM)?;
        // SAFETY: the name is a NUL-terminated literal; memfd_create returns a new fd or -1.
        let fd = unsafe { libc::memfd_create(c"kfd-emu-bo".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(Errno::last());
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: plain syscall on our own fd.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(Errno::ENOMEM);
        }
        // SAFETY: a new shared mapping of our own file; no MAP_FIXED, so nothing is replaced.
        let host = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_NORESERVE,
                fd.as_raw_fd(),
                0,
            )
        };
        if host == libc::MAP_FAILED {
            return Err(Errno::ENOMEM);
        }
        Ok(SharedMem {
            fd,
            host: host as usize,
            len,
        })
    }

    /// The emulator's pointer to the first byte.
    pub(crate) fn host(&self) -> *mut u8 {
        self.host as *mut u8
    }

    /// A new descriptor of the same memory (what a dma-buf export hands out).
    pub(crate) fn dup(&self, cloexec: bool) -> Result<OwnedFd, Errno> {
        let cmd = if cloexec {
            libc::F_DUPFD_CLOEXEC
        } else {
            libc::F_DUPFD
        };
        // SAFETY: duplicating our own open descriptor.
        let fd = unsafe { libc::fcntl(self.fd.as_raw_fd(), cmd, 0) };
        if fd < 0 {
            return Err(Errno::last());
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Maps `len` bytes from `offset` of the file at `addr` for the caller (the runtime's CPU view).
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
        // SAFETY: forwarded to the caller; the file range exists (checked above).
        let p = unsafe {
            libc::mmap(
                addr,
                len,
                prot,
                flags | libc::MAP_SHARED,
                self.fd.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            Err(Errno::last())
        } else {
            Ok(p)
        }
    }
}

impl Drop for SharedMem {
    fn drop(&mut self) {
        // SAFETY: our own mapping, no longer referenced (buffers are dropped after unmapping
        // from every GPU page table).
        unsafe { libc::munmap(self.host as *mut libc::c_void, self.len) };
    }
}
