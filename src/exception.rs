//! Device exceptions: how a GPU fault reaches every wait instead of leaving it hanging.
//!
//! When a GPU faults (a page fault, or an engine exception no debugger claims), KFD stops every
//! queue the process has on that GPU and signals the process's memory-exception events with the
//! fault's address and kind; it writes no completion signal, and an AQL queue's error signal
//! stays clear. A GPU reset signals the hardware-exception events. A runtime that watches only
//! completion signals therefore waits forever. kfdrt creates one event of each kind when it
//! opens the device and every wait of a queue, fence or copy watches them, returning
//! [`Error::DeviceFault`] (or [`Error::DeviceReset`]) for its GPU.
//!
//! Both events are manual-reset (KFD lets user space reset only signal events), so once one
//! fires it stays signalled and no later wait can miss it; the first wait to see it records the
//! fault here, where the queues of that GPU look it up without a system call.

use crate::device::context::DeviceContext;
pub use crate::error::DeviceReset;
use crate::error::{Error, MemoryException, Result};
use crate::event::table::{EventKind, EventReset, EventTable, WaitMode};
use kfd_sys::bindings::*;
use kfd_sys::Driver;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// One exception as an event reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Exception {
    Fault(MemoryException),
    Reset(DeviceReset),
}

impl Exception {
    fn gpu_id(&self) -> u32 {
        match self {
            Exception::Fault(f) => f.gpu_id,
            Exception::Reset(r) => r.gpu_id,
        }
    }
}

/// The process's exception events and what they reported.
///
/// Exceptions are kept in the order they were seen. A queue remembers how many had been seen
/// when it was created (its *epoch*, taken after looking at the events), and only a later one
/// on its GPU stops it: KFD evicts the queues that exist when a GPU faults, and a queue created
/// afterwards runs.
pub(crate) struct ExceptionWatch {
    pub(crate) memory_event: u32,
    pub(crate) hw_event: u32,
    /// Set once any exception has been recorded: the fast path of every check.
    any: AtomicBool,
    seen: Mutex<Vec<Exception>>,
    /// The faults that evicted a GPU's queues for good (page faults and engine exceptions:
    /// KFD's `ErrorType` 0), first per GPU. The imprecise SRAM-ECC error a GPU reset reports
    /// through the same event is not one of them: queues created after a reset run.
    evicting: Mutex<Vec<MemoryException>>,
}

impl ExceptionWatch {
    /// Creates the two events (at device open, as ROCr registers its exception handlers).
    pub(crate) fn new(dev: &DeviceContext, events: &EventTable) -> Result<ExceptionWatch> {
        let create = |kind| {
            events
                .create(dev, kind, EventReset::Manual)
                .map(|(id, _)| id)
        };
        let memory_event = create(EventKind::Memory)?;
        let hw_event = match create(EventKind::HwException) {
            Ok(id) => id,
            Err(e) => {
                crate::event::table::destroy_raw_event(dev.driver(), memory_event);
                return Err(e);
            }
        };
        Ok(ExceptionWatch {
            memory_event,
            hw_event,
            any: AtomicBool::new(false),
            seen: Mutex::new(Vec::new()),
            evicting: Mutex::new(Vec::new()),
        })
    }

    /// Destroys the events (at device close).
    pub(crate) fn release(&self, driver: &dyn Driver) {
        crate::event::table::destroy_raw_event(driver, self.memory_event);
        crate::event::table::destroy_raw_event(driver, self.hw_event);
    }

    /// Whether any exception has been recorded (one load).
    pub(crate) fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// How many exceptions have been recorded: a queue created now is stopped only by later
    /// ones.
    pub(crate) fn epoch(&self) -> usize {
        if self.any() {
            lock(&self.seen).len()
        } else {
            0
        }
    }

