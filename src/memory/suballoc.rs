//! The suballocator: small allocations carved out of 2 MiB KFD blocks.
//!
//! An ML runtime makes thousands of small allocations; one KFD allocation each would cost an
//! ioctl and an mmap apiece and scatter small GPU mappings that defeat huge pages. Requests below
//! the threshold (default 2 MiB) are instead served from 2 MiB blocks, one pool per
//! (GPU, memory kind, executable).
//!
//! Algorithm: a binary buddy allocator (the private `buddy` module) over the blocks of a pool.
//! Sizes round up to a power of two from 64 bytes to 2 MiB, so every chunk is naturally aligned
//! to its size and any power-of-two alignment up to the block size is met by rounding the size
//! up to the alignment. A free bitmap per block and per-order free stacks make allocation and
//! free a bounded number of steps (at most one per order, 16), independent of how many blocks or
//! live allocations there are; neighbours merge on free, so a fully freed block is whole again
//! and can go back to KFD. Buddy was chosen over TLSF because alignment comes for free (TLSF
//! over-allocates and splits to align) and a chunk's neighbour is found by XOR instead of
//! boundary tags, which for device-local VRAM the CPU cannot touch would have to live in side
//! tables anyway. The cost is internal fragmentation of up to 2x for sizes just above a power of
//! two (reported by the allocator benchmark).
//!
//! One mutex guards all pools of a Kfd: a pair of allocation and free holds it twice for a few
//! tens of nanoseconds, far below the cost of anything that would use the memory.
//!
//! Hysteresis: a pool keeps one empty block for the next burst and returns further empty blocks
//! to KFD at once; [`crate::Kfd::trim_memory`] returns all of them.

use super::buddy::Buddy;
use super::kind::MemoryKind;
use super::raw::{GpuAccess, RawAllocation};
use crate::device::context::DeviceContext;
use crate::error::{Error, Result};
use std::collections::HashMap;

/// Size of a block taken from KFD.
pub const BLOCK_SIZE: u64 = 2 << 20;
/// Smallest chunk: requests are rounded up to a power of two of at least this many bytes.
pub const MIN_CHUNK: u64 = super::buddy::MIN_CHUNK;
/// Environment variable that turns the suballocator off.
pub const DISABLE_ENV: &str = "KFDRT_DISABLE_SUBALLOCATOR";

/// Which pool a sub-allocation comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PoolKey {
    pub(crate) gpu_index: usize,
    pub(crate) kind: MemoryKind,
    pub(crate) executable: bool,
}

/// Where a sub-allocation lives (kept small: every suballocated [`super::Buffer`] carries one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// [`PoolKey::index`] of its pool.
    pool: u32,
    block: u32,
    offset: u32,
    order: u8,
    pub(crate) kind: MemoryKind,
    /// The shard of the suballocator it came from (see `super::shards`).
    pub(crate) shard: u8,
}

impl Chunk {
    pub(crate) fn size(&self) -> u64 {
        MIN_CHUNK << self.order
    }
}

/// A chunk handed out, with what its buffer needs to know about the block behind it.
#[derive(Debug)]
pub(crate) struct SubAllocation {
    pub(crate) chunk: Chunk,
    /// GPU (and CPU) address of the chunk.
    pub(crate) va: u64,
    /// CPU address of the chunk, null when the CPU cannot access the kind.
    pub(crate) cpu: *mut u8,
    /// KFD handle of the block.
    pub(crate) handle: u64,
}

struct Block {
    raw: RawAllocation,
    used: u64,
    /// Peer GPUs this block is mapped to, with the number of buffers that asked for each.
    peers: HashMap<u32, usize>,
}

#[derive(Default)]
struct Pool {
    blocks: Vec<Option<Block>>,
    /// Which chunks of which blocks are free.
    buddy: Buddy,
    empty_blocks: usize,
}

/// All pools of a process.
#[derive(Default)]
pub(crate) struct SubAllocator {
    /// Indexed by [`PoolKey::index`]: a lookup on every allocation and free must be cheap.
    pools: Vec<Option<Pool>>,
}

