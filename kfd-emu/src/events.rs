//! KFD events: `CREATE/DESTROY/SET/RESET_EVENT` and `WAIT_EVENTS`, plus the hooks the packet
//! processors use to raise them (mailbox writes and interrupts, memory faults, queue errors).
//!
//! Semantics follow `kfd_events.c`: signal events take ids equal to their slot in the events
//! page (0..4096) and need the page registered by the first signal event; other events get ids
//! from 0x80000000 up. An auto-reset event is consumed by the wait that observes it.

use kfd_sys::bindings::*;
use kfd_sys::Errno;
use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Signal event slots in the events page.
pub(crate) const SIGNAL_EVENT_LIMIT: u32 = 4096;
const FIRST_NONSIGNAL_ID: u32 = 0x8000_0000;

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MemoryFault {
    pub(crate) va: u64,
    pub(crate) gpu_id: u32,
}

#[derive(Debug)]
struct Event {
    kind: u32,
    auto_reset: bool,
    signaled: bool,
    fault: Option<MemoryFault>,
}

#[derive(Default)]
struct Inner {
    events: HashMap<u32, Event>,
    page_handle: Option<u64>,
    next_nonsignal: u32,
}

/// The process's events.
#[derive(Default)]
pub(crate) struct EventTable {
    inner: Mutex<Inner>,
    cv: Condvar,
}

impl EventTable {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn live(&self) -> usize {
        self.lock().events.len()
    }

    /// `CREATE_EVENT`. `page_ok` says whether a handle names a GTT buffer big enough for the
    /// events page.
    pub(crate) fn create(
        &self,
        a: &mut kfd_ioctl_create_event_args,
        page_ok: impl Fn(u64) -> bool,
    ) -> Result<(), Errno> {
        let mut g = self.lock();
        if a.event_page_offset != 0 {
            if g.page_handle.is_some() || !page_ok(a.event_page_offset) {
                return Err(Errno::EINVAL);
            }
            g.page_handle = Some(a.event_page_offset);
        }
        let id = match a.event_type {
            KFD_IOC_EVENT_SIGNAL => {
                if g.page_handle.is_none() {
                    // dGPUs need the events page before the first signal event.
                    return Err(Errno::EINVAL);
                }
                (0..SIGNAL_EVENT_LIMIT)
                    .find(|i| !g.events.contains_key(i))
                    .ok_or(Errno::ENOSPC)?
            }
            KFD_IOC_EVENT_NODECHANGE..=KFD_IOC_EVENT_MEMORY => {
                let id = FIRST_NONSIGNAL_ID + g.next_nonsignal;
                g.next_nonsignal += 1;
                id
            }
            _ => return Err(Errno::EINVAL),
        };
        g.events.insert(
            id,
            Event {
                kind: a.event_type,
                auto_reset: a.auto_reset != 0,
                signaled: false,
                fault: None,
            },
        );
        a.event_id = id;
        a.event_slot_index = if id < SIGNAL_EVENT_LIMIT { id } else { 0 };
        a.event_trigger_data = id;
        Ok(())
    }

    pub(crate) fn destroy(&self, id: u32) -> Result<(), Errno> {
        self.lock()
            .events
            .remove(&id)
            .map(drop)
            .ok_or(Errno::EINVAL)
    }

    pub(crate) fn set(&self, id: u32) -> Result<(), Errno> {
        let mut g = self.lock();
        let ev = g.events.get_mut(&id).ok_or(Errno::EINVAL)?;
        if ev.kind != KFD_IOC_EVENT_SIGNAL {
            return Err(Errno::EINVAL);
        }
        ev.signaled = true;
        self.cv.notify_all();
        Ok(())
    }

    pub(crate) fn reset(&self, id: u32) -> Result<(), Errno> {
        let mut g = self.lock();
        g.events.get_mut(&id).ok_or(Errno::EINVAL)?.signaled = false;
        Ok(())
    }

    /// The interrupt a command processor raises for a signal event (after writing its mailbox).
    pub(crate) fn signal_from_device(&self, id: u32) {
        let mut g = self.lock();
        if let Some(ev) = g.events.get_mut(&id) {
            ev.signaled = true;
            self.cv.notify_all();
        }
    }

    /// Signals every event of `kind` (memory faults, hardware exceptions) with `fault`.
    pub(crate) fn signal_kind(&self, kind: u32, fault: Option<MemoryFault>) {
        let mut g = self.lock();
        for ev in g.events.values_mut().filter(|e| e.kind == kind) {
            ev.signaled = true;
            ev.fault = fault.or(ev.fault);
        }
        self.cv.notify_all();
    }

    /// `WAIT_EVENTS`: `Ok(result)` with KFD's wait_result; fills memory-fault payloads.
    pub(crate) fn wait(
        &self,
        data: &mut [kfd_event_data],
        all: bool,
        timeout_ms: u32,
    ) -> Result<u32, Errno> {
        let deadline = (timeout_ms != u32::MAX)
            .then(|| Instant::now() + Duration::from_millis(u64::from(timeout_ms)));
        let mut g = self.lock();
        loop {
            let mut ready = 0;
            for d in data.iter() {
                match g.events.get(&d.event_id) {
                    Some(ev) if ev.signaled => ready += 1,
                    Some(_) => {}
                    None => return Err(Errno::EINVAL),
                }
            }
            if (all && ready == data.len()) || (!all && ready > 0) {
                for d in data.iter_mut() {
                    let Some(ev) = g.events.get_mut(&d.event_id) else {
                        continue;
                    };
                    if !ev.signaled {
                        continue;
                    }
                    if let Some(f) = ev.fault {
                        let m = kfd_hsa_memory_exception_data {
                            failure: kfd_memory_exception_failure {
                                NotPresent: 1,
                                ReadOnly: 0,
                                NoExecute: 0,
                                imprecise: 0,
                            },
                            va: f.va & !0xFFF,
                            gpu_id: f.gpu_id,
                            ErrorType: 0,
                        };
                        d.__bindgen_anon_1.memory_exception_data = m;
                    }
                    if ev.auto_reset {
                        ev.signaled = false;
                    }
                }
                return Ok(KFD_IOC_WAIT_RESULT_COMPLETE);
            }
            match deadline {
                None => g = self.cv.wait(g).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Ok(KFD_IOC_WAIT_RESULT_TIMEOUT);
                    }
                    g = self
                        .cv
                        .wait_timeout(g, d - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            }
        }
    }
}
