//! The CP's arbitration between a GPU's compute queues by priority. KFD maps a queue's priority
//! (0-15) to a pipe priority in its MQD (`pipe_priority_map` in `kfd_mqd_manager.c`: 0-6 low,
//! 7-10 medium, 11-15 high; `CP_HQD_PIPE_PRIORITY`), and the CP launches the work-groups of a
//! higher-priority queue first when queues contend for the GPU.
//!
//! kfd-emu gives every queue host threads of its own, so without this a low-priority queue's
//! dispatch ran as fast as a high-priority one's. Here a dispatch does not start a new batch of
//! work-groups while a dispatch of a higher pipe priority on the same GPU still has
//! work-groups to start; work-groups already started run on (the CP does not preempt waves for
//! priority). A high-priority dispatch whose work-groups have all started no longer holds the
//! others back, so one that waits for lower-priority work cannot deadlock them.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

/// Pipe priorities: low, medium, high.
const LEVELS: usize = 3;

/// `pipe_priority_map[queue_priority]`.
pub(crate) fn pipe_priority(queue_priority: u32) -> usize {
    match queue_priority {
        0..=6 => 0,
        7..=10 => 1,
        _ => 2,
    }
}

/// One GPU's dispatches that still have work-groups to start, by pipe priority.
#[derive(Default)]
pub(crate) struct PipeArbiter {
    launching: [AtomicU32; LEVELS],
}

impl PipeArbiter {
    /// A dispatch of pipe priority `level` begins; it counts as launching until
    /// [`Launching::done`] or drop.
    pub(crate) fn begin(&self, level: usize) -> Launching<'_> {
        let level = level.min(LEVELS - 1);
        self.launching[level].fetch_add(1, Ordering::AcqRel);
        Launching {
            arbiter: self,
            level,
            done: AtomicBool::new(false),
        }
    }

    fn outranked(&self, level: usize) -> bool {
        self.launching[level + 1..]
            .iter()
            .any(|n| n.load(Ordering::Acquire) > 0)
    }
}

/// A dispatch that has work-groups to start (see [`PipeArbiter::begin`]).
pub(crate) struct Launching<'a> {
    arbiter: &'a PipeArbiter,
    level: usize,
    done: AtomicBool,
}

impl Launching<'_> {
    /// Waits, before starting more work-groups, while a higher-priority dispatch has some to
    /// start (or until `stopped`).
    pub(crate) fn wait_turn(&self, stopped: impl Fn() -> bool) {
        while self.arbiter.outranked(self.level) && !stopped() {
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    /// Every work-group has started (once; later calls do nothing).
    pub(crate) fn done(&self) {
        if !self.done.swap(true, Ordering::AcqRel) {
            self.arbiter.launching[self.level].fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for Launching<'_> {
    fn drop(&mut self) {
        self.done();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kfds_priority_map() {
        let levels: Vec<usize> = (0..16).map(pipe_priority).collect();
        assert_eq!(levels, [0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2]);
    }

    #[test]
    fn only_a_higher_level_still_launching_holds_a_dispatch_back() {
        let a = PipeArbiter::default();
        let low = a.begin(0);
        let high = a.begin(2);
        assert!(a.outranked(0) && a.outranked(1) && !a.outranked(2));
        high.done();
        high.done();
        assert!(!a.outranked(0));
        drop(low);
        assert_eq!(a.launching[0].load(Ordering::Relaxed), 0);
        assert_eq!(a.launching[2].load(Ordering::Relaxed), 0);
    }
}