impl PoolKey {
    fn index(&self) -> usize {
        let kind = match self.kind {
            MemoryKind::DeviceLocal => 0,
            MemoryKind::HostVisibleVram => 1,
            MemoryKind::GttCoherent => 2,
            MemoryKind::GttUncached => 3,
            MemoryKind::Pageable => 4,
        };
        (self.gpu_index * 5 + kind) * 2 + usize::from(self.executable)
    }
}

/// The order whose chunk fits `size` bytes aligned to `align`.
pub(crate) fn order_for(size: u64, align: u64) -> Option<u8> {
    let need = size.max(align).max(MIN_CHUNK).checked_next_power_of_two()?;
    if need > BLOCK_SIZE {
        return None;
    }
    Some((need / MIN_CHUNK).trailing_zeros() as u8)
}

impl Pool {
    /// Takes a new block from KFD and a chunk of `order` from it (the slow path: an ioctl or
    /// three, kept out of line so the fast path stays small).
    #[cold]
    fn grow(&mut self, dev: &DeviceContext, key: PoolKey, order: u8) -> Result<(u32, u64)> {
        let gpu = dev.gpus.get(key.gpu_index).ok_or(Error::NoSuchGpuIndex {
            index: key.gpu_index,
        })?;
        let raw = RawAllocation::new(
            dev.driver(),
            gpu.info.gpu_id,
            gpu.info.drm_render_minor,
            BLOCK_SIZE,
            key.kind,
            if key.executable {
                GpuAccess::WRITE | GpuAccess::EXECUTE
            } else {
                GpuAccess::WRITE
            },
        )?;
        let slot = match self.blocks.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                self.blocks.push(None);
                self.blocks.len() - 1
            }
        };
        self.blocks[slot] = Some(Block {
            raw,
            used: 0,
            peers: HashMap::new(),
        });
        self.empty_blocks += 1;
        self.buddy.add_block(slot as u32);
        // A block just added is empty: it has a chunk of every order up to its size.
        Ok(self
            .buddy
            .take(order as usize)
            .expect("an empty suballocator block has a chunk of the order asked for"))
    }
}

impl SubAllocator {
    /// Allocates a chunk for `size` bytes aligned to `align`, growing the pool from KFD when needed.
    #[inline]
    pub(crate) fn alloc(
        &mut self,
        dev: &DeviceContext,
        key: PoolKey,
        size: u64,
        align: u64,
    ) -> Result<SubAllocation> {
        let Some(order) = order_for(size, align) else {
            return Err(Error::TooLarge {
                what: "bytes of a sub-allocation, rounded up to its alignment",
                requested: size.max(align),
                limit: BLOCK_SIZE,
            });
        };
        let idx = key.index();
        let Ok(pool_index) = u32::try_from(idx) else {
            return Err(Error::NoSuchGpuIndex {
                index: key.gpu_index,
            });
        };
        let pool = match self.pools.get_mut(idx) {
            Some(Some(pool)) => pool,
            _ => self.new_pool(idx),
        };
        let (block, offset) = match pool.buddy.take(order as usize) {
            Some(c) => c,
            None => pool.grow(dev, key, order)?,
        };
        // The buddy allocator hands out chunks only of blocks it was given, which live until
        // their last chunk is freed.
        let b = pool
            .blocks
            .get_mut(block as usize)
            .and_then(Option::as_mut)
            .expect("the buddy allocator names a live block");
        if b.used == 0 {
            pool.empty_blocks -= 1;
        }
        let chunk = Chunk {
            pool: pool_index,
            block,
            // Offsets are below BLOCK_SIZE (2 MiB).
            offset: offset as u32,
            order,
            kind: key.kind,
            shard: 0,
        };
        b.used += chunk.size();
        let cpu = match b.raw.cpu_ptr() {
            // SAFETY: `offset` < BLOCK_SIZE, inside the block's mapping.
            Some(p) => unsafe { p.add(offset as usize) },
            None => std::ptr::null_mut(),
        };
        Ok(SubAllocation {
            chunk,
            va: b.raw.va.addr + offset,
            cpu,
            handle: b.raw.handle,
        })
    }

