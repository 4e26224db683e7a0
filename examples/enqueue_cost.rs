//! Host cost of enqueueing, for callgrind and for the clock: batches of 64 ordinary dispatches,
//! batches of 64 prepared dispatches, and single dispatches (with their doorbell, directly and
//! through a one-packet batch), on an
//! emulated queue whose processor is stalled while the batch is built (so only the producer's
//! work is measured), then resumed and waited for.
//!
//! ```sh
//! cargo run --release --example enqueue_cost -- 2000          # ns per packet
//! valgrind --tool=callgrind --toggle-collect='*measured_*' \
//!     target/release/examples/enqueue_cost 200               # instructions per packet
//! ```
//! BENCHMARKS.md divides callgrind's total by the packets the measured functions enqueued
//! (printed at the end).
//!
//! Beside them, in the same rounds, a floor: 64 packets written into ring slots that another
//! core freed (wrote INVALID into their headers, as a packet processor does), body first and
//! header last with a release store, and nothing else: no encoding, no staging, no doorbell.

use kfdrt::emu::{EmuConfig, Preset, WorkGroup};
use kfdrt::{AqlQueue, AqlQueueOptions, Dispatch, Kernel, Kfd, PreparedDispatch, Submission};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WAIT: Option<Duration> = Some(Duration::from_secs(60));
const SINGLES: usize = 8;

#[inline(never)]
fn measured_batch(q: &AqlQueue, k: &Kernel) -> Submission {
    let mut b = q.batch().expect("batch");
    for _ in 0..64 {
        // Sizes known only at run time: the compiler must not fold the launch's validation
        // and encoding away.
        b.dispatch(&Dispatch::linear(k, black_box(1), black_box(1)))
            .expect("dispatch");
    }
    b.submit().expect("submit")
}

/// The same with a 3-D launch whose every size is known only at run time (nothing about its
/// shape folds away).
#[inline(never)]
fn measured_batch_3d(q: &AqlQueue, k: &Kernel) -> Submission {
    let mut b = q.batch().expect("batch");
    for _ in 0..64 {
        b.dispatch(&Dispatch::new(
            k,
            black_box([1, 1, 1]),
            black_box([1, 1, 1]),
        ))
        .expect("dispatch");
    }
    b.submit().expect("submit")
}

#[inline(never)]
fn measured_prepared(q: &AqlQueue, p: &PreparedDispatch) -> Submission {
    let mut b = q.batch().expect("batch");
    for _ in 0..64 {
        // SAFETY: the kernel takes no arguments, so no address it could use.
        unsafe { b.dispatch_prepared(p, &[]) };
    }
    b.submit().expect("submit")
}

#[inline(never)]
fn measured_single(q: &AqlQueue, k: &Kernel) -> Submission {
    q.dispatch(&Dispatch::linear(k, black_box(1), black_box(1)))
        .expect("dispatch")
}

/// The same launch through a one-packet [`kfdrt::Batch`], for comparison with the direct path.
#[inline(never)]
fn measured_single_batch(q: &AqlQueue, k: &Kernel) -> Submission {
    let mut b = q.batch().expect("batch");
    b.dispatch(&Dispatch::linear(k, black_box(1), black_box(1)))
        .expect("dispatch");
    b.submit().expect("submit")
}

/// One 64-byte AQL slot.
#[repr(C, align(64))]
struct Slot([AtomicU32; 16]);

/// The floor's ring: 1024 slots, like the measured queue's, and a thread that frees what was
/// written, as the packet processor consumes it.
struct FloorRing {
    slots: Vec<Slot>,
    /// Slots written so far.
    written: AtomicU64,
    /// Slots freed so far (their headers set back to INVALID by the other thread).
    freed: AtomicU64,
    stop: AtomicBool,
}

const FLOOR_SLOTS: u64 = 1024;
const INVALID_HEADER: u32 = 1;

