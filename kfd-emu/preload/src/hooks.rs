//! The overridden C library functions.
//!
//! Each one sends emulated paths and descriptors to the emulated system and forwards everything
//! else, unchanged, to the C library. Variadic C functions (`open`, `openat`, `ioctl`, `fcntl`)
//! are defined with their one optional argument as a fixed parameter: on the System V x86-64 and
//! AArch64 Linux ABIs a variadic caller passes it in the same register, and a value the caller
//! did not pass is only forwarded, never interpreted.

use crate::state::{self, Target, DRM_MAJOR, KFD_MAJOR};
use crate::{fds, real};
use core::ffi::{c_char, c_int, c_ulong, c_void, CStr};
use kfd_sys::{Driver, IoctlRequest, MapSource, Node};
use libc::{mode_t, off_t, size_t, ssize_t, DIR, FILE};

fn set_errno(e: c_int) {
    // SAFETY: the calling thread's errno is always writable.
    unsafe { *libc::__errno_location() = e };
}

/// # Safety
/// `p` must be null or a NUL-terminated string.
pub(crate) unsafe fn cstr<'a>(p: *const c_char) -> Option<&'a CStr> {
    // SAFETY: per the caller's contract.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
}

/// Classifies `path` if it is absolute (relative paths are never emulated).
///
/// # Safety
/// `path` must be null or a NUL-terminated string.
unsafe fn target(path: *const c_char) -> Target {
    // SAFETY: per the caller's contract.
    match unsafe { cstr(path) } {
        Some(p) if p.to_bytes().first() == Some(&b'/') => state::classify(p),
        _ => Target::Real,
    }
}

/// Opens an emulated device file: an empty memfd stands in as its descriptor.
fn open_device(node: Node, flags: c_int) -> c_int {
    let Some(sys) = state::system() else {
        set_errno(libc::ENOENT);
        return -1;
    };
    let mfd_flags = if flags & libc::O_CLOEXEC != 0 {
        libc::MFD_CLOEXEC
    } else {
        0
    };
    // SAFETY: a static NUL-terminated name; memfd_create is not overridden.
    let fd = unsafe { libc::memfd_create(c"kfd-emu-device".as_ptr(), mfd_flags) };
    if fd < 0 {
        return -1;
    }
    if !fds::insert(fd, node) {
        // SAFETY: closes the memfd just created.
        unsafe { real::close(fd) };
        set_errno(libc::EMFILE);
        return -1;
    }
    if let Node::Render(minor) = node {
        let _ = sys.emu.attach_render_fd(minor, fd, None);
    }
    log::debug!("kfd-emu-preload: open {node:?} -> fd {fd}");
    fd
}

/// Registers `new` as another descriptor of the open file `old_fd` (of `old`) is, after a dup.
fn dup_device(old: Node, old_fd: c_int, new: c_int) -> c_int {
    if new < 0 {
        return new;
    }
    if !fds::insert(new, old) {
        // SAFETY: closes the descriptor just created by dup.
        unsafe { real::close(new) };
        set_errno(libc::EMFILE);
        return -1;
    }
    if let (Node::Render(minor), Some(sys)) = (old, state::system()) {
        let _ = sys.emu.attach_render_fd(minor, new, Some(old_fd));
    }
    new
}

/// Forgets `fd` if it was a device descriptor (before it is closed or replaced).
fn forget(fd: c_int) {
    if let Some(node) = fds::remove(fd) {
        log::debug!("kfd-emu-preload: close {node:?} fd {fd}");
        if let (Node::Render(_), Some(sys)) = (node, state::system()) {
            sys.emu.detach_render_fd(fd);
        }
    }
}

/// The `stat` of an emulated device file: a character device with the node's numbers.
fn device_stat(node: Node, buf: *mut libc::stat) -> c_int {
    if buf.is_null() {
        set_errno(libc::EFAULT);
        return -1;
    }
    let rdev = match node {
        Node::Kfd => libc::makedev(KFD_MAJOR, 0),
        Node::Render(minor) => libc::makedev(DRM_MAJOR, minor),
    };
    // SAFETY: `buf` is a writable `struct stat` (the caller's contract); all-zero is valid.
    unsafe {
        let st: &mut libc::stat = &mut *buf;
        *st = core::mem::zeroed();
        st.st_mode = libc::S_IFCHR | 0o666;
        st.st_rdev = rdev;
        st.st_nlink = 1;
        st.st_blksize = 4096;
        st.st_dev = libc::makedev(0, 6);
    }
    0
}