    #[cold]
    fn new_pool(&mut self, idx: usize) -> &mut Pool {
        if self.pools.len() <= idx {
            self.pools.resize_with(idx + 1, || None);
        }
        self.pools[idx].insert(Pool::default())
    }

    /// Returns a chunk; a block left empty goes back to KFD unless it is the pool's spare.
    #[inline]
    pub(crate) fn free(&mut self, dev: &DeviceContext, chunk: Chunk) {
        let Some(pool) = self
            .pools
            .get_mut(chunk.pool as usize)
            .and_then(Option::as_mut)
        else {
            return;
        };
        let Some(b) = pool
            .blocks
            .get_mut(chunk.block as usize)
            .and_then(Option::as_mut)
        else {
            return;
        };
        b.used -= chunk.size();
        let now_empty = b.used == 0;
        pool.buddy
            .give_back(chunk.block, u64::from(chunk.offset), chunk.order as usize);
        if now_empty {
            pool.empty_blocks += 1;
            if pool.empty_blocks > 1 {
                release_block(dev, pool, chunk.block);
            }
        }
    }

    /// Returns every empty block to KFD.
    pub(crate) fn trim(&mut self, dev: &DeviceContext) {
        for pool in self.pools.iter_mut().flatten() {
            let empty: Vec<u32> = pool
                .blocks
                .iter()
                .enumerate()
                .filter(|(_, b)| b.as_ref().is_some_and(|b| b.used == 0))
                .map(|(i, _)| i as u32)
                .collect();
            for i in empty {
                release_block(dev, pool, i);
            }
        }
    }

    /// Releases everything (process teardown; no buffer is alive any more).
    pub(crate) fn release_all(&mut self, dev: &DeviceContext) {
        for pool in self.pools.drain(..).flatten() {
            for b in pool.blocks.into_iter().flatten() {
                let mut mapped = vec![b.raw.gpu_id];
                mapped.extend(b.peers.keys());
                b.raw.release(dev.driver(), &mapped);
            }
        }
    }

    /// KFD blocks currently held.
    pub(crate) fn blocks(&self) -> usize {
        self.pools
            .iter()
            .flatten()
            .map(|p| p.blocks.iter().flatten().count())
            .sum()
    }

    /// Handle, block VA and owner of the block behind a chunk.
    pub(crate) fn block_raw(&self, chunk: &Chunk) -> Option<&RawAllocation> {
        self.pools
            .get(chunk.pool as usize)?
            .as_ref()?
            .blocks
            .get(chunk.block as usize)?
            .as_ref()
            .map(|b| &b.raw)
    }

    /// Maps the block behind `chunk` to peer `gpu_id` (counted per buffer).
    pub(crate) fn map_peer(
        &mut self,
        dev: &DeviceContext,
        chunk: &Chunk,
        gpu_id: u32,
    ) -> Result<()> {
        let b = self.block_mut(chunk);
        let n = b.peers.entry(gpu_id).or_insert(0);
        if *n == 0 {
            b.raw.map_to_gpus(dev.driver(), &[gpu_id])?;
        }
        *n += 1;
        Ok(())
    }

    /// Drops one buffer's claim on the peer mapping; unmaps the block when it was the last.
    pub(crate) fn unmap_peer(
        &mut self,
        dev: &DeviceContext,
        chunk: &Chunk,
        gpu_id: u32,
    ) -> Result<()> {
        let b = self.block_mut(chunk);
        let Some(n) = b.peers.get_mut(&gpu_id) else {
            return Err(Error::NotOnGpu {
                what: format!("sub-allocation block {}", chunk.block),
                gpu_id,
            });
        };
        if *n == 1 {
            b.raw.unmap_from_gpus(dev.driver(), &[gpu_id])?;
            b.peers.remove(&gpu_id);
        } else {
            *n -= 1;
        }
        Ok(())
    }

