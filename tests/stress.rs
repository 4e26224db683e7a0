//! Stress, bounded: many producers on one queue, many queues on many GPUs, and churn of queues,
//! events and buffers, each sized to finish in seconds on a 2-core CI machine. Set
//! `KFDRT_STRESS_SCALE=n` to multiply every count by `n` for a longer run.

use crate::common;

use common::raw_dispatch;
use kfdrt::emu::{GpuFault, Preset, WorkGroup};
use kfdrt::{AqlQueueOptions, Buffer, Dispatch, Kernel, MemoryKind, Pm4QueueOptions, Submission};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

const LONG: Option<Duration> = Some(Duration::from_secs(300));

fn scale() -> u64 {
    std::env::var("KFDRT_STRESS_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &u64| n > 0)
        .unwrap_or(1)
}

fn u64s(buf: &Buffer) -> Vec<u64> {
    buf.to_vec()
        .unwrap()
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Kernel arguments `(state, producer, seq)`. State per producer: `[last seq + 1, runs,
/// out-of-order runs]`. The kernel checks that it runs right after the producer's previous
/// packet (packets carry the barrier bit, so a queue runs them one after another).
fn sequence_kernel(wg: &WorkGroup<'_>) -> Result<(), GpuFault> {
    let state = wg.kernarg_u64(0)?;
    let producer = u64::from(wg.kernarg_u32(8)?);
    let seq = u64::from(wg.kernarg_u32(12)?);
    let slot = state + producer * 24;
    let next = wg.mem.read_u64(slot)?;
    if next != seq {
        wg.mem.atomic_add_u64(slot + 16, 1)?;
    }
    wg.mem.write_u64(slot, seq + 1)?;
    wg.mem.atomic_add_u64(slot + 8, 1)?;
    Ok(())
}

fn sequence_args(state: u64, producer: u32, seq: u32) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[..8].copy_from_slice(&state.to_le_bytes());
    a[8..12].copy_from_slice(&producer.to_le_bytes());
    a[12..].copy_from_slice(&seq.to_le_bytes());
    a
}

#[test]
fn four_producers_a_million_packets_each_run_once_in_order() {
    const PRODUCERS: u32 = 4;
    const BATCH: u32 = 64;
    let per = 1_000_000 * scale() as u32;
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let state = gpu
        .alloc(u64::from(PRODUCERS) * 24, MemoryKind::GttCoherent)
        .unwrap();
    state.write(0, &vec![0; PRODUCERS as usize * 24]).unwrap();
    let kernel = Arc::new(
        gpu.emulated_kernel("sequence", 16, Arc::new(sequence_kernel))
            .unwrap(),
    );
    let queue = gpu
        .create_aql_queue(AqlQueueOptions::default().with_size_packets(1024))
        .unwrap();
    let base = state.gpu_address();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (queue, kernel) = (queue.clone(), kernel.clone());
            std::thread::spawn(move || {
                let mut pending: VecDeque<Submission> = VecDeque::new();
                for start in (0..per).step_by(BATCH as usize) {
                    let mut batch = queue.batch().unwrap();
                    for seq in start..(start + BATCH).min(per) {
                        let a = sequence_args(base, p, seq);
                        batch.dispatch(&raw_dispatch(&kernel, 1, 1, &a)).unwrap();
                    }
                    pending.push_back(batch.submit().unwrap());
                    while pending.len() > 4 {
                        pending.pop_front().unwrap().wait(LONG).unwrap();
                    }
                }
                for s in pending {
                    s.wait(LONG).unwrap();
                }
            })
        })
        .collect();
    for t in producers {
        t.join().unwrap();
    }
    let s = u64s(&state);
    for p in 0..PRODUCERS as usize {
        let (next, runs, out_of_order) = (s[p * 3], s[p * 3 + 1], s[p * 3 + 2]);
        assert_eq!(runs, u64::from(per), "producer {p}: packets run");
        assert_eq!(out_of_order, 0, "producer {p}: packets run out of order");
        assert_eq!(next, u64::from(per), "producer {p}: last packet");
    }
    assert_eq!(kfd.emulator().unwrap().stats().torn_packets, 0);
}