/// The `statx` of an emulated device file (see [`device_stat`]).
fn device_statx(node: Node, buf: *mut libc::statx) -> c_int {
    if buf.is_null() {
        set_errno(libc::EFAULT);
        return -1;
    }
    let (major, minor) = match node {
        Node::Kfd => (KFD_MAJOR, 0),
        Node::Render(minor) => (DRM_MAJOR, minor),
    };
    // SAFETY: `buf` is a writable `struct statx` (the caller's contract); all-zero is valid.
    unsafe {
        let st: &mut libc::statx = &mut *buf;
        *st = core::mem::zeroed();
        st.stx_mask = libc::STATX_BASIC_STATS;
        st.stx_mode = (libc::S_IFCHR | 0o666) as u16;
        st.stx_nlink = 1;
        st.stx_blksize = 4096;
        st.stx_rdev_major = major;
        st.stx_rdev_minor = minor;
        st.stx_dev_minor = 6;
    }
    0
}

macro_rules! path_hook {
    ($(fn $name:ident($path:ident $(, $arg:ident : $ty:ty)*) -> $ret:ty, device: |$node:ident| $dev:expr;)*) => {
        $(
            /// Overrides the C function of this name.
            ///
            /// # Safety
            /// As the C function.
            #[no_mangle]
            pub unsafe extern "C" fn $name($path: *const c_char $(, $arg: $ty)*) -> $ret {
                // SAFETY: `path` is a C string or null, per the C contract.
                match unsafe { target($path) } {
                    // SAFETY: forwarded unchanged.
                    Target::Real => unsafe { real::$name($path $(, $arg)*) },
                    // SAFETY: the rewritten path is a C string that lives through the call.
                    Target::Rewritten(p) => unsafe { real::$name(p.as_ptr() $(, $arg)*) },
                    Target::Device($node) => $dev,
                }
            }
        )*
    };
}

path_hook! {
    fn open(path, flags: c_int, mode: mode_t) -> c_int, device: |n| open_device(n, flags);
    fn open64(path, flags: c_int, mode: mode_t) -> c_int, device: |n| open_device(n, flags);
    // _FORTIFY_SOURCE's checked opens.
    fn __open_2(path, flags: c_int) -> c_int, device: |n| open_device(n, flags);
    fn __open64_2(path, flags: c_int) -> c_int, device: |n| open_device(n, flags);
    fn stat(path, buf: *mut libc::stat) -> c_int, device: |n| device_stat(n, buf);
    fn stat64(path, buf: *mut libc::stat) -> c_int, device: |n| device_stat(n, buf);
    fn lstat(path, buf: *mut libc::stat) -> c_int, device: |n| device_stat(n, buf);
    fn lstat64(path, buf: *mut libc::stat) -> c_int, device: |n| device_stat(n, buf);
    fn access(path, mode: c_int) -> c_int, device: |_n| 0;
    fn fopen(path, mode: *const c_char) -> *mut FILE, device: |_n| {
        // Device files are not read through stdio.
        set_errno(libc::EACCES);
        core::ptr::null_mut()
    };
    fn fopen64(path, mode: *const c_char) -> *mut FILE, device: |_n| {
        set_errno(libc::EACCES);
        core::ptr::null_mut()
    };
    fn opendir(path) -> *mut DIR, device: |_n| {
        set_errno(libc::ENOTDIR);
        core::ptr::null_mut()
    };
    fn realpath(path, resolved: *mut c_char) -> *mut c_char, device: |_n| {
        // SAFETY: forwarded: the device path is already canonical, and realpath of a missing
        // file fails as it would without the device.
        unsafe { real::realpath(path, resolved) }
    };
    fn readlink(path, buf: *mut c_char, len: size_t) -> ssize_t, device: |_n| {
        set_errno(libc::EINVAL);
        -1
    };
}