    fn block_mut(&mut self, chunk: &Chunk) -> &mut Block {
        self.pools
            .get_mut(chunk.pool as usize)
            .and_then(Option::as_mut)
            .and_then(|p| p.blocks.get_mut(chunk.block as usize))
            .and_then(Option::as_mut)
            .expect("a chunk's block lives as long as the chunk")
    }
}

fn release_block(dev: &DeviceContext, pool: &mut Pool, block: u32) {
    let Some(b) = pool.blocks.get_mut(block as usize).and_then(Option::take) else {
        return;
    };
    pool.buddy.remove_block(block);
    pool.empty_blocks -= 1;
    let mut mapped = vec![b.raw.gpu_id];
    mapped.extend(b.peers.keys());
    b.raw.release(dev.driver(), &mapped);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders() {
        assert_eq!(order_for(1, 1), Some(0));
        assert_eq!(order_for(64, 1), Some(0));
        assert_eq!(order_for(65, 1), Some(1));
        assert_eq!(order_for(100, 4096), Some(6));
        assert_eq!(order_for(BLOCK_SIZE, 1), Some(15));
        assert_eq!(order_for(BLOCK_SIZE + 1, 1), None);
        assert_eq!(order_for(64, BLOCK_SIZE * 2), None);
    }

    #[cfg(feature = "emu")]
    #[test]
    fn suballocates_and_returns_blocks_without_a_kfd() {
        let (dev, emu) = crate::device::emulated_context();
        let before = emu.stats().live_allocations;
        let key = PoolKey {
            gpu_index: 1,
            kind: MemoryKind::GttCoherent,
            executable: false,
        };
        let mut sub = SubAllocator::default();
        let a = sub.alloc(&dev, key, 100, 256).expect("first chunk");
        let b = sub.alloc(&dev, key, 100, 256).expect("second chunk");
        assert_eq!(sub.blocks(), 1, "both chunks come from one block");
        assert_eq!(emu.stats().live_allocations, before + 1);
        assert_eq!(a.handle, b.handle);
        assert_ne!(a.va, b.va);
        assert_eq!(a.va % 256, 0);
        let owner = dev.gpus[1].info.gpu_id;
        assert!(
            emu.is_mapped(owner, a.va, 100),
            "the block is mapped to its GPU"
        );
        // The peer mapping is counted: the second claim does not map again, the last unmaps.
        let peer = dev.gpus[0].info.gpu_id;
        sub.map_peer(&dev, &a.chunk, peer).expect("map to peer");
        sub.map_peer(&dev, &b.chunk, peer)
            .expect("map to peer again");
        sub.unmap_peer(&dev, &a.chunk, peer)
            .expect("unmap one claim");
        assert!(emu.is_mapped(peer, b.va, 100));
        sub.unmap_peer(&dev, &b.chunk, peer)
            .expect("unmap the last claim");
        assert!(!emu.is_mapped(peer, b.va, 100));
        sub.free(&dev, a.chunk);
        sub.free(&dev, b.chunk);
        assert_eq!(sub.blocks(), 1, "the pool keeps one empty block");
        sub.trim(&dev);
        assert_eq!(sub.blocks(), 0);
        assert_eq!(emu.stats().live_allocations, before);
    }

    #[cfg(feature = "emu")]
    #[test]
    fn a_missing_gpu_is_refused() {
        let (dev, _emu) = crate::device::emulated_context();
        let key = PoolKey {
            gpu_index: 7,
            kind: MemoryKind::GttCoherent,
            executable: false,
        };
        let mut sub = SubAllocator::default();
        assert!(matches!(
            sub.alloc(&dev, key, 64, 64),
            Err(Error::NoSuchGpuIndex { index: 7 })
        ));
        assert_eq!(sub.blocks(), 0);
    }
}
