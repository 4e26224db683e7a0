//! Virtual address reservations.
//!
//! GPU VA = host VA on a dGPU under KFD, so kfdrt reserves address space with an anonymous
//! `PROT_NONE` mapping and hands that address to `ALLOC_MEMORY_OF_GPU`. Alignment follows
//! libhsakmt: start at a page and double while the size is at least twice the alignment, up to
//! 2 MiB, so an allocation of 2 MiB or more is 2 MiB-aligned and the GPU can map it with huge pages.

use crate::error::{Error, Result};
use kfd_sys::{Driver, MapSource};

/// The GPU's page, and the smallest kernel page: a device's own is its driver's
/// ([`kfd_sys::Driver::page_size`]), 4 KiB or larger (AArch64 kernels often use 64 KiB).
pub const PAGE_SIZE: u64 = 4096;
/// The GPU's large page size; allocations of at least this size are aligned to it.
pub const HUGE_PAGE_SIZE: u64 = 2 << 20;

/// Rounds `v` up to a multiple of `align` (a power of two), or `None` on overflow.
pub(crate) fn align_up(v: u64, align: u64) -> Option<u64> {
    debug_assert!(align.is_power_of_two());
    Some(v.checked_add(align - 1)? & !(align - 1))
}

/// The VA alignment libhsakmt would use for a reservation of `size` bytes.
pub fn va_alignment(size: u64) -> u64 {
    let mut align = PAGE_SIZE;
    while align < HUGE_PAGE_SIZE && size >= 2 * align {
        align *= 2;
    }
    align
}

/// A reserved range of address space (initially `PROT_NONE`), released on [`VaRange::release`].
#[derive(Debug)]
pub(crate) struct VaRange {
    pub(crate) addr: u64,
    pub(crate) len: u64,
}

impl VaRange {
    /// Reserves `len` bytes (rounded up to the kernel's page) aligned to `align` (at least a
    /// page: the kernel maps whole pages, and a CPU view of a buffer sits at its GPU address).
    pub(crate) fn reserve(driver: &dyn Driver, len: u64, align: u64) -> Result<VaRange> {
        let page = driver.page_size();
        let align = align.max(page);
        let len = align_up(len, page).ok_or(Error::TooLarge {
            what: "bytes of address space to reserve",
            requested: len,
            limit: u64::MAX - (page - 1),
        })?;
        // The system places the mapping on its own page, which an emulated kernel's may
        // exceed: enough slack to align from there.
        let extra = align.saturating_sub(kfd_sys::host_page_size().min(page));
        let total = len
            .checked_add(extra)
            .and_then(|t| usize::try_from(t).ok())
            .ok_or(Error::TooLarge {
                what: "bytes of address space to reserve (with alignment slack)",
                requested: len,
                limit: (usize::MAX as u64).saturating_sub(extra),
            })?;
        // SAFETY: no MAP_FIXED, so the kernel picks a free range and nothing existing is replaced.
        let base = unsafe {
            driver.mmap(
                MapSource::Anonymous,
                std::ptr::null_mut(),
                total,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_NORESERVE,
                0,
            )
        }
        .map_err(Error::driver("mmap (VA reservation)"))? as u64;
        let aligned = align_up(base, align).unwrap_or(base);
        let head = aligned - base;
        let tail = total as u64 - head - len;
        // Trim the slack so the reservation is exactly `len` bytes. Failing to trim only wastes
        // address space, so it is logged, not fatal.
        for (start, n) in [(base, head), (aligned + len, tail)] {
            if n > 0 {
                // SAFETY: the trimmed pieces are part of the mapping just created and unused.
                if let Err(e) = unsafe { driver.munmap(start as *mut _, n as usize) } {
                    log::warn!("kfdrt: trimming VA reservation at {start:#x}: {e}");
                }
            }
        }
        Ok(VaRange { addr: aligned, len })
    }

    /// Returns the range to the system, whatever is mapped over it now.
    pub(crate) fn release(&self, driver: &dyn Driver) {
        // SAFETY: the range is owned by this reservation and no longer used by anybody.
        if let Err(e) = unsafe { driver.munmap(self.addr as *mut _, self.len as usize) } {
            log::warn!("kfdrt: releasing VA {:#x}+{:#x}: {e}", self.addr, self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_follows_libhsakmt() {
        assert_eq!(va_alignment(4096), 4096);
        assert_eq!(va_alignment(8191), 4096);
        assert_eq!(va_alignment(8192), 8192);
        assert_eq!(va_alignment(1 << 20), 1 << 20);
        assert_eq!(va_alignment((1 << 20) - 1), 1 << 19);
        assert_eq!(va_alignment(2 << 20), 2 << 20);
        assert_eq!(va_alignment(1 << 30), 2 << 20);
        assert_eq!(align_up(4097, 4096), Some(8192));
        assert_eq!(align_up(u64::MAX, 4096), None);
    }
}
