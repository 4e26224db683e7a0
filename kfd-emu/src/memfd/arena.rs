//! Pooled memory files: many buffers share one `memfd` (an arena), so a process's buffer count
//! is not bounded by its descriptor limit (`RLIMIT_NOFILE`), nor by its mapping limit
//! (`vm.max_map_count`): the emulator maps each arena once, whole.
//!
//! A range is handed out zeroed (never written, or punched out when it was given back) and given
//! back in one of two ways. One the runtime never CPU-mapped is punched and free at once. One
//! it did map may still be mapped: a GEM object lives while a CPU mapping of it does (the mmap
//! holds a reference, `drm_gem_vm_open`), so freeing the buffer must neither lose the bytes
//! under that mapping nor let the next buffer share them. Such ranges wait in a quarantine until
//! a look at `/proc/self/maps` finds no mapping of them left outside the emulator's own.
//!
//! The arenas are the process's, not an emulator's: a forked child starts a pool of its own
//! (its inherited arenas are shared memory with the parent, whose ranges they still hold), and
//! gives nothing back to the parent's.

use super::maps::{self, FileId};
use kfd_sys::Errno;
use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard};

/// Bytes of one arena's file (sparse) and of the emulator's mapping of it.
pub(super) const ARENA_BYTES: u64 = 16 << 30;
/// Buffers larger than this get a file of their own: few of them fit any memory, so their
/// descriptors are no limit, and they would fragment the arenas.
pub(crate) const POOLED_MAX: u64 = 256 << 20;
/// Quarantined ranges are re-examined once at least this many wait, or as many as the
/// mappings of the arena the last look found (reading the process's mappings costs in
/// proportion to their number, so this keeps it a constant per free), or once they hold
/// [`QUARANTINE_BYTES`], or at an allocation that finds no room.
const QUARANTINE_BATCH: usize = 64;
/// Quarantined bytes (kept in memory until released) that make the next free look at once.
const QUARANTINE_BYTES: u64 = 512 << 20;
/// The unit of a range: the host's page, whatever page the emulated kernel uses.
const GRANULE: u64 = 4096;

/// Free ranges of an arena, best fit, coalesced on release.
#[derive(Debug, Default)]
struct FreeRanges {
    by_offset: BTreeMap<u64, u64>,
    by_size: BTreeSet<(u64, u64)>,
}

impl FreeRanges {
    fn whole(len: u64) -> FreeRanges {
        let mut f = FreeRanges::default();
        f.insert(0, len);
        f
    }

    fn insert(&mut self, offset: u64, len: u64) {
        self.by_offset.insert(offset, len);
        self.by_size.insert((len, offset));
    }

    fn remove(&mut self, offset: u64, len: u64) {
        self.by_offset.remove(&offset);
        self.by_size.remove(&(len, offset));
    }

    /// The lowest-offset range among the smallest that hold `len` bytes.
    fn take(&mut self, len: u64) -> Option<u64> {
        let &(have, offset) = self.by_size.range((len, 0)..).next()?;
        self.remove(offset, have);
        if have > len {
            self.insert(offset + len, have - len);
        }
        Some(offset)
    }

    fn give(&mut self, mut offset: u64, mut len: u64) {
        if let Some((&prev, &plen)) = self.by_offset.range(..offset).next_back() {
            if prev + plen == offset {
                self.remove(prev, plen);
                offset = prev;
                len += plen;
            }
        }
        if let Some(&nlen) = self.by_offset.get(&(offset + len)) {
            self.remove(offset + len, nlen);
            len += nlen;
        }
        self.insert(offset, len);
    }

    #[cfg(test)]
    fn free_bytes(&self) -> u64 {
        self.by_offset.values().sum()
    }
}

#[derive(Debug)]
struct ArenaState {
    free: FreeRanges,
    /// Ranges given back while a CPU mapping of them may remain.
    quarantine: Vec<(u64, u64)>,
    quarantined_bytes: u64,
    /// Quarantined ranges that make the next look.
    next_look: usize,
    /// Quarantined ranges the last look left waiting: an allocation that finds no room looks
    /// again only when more have come since (the others' mappings were there a moment ago).
    left_waiting: usize,
}

/// One pooled file and the emulator's mapping of all of it.
#[derive(Debug)]
pub(crate) struct Arena {
    fd: OwnedFd,
    id: FileId,
    host: usize,
    /// The process that made it: only it allocates from and gives back to it.
    pid: u32,
    state: Mutex<ArenaState>,
}

