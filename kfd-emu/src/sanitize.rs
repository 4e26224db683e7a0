//! The GPU sanitizer (`KFDRT_EMU_SANITIZE=1`, [`crate::EmuConfig::sanitize`]): every dispatch
//! of machine code checks its global accesses against the buffers they came from and its LDS
//! accesses for uninitialised reads and races between waves (see [`kfd_emu_isa::sanitize`]).
//! Findings are logged at `warn` once per kind and instruction, with the source lines a runtime
//! can name ([`crate::Emulator::set_symbolizer`]), and kept ([`crate::Emulator::sanitizer_findings`]).
//!
//! The buffers are the ones a runtime registers ([`crate::Emulator::track_buffer`]: kfdrt
//! registers each of its buffers, suballocated ones included, at the size asked for); where
//! none is registered, the KFD allocation mapped there stands for the buffer.

use crate::device::GpuState;
use kfd_emu_isa::sanitize::{BufferMap, Finding, FindingKind, Owner, Sanitizer};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, RwLock};

/// Findings kept at most (the oldest go first).
const KEPT: usize = 1024;

/// Maps a PC to its source lines, innermost first (empty when unknown).
pub type Symbolizer = dyn Fn(u64) -> Vec<String> + Send + Sync;

/// The emulator's sanitizer: on or off for its whole life, the registered buffers, and what was
/// found.
#[derive(Default)]
pub(crate) struct SanitizerState {
    pub(crate) enabled: bool,
    /// `start -> end` of each registered buffer.
    buffers: RwLock<BTreeMap<u64, u64>>,
    findings: Mutex<Findings>,
    symbolizer: RwLock<Option<Arc<Symbolizer>>>,
}

#[derive(Default)]
struct Findings {
    seen: HashSet<(FindingKind, u64)>,
    kept: VecDeque<Finding>,
}

impl SanitizerState {
    pub(crate) fn new(enabled: bool) -> SanitizerState {
        SanitizerState {
            enabled,
            ..SanitizerState::default()
        }
    }

    pub(crate) fn track(&self, start: u64, len: u64) {
        if self.enabled && len > 0 {
            let mut b = self.buffers.write().unwrap_or_else(|p| p.into_inner());
            b.insert(start, start.saturating_add(len));
        }
    }

    pub(crate) fn untrack(&self, start: u64) {
        if self.enabled {
            let mut b = self.buffers.write().unwrap_or_else(|p| p.into_inner());
            b.remove(&start);
        }
    }

    pub(crate) fn set_symbolizer(&self, s: Option<Arc<Symbolizer>>) {
        *self.symbolizer.write().unwrap_or_else(|p| p.into_inner()) = s;
    }

    pub(crate) fn take_findings(&self) -> Vec<Finding> {
        let mut f = self.findings.lock().unwrap_or_else(|p| p.into_inner());
        f.kept.drain(..).collect()
    }

    /// The checks a dispatch on `gpu` runs, when the sanitizer is on.
    pub(crate) fn for_dispatch(self: &Arc<Self>, gpu: &Arc<GpuState>) -> Option<Arc<Sanitizer>> {
        if !self.enabled {
            return None;
        }
        let me = self.clone();
        Some(Arc::new(Sanitizer {
            buffers: Arc::new(Buffers {
                state: self.clone(),
                gpu: gpu.clone(),
            }),
            sink: Arc::new(move |f: &Finding| me.report(f)),
        }))
    }

    /// Logs and keeps a finding the first time its kind is seen at its instruction.
    fn report(&self, f: &Finding) {
        {
            let mut found = self.findings.lock().unwrap_or_else(|p| p.into_inner());
            if !found.seen.insert((f.kind, f.pc)) {
                return;
            }
            if found.kept.len() == KEPT {
                found.kept.pop_front();
            }
            found.kept.push_back(f.clone());
        }
        let symbolizer = self
            .symbolizer
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let at = |pc: u64| {
            let lines = symbolizer.as_ref().map(|s| s(pc)).unwrap_or_default();
            if lines.is_empty() {
                String::new()
            } else {
                format!(" at {}", lines.join(", inlined into "))
            }
        };
        let what = if f.write { "write" } else { "read" };
        let who = format!(
            "wave {} lane {} of work-group {:?}",
            f.wave, f.lane, f.work_group
        );
        let message = match (f.kind, f.buffer, &f.other) {
            (FindingKind::OutOfBounds, Some((start, end)), _) => {
                let relation = if f.address == end {
                    "just past its end".to_owned()
                } else if f.address > end {
                    format!("{} bytes past its end", f.address - end)
                } else if f.address < start {
                    format!("{} bytes before its start", start - f.address)
                } else {
                    "running past its end".to_owned()
                };
                format!(
                    "out-of-bounds {what} of {} bytes at {:#x}, {relation}: the pointer came from \
                     the buffer [{start:#x}, {end:#x}) ({} bytes); {} by {who} at {:#x}{}",
                    f.bytes,
                    f.address,
                    end - start,
                    f.instruction,
                    f.pc,
                    at(f.pc)
                )
            }
            (FindingKind::OutOfBounds, None, _) => format!(
                "{what} of {} bytes at {:#x}, which no buffer owns (padding after a buffer, or \
                 free memory of a suballocated block): {} by {who} at {:#x}{}",
                f.bytes,
                f.address,
                f.instruction,
                f.pc,
                at(f.pc)
            ),
            (FindingKind::UninitializedLds, ..) => format!(
                "read of {} bytes of LDS at offset {:#x} that no wave of the work-group wrote: \
                 {} by {who} at {:#x}{}",
                f.bytes,
                f.address,
                f.instruction,
                f.pc,
                at(f.pc)
            ),
            (_, _, Some(o)) => format!(
                "LDS race at offset {:#x} ({} bytes): {} ({what}) by {who} at {:#x}{}, and a {} \
                 by wave {} at {:#x}{}, with no barrier between",
                f.address,
                f.bytes,
                f.instruction,
                f.pc,
                at(f.pc),
                if o.write { "write" } else { "read" },
                o.wave,
                o.pc,
                at(o.pc)
            ),
            _ => format!("{:?} at {:#x}: {}", f.kind, f.pc, f.instruction),
        };
        log::warn!("kfd-emu: sanitizer: {message}");
    }
}

/// A dispatch's view of the buffers: the registered ones, else the KFD allocation mapped there.
struct Buffers {
    state: Arc<SanitizerState>,
    gpu: Arc<GpuState>,
}

impl BufferMap for Buffers {
    fn buffer_at(&self, address: u64) -> Owner {
        let b = self.state.buffers.read().unwrap_or_else(|p| p.into_inner());
        if let Some((&start, &end)) = b.range(..=address).next_back() {
            if address < end {
                return Owner::Buffer(start, end);
            }
        }
        let Some(m) = self.gpu.vm.mapping_at(address) else {
            return Owner::Unknown;
        };
        let end = m.start + m.len;
        // An allocation holding registered buffers owns nothing outside them.
        if b.range(m.start..end).next().is_some() {
            Owner::Nobody
        } else {
            Owner::Buffer(m.start, end)
        }
    }
}
