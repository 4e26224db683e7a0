//! System-management events (SMI_EVENTS) as a watcher sees them: queue eviction and restore,
//! GPU resets (pre and post, one sequence number), VM faults with the process, each only on the
//! GPU it concerns and only when asked for.

use crate::common;

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
    common::own_process::in_own_process("smi::closed_streams_are_forgotten", || {
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
    });
}

/// `kfd_smi_ev_read` answers EAGAIN on an empty stream whatever the file's flags: a reader
/// that calls `read` without polling first must not block (kfdtest's HMMProfilingEvent
/// reader does exactly that).
#[test]
fn reading_an_empty_stream_is_eagain_not_a_block() {
    use kfd_sys::bindings::kfd_ioctl_smi_events_args;
    use kfd_sys::DriverExt;
    let test = "smi::reading_an_empty_stream_is_eagain_not_a_block";
    let Some(kfd) = common::under_test(test, Preset::Gfx90a, 1, &[]) else {
        return;
    };
    if !kfd.supports(kfdrt::Feature::SmiEvents) {
        eprintln!("{test}: skipped: the driver has no SMI events");
        return;
    }
    let gpu = kfd.gpu(0).unwrap();
    let mut a = kfd_ioctl_smi_events_args {
        gpuid: gpu.id(),
        anon_fd: 0,
    };
    kfd.driver().kfd_ioctl(&mut a).unwrap();
    let fd = a.anon_fd as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 96];
        // SAFETY: reading into a live local buffer.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        let _ = tx.send((n, kfdrt::Errno::last()));
    });
    let (n, errno) = rx
        .recv_timeout(WAIT)
        .expect("read() of an empty SMI stream blocked");
    assert_eq!((n, errno), (-1, kfdrt::Errno::EAGAIN));
    // SAFETY: closing the descriptor the driver gave this test.
    unsafe { libc::close(fd) };
}

/// A prefetch of SVM memory to a GPU is a migration the GPU's watchers see
/// (`svm_migrate_vma_to_vram`): a start line and an end line, start and size in pages, from
/// system memory (0) to the GPU, the prefetch and preferred locations, the prefetch trigger
/// (0), and the result (0). A second prefetch to the same place moves nothing; one back to
/// system memory is reported by the GPU the bytes leave.
#[test]
fn svm_prefetches_are_reported_as_migrations() {
    use kfdrt::memory::svm::{SvmAttribute as A, SvmLocation};
    let test = "smi::svm_prefetches_are_reported_as_migrations";
    let Some(kfd) = common::under_test(test, Preset::Gfx90a, 1, &[]) else {
        return;
    };
    if !kfd.supports(kfdrt::Feature::SmiEvents) || !kfd.supports(kfdrt::Feature::Svm) {
        eprintln!("{test}: skipped: the driver has no SMI events or no SVM");
        return;
    }
    let gpu = kfd.gpu(0).unwrap();
    if gpu.info().vram_bytes == 0 {
        eprintln!("{test}: skipped: the GPU has no VRAM to migrate to");
        return;
    }
    let mut w = gpu
        .smi_events(&[smi::MIGRATE_START, smi::MIGRATE_END])
        .unwrap();
    let len = 16 << 10;
    let host = common::HostPages::new(len);
    let addr = host.addr();
    let prefetch = |loc: SvmLocation| {
        // SAFETY: the mapping outlives every GPU access (no queue runs here).
        unsafe {
            kfd.svm_set_attributes(
                addr,
                len as u64,
                &[A::Access(gpu.id()), A::PrefetchLocation(loc)],
            )
        }
        .unwrap()
    };
    prefetch(SvmLocation::Gpu(gpu.id()));
    let pid = std::process::id();
    let id = format!("{:x}", gpu.id());
    let start = w.next(WAIT).unwrap().expect("a migration start");
    assert_eq!(start.event, smi::MIGRATE_START);
    let f = fields(&start);
    assert!(f[0].parse::<i64>().unwrap() > 0, "a boot-time timestamp");
    assert_eq!(
        f[1..],
        [
            format!("-{pid}"),
            format!("@{:x}(4)", addr >> 12),
            format!("0->{id}"),
            format!("{id}:ffffffff"),
            "0".into()
        ]
    );
    let end = w.next(WAIT).unwrap().expect("a migration end");
    assert_eq!(end.event, smi::MIGRATE_END);
    assert_eq!(
        fields(&end)[1..],
        [
            format!("-{pid}"),
            format!("@{:x}(4)", addr >> 12),
            format!("0->{id}"),
            "0".into(),
            "0".into()
        ]
    );
    prefetch(SvmLocation::Gpu(gpu.id()));
    assert!(w.next(QUIET).unwrap().is_none(), "nothing moved");
    prefetch(SvmLocation::System);
    let back = w.next(WAIT).unwrap().expect("a migration back");
    assert_eq!(fields(&back)[3], format!("{id}->0"));
}
