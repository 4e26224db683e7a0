#![cfg(not(loom))]
//! The ring writer against a consumer thread that behaves like the command processor.

use aql::ring::{init_ring, AqlRing, RingError};
use aql::*;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

#[repr(C, align(64))]
struct Slot([AtomicU32; 16]);

struct Shared {
    slots: Vec<Slot>,
    write: AtomicU64,
    read: AtomicU64,
    doorbell: AtomicU64,
    stop: AtomicBool,
}

fn shared(n: usize) -> Arc<Shared> {
    let s = Arc::new(Shared {
        slots: (0..n).map(|_| Slot(Default::default())).collect(),
        write: AtomicU64::new(0),
        read: AtomicU64::new(0),
        doorbell: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    });
    // SAFETY: the slots are fresh and nobody reads them yet.
    unsafe { init_ring(s.slots.as_ptr() as *mut u8, n as u32) };
    s
}

fn ring(s: &Arc<Shared>) -> AqlRing {
    // SAFETY: `s` outlives the ring in every test (held alongside it).
    unsafe {
        AqlRing::new(
            s.slots.as_ptr() as *mut u8,
            s.slots.len() as u32,
            &s.write,
            &s.read,
            &s.doorbell,
        )
    }
    .unwrap()
}

/// Consumes packets like the CP: wait for a valid header (acquire), read the body, check that it
/// is still what it was a moment later, invalidate the header (release), advance the read index.
fn consume(s: Arc<Shared>, expect: u64) -> Vec<u64> {
    /// A consumer that panics (a torn packet) stops the producers instead of leaving them
    /// waiting for room forever.
    struct StopOnPanic(Arc<Shared>);
    impl Drop for StopOnPanic {
        fn drop(&mut self) {
            if std::thread::panicking() {
                self.0.stop.store(true, Ordering::Relaxed);
            }
        }
    }
    let _stop = StopOnPanic(s.clone());
    let n = s.slots.len() as u64;
    let mut seen = Vec::new();
    let mut id = 0;
    while id < expect && !s.stop.load(Ordering::Relaxed) {
        let slot = &s.slots[(id % n) as usize].0;
        let h = slot[0].load(Ordering::Acquire);
        if !is_valid_header_word(h) {
            std::hint::spin_loop();
            continue;
        }
        let mut d = [0u32; 16];
        for (i, w) in slot.iter().enumerate() {
            d[i] = w.load(Ordering::Relaxed);
        }
        let again: Vec<u32> = slot.iter().map(|w| w.load(Ordering::Relaxed)).collect();
        assert_eq!(&d[..], &again[..], "torn packet at id {id}");
        match Packet::decode(&d).expect("valid packet") {
            Packet::KernelDispatch(p) => seen.push(p.kernarg_address),
            Packet::BarrierAnd(_) => seen.push(u64::MAX),
            other => panic!("unexpected {other:?}"),
        }
        slot[0].store(INVALID_HEADER_WORD, Ordering::Release);
        id += 1;
        s.read.store(id, Ordering::Release);
    }
    seen
}

fn dispatch(payload: u64) -> Packet {
    Packet::KernelDispatch(KernelDispatchPacket {
        dimensions: 1,
        workgroup_size: [64, 1, 1],
        grid_size: [64, 1, 1],
        kernel_object: payload ^ 0xABCD,
        kernarg_address: payload,
        completion_signal: payload.rotate_left(17),
        ..Default::default()
    })
}

#[test]
fn four_producers_every_payload_exactly_once() {
    const PER: u64 = 25_000;
    const PRODUCERS: u64 = 4;
    let s = shared(64);
    let r = Arc::new(ring(&s));
    let consumer = {
        let s = s.clone();
        std::thread::spawn(move || consume(s, PER * PRODUCERS))
    };
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let r = r.clone();
            let s = s.clone();
            std::thread::spawn(move || {
                let mut i = 0;
                while i < PER {
                    let n = (1 + i % 7).min(PER - i) as u32;
                    let Ok(mut res) = r.reserve(n, |_| {
                        std::thread::yield_now();
                        !s.stop.load(Ordering::Relaxed)
                    }) else {
                        return; // the consumer failed; its panic is the test's
                    };
                    for k in 0..n {
                        res.write(k, &dispatch(p << 32 | (i + u64::from(k))));
                    }
                    res.submit();
                    i += u64::from(n);
                }
            })
        })
        .collect();
    let seen = consumer
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e));
    for p in producers {
        p.join().unwrap();
    }
    assert_eq!(seen.len() as u64, PER * PRODUCERS);
    let unique: HashSet<u64> = seen.iter().copied().collect();
    assert_eq!(
        unique.len() as u64,
        PER * PRODUCERS,
        "a payload was lost or duplicated"
    );
    for p in 0..PRODUCERS {
        for i in [0, PER / 2, PER - 1] {
            assert!(unique.contains(&(p << 32 | i)));
        }
    }
    assert_eq!(r.write_index(), PER * PRODUCERS);
    assert!(s.doorbell.load(Ordering::Acquire) < PER * PRODUCERS);
}