    /// The first fault that evicted `gpu_id`'s queues for good, if any (resets, and the ECC
    /// error they may report, do not count).
    pub(crate) fn fault_on(&self, gpu_id: u32) -> Option<MemoryException> {
        if !self.any() {
            return None;
        }
        lock(&self.evicting)
            .iter()
            .find(|f| f.gpu_id == gpu_id)
            .copied()
    }

    /// The error a wait ends with if an exception recorded at or after `since` hit `gpu_id`
    /// (`None`: any GPU). `queue_id` names the waiting queue in the error.
    pub(crate) fn check(
        &self,
        gpu_id: Option<u32>,
        since: usize,
        queue_id: Option<u32>,
    ) -> Result<()> {
        if !self.any() {
            return Ok(());
        }
        let seen = lock(&self.seen);
        let hit = seen
            .iter()
            .skip(since)
            .find(|e| gpu_id.is_none_or(|id| id == e.gpu_id()));
        match hit {
            None => Ok(()),
            Some(Exception::Fault(fault)) => Err(Error::DeviceFault {
                queue_id,
                fault: *fault,
                report: None,
            }),
            Some(Exception::Reset(reset)) => Err(Error::DeviceReset {
                queue_id,
                reset: *reset,
                report: None,
            }),
        }
    }

    /// Records what the events of a `WAIT_EVENTS` call reported. `data` holds one entry per
    /// waited id, in the order of the call. Both events stay signalled once fired, so the
    /// same report comes back on every later look: it is recorded once. A reset is recorded
    /// before a memory exception seen in the same call: KFD reports an ECC reset through both
    /// events, and the reset is what ended the GPU's work.
    pub(crate) fn record(&self, data: &[kfd_event_data]) {
        let hw_first = data
            .iter()
            .filter(|d| d.event_id == self.hw_event)
            .chain(data.iter().filter(|d| d.event_id != self.hw_event));
        for d in hw_first {
            let e = if d.event_id == self.memory_event {
                // SAFETY: KFD fills the memory-exception member for a signalled memory event
                // and leaves zeroes otherwise; every member is plain integers.
                let m = unsafe { d.__bindgen_anon_1.memory_exception_data };
                if m.gpu_id == 0 {
                    continue;
                }
                let f = MemoryException::from_raw(&m);
                if m.ErrorType == 0 {
                    let mut evicting = lock(&self.evicting);
                    if !evicting.iter().any(|e| e.gpu_id == f.gpu_id) {
                        evicting.push(f);
                    }
                }
                Exception::Fault(f)
            } else if d.event_id == self.hw_event {
                // SAFETY: as above, for the hardware-exception member.
                let h = unsafe { d.__bindgen_anon_1.hw_exception_data };
                if h.gpu_id == 0 {
                    continue;
                }
                Exception::Reset(DeviceReset {
                    gpu_id: h.gpu_id,
                    memory_lost: h.memory_lost != 0,
                    cause: h.reset_cause,
                })
            } else {
                continue;
            };
            let mut seen = lock(&self.seen);
            // The event's data is the latest report: new when it differs from what was
            // recorded last for that kind.
            let last = seen
                .iter()
                .rev()
                .find(|x| std::mem::discriminant(*x) == std::mem::discriminant(&e));
            if last != Some(&e) {
                match e {
                    Exception::Fault(f) => log::error!("kfdrt: {f}"),
                    Exception::Reset(r) => log::error!("kfdrt: GPU {:#x} was reset", r.gpu_id),
                }
                seen.push(e);
                self.any.store(true, Ordering::Release);
            }
        }
    }

    /// Looks at both events without sleeping and records what they report.
    pub(crate) fn poll(&self, driver: &dyn Driver) -> Result<()> {
        let ids = [self.memory_event, self.hw_event];
        let (_, data) =
            crate::event::table::wait_ids(driver, &ids, WaitMode::Any, Some(Duration::ZERO))?;
        self.record(&data);
        Ok(())
    }
}

/// Polling loops look at the exception events once every this many rounds.
pub(crate) const POLL_ROUNDS: u32 = 1024;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
