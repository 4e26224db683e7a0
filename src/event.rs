//! KFD events: interrupt-backed wake-ups for signals, memory faults and queue errors.
//!
//! Signal events share one "events page" per process: 4096 slots of 8 bytes in uncached GTT that
//! the GPU writes an event's id into (its mailbox) before raising the interrupt. kfdrt allocates
//! the page on the first signal event and registers it with that `CREATE_EVENT`, as libhsakmt does.

use crate::device::{DeviceContext, Kfd};
pub use crate::error::MemoryException;
use crate::error::{Error, Result};
use crate::memory::raw::RawAllocation;
use kfd_sys::bindings::*;
use kfd_sys::{Driver, DriverExt};

use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

/// Slots in the events page (KFD's `KFD_SIGNAL_EVENT_LIMIT`).
pub const EVENT_SLOTS: u64 = 4096;
/// Bytes per mailbox slot.
pub const EVENT_SLOT_SIZE: u64 = 8;

/// The process's events page: an uncached GTT allocation mapped to every GPU.
struct EventsPage {
    alloc: RawAllocation,
    mapped: Vec<u32>,
    registered: bool,
}

/// Creates the process's events and owns its events page, which the first signal event
/// registers (KFD takes it once per process).
#[derive(Default)]
pub(crate) struct EventTable {
    page: Mutex<Option<EventsPage>>,
}

impl EventTable {
    /// Creates a KFD event, allocating and registering the events page with the first signal
    /// event. Returns the event id and, for signal events, its mailbox address.
    pub(crate) fn create(
        &self,
        dev: &DeviceContext,
        kind: EventKind,
        reset: EventReset,
    ) -> Result<(u32, Option<u64>)> {
        let driver = dev.driver();
        let mut page_guard = self.page.lock().unwrap_or_else(|p| p.into_inner());
        let mut args = kfd_ioctl_create_event_args {
            event_type: kind.raw(),
            auto_reset: u32::from(reset == EventReset::Auto),
            ..Default::default()
        };
        if kind == EventKind::Signal && page_guard.is_none() && !dev.gpus.is_empty() {
            let (alloc, mapped) = dev.alloc_shared_uncached(EVENT_SLOTS * EVENT_SLOT_SIZE)?;
            *page_guard = Some(EventsPage {
                alloc,
                mapped,
                registered: false,
            });
        }
        if kind == EventKind::Signal {
            if let Some(page) = page_guard.as_ref().filter(|p| !p.registered) {
                args.event_page_offset = page.alloc.handle;
            }
        }
        driver.kfd_ioctl(&mut args).map_err(Error::ioctl(&args))?;
        let mut mailbox = None;
        if let Some(page) = page_guard.as_mut().filter(|_| kind == EventKind::Signal) {
            page.registered = true;
            if u64::from(args.event_slot_index) < EVENT_SLOTS {
                mailbox =
                    Some(page.alloc.va.addr + u64::from(args.event_slot_index) * EVENT_SLOT_SIZE);
            }
        }
        Ok((args.event_id, mailbox))
    }

    /// Frees the events page (at teardown, after every event is gone).
    pub(crate) fn release(&mut self, driver: &dyn Driver) {
        let page = self
            .page
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(page) = page {
            page.alloc.release(driver, &page.mapped);
        }
    }
}

/// Whether a wait that observes an event resets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventReset {
    /// The wait that sees the event signalled clears it (one wake-up per signal).
    Auto,
    /// The event stays signalled until [`Event::reset`].
    Manual,
}

/// The kind of an event (`KFD_IOC_EVENT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// Signalled by a GPU interrupt or `SET_EVENT`.
    Signal,
    /// A GPU memory fault of this process (the wait returns the faulting address).
    Memory,
    /// A hardware exception (queue error, GPU reset).
    HwException,
}

impl EventKind {
    fn raw(self) -> u32 {
        match self {
            EventKind::Signal => KFD_IOC_EVENT_SIGNAL,
            EventKind::Memory => KFD_IOC_EVENT_MEMORY,
            EventKind::HwException => KFD_IOC_EVENT_HW_EXCEPTION,
        }
    }
}

/// How to wait on several events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    /// Until every event is signalled.
    All,
    /// Until any event is signalled.
    Any,
}

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

