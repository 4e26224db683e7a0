//! The driver's `get_user`/`put_user`: reads and writes of the process's memory that fail, as
//! the kernel's do, where the process has no mapping with that access (a VA reserved
//! `PROT_NONE`, VRAM nobody mapped for the CPU, a read-only page written), instead of
//! faulting the emulator. `process_vm_readv`/`process_vm_writev` on the process itself walk its
//! page tables with the same permission checks; where a seccomp filter refuses them (some
//! container profiles), the bytes go through a pipe instead, whose `write` and `read` check the
//! user address the same way (EFAULT).

/// Reads `buf.len()` bytes at user address `addr`; false where the process cannot read them.
fn read(addr: u64, buf: &mut [u8]) -> bool {
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: `local` is a live buffer of `iov_len` bytes; the kernel checks `remote` against
    // the process's mappings and fails (EFAULT) rather than touching what is not mapped.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    if n < 0 && refused() {
        return through_pipe(addr as *const u8, buf.as_mut_ptr(), buf.len());
    }
    n == buf.len() as isize
}

/// Whether the last `process_vm_*` call was refused as a system call (a seccomp filter, a
/// kernel without it), not for the address.
fn refused() -> bool {
    matches!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::EPERM | libc::ENOSYS)
    )
}

/// Copies `len` bytes from `from` to `to` through a pipe: `write` reads `from` and `read`
/// writes `to`, each as the kernel's user copies do, failing (EFAULT) where the process has no
/// such access. False on any failure.
fn through_pipe(from: *const u8, to: *mut u8, len: usize) -> bool {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid out-array of two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return false;
    }
    // A pipe holds at least a page: the few bytes of a header or word fit without blocking.
    // SAFETY: the kernel checks both user ranges and answers EFAULT instead of faulting.
    let ok = unsafe {
        libc::write(fds[1], from.cast(), len) == len as isize
            && libc::read(fds[0], to.cast(), len) == len as isize
    };
    // SAFETY: the two descriptors were made above and are closed once.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    ok
}

/// Writes `data` at user address `addr`; false where the process cannot write there.
fn write(addr: u64, data: &[u8]) -> bool {
    let local = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: `local` is read only; the kernel writes `remote` only where the process has a
    // writable mapping (EFAULT otherwise).
    let n = unsafe { libc::process_vm_writev(libc::getpid(), &local, 1, &remote, 1, 0) };
    if n < 0 && refused() {
        return through_pipe(data.as_ptr(), addr as *mut u8, data.len());
    }
    n == data.len() as isize
}

/// `get_user` of a u64: `None` where the process cannot read it (the kernel's `-EFAULT`).
pub(crate) fn get_u64(addr: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    read(addr, &mut b).then(|| u64::from_le_bytes(b))
}

/// `get_user` of a u32.
pub(crate) fn get_u32(addr: u64) -> Option<u32> {
    let mut b = [0u8; 4];
    read(addr, &mut b).then(|| u32::from_le_bytes(b))
}

/// `put_user` of a u64: false where the process cannot write it.
pub(crate) fn put_u64(addr: u64, v: u64) -> bool {
    write(addr, &v.to_le_bytes())
}

/// `copy_to_user`: false where the process cannot write all of `data` at `addr`.
pub(crate) fn put_bytes(addr: u64, data: &[u8]) -> bool {
    write(addr, data)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_and_writes_what_the_process_maps_and_refuses_the_rest() {
        let mut word = 5u64;
        let at = &mut word as *mut u64 as u64;
        assert_eq!(super::get_u64(at), Some(5));
        assert!(super::put_u64(at, 9));
        // SAFETY: `word` is a live local written through the kernel above.
        assert_eq!(unsafe { std::ptr::read_volatile(&word) }, 9);
        // A reserved, inaccessible page: the kernel refuses it.
        // SAFETY: a fresh anonymous PROT_NONE mapping, unmapped below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        assert_eq!(super::get_u64(p as u64), None);
        assert!(!super::put_u64(p as u64, 1));
        // The pipe path a seccomp filter falls back to refuses it too, and copies what it may.
        let mut out = [0u8; 8];
        assert!(!super::through_pipe(p as *const u8, out.as_mut_ptr(), 8));
        assert!(!super::through_pipe(out.as_ptr(), p as *mut u8, 8));
        let src = 0x1122_3344_5566_7788u64.to_le_bytes();
        assert!(super::through_pipe(src.as_ptr(), out.as_mut_ptr(), 8));
        assert_eq!(out, src);
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(p, 4096) };
    }
}