macro_rules! at_hook {
    ($(fn $name:ident($dirfd:ident, $path:ident $(, $arg:ident : $ty:ty)*) -> $ret:ty, device: |$node:ident| $dev:expr;)*) => {
        $(
            /// Overrides the C function of this name.
            ///
            /// # Safety
            /// As the C function.
            #[no_mangle]
            pub unsafe extern "C" fn $name($dirfd: c_int, $path: *const c_char $(, $arg: $ty)*) -> $ret {
                // SAFETY: `path` is a C string or null, per the C contract; relative paths are
                // never emulated, so the directory descriptor does not matter.
                match unsafe { target($path) } {
                    // SAFETY: forwarded unchanged.
                    Target::Real => unsafe { real::$name($dirfd, $path $(, $arg)*) },
                    // SAFETY: the rewritten path is absolute, so `dirfd` is ignored by the call.
                    Target::Rewritten(p) => unsafe { real::$name($dirfd, p.as_ptr() $(, $arg)*) },
                    Target::Device($node) => $dev,
                }
            }
        )*
    };
}

at_hook! {
    fn openat(dirfd, path, flags: c_int, mode: mode_t) -> c_int, device: |n| open_device(n, flags);
    fn openat64(dirfd, path, flags: c_int, mode: mode_t) -> c_int, device: |n| open_device(n, flags);
    fn fstatat(dirfd, path, buf: *mut libc::stat, flags: c_int) -> c_int, device: |n| device_stat(n, buf);
    fn fstatat64(dirfd, path, buf: *mut libc::stat, flags: c_int) -> c_int, device: |n| device_stat(n, buf);
    fn __openat_2(dirfd, path, flags: c_int) -> c_int, device: |n| open_device(n, flags);
    fn __openat64_2(dirfd, path, flags: c_int) -> c_int, device: |n| open_device(n, flags);
    // Rust's std (and newer C code) asks statx, not stat.
    fn statx(dirfd, path, flags: c_int, mask: libc::c_uint, buf: *mut libc::statx) -> c_int, device: |n| device_statx(n, buf);
}

/// `fstat`: a device descriptor reports its character device.
///
/// # Safety
/// As `fstat(2)`.
unsafe fn fstat_hook(
    fd: c_int,
    buf: *mut libc::stat,
    next: unsafe fn(c_int, *mut libc::stat) -> c_int,
) -> c_int {
    match fds::lookup(fd) {
        Some(node) => device_stat(node, buf),
        // SAFETY: forwarded unchanged.
        None => unsafe { next(fd, buf) },
    }
}

/// Overrides `close`.
///
/// # Safety
/// As the C function.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    forget(fd);
    // SAFETY: forwarded unchanged (a device descriptor is a memfd).
    unsafe { real::close(fd) }
}

/// Overrides `read`: device files have no `read` (KFD and DRM answer EINVAL).
///
/// # Safety
/// As the C function.
#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, len: size_t) -> ssize_t {
    if fds::lookup(fd).is_some() {
        set_errno(libc::EINVAL);
        return -1;
    }
    // SAFETY: forwarded unchanged.
    unsafe { real::read(fd, buf, len) }
}

/// Overrides `ioctl`: requests on device descriptors go to the emulator.
///
/// # Safety
/// As the C function.
#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, request: c_ulong, arg: *mut c_void) -> c_int {
    let Some(node) = fds::lookup(fd) else {
        // SAFETY: forwarded unchanged.
        return unsafe { real::ioctl(fd, request, arg) };
    };
    let Some(sys) = state::system() else {
        set_errno(libc::ENODEV);
        return -1;
    };
    if !sys.in_owner_process() {
        log::warn!("kfd-emu-preload: a device descriptor inherited across fork() was used");
        set_errno(libc::EBADF);
        return -1;
    }
    // ioctl numbers are 32 bits; glibc's prototype widens them.
    let req = IoctlRequest::from_raw(request as u32);
    // SAFETY: the caller passes what the request needs, as for the real driver.
    let result = unsafe { sys.emu.ioctl(node, req, arg) };
    if log::log_enabled!(log::Level::Trace) {
        let name = match node {
            Node::Kfd => kfd_sys::ioctl::kfd_request_name(req.nr()),
            Node::Render(_) => None,
        };
        log::trace!(
            "kfd-emu-preload: ioctl {:#x} ({}) on {node:?}: {result:?}",
            req.raw(),
            name.unwrap_or("-")
        );
    }
    match result {
        Ok(v) => v,
        Err(e) => {
            log::debug!(
                "kfd-emu-preload: ioctl {:#x} on {node:?} failed: {e}",
                req.raw()
            );
            set_errno(e.raw());
            -1
        }
    }
}

