//! Event tests in the spirit of kfdtest's KFDEventTest.

use crate::common;

use kfdrt::{EventKind, EventReset, WaitMode};
use std::time::{Duration, Instant};

#[test]
fn set_then_wait_and_auto_reset() {
    let kfd = common::device();
    let e = kfd
        .create_event(EventKind::Signal, EventReset::Auto)
        .unwrap();
    assert!(e.mailbox_address().is_some());
    e.set().unwrap();
    assert!(e.wait(Some(Duration::from_millis(100))).unwrap());
    // The wait consumed the signal of an auto-reset event.
    assert!(!e.wait(Some(Duration::ZERO)).unwrap());
}

#[test]
fn manual_reset_stays_signalled_until_reset() {
    let kfd = common::device();
    let e = kfd
        .create_event(EventKind::Signal, EventReset::Manual)
        .unwrap();
    e.set().unwrap();
    assert!(e.wait(Some(Duration::ZERO)).unwrap());
    assert!(e.wait(Some(Duration::ZERO)).unwrap());
    e.reset().unwrap();
    assert!(!e.wait(Some(Duration::ZERO)).unwrap());
}

#[test]
fn wait_times_out() {
    let kfd = common::device();
    let e = kfd
        .create_event(EventKind::Signal, EventReset::Auto)
        .unwrap();
    let t = Instant::now();
    assert!(!e.wait(Some(Duration::from_millis(30))).unwrap());
    assert!(
        t.elapsed() >= Duration::from_millis(25),
        "returned after {:?}",
        t.elapsed()
    );
}

#[test]
fn wait_from_another_thread() {
    let kfd = common::device();
    let e = std::sync::Arc::new(
        kfd.create_event(EventKind::Signal, EventReset::Auto)
            .unwrap(),
    );
    let setter = {
        let e = e.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            e.set().unwrap();
        })
    };
    assert!(e.wait(Some(Duration::from_secs(5))).unwrap());
    setter.join().unwrap();
}

#[test]
fn wait_for_all_of_64_returns_only_after_the_last() {
    let kfd = common::device();
    let events: Vec<_> = (0..64)
        .map(|_| {
            kfd.create_event(EventKind::Signal, EventReset::Auto)
                .unwrap()
        })
        .collect();
    let mut slots: Vec<u64> = events.iter().filter_map(|e| e.mailbox_address()).collect();
    slots.sort_unstable();
    slots.dedup();
    assert_eq!(slots.len(), 64, "every event has its own mailbox");
    let events = std::sync::Arc::new(events);
    let setter = {
        let events = events.clone();
        std::thread::spawn(move || {
            for e in events.iter() {
                std::thread::sleep(Duration::from_millis(1));
                e.set().unwrap();
            }
        })
    };
    let refs: Vec<&kfdrt::Event> = events.iter().collect();
    // Waiting for any returns early; waiting for all only after the 64th set.
    assert!(kfd
        .wait_events(&refs, WaitMode::All, Some(Duration::from_secs(10)))
        .unwrap());
    setter.join().unwrap();
    let last = events.last().unwrap();
    assert!(
        !last.wait(Some(Duration::ZERO)).unwrap(),
        "auto-reset by the wait-all"
    );
}

#[test]
fn wait_for_any_returns_on_one() {
    let kfd = common::device();
    let a = kfd
        .create_event(EventKind::Signal, EventReset::Manual)
        .unwrap();
    let b = kfd
        .create_event(EventKind::Signal, EventReset::Manual)
        .unwrap();
    assert!(!kfd
        .wait_events(&[&a, &b], WaitMode::Any, Some(Duration::ZERO))
        .unwrap());
    b.set().unwrap();
    assert!(kfd
        .wait_events(&[&a, &b], WaitMode::Any, Some(Duration::ZERO))
        .unwrap());
    assert!(!kfd
        .wait_events(&[&a, &b], WaitMode::All, Some(Duration::ZERO))
        .unwrap());
    assert!(kfd.wait_events(&[], WaitMode::Any, None).is_err());
}

