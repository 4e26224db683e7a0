//! Event tests in the spirit of kfdtest's KFDEventTest.

mod common;

use kfdrt::{EventKind, WaitMode};
use std::time::{Duration, Instant};

#[test]
fn set_then_wait_and_auto_reset() {
    let kfd = common::device();
    let e = kfd.create_event(EventKind::Signal, true).unwrap();
    assert!(e.mailbox_address().is_some());
    e.set().unwrap();
    assert!(e.wait(Some(Duration::from_millis(100))).unwrap());
    // The wait consumed the signal of an auto-reset event.
    assert!(!e.wait(Some(Duration::ZERO)).unwrap());
}

#[test]
fn manual_reset_stays_signalled_until_reset() {
    let kfd = common::device();
    let e = kfd.create_event(EventKind::Signal, false).unwrap();
    e.set().unwrap();
    assert!(e.wait(Some(Duration::ZERO)).unwrap());
    assert!(e.wait(Some(Duration::ZERO)).unwrap());
    e.reset().unwrap();
    assert!(!e.wait(Some(Duration::ZERO)).unwrap());
}

#[test]
fn wait_times_out() {
    let kfd = common::device();
    let e = kfd.create_event(EventKind::Signal, true).unwrap();
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
    let e = std::sync::Arc::new(kfd.create_event(EventKind::Signal, true).unwrap());
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
        .map(|_| kfd.create_event(EventKind::Signal, true).unwrap())
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
    let a = kfd.create_event(EventKind::Signal, false).unwrap();
    let b = kfd.create_event(EventKind::Signal, false).unwrap();
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
    {
        let _e: Vec<_> = (0..10)
            .map(|_| kfd.create_event(EventKind::Signal, true).unwrap())
            .collect();
        assert_eq!(emu.stats().live_events, 10);
    }
    assert_eq!(emu.stats().live_events, 0);
}

#[test]
fn set_wakes_every_current_waiter_and_consumes_an_auto_reset_event() {
    // kfd_events.c: setting an auto-reset event that threads are waiting on wakes all of them
    // and leaves it unsignaled; ROCr relies on this when two threads wait on a queue's
    // inactive signal.
    let kfd = common::device();
    let e = std::sync::Arc::new(kfd.create_event(EventKind::Signal, true).unwrap());
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
