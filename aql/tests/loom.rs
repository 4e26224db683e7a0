//! Model checking of the AQL ring's multi-producer protocol with loom (issue 16 item 2):
//! `RUSTFLAGS="--cfg loom" cargo test -p kfdrt-aql --test main --release` (this module is the
//! whole test binary then).
//!
//! Producers race to reserve slots of a ring smaller than all their packets together, so they
//! must wait for the consumer to free slots (the ring is never overrun); a consumer plays the
//! packet processor: it takes slots in order, waits for each header to become valid, and checks
//! that the body it then reads is the whole packet its header belongs to (the header is
//! published last, with release) before it frees the slot and moves the read index on. Every
//! interleaving loom explores must deliver every packet exactly once, each producer's in order.
use aql::ring::AqlRing;
use aql::{BarrierPacket, Packet};
use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;

/// Ring memory as the device sees it: slots of 16 dwords and the three queue words.
struct Memory {
    slots: Vec<AtomicU32>,
    write: AtomicU64,
    read: AtomicU64,
    doorbell: AtomicU64,
}

const INVALID: u32 = 1; // header type INVALID

fn memory(slots: u32) -> Arc<Memory> {
    Arc::new(Memory {
        slots: (0..slots * 16).map(|_| AtomicU32::new(INVALID)).collect(),
        write: AtomicU64::new(0),
        read: AtomicU64::new(0),
        doorbell: AtomicU64::new(0),
    })
}

/// A barrier packet whose body words all carry `tag`, so a torn read shows.
fn packet(tag: u64) -> Packet {
    Packet::BarrierAnd(BarrierPacket {
        barrier: true,
        dep_signal: [tag; 5],
        completion_signal: tag,
        ..Default::default()
    })
}

fn tag(producer: u64, i: u64) -> u64 {
    (producer + 1) << 8 | (i + 1)
}

/// Runs `per_producer[p]` packets from each producer through a ring of `slots` slots.
fn model(slots: u32, per_producer: &'static [u32]) {
    let mut builder = loom::model::Builder::new();
    // A packet is 16 atomic words written and read: far more steps than loom's default allows.
    builder.max_branches = 1_000_000;
    if builder.preemption_bound.is_none() {
        // Bounded for CI (LOOM_MAX_PREEMPTIONS=2 explores more, for minutes).
        builder.preemption_bound = Some(1);
    }
    builder.check(move || {
        let mem = memory(slots);
        // SAFETY: `mem` holds the slots (64-byte slots of INVALID headers) and the queue words,
        // and every thread keeps an `Arc` of it as long as it uses the ring.
        let ring = Arc::new(
            unsafe {
                AqlRing::new(
                    mem.slots.as_ptr() as *mut u8,
                    slots,
                    &mem.write,
                    &mem.read,
                    &mem.doorbell,
                )
            }
            .unwrap(),
        );
        let producers: Vec<_> = per_producer
            .iter()
            .enumerate()
            .map(|(p, &n)| {
                let (ring, mem) = (ring.clone(), mem.clone());
                thread::spawn(move || {
                    let _keep = mem;
                    let mut r = ring
                        .reserve(n, |_| {
                            thread::yield_now();
                            true
                        })
                        .unwrap();
                    for i in 0..n {
                        r.write(i, &packet(tag(p as u64, u64::from(i))));
                    }
                    r.submit();
                })
            })
            .collect();

        let total: u32 = per_producer.iter().sum();
        let mut next = vec![0u64; per_producer.len()];
        for id in 0..u64::from(total) {
            let base = ((id % u64::from(slots)) * 16) as usize;
            let header = loop {
                let h = mem.slots[base].load(Ordering::Acquire);
                if aql::is_valid_header_word(h) {
                    break h;
                }
                thread::yield_now();
            };
            let mut d = [0u32; 16];
            d[0] = header;
            for (i, w) in d.iter_mut().enumerate().skip(1) {
                *w = mem.slots[base + i].load(Ordering::Relaxed);
            }
            let Ok(Packet::BarrierAnd(b)) = Packet::decode(&d) else {
                panic!("packet {id} is not the barrier its header says: {d:08x?}");
            };
            let t = b.completion_signal;
            assert!(
                b.dep_signal.iter().all(|&s| s == t),
                "packet {id} read torn: {b:?}"
            );
            let (p, i) = ((t >> 8) - 1, (t & 0xFF) - 1);
            assert_eq!(i, next[p as usize], "producer {p}'s packets out of order");
            next[p as usize] += 1;
            // Consumed: the slot is INVALID again before the read index frees it.
            mem.slots[base].store(INVALID, Ordering::Relaxed);
            mem.read.store(id + 1, Ordering::Release);
        }
        for t in producers {
            t.join().unwrap();
        }
        for (p, &n) in per_producer.iter().enumerate() {
            assert_eq!(next[p], u64::from(n), "producer {p}");
        }
        // The last doorbell rung names a published packet.
        assert!(mem.doorbell.load(Ordering::Acquire) < u64::from(total));
    });
}

#[test]
fn two_producers_share_a_ring_smaller_than_their_packets() {
    model(2, &[2, 1]);
}

#[test]
fn three_producers_one_packet_each_on_two_slots() {
    model(2, &[1, 1, 1]);
}

/// The signal pool's reuse rule (`aql::reuse`): a signal released while the packet that
/// decrements it may still be in flight is handed out again only after that decrement landed,
/// so re-arming it cannot be undone by the old packet.
#[test]
fn a_signal_is_not_reused_while_its_packet_is_in_flight() {
    use aql::reuse::ReusePool;
    use loom::sync::atomic::AtomicI64;
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound.get_or_insert(3);
    builder.check(|| {
        let signal = Arc::new(AtomicI64::new(1));
        // The packet processor completes the packet some time later.
        let device = {
            let s = signal.clone();
            thread::spawn(move || {
                s.fetch_sub(1, Ordering::Release);
            })
        };
        let value = |s: &Arc<AtomicI64>| s.load(Ordering::Acquire);
        let mut pool = ReusePool::default();
        // Released with its completion armed (target 0), maybe before the device ran it.
        pool.release(signal.clone(), Some(0), value);
        let reused = loop {
            if let Some(s) = pool.take(value) {
                break s;
            }
            thread::yield_now();
        };
        // Re-armed for a new packet.
        reused.store(1, Ordering::Relaxed);
        device.join().unwrap();
        assert_eq!(
            signal.load(Ordering::Relaxed),
            1,
            "the old packet's decrement landed on the reused signal"
        );
    });
}
