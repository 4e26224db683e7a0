//! Eviction and restore, suspend and resume (kfd-emu's `FaultInjector`, as KFD evicts a
//! process's queues under memory pressure and around a power-management cycle): queues stop at
//! packet boundaries, buffers keep their contents, work resumes where it stopped, and kfdrt
//! rides through it: waits that end during the eviction time out as waits do, later waits
//! succeed, nothing is reported as an error.

use crate::common;

use kfdrt::emu::{GpuFault, Preset, WorkGroup};
use kfdrt::{AqlQueueOptions, Dispatch, Error, Kernel, MemoryKind, Pm4QueueOptions};
use std::sync::Arc;
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(20));
const SHORT: Option<Duration> = Some(Duration::from_millis(100));

/// Adds 1 to the u64 its argument points to.
fn increment(gpu: &kfdrt::Gpu) -> Kernel {
    gpu.emulated_kernel(
        "increment",
        8,
        Arc::new(|wg: &WorkGroup<'_>| -> Result<(), GpuFault> {
            let p = wg.kernarg_u64(0)?;
            wg.mem.atomic_add_u64(p, 1)?;
            Ok(())
        }),
    )
    .unwrap()
}

fn counter(b: &kfdrt::Buffer) -> u64 {
    u64::from_le_bytes(b.to_vec().unwrap()[..8].try_into().unwrap())
}

#[test]
fn evicted_queues_stop_and_resume_with_their_work_and_memory() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let emu = kfd.emulator().unwrap().clone();
    let gpu = kfd.gpu(0).unwrap();
    let k = increment(&gpu);
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let c = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let data = gpu.alloc(1 << 20, MemoryKind::DeviceLocal).unwrap();
    let staging = gpu.alloc(1 << 20, MemoryKind::GttCoherent).unwrap();
    let pattern: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
    staging.write(0, &pattern).unwrap();
    let engine = gpu.copy_engine().unwrap();
    engine
        .copy(&data, 0, &staging, 0, 1 << 20, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    c.write(0, &[0; 8]).unwrap();
    let args = c.gpu_address().to_le_bytes();
    // SAFETY: the argument is `c`, which outlives every wait below.
    let dispatch = unsafe { Dispatch::linear(&k, 1, 1).with_raw_args(&args) };
    q.dispatch(&dispatch).unwrap().wait(T).unwrap();
    assert_eq!(counter(&c), 1);

    emu.faults().evict_queues();
    // Work submitted while evicted waits; a wait that ends meanwhile is a plain timeout.
    let pending = q.dispatch(&dispatch).unwrap();
    match pending.wait(SHORT) {
        Err(Error::Timeout { .. }) => {}
        other => panic!("a wait during eviction: {other:?}"),
    }
    assert_eq!(counter(&c), 1, "an evicted queue ran a packet");
    // A new queue made while evicted is evicted too (KFD creates it inactive).
    let late = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    assert!(matches!(
        late.finish(SHORT.unwrap()),
        Err(Error::Timeout { .. })
    ));
    // Evictions nest: one restore of two leaves the queues evicted.
    emu.faults().evict_queues();
    assert!(emu.faults().restore_queues());
    assert!(matches!(pending.wait(SHORT), Err(Error::Timeout { .. })));
    assert!(emu.faults().restore_queues());
    assert!(!emu.faults().restore_queues(), "nothing left to restore");

    pending.wait(T).unwrap();
    late.finish(T.unwrap()).unwrap();
    assert_eq!(counter(&c), 2);
    // Memory kept its contents across the eviction.
    let back = gpu.alloc(1 << 20, MemoryKind::GttCoherent).unwrap();
    engine
        .copy(&back, 0, &data, 0, 1 << 20, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    assert_eq!(back.to_vec().unwrap(), pattern);
}

#[test]
fn a_suspend_stops_every_gpu_until_resume() {
    let kfd = common::emulated(Preset::Gfx90a, 2);
    let emu = kfd.emulator().unwrap().clone();
    let mut queues = Vec::new();
    let counters: Vec<_> = kfd
        .gpus()
        .iter()
        .map(|g| {
            let c = g.alloc(4096, MemoryKind::GttCoherent).unwrap();
            c.write(0, &[0; 8]).unwrap();
            queues.push((
                g.create_aql_queue(AqlQueueOptions::default()).unwrap(),
                increment(g),
            ));
            c
        })
        .collect();
    emu.faults().suspend();
    let runs_before = emu.stats().packets_run;
    let mut pending = Vec::new();
    for ((q, k), c) in queues.iter().zip(&counters) {
        let args = c.gpu_address().to_le_bytes();
        // SAFETY: the argument is a counter buffer that outlives the waits below.
        let d = unsafe { Dispatch::linear(k, 1, 1).with_raw_args(&args) };
        for _ in 0..8 {
            pending.push(q.dispatch(&d).unwrap());
        }
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        emu.stats().packets_run,
        runs_before,
        "a suspended GPU ran packets"
    );
    assert!(emu.faults().queues_evicted());
    emu.faults().resume();
    for p in pending {
        p.wait(T).unwrap();
    }
    for c in &counters {
        assert_eq!(counter(c), 8);
    }
}
