//! Hooks on ROCr's memory-pool allocator, for kfd-emu's sanitizer: every allocation a HIP or
//! HSA program makes through `hsa_amd_memory_pool_allocate` is registered as a buffer of the
//! size asked for, so an overrun into the next allocation is caught even though ROCr carves
//! small allocations out of shared 2 MiB blocks (one KFD allocation for many buffers).
//!
//! Only when the sanitizer is on and this process has an emulated device; the calls themselves
//! always go to ROCr unchanged. A program that does not link ROCr never calls these.

use crate::{real, state};
use core::ffi::{c_int, c_void};
use libc::size_t;

/// `HSA_STATUS_SUCCESS`.
const SUCCESS: c_int = 0;

fn sanitizing_emulator() -> Option<&'static kfd_emu::Emulator> {
    state::current()
        .map(|sys| &*sys.emu)
        .filter(|e| e.sanitizing())
}

/// Overrides `hsa_amd_memory_pool_allocate` (ROCr): registers what it returns.
///
/// # Safety
/// As the ROCr function (`pool` is `hsa_amd_memory_pool_t`, a struct of one `uint64_t`).
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_memory_pool_allocate(
    pool: u64,
    size: size_t,
    flags: u32,
    ptr: *mut *mut c_void,
) -> c_int {
    // SAFETY: forwarded unchanged.
    let status = unsafe { real::hsa_amd_memory_pool_allocate(pool, size, flags, ptr) };
    if status == SUCCESS && !ptr.is_null() {
        if let Some(emu) = sanitizing_emulator() {
            // SAFETY: ROCr wrote the allocation's address through `ptr` on success.
            let at = unsafe { *ptr } as u64;
            emu.track_buffer(at, size as u64);
        }
    }
    status
}

/// Overrides `hsa_amd_memory_pool_free` (ROCr): forgets the buffer first.
///
/// # Safety
/// As the ROCr function.
#[no_mangle]
pub unsafe extern "C" fn hsa_amd_memory_pool_free(ptr: *mut c_void) -> c_int {
    if let Some(emu) = sanitizing_emulator() {
        emu.untrack_buffer(ptr as u64);
    }
    // SAFETY: forwarded unchanged.
    unsafe { real::hsa_amd_memory_pool_free(ptr) }
}
