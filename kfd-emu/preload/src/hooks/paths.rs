//! Hooks that take a path: emulated device files open as device descriptors, emulated sysfs
//! paths are rewritten into the private tree, everything else is forwarded.

use super::cstr;
use super::descriptors::open_device;
use super::set_errno;
use super::stat::device_stat;
use crate::real;
use crate::state::{self, Target};
use core::ffi::{c_char, c_int};
use kfd_sys::Node;
use libc::{mode_t, size_t, ssize_t, DIR, FILE};

/// Classifies `path` if it is absolute (relative paths are never emulated).
///
/// # Safety
/// `path` must be null or a NUL-terminated string.
pub(super) unsafe fn target(path: *const c_char) -> Target {
    // SAFETY: per the caller's contract.
    match unsafe { cstr(path) } {
        Some(p) if p.to_bytes().first() == Some(&b'/') => state::classify(p),
        _ => Target::Real,
    }
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
    fn realpath(path, resolved: *mut c_char) -> *mut c_char, device: |n| device_realpath(n, resolved);
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
    fn __openat_2(dirfd, path, flags: c_int) -> c_int, device: |n| open_device(n, flags);
    fn __openat64_2(dirfd, path, flags: c_int) -> c_int, device: |n| open_device(n, flags);
}

/// `realpath` of a device path: the path as the kernel names it (it exists, as `stat` says).
fn device_realpath(node: Node, resolved: *mut c_char) -> *mut c_char {
    let name = match node {
        Node::Kfd => "/dev/kfd".to_owned(),
        Node::Render(minor) => format!("/dev/dri/renderD{minor}"),
    };
    let Ok(c) = std::ffi::CString::new(name) else {
        set_errno(libc::EINVAL);
        return core::ptr::null_mut();
    };
    if resolved.is_null() {
        // SAFETY: `c` is a C string; the caller frees the copy with free(), as realpath's.
        return unsafe { libc::strdup(c.as_ptr()) };
    }
    // SAFETY: `resolved` holds PATH_MAX bytes (realpath's contract) and the name is shorter.
    unsafe { libc::strcpy(resolved, c.as_ptr()) }
}
