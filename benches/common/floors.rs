//! Limits measured in the same run as the figures they bound: what two host threads need, with
//! no runtime and no emulator, for the handshakes a round trip is made of.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[repr(align(128))]
struct Line(AtomicU64);

/// One thread stores to a cache line, the other sees it and stores to a second line, the first
/// sees that: the floor under any round trip between two threads. `n` samples, sorted.
pub fn cache_line_round_trips(n: usize) -> Vec<Duration> {
    let ping = Arc::new(Line(AtomicU64::new(0)));
    let pong = Arc::new(Line(AtomicU64::new(0)));
    let (p2, q2) = (ping.clone(), pong.clone());
    let echo = std::thread::spawn(move || {
        for i in 1..=n as u64 {
            while p2.0.load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
            q2.0.store(i, Ordering::Release);
        }
    });
    let mut samples = Vec::with_capacity(n);
    for i in 1..=n as u64 {
        let t = Instant::now();
        ping.0.store(i, Ordering::Release);
        while pong.0.load(Ordering::Acquire) != i {
            std::hint::spin_loop();
        }
        samples.push(t.elapsed());
    }
    echo.join().expect("echo thread");
    samples.sort_unstable();
    samples
}

const SLOTS: usize = 64;

#[repr(C, align(64))]
struct Slot([AtomicU32; 16]);

/// The memory an AQL round trip touches, as `amd_queue_t` lays it out: the write index (which
/// the consumer polls) and the read index on lines of their own, the ring, the doorbell and
/// the completion signal's value.
struct Queue {
    write_index: Line,
    read_index: Line,
    doorbell: Line,
    signal: Line,
    ring: [Slot; SLOTS],
}

/// The AQL protocol itself between two threads, with nothing else: the producer resets the
/// completion signal to 1, reserves a slot with a fetch-add on the write index, writes the
/// packet's body and then its header with a release store, rings the doorbell and spins until
/// the signal is 0; the consumer (a command processor reduced to its memory traffic) polls the
/// write index and the slot's header, reads the packet, decrements the signal, sets the header
/// back to INVALID and moves the read index. What any runtime and any packet processor on two
/// cores pay at least. `n` samples, sorted.
pub fn aql_protocol_round_trips(n: usize) -> Vec<Duration> {
    const INVALID: u32 = 1;
    let q = Arc::new(Queue {
        write_index: Line(AtomicU64::new(0)),
        read_index: Line(AtomicU64::new(0)),
        doorbell: Line(AtomicU64::new(0)),
        signal: Line(AtomicU64::new(0)),
        ring: std::array::from_fn(|_| Slot(std::array::from_fn(|_| AtomicU32::new(INVALID)))),
    });
    let cp = q.clone();
    let processor = std::thread::spawn(move || {
        let mut body = [0u32; 16];
        for rd in 0..n as u64 {
            while cp.write_index.0.load(Ordering::Acquire) <= rd {
                std::hint::spin_loop();
            }
            let slot = &cp.ring[rd as usize % SLOTS];
            loop {
                let header = slot.0[0].load(Ordering::Acquire);
                if header != INVALID {
                    body[0] = header;
                    break;
                }
                std::hint::spin_loop();
            }
            for (b, w) in body.iter_mut().zip(&slot.0).skip(1) {
                *b = w.load(Ordering::Relaxed);
            }
            std::hint::black_box(&body);
            cp.signal.0.fetch_sub(1, Ordering::AcqRel);
            slot.0[0].store(INVALID, Ordering::Release);
            cp.read_index.0.store(rd + 1, Ordering::Release);
        }
    });
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        q.signal.0.store(1, Ordering::Relaxed);
        let id = q.write_index.0.fetch_add(1, Ordering::AcqRel);
        while id + 1 - q.read_index.0.load(Ordering::Acquire) > SLOTS as u64 {
            std::hint::spin_loop();
        }
        let slot = &q.ring[id as usize % SLOTS];
        for (i, w) in slot.0.iter().enumerate().skip(1) {
            w.store(i as u32, Ordering::Relaxed);
        }
        // A barrier-AND header with the barrier bit.
        slot.0[0].store(3 | 1 << 8, Ordering::Release);
        q.doorbell.0.store(id, Ordering::Release);
        while q.signal.0.load(Ordering::Acquire) != 0 {
            std::hint::spin_loop();
        }
        samples.push(t.elapsed());
    }
    processor.join().expect("processor thread");
    samples.sort_unstable();
    samples
}

/// The `q` quantile of sorted samples.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q) as usize]
}
