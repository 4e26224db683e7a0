//! Binary buddy bookkeeping over a pool's 2 MiB blocks, with constant-time operations.
//!
//! Each block is a complete binary tree of chunks: order 15 is the whole 2 MiB block, order 0 a
//! 64-byte chunk. One bit per tree node says "this chunk is free as a whole" (8 KiB per block).
//! Per order, a stack of `(slot, offset)` candidates lists free chunks across all blocks of the
//! pool, and a counter and a 16-bit mask say which orders have any.
//!
//! Removing a buddy from the middle of a free list (when it merges) would need a linked list
//! through side tables; instead its bit is cleared and its stack entry goes stale. Taking a chunk
//! pops entries until one's bit is still set. Stale entries are bounded: when a stack holds more
//! than twice as many entries as free chunks (plus slack), it is compacted, which removes at
//! least half of it, so compaction costs O(1) amortised per operation. Taking and returning a
//! chunk therefore cost at most one step per order (16) plus amortised O(1), independent of the
//! number of blocks or live allocations.

/// Smallest chunk, in bytes.
pub(crate) const MIN_CHUNK: u64 = 64;
/// Number of chunk orders: 64 B << 15 = 2 MiB.
pub(crate) const ORDERS: usize = 16;
/// The whole block's order.
pub(crate) const TOP: usize = ORDERS - 1;
/// Words of one block's free bitmap (one bit per tree node; node 0 is unused).
const TREE_WORDS: usize = (1 << ORDERS) / 64;
/// Stale entries a stack may carry beyond twice its live ones before it is compacted.
const STALE_SLACK: usize = 64;

/// Free-chunk bookkeeping of one pool.
#[derive(Default)]
pub(crate) struct Buddy {
    /// The free bitmaps of all block slots, `TREE_WORDS` words per slot, back to back (one flat
    /// vector: a lookup is one bounds check and one load). A slot without a block is all zero,
    /// so stale stack entries pointing into it read as taken.
    bits: Vec<u64>,
    /// Per order, candidate free chunks as (slot, byte offset); may contain stale entries.
    stacks: [Vec<(u32, u32)>; ORDERS],
    /// Per order, the number of free chunks (set bits).
    count: [usize; ORDERS],
    /// Bit `o` set when `count[o] > 0`.
    nonempty: u32,
}

/// Tree node of the chunk of `order` at `offset`: nodes of order `o` are numbered from
/// `2^(15 - o)`, like a binary heap.
fn node(order: usize, offset: u32) -> usize {
    (1usize << (TOP - order)) + ((offset as usize) >> (6 + order))
}

/// Word index and bit mask of a chunk's node in the flat bitmap.
fn locate(slot: u32, order: usize, offset: u32) -> (usize, u64) {
    let n = node(order, offset);
    (slot as usize * TREE_WORDS + n / 64, 1 << (n % 64))
}

#[cfg(test)]
fn test(bits: &[u64], slot: u32, order: usize, offset: u32) -> bool {
    let (word, mask) = locate(slot, order, offset);
    bits.get(word).is_some_and(|w| w & mask != 0)
}

/// Clears the chunk's bit; returns whether it was set.
fn test_and_clear(bits: &mut [u64], slot: u32, order: usize, offset: u32) -> bool {
    let (word, mask) = locate(slot, order, offset);
    match bits.get_mut(word) {
        Some(w) if *w & mask != 0 => {
            *w &= !mask;
            true
        }
        _ => false,
    }
}

fn set(bits: &mut [u64], slot: u32, order: usize, offset: u32) {
    let (word, mask) = locate(slot, order, offset);
    if let Some(w) = bits.get_mut(word) {
        *w |= mask;
    }
}

impl Buddy {
    /// Adds a wholly free block in `slot` (which must not hold one).
    pub(crate) fn add_block(&mut self, slot: u32) {
        let end = (slot as usize + 1) * TREE_WORDS;
        if self.bits.len() < end {
            self.bits.resize(end, 0);
        }
        self.insert(slot, 0, TOP);
    }

    /// Removes the block in `slot`, which must be wholly free: its bitmap is then all zero.
    pub(crate) fn remove_block(&mut self, slot: u32) {
        self.remove(slot, 0, TOP);
    }

    /// Takes a free chunk of `order`, splitting a larger one if needed: `(slot, offset)`.
    #[inline]
    pub(crate) fn take(&mut self, order: usize) -> Option<(u32, u64)> {
        let from = order + (self.nonempty >> order).trailing_zeros() as usize;
        if from >= ORDERS {
            return None;
        }
        let (slot, offset) = loop {
            let (slot, offset) = self.stacks[from].pop()?;
            if test_and_clear(&mut self.bits, slot, from, offset) {
                break (slot, offset);
            }
        };
        self.count[from] -= 1;
        if self.count[from] == 0 {
            self.nonempty &= !(1 << from);
        }
        // The upper halves of the split stay free, one per order below `from`.
        for o in (order..from).rev() {
            self.insert(slot, offset + ((MIN_CHUNK as u32) << o), o);
        }
        Some((slot, u64::from(offset)))
    }

