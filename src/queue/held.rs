//! GPU work owns what it uses: the kernel's code, the buffers it was given, the signals it
//! waits on stay allocated until its completion has been observed.
//!
//! A submission carries a [`Held`] list. Waiting for it and then dropping it releases the list;
//! dropping it before that moves the list, with the completion signal, to its queue's
//! [`RetireList`], which lets go of each entry once its signal shows completion (checked at every
//! new submission on the queue) and of everything left when the queue is destroyed (the command
//! processor touches nothing after that, so the signals may be reused too).
//!
//! Compare wgpu-core's lifetime tracking: an active submission keeps its resources alive until
//! its fence passes.

use crate::signal::Signal;
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Resources GPU work keeps alive (type-erased handles: buffer memory, kernel code, signals).
/// The first one is stored inline: a batch of one kernel's dispatches holds just its code, and
/// moving that into the submission allocates nothing.
#[derive(Clone, Default)]
pub(crate) struct Held {
    first: Option<Arc<dyn Send + Sync>>,
    rest: Vec<Arc<dyn Send + Sync>>,
}

impl fmt::Debug for Held {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Held({} resources)", self.len())
    }
}

impl Held {
    pub(crate) fn push(&mut self, r: Arc<dyn Send + Sync>) {
        if self.first.is_none() {
            self.first = Some(r);
        } else {
            self.rest.push(r);
        }
    }

    pub(crate) fn extend(&mut self, other: &Held) {
        for r in other.first.iter().chain(&other.rest) {
            self.push(r.clone());
        }
    }

    pub(crate) fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }

    /// Takes everything, leaving `self` empty but keeping its spare capacity.
    pub(crate) fn take(&mut self) -> Held {
        Held {
            first: self.first.take(),
            // The common case (one kernel's code, inline) moves no vector at all.
            rest: if self.rest.is_empty() {
                Vec::new()
            } else {
                self.rest.drain(..).collect()
            },
        }
    }
}

/// Work that was dropped before anyone saw it complete: released when `signal` reaches 0.
struct Retired {
    signal: Signal,
    /// Kept, not read: dropping it is what releases the resources.
    _held: Held,
}

/// One queue's retired work.
#[derive(Default)]
pub(crate) struct RetireList {
    entries: Mutex<VecDeque<Retired>>,
    /// `entries.len()`, written under the lock, read without it.
    len: AtomicUsize,
}

impl RetireList {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Retired>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `held` until `signal` (which the work decrements to 0) shows completion.
    pub(crate) fn retire(&self, signal: Signal, held: Held) {
        let mut e = self.lock();
        e.push_back(Retired {
            signal,
            _held: held,
        });
        self.len.store(e.len(), Ordering::Release);
    }

    /// Lets go of what completed work held. Cheap when nothing is retired.
    pub(crate) fn prune(&self) {
        // Every submission calls this; most find nothing retired, and need not lock to see it.
        if self.len.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut e = self.lock();
        // Completions come mostly in order; a full sweep keeps out-of-order ones from piling up.
        e.retain(|r| r.signal.value() > 0);
        self.len.store(e.len(), Ordering::Release);
    }

    /// Lets go of everything after the queue was destroyed: its engine will neither run the
    /// work nor write the signals, which may therefore be reused at once.
    pub(crate) fn abandon(&self) {
        let entries = std::mem::take(&mut *self.lock());
        self.len.store(0, Ordering::Release);
        for r in entries {
            r.signal.disarm();
        }
    }
}
