//! A GPU reset, injected into kfd-emu as amdgpu's recovery reports one to KFD: the process's
//! queues on that GPU stop for good, its hardware-exception event reports a whole-GPU reset with
//! memory lost (and, for an ECC cause, its memory-exception event an imprecise SRAM-ECC error).
//! Every kfdrt wait on that GPU ends with `Error::DeviceReset`; work on the other GPU keeps
//! completing; a queue created after the reset runs.

use crate::common;

use kfdrt::emu::{GpuFault, Preset, WorkGroup};
use kfdrt::{AqlQueueOptions, Dispatch, Error, Gpu, Kernel, MemoryKind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(20));

fn counting_kernel(gpu: &Gpu, runs: Arc<AtomicU64>) -> Kernel {
    gpu.emulated_kernel(
        "count",
        0,
        Arc::new(move |_: &WorkGroup<'_>| -> Result<(), GpuFault> {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }),
    )
    .unwrap()
}

fn expect_reset(r: kfdrt::Result<()>, gpu: &Gpu, what: &str) -> kfdrt::DeviceReset {
    match r {
        Err(Error::DeviceReset { reset, .. }) => {
            assert_eq!(reset.gpu_id, gpu.id(), "{what}");
            assert!(reset.memory_lost, "{what}: KFD always reports memory lost");
            reset
        }
        other => panic!("{what}: expected a device reset, got {other:?}"),
    }
}

#[test]
fn a_reset_ends_the_waits_on_its_gpu_and_spares_the_other() {
    for ecc in [false, true] {
        let kfd = common::emulated(Preset::Gfx90a, 2);
        let emu = kfd.emulator().unwrap().clone();
        let (g0, g1) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
        let q0 = g0.create_aql_queue(AqlQueueOptions::default()).unwrap();
        let q1 = g1.create_aql_queue(AqlQueueOptions::default()).unwrap();
        let sdma = g0.copy_engine().unwrap();
        // Work on GPU 0 that cannot finish before the reset: a barrier on a signal nobody sets.
        let never = kfd.create_signal(1).unwrap();
        let blocked = q0.barrier_and(&[&never]).unwrap();
        let src = g0.alloc(1 << 20, MemoryKind::GttCoherent).unwrap();
        let dst = g0.alloc(1 << 20, MemoryKind::GttCoherent).unwrap();

        emu.inject_gpu_reset(g0.id(), ecc).unwrap();

        let reset = expect_reset(blocked.wait(T), &g0, "the blocked barrier");
        assert_eq!(
            reset.cause,
            if ecc {
                kfd_sys::bindings::KFD_HW_EXCEPTION_ECC
            } else {
                kfd_sys::bindings::KFD_HW_EXCEPTION_GPU_HANG
            }
        );
        // Later submissions to the dead queue and copies on the GPU end the same way.
        expect_reset(
            q0.barrier_and(&[]).and_then(|s| s.wait(T)),
            &g0,
            "a new packet on the dead queue",
        );
        match sdma.copy(&src, 0, &dst, 0, 1 << 20, &[]) {
            Ok(c) => expect_reset(c.wait(T), &g0, "a copy on the reset GPU"),
            Err(e) => expect_reset(Err(e), &g0, "a copy on the reset GPU"),
        };

        // The other GPU keeps working.
        let runs = Arc::new(AtomicU64::new(0));
        let k1 = counting_kernel(&g1, runs.clone());
        q1.dispatch(&Dispatch::linear(&k1, 64, 64))
            .unwrap()
            .wait(T)
            .unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);

        // A queue made after the reset runs (KFD evicted the queues that existed).
        let fresh = g0.create_aql_queue(AqlQueueOptions::default()).unwrap();
        let k0 = counting_kernel(&g0, runs.clone());
        fresh
            .dispatch(&Dispatch::linear(&k0, 64, 64))
            .unwrap()
            .wait(T)
            .unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 2, "ecc={ecc}");
        never.store(0).unwrap();
        drop((blocked, q0, q1, fresh, sdma, src, dst, never));
    }
}
