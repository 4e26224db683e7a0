//! The overridden C library functions: by path (`paths`), by descriptor (`descriptors`) and
//! the `stat` family (`stat`).
//!
//! Each one sends emulated paths and descriptors to the emulated system and forwards everything
//! else, unchanged, to the C library. Variadic C functions (`open`, `openat`, `ioctl`, `fcntl`)
//! are defined with their one optional argument as a fixed parameter: on the System V x86-64 and
//! AArch64 Linux ABIs a variadic caller passes it in the same register, and a value the caller
//! did not pass is only forwarded, never interpreted.

use core::ffi::{c_char, c_int, CStr};

pub(crate) fn set_errno(e: c_int) {
    // SAFETY: the calling thread's errno is always writable.
    unsafe { *libc::__errno_location() = e };
}

/// # Safety
/// `p` must be null or a NUL-terminated string.
pub(crate) unsafe fn cstr<'a>(p: *const c_char) -> Option<&'a CStr> {
    // SAFETY: per the caller's contract.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
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

mod descriptors;
mod hsa;
mod memory;
mod paths;
mod stat;

pub use descriptors::*;
pub use memory::*;
pub use paths::*;
pub use stat::*;
