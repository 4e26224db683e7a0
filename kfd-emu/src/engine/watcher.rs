//! The doorbell watcher: how an idle emulated device costs (almost) nothing.
//!
//! A packet processor with nothing to run backs off (spin, yield, short sleeps) and, once it
//! has been idle for a while, sleeps deeply: no timed wake-ups, only a doorbell hint (which an
//! in-process runtime such as kfdrt sends with every doorbell it rings) or this watcher wakes
//! it. One watcher thread per emulator looks, for every queue, at what a client changes to
//! submit work (the doorbell slot and the write pointer) and at the fault injector's controls,
//! and wakes that queue's processor when one changed (only that one: waking the GPU's idle
//! processors for a busy neighbour would keep them out of their deep sleep). It runs only while
//! some processor sleeps deeply,
//! at a period that grows from [`MIN_PERIOD`] to [`MAX_PERIOD`] while nothing changes. So a
//! client that rings doorbells without hints (ROCr under the preload) is noticed within
//! `MAX_PERIOD` of an idle spell, and an idle device with any number of queues wakes
//! `1 / MAX_PERIOD` times a second. With doorbell traps ([`crate::doorbell_trap`]) such a
//! client's first doorbell store faults and wakes the watcher at once instead.

use crate::device::GpuState;
use crate::fault::FaultInjector;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

/// The watcher's period right after it saw a change.
pub(crate) const MIN_PERIOD: Duration = Duration::from_micros(250);
/// The longest period: the worst-case delay before a doorbell rung on an idle device without
/// a hint or a trap is noticed. (The fault injector's controls and trapped doorbell stores wake
/// the watcher at once.)
pub(crate) const MAX_PERIOD: Duration = Duration::from_millis(8);
/// How long a deep sleep lasts with no wake-up at all (a safety net, not a mechanism).
pub(crate) const DEEP_SLEEP: Duration = Duration::from_secs(1);

/// What the watcher and the processors share.
#[derive(Default)]
pub(crate) struct Watch {
    queues: Mutex<Vec<Watched>>,
    /// Processors in a deep sleep now.
    deep_sleepers: AtomicUsize,
    stop: AtomicBool,
    /// The watcher sleeps here while no processor sleeps deeply.
    lock: Mutex<()>,
    cv: Condvar,
}

/// What the watcher looks at of a queue (its control block, `control::QueueCtl`, is one).
pub(crate) trait WatchedQueue: Send + Sync {
    /// The queue's GPU.
    fn gpu(&self) -> &GpuState;
    /// The queue's doorbell slot.
    fn doorbell_index(&self) -> u32;
    /// Where the client writes the queue's write pointer.
    fn wptr_address(&self) -> u64;
    /// The queue is being destroyed.
    fn stopped(&self) -> bool;
}

struct Watched {
    queue: Weak<dyn WatchedQueue>,
    doorbell: u64,
    wptr: u64,
}

impl Watch {
    /// Starts watching `queue` (at queue creation).
    pub(crate) fn add<Q: WatchedQueue + 'static>(&self, queue: &Arc<Q>) {
        let (doorbell, wptr) = observe(&**queue);
        let queue: Arc<dyn WatchedQueue> = queue.clone();
        self.lock_queues().push(Watched {
            queue: Arc::downgrade(&queue),
            doorbell,
            wptr,
        });
    }

    fn lock_queues(&self) -> std::sync::MutexGuard<'_, Vec<Watched>> {
        self.queues.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A processor starts a deep sleep: make sure the watcher runs.
    pub(crate) fn enter_deep_sleep(&self) {
        if self.deep_sleepers.fetch_add(1, Ordering::SeqCst) == 0 {
            let _g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
            self.cv.notify_all();
        }
    }

    /// The processor woke up.
    pub(crate) fn leave_deep_sleep(&self) {
        self.deep_sleepers.fetch_sub(1, Ordering::SeqCst);
    }

    /// Ends the watcher thread (at emulator drop).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let _g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.cv.notify_all();
    }

    /// One look at every queue: wakes the processor of each whose doorbell or write pointer moved;
    /// forgets destroyed queues. Returns whether anything moved.
    fn scan(&self) -> bool {
        let mut moved = false;
        self.lock_queues().retain_mut(|w| {
            let Some(q) = w.queue.upgrade() else {
                return false;
            };
            let now = observe(&*q);
            if now != (w.doorbell, w.wptr) {
                (w.doorbell, w.wptr) = now;
                q.gpu().queue_moved(q.doorbell_index());
                moved = true;
            }
            !q.stopped()
        });
        moved
    }

    fn wake_all(&self) {
        for w in self.lock_queues().iter() {
            if let Some(q) = w.queue.upgrade() {
                q.gpu().doorbell_rung();
            }
        }
    }
}

/// What a client changes to submit work to a queue.
fn observe(q: &dyn WatchedQueue) -> (u64, u64) {
    let gpu = q.gpu();
    let doorbell = gpu.doorbell(q.doorbell_index());
    let wptr = gpu.vm.read_u64(q.wptr_address()).unwrap_or(0);
    (doorbell, wptr)
}

/// Starts the watcher thread of an emulator.
pub(crate) fn spawn(watch: Arc<Watch>, faults: Arc<FaultInjector>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("kfd-emu-watcher".into())
        .spawn(move || run(&watch, &faults))
        .map(drop)
}

fn run(watch: &Watch, faults: &FaultInjector) {
    let mut period = MIN_PERIOD;
    let mut last_kicks = crate::doorbell_trap::fired_count();
    let mut controls = faults.generation();
    while !watch.stop.load(Ordering::SeqCst) {
        if watch.deep_sleepers.load(Ordering::SeqCst) == 0 {
            let g = watch.lock.lock().unwrap_or_else(|p| p.into_inner());
            if watch.deep_sleepers.load(Ordering::SeqCst) == 0 && !watch.stop.load(Ordering::SeqCst)
            {
                // Woken when a processor goes to sleep deeply; the timeout only bounds what a
                // missed notification could cost.
                let _ = watch.cv.wait_timeout(g, DEEP_SLEEP);
            }
            period = MIN_PERIOD;
            continue;
        }
        // A trapped doorbell store (or another kick) woke the watcher: look again soon, as the
        // store may not have landed at the first look. (The trap woke the GPU's processors.)
        let kicks = crate::doorbell_trap::fired_count();
        let mut moved = std::mem::replace(&mut last_kicks, kicks) != kicks;
        moved |= watch.scan();
        let now = faults.generation();
        if now != controls {
            // A stall lifted, a queue resumed: every processor re-reads its state.
            controls = now;
            watch.wake_all();
            moved = true;
        }
        period = if moved {
            MIN_PERIOD
        } else {
            (period * 2).min(MAX_PERIOD)
        };
        // Sleeps the period, or until a client's doorbell store traps.
        crate::doorbell_trap::wait(kicks, period);
    }
}
