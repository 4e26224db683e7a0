//! The AQL publication protocol as the emulated packet processor enforces it, and KFD's queue
//! checks: a header-first writer is caught, kfdrt's writer is not; doorbells on both pages
//! (CREATE_QUEUE's checks are in `queue_buffers.rs`).

use crate::common;

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
    let Some(kfd) = common::under_test(
        "aql_protocol::doorbells_fill_the_first_page_then_the_second",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
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
    let Some(kfd) = common::under_test(
        "aql_protocol::profiling_queues_get_ordered_timestamps",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
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

/// Publishes `packet` (its kernel object defaulting to a bound host function's) on a new queue
/// of `gpu` and returns the error the processor stopped the queue with; the packet's
/// completion signal must be untouched.
fn queue_error_of(gpu: &kfdrt::Gpu, what: &str, mut packet: aql::KernelDispatchPacket) -> u64 {
    let kernel = gpu
        .emulated_kernel(
            "never",
            0,
            std::sync::Arc::new(|_: &kfdrt::emu::WorkGroup<'_>| Ok(())),
        )
        .unwrap();
    if packet.kernel_object == u64::MAX {
        packet.kernel_object = kernel.object();
    }
    let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let sig = gpu.kfd().create_signal(1).unwrap();
    packet.completion_signal = sig.handle();
    publish_without_doorbell(&queue, &packet.encode());
    let t0 = std::time::Instant::now();
    let fault = loop {
        if let Some(f) = queue.fault() {
            break f;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{what}: the queue did not stop"
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    assert_eq!(sig.value(), 1, "{what}: the packet completed");
    fault.code
}

/// A valid 1-D dispatch of the bound kernel (`u64::MAX` stands for its object).
fn good_packet() -> aql::KernelDispatchPacket {
    aql::KernelDispatchPacket {
        barrier: true,
        dimensions: 1,
        workgroup_size: [64, 1, 1],
        grid_size: [64, 1, 1],
        kernel_object: u64::MAX,
        ..Default::default()
    }
}

#[test]
fn a_work_group_whose_size_wraps_32_bits_stops_the_queue() {
    // 32768 x 32768 x 4 = 2^32 work-items: a 32-bit product is 0. The processor must refuse it
    // (INVALID_ARGUMENT, ROCr's "group is too large", as for any group over 1024), not run it
    // or panic.
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let code = queue_error_of(
        &gpu,
        "a wrapping work-group",
        aql::KernelDispatchPacket {
            dimensions: 3,
            workgroup_size: [32768, 32768, 4],
            grid_size: [32768, 32768, 4],
            ..good_packet()
        },
    );
    assert_eq!(
        code,
        aql::queue_error::INVALID_ARGUMENT,
        "{}",
        aql::queue_error::describe(code)
    );
}

/// Each invalid dispatch packet stops its queue with the bit ROCr decodes for it
/// (`amd_aql_queue.cpp`: 2 invalid dim, 4 invalid group memory, 8 invalid code, 64 group too
/// large), and the packet's own fields are checked before the CP acts on it: a bad packet that
/// also asks for an absurd amount of scratch is reported as the bad packet it is, not as a
/// scratch request the runtime then fails to serve (out of resources).
#[test]
fn invalid_dispatch_packets_stop_the_queue_with_rocr_codes() {
    use aql::queue_error::*;
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let garbage_scratch = 0xdead_0000;
    let unmapped = 0x7fff_0000_0000;
    let cases: Vec<(&str, aql::KernelDispatchPacket, u64)> = vec![
        (
            "no dimensions",
            aql::KernelDispatchPacket {
                dimensions: 0,
                ..good_packet()
            },
            INCOMPATIBLE_ARGUMENTS,
        ),
        (
            "four dimensions",
            aql::KernelDispatchPacket {
                dimensions: 4,
                ..good_packet()
            },
            INCOMPATIBLE_ARGUMENTS,
        ),
        (
            "an empty grid",
            aql::KernelDispatchPacket {
                grid_size: [64, 0, 1],
                ..good_packet()
            },
            INCOMPATIBLE_ARGUMENTS,
        ),
        (
            "an empty work-group",
            aql::KernelDispatchPacket {
                workgroup_size: [0, 1, 1],
                ..good_packet()
            },
            INVALID_ARGUMENT,
        ),
        (
            "a work-group of 2048",
            aql::KernelDispatchPacket {
                workgroup_size: [2048, 1, 1],
                grid_size: [2048, 1, 1],
                ..good_packet()
            },
            INVALID_ARGUMENT,
        ),
        (
            "128 KiB of group memory",
            aql::KernelDispatchPacket {
                group_segment_size: 128 << 10,
                ..good_packet()
            },
            INVALID_ALLOCATION,
        ),
        (
            "a null kernel object",
            aql::KernelDispatchPacket {
                kernel_object: 0,
                ..good_packet()
            },
            INVALID_CODE_OBJECT,
        ),
        (
            "a misaligned kernel object",
            aql::KernelDispatchPacket {
                kernel_object: unmapped + 8,
                ..good_packet()
            },
            INVALID_CODE_OBJECT,
        ),
        (
            "an unmapped kernel object",
            aql::KernelDispatchPacket {
                kernel_object: unmapped,
                ..good_packet()
            },
            INVALID_CODE_OBJECT,
        ),
        (
            "bad dimensions and garbage scratch",
            aql::KernelDispatchPacket {
                dimensions: 0,
                private_segment_size: garbage_scratch,
                ..good_packet()
            },
            INCOMPATIBLE_ARGUMENTS,
        ),
        (
            "a big work-group and garbage scratch",
            aql::KernelDispatchPacket {
                workgroup_size: [64, 64, 1],
                private_segment_size: garbage_scratch,
                ..good_packet()
            },
            INVALID_ARGUMENT,
        ),
        (
            "big group memory and garbage scratch",
            aql::KernelDispatchPacket {
                group_segment_size: u32::MAX,
                private_segment_size: garbage_scratch,
                ..good_packet()
            },
            INVALID_ALLOCATION,
        ),
        (
            "an unmapped kernel and garbage scratch",
            aql::KernelDispatchPacket {
                kernel_object: unmapped,
                private_segment_size: garbage_scratch,
                ..good_packet()
            },
            INVALID_CODE_OBJECT,
        ),
    ];
    for (what, packet, want) in cases {
        let code = queue_error_of(&gpu, what, packet);
        assert_eq!(
            code,
            want,
            "{what}: {} (want {})",
            describe(code),
            describe(want)
        );
    }
}
