//! [`PagedMemory`]: a [`Memory`] over a map of 4 KiB pages, for tests and benches, and the
//! reference for kfd-emu's implementation. Pages are arrays of `AtomicU64`, so plain accesses,
//! sub-word writes and atomics are all safe Rust and atomic with respect to each other across
//! host threads.

use crate::memory::{AccessKind, AtomicOp, MemFault, Memory};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes per page.
pub const PAGE_SIZE: u64 = 4096;
const WORDS_PER_PAGE: usize = (PAGE_SIZE / 8) as usize;

/// Sparse GPU memory made of zero-filled 4 KiB pages; an access to an unmapped page faults.
#[derive(Debug, Default)]
pub struct PagedMemory {
    pages: BTreeMap<u64, Box<[AtomicU64]>>,
}

fn new_page() -> Box<[AtomicU64]> {
    (0..WORDS_PER_PAGE).map(|_| AtomicU64::new(0)).collect()
}

impl PagedMemory {
    /// Empty memory: every access faults.
    pub fn new() -> PagedMemory {
        PagedMemory::default()
    }

    /// Maps zero-filled pages covering `va..va + len` (pages already mapped keep their bytes).
    pub fn map(&mut self, va: u64, len: u64) {
        if len == 0 {
            return;
        }
        let first = va / PAGE_SIZE;
        let last = va.saturating_add(len - 1) / PAGE_SIZE;
        for p in first..=last {
            self.pages.entry(p).or_insert_with(new_page);
        }
    }

    /// Unmaps the pages covering `va..va + len`.
    pub fn unmap(&mut self, va: u64, len: u64) {
        if len == 0 {
            return;
        }
        let first = va / PAGE_SIZE;
        let last = va.saturating_add(len - 1) / PAGE_SIZE;
        self.pages.retain(|&p, _| p < first || p > last);
    }

    /// Whether every byte of `va..va + len` is mapped.
    pub fn is_mapped(&self, va: u64, len: u64) -> bool {
        if len == 0 {
            return true;
        }
        let first = va / PAGE_SIZE;
        let Some(end) = va.checked_add(len - 1) else {
            return false;
        };
        (first..=end / PAGE_SIZE).all(|p| self.pages.contains_key(&p))
    }

    /// Maps `data.len()` bytes at `va` and copies `data` there.
    pub fn map_bytes(&mut self, va: u64, data: &[u8]) -> Result<(), MemFault> {
        self.map(va, data.len() as u64);
        self.write(va, data)
    }

    /// The word holding byte `va`, or the fault for an access of `kind`.
    fn word(&self, va: u64, kind: AccessKind) -> Result<&AtomicU64, MemFault> {
        let page = self
            .pages
            .get(&(va / PAGE_SIZE))
            .ok_or(MemFault { va, kind })?;
        page.get(((va % PAGE_SIZE) / 8) as usize)
            .ok_or(MemFault { va, kind })
    }

    /// Calls `f(word, first_byte_in_word, byte_count, offset_in_access)` for each 8-byte word the
    /// access `va..va + len` touches, after checking the whole range is mapped (so a faulting
    /// access changes nothing). Pages are looked up once each.
    fn for_words(
        &self,
        va: u64,
        len: usize,
        kind: AccessKind,
        mut f: impl FnMut(&AtomicU64, usize, usize, usize),
    ) -> Result<(), MemFault> {
        if len == 0 {
            return Ok(());
        }
        let end = va
            .checked_add(len as u64)
            .ok_or(MemFault { va: u64::MAX, kind })?;
        let first = va / PAGE_SIZE;
        let last = (end - 1) / PAGE_SIZE;
        // One page (the common case) needs one lookup; more are checked before any byte moves.
        let mut pages: [Option<&[AtomicU64]>; 4] = [None; 4];
        let many = last - first >= pages.len() as u64;
        for p in first..=last {
            match self.pages.get(&p) {
                Some(page) if !many => pages[(p - first) as usize] = Some(page),
                Some(_) => {}
                None => {
                    return Err(MemFault {
                        va: (p * PAGE_SIZE).max(va),
                        kind,
                    })
                }
            }
        }
        let mut addr = va;
        let mut done = 0usize;
        while done < len {
            let p = addr / PAGE_SIZE;
            let page = match pages.get((p - first) as usize).copied().flatten() {
                Some(page) => page,
                None => self.pages.get(&p).ok_or(MemFault { va: addr, kind })?,
            };
            let page_end = ((p + 1) * PAGE_SIZE).min(end);
            while addr < page_end {
                let byte = (addr % 8) as usize;
                let n = (8 - byte).min((page_end - addr) as usize);
                let w = page
                    .get(((addr % PAGE_SIZE) / 8) as usize)
                    .ok_or(MemFault { va: addr, kind })?;
                f(w, byte, n, done);
                done += n;
                addr += n as u64;
            }
        }
        Ok(())
    }
}

impl PagedMemory {
    /// The words of an access of whole, aligned words within one mapped page (the common
    /// case, done without the general loop); `None` for anything else.
    fn whole_words(&self, va: u64, len: usize) -> Option<&[AtomicU64]> {
        let off = va % PAGE_SIZE;
        if va % 8 != 0 || len % 8 != 0 || off + len as u64 > PAGE_SIZE {
            return None;
        }
        let page = self.pages.get(&(va / PAGE_SIZE))?;
        let first = (off / 8) as usize;
        page.get(first..first + len / 8)
    }
}

