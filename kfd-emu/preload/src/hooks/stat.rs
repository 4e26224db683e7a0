//! The `stat` family: device descriptors and paths report character devices with the right
//! numbers; `*at` calls with `AT_EMPTY_PATH` on a device descriptor too.

use super::descriptors::device;
use super::paths::target;
use super::{cstr, set_errno};
use crate::real;
use crate::state::{Target, DRM_MAJOR, KFD_MAJOR};
use core::ffi::{c_char, c_int};
use kfd_sys::Node;

/// The `stat` of an emulated device file: a character device with the node's numbers.
pub(super) fn device_stat(node: Node, buf: *mut libc::stat) -> c_int {
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
pub(super) fn device_statx(node: Node, buf: *mut libc::statx) -> c_int {
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

/// The device `dirfd` is when a `*at` stat call names it by an empty path with
/// `AT_EMPTY_PATH` (how `fstat` is done through `fstatat`/`statx`, Rust's `File::metadata`).
///
/// # Safety
/// `path` must be null or a NUL-terminated string.
unsafe fn empty_path_device(dirfd: c_int, path: *const c_char, flags: c_int) -> Option<Node> {
    if flags & libc::AT_EMPTY_PATH == 0 {
        return None;
    }
    // SAFETY: per the caller's contract.
    match unsafe { cstr(path) } {
        Some(p) if p.is_empty() => device(dirfd).map(|e| e.node),
        _ => None,
    }
}

macro_rules! stat_at_hook {
    ($(fn $name:ident($dirfd:ident, $path:ident, $($arg:ident: $ty:ty),*) -> c_int,
        flags: $flags:ident, device: |$node:ident| $dev:expr;)*) => {
        $(
            /// Overrides the C function of this name.
            ///
            /// # Safety
            /// As the C function.
            #[no_mangle]
            pub unsafe extern "C" fn $name($dirfd: c_int, $path: *const c_char, $($arg: $ty),*) -> c_int {
                // SAFETY: `path` is a C string or null, per the C contract.
                if let Some($node) = unsafe { empty_path_device($dirfd, $path, $flags) } {
                    return $dev;
                }
                // SAFETY: as above; relative paths are never emulated.
                match unsafe { target($path) } {
                    // SAFETY: forwarded unchanged.
                    Target::Real => unsafe { real::$name($dirfd, $path, $($arg),*) },
                    // SAFETY: the rewritten path is absolute, so `dirfd` is ignored by the call.
                    Target::Rewritten(p) => unsafe { real::$name($dirfd, p.as_ptr(), $($arg),*) },
                    Target::Device($node) => $dev,
                }
            }
        )*
    };
}

stat_at_hook! {
    fn fstatat(dirfd, path, buf: *mut libc::stat, flags: c_int) -> c_int,
        flags: flags, device: |n| device_stat(n, buf);
    fn fstatat64(dirfd, path, buf: *mut libc::stat, flags: c_int) -> c_int,
        flags: flags, device: |n| device_stat(n, buf);
    // Rust's std (and newer C code) asks statx, not stat.
    fn statx(dirfd, path, flags: c_int, mask: libc::c_uint, buf: *mut libc::statx) -> c_int,
        flags: flags, device: |n| device_statx(n, buf);
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
    match device(fd) {
        Some(e) => device_stat(e.node, buf),
        // SAFETY: forwarded unchanged.
        None => unsafe { next(fd, buf) },
    }
}

forwarding_hooks! {
    /// Overrides `fstat`.
    fn fstat(fd: c_int, buf: *mut libc::stat) -> c_int => fstat_hook;
    /// Overrides `fstat64`.
    fn fstat64(fd: c_int, buf: *mut libc::stat) -> c_int => fstat_hook;
}

/// The pre-2.33 glibc stat entry points (`__xstat` and friends), which programs built against
/// older glibc call instead of `stat`: on x86-64 their `struct stat` (version 1) is the one
/// `stat` fills, so they are answered by the hooks above.
#[cfg(target_arch = "x86_64")]
mod legacy_stat {
    use core::ffi::{c_char, c_int};

    /// Defines `name(ver, args...)` as `target(args...)`; `ver` is always 1 on x86-64.
    macro_rules! versioned {
        ($($name:ident($($arg:ident: $ty:ty),*) => $target:path;)*) => {
            $(
                /// Overrides the C function of this name (glibc before 2.33).
                ///
                /// # Safety
                /// As the C function.
                #[no_mangle]
                pub unsafe extern "C" fn $name(_ver: c_int, $($arg: $ty),*) -> c_int {
                    // SAFETY: forwarded to the hook for the same call without the version.
                    unsafe { $target($($arg),*) }
                }
            )*
        };
    }

    versioned! {
        __xstat(path: *const c_char, buf: *mut libc::stat) => crate::hooks::stat;
        __xstat64(path: *const c_char, buf: *mut libc::stat) => crate::hooks::stat64;
        __lxstat(path: *const c_char, buf: *mut libc::stat) => crate::hooks::lstat;
        __lxstat64(path: *const c_char, buf: *mut libc::stat) => crate::hooks::lstat64;
        __fxstat(fd: c_int, buf: *mut libc::stat) => crate::hooks::fstat;
        __fxstat64(fd: c_int, buf: *mut libc::stat) => crate::hooks::fstat64;
        __fxstatat(dirfd: c_int, path: *const c_char, buf: *mut libc::stat, flags: c_int)
            => crate::hooks::fstatat;
        __fxstatat64(dirfd: c_int, path: *const c_char, buf: *mut libc::stat, flags: c_int)
            => crate::hooks::fstatat64;
    }
}
