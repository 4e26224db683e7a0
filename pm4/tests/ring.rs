//! The ring writer against a simulated CP: wraparound with NOP padding, one free dword, `Full`
//! while the reader lags, no writes over unread dwords, and progress for long packets.

use pm4::ring::{Pm4Ring, RingError};
use pm4::*;
use proptest::prelude::*;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Ring memory and the words the CP shares with the writer, at fixed addresses. The ring is a
/// `Vec` because its raw pointer stays valid while the test reads the slice.
struct Queue {
    ring: Vec<u32>,
    rptr: Box<AtomicU32>,
    wptr: Box<AtomicU64>,
    doorbell: Box<AtomicU64>,
}

const POISON: u32 = 0x0BAD_0BAD;

impl Queue {
    fn new(size: u32) -> Queue {
        Queue {
            ring: vec![POISON; size as usize],
            rptr: Box::new(AtomicU32::new(0)),
            wptr: Box::new(AtomicU64::new(0)),
            doorbell: Box::new(AtomicU64::new(0)),
        }
    }

    fn writer(&mut self) -> Pm4Ring {
        let size = self.ring.len() as u32;
        // SAFETY: the queue outlives the writer in every test, is not moved or resized while it
        // lives, only the writer writes the ring, wptr and doorbell, and the simulated CP only
        // reads the ring (on the same thread, between writes).
        unsafe {
            Pm4Ring::new(
                self.ring.as_mut_ptr(),
                size,
                &*self.rptr,
                &*self.wptr,
                &*self.doorbell,
            )
        }
        .unwrap()
    }

    /// Plays the CP: decodes every committed packet from the read pointer on and returns the
    /// non-filler packets, checking that fillers only pad the ring's tail.
    fn consume(&self) -> Vec<Pm4Packet> {
        let size = self.ring.len() as u64;
        let w = self.wptr.load(Ordering::Acquire);
        assert_eq!(self.doorbell.load(Ordering::Acquire), w, "doorbell = wptr");
        let mut pos = u64::from(self.rptr.load(Ordering::Acquire));
        let mut seen = Vec::new();
        while pos % size != w % size {
            let at = (pos % size) as usize;
            let (p, n) = Pm4Packet::decode(GfxFamily::Gfx9, &self.ring[at..])
                .unwrap_or_else(|e| panic!("packet at {at}: {e}"));
            if p == (Pm4Packet::Nop { padding: 0 }) {
                assert!(
                    self.ring[at..].iter().all(|&d| d == NOP_FILLER),
                    "fillers only pad the tail (at {at})"
                );
            } else {
                seen.push(p);
            }
            pos += n as u64;
        }
        self.rptr.store((pos % size) as u32, Ordering::Release);
        seen
    }
}

fn write_data(v: u32, n: usize) -> Vec<u32> {
    let mut out = Vec::new();
    Pm4Packet::WriteData {
        dst_sel: sel::MEMORY,
        confirm: false,
        addr: 0x1000,
        data: vec![v; n],
    }
    .encode(GfxFamily::Gfx9, &mut out);
    out
}

#[test]
fn one_dword_is_always_free() {
    let mut q = Queue::new(16);
    let mut r = q.writer();
    assert_eq!((r.size(), r.space()), (16, 15));
    assert_eq!(r.try_write(&[NOP_FILLER; 16]), Err(RingError::TooLarge(16)));
    assert_eq!(r.try_write(&[NOP_FILLER; 15]), Ok(15));
    assert_eq!(r.space(), 0);
    assert_eq!(r.try_write(&[NOP_FILLER]), Err(RingError::Full));
    r.commit();
    assert_eq!(q.ring[15], POISON, "the last dword was never written");
    assert_eq!(q.wptr.load(Ordering::Acquire), 15);
}

