//! The AQL publication protocol as the emulated packet processor enforces it, and KFD's queue
//! checks: a header-first writer is caught, kfdrt's writer is not; doorbells on both pages
//! (CREATE_QUEUE's checks are in `queue_buffers.rs`).

mod common;

use kfdrt::emu::{EmuConfig, Preset};
use kfdrt::AqlQueueOptions;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

fn with_torn_window() -> common::Checked {
    let mut c = EmuConfig::new(Preset::Gfx90a, 1);
    c.torn_check_window = Duration::from_millis(30);
    common::emulated_with(c)
}

/// Publishes a barrier-AND at the queue's next slot the wrong way round: header first, body
/// (its completion signal) only after a pause.
fn header_first_write(queue: &kfdrt::AqlQueue, completion: u64) {
    // SAFETY: the amd_queue_t and ring are live GTT owned by `queue`.
    let q = unsafe { &*(queue.amd_queue_address() as *const aql::AmdQueue) };
    let id = q.write_dispatch_id.fetch_add(1, Ordering::AcqRel);
    let slot = (queue.ring_address() + (id % u64::from(queue.size())) * 64) as *const AtomicU32;
    // Barrier-AND, barrier bit, system fences.
    let header = 3 | 1 << 8 | 2 << 9 | 2 << 11;
    // SAFETY: dword 0 of the reserved slot.
    unsafe { &*slot }.store(header, Ordering::Release);
    std::thread::sleep(Duration::from_millis(10));
    let sig = slot.wrapping_add(14) as *const AtomicU64;
    // SAFETY: dwords 14-15 of the slot, 8-byte aligned (slots are 64-byte aligned).
    unsafe { &*sig }.store(completion, Ordering::Relaxed);
}

/// Publishes `words` at the queue's next slot as the protocol says (body, then the header with
/// a release store), bypassing kfdrt: no checks, no doorbell, no hint.
fn publish_without_doorbell(queue: &kfdrt::AqlQueue, words: &[u32; 16]) {
    // SAFETY: the amd_queue_t and ring are live GTT owned by `queue`.
    let q = unsafe { &*(queue.amd_queue_address() as *const aql::AmdQueue) };
    let id = q.write_dispatch_id.fetch_add(1, Ordering::AcqRel);
    let slot = (queue.ring_address() + (id % u64::from(queue.size())) * 64) as *const AtomicU32;
    for (i, w) in words.iter().enumerate().skip(1) {
        // SAFETY: dwords of the reserved slot.
        unsafe { &*slot.add(i) }.store(*w, Ordering::Relaxed);
    }
    // SAFETY: dword 0 of the slot.
    unsafe { &*slot }.store(words[0], Ordering::Release);
}

#[test]
fn header_first_writer_is_detected_as_torn() {
    let kfd = with_torn_window();
    let gpu = kfd.gpu(0).unwrap();
    let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let sig = kfd.create_signal(1).unwrap();
    header_first_write(&queue, sig.handle());
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        kfd.emulator().unwrap().stats().torn_packets >= 1,
        "a header-first publication went unnoticed"
    );
}

