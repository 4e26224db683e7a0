//! The process's events: creating and destroying KFD events, the events page their mailboxes
//! live in, and waiting on raw event ids. Below the device, which holds the table; [`super::Event`]
//! is the handle on top.

use crate::device::context::DeviceContext;
use crate::error::{Error, Result};
use crate::memory::raw::RawAllocation;
use kfd_sys::bindings::*;
use kfd_sys::{Driver, DriverExt};
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
    /// The event stays signalled until [`Event::reset`](super::Event::reset).
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
    assert_eq!(ages.len(), ids.len(), "every event waited on has its age");
    if ids.is_empty() {
        return Err(Error::NothingToWaitOn);
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
        num_events: u32::try_from(data.len()).map_err(|_| Error::TooLarge {
            what: "events in one wait",
            requested: data.len() as u64,
            limit: u64::from(u32::MAX),
        })?,
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