#[test]
fn wraparound_pads_with_nops_and_places_packets_right() {
    // kfdtest's scenario: 7-dword packets do not divide a 64-dword ring; 2 x (64/7 + 1) = 20
    // packets, each with a unique value.
    let mut q = Queue::new(64);
    let mut r = q.writer();
    let mut seen = Vec::new();
    for v in 0..20u32 {
        let p = write_data(v, 3);
        assert_eq!(p.len(), 7);
        let before = r.wptr();
        let pos = (before % 64) as usize;
        let (pad, start) = if pos + 7 > 64 {
            (64 - pos, 0)
        } else {
            (0, pos)
        };
        let wptr = match r.try_write(&p) {
            Ok(w) => w,
            Err(RingError::Full) => {
                // Let the CP read everything, then the write must fit.
                r.commit();
                seen.extend(q.consume());
                r.try_write(&p).unwrap()
            }
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            wptr,
            before + (pad + 7) as u64,
            "monotonic, padding counted"
        );
        assert_eq!(&q.ring[start..start + 7], &p[..], "packet {v} at {start}");
        assert!(q.ring[pos..pos + pad].iter().all(|&d| d == NOP_FILLER));
    }
    r.commit();
    seen.extend(q.consume());
    let values: Vec<u32> = seen
        .iter()
        .map(|p| match p {
            Pm4Packet::WriteData { data, .. } => data[0],
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        values,
        (0..20).collect::<Vec<_>>(),
        "every packet once, in order"
    );
    assert!(r.wptr() > 2 * 64, "wrapped twice; the pointer did not");
}

#[test]
fn full_while_the_reader_lags_and_nothing_is_overwritten() {
    let mut q = Queue::new(32);
    let mut r = q.writer();
    for v in 0..4 {
        r.try_write(&write_data(v, 3)).unwrap();
    }
    r.commit();
    // The CP reads the first packet only: rptr 7, wptr 28, so 7 + 3 dwords are free
    // (28..32 and 0..6; dword 6 stays empty).
    q.rptr.store(7, Ordering::Release);
    assert_eq!(r.space(), 10);
    let snapshot = q.ring.to_vec();
    // 7 dwords at 28 would cross the end: 4 NOPs + 7 = 11 > 10.
    assert_eq!(r.try_write(&write_data(9, 3)), Err(RingError::Full));
    assert_eq!(r.wptr(), 28, "nothing written");
    assert_eq!(&q.ring[..], &snapshot[..]);
    // Once the CP reads one more packet there is room; the unread packets 2 and 3 survive.
    q.rptr.store(14, Ordering::Release);
    assert_eq!(r.try_write(&write_data(9, 3)), Ok(39));
    assert_eq!(&q.ring[14..28], &snapshot[14..28]);
    assert_eq!(&q.ring[28..32], &[NOP_FILLER; 4]);
    assert_eq!(&q.ring[0..7], &write_data(9, 3)[..]);
}

#[test]
fn a_packet_that_only_fits_after_the_padding_is_written_eventually() {
    let mut q = Queue::new(16);
    let mut r = q.writer();
    r.try_write(&write_data(0, 6)).unwrap();
    r.commit();
    assert_eq!(q.consume().len(), 1);
    assert!(r.is_idle());
    // At 10, a 12-dword packet needs 6 NOPs and then 0..12, which overlaps the reader at 10
    // even though the ring is empty: only once the CP has read the padding can it fit. The
    // writer pads now and reports Full.
    let p = write_data(5, 8);
    assert_eq!(p.len(), 12);
    assert_eq!(r.try_write(&p), Err(RingError::Full));
    assert_eq!(r.wptr(), 16);
    r.commit();
    assert!(q.consume().is_empty());
    assert_eq!(r.try_write(&p), Ok(28));
    r.commit();
    assert_eq!(q.consume().len(), 1);
}

#[test]
fn empty_writes_and_bad_geometry() {
    let mut q = Queue::new(8);
    let mut r = q.writer();
    assert_eq!(r.try_write(&[]), Ok(0));
    let (ring, rp, wp, db) = (q.ring.as_mut_ptr(), &*q.rptr, &*q.wptr, &*q.doorbell);
    // SAFETY: the geometry checks run before any pointer is used.
    unsafe {
        assert!(matches!(
            Pm4Ring::new(ring, 12, rp, wp, db),
            Err(RingError::BadGeometry)
        ));
        assert!(matches!(
            Pm4Ring::new(ring, 4, rp, wp, db),
            Err(RingError::BadGeometry)
        ));
        assert!(matches!(
            Pm4Ring::new(std::ptr::null_mut(), 8, rp, wp, db),
            Err(RingError::BadGeometry)
        ));
        let odd = (db as *const AtomicU64)
            .cast::<u8>()
            .add(4)
            .cast::<AtomicU64>();
        assert!(matches!(
            Pm4Ring::new(ring, 8, rp, wp, odd),
            Err(RingError::BadGeometry)
        ));
    }
}

#[test]
fn a_garbage_read_pointer_cannot_send_writes_out_of_bounds() {
    let mut q = Queue::new(16);
    let mut r = q.writer();
    q.rptr.store(0xFFFF_FFF3, Ordering::Release); // reduces to 3
    assert!(r.space() < 16);
    let _ = r.try_write(&[NOP_FILLER; 9]);
    assert!(r.wptr() <= 16);
}

proptest! {
    /// Random packet lengths and reader progress: every packet the writer accepts reaches the
    /// CP intact and in order, and no write lands on dwords the CP has not read.
    #[test]
    fn writer_and_reader_agree(
        lens in prop::collection::vec(5usize..32, 1..60),
        reads in prop::collection::vec(any::<bool>(), 60),
    ) {
        let mut q = Queue::new(32);
        let mut r = q.writer();
        let mut seen = Vec::new();
        for (i, &len) in lens.iter().enumerate() {
            let p = write_data(i as u32, len - 4);
            // With the CP drained each time, two retries always suffice (one may only pad).
            for attempt in 0.. {
                prop_assert!(attempt < 3, "packet {} of {} dwords never fit", i, len);
                // The dwords committed but not read yet must not change.
                let committed = q.wptr.load(Ordering::Acquire);
                let rp = u64::from(q.rptr.load(Ordering::Acquire));
                let unread: Vec<(usize, u32)> = (0..(committed + 32 - rp) % 32)
                    .map(|k| ((rp + k) % 32) as usize)
                    .map(|at| (at, q.ring[at]))
                    .collect();
                let res = r.try_write(&p);
                for &(at, d) in &unread {
                    prop_assert_eq!(q.ring[at], d, "unread dword {} overwritten", at);
                }
                match res {
                    Ok(_) => break,
                    Err(RingError::Full) => {
                        r.commit();
                        seen.extend(q.consume());
                    }
                    Err(e) => prop_assert!(false, "{}", e),
                }
            }
            // Sometimes the CP keeps up, sometimes it lags.
            if reads[i] {
                r.commit();
                seen.extend(q.consume());
            }
        }
        r.commit();
        seen.extend(q.consume());
        let got: Vec<u32> = seen
            .iter()
            .map(|p| match p {
                Pm4Packet::WriteData { data, .. } => data[0],
                _ => u32::MAX,
            })
            .collect();
        prop_assert_eq!(got, (0..lens.len() as u32).collect::<Vec<_>>());
    }
}