fn timeout_ms(timeout: Option<Duration>) -> u32 {
    match timeout {
        // KFD waits forever for 0xFFFFFFFF.
        None => u32::MAX,
        Some(t) => u32::try_from(t.as_millis())
            .unwrap_or(u32::MAX - 1)
            .min(u32::MAX - 1),
    }
}

/// `DESTROY_EVENT` of a raw id, logging a failure (teardown paths have nobody to return it to).
pub(crate) fn destroy_raw_event(driver: &dyn Driver, event_id: u32) {
    let mut args = kfd_ioctl_destroy_event_args { event_id, pad: 0 };
    if let Err(e) = driver.kfd_ioctl(&mut args) {
        log::warn!("kfdrt: AMDKFD_IOC_DESTROY_EVENT {event_id}: {e}");
    }
}

/// `WAIT_EVENTS` on raw ids: `Ok(true)` when the condition was met, `Ok(false)` on timeout.
pub(crate) fn wait_ids(
    driver: &dyn Driver,
    ids: &[u32],
    mode: WaitMode,
    timeout: Option<Duration>,
) -> Result<(bool, Vec<kfd_event_data>)> {
    wait_ids_aged(driver, ids, &mut vec![0; ids.len()], mode, timeout)
}

/// [`wait_ids`] passing, for each signal event whose entry in `ages` is not 0, the age the
/// caller last saw (KFD 1.14+; 0 asks for none): the driver counts the event as signalled if
/// it was set since, and writes the age it woke the caller at back into `ages`.
pub(crate) fn wait_ids_aged(
    driver: &dyn Driver,
    ids: &[u32],
    ages: &mut [u64],
    mode: WaitMode,
    timeout: Option<Duration>,
) -> Result<(bool, Vec<kfd_event_data>)> {
    if ids.is_empty() || ages.len() != ids.len() {
        return Err(Error::InvalidArgument("waiting on no events".into()));
    }
    let mut data: Vec<kfd_event_data> = ids
        .iter()
        .zip(ages.iter())
        .map(|(&event_id, &age)| {
            let mut d = kfd_event_data {
                event_id,
                ..Default::default()
            };
            d.__bindgen_anon_1.signal_event_data.last_event_age = age;
            d
        })
        .collect();
    let mut args = kfd_ioctl_wait_events_args {
        events_ptr: data.as_mut_ptr() as u64,
        num_events: u32::try_from(data.len())
            .map_err(|_| Error::InvalidArgument("too many events".into()))?,
        wait_for_all: u32::from(mode == WaitMode::All),
        timeout: timeout_ms(timeout),
        wait_result: 0,
    };
    // SAFETY: `events_ptr` points to `data`, `num_events` entries, alive across the call; the
    // driver reads ids and writes payloads in place.
    unsafe { driver.kfd_ioctl_unchecked(&mut args) }.map_err(Error::ioctl(&args))?;
    for (age, d) in ages.iter_mut().zip(&data) {
        if *age != 0 {
            // SAFETY: every member of the union is plain integers; for a signal event given an
            // age the driver writes the age there.
            *age = unsafe { d.__bindgen_anon_1.signal_event_data.last_event_age };
        }
    }
    match args.wait_result {
        KFD_IOC_WAIT_RESULT_COMPLETE => Ok((true, data)),
        KFD_IOC_WAIT_RESULT_TIMEOUT => Ok((false, data)),
        KFD_IOC_WAIT_RESULT_FAIL => Err(Error::EventDestroyed),
        other => Err(Error::UnexpectedDriverAnswer {
            request: "AMDKFD_IOC_WAIT_EVENTS",
            what: format!("wait_result {other}"),
        }),
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
            return Err(Error::InvalidArgument(
                "event belongs to another Kfd".into(),
            ));
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
        let mut args = kfd_ioctl_set_event_args {
            event_id: self.id,
            pad: 0,
        };
        self.kfd
            .driver()
            .kfd_ioctl(&mut args)
            .map(drop)
            .map_err(Error::ioctl(&args))
    }

    /// Clears the event (`RESET_EVENT`).
    pub fn reset(&self) -> Result<()> {
        let mut args = kfd_ioctl_reset_event_args {
            event_id: self.id,
            pad: 0,
        };
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
            return Err(Error::InvalidArgument("not a memory event".into()));
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