#[test]
fn the_strict_default_catches_a_header_first_writer_without_a_window() {
    // Strict mode marks free slots' completion-signal dwords: a header that becomes valid
    // while they still hold the mark was published before its body.
    for pass in 0..2 {
        let kfd = common::emulated(Preset::Gfx90a, 1);
        let gpu = kfd.gpu(0).unwrap();
        let queue = gpu
            .create_aql_queue(AqlQueueOptions::default().with_size_packets(64))
            .unwrap();
        if pass == 1 {
            // Second pass: slots that already held a packet (the processor re-marks them).
            for _ in 0..64 {
                queue
                    .barrier_and(&[])
                    .unwrap()
                    .wait(Some(Duration::from_secs(30)))
                    .unwrap();
            }
        }
        let sig = kfd.create_signal(1).unwrap();
        header_first_write(&queue, sig.handle());
        let t0 = std::time::Instant::now();
        while kfd.emulator().unwrap().stats().torn_packets == 0 {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "pass {pass}: a header-first publication went unnoticed"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(queue.fault().is_some(), "the queue stops on it");
    }
}

#[test]
fn kfdrt_writer_is_never_torn_even_with_a_detection_window() {
    let kfd = with_torn_window();
    let gpu = kfd.gpu(0).unwrap();
    let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    for _ in 0..5 {
        let mut b = queue.batch().unwrap();
        for _ in 0..4 {
            b.barrier_and(&[]).unwrap();
        }
        b.submit()
            .unwrap()
            .wait(Some(Duration::from_secs(30)))
            .unwrap();
    }
    let s = kfd.emulator().unwrap().stats();
    assert_eq!(s.torn_packets, 0);
    assert_eq!(s.packets_run, 20);
}

#[test]
fn doorbells_fill_the_first_page_then_the_second() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let small = AqlQueueOptions::default()
        .with_size_packets(64)
        .with_kernarg_bytes(4096);
    let queues: Vec<_> = (0..250)
        .map(|_| gpu.create_aql_queue(small).unwrap())
        .collect();
    let in_page = |q: &kfdrt::AqlQueue| (q.doorbell_offset() & 0x1FFF) / 4096;
    assert_eq!(in_page(&queues[0]), 0);
    assert!(
        queues.iter().any(|q| in_page(q) == 1),
        "no queue landed on the second doorbell page: {:x?}",
        queues
            .iter()
            .map(|q| q.doorbell_offset() & 0x1FFF)
            .collect::<Vec<_>>()
    );
    // The queues on the second page work.
    let last = queues.last().unwrap();
    assert_eq!(in_page(last), 1);
    last.barrier_and(&[])
        .unwrap()
        .wait(Some(Duration::from_secs(30)))
        .unwrap();
    let mut offs: Vec<u64> = queues.iter().map(|q| q.doorbell_offset()).collect();
    offs.sort_unstable();
    offs.dedup();
    assert_eq!(offs.len(), 250, "every queue has its own doorbell");
}

#[test]
fn profiling_queues_get_ordered_timestamps() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let queue = gpu
        .create_aql_queue(AqlQueueOptions::default().profiled())
        .unwrap();
    let mut last_end = 0;
    for _ in 0..3 {
        let s = queue.barrier_and(&[]).unwrap();
        s.wait(Some(Duration::from_secs(30))).unwrap();
        let (start, end) = s.timestamps();
        assert!(start > 0 && end >= start, "start {start} end {end}");
        assert!(start >= last_end, "timestamps go backwards");
        last_end = end;
    }
    let plain = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let s = plain.barrier_and(&[]).unwrap();
    s.wait(Some(Duration::from_secs(30))).unwrap();
    assert_eq!(s.timestamps(), (0, 0), "no timestamps without profiling");
}

#[test]
fn strict_mode_waits_for_the_doorbell() {
    let mut c = EmuConfig::new(Preset::Gfx90a, 1);
    c.aql_requires_doorbell = true;
    let kfd = common::emulated_with(c);
    let gpu = kfd.gpu(0).unwrap();
    let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    // kfdrt rings the doorbell after publishing, so strict mode runs its packets too.
    queue
        .barrier_and(&[])
        .unwrap()
        .wait(Some(Duration::from_secs(30)))
        .unwrap();
    // A packet published without a doorbell does not run in strict mode.
    let sig = kfd.create_signal(1).unwrap();
    let packet = aql::Packet::BarrierAnd(aql::BarrierPacket {
        completion_signal: sig.handle(),
        ..Default::default()
    });
    publish_without_doorbell(&queue, &packet.encode());
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        sig.value(),
        1,
        "strict mode ran a packet before its doorbell"
    );
}

#[test]
fn a_work_group_whose_size_wraps_32_bits_stops_the_queue() {
    // 32768 x 32768 x 4 = 2^32 work-items: a 32-bit product is 0. The processor must refuse it
    // (INCOMPATIBLE_ARGUMENTS, as for any group over 1024), not run it or panic.
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let kernel = gpu
        .emulated_kernel(
            "never",
            0,
            std::sync::Arc::new(|_: &kfdrt::emu::WorkGroup<'_>| Ok(())),
        )
        .unwrap();
    let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let sig = kfd.create_signal(1).unwrap();
    let words = aql::KernelDispatchPacket {
        barrier: true,
        dimensions: 3,
        workgroup_size: [32768, 32768, 4],
        grid_size: [32768, 32768, 4],
        kernel_object: kernel.object(),
        completion_signal: sig.handle(),
        ..Default::default()
    }
    .encode();
    publish_without_doorbell(&queue, &words);
    let t0 = std::time::Instant::now();
    let fault = loop {
        if let Some(f) = queue.fault() {
            break f;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the queue did not stop"
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    assert_eq!(
        fault.code,
        aql::queue_error::INCOMPATIBLE_ARGUMENTS,
        "{}",
        fault.describe()
    );
    assert_eq!(sig.value(), 1, "the packet completed");
}
