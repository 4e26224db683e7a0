//! Hooks on the process's own memory: `munmap` and `mprotect` reach the emulator as the kernel's
//! MMU notifier reaches the driver, before the change (what the GPUs lose goes first) and,
//! for `mprotect`, again after it (what they gain comes last).
//!
//! Only a process that already has an emulated device tells it anything: these calls never
//! create one.

use crate::{real, state};
use core::ffi::{c_int, c_void};
use libc::size_t;
use std::cell::Cell;

thread_local! {
    /// Set while this thread is inside the emulator's notifier: a `munmap` the emulator makes
    /// itself meanwhile is its own business.
    static NOTIFYING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with the emulator, unless there is none in this process or this thread is already
/// telling it something.
fn notify(f: impl FnOnce(&kfd_emu::Emulator)) {
    let Some(sys) = state::current() else {
        return;
    };
    if NOTIFYING.with(|n| n.replace(true)) {
        return;
    }
    f(&sys.emu);
    NOTIFYING.with(|n| n.set(false));
}

/// Overrides `munmap`: the emulator drops its views of the span first.
///
/// # Safety
/// As the C function.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    notify(|emu| emu.host_unmapping(addr as u64, len as u64));
    // SAFETY: forwarded unchanged.
    unsafe { real::munmap(addr, len) }
}

/// Overrides `mprotect`: GPU mappings of the span lose what the new protection takes away
/// before it applies, and gain what it grants after.
///
/// # Safety
/// As the C function.
#[no_mangle]
pub unsafe extern "C" fn mprotect(addr: *mut c_void, len: size_t, prot: c_int) -> c_int {
    notify(|emu| emu.host_protection_changing(addr as u64, len as u64, prot));
    // SAFETY: forwarded unchanged.
    let r = unsafe { real::mprotect(addr, len, prot) };
    notify(|emu| emu.host_protection_changed(addr as u64, len as u64));
    r
}
