//! Waking the processors that sleep deeply, one queue at a time.
//!
//! A processor idle for a while parks its thread here, noting its queue's doorbell slot and the
//! value it held before the processor last looked for work. A doorbell hint then wakes only the
//! processors whose doorbell moved since: a runtime submitting to one queue does not wake every
//! idle queue of the GPU (on a 2-core machine, waking two idle PM4 and SDMA processors on every
//! AQL submission costs the submission ten times its time). Everything else that may give a
//! sleeping processor work (a queue enabled or destroyed, an exception, the watcher seeing a
//! write pointer move) wakes them all or all of them.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Thread;
use std::time::{Duration, Instant};

struct Sleeper {
    doorbell_index: u32,
    /// The doorbell's value before the processor last looked for work.
    seen: u64,
    /// `None`: it sleeps on the doorbell-trap futex (see [`crate::doorbell_trap`]), which the
    /// trap handler can wake directly.
    thread: Option<Thread>,
    woken: Arc<AtomicBool>,
}

impl Sleeper {
    fn wake(&self) {
        self.woken.store(true, Ordering::SeqCst);
        match &self.thread {
            Some(t) => t.unpark(),
            None => crate::doorbell_trap::kick(),
        }
    }
}

/// The processors of one GPU in a deep sleep.
#[derive(Default)]
pub(crate) struct DeepSleepers {
    sleepers: Mutex<Vec<Sleeper>>,
    /// `sleepers.len()`, read without the lock on every hint.
    count: AtomicUsize,
}

impl DeepSleepers {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Sleeper>> {
        self.sleepers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Parks the calling thread until it is woken or `timeout` passes. `still_idle` is asked
    /// once the thread is registered (so a wake-up between the caller's last look and the
    /// registration is not lost): `false` returns at once. Returns whether it was woken (by a
    /// wake-up or a trapped doorbell store) rather than timed out or not idle.
    ///
    /// `trapped`: the GPU's doorbell mappings are trapped; the thread then sleeps on the trap
    /// futex, so the first doorbell store wakes it from the fault handler itself, and any
    /// trapped store (of any GPU) ends the sleep.
    pub(crate) fn sleep(
        &self,
        doorbell_index: u32,
        seen: u64,
        timeout: Duration,
        trapped: bool,
        still_idle: impl Fn() -> bool,
    ) -> bool {
        let woken = Arc::new(AtomicBool::new(false));
        // Read before registering: a trap or wake-up after this is not slept through.
        let traps_seen = crate::doorbell_trap::fired_count();
        {
            let mut s = self.lock();
            s.push(Sleeper {
                doorbell_index,
                seen,
                thread: (!trapped).then(std::thread::current),
                woken: woken.clone(),
            });
            self.count.store(s.len(), Ordering::SeqCst);
        }
        if still_idle() {
            let deadline = Instant::now() + timeout;
            while !woken.load(Ordering::SeqCst) {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                if trapped {
                    if crate::doorbell_trap::fired_count() != traps_seen {
                        break;
                    }
                    crate::doorbell_trap::wait(traps_seen, deadline - now);
                } else {
                    std::thread::park_timeout(deadline - now);
                }
            }
        }
        let mut s = self.lock();
        s.retain(|x| !Arc::ptr_eq(&x.woken, &woken));
        self.count.store(s.len(), Ordering::SeqCst);
        woken.load(Ordering::SeqCst)
            || (trapped && crate::doorbell_trap::fired_count() != traps_seen)
    }

    /// Wakes the sleepers whose doorbell (read with `doorbell`) moved since they looked;
    /// returns whether it woke any.
    pub(crate) fn wake_moved(&self, doorbell: impl Fn(u32) -> u64) -> bool {
        if self.count.load(Ordering::SeqCst) == 0 {
            return false;
        }
        let mut woke = false;
        for s in self.lock().iter() {
            if doorbell(s.doorbell_index) != s.seen {
                s.wake();
                woke = true;
            }
        }
        woke
    }

    /// Wakes the sleepers of the queue with doorbell `doorbell_index`; returns whether it woke
    /// any.
    pub(crate) fn wake_queue(&self, doorbell_index: u32) -> bool {
        if self.count.load(Ordering::SeqCst) == 0 {
            return false;
        }
        let mut woke = false;
        for s in self
            .lock()
            .iter()
            .filter(|s| s.doorbell_index == doorbell_index)
        {
            s.wake();
            woke = true;
        }
        woke
    }

    /// Wakes every sleeper.
    pub(crate) fn wake_all(&self) {
        if self.count.load(Ordering::SeqCst) == 0 {
            return;
        }
        for s in self.lock().iter() {
            s.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn only_a_moved_doorbell_wakes_its_sleeper() {
        let d = Arc::new(DeepSleepers::default());
        let bells = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
        let woke = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        let threads: Vec<_> = (0..2u32)
            .map(|i| {
                let (d, woke) = (d.clone(), woke.clone());
                std::thread::spawn(move || {
                    assert!(d.sleep(i, 0, Duration::from_secs(30), false, || true));
                    woke[i as usize].store(true, Ordering::SeqCst);
                })
            })
            .collect();
        while d.count.load(Ordering::SeqCst) < 2 {
            std::thread::yield_now();
        }
        bells[1].store(5, Ordering::SeqCst);
        d.wake_moved(|i| bells[i as usize].load(Ordering::SeqCst));
        while !woke[1].load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !woke[0].load(Ordering::SeqCst),
            "an unmoved doorbell woke its sleeper"
        );
        d.wake_all();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(d.count.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_wake_before_the_sleep_is_not_lost() {
        let d = DeepSleepers::default();
        let start = Instant::now();
        assert!(!d.sleep(0, 0, Duration::from_secs(30), false, || false));
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}