#[test]
fn events_are_destroyed_on_drop() {
    let kfd = common::emulated(kfdrt::emu::Preset::Gfx90a, 1);
    let emu = kfd.emulator().unwrap().clone();
    // kfdrt's own: the memory- and hardware-exception events every wait watches.
    let own = emu.stats().live_events;
    assert_eq!(own, 2);
    {
        let _e: Vec<_> = (0..10)
            .map(|_| {
                kfd.create_event(EventKind::Signal, EventReset::Auto)
                    .unwrap()
            })
            .collect();
        assert_eq!(emu.stats().live_events, own + 10);
    }
    assert_eq!(emu.stats().live_events, own);
    drop(kfd);
    assert_eq!(
        emu.stats().live_events,
        0,
        "closing the device destroys its own"
    );
}

#[test]
fn set_wakes_every_current_waiter_and_consumes_an_auto_reset_event() {
    // kfd_events.c: setting an auto-reset event that threads are waiting on wakes all of them
    // and leaves it unsignaled; ROCr relies on this when two threads wait on a queue's
    // inactive signal.
    let kfd = common::device();
    let e = std::sync::Arc::new(
        kfd.create_event(EventKind::Signal, EventReset::Auto)
            .unwrap(),
    );
    let ready = std::sync::Arc::new(std::sync::Barrier::new(3));
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let (e, ready) = (e.clone(), ready.clone());
            std::thread::spawn(move || {
                ready.wait();
                e.wait(Some(Duration::from_secs(10))).unwrap()
            })
        })
        .collect();
    ready.wait();
    // Both threads are (about to be) asleep in WAIT_EVENTS; give them time to get there.
    std::thread::sleep(Duration::from_millis(200));
    e.set().unwrap();
    for w in waiters {
        assert!(w.join().unwrap(), "a waiter missed the event");
    }
    assert!(
        !e.wait(Some(Duration::ZERO)).unwrap(),
        "the waiters consumed the auto-reset event"
    );
}

/// Raw `WAIT_EVENTS` on `ids`, returning KFD's wait_result.
fn raw_wait(kfd: &kfdrt::Kfd, ids: &[u32], all: bool, timeout_ms: u32) -> u32 {
    use kfd_sys::bindings::*;
    use kfd_sys::DriverExt;
    let mut data: Vec<kfd_event_data> = ids
        .iter()
        .map(|&id| kfd_event_data {
            event_id: id,
            ..Default::default()
        })
        .collect();
    let mut a = kfd_ioctl_wait_events_args {
        events_ptr: data.as_mut_ptr() as u64,
        num_events: ids.len() as u32,
        wait_for_all: u32::from(all),
        timeout: timeout_ms,
        wait_result: 0,
    };
    // SAFETY: the events array lives across the call.
    unsafe { kfd.driver().kfd_ioctl_unchecked(&mut a) }.expect("WAIT_EVENTS");
    a.wait_result
}

