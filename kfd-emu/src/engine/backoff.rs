//! Waiting without burning a core: every processor loop, and every packet that polls memory,
//! backs off the same way while nothing changes.

use crate::device::GpuState;
use std::time::Duration;

/// Waits a little: spins first, then yields, then sleeps with growing intervals (woken early by
/// doorbell hints newer than `generation`), so an idle queue costs next to no CPU while a busy
/// one reacts at once. `idle_rounds` counts consecutive idle rounds; the caller resets it to 0
/// when there was work. `spin_poll` keeps spinning forever (the configuration's low-latency
/// mode).
pub(crate) fn idle(gpu: &GpuState, spin_poll: bool, idle_rounds: &mut u32, generation: u64) {
    *idle_rounds = idle_rounds.saturating_add(1);
    if spin_poll || *idle_rounds < 64 {
        std::hint::spin_loop();
    } else if *idle_rounds < 128 {
        std::thread::yield_now();
    } else {
        let us = 10u64 << (*idle_rounds - 128).min(7);
        gpu.wait_for_hint(generation, Duration::from_micros(us.min(1000)));
    }
}

/// How [`poll_until`] ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Polled {
    /// The condition held.
    Ready,
    /// The queue is being destroyed.
    Stopped,
}

/// Polls `ready` until it holds or `stopped` says so, backing off between tries; an error from
/// `ready` (a fault reading memory) ends the poll. The wake generation is read before each try,
/// so a doorbell hint between the try and the sleep is not missed.
pub(crate) fn poll_until<E>(
    gpu: &GpuState,
    spin_poll: bool,
    stopped: &dyn Fn() -> bool,
    mut ready: impl FnMut() -> Result<bool, E>,
) -> Result<Polled, E> {
    let mut rounds = 0u32;
    loop {
        let generation = gpu.wake_generation();
        if ready()? {
            return Ok(Polled::Ready);
        }
        if stopped() {
            return Ok(Polled::Stopped);
        }
        idle(gpu, spin_poll, &mut rounds, generation);
    }
}
