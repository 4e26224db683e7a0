//! The suballocator split in shards, so threads allocating at once do not queue on one lock:
//! each thread allocates from its own shard (threads are spread over the shards in the order
//! they first allocate); a chunk is freed, mapped and unmapped through the shard it came from.
//! A single-threaded program uses one shard, as if there were no sharding; threads that
//! allocate at once each keep their own partly used blocks.
//!
//! A buffer keeps its device open through a [`DeviceLease`] shared by the buffers of its
//! shard, not through the device's own reference count: that count is one cache line every
//! thread would otherwise increment and decrement on each allocation and free (with four
//! threads on one device it, not the allocator, set the pace).

use super::suballoc::{Chunk, PoolKey, SubAllocation, SubAllocator};
use crate::device::context::DeviceContext;
use crate::error::Result;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// A handle on the device shared by the live buffers of one shard (it holds the device open):
/// `K` is the handle (`Kfd`; generic so that the suballocator sits below the device).
pub(crate) struct DeviceLease<K> {
    pub(crate) kfd: K,
}

/// Shards per device: enough for the threads of a typical runtime to rarely meet.
const SHARDS: usize = 8;

/// Every suballocator shard of a device, whose buffers hold it open through a `K`.
pub(crate) struct ShardedSubAllocator<K> {
    /// Each on its own cache line: shards next to each other would make the threads meet
    /// anyway, on the line their locks share.
    shards: [CachePadded<Mutex<SubAllocator>>; SHARDS],
    /// Each shard's lease while any buffer of the shard holds it (weak: the device must not
    /// hold itself open).
    leases: [CachePadded<Mutex<Weak<DeviceLease<K>>>>; SHARDS],
}

impl<K> Default for ShardedSubAllocator<K> {
    fn default() -> Self {
        ShardedSubAllocator {
            shards: std::array::from_fn(|_| CachePadded::new(Mutex::new(SubAllocator::default()))),
            leases: std::array::from_fn(|_| CachePadded::new(Mutex::new(Weak::new()))),
        }
    }
}

/// The shard of the calling thread.
fn this_thread() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SHARD.with(|s| *s)
}

fn lock(m: &Mutex<SubAllocator>) -> MutexGuard<'_, SubAllocator> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<K: Clone> ShardedSubAllocator<K> {
    /// Allocates from the calling thread's shard (see [`SubAllocator::alloc`]) of the device
    /// `dev` that `kfd` holds open (whose suballocator this is), with the lease the buffer keeps.
    #[inline]
    pub(crate) fn alloc(
        &self,
        dev: &DeviceContext,
        kfd: &K,
        key: PoolKey,
        size: u64,
        align: u64,
    ) -> Result<(SubAllocation, Arc<DeviceLease<K>>)> {
        let shard = this_thread();
        let mut a = lock(&self.shards[shard]).alloc(dev, key, size, align)?;
        a.chunk.shard = shard as u8;
        Ok((a, self.lease(shard, kfd)))
    }

    /// A lease on `kfd` for a buffer made by the calling thread (dedicated buffers too).
    pub(crate) fn lease_for_this_thread(&self, kfd: &K) -> Arc<DeviceLease<K>> {
        self.lease(this_thread(), kfd)
    }

    fn lease(&self, shard: usize, kfd: &K) -> Arc<DeviceLease<K>> {
        let mut l = self.leases[shard].lock().unwrap_or_else(|p| p.into_inner());
        if let Some(lease) = l.upgrade() {
            return lease;
        }
        let lease = Arc::new(DeviceLease { kfd: kfd.clone() });
        *l = Arc::downgrade(&lease);
        lease
    }

    /// The shard `chunk` came from, locked.
    #[inline]
    pub(crate) fn of(&self, chunk: &Chunk) -> MutexGuard<'_, SubAllocator> {
        lock(&self.shards[usize::from(chunk.shard) % SHARDS])
    }

    /// Returns every empty block of every shard to the driver.
    pub(crate) fn trim(&self, dev: &DeviceContext) {
        for s in &self.shards {
            lock(s).trim(dev);
        }
    }

    /// KFD allocations held by all shards.
    pub(crate) fn blocks(&self) -> usize {
        self.shards.iter().map(|s| lock(s).blocks()).sum()
    }

    /// Gives everything back (at device close).
    pub(crate) fn release_all(&mut self, dev: &DeviceContext) {
        for s in &mut self.shards {
            let s: &mut Mutex<SubAllocator> = s;
            let mut sub = std::mem::take(s.get_mut().unwrap_or_else(|p| p.into_inner()));
            sub.release_all(dev);
        }
    }
}