#[test]
fn an_already_signalled_event_stays_signalled_for_a_wait_for_all() {
    // kfd_events.c init_event_waiter: an event signalled when the wait starts activates the
    // waiter (consuming it: auto-reset) without joining its queue, so setting it again while
    // the wait goes on for the other event leaves it signalled for the next wait.
    use kfd_sys::bindings::{KFD_IOC_WAIT_RESULT_COMPLETE, KFD_IOC_WAIT_RESULT_TIMEOUT};
    let Some(kfd) = common::under_test(
        "events::an_already_signalled_event_stays_signalled_for_a_wait_for_all",
        kfdrt::emu::Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let a = kfd
        .create_event(EventKind::Signal, EventReset::Auto)
        .unwrap();
    let b = kfd
        .create_event(EventKind::Signal, EventReset::Auto)
        .unwrap();
    a.set().unwrap();
    std::thread::scope(|s| {
        let w = s.spawn(|| raw_wait(&kfd, &[a.id(), b.id()], true, 10_000));
        std::thread::sleep(Duration::from_millis(100));
        a.set().unwrap();
        b.set().unwrap();
        assert_eq!(w.join().unwrap(), KFD_IOC_WAIT_RESULT_COMPLETE);
    });
    assert_eq!(
        raw_wait(&kfd, &[a.id()], true, 0),
        KFD_IOC_WAIT_RESULT_COMPLETE
    );
    assert_eq!(
        raw_wait(&kfd, &[b.id()], true, 0),
        KFD_IOC_WAIT_RESULT_TIMEOUT
    );
}

#[test]
fn destroying_an_event_fails_the_waits_on_it() {
    use kfd_sys::bindings::*;
    use kfd_sys::DriverExt;
    let Some(kfd) = common::under_test(
        "events::destroying_an_event_fails_the_waits_on_it",
        kfdrt::emu::Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    // A raw event, so this test owns its lifetime.
    let mut c = kfd_ioctl_create_event_args {
        event_type: KFD_IOC_EVENT_NODECHANGE,
        auto_reset: 1,
        ..Default::default()
    };
    kfd.driver().kfd_ioctl(&mut c).unwrap();
    let id = c.event_id;
    std::thread::scope(|s| {
        let w = s.spawn(|| raw_wait(&kfd, &[id], false, u32::MAX));
        std::thread::sleep(Duration::from_millis(100));
        let mut d = kfd_ioctl_destroy_event_args {
            event_id: id,
            pad: 0,
        };
        kfd.driver().kfd_ioctl(&mut d).unwrap();
        assert_eq!(w.join().unwrap(), KFD_IOC_WAIT_RESULT_FAIL);
    });
    // Events the CPU cannot signal cannot be reset either.
    let mut c = kfd_ioctl_create_event_args {
        event_type: KFD_IOC_EVENT_MEMORY,
        ..Default::default()
    };
    kfd.driver().kfd_ioctl(&mut c).unwrap();
    let mut r = kfd_ioctl_reset_event_args {
        event_id: c.event_id,
        pad: 0,
    };
    assert_eq!(kfd.driver().kfd_ioctl(&mut r), Err(kfdrt::Errno::EINVAL));
    let mut d = kfd_ioctl_destroy_event_args {
        event_id: c.event_id,
        pad: 0,
    };
    kfd.driver().kfd_ioctl(&mut d).unwrap();
}

/// Interrupts as amdkfd handles them (`kfd_signal_event_interrupt`): an SDMA trap or end-of-pipe
/// interrupt carrying an event id sets a signal event only if the engine wrote the event's
/// mailbox slot first; a wrong id falls back to every event whose slot was written; a
/// memory-exception event is never set by one; and the driver acknowledges each slot it used.
mod interrupts {
    use super::common;
    use kfdrt::emu::Preset;
    use kfdrt::{EventKind, EventReset, MemoryKind};
    use sdma::SdmaPacket;
    use std::time::Duration;

    const SHORT: Option<Duration> = Some(Duration::from_millis(200));
    const T: Duration = Duration::from_secs(10);

    fn fence(addr: u64, data: u32) -> SdmaPacket {
        SdmaPacket::Fence {
            addr,
            data,
            mtype_uncached: true,
        }
    }

    #[test]
    fn a_trap_without_a_mailbox_write_wakes_nothing() {
        let Some(kfd) = common::under_test(
            "events::interrupts::a_trap_without_a_mailbox_write_wakes_nothing",
            Preset::Gfx90a,
            1,
            &[],
        ) else {
            return;
        };
        let gpu = kfd.gpu(0).unwrap();
        let q = gpu.create_sdma_queue().unwrap();
        let e = kfd
            .create_event(EventKind::Signal, EventReset::Manual)
            .unwrap();
        common::sdma_submit(
            &q,
            &[SdmaPacket::Trap {
                int_context: e.id(),
            }],
            T,
        )
        .unwrap();
        assert!(
            !e.wait(SHORT).unwrap(),
            "an interrupt whose mailbox nobody wrote set the event"
        );
        let mailbox = e.mailbox_address().unwrap();
        common::sdma_submit(
            &q,
            &[
                fence(mailbox, e.id()),
                SdmaPacket::Trap {
                    int_context: e.id(),
                },
            ],
            T,
        )
        .unwrap();
        assert!(e.wait(Some(T)).unwrap(), "mailbox written, then trap");
    }

    #[test]
    fn a_wrong_id_sets_the_events_whose_mailbox_was_written() {
        let Some(kfd) = common::under_test(
            "events::interrupts::a_wrong_id_sets_the_events_whose_mailbox_was_written",
            Preset::Gfx90a,
            1,
            &[],
        ) else {
            return;
        };
        let gpu = kfd.gpu(0).unwrap();
        let q = gpu.create_sdma_queue().unwrap();
        let written = kfd
            .create_event(EventKind::Signal, EventReset::Manual)
            .unwrap();
        let idle = kfd
            .create_event(EventKind::Signal, EventReset::Manual)
            .unwrap();
        common::sdma_submit(
            &q,
            &[
                fence(written.mailbox_address().unwrap(), written.id()),
                SdmaPacket::Trap { int_context: 4000 },
            ],
            T,
        )
        .unwrap();
        assert!(written.wait(Some(T)).unwrap());
        assert!(!idle.wait(SHORT).unwrap());
    }

    #[test]
    fn interrupts_never_set_a_memory_event() {
        let Some(kfd) = common::under_test(
            "events::interrupts::interrupts_never_set_a_memory_event",
            Preset::Gfx90a,
            1,
            &[],
        ) else {
            return;
        };
        let gpu = kfd.gpu(0).unwrap();
        // A RELEASE_MEM carries a 32-bit context id, enough for a memory event's.
        let q = gpu
            .create_pm4_queue(kfdrt::Pm4QueueOptions::default())
            .unwrap();
        let mem = kfd
            .create_event(EventKind::Memory, EventReset::Manual)
            .unwrap();
        let scratch = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
        common::pm4_submit(
            &q,
            &[common::release_mem(
                scratch.gpu_address(),
                mem.id(),
                0,
                Some(mem.id()),
            )],
            T,
        )
        .unwrap();
        q.finish(T).unwrap();
        assert!(!mem.wait(SHORT).unwrap());
    }

    #[test]
    fn a_new_event_starts_with_an_unsignalled_mailbox() {
        let Some(kfd) = common::under_test(
            "events::interrupts::a_new_event_starts_with_an_unsignalled_mailbox",
            Preset::Gfx90a,
            1,
            &[],
        ) else {
            return;
        };
        let gpu = kfd.gpu(0).unwrap();
        let q = gpu.create_sdma_queue().unwrap();
        let old = kfd
            .create_event(EventKind::Signal, EventReset::Manual)
            .unwrap();
        let (id, mailbox) = (old.id(), old.mailbox_address().unwrap());
        // A stale value left in the slot by its previous owner.
        // SAFETY: the mailbox is a live slot of the events page, 8-byte aligned.
        unsafe { (mailbox as *mut u64).write_volatile(7) };
        drop(old);
        let new = kfd
            .create_event(EventKind::Signal, EventReset::Manual)
            .unwrap();
        assert_eq!(new.id(), id, "the slot is reused");
        // A trap with an unknown id makes the driver scan the slots.
        common::sdma_submit(&q, &[SdmaPacket::Trap { int_context: 4001 }], T).unwrap();
        assert!(!new.wait(SHORT).unwrap(), "a stale slot set the new event");
    }
}

/// A raw one-event `WAIT_EVENTS` passing `age` as the last age seen; returns KFD's wait_result
/// and the age the driver wrote back.
fn aged_wait(kfd: &kfdrt::Kfd, id: u32, age: u64, timeout_ms: u32) -> (u32, u64) {
    use kfd_sys::bindings::*;
    use kfd_sys::DriverExt;
    let mut d = kfd_event_data {
        event_id: id,
        ..Default::default()
    };
    d.__bindgen_anon_1.signal_event_data.last_event_age = age;
    let mut a = kfd_ioctl_wait_events_args {
        events_ptr: &mut d as *mut kfd_event_data as u64,
        num_events: 1,
        wait_for_all: 1,
        timeout: timeout_ms,
        wait_result: 0,
    };
    // SAFETY: the event data lives across the call.
    unsafe { kfd.driver().kfd_ioctl_unchecked(&mut a) }.expect("WAIT_EVENTS");
    // SAFETY: plain integers, written back by the driver.
    (a.wait_result, unsafe {
        d.__bindgen_anon_1.signal_event_data.last_event_age
    })
}

/// Signal event ages (KFD 1.14+, `init_event_waiter`): a waiter passing the age it last saw is
/// woken at once if the event was set since, even when another waiter consumed the set
/// (auto-reset), and reads the new age back; passing 0 keeps the old rule.
#[test]
fn a_signal_event_age_catches_a_set_another_waiter_consumed() {
    use kfd_sys::bindings::*;
    let Some(kfd) = common::under_test(
        "events::a_signal_event_age_catches_a_set_another_waiter_consumed",
        kfdrt::emu::Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let version = kfd.kfd_version();
    if !kfd.supports(kfdrt::Feature::SignalEventAge) {
        eprintln!(
            "events::a_signal_event_age_catches_a_set_another_waiter_consumed: skipped: KFD \
             {version} has no signal event ages (1.14)"
        );
        return;
    }
    let e = kfd
        .create_event(EventKind::Signal, EventReset::Auto)
        .unwrap();
    e.set().unwrap();
    // Another waiter consumes the set (age 1 -> 2).
    assert_eq!(
        raw_wait(&kfd, &[e.id()], true, 0),
        KFD_IOC_WAIT_RESULT_COMPLETE
    );
    let (r, age) = aged_wait(&kfd, e.id(), 1, 100);
    assert_eq!((r, age), (KFD_IOC_WAIT_RESULT_COMPLETE, 2), "KFD {version}");
    // Nothing since age 2: the wait times out, and 0 asks for no age at all.
    assert_eq!(
        aged_wait(&kfd, e.id(), 2, 50).0,
        KFD_IOC_WAIT_RESULT_TIMEOUT
    );
    assert_eq!(
        aged_wait(&kfd, e.id(), 0, 50),
        (KFD_IOC_WAIT_RESULT_TIMEOUT, 0)
    );
    e.set().unwrap();
    assert_eq!(
        aged_wait(&kfd, e.id(), 2, 50),
        (KFD_IOC_WAIT_RESULT_COMPLETE, 3)
    );
}

/// Before KFD 1.14 the age field is not looked at, so a set consumed by another wait is lost
/// to this one. Emulated: a KFD 1.13.
#[test]
fn before_kfd_1_14_a_signal_event_age_is_not_looked_at() {
    use kfd_sys::bindings::*;
    let version = kfd_sys::KfdVersion::new(1, 13);
    let mut c = kfdrt::emu::EmuConfig::new(kfdrt::emu::Preset::Gfx90a, 1);
    c.kfd_version = version;
    let kfd = common::emulated_with(c);
    let e = kfd
        .create_event(EventKind::Signal, EventReset::Auto)
        .unwrap();
    e.set().unwrap();
    // Another waiter consumes the set.
    assert_eq!(
        raw_wait(&kfd, &[e.id()], true, 0),
        KFD_IOC_WAIT_RESULT_COMPLETE
    );
    let (r, _) = aged_wait(&kfd, e.id(), 1, 100);
    assert_eq!(r, KFD_IOC_WAIT_RESULT_TIMEOUT, "KFD {version} has no ages");
}

/// The emulated device, with every sleeping `WAIT_EVENTS` entering the driver 2 ms late: the
/// time between a waiter's last look at a signal's value and its sleep, which a lost wake-up
/// needs, made wide enough to hit every time.
struct SlowToSleep(std::sync::Arc<kfdrt::emu::Emulator>);

impl kfd_sys::Driver for SlowToSleep {
    fn kind(&self) -> kfd_sys::DriverKind {
        self.0.kind()
    }
    fn describe(&self) -> String {
        self.0.describe()
    }
    unsafe fn ioctl(
        &self,
        node: kfd_sys::Node,
        request: kfd_sys::IoctlRequest,
        arg: *mut std::ffi::c_void,
    ) -> Result<i32, kfdrt::Errno> {
        use kfd_sys::bindings::kfd_ioctl_wait_events_args as Wait;
        if request == kfd_sys::ioctl::request::WAIT_EVENTS {
            // SAFETY: the caller passes WAIT_EVENTS its own argument struct.
            if unsafe { &*(arg as *const Wait) }.timeout > 0 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.0.ioctl(node, request, arg) }
    }
    fn open_render_node(&self, minor: u32) -> Result<i32, kfdrt::Errno> {
        self.0.open_render_node(minor)
    }
    unsafe fn mmap(
        &self,
        source: kfd_sys::MapSource,
        addr: *mut std::ffi::c_void,
        len: usize,
        prot: i32,
        flags: i32,
        offset: u64,
    ) -> Result<*mut std::ffi::c_void, kfdrt::Errno> {
        // SAFETY: forwarded from the caller.
        unsafe { self.0.mmap(source, addr, len, prot, flags, offset) }
    }
    unsafe fn munmap(&self, addr: *mut std::ffi::c_void, len: usize) -> Result<(), kfdrt::Errno> {
        // SAFETY: forwarded from the caller.
        unsafe { self.0.munmap(addr, len) }
    }
    fn read_topology(&self, path: &str) -> Result<String, kfdrt::Errno> {
        self.0.read_topology(path)
    }
    fn list_topology(&self, path: &str) -> Result<Vec<String>, kfdrt::Errno> {
        self.0.list_topology(path)
    }
    fn doorbell_hint(&self, gpu_id: u32) {
        self.0.doorbell_hint(gpu_id)
    }
}

/// Three threads wait on one signal, starting 1 ms apart, and the value is stored (and the
/// auto-reset event set) after the first is asleep and while the second is between its last
/// look at the value and its sleep. `set_event` wakes the sleeper and, since it had a waiter,
/// leaves the event unsignalled: the second sleeps through the set unless it passes the event's
/// age (KFD 1.14+: the driver sees the set it missed and returns at once), or, without ages
/// (1.13), it is not the one thread allowed to sleep on the event and sleeps in short slices.
/// Every round, every waiter must wake with the set: a waiter that missed it sleeps until its
/// timeout (10 s), after which it finds the value and returns, so the test asks that each wait
/// end well before that (within 5 s of the set; woken waiters take milliseconds).
#[test]
fn every_waiter_of_a_shared_signal_wakes_every_round() {
    use kfdrt::Condition;
    use std::sync::atomic::Ordering;
    const ROUNDS: u32 = 8;
    for version in [kfd_sys::KFD_ABI, kfd_sys::KfdVersion::new(1, 13)] {
        let mut c = kfdrt::emu::EmuConfig::new(kfdrt::emu::Preset::Gfx90a, 1);
        c.kfd_version = version;
        let emu = kfdrt::emu::Emulator::new(c).unwrap();
        let kfd = kfdrt::Kfd::builder()
            .driver(std::sync::Arc::new(SlowToSleep(emu)))
            .open()
            .unwrap();
        let s = kfd.create_signal(1).unwrap();
        for round in 0..ROUNDS {
            s.value_atomic().store(1, Ordering::Release);
            let start = Instant::now();
            std::thread::scope(|scope| {
                let waiters: Vec<_> = (0..3u64)
                    .map(|i| {
                        let s = &s;
                        scope.spawn(move || {
                            std::thread::sleep(Duration::from_millis(i));
                            let r = s.wait(Condition::Eq(0), Some(Duration::from_secs(10)));
                            (r, Instant::now())
                        })
                    })
                    .collect();
                // Waiter 0 sleeps from about 2 ms on; waiter 1 looked at the value at about
                // 1 ms and sleeps from about 3 ms on.
                std::thread::sleep(Duration::from_micros(2500).saturating_sub(start.elapsed()));
                s.store(0).unwrap();
                let set = Instant::now();
                for (i, w) in waiters.into_iter().enumerate() {
                    let (r, woke) = w.join().unwrap();
                    assert!(r.is_ok(), "KFD {version}, round {round}: waiter {i}: {r:?}");
                    let late = woke.saturating_duration_since(set);
                    assert!(
                        late < Duration::from_secs(5),
                        "KFD {version}, round {round}: waiter {i} missed the set (woke {late:?} \
                         after it, at its timeout)"
                    );
                }
            });
        }
    }
}

/// KFD gives a process at most 4096 signal events (`KFD_SIGNAL_EVENT_LIMIT`). kfdrt's signals
/// take events while its share lasts and are made without one after that: the engines then
/// write only the value, and waiters poll it. A hundred thousand live signals work, and work
/// completes on the event-less ones: a CPU store wakes a polling waiter, and an AQL barrier and
/// an SDMA fill whose completion signals (and the AQL queue's error signal) have no event
/// complete and are seen.
#[test]
fn signals_past_the_drivers_event_limit_are_polled() {
    use kfdrt::{AqlQueueOptions, Condition, MemoryKind};
    const T: Option<Duration> = Some(Duration::from_secs(30));
    for preset in [kfdrt::emu::Preset::Gfx90a, kfdrt::emu::Preset::Gfx942] {
        let kfd = common::emulated(preset, 1);
        let gpu = kfd.gpu(0).unwrap();
        let live: Vec<kfdrt::Signal> = (0..100_000)
            .map(|_| kfd.create_signal(1).unwrap())
            .collect();
        let with_events = live.iter().filter(|s| s.event_id().is_some()).count();
        assert!(
            (3000..4096).contains(&with_events),
            "{with_events} signals have events"
        );
        let polled = live.iter().rev().find(|s| s.event_id().is_none()).unwrap();
        std::thread::scope(|scope| {
            let w = scope.spawn(|| polled.wait(Condition::Eq(0), T));
            std::thread::sleep(Duration::from_millis(20));
            polled.store(0).unwrap();
            assert_eq!(w.join().unwrap().unwrap(), 0);
        });
        let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
        let barrier = q.barrier_and(&[]).unwrap();
        assert!(
            barrier.signal().event_id().is_none(),
            "the pool's events are all taken"
        );
        barrier.wait(T).unwrap();
        let buf = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
        gpu.create_sdma_queue()
            .unwrap()
            .fill(&buf, 0, 7, 64, &[])
            .unwrap()
            .wait(T)
            .unwrap();
        assert_eq!(buf.to_vec().unwrap()[..4], 7u32.to_le_bytes());
        drop(live);
        // Freed signals give their events back: the next ones have events again, however many
        // signals without one are free.
        let again: Vec<kfdrt::Signal> = (0..1000).map(|_| kfd.create_signal(0).unwrap()).collect();
        assert!(again.iter().all(|s| s.event_id().is_some()));
    }
}
