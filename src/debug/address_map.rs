//! Where a device's buffers are, kept while `KFDRT_VALIDATE` or `KFDRT_CAPTURE` is on: each
//! buffer's address range, whether it is executable, and a way back to it while it lives (the
//! map does not keep buffers alive). The validation check and the capture read it; the memory
//! layer fills it. Below the device, which keeps it, so buffers reach it as [`TrackedMemory`].

use crate::error::Result;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// A buffer as the debugging instruments use it.
pub(crate) trait TrackedMemory: Send + Sync {
    /// Its first GPU address.
    fn gpu_address(&self) -> u64;
    /// Its size in bytes.
    fn size(&self) -> u64;
    /// The GPUs it is mapped on.
    fn mapped_gpus(&self) -> Vec<u32>;
    /// Reads `out.len()` bytes at `offset` (host-accessible memory only).
    fn read(&self, offset: u64, out: &mut [u8]) -> Result<()>;
    /// Its whole contents (host-accessible memory only).
    fn to_vec(&self) -> Result<Vec<u8>>;
}

/// The live buffer of an entry, or `None` once it is gone.
pub(crate) type Revive = Box<dyn Fn() -> Option<Box<dyn TrackedMemory>> + Send + Sync>;

/// A buffer as the map knows it.
struct Entry {
    len: u64,
    executable: bool,
    revive: Revive,
}

/// The address ranges of a validating or capturing device's buffers.
#[derive(Default)]
pub(crate) struct AddressMap {
    ranges: Mutex<BTreeMap<u64, Entry>>,
}

/// What the map found at an address.
pub(crate) struct Found {
    pub(crate) executable: bool,
    pub(crate) mapped_gpus: Vec<u32>,
}

impl AddressMap {
    /// Adds the buffer at `va` of `len` bytes.
    pub(crate) fn insert(&self, va: u64, len: u64, executable: bool, revive: Revive) {
        self.lock().insert(
            va,
            Entry {
                len,
                executable,
                revive,
            },
        );
    }

    /// Removes the buffer at `va`.
    pub(crate) fn remove(&self, va: u64) {
        self.lock().remove(&va);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Entry>> {
        self.ranges.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The live buffer whose range holds `addr`.
    pub(crate) fn buffer_at(&self, addr: u64) -> Option<Box<dyn TrackedMemory>> {
        let r = self.lock();
        let (start, e) = r.range(..=addr).next_back()?;
        if addr >= start + e.len {
            return None;
        }
        (e.revive)()
    }

    /// The buffer holding `[addr, addr + len)`, if one does.
    pub(crate) fn find(&self, addr: u64, len: u64) -> Option<Found> {
        let r = self.lock();
        let (start, e) = r.range(..=addr).next_back()?;
        if addr + len > start + e.len {
            return None;
        }
        let buffer = (e.revive)()?;
        Some(Found {
            executable: e.executable,
            mapped_gpus: buffer.mapped_gpus(),
        })
    }
}
