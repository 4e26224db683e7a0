//! Ordering inside a queue: dispatches keep their order by default (barrier bit on every packet,
//! as HIP streams do), and a dispatch made `unordered` may overlap the one before it, as the AQL
//! rules allow and as kfd-emu then does, so a missing barrier bit shows up as a race.
//!
//! The two kernels shake hands through host memory: the consumer announces it has started,
//! the producer waits for that announcement before writing. In order, the announcement never
//! comes while the producer runs (it gives up after a short wait and writes); overlapped, the
//! consumer starts first, reads before the producer writes, and says so.

use crate::common;

use common::raw_dispatch;

use kfdrt::emu::{GpuFault, Preset, WorkGroup};
use kfdrt::{AqlQueueOptions, Gpu, Kernel, MemoryKind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const T: Option<Duration> = Some(Duration::from_secs(60));

struct Pair {
    producer: Kernel,
    consumer: Kernel,
    consumer_started: Arc<AtomicBool>,
}

/// `producer(x)`: waits up to `patience` for the consumer to start, then stores 1 at `x` (when the
/// consumer did start, only after a further 50 ms: the producer ends well after the consumer, so
/// a completion signalled by the consumer alone comes before the producer's write).
/// `consumer(x, y)`: announces itself, then copies the u32 at `x` to `y`.
fn pair(gpu: &Gpu, patience: Duration) -> Pair {
    let started = Arc::new(AtomicBool::new(false));
    let seen = started.clone();
    let producer = gpu
        .emulated_kernel(
            "producer",
            8,
            Arc::new(move |wg: &WorkGroup<'_>| -> Result<(), GpuFault> {
                let t0 = Instant::now();
                while !seen.load(Ordering::Acquire) && t0.elapsed() < patience {
                    std::thread::sleep(Duration::from_millis(1));
                }
                if seen.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(50));
                }
                wg.mem.write_u32(wg.kernarg_u64(0)?, 1)
            }),
        )
        .unwrap();
    let flag = started.clone();
    let consumer = gpu
        .emulated_kernel(
            "consumer",
            16,
            Arc::new(move |wg: &WorkGroup<'_>| -> Result<(), GpuFault> {
                flag.store(true, Ordering::Release);
                let v = wg.mem.read_u32(wg.kernarg_u64(0)?)?;
                wg.mem.write_u32(wg.kernarg_u64(8)?, v)
            }),
        )
        .unwrap();
    Pair {
        producer,
        consumer,
        consumer_started: started,
    }
}

fn args(a: u64, b: u64) -> Vec<u8> {
    [a.to_le_bytes(), b.to_le_bytes()].concat()
}

#[test]
fn dependent_dispatches_in_a_batch_run_in_order_by_default() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let mem = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let (x, y) = (mem.gpu_address(), mem.gpu_address() + 64);
    let p = pair(&gpu, Duration::from_millis(100));
    let (pa, ca) = (args(x, 0), args(x, y));
    let mut b = q.batch().unwrap();
    b.dispatch(&raw_dispatch(&p.producer, 1, 1, &pa[..8]))
        .unwrap()
        .dispatch(&raw_dispatch(&p.consumer, 1, 1, &ca))
        .unwrap();
    b.submit().unwrap().wait(T).unwrap();
    let mut out = [0u8; 4];
    mem.read(64, &mut out).unwrap();
    assert_eq!(
        u32::from_le_bytes(out),
        1,
        "the consumer ran before the producer ended"
    );
}

#[test]
fn separate_submissions_run_in_order_by_default() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let mem = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let (x, y) = (mem.gpu_address(), mem.gpu_address() + 64);
    let p = pair(&gpu, Duration::from_millis(100));
    let (pa, ca) = (args(x, 0), args(x, y));
    // Both are in the ring before the processor looks at either: otherwise it starts the first
    // before the second is published, and they could not overlap even without the barrier bit.
    let emu = kfd.emulator().unwrap();
    emu.faults().stall_queue(q.id());
    let first = q
        .dispatch(&raw_dispatch(&p.producer, 1, 1, &pa[..8]))
        .unwrap();
    let second = q.dispatch(&raw_dispatch(&p.consumer, 1, 1, &ca)).unwrap();
    emu.faults().resume_queue(q.id());
    second.wait(T).unwrap();
    first.wait(T).unwrap();
    let mut out = [0u8; 4];
    mem.read(64, &mut out).unwrap();
    assert_eq!(
        u32::from_le_bytes(out),
        1,
        "the second submission ran before the first ended"
    );
}

#[test]
fn an_unordered_dispatch_overlaps_the_one_before_it() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let mem = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let (x, y) = (mem.gpu_address(), mem.gpu_address() + 64);
    mem.write(64, &7u32.to_le_bytes()).unwrap();
    // Serialised, the producer would wait the whole minute for a consumer that cannot start.
    let p = pair(&gpu, Duration::from_secs(60));
    let (pa, ca) = (args(x, 0), args(x, y));
    let t0 = Instant::now();
    let mut b = q.batch().unwrap();
    b.dispatch(&raw_dispatch(&p.producer, 1, 1, &pa[..8]))
        .unwrap()
        .dispatch(&raw_dispatch(&p.consumer, 1, 1, &ca).unordered())
        .unwrap();
    b.submit().unwrap().wait(T).unwrap();
    assert!(p.consumer_started.load(Ordering::Acquire));
    let mut out = [0u8; 4];
    mem.read(64, &mut out).unwrap();
    assert_eq!(
        u32::from_le_bytes(out),
        0,
        "without the barrier bit the consumer read before the producer wrote"
    );
    mem.read(0, &mut out).unwrap();
    assert_eq!(
        u32::from_le_bytes(out),
        1,
        "the batch completed before its overlapped first dispatch ended"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(50),
        "the two kernels did not overlap"
    );
}

#[test]
fn a_barrier_packet_waits_for_overlapped_dispatches() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let mem = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let (x, y) = (mem.gpu_address(), mem.gpu_address() + 64);
    let p = pair(&gpu, Duration::from_secs(60));
    let (pa, ca) = (args(x, 0), args(x, y));
    let mut b = q.batch().unwrap();
    b.dispatch(&raw_dispatch(&p.producer, 1, 1, &pa[..8]))
        .unwrap()
        .dispatch(&raw_dispatch(&p.consumer, 1, 1, &ca).unordered())
        .unwrap()
        .barrier_and(&[])
        .unwrap();
    // The batch's completion rides on the barrier packet, which starts only after both
    // kernels have ended: the producer's write is visible when the wait returns.
    b.submit().unwrap().wait(T).unwrap();
    let mut out = [0u8; 4];
    mem.read(0, &mut out).unwrap();
    assert_eq!(u32::from_le_bytes(out), 1);
}