    /// Returns the chunk of `order` at `offset` in `slot`, merging it with free buddies.
    #[inline]
    pub(crate) fn give_back(&mut self, slot: u32, offset: u64, order: usize) {
        let mut offset = offset as u32;
        let mut order = order;
        while order < TOP {
            let buddy = offset ^ ((MIN_CHUNK as u32) << order);
            if !self.remove(slot, buddy, order) {
                break;
            }
            offset = offset.min(buddy);
            order += 1;
        }
        self.insert(slot, offset, order);
    }

    /// Whether the block in `slot` is wholly free.
    #[cfg(test)]
    pub(crate) fn is_whole(&self, slot: u32) -> bool {
        test(&self.bits, slot, TOP, 0)
    }

    /// Free chunks of `order` (live ones, not stack entries).
    #[cfg(test)]
    pub(crate) fn free_count(&self, order: usize) -> usize {
        self.count[order]
    }

    #[inline]
    fn insert(&mut self, slot: u32, offset: u32, order: usize) {
        set(&mut self.bits, slot, order, offset);
        self.count[order] += 1;
        self.nonempty |= 1 << order;
        let stack = &mut self.stacks[order];
        stack.push((slot, offset));
        if stack.len() > 2 * self.count[order] + STALE_SLACK {
            compact(&mut self.bits, stack, order);
        }
    }

    /// Marks a free chunk as taken without finding its stack entry (it goes stale).
    fn remove(&mut self, slot: u32, offset: u32, order: usize) -> bool {
        if !test_and_clear(&mut self.bits, slot, order, offset) {
            return false;
        }
        self.count[order] -= 1;
        if self.count[order] == 0 {
            self.nonempty &= !(1 << order);
        }
        true
    }
}

/// Drops stale and duplicate entries: a chunk freed, merged and freed again may be listed twice.
/// Bits are cleared as entries are kept, so a second entry for the same chunk is dropped, then
/// restored for the kept ones.
#[cold]
#[inline(never)]
fn compact(bits: &mut [u64], stack: &mut Vec<(u32, u32)>, order: usize) {
    stack.retain(|&(slot, offset)| test_and_clear(bits, slot, order, offset));
    for &(slot, offset) in stack.iter() {
        set(bits, slot, order, offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn split_and_merge() {
        let mut b = Buddy::default();
        b.add_block(0);
        let x = b.take(0).unwrap();
        let y = b.take(0).unwrap();
        assert_eq!(x.0, 0);
        assert_ne!(x.1, y.1);
        assert_eq!(x.1 ^ y.1, 64, "the two halves of one 128-byte chunk");
        let z = b.take(3).unwrap();
        assert_eq!(z.1 % 512, 0, "chunks are aligned to their size");
        assert!(!b.is_whole(0));
        b.give_back(0, x.1, 0);
        b.give_back(0, y.1, 0);
        b.give_back(0, z.1, 3);
        assert!(b.is_whole(0), "everything merged back into one block");
        for o in 0..TOP {
            assert_eq!(b.free_count(o), 0, "order {o}");
        }
    }

    #[test]
    fn runs_dry_then_grows_with_a_block() {
        let mut b = Buddy::default();
        b.add_block(0);
        assert_eq!(b.take(TOP), Some((0, 0)));
        assert_eq!(b.take(0), None);
        b.add_block(3);
        assert_eq!(b.take(TOP), Some((3, 0)));
        b.give_back(3, 0, TOP);
        b.remove_block(3);
        assert_eq!(b.take(0), None, "a removed block hands out nothing");
    }

    #[test]
    fn stale_entries_stay_bounded() {
        let mut b = Buddy::default();
        b.add_block(0);
        // Alternating a small allocation with a full merge leaves stale entries at every order.
        for _ in 0..10_000 {
            let c = b.take(0).unwrap();
            b.give_back(0, c.1, 0);
        }
        for o in 0..ORDERS {
            assert!(b.stacks[o].len() <= 2 * b.count[o] + STALE_SLACK + 1);
        }
        assert!(b.is_whole(0));
    }

    proptest! {
        /// Random take/give-back sequences over three blocks: chunks never overlap, are aligned
        /// to their size, and everything merges back at the end.
        #[test]
        fn random_sequences(ops in prop::collection::vec((0usize..ORDERS, any::<bool>(), any::<u16>()), 1..400)) {
            let mut b = Buddy::default();
            for slot in 0..3 {
                b.add_block(slot);
            }
            let mut live: Vec<(u32, u64, usize)> = Vec::new();
            for (order, free, pick) in ops {
                if free && !live.is_empty() {
                    let (s, off, o) = live.swap_remove(pick as usize % live.len());
                    b.give_back(s, off, o);
                    continue;
                }
                if let Some((s, off)) = b.take(order) {
                    let len = MIN_CHUNK << order;
                    prop_assert_eq!(off % len, 0);
                    prop_assert!(off + len <= MIN_CHUNK << TOP);
                    for &(s2, off2, o2) in &live {
                        let len2 = MIN_CHUNK << o2;
                        prop_assert!(s2 != s || off + len <= off2 || off2 + len2 <= off,
                            "overlap: {:?} and {:?}", (s, off, order), (s2, off2, o2));
                    }
                    live.push((s, off, order));
                } else {
                    // Refusal is only allowed when no free chunk of that order or above exists.
                    prop_assert!((order..ORDERS).all(|o| b.count[o] == 0));
                }
            }
            for (s, off, o) in live {
                b.give_back(s, off, o);
            }
            for slot in 0..3 {
                prop_assert!(b.is_whole(slot));
            }
        }
    }
}