/// The GPU's compiled counting kernel: `fence_then_count(out, counter, flag)`
/// (`tests/fixtures/code_objects/fence.hip`), which one work-item runs to add one to the u32 at
/// `counter` (it also stores 0 to `out[0]` and may set `*flag`).
fn counting_kernel(gpu: &kfdrt::Gpu) -> (kfdrt::CodeObject, Kernel) {
    let target = &gpu.info().gfx_target;
    let elf = common::code_object_for("fence", target)
        .unwrap_or_else(|| panic!("no fence code object is built for {target}"));
    let co = gpu.load_code_object(&elf).unwrap();
    let kernel = co.kernel("fence_then_count").unwrap();
    (co, kernel)
}

/// Arguments of [`counting_kernel`]: `counter`, with `scratch` for its other two pointers.
fn count_args(scratch: &Buffer, counter: u64) -> [u8; 24] {
    let mut a = [0u8; 24];
    a[..8].copy_from_slice(&scratch.gpu_address().to_le_bytes());
    a[8..16].copy_from_slice(&counter.to_le_bytes());
    a[16..].copy_from_slice(&(scratch.gpu_address() + 64).to_le_bytes());
    a
}

fn u32s(buf: &Buffer) -> Vec<u32> {
    buf.to_vec()
        .unwrap()
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// On every GPU of the device under test (when that is emulated: eight emulated GPUs).
#[test]
fn sixty_four_queues_on_every_gpu_with_copies_interleaved() {
    const QUEUES: usize = 64;
    let rounds = 8 * scale() as usize;
    let Some(dut) = common::under_test(
        "stress::sixty_four_queues_on_every_gpu_with_copies_interleaved",
        Preset::Gfx90a,
        1,
        &["fence"],
    ) else {
        return;
    };
    let kfd = match dut.emulator() {
        Some(_) => {
            drop(dut);
            common::emulated(Preset::Gfx90a, 8)
        }
        None => dut,
    };
    let gpus = kfd.gpus();
    std::thread::scope(|s| {
        for gpu in &gpus {
            s.spawn(move || {
                let (_co, kernel) = counting_kernel(gpu);
                let scratch = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
                let counters = gpu
                    .alloc((QUEUES * 4) as u64, MemoryKind::GttCoherent)
                    .unwrap();
                counters.write(0, &vec![0; QUEUES * 4]).unwrap();
                let queues: Vec<_> = (0..QUEUES)
                    .map(|_| {
                        gpu.create_aql_queue(AqlQueueOptions::default().with_size_packets(64))
                            .unwrap()
                    })
                    .collect();
                let engine = gpu.copy_engine().unwrap();
                let src = gpu.alloc(64 << 10, MemoryKind::GttCoherent).unwrap();
                let dst = gpu.alloc(64 << 10, MemoryKind::GttCoherent).unwrap();
                let pattern: Vec<u8> = (0..64 << 10).map(|i| (i * 7 + gpu.index()) as u8).collect();
                src.write(0, &pattern).unwrap();
                let mut pending = Vec::new();
                for round in 0..rounds {
                    // The previous round's submissions are waited for first: every one held
                    // holds a signal, and a process has 4095 signal events, which eight GPUs'
                    // rounds held all at once (plus every queue's own signal) would exceed.
                    for p in pending.drain(..) {
                        let p: kfdrt::Submission = p;
                        p.wait(LONG).unwrap();
                    }
                    for (i, q) in queues.iter().enumerate() {
                        let a = count_args(&scratch, counters.gpu_address() + i as u64 * 4);
                        pending.push(q.dispatch(&raw_dispatch(&kernel, 1, 1, &a)).unwrap());
                    }
                    // A copy between each round of dispatches, on the GPU's own engine.
                    let off = (round * 4096) as u64 % (64 << 10);
                    engine
                        .copy(&dst, off, &src, off, 4096, &[])
                        .unwrap()
                        .wait(LONG)
                        .unwrap();
                }
                for p in pending {
                    p.wait(LONG).unwrap();
                }
                let counts = u32s(&counters);
                assert!(
                    counts.iter().all(|&c| c == rounds as u32),
                    "GPU {}: per-queue runs {counts:?}",
                    gpu.index()
                );
                let copied = dst.to_vec().unwrap();
                for round in 0..rounds {
                    let off = (round * 4096) % (64 << 10);
                    assert_eq!(copied[off..off + 4096], pattern[off..off + 4096]);
                }
            });
        }
    });
}

/// Churn on the device under test; what the device still holds afterwards is counted when it
/// is emulated.
#[test]
fn queues_events_and_buffers_churn_without_leaking() {
    let Some(kfd) = common::under_test(
        "stress::queues_events_and_buffers_churn_without_leaking",
        Preset::Gfx90a,
        1,
        &["fence"],
    ) else {
        return;
    };
    let emu = kfd.emulator().cloned();
    let gpu = kfd.gpu(0).unwrap();
    let (_co, kernel) = counting_kernel(&gpu);
    let scratch = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let counter = gpu.alloc(8, MemoryKind::GttCoherent).unwrap();
    counter.write(0, &[0; 8]).unwrap();
    let rounds = 60 * scale();
    // The pools kfdrt fills on first use (signals, doorbell and MMIO pages, kernel-argument
    // blocks) stay: the baseline is taken after the first round.
    let mut baseline = None;
    for round in 0..rounds {
        if round == 1 {
            kfd.trim_memory();
            baseline = emu.as_ref().map(|e| e.live_objects());
        }
        let aql = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
        let pm4 = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
        let event = kfd
            .create_event(kfdrt::EventKind::Signal, kfdrt::EventReset::Auto)
            .unwrap();
        let signal = kfd.create_signal(1).unwrap();
        let buffers: Vec<Buffer> = [4096u64, 1 << 16, 3 << 20]
            .iter()
            .map(|&size| gpu.alloc(size, MemoryKind::DeviceLocal).unwrap())
            .collect();
        let a = count_args(&scratch, counter.gpu_address());
        let done = aql.dispatch(&raw_dispatch(&kernel, 1, 1, &a)).unwrap();
        // Every third round drops its work unwaited: the queue goes with it in flight.
        if round % 3 != 0 {
            done.wait(LONG).unwrap();
        }
        pm4.finish(LONG.unwrap()).unwrap();
        drop((aql, pm4, event, signal, buffers));
    }
    let u = u64::from(u32s(&counter)[0]);
    assert!(
        u >= rounds * 2 / 3 && u <= rounds,
        "{u} dispatches ran of {rounds}"
    );
    kfd.trim_memory();
    if let (Some(emu), Some(baseline)) = (emu, baseline) {
        let after = emu.live_objects();
        assert_eq!(
            after, baseline,
            "after {rounds} rounds the device holds {after}, after the first {baseline}"
        );
    }
    let _ = Dispatch::linear(&kernel, 1, 1);
}

#[test]
fn threads_allocating_and_freeing_never_collide_on_addresses() {
    // Each allocation has its own KFD buffer and address range; a range freed by one thread
    // and reserved at once by another must not still be in the GPU's address space (kfdrt
    // used to give the range back before freeing the buffer: EINVAL under contention).
    let Some(kfd) = common::under_test(
        "stress::threads_allocating_and_freeing_never_collide_on_addresses",
        Preset::Gfx90a,
        2,
        &[],
    ) else {
        return;
    };
    let rounds = 400 * scale() as usize;
    std::thread::scope(|s| {
        for t in 0..4 {
            let gpu = kfd.gpu(t % 2).unwrap();
            s.spawn(move || {
                for i in 0..rounds {
                    let kind = if i % 2 == 0 {
                        MemoryKind::GttCoherent
                    } else {
                        MemoryKind::DeviceLocal
                    };
                    let options = kfdrt::AllocOptions::new(kind).dedicated();
                    let b = gpu.alloc_with(4096 << (i % 4), options).unwrap();
                    drop(b);
                }
            });
        }
    });
}
