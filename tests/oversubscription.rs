//! Oversubscription: a process may create more user queues than the GPU has hardware queue
//! slots (`num_cp_queues`); the hardware scheduler maps them in turn, and every queue makes
//! progress. Work submitted to all of them at once completes.

use crate::common;

use kfdrt::emu::{GpuFault, Preset, WorkGroup};
use kfdrt::{AqlQueueOptions, Dispatch, MemoryKind};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn more_queues_than_hardware_slots_all_progress() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let slots = gpu.info().cp_queues;
    assert!(slots > 0, "the topology gives the hardware queue count");
    let n = slots as usize + 8;
    let k = gpu
        .emulated_kernel(
            "increment",
            8,
            Arc::new(|wg: &WorkGroup<'_>| -> Result<(), GpuFault> {
                let p = wg.kernarg_u64(0)?;
                wg.mem.atomic_add_u64(p, 1)?;
                Ok(())
            }),
        )
        .unwrap();
    let counters = gpu.alloc(8 * n as u64, MemoryKind::GttCoherent).unwrap();
    counters.write(0, &vec![0; 8 * n]).unwrap();
    let queues: Vec<_> = (0..n)
        .map(|_| {
            gpu.create_aql_queue(AqlQueueOptions::default().with_size_packets(64))
                .unwrap()
        })
        .collect();
    let args: Vec<[u8; 8]> = (0..n)
        .map(|i| (counters.gpu_address() + 8 * i as u64).to_le_bytes())
        .collect();
    let mut pending = Vec::new();
    for round in 0..3 {
        for (q, a) in queues.iter().zip(&args) {
            // SAFETY: the argument points into `counters`, which outlives every wait below.
            let d = unsafe { Dispatch::linear(&k, 1, 1).with_raw_args(a) };
            pending.push((round, q.dispatch(&d).unwrap()));
        }
    }
    for (_, p) in pending {
        p.wait(Some(Duration::from_secs(30))).unwrap();
    }
    let bytes = counters.to_vec().unwrap();
    for i in 0..n {
        let c = u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap());
        assert_eq!(
            c, 3,
            "queue {i} of {n} ({slots} hardware slots) ran its work"
        );
    }
}
