//! KFD events: interrupt-backed wake-ups for signals, memory faults and queue errors.
//!
//! Signal events share one "events page" per process: 4096 slots of 8 bytes in uncached GTT that
//! the GPU writes an event's id into (its mailbox) before raising the interrupt. kfdrt allocates
//! the page on the first signal event and registers it with that `CREATE_EVENT`, as libhsakmt does.

pub(crate) mod table;

pub(crate) use table::{destroy_raw_event, wait_ids, wait_ids_aged};
pub use table::{EventKind, EventReset, WaitMode, EVENT_SLOTS, EVENT_SLOT_SIZE};

use crate::device::Kfd;
pub use crate::error::MemoryException;
use crate::error::{Error, Result};
use kfd_sys::bindings::*;
use kfd_sys::DriverExt;

use std::fmt;
use std::time::Duration;

/// A KFD event. Dropping it destroys it.
pub struct Event {
    kfd: Kfd,
    id: u32,
    kind: EventKind,
    reset: EventReset,
    mailbox: Option<u64>,
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("reset", &self.reset)
            .finish()
    }
}

impl Kfd {
    /// Signals the event with KFD id `event_id` (`SET_EVENT`), e.g. to wake a waiter.
    pub(crate) fn set_raw_event(&self, event_id: u32) -> Result<()> {
        let mut args = kfd_ioctl_set_event_args { event_id, pad: 0 };
        self.driver()
            .kfd_ioctl(&mut args)
            .map(drop)
            .map_err(Error::ioctl(&args))
    }

    /// Creates an event of `kind`; `reset` says whether the wait that observes it clears it.
    /// (KFD lets user space reset only signal events: make the others [`EventReset::Manual`].)
    pub fn create_event(&self, kind: EventKind, reset: EventReset) -> Result<Event> {
        let s = &self.shared;
        let (id, mailbox) = s.events.create(&s.dev, kind, reset)?;
        Ok(Event {
            kfd: self.clone(),
            id,
            kind,
            reset,
            mailbox,
        })
    }

    /// Waits for `events` (all or any). Returns `Ok(true)` when the condition was met and
    /// `Ok(false)` on timeout; `None` waits forever.
    pub fn wait_events(
        &self,
        events: &[&Event],
        mode: WaitMode,
        timeout: Option<Duration>,
    ) -> Result<bool> {
        self.wait_raw(events, mode, timeout).map(|(done, _)| done)
    }

    fn wait_raw(
        &self,
        events: &[&Event],
        mode: WaitMode,
        timeout: Option<Duration>,
    ) -> Result<(bool, Vec<kfd_event_data>)> {
        if events
            .iter()
            .any(|e| !std::sync::Arc::ptr_eq(&e.kfd.shared, &self.shared))
        {
            return Err(Error::ForeignObject { what: "event" });
        }
        let ids: Vec<u32> = events.iter().map(|e| e.id).collect();
        wait_ids(self.shared.dev.driver(), &ids, mode, timeout)
    }
}

impl Event {
    /// KFD's event id (what the GPU writes into the mailbox and passes as interrupt context).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The kind.
    pub fn kind(&self) -> EventKind {
        self.kind
    }

    /// Whether a wait resets it.
    pub fn reset_mode(&self) -> EventReset {
        self.reset
    }

    /// GPU address of the event's mailbox slot in the events page (signal events only).
    pub fn mailbox_address(&self) -> Option<u64> {
        self.mailbox
    }

    /// Signals the event from the CPU (`SET_EVENT`).
    pub fn set(&self) -> Result<()> {
        self.request(kfd_ioctl_set_event_args {
            event_id: self.id,
            pad: 0,
        })
    }

    /// Clears the event (`RESET_EVENT`).
    pub fn reset(&self) -> Result<()> {
        self.request(kfd_ioctl_reset_event_args {
            event_id: self.id,
            pad: 0,
        })
    }

    /// Sends `args`, a request naming this event, to the driver.
    fn request<A: kfd_sys::PlainKfdIoctl>(&self, mut args: A) -> Result<()> {
        self.kfd
            .driver()
            .kfd_ioctl(&mut args)
            .map(drop)
            .map_err(Error::ioctl(&args))
    }

    /// Waits until the event is signalled: `Ok(true)`, or `Ok(false)` after `timeout`
    /// (`None` = forever).
    pub fn wait(&self, timeout: Option<Duration>) -> Result<bool> {
        self.kfd.wait_events(&[self], WaitMode::Any, timeout)
    }

    /// Waits on a memory event and returns the fault it reports, or `None` on timeout.
    pub fn wait_memory_exception(
        &self,
        timeout: Option<Duration>,
    ) -> Result<Option<MemoryException>> {
        if self.kind != EventKind::Memory {
            return Err(Error::WrongEventKind { needed: "memory" });
        }
        let (done, data) = self.kfd.wait_raw(&[self], WaitMode::Any, timeout)?;
        if !done {
            return Ok(None);
        }
        let Some(d) = data.first() else {
            return Ok(None);
        };
        // SAFETY: for a memory event KFD fills the memory-exception member of the union; every
        // member is plain integers, so any bit pattern is a valid value.
        let m = unsafe { d.__bindgen_anon_1.memory_exception_data };
        Ok(Some(MemoryException::from_raw(&m)))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        destroy_raw_event(&**self.kfd.driver(), self.id);
    }
}