impl Arena {
    fn new() -> Result<Arena, Errno> {
        let fd = super::create_file(ARENA_BYTES, c"kfd-emu-arena")?;
        let host = super::map_whole(&fd, ARENA_BYTES as usize)?;
        Ok(Arena {
            id: FileId::of(fd.as_fd())?,
            fd,
            host,
            pid: std::process::id(),
            state: Mutex::new(ArenaState {
                free: FreeRanges::whole(ARENA_BYTES),
                quarantine: Vec::new(),
                quarantined_bytes: 0,
                next_look: QUARANTINE_BATCH,
                left_waiting: 0,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, ArenaState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The file, to map parts of it.
    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The file's identity, as the process's mappings name it.
    pub(super) fn id(&self) -> FileId {
        self.id
    }

    /// The emulator's pointer to `offset`.
    pub(super) fn host(&self, offset: u64) -> usize {
        self.host + offset as usize
    }

    /// The emulator's own mapping of the arena, which the mapping scans leave out.
    pub(super) fn own_mapping(&self) -> (usize, usize) {
        (self.host, self.host + ARENA_BYTES as usize)
    }

    fn take(&self, len: u64) -> Option<u64> {
        let mut s = self.lock();
        if let Some(offset) = s.free.take(len) {
            return Some(offset);
        }
        if s.quarantine.len() <= s.left_waiting {
            return None;
        }
        self.release_unmapped(&mut s);
        s.free.take(len)
    }

    /// Gives `offset..offset+len` back: at once, or after its CPU mappings are gone when
    /// `maybe_mapped`. Nothing in a forked child.
    pub(super) fn give_back(&self, offset: u64, len: u64, maybe_mapped: bool) {
        if std::process::id() != self.pid {
            return;
        }
        let mut s = self.lock();
        if maybe_mapped {
            s.quarantine.push((offset, len));
            s.quarantined_bytes += len;
            if s.quarantine.len() >= s.next_look || s.quarantined_bytes >= QUARANTINE_BYTES {
                self.release_unmapped(&mut s);
            }
        } else {
            self.punch(offset, len);
            s.free.give(offset, len);
        }
    }

    /// Zeroes `offset..offset+len` and returns its pages to the host.
    pub(super) fn punch(&self, offset: u64, len: u64) {
        super::punch_hole(self.fd(), offset, len);
    }

    /// Frees the quarantined ranges that no mapping outside the emulator's reaches any more.
    fn release_unmapped(&self, s: &mut ArenaState) {
        let mapped = match maps::file_ranges(self.id, self.own_mapping()) {
            Ok(r) => r,
            // Unreadable maps: keep waiting rather than free a mapped range.
            Err(e) => {
                log::warn!(
                    "kfd-emu: cannot read this process's mappings ({e}); {} freed buffers stay allocated",
                    s.quarantine.len()
                );
                return;
            }
        };
        let looked_at = mapped.len();
        let mapped = disjoint(mapped);
        let waiting = std::mem::take(&mut s.quarantine);
        for (offset, len) in waiting {
            let end = offset + len;
            // The first mapped interval that ends past `offset`, if it starts before `end`.
            let i = mapped.partition_point(|&(_, b)| b <= offset);
            if mapped.get(i).is_some_and(|&(a, _)| a < end) {
                s.quarantine.push((offset, len));
            } else {
                s.quarantined_bytes -= len;
                self.punch(offset, len);
                s.free.give(offset, len);
            }
        }
        s.next_look = s.quarantine.len() + QUARANTINE_BATCH.max(looked_at);
        s.left_waiting = s.quarantine.len();
    }

    /// Whether the range at `offset` waits in the quarantine (tests).
    #[cfg(test)]
    fn quarantined(&self, offset: u64) -> bool {
        self.lock().quarantine.iter().any(|q| q.0 == offset)
    }
}

/// `ranges` sorted and merged where they overlap or touch.
fn disjoint(mut ranges: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (a, b) in ranges {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// The process's arenas.
static POOL: Mutex<Vec<Arc<Arena>>> = Mutex::new(Vec::new());

/// A zeroed range of `len` bytes (at most [`POOLED_MAX`]) in some arena of this process.
pub(super) fn allocate(len: u64) -> Result<(Arc<Arena>, u64), Errno> {
    debug_assert!(len <= POOLED_MAX);
    let len = footprint(len);
    let pid = std::process::id();
    let mut pool = POOL.lock().unwrap_or_else(|p| p.into_inner());
    // A forked child's inherited arenas are the parent's.
    pool.retain(|a| a.pid == pid);
    for arena in pool.iter() {
        if let Some(offset) = arena.take(len) {
            return Ok((arena.clone(), offset));
        }
    }
    let arena = Arc::new(Arena::new()?);
    let offset = arena.take(len).ok_or(Errno::ENOMEM)?;
    pool.push(arena.clone());
    Ok((arena, offset))
}

/// The length a buffer of `len` bytes takes in an arena: whole host pages, and one more that
/// no buffer uses. That gap keeps two buffers' CPU mappings at neighbouring addresses from
/// merging into one mapping of the file, which the kernel never does for two GEM objects
/// (`ttm_bo_mmap_obj` makes them `VM_PFNMAP | VM_IO`, mappings `vma_merge` leaves alone): the
/// process's count of mappings (`vm.max_map_count`) grows as it would with the driver.
pub(super) fn footprint(len: u64) -> u64 {
    len.max(1).next_multiple_of(GRANULE) + GRANULE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_best_fit_and_coalesce_on_release() {
        let mut f = FreeRanges::whole(100);
        assert_eq!(f.take(10), Some(0));
        assert_eq!(f.take(20), Some(10));
        assert_eq!(f.take(10), Some(30));
        f.give(10, 20);
        // The 20-byte hole is the best fit for 15, not the 60 bytes at the end.
        assert_eq!(f.take(15), Some(10));
        f.give(0, 10);
        f.give(10, 15);
        f.give(30, 10);
        assert_eq!(f.by_offset.len(), 1, "{:?}", f.by_offset);
        assert_eq!(f.free_bytes(), 100);
        assert_eq!(f.take(101), None);
    }

    #[test]
    fn mapped_ranges_merge_into_sorted_disjoint_intervals() {
        assert_eq!(
            disjoint(vec![(30, 40), (0, 10), (5, 12), (12, 20), (50, 60)]),
            vec![(0, 20), (30, 40), (50, 60)]
        );
    }

    #[test]
    fn a_range_mapped_outside_the_emulator_waits_until_it_is_unmapped() {
        let (arena, offset) = allocate(8192).unwrap();
        let p = arena.host(offset) as *mut u8;
        // SAFETY: the range is ours and mapped read-write by the arena.
        unsafe { p.write(7) };
        // A CPU view of the range, as a runtime maps a buffer.
        // SAFETY: a new shared mapping of the arena's range; nothing is replaced.
        let view = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                8192,
                libc::PROT_READ,
                libc::MAP_SHARED,
                std::os::fd::AsRawFd::as_raw_fd(&arena.fd()),
                offset as libc::off_t,
            )
        };
        assert_ne!(view, libc::MAP_FAILED);
        arena.give_back(offset, footprint(8192), true);
        {
            let mut s = arena.lock();
            arena.release_unmapped(&mut s);
        }
        // Still mapped: the bytes stay and the range is not reused.
        // SAFETY: the view is mapped and readable.
        assert_eq!(unsafe { *(view as *const u8) }, 7);
        assert!(arena.quarantined(offset));
        // SAFETY: our own view.
        unsafe { libc::munmap(view, 8192) };
        {
            let mut s = arena.lock();
            arena.release_unmapped(&mut s);
        }
        assert!(!arena.quarantined(offset));
        // SAFETY: the arena's own mapping; the range was punched out.
        assert_eq!(unsafe { *p }, 0, "a released range reads as zero");
    }

    #[test]
    fn a_forked_child_allocates_from_arenas_of_its_own_and_frees_nothing_of_its_parents() {
        let (arena, offset) = allocate(4096).unwrap();
        // Held across the fork so that no other test thread holds it there; the child and the
        // parent each release their own copy.
        let pool = POOL.lock().unwrap();
        // SAFETY: the child allocates, writes and gives back memory and `_exit`s; the pool lock
        // is free in it (released below), and a new arena's lock is new.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        drop(pool);
        if pid == 0 {
            // The parent's range given back in the child stays the parent's.
            arena.give_back(offset, footprint(4096), false);
            let own = match allocate(4096) {
                Ok((mine, at)) => {
                    // SAFETY: the range is the child's, mapped read-write.
                    unsafe { std::ptr::write_bytes(mine.host(at) as *mut u8, 0xAB, 4096) };
                    !Arc::ptr_eq(&mine, &arena)
                }
                Err(_) => false,
            };
            // SAFETY: ends the child without the test harness's teardown.
            unsafe { libc::_exit(if own { 0 } else { 1 }) };
        }
        let mut status = 0;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        // SAFETY: polls the child just forked; `status` is writable.
        while unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } != pid {
            if std::time::Instant::now() > deadline {
                // SAFETY: kills the hung child this test forked.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                panic!("the forked child hung");
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        assert!(
            !arena.lock().free.by_offset.contains_key(&offset),
            "the child freed the parent's range"
        );
        for _ in 0..4 {
            let (a, at) = allocate(4096).unwrap();
            // SAFETY: a fresh range of the parent's, mapped read-write.
            let bytes = unsafe { std::slice::from_raw_parts(a.host(at) as *const u8, 4096) };
            assert!(
                bytes.iter().all(|&b| b == 0),
                "the child wrote the parent's memory"
            );
        }
    }
}