/// # Safety
/// As `mmap(2)`.
unsafe fn mmap_hook(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
    next: unsafe fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void,
) -> *mut c_void {
    let Some(node) = fds::lookup(fd) else {
        // SAFETY: forwarded unchanged.
        return unsafe { next(addr, len, prot, flags, fd, off) };
    };
    let Some(sys) = state::system() else {
        set_errno(libc::ENODEV);
        return libc::MAP_FAILED;
    };
    if !sys.in_owner_process() {
        set_errno(libc::EBADF);
        return libc::MAP_FAILED;
    }
    // SAFETY: forwarded from the caller, who owns `addr..addr+len` if it passes MAP_FIXED.
    let r = unsafe {
        sys.emu
            .mmap(MapSource::File(node), addr, len, prot, flags, off as u64)
    };
    match r {
        Ok(p) => p,
        Err(e) => {
            log::debug!("kfd-emu-preload: mmap of {node:?} offset {off:#x} failed: {e}");
            set_errno(e.raw());
            libc::MAP_FAILED
        }
    }
}

/// # Safety
/// As `fcntl(2)`.
unsafe fn fcntl_hook(
    fd: c_int,
    cmd: c_int,
    arg: c_ulong,
    next: unsafe fn(c_int, c_int, c_ulong) -> c_int,
) -> c_int {
    // SAFETY: forwarded unchanged.
    let r = unsafe { next(fd, cmd, arg) };
    if matches!(cmd, libc::F_DUPFD | libc::F_DUPFD_CLOEXEC) {
        if let Some(node) = fds::lookup(fd) {
            return dup_device(node, fd, r);
        }
    }
    r
}

/// Overrides `dup`.
///
/// # Safety
/// As the C function.
#[no_mangle]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    // SAFETY: forwarded unchanged.
    let r = unsafe { real::dup(fd) };
    match fds::lookup(fd) {
        Some(node) => dup_device(node, fd, r),
        None => r,
    }
}

/// Overrides `dup2`.
///
/// # Safety
/// As the C function.
#[no_mangle]
pub unsafe extern "C" fn dup2(fd: c_int, new: c_int) -> c_int {
    if fd != new {
        forget(new);
    }
    // SAFETY: forwarded unchanged.
    let r = unsafe { real::dup2(fd, new) };
    match fds::lookup(fd) {
        Some(node) if r >= 0 && fd != new => dup_device(node, fd, r),
        _ => r,
    }
}

/// Overrides `dup3`.
///
/// # Safety
/// As the C function.
#[no_mangle]
pub unsafe extern "C" fn dup3(fd: c_int, new: c_int, flags: c_int) -> c_int {
    if fd != new {
        forget(new);
    }
    // SAFETY: forwarded unchanged.
    let r = unsafe { real::dup3(fd, new, flags) };
    match fds::lookup(fd) {
        Some(node) if r >= 0 => dup_device(node, fd, r),
        _ => r,
    }
}

/// Exports the C function `$name` as `$hook` with the C library's `$name` as its fallback, for
/// the functions glibc exports twice (with and without the `64` suffix).
macro_rules! forwarding_hooks {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty => $hook:ident;)*) => {
        $(
            $(#[$doc])*
            ///
            /// # Safety
            /// As the C function.
            #[no_mangle]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                // SAFETY: forwarded from the caller.
                unsafe { $hook($($arg,)* real::$name) }
            }
        )*
    };
}

forwarding_hooks! {
    /// Overrides `fstat`.
    fn fstat(fd: c_int, buf: *mut libc::stat) -> c_int => fstat_hook;
    /// Overrides `fstat64`.
    fn fstat64(fd: c_int, buf: *mut libc::stat) -> c_int => fstat_hook;
    /// Overrides `mmap`: mappings of device descriptors are made by the emulator.
    fn mmap(addr: *mut c_void, len: size_t, prot: c_int, flags: c_int, fd: c_int, off: off_t)
        -> *mut c_void => mmap_hook;
    /// Overrides `mmap64`.
    fn mmap64(addr: *mut c_void, len: size_t, prot: c_int, flags: c_int, fd: c_int, off: off_t)
        -> *mut c_void => mmap_hook;
    /// Overrides `fcntl`: duplicates of device descriptors stay device descriptors.
    fn fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int => fcntl_hook;
    /// Overrides `fcntl64`.
    fn fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int => fcntl_hook;
}
