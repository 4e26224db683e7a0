//! Waiting without burning a core: every processor loop, and every packet that polls memory,
//! backs off the same way while nothing changes.

use super::watcher::{Watch, DEEP_SLEEP};
use crate::device::{GpuState, WakeSnapshot};
use std::time::Duration;

/// Idle rounds after which a processor waiting for work stops spinning and yielding and sleeps
/// (10 us, doubling up to 1 ms).
const LIGHT_SLEEP_FROM: u32 = 128;
/// Idle rounds before a processor waiting for work sleeps deeply (about 10 ms of sleeps).
const ROUNDS_BEFORE_DEEP_SLEEP: u32 = LIGHT_SLEEP_FROM + 8 + 8;

/// Waits a little: spins first, then yields, then sleeps with growing intervals (woken early by
/// any wake-up after `snap` was taken), so a busy queue reacts at once. `idle_rounds`
/// counts consecutive idle rounds; the caller resets it to 0 when there was work. `spin_poll`
/// keeps spinning forever (the configuration's low-latency mode).
///
/// `deep`: the caller waits for new work, which a client submits by moving the queue's write
/// pointer or ringing its doorbell; after about 10 ms of that it sleeps without timed wake-ups
/// until its doorbell moves (a hint names the GPU; [`crate::wake`] picks the queue), another
/// wake-up, or the doorbell watcher sees a change (see [`super::watcher`]); `snap` must then
/// hold the queue's doorbell. Callers polling memory a packet names (a barrier's signal) pass
/// `None` and keep 1 ms sleeps.
pub(crate) fn idle(
    gpu: &GpuState,
    spin_poll: bool,
    idle_rounds: &mut u32,
    snap: &WakeSnapshot,
    deep: Option<&Watch>,
) {
    *idle_rounds = idle_rounds.saturating_add(1);
    if spin_poll || *idle_rounds < 64 {
        std::hint::spin_loop();
    } else if *idle_rounds < LIGHT_SLEEP_FROM {
        std::thread::yield_now();
    } else if let (Some(watch), Some((doorbell, seen)), true) = (
        deep,
        snap.doorbell,
        *idle_rounds >= ROUNDS_BEFORE_DEEP_SLEEP,
    ) {
        watch.enter_deep_sleep();
        gpu.deep_sleeps
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let trapped = gpu.arm_doorbell_traps();
        let woken = gpu.deep.sleep(doorbell, seen, DEEP_SLEEP, trapped, || {
            gpu.unchanged_since(snap)
        });
        if woken {
            // Something happened: stay out of the deep sleep for a while (short sleeps first),
            // so a doorbell trap is not armed again at once, before the store that sprang it
            // has been retried (which would make it fault again).
            *idle_rounds = LIGHT_SLEEP_FROM;
        }
        watch.leave_deep_sleep();
    } else {
        let us = 10u64 << (*idle_rounds - LIGHT_SLEEP_FROM).min(7);
        gpu.wait_for_hint(snap, Duration::from_micros(us.min(1000)));
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
        let snap = gpu.idle_snapshot(spin_poll, None);
        if ready()? {
            return Ok(Polled::Ready);
        }
        if stopped() {
            return Ok(Polled::Stopped);
        }
        idle(gpu, spin_poll, &mut rounds, &snap, None);
    }
}
