//! [`MemoryPool`]: a caching, stream-ordered allocator, as `hipMallocAsync`/`hipFreeAsync` and
//! PyTorch's caching allocator work. Freeing on a stream needs no synchronisation: the memory
//! goes back to the pool marked with the stream's position, the same stream may take it again at
//! once (its later work runs after the work that used it), and other streams once the GPU has
//! passed that position. Sizes are rounded to classes so that freed memory fits later requests:
//! powers of two up to 2 MiB (those come from the suballocator), above that multiples of 2 MiB
//! (huge pages) in steps of an eighth of the power of two below the size, so at most 12.5% (or
//! under 2 MiB) is wasted.
//!
//! ```
//! # fn main() -> kfdrt::Result<()> {
//! # let kfd = kfdrt::Kfd::from_env()?;
//! # let gpu = kfd.gpu(0).unwrap();
//! let pool = gpu.create_memory_pool(kfdrt::MemoryKind::DeviceLocal);
//! let mut stream = gpu.create_stream()?;
//! let a = pool.alloc_async(3 << 20, &stream)?; // a 4 MiB class
//! stream.fill(&a, 0, 0, 3 << 20)?;
//! pool.free_async(a, &stream); // no wait: the fill may still be running
//! let b = pool.alloc_async(4 << 20, &stream)?; // the same memory, in stream order
//! assert_eq!(pool.stats().hits, 1);
//! # drop(b);
//! # Ok(()) }
//! ```

use super::Stream;
use crate::device::Gpu;
use crate::error::Result;
use crate::memory::{Buffer, MemoryKind};
use crate::signal::Signal;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Smallest class: smaller requests take this much.
const MIN_CLASS: u64 = 256;
/// Huge-page size: classes above it are multiples of it.
const HUGE: u64 = 2 << 20;

/// The size class a request of `bytes` is served from.
pub(crate) fn size_class(bytes: u64) -> u64 {
    if bytes <= HUGE {
        return bytes.max(MIN_CLASS).next_power_of_two();
    }
    let floor_pow2 = 1u64 << (63 - bytes.leading_zeros());
    let step = (floor_pow2 / 8).max(HUGE);
    bytes.div_ceil(step) * step
}

/// Figures of a pool since it was made (bytes are class sizes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Requests served.
    pub allocations: u64,
    /// Requests served from cached memory.
    pub hits: u64,
    /// Requests that allocated from the driver.
    pub misses: u64,
    /// Buffers given back ([`MemoryPool::free_async`] or dropped).
    pub frees: u64,
    /// Bytes handed out and not given back.
    pub in_use_bytes: u64,
    /// Bytes cached for reuse.
    pub cached_bytes: u64,
    /// Most bytes held (in use plus cached) at once.
    pub peak_bytes: u64,
}

/// Where a cached buffer was freed: the stream and its position then.
struct Cached {
    buffer: Buffer,
    /// The queue of the stream that freed it (`None`: dropped outside any stream).
    stream: Option<u32>,
    /// The completion of the stream's last operation when it was freed (`None`: nothing was in
    /// flight).
    after: Option<Signal>,
}

impl Cached {
    /// Whether `stream` may take it now.
    fn reusable_by(&self, stream: u32) -> bool {
        match self.stream {
            Some(s) if s == stream => true,
            Some(_) => self.after.as_ref().is_none_or(|s| s.value() <= 0),
            // No stream ordered its last use: only once no GPU work holds it.
            None => !self.buffer.is_retained_elsewhere(),
        }
    }
}

#[derive(Default)]
struct PoolState {
    free: BTreeMap<u64, Vec<Cached>>,
    stats: PoolStats,
}

struct PoolInner {
    gpu: Gpu,
    kind: MemoryKind,
    state: Mutex<PoolState>,
}

impl PoolInner {
    fn lock(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn give_back(&self, buffer: Buffer, stream: Option<u32>, after: Option<Signal>) {
        let class = buffer.size();
        let mut st = self.lock();
        st.stats.frees += 1;
        st.stats.in_use_bytes -= class;
        st.stats.cached_bytes += class;
        st.free.entry(class).or_default().push(Cached {
            buffer,
            stream,
            after,
        });
    }
}

/// A caching, stream-ordered allocator of one memory kind on one GPU (see [`crate::stream`]).
/// Cheap to clone: clones share the cache.
#[derive(Clone)]
pub struct MemoryPool(Arc<PoolInner>);

impl std::fmt::Debug for MemoryPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryPool")
            .field("kind", &self.0.kind)
            .field("stats", &self.stats())
            .finish()
    }
}

/// A buffer from a [`MemoryPool`]: a [`Buffer`] of the request's size class (it derefs to
/// it). Give it back with [`MemoryPool::free_async`]; dropped, it goes back to the pool too, to
/// be reused once no GPU work holds it.
pub struct PooledBuffer {
    buffer: Option<Buffer>,
    pool: Arc<PoolInner>,
}

impl std::fmt::Debug for PooledBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PooledBuffer").field(&self.buffer).finish()
    }
}