impl Memory for PagedMemory {
    fn read(&self, va: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        if let Some(words) = self.whole_words(va, buf.len()) {
            for (d, w) in buf.chunks_exact_mut(8).zip(words) {
                d.copy_from_slice(&w.load(Ordering::Acquire).to_le_bytes());
            }
            return Ok(());
        }
        self.for_words(va, buf.len(), AccessKind::Read, |w, byte, n, at| {
            let bytes = w.load(Ordering::Acquire).to_le_bytes();
            if let (Some(dst), Some(src)) = (buf.get_mut(at..at + n), bytes.get(byte..byte + n)) {
                dst.copy_from_slice(src);
            }
        })
    }

    fn write(&self, va: u64, data: &[u8]) -> Result<(), MemFault> {
        if let Some(words) = self.whole_words(va, data.len()) {
            for (s, w) in data.chunks_exact(8).zip(words) {
                let mut b = [0u8; 8];
                b.copy_from_slice(s);
                w.store(u64::from_le_bytes(b), Ordering::Release);
            }
            return Ok(());
        }
        self.for_words(va, data.len(), AccessKind::Write, |w, byte, n, at| {
            if n == 8 {
                let mut b = [0u8; 8];
                b.copy_from_slice(data.get(at..at + 8).unwrap_or(&[0; 8]));
                w.store(u64::from_le_bytes(b), Ordering::Release);
                return;
            }
            // A partial word: replace only our bytes, so concurrent writers of the other bytes
            // of the word are not undone.
            let _ = w.fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| {
                let mut b = old.to_le_bytes();
                if let (Some(dst), Some(src)) = (b.get_mut(byte..byte + n), data.get(at..at + n)) {
                    dst.copy_from_slice(src);
                }
                Some(u64::from_le_bytes(b))
            });
        })
    }

    fn atomic32(&self, va: u64, op: AtomicOp, src: u32, cmp: u32) -> Result<u32, MemFault> {
        let kind = AccessKind::Write;
        if va % 4 != 0 {
            return Err(MemFault { va, kind });
        }
        let w = self.word(va, kind)?;
        let shift = (va % 8) * 8;
        let mut old32 = 0;
        let _ = w.fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| {
            old32 = (old >> shift) as u32;
            let new = op.apply32(old32, src, cmp);
            Some((old & !(0xFFFF_FFFFu64 << shift)) | (u64::from(new) << shift))
        });
        Ok(old32)
    }

    fn atomic64(&self, va: u64, op: AtomicOp, src: u64, cmp: u64) -> Result<u64, MemFault> {
        let kind = AccessKind::Write;
        if va % 8 != 0 {
            return Err(MemFault { va, kind });
        }
        let w = self.word(va, kind)?;
        let old = w
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| {
                Some(op.apply64(old, src, cmp))
            })
            .unwrap_or_else(|v| v);
        Ok(old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_writes_and_faults() {
        let mut m = PagedMemory::new();
        m.map(0x1000, 0x2000);
        assert!(m.is_mapped(0x1000, 0x2000) && !m.is_mapped(0xFFF, 2));
        let data: Vec<u8> = (0..100).collect();
        m.write(0x1FD3, &data).unwrap();
        let mut back = vec![0; 100];
        m.read(0x1FD3, &mut back).unwrap();
        assert_eq!(back, data);
        assert_eq!(m.read_u32(0x1FD3).unwrap(), 0x03020100);
        let f = m.write(0x2FFE, &[1, 2, 3, 4]).unwrap_err();
        assert_eq!(
            f,
            MemFault {
                va: 0x3000,
                kind: AccessKind::Write
            }
        );
        // The failed write changed nothing.
        assert_eq!(m.read_u32(0x2FFC).unwrap(), 0);
        assert_eq!(
            m.read_u32(0x800),
            Err(MemFault {
                va: 0x800,
                kind: AccessKind::Read
            })
        );
        assert_eq!(m.atomic32(0x1004, AtomicOp::Add, 5, 0).unwrap(), 0);
        assert_eq!(m.atomic32(0x1004, AtomicOp::Add, 5, 0).unwrap(), 5);
        assert_eq!(m.read_u64(0x1000).unwrap(), 10 << 32);
        assert_eq!(m.atomic64(0x1000, AtomicOp::Swap, 7, 0).unwrap(), 10 << 32);
        assert!(m.atomic32(0x1001, AtomicOp::Add, 1, 0).is_err());
        m.unmap(0x1000, 1);
        assert!(!m.is_mapped(0x1000, 1) && m.is_mapped(0x2000, 1));
    }

    #[test]
    fn atomics_are_atomic_across_threads() {
        let mut m = PagedMemory::new();
        m.map(0, 4096);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        m.atomic32(4, AtomicOp::Add, 1, 0).unwrap();
                        m.atomic64(8, AtomicOp::Add, 3, 0).unwrap();
                        m.write(0, &[1]).unwrap();
                    }
                });
            }
        });
        assert_eq!(m.read_u32(4).unwrap(), 40_000);
        assert_eq!(m.read_u64(8).unwrap(), 120_000);
        assert_eq!(m.read_u32(0).unwrap(), 1);
    }
}
