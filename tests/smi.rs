//! System-management events (SMI_EVENTS) as a watcher sees them: queue eviction and restore,
//! GPU resets (pre and post, one sequence number), VM faults with the process, each only on the
//! GPU it concerns and only when asked for.

mod common;

use kfdrt::emu::Preset;
use kfdrt::smi::{self, SmiEvent};
use kfdrt::MemoryKind;
use sdma::SdmaPacket;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);
const QUIET: Duration = Duration::from_millis(50);

fn fields(e: &SmiEvent) -> Vec<&str> {
    e.fields.trim_end_matches('\0').split_whitespace().collect()
}

#[test]
fn evictions_resets_and_faults_reach_their_gpus_watchers() {
    let kfd = common::emulated(Preset::Gfx90a, 2);
    let emu = kfd.emulator().unwrap().clone();
    let (g0, g1) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    let all = [
        smi::VM_FAULT,
        smi::GPU_PRE_RESET,
        smi::GPU_POST_RESET,
        smi::QUEUE_EVICTION,
        smi::QUEUE_RESTORE,
    ];
    let mut w0 = g0.smi_events(&all).unwrap();
    let mut w1 = g1.smi_events(&all).unwrap();
    let mut resets_only = g0.smi_events(&[smi::GPU_PRE_RESET]).unwrap();
    let pid = std::process::id().to_string();

    // Eviction and restore: every GPU's watcher hears of it, naming its own node.
    emu.faults().evict_queues();
    emu.faults().restore_queues();
    for (w, g) in [(&mut w0, &g0), (&mut w1, &g1)] {
        let e = w.next(WAIT).unwrap().expect("an eviction line");
        assert_eq!(e.event, smi::QUEUE_EVICTION);
        let f = fields(&e);
        assert_eq!(f[1], format!("-{pid}"));
        assert_eq!(f[2], format!("{:x}", g.id()));
        assert_eq!(f[3], "2", "TTM trigger");
        assert!(f[0].parse::<i64>().unwrap() > 0, "a boot-time timestamp");
        let r = w.next(WAIT).unwrap().expect("a restore line");
        assert_eq!(r.event, smi::QUEUE_RESTORE);
        assert_eq!(fields(&r)[2], format!("{:x}", g.id()));
    }
    // Suspend and resume: the same pair, with the suspend trigger.
    emu.faults().suspend();
    emu.faults().resume();
    let e = w0.next(WAIT).unwrap().unwrap();
    assert_eq!((e.event, fields(&e)[3]), (smi::QUEUE_EVICTION, "3"));
    assert_eq!(w0.next(WAIT).unwrap().unwrap().event, smi::QUEUE_RESTORE);
    assert_eq!(w1.next(WAIT).unwrap().unwrap().event, smi::QUEUE_EVICTION);
    assert_eq!(w1.next(WAIT).unwrap().unwrap().event, smi::QUEUE_RESTORE);

    // A reset of GPU 0: pre and post with one sequence number, to GPU 0's watchers only.
    emu.inject_gpu_reset(g0.id(), false).unwrap();
    let pre = w0.next(WAIT).unwrap().unwrap();
    let post = w0.next(WAIT).unwrap().unwrap();
    assert_eq!(
        (pre.event, post.event),
        (smi::GPU_PRE_RESET, smi::GPU_POST_RESET)
    );
    assert_eq!(fields(&pre)[0], "1");
    assert_eq!(fields(&pre)[0], fields(&post)[0]);
    assert!(w1.next(QUIET).unwrap().is_none(), "GPU 1 was not reset");
    // A watcher that asked for pre-reset events only gets no eviction or post-reset lines.
    assert_eq!(
        resets_only.next(WAIT).unwrap().unwrap().event,
        smi::GPU_PRE_RESET
    );
    assert!(resets_only.next(QUIET).unwrap().is_none());

    // A VM fault on GPU 1 names the process.
    let q = g1.create_sdma_queue().unwrap();
    let dst = g1.alloc(4096, MemoryKind::GttCoherent).unwrap();
    common::sdma_submit(
        &q,
        &[SdmaPacket::CopyLinear {
            src: 0x7000_0000_0000,
            dst: dst.gpu_address(),
            bytes: 64,
        }],
        WAIT,
    )
    .unwrap();
    let e = w1.next(WAIT).unwrap().expect("a VM fault line");
    assert_eq!(e.event, smi::VM_FAULT);
    let (p, task) = e.fields.split_once(':').unwrap();
    assert_eq!(u32::from_str_radix(p, 16).unwrap(), std::process::id());
    assert!(!task.is_empty());
    assert!(w0.next(QUIET).unwrap().is_none(), "the fault was on GPU 1");
}

/// Streams opened and closed leave nothing behind in the driver (KFD frees a client when its
/// file is released): thousands of them do not run out of descriptors.
#[test]
fn closed_streams_are_forgotten() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let g = kfd.gpu(0).unwrap();
    for _ in 0..3000 {
        drop(g.smi_events(&[smi::QUEUE_EVICTION]).unwrap());
    }
    let mut w = g.smi_events(&[smi::QUEUE_EVICTION]).unwrap();
    kfd.emulator().unwrap().faults().evict_queues();
    kfd.emulator().unwrap().faults().restore_queues();
    assert_eq!(w.next(WAIT).unwrap().unwrap().event, smi::QUEUE_EVICTION);
    // The process's descriptors did not pile up: one more stream and a pipe still open.
    let n = std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(n < 1000, "{n} descriptors open");
}