impl std::ops::Deref for PooledBuffer {
    type Target = Buffer;
    fn deref(&self) -> &Buffer {
        // Taken only by `free_async` and `drop`, which consume the handle.
        self.buffer
            .as_ref()
            .unwrap_or_else(|| unreachable!("pooled buffer used after it was freed"))
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        if let Some(b) = self.buffer.take() {
            self.pool.give_back(b, None, None);
        }
    }
}

impl Gpu {
    /// A new, empty [`MemoryPool`] of `kind` memory on this GPU.
    pub fn create_memory_pool(&self, kind: MemoryKind) -> MemoryPool {
        MemoryPool(Arc::new(PoolInner {
            gpu: self.clone(),
            kind,
            state: Mutex::new(PoolState::default()),
        }))
    }
}

impl MemoryPool {
    /// A buffer of at least `bytes` for work on `stream`: cached memory `stream` may use now
    /// (freed on it, or freed elsewhere at a point the GPU has passed), else new memory.
    pub fn alloc_async(&self, bytes: u64, stream: &Stream) -> Result<PooledBuffer> {
        self.alloc_for(bytes, stream.queue.id())
    }

    fn alloc_for(&self, bytes: u64, stream: u32) -> Result<PooledBuffer> {
        if bytes == 0 {
            return Err(crate::Error::ZeroSize { what: "allocation" });
        }
        let class = size_class(bytes);
        let p = &self.0;
        {
            let mut st = p.lock();
            let found = st.free.get_mut(&class).and_then(|list| {
                // The most recently freed first: its memory is likeliest in cache.
                let i = list.iter().rposition(|c| c.reusable_by(stream))?;
                Some(list.swap_remove(i).buffer)
            });
            st.stats.allocations += 1;
            if let Some(buffer) = found {
                st.stats.hits += 1;
                st.stats.cached_bytes -= class;
                st.stats.in_use_bytes += class;
                return Ok(PooledBuffer {
                    buffer: Some(buffer),
                    pool: p.clone(),
                });
            }
            st.stats.misses += 1;
        }
        let buffer = match p.gpu.alloc(class, p.kind) {
            Ok(b) => b,
            Err(e @ crate::Error::OutOfMemory { .. }) => {
                // What the cache holds may be what is missing: free what can go, and retry.
                if self.trim(0) == 0 {
                    return Err(e);
                }
                p.gpu.alloc(class, p.kind)?
            }
            Err(e) => return Err(e),
        };
        let mut st = p.lock();
        st.stats.in_use_bytes += class;
        st.stats.peak_bytes = st
            .stats
            .peak_bytes
            .max(st.stats.in_use_bytes + st.stats.cached_bytes);
        Ok(PooledBuffer {
            buffer: Some(buffer),
            pool: p.clone(),
        })
    }

    /// Gives `buffer` back at `stream`'s current position, without waiting: `stream` may reuse
    /// it at once, other streams once the GPU has passed this point. Work that uses the buffer
    /// must have been enqueued on `stream` (or be ordered before its current position).
    pub fn free_async(&self, mut buffer: PooledBuffer, stream: &Stream) {
        let Some(b) = buffer.buffer.take() else {
            return;
        };
        let after = stream.tail.signal().filter(|s| s.value() > 0).cloned();
        buffer.pool.give_back(b, Some(stream.queue.id()), after);
    }

    /// Frees cached memory nothing can still use, until at most `keep_bytes` stay cached;
    /// returns the bytes freed. (Freeing is always safe: GPU work keeps what it uses allocated
    /// until it completes.)
    pub fn trim(&self, keep_bytes: u64) -> u64 {
        let mut freed = Vec::new();
        {
            let mut st = self.0.lock();
            let mut cached = st.stats.cached_bytes;
            // Largest classes first: the fewest frees reach the target.
            for list in st.free.values_mut().rev() {
                while cached > keep_bytes {
                    let Some(c) = list.pop() else { break };
                    cached -= c.buffer.size();
                    freed.push(c.buffer);
                }
            }
            st.free.retain(|_, l| !l.is_empty());
            st.stats.cached_bytes = cached;
        }
        // Freed outside the lock: each is a driver call.
        freed.iter().map(Buffer::size).sum()
    }

    /// The pool's figures.
    pub fn stats(&self) -> PoolStats {
        self.0.lock().stats
    }

    /// The memory kind it allocates.
    pub fn kind(&self) -> MemoryKind {
        self.0.kind
    }
}

#[cfg(test)]
mod tests {
    use super::size_class;

    #[test]
    fn classes_are_powers_of_two_then_huge_page_multiples_within_an_eighth() {
        assert_eq!(size_class(1), 256);
        assert_eq!(size_class(257), 512);
        assert_eq!(size_class(2 << 20), 2 << 20);
        assert_eq!(size_class((2 << 20) + 1), 4 << 20);
        assert_eq!(size_class(10 << 20), 10 << 20);
        assert_eq!(size_class(100 << 20), 104 << 20);
        for bytes in [(3u64 << 20) + 5, 33 << 20, 1 << 30, (5 << 30) + 1] {
            let c = size_class(bytes);
            assert!(c >= bytes && c % (2 << 20) == 0, "{bytes}: {c}");
            assert!(c - bytes <= bytes / 8 + (2 << 20), "{bytes}: {c}");
        }
    }
}
