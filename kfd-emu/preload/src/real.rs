//! The C library's own definitions of the functions this library overrides (and ROCr's, for
//! its memory-pool hooks), found with
//! `dlsym(RTLD_NEXT, ...)` on first use and cached.

use core::ffi::{c_char, c_int, c_ulong, c_void, CStr};
use libc::{mode_t, off_t, size_t, ssize_t, DIR, FILE};
use std::sync::atomic::{AtomicPtr, Ordering};

/// One lazily resolved symbol of the next object in the lookup order (libc).
pub(crate) struct NextSymbol {
    name: &'static CStr,
    addr: AtomicPtr<c_void>,
}

impl NextSymbol {
    const fn new(name: &'static CStr) -> NextSymbol {
        NextSymbol {
            name,
            addr: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    /// The symbol's address; aborts the process if the C library lacks it, since every
    /// overridden call would then fail in ways the caller cannot diagnose.
    pub(crate) fn get(&self) -> *mut c_void {
        let p = self.addr.load(Ordering::Acquire);
        if !p.is_null() {
            return p;
        }
        // SAFETY: `name` is a NUL-terminated string; RTLD_NEXT asks for the definition after
        // this library's, which for these names is the C library's.
        let p = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) };
        if p.is_null() {
            let msg = b"kfd-emu-preload: the C library lacks an overridden function\n";
            // SAFETY: writes a static buffer to stderr, then ends the process.
            unsafe {
                libc::write(2, msg.as_ptr().cast(), msg.len());
                libc::abort();
            }
        }
        self.addr.store(p, Ordering::Release);
        p
    }
}

macro_rules! next_fns {
    ($($name:ident : fn($($arg:ident : $ty:ty),*) -> $ret:ty;)*) => {
        $(
            /// Calls the C library's definition.
            ///
            /// # Safety
            /// As the C function.
            pub(crate) unsafe fn $name($($arg: $ty),*) -> $ret {
                static SYMBOL: NextSymbol = NextSymbol::new(
                    match CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()) {
                        Ok(s) => s,
                        Err(_) => panic!("symbol name"),
                    },
                );
                let f: unsafe extern "C" fn($($ty),*) -> $ret =
                    // SAFETY: the symbol has this C signature (glibc's, x86-64/aarch64 Linux),
                    // with variadic tails passed as the one argument they carry.
                    unsafe { core::mem::transmute::<*mut c_void, _>(SYMBOL.get()) };
                // SAFETY: forwarded from the caller.
                unsafe { f($($arg),*) }
            }
        )*
    };
}

next_fns! {
    open: fn(path: *const c_char, flags: c_int, mode: mode_t) -> c_int;
    open64: fn(path: *const c_char, flags: c_int, mode: mode_t) -> c_int;
    openat: fn(dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int;
    openat64: fn(dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int;
    fopen: fn(path: *const c_char, mode: *const c_char) -> *mut FILE;
    fopen64: fn(path: *const c_char, mode: *const c_char) -> *mut FILE;
    opendir: fn(path: *const c_char) -> *mut DIR;
    stat: fn(path: *const c_char, buf: *mut libc::stat) -> c_int;
    stat64: fn(path: *const c_char, buf: *mut libc::stat) -> c_int;
    lstat: fn(path: *const c_char, buf: *mut libc::stat) -> c_int;
    lstat64: fn(path: *const c_char, buf: *mut libc::stat) -> c_int;
    fstatat: fn(dirfd: c_int, path: *const c_char, buf: *mut libc::stat, flags: c_int) -> c_int;
    fstatat64: fn(dirfd: c_int, path: *const c_char, buf: *mut libc::stat, flags: c_int) -> c_int;
    statx: fn(dirfd: c_int, path: *const c_char, flags: c_int, mask: libc::c_uint, buf: *mut libc::statx) -> c_int;
    __open_2: fn(path: *const c_char, flags: c_int) -> c_int;
    __open64_2: fn(path: *const c_char, flags: c_int) -> c_int;
    __openat_2: fn(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int;
    __openat64_2: fn(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int;
    fstat: fn(fd: c_int, buf: *mut libc::stat) -> c_int;
    fstat64: fn(fd: c_int, buf: *mut libc::stat) -> c_int;
    access: fn(path: *const c_char, mode: c_int) -> c_int;
    realpath: fn(path: *const c_char, resolved: *mut c_char) -> *mut c_char;
    readlink: fn(path: *const c_char, buf: *mut c_char, len: size_t) -> ssize_t;
    close: fn(fd: c_int) -> c_int;
    read: fn(fd: c_int, buf: *mut c_void, len: size_t) -> ssize_t;
    write: fn(fd: c_int, buf: *const c_void, len: size_t) -> ssize_t;
    ioctl: fn(fd: c_int, request: c_ulong, arg: *mut c_void) -> c_int;
    mmap: fn(addr: *mut c_void, len: size_t, prot: c_int, flags: c_int, fd: c_int, off: off_t) -> *mut c_void;
    mmap64: fn(addr: *mut c_void, len: size_t, prot: c_int, flags: c_int, fd: c_int, off: off_t) -> *mut c_void;
    munmap: fn(addr: *mut c_void, len: size_t) -> c_int;
    mprotect: fn(addr: *mut c_void, len: size_t, prot: c_int) -> c_int;
    fcntl: fn(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int;
    fcntl64: fn(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int;
    dup: fn(fd: c_int) -> c_int;
    dup2: fn(fd: c_int, new: c_int) -> c_int;
    dup3: fn(fd: c_int, new: c_int, flags: c_int) -> c_int;
    popen: fn(command: *const c_char, mode: *const c_char) -> *mut FILE;
    pclose: fn(stream: *mut FILE) -> c_int;
    hsa_amd_memory_pool_allocate: fn(pool: u64, size: size_t, flags: u32, ptr: *mut *mut c_void) -> c_int;
    hsa_amd_memory_pool_free: fn(ptr: *mut c_void) -> c_int;
}