impl FloorRing {
    fn new() -> Arc<FloorRing> {
        let ring = Arc::new(FloorRing {
            slots: (0..FLOOR_SLOTS)
                .map(|_| Slot(std::array::from_fn(|_| AtomicU32::new(INVALID_HEADER))))
                .collect(),
            written: AtomicU64::new(0),
            freed: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let r = ring.clone();
        std::thread::spawn(move || {
            while !r.stop.load(Ordering::Acquire) {
                let (freed, written) = (
                    r.freed.load(Ordering::Relaxed),
                    r.written.load(Ordering::Acquire),
                );
                for id in freed..written {
                    r.slots[(id % FLOOR_SLOTS) as usize].0[0]
                        .store(INVALID_HEADER, Ordering::Release);
                }
                r.freed.store(written, Ordering::Release);
                std::thread::yield_now();
            }
        });
        ring
    }
}

/// Writes 64 copies of `packet` into the next slots: the work a batch's publication cannot
/// avoid.
#[inline(never)]
fn measured_floor(ring: &FloorRing, packet: &[u32; 16]) {
    let first = ring.written.load(Ordering::Relaxed);
    // Slots are reused only once freed (a lap ago, so this does not wait in practice).
    while first + 64 - ring.freed.load(Ordering::Acquire) > FLOOR_SLOTS {
        std::hint::spin_loop();
    }
    for id in first..first + 64 {
        let slot = &ring.slots[(id % FLOOR_SLOTS) as usize].0;
        // SAFETY: dwords 1..16 of a slot nobody else touches until its header is published
        // (the freeing thread writes only dword 0 of slots already published); `packet` is a
        // separate array.
        unsafe {
            std::ptr::copy_nonoverlapping(
                packet.as_ptr().add(1),
                slot.as_ptr().add(1).cast::<u32>().cast_mut(),
                15,
            )
        };
        slot[0].store(packet[0], Ordering::Release);
    }
    ring.written.store(first + 64, Ordering::Release);
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let kfd = Kfd::builder()
        .emulated(EmuConfig::new(Preset::Gfx90a, 1))
        .open()
        .expect("emulated device");
    let emu = kfd.emulator().expect("emulator").clone();
    let gpu = kfd.gpu(0).expect("gpu");
    let kernel = gpu
        .emulated_kernel("empty", 0, Arc::new(|_: &WorkGroup<'_>| Ok(())))
        .expect("kernel");
    let queue = gpu
        .create_aql_queue(AqlQueueOptions::default().with_size_packets(1024))
        .expect("queue");
    let prepared = Dispatch::linear(&kernel, 1, 1).prepare().expect("prepare");
    let floor = FloorRing::new();
    // An encoded barrier-AND packet (type 3, barrier bit) to copy.
    let mut floor_packet = [0u32; 16];
    floor_packet[0] = 3 | 1 << 8;
    // Rounds of the measured functions alternate, so a change of machine speed during the run
    // hits them alike. Single dispatches go eight to a round (each with its own doorbell): one
    // alone is shorter than this VM's clock resolves well.
    type Job<'a> = (&'a str, usize, &'a mut dyn FnMut(&mut Vec<Submission>));
    let run = |jobs: &mut [Job<'_>]| {
        let mut times = vec![Vec::with_capacity(rounds); jobs.len()];
        let mut subs = Vec::with_capacity(SINGLES);
        for _ in 0..rounds {
            for ((_, _, f), times) in jobs.iter_mut().zip(&mut times) {
                emu.faults().stall_queue(queue.id());
                let t = Instant::now();
                f(&mut subs);
                times.push(t.elapsed());
                emu.faults().resume_queue(queue.id());
                for s in subs.drain(..) {
                    s.wait(WAIT).expect("wait");
                }
            }
        }
        for ((what, per, _), times) in jobs.iter().zip(times) {
            let m = median(times);
            println!(
                "{what}: {:.1} ns per packet (median of {rounds} rounds of {per}, processor stalled)",
                m.as_nanos() as f64 / *per as f64
            );
        }
    };
    run(&mut [
        ("batch of 64 dispatches (1-D)", 64, &mut |s| {
            s.push(measured_batch(&queue, &kernel))
        }),
        (
            "batch of 64 dispatches (3-D, every size opaque)",
            64,
            &mut |s| s.push(measured_batch_3d(&queue, &kernel)),
        ),
        ("batch of 64 prepared dispatches", 64, &mut |s| {
            s.push(measured_prepared(&queue, &prepared))
        }),
        (
            "floor: 64 packets written into slots another core freed (no encoding, staging or doorbell)",
            64,
            &mut |_| measured_floor(&floor, &floor_packet),
        ),
        (
            "single dispatch with doorbell (AqlQueue::dispatch)",
            SINGLES,
            &mut |s| {
                for _ in 0..SINGLES {
                    s.push(measured_single(&queue, &kernel));
                }
            },
        ),
        (
            "single dispatch with doorbell, through a one-packet Batch",
            SINGLES,
            &mut |s| {
                for _ in 0..SINGLES {
                    s.push(measured_single_batch(&queue, &kernel));
                }
            },
        ),
    ]);
    floor.stop.store(true, Ordering::Release);
    println!(
        "packets per measured function: measured_batch {}, measured_batch_3d {}, measured_prepared {}, measured_single {}, measured_single_batch {}",
        64 * rounds,
        64 * rounds,
        64 * rounds,
        SINGLES * rounds,
        SINGLES * rounds
    );
}
