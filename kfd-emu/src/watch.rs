//! Address watches: every access of machine code to a watched range is reported, with the
//! instruction, its PC, the wave and the lane, as rocgdb's address watch reports writes (the
//! hardware's address-watch registers catch a few ranges; here any number, reads too if asked).
//! Set with [`crate::EmuConfig::watch`] / `KFDRT_EMU_WATCH`, or at run time with
//! [`crate::Emulator::watch`]; hits are logged at `warn` and kept
//! ([`crate::Emulator::watch_hits`]).

use kfd_emu_isa::{WatchHit, WatchSet};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// Hits kept at most (the oldest go first).
const KEPT: usize = 4096;

/// One GPU's watch: the set its dispatches check, and the hits they reported.
#[derive(Default)]
pub(crate) struct WatchState {
    set: Mutex<Option<Arc<WatchSet>>>,
    hits: Arc<Mutex<VecDeque<WatchHit>>>,
}

impl WatchState {
    /// Watches `ranges` (`[start, end)`), loads too with `reads`; no ranges: none.
    pub(crate) fn set(&self, ranges: &[(u64, u64)], reads: bool) {
        let set = (!ranges.is_empty()).then(|| {
            let hits = self.hits.clone();
            Arc::new(WatchSet {
                ranges: ranges.to_vec(),
                reads,
                sink: Arc::new(move |h: &WatchHit| {
                    log::warn!(
                        "kfd-emu: watch: {} of {} bytes at {:#x} by {:#x}: {} (wave {} lane {} of work-group {:?})",
                        if h.write { "write" } else { "read" },
                        h.bytes,
                        h.address,
                        h.pc,
                        h.instruction,
                        h.wave,
                        h.lane,
                        h.work_group
                    );
                    let mut q = hits.lock().unwrap_or_else(|p| p.into_inner());
                    if q.len() == KEPT {
                        q.pop_front();
                    }
                    q.push_back(h.clone());
                }),
            })
        });
        *self.set.lock().unwrap_or_else(|p| p.into_inner()) = set;
    }

    /// What a dispatch starting now checks.
    pub(crate) fn current(&self) -> Option<Arc<WatchSet>> {
        self.set.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The hits so far, oldest first (taken: a second call returns only newer ones).
    pub(crate) fn take_hits(&self) -> Vec<WatchHit> {
        self.hits
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect()
    }
}