#[test]
fn the_header_is_never_valid_before_the_body() {
    // The consumer marks a slot's body before freeing it (as kfd-emu's strict mode does): a
    // packet whose header is valid while any of its body still holds the mark was published
    // header first. Two slots keep the consumer polling the very slot the producer writes next.
    const MARK: u32 = 0xBAD0_AC1D;
    const N: u64 = 100_000;
    let s = shared(2);
    for slot in &s.slots {
        for w in &slot.0[1..] {
            w.store(MARK, Ordering::Relaxed);
        }
    }
    let r = ring(&s);
    let consumer = {
        let s = s.clone();
        std::thread::spawn(move || {
            let mut torn = 0u64;
            for id in 0..N {
                let slot = &s.slots[(id % 2) as usize].0;
                let mut spins = 0u32;
                while !is_valid_header_word(slot[0].load(Ordering::Acquire)) {
                    spins += 1;
                    if spins % 64 == 0 {
                        std::thread::yield_now();
                    }
                    std::hint::spin_loop();
                }
                if slot[1..].iter().any(|w| w.load(Ordering::Relaxed) == MARK) {
                    torn += 1;
                }
                for w in &slot[1..] {
                    w.store(MARK, Ordering::Relaxed);
                }
                slot[0].store(INVALID_HEADER_WORD, Ordering::Release);
                s.read.store(id + 1, Ordering::Release);
            }
            torn
        })
    };
    for i in 0..N {
        let mut res = r
            .reserve(1, |spins| {
                if spins % 64 == 63 {
                    std::thread::yield_now();
                }
                std::hint::spin_loop();
                true
            })
            .unwrap();
        res.write(0, &dispatch(i + 1));
        res.submit();
    }
    let torn = consumer.join().unwrap();
    assert_eq!(
        torn, 0,
        "{torn} of {N} packets had a valid header before their body"
    );
}

#[test]
fn try_reserve_reports_full_without_overwriting() {
    let s = shared(8);
    let r = ring(&s);
    for i in 0..8 {
        let mut res = r.try_reserve(1).unwrap();
        res.write(0, &dispatch(i));
        res.submit();
    }
    assert!(matches!(r.try_reserve(1), Err(RingError::Full)));
    assert!(matches!(r.try_reserve(9), Err(RingError::TooMany { .. })));
    // Nothing was overwritten: slot 0 still holds payload 0.
    let d: [u32; 16] = std::array::from_fn(|i| s.slots[0].0[i].load(Ordering::Relaxed));
    assert_eq!(Packet::decode(&d), Ok(dispatch(0)));
    // Consume everything, then there is room again.
    let seen = consume(s.clone(), 8);
    assert_eq!(seen, (0..8).collect::<Vec<_>>());
    assert!(r.try_reserve(8).is_ok());
}

#[test]
fn dropped_partial_reservation_becomes_no_ops() {
    let s = shared(16);
    let r = ring(&s);
    {
        let mut res = r.try_reserve(4).unwrap();
        res.write(0, &dispatch(7));
    }
    assert_eq!(s.doorbell.load(Ordering::Acquire), 3);
    let seen = consume(s.clone(), 4);
    assert_eq!(seen, vec![7, u64::MAX, u64::MAX, u64::MAX]);
}

#[test]
fn blocking_reserve_can_give_up() {
    let s = shared(4);
    let r = ring(&s);
    r.try_reserve(4).unwrap().submit();
    let mut calls = 0;
    let e = r.reserve(1, |_| {
        calls += 1;
        calls < 3
    });
    assert!(matches!(e, Err(RingError::Abandoned)));
    assert_eq!(calls, 3);
}

#[test]
#[should_panic(expected = "in order")]
fn out_of_order_write_is_refused() {
    let s = shared(4);
    let r = ring(&s);
    let mut res = r.try_reserve(2).unwrap();
    res.write(1, &dispatch(1));
}

#[test]
fn encoded_packets_written_in_bulk_land_in_order() {
    let s = shared(64);
    let r = ring(&s);
    let packets: Vec<[u32; 16]> = (1..=5u64)
        .map(|i| {
            Packet::BarrierAnd(BarrierPacket {
                completion_signal: i,
                ..Default::default()
            })
            .encode()
        })
        .collect();
    let mut res = r.try_reserve(6).unwrap();
    res.write_all_encoded(&packets[..3]);
    res.write_encoded(3, &packets[3]);
    res.write_all_encoded(&packets[4..]);
    assert_eq!(res.submit(), 5);
    for (i, p) in packets.iter().enumerate() {
        let got: Vec<u32> = s.slots[i]
            .0
            .iter()
            .map(|d| d.load(Ordering::Acquire))
            .collect();
        assert_eq!(&got[..], &p[..], "slot {i}");
    }
    assert_eq!(s.doorbell.load(Ordering::Acquire), 5);
}

#[test]
#[should_panic(expected = "more packets than reserved")]
fn bulk_writes_cannot_exceed_the_reservation() {
    let s = shared(64);
    let r = ring(&s);
    let p = Packet::BarrierAnd(BarrierPacket::default()).encode();
    let mut res = r.try_reserve(2).unwrap();
    res.write_all_encoded(&[p, p, p]);
}
