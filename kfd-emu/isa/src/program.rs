//! The decoded-program cache: instructions decoded once per code address, shared by every
//! wave and work-group that runs them. It models the instruction cache: code changed in memory
//! is not seen until the cache is invalidated ([`CodeCache::invalidate`], which kfd-emu calls
//! where the hardware's icache is invalidated), so a stale fetch behaves as on hardware.
//!
//! Code is decoded in regions: from an entry PC up to and including the first instruction
//! after which execution cannot fall through (`s_endpgm`, `s_branch`, `s_setpc_b64`, ...), or
//! until the code is no longer readable. A branch into a region reuses it; a PC no region
//! holds starts a new one.

use crate::decode::{decode, Inst, Op, MAX_INST_DWORDS};
use crate::error::WaveError;
use crate::memory::Memory;
use crate::target::Target;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// Most instructions one region holds (a bound for code that never ends).
const MAX_REGION_INSTS: usize = 16384;
/// Bytes fetched at a time while decoding.
const FETCH_CHUNK: usize = 256;

/// Straight-line decoded code.
#[derive(Debug)]
pub struct Region {
    /// Address of the first instruction.
    pub start: u64,
    /// The instructions in order.
    pub insts: Vec<Inst>,
    /// Address of each instruction.
    pub pcs: Vec<u64>,
}

impl Region {
    /// Index of the instruction at `pc`, if the region has one there.
    pub fn index_of(&self, pc: u64) -> Option<usize> {
        self.pcs.binary_search(&pc).ok()
    }

    /// The address just past the last instruction.
    pub fn end(&self) -> u64 {
        match (self.pcs.last(), self.insts.last()) {
            (Some(pc), Some(i)) => pc + i.size(),
            _ => self.start,
        }
    }
}

/// Whether execution cannot continue at the next instruction.
fn ends_region(i: &Inst) -> bool {
    matches!(
        i.op,
        Op::SEndpgm
            | Op::SBranch
            | Op::SSetpcB64
            | Op::SSwappcB64
            | Op::SEndpgmSaved
            | Op::SEndpgmOrderedPsDone
            | Op::Invalid
    )
}

/// Decoded code by address, for one target.
#[derive(Debug)]
pub struct CodeCache {
    target: Target,
    regions: RwLock<BTreeMap<u64, Arc<Region>>>,
    decoded: AtomicU64,
    invalidations: AtomicU64,
}

/// Counters of a [`CodeCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodeCacheStats {
    /// Instructions decoded since creation.
    pub decoded: u64,
    /// Invalidations.
    pub invalidations: u64,
    /// Regions held now.
    pub regions: usize,
}

impl CodeCache {
    /// An empty cache for `target`.
    pub fn new(target: Target) -> CodeCache {
        CodeCache {
            target,
            regions: RwLock::new(BTreeMap::new()),
            decoded: AtomicU64::new(0),
            invalidations: AtomicU64::new(0),
        }
    }

    /// The target the cache decodes for.
    pub fn target(&self) -> Target {
        self.target
    }

    /// Drops every decoded instruction (an instruction-cache invalidation).
    pub fn invalidate(&self) {
        self.regions
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.invalidations.fetch_add(1, Ordering::Relaxed);
    }

    /// Drops the decoded instructions of regions overlapping `start..start + len`.
    pub fn invalidate_range(&self, start: u64, len: u64) {
        let end = start.saturating_add(len);
        self.regions
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, r| r.end() <= start || r.start >= end);
        self.invalidations.fetch_add(1, Ordering::Relaxed);
    }

    /// Counters.
    pub fn stats(&self) -> CodeCacheStats {
        CodeCacheStats {
            decoded: self.decoded.load(Ordering::Relaxed),
            invalidations: self.invalidations.load(Ordering::Relaxed),
            regions: self.regions.read().map(|r| r.len()).unwrap_or(0),
        }
    }

    /// The region holding an instruction at `pc` and its index there, decoding a new region
    /// from memory when no cached one has it.
    pub fn lookup<M: Memory + ?Sized>(
        &self,
        pc: u64,
        mem: &M,
    ) -> Result<(Arc<Region>, usize), WaveError> {
        {
            let map = self.regions.read().unwrap_or_else(|p| p.into_inner());
            // Regions start at or before pc; a few candidates may contain it.
            for (_, r) in map.range(..=pc).rev().take(4) {
                if let Some(i) = r.index_of(pc) {
                    return Ok((r.clone(), i));
                }
            }
        }
        let region = Arc::new(self.decode_region(pc, mem)?);
        self.decoded
            .fetch_add(region.insts.len() as u64, Ordering::Relaxed);
        self.regions
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(pc, region.clone());
        Ok((region, 0))
    }

    fn decode_region<M: Memory + ?Sized>(&self, start: u64, mem: &M) -> Result<Region, WaveError> {
        if start % 4 != 0 {
            return Err(WaveError::MemoryFault {
                va: start,
                kind: crate::AccessKind::Execute,
                pc: start,
            });
        }
        let mut words: Vec<u32> = Vec::new();
        let mut fetched_to = start;
        let mut readable = true;
        let mut insts = Vec::new();
        let mut pcs = Vec::new();
        let mut pc = start;
        loop {
            // Keep MAX_INST_DWORDS words ahead of the decode point while memory allows.
            let need = (pc - start) / 4 + MAX_INST_DWORDS as u64;
            while readable && (words.len() as u64) < need {
                let mut buf = [0u8; FETCH_CHUNK];
                match fetch_prefix(mem, fetched_to, &mut buf) {
                    0 => readable = false,
                    n => {
                        words.extend(
                            buf.get(..n)
                                .unwrap_or(&[])
                                .chunks_exact(4)
                                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                        );
                        fetched_to = fetched_to.wrapping_add(n as u64);
                        readable = n == FETCH_CHUNK;
                    }
                }
            }
            let at = ((pc - start) / 4) as usize;
            let Some(window) = words.get(at..).filter(|w| !w.is_empty()) else {
                break;
            };
            let window = window.get(..MAX_INST_DWORDS).unwrap_or(window);
            let inst = decode(self.target, window);
            let end = ends_region(&inst);
            pcs.push(pc);
            pc = pc.wrapping_add(inst.size());
            insts.push(inst);
            if pc < start {
                // The code reached the top of the address space.
                break;
            }
            if end || insts.len() >= MAX_REGION_INSTS {
                break;
            }
        }
        if insts.is_empty() {
            // Not even the first word could be fetched.
            let mut b = [0u8; 4];
            let va = match mem.fetch(start, &mut b) {
                Err(f) => f.va,
                Ok(()) => start,
            };
            return Err(WaveError::MemoryFault {
                va,
                kind: crate::AccessKind::Execute,
                pc: start,
            });
        }
        Ok(Region { start, insts, pcs })
    }
}

/// Fetches as many whole dwords of `buf` as are readable from `va`; returns the byte count.
fn fetch_prefix<M: Memory + ?Sized>(mem: &M, va: u64, buf: &mut [u8]) -> usize {
    if mem.fetch(va, buf).is_ok() {
        return buf.len();
    }
    // Up to the first unreadable dword, a dword at a time (only at the end of code).
    let mut n = 0;
    while let Some(d) = buf.get_mut(n..n + 4) {
        if mem.fetch(va + n as u64, d).is_err() {
            break;
        }
        n += 4;
    }
    n
}
