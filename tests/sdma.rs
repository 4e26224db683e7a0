//! SDMA queues and the copy engine, in the spirit of kfdtest's SDMA scenarios.

use crate::common;

use kfdrt::emu::Preset;
use kfdrt::{CopyPath, DebugOptions, Error, EventKind, EventReset, MemoryKind};
use sdma::SdmaPacket;
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(60));
const LONG: Duration = Duration::from_secs(60);

fn pattern(n: usize, seed: u32) -> Vec<u8> {
    (0..n)
        .map(|i| ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) >> 24) as u8)
        .collect()
}

#[test]
fn copy_larger_than_one_packet_and_fill() {
    // gfx942's SDMA keeps the 4 MiB per-packet limit here, so 10 MiB takes three packets (the
    // packets are counted on the emulator; elsewhere the bytes are what is checked).
    let Some(kfd) = common::under_test(
        "sdma::copy_larger_than_one_packet_and_fill",
        Preset::Gfx942,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_sdma_queue().unwrap();
    let n = 10 << 20;
    let src = gpu.alloc(n, MemoryKind::HostVisibleVram).unwrap();
    let dst = gpu.alloc(n, MemoryKind::GttCoherent).unwrap();
    let data = pattern(n as usize, 7);
    src.write(0, &data).unwrap();
    let packets_run = || kfd.emulator().map(|emu| emu.stats().packets_run);
    let before = packets_run();
    q.copy(&dst, 0, &src, 0, n, &[]).unwrap().wait(T).unwrap();
    if let (Some(before), Some(after)) = (before, packets_run()) {
        assert!(
            after - before >= 3,
            "split into 3 copy packets (counted before the completion runs)"
        );
    }
    assert!(dst.to_vec().unwrap() == data, "copied bytes differ");
    q.fill(&dst, 4096, 0xA5A5_A5A5, 8192, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    let s = dst.to_vec().unwrap();
    assert!(
        s[4096..12288].iter().all(|&b| b == 0xA5)
            && s[4095] == data[4095]
            && s[12288] == data[12288]
    );
}

#[test]
fn fills_split_at_the_fill_limit_not_the_copy_limit() {
    // On gfx90a one COPY_LINEAR may move 1 GiB but one CONSTANT_FILL only 4 MiB - 4: a 10 MiB
    // fill takes three fill packets.
    let Some(kfd) = common::under_test(
        "sdma::fills_split_at_the_fill_limit_not_the_copy_limit",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_sdma_queue().unwrap();
    let n = 10 << 20;
    let dst = gpu.alloc(n + 8, MemoryKind::GttCoherent).unwrap();
    dst.write(0, &[0u8; 4]).unwrap();
    dst.write(n + 4, &[0x11u8; 4]).unwrap();
    q.fill(&dst, 4, 0xC3C3_C3C3, n, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    let s = dst.to_vec().unwrap();
    assert_eq!(&s[..4], &[0; 4], "byte before the fill changed");
    assert!(
        s[4..n as usize + 4].iter().all(|&b| b == 0xC3),
        "fill incomplete"
    );
    assert_eq!(
        &s[n as usize + 4..],
        &[0x11; 4],
        "byte after the fill changed"
    );
}

#[test]
fn ring_wraps_with_packets_of_several_sizes_and_every_copy_lands() {
    let Some(kfd) = common::under_test(
        "sdma::ring_wraps_with_packets_of_several_sizes_and_every_copy_lands",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_sdma_queue().unwrap();
    let src = gpu.alloc(1 << 20, MemoryKind::GttCoherent).unwrap();
    let dst = gpu.alloc(1 << 20, MemoryKind::GttCoherent).unwrap();
    src.write(0, &pattern(1 << 20, 3)).unwrap();
    // 100 000 small copies and writes (7- and 5-dword packets) through a 64 KiB ring, then a
    // sentinel write: when it lands, everything before it has run.
    let mut packets = Vec::new();
    for i in 0..100_000u64 {
        let off = (i * 8) % (1 << 20);
        packets.push(SdmaPacket::CopyLinear {
            src: src.gpu_address() + off,
            dst: dst.gpu_address() + off,
            bytes: 8,
        });
        if i % 7 == 0 {
            packets.push(SdmaPacket::Write {
                dst: dst.gpu_address() + (1 << 20) - 8,
                data: vec![i as u32],
            });
        }
    }
    packets.push(SdmaPacket::Write {
        dst: dst.gpu_address() + (1 << 20) - 4,
        data: vec![0x05E7_14E1],
    });
    common::sdma_submit(&q, &packets, LONG).unwrap();
    let start = std::time::Instant::now();
    while dst.to_vec().unwrap()[(1 << 20) - 4..] != 0x05E7_14E1_u32.to_le_bytes() {
        assert!(start.elapsed() < LONG, "sentinel never landed");
        std::thread::sleep(Duration::from_millis(1));
    }
    let (s, d) = (src.to_vec().unwrap(), dst.to_vec().unwrap());
    assert!(s[..800_000] == d[..800_000], "a copy did not land");
    assert!(
        q.wptr() > 64 * 1024 * 4,
        "the 64 KiB ring wrapped many times"
    );
}

#[test]
fn exhausted_sdma_slots_fall_back_to_copy_kernels() {
    let Some(kfd) = common::under_test(
        "sdma::exhausted_sdma_slots_fall_back_to_copy_kernels",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    // The GPU's PCIe engines' slots (the driver's; other processes may hold some of them).
    let slots = (gpu.info().sdma_engines * gpu.info().sdma_queues_per_engine) as usize;
    let mut held = Vec::new();
    let refused = loop {
        match gpu.create_sdma_queue() {
            Ok(q) => held.push(q),
            Err(e) => break e,
        }
        assert!(held.len() <= slots, "more SDMA queues than slots");
    };
    assert_eq!(refused.errno(), Some(kfdrt::Errno::ENOMEM), "{refused}");
    if kfd.emulator().is_some() {
        assert_eq!(held.len(), slots, "the emulated engines' every slot");
    }
    let engine = gpu.copy_engine_preferring(CopyPath::Sdma).unwrap();
    assert_eq!(engine.path(), CopyPath::Shader);
    let n = 3 << 20;
    let src = gpu.alloc(n, MemoryKind::HostVisibleVram).unwrap();
    let dst = gpu.alloc(n, MemoryKind::HostVisibleVram).unwrap();
    let data = pattern(n as usize, 11);
    src.write(0, &data).unwrap();
    engine
        .copy(&dst, 0, &src, 0, n, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    assert!(dst.to_vec().unwrap() == data);
    engine
        .fill(&dst, 0, 0x0101_0101, 1024, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    assert!(dst.to_vec().unwrap()[..1024].iter().all(|&b| b == 1));
    drop(held);
    assert_eq!(
        gpu.copy_engine_preferring(CopyPath::Sdma).unwrap().path(),
        CopyPath::Sdma,
        "slots free again"
    );
    // The emulator's fault injector: the driver refusing every SDMA queue.
    let Some(emu) = kfd.emulator() else { return };
    emu.faults().exhaust_sdma_queues(true);
    assert_eq!(
        gpu.copy_engine_preferring(CopyPath::Sdma).unwrap().path(),
        CopyPath::Shader
    );
}

#[test]
fn dependencies_hold_the_copy_until_signalled() {
    let Some(kfd) = common::under_test(
        "sdma::dependencies_hold_the_copy_until_signalled",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    for engine in [
        gpu.copy_engine_preferring(CopyPath::Sdma).unwrap(),
        gpu.shader_copy_engine().unwrap(),
    ] {
        let src = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
        let dst = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
        src.write(0, &[9; 4096]).unwrap();
        // New buffers' contents are undefined (sub-allocations reuse memory): clear it.
        dst.write(0, &[0; 4096]).unwrap();
        let dep = kfd.create_signal(1).unwrap();
        let c = engine.copy(&dst, 0, &src, 0, 4096, &[&dep]).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        assert!(
            !c.is_complete(),
            "{:?} copy ran before its dependency",
            engine.path()
        );
        assert_eq!(
            dst.to_vec().unwrap()[0],
            0,
            "{:?} copied before its dependency",
            engine.path()
        );
        dep.store(0).unwrap();
        c.wait(T).unwrap();
        assert_eq!(dst.to_vec().unwrap()[4095], 9);
    }
}

/// Whether `gpu` reaches `owner`'s VRAM (XGMI or PCIe peer-to-peer), after saying `test` is
/// skipped if not (two emulated gfx1100s, or GPUs without a peer-to-peer path).
fn reaches_peer_vram(test: &str, gpu: &kfdrt::Gpu, owner: &kfdrt::Gpu) -> bool {
    let reaches = gpu.peer_access(owner) != kfdrt::PeerAccess::None;
    if !reaches {
        eprintln!(
            "{test}: skipped: GPU {:#x} has no path to GPU {:#x}'s VRAM",
            gpu.id(),
            owner.id()
        );
    }
    reaches
}

#[test]
fn peer_copies_need_the_destination_mapped_to_the_source_gpu() {
    let Some(kfd) = common::under_test(
        "sdma::peer_copies_need_the_destination_mapped_to_the_source_gpu",
        Preset::Gfx90a,
        2,
        &[],
    ) else {
        return;
    };
    let (g0, g1) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    if !reaches_peer_vram(
        "sdma::peer_copies_need_the_destination_mapped_to_the_source_gpu",
        &g0,
        &g1,
    ) {
        return;
    }
    let src = g0.alloc(1 << 20, MemoryKind::DeviceLocal).unwrap();
    let dst = g1.alloc(1 << 20, MemoryKind::HostVisibleVram).unwrap();
    let engine = g0.copy_engine_preferring(CopyPath::Sdma).unwrap();
    match engine.copy(&dst, 0, &src, 0, 1 << 20, &[]) {
        Err(Error::NotOnGpu { what, gpu_id }) => {
            assert!(what.contains("destination"), "{what}");
            assert_eq!(gpu_id, g0.id());
        }
        other => panic!("expected an error, got {other:?}"),
    }
    dst.map_to(&g0).unwrap();
    engine
        .fill(&src, 0, 0x7777_7777, 1 << 20, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    engine
        .copy(&dst, 0, &src, 0, 1 << 20, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    assert!(dst.to_vec().unwrap().iter().all(|&b| b == 0x77));
}

#[test]
fn copy_to_an_unmapped_address_reports_it() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let mem = kfd
        .create_event(EventKind::Memory, EventReset::Manual)
        .unwrap();
    let q = gpu.create_sdma_queue().unwrap();
    let src = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    const BAD: u64 = 0x7BAD_0000_0000;
    common::sdma_submit(
        &q,
        &[SdmaPacket::CopyLinear {
            src: src.gpu_address(),
            dst: BAD,
            bytes: 64,
        }],
        LONG,
    )
    .unwrap();
    let fault = mem
        .wait_memory_exception(T)
        .unwrap()
        .expect("a memory exception");
    assert_eq!(fault.va, BAD);
    assert_eq!(
        kfd.emulator()
            .unwrap()
            .queue_error(q.id())
            .map(|c| c.bits()),
        Some(0x2000_0000)
    );
}

#[test]
fn fences_traps_and_timestamps() {
    let Some(kfd) =
        common::under_test("sdma::fences_traps_and_timestamps", Preset::Gfx1100, 1, &[])
    else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_sdma_queue().unwrap();
    let _first = kfd
        .create_event(EventKind::Signal, EventReset::Auto)
        .unwrap();
    let ev = kfd
        .create_event(EventKind::Signal, EventReset::Auto)
        .unwrap();
    let buf = gpu.alloc(4 << 20, MemoryKind::GttCoherent).unwrap();
    let a = buf.gpu_address();
    common::sdma_submit(
        &q,
        &[
            SdmaPacket::Timestamp { addr: a },
            SdmaPacket::CopyLinear {
                src: a + (1 << 20),
                dst: a + (2 << 20),
                bytes: 1 << 20,
            },
            SdmaPacket::Timestamp { addr: a + 32 },
            SdmaPacket::Fence {
                addr: ev.mailbox_address().unwrap(),
                data: ev.id(),
                mtype_uncached: true,
            },
            SdmaPacket::Trap {
                int_context: ev.id(),
            },
        ],
        LONG,
    )
    .unwrap();
    assert!(ev.wait(T).unwrap(), "the TRAP did not wake the event");
    let s = buf.to_vec().unwrap();
    let t0 = u64::from_le_bytes(s[0..8].try_into().unwrap());
    let t1 = u64::from_le_bytes(s[32..40].try_into().unwrap());
    assert!(t0 > 0 && t1 >= t0, "timestamps {t0} then {t1}");
}

#[test]
fn the_engine_scribbles_past_its_read_pointer_but_not_on_the_write_pointer() {
    let Some(kfd) = common::under_test(
        "sdma::the_engine_scribbles_past_its_read_pointer_but_not_on_the_write_pointer",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_sdma_queue().unwrap();
    let aql = gpu
        .create_aql_queue(kfdrt::AqlQueueOptions::default())
        .unwrap();
    let buf = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    q.fill(&buf, 0, 1, 4096, &[]).unwrap().wait(T).unwrap();
    // The completion's event packets run after the signal: wait for the engine to drain.
    let start = std::time::Instant::now();
    while q.rptr() != q.wptr() {
        assert!(start.elapsed() < LONG, "the engine never drained");
        std::thread::yield_now();
    }
    let page = q.pointer_page().to_vec().unwrap();
    let rptr = u64::from_le_bytes(page[0..8].try_into().unwrap());
    let scratch = u64::from_le_bytes(page[8..16].try_into().unwrap());
    let wptr = u64::from_le_bytes(page[64..72].try_into().unwrap());
    assert_eq!(rptr, wptr, "everything consumed");
    assert_ne!(scratch, 0, "the engine writes just past its read pointer");
    // The compute queue, whose pointers live elsewhere, is unaffected.
    aql.barrier_and(&[]).unwrap().wait(T).unwrap();
}

#[test]
fn blit_code_objects_load_for_every_preset_and_reject_other_targets() {
    let objects: [(Preset, &[u8]); 3] = [
        (Preset::Gfx90a, include_bytes!("../blit/gfx90a.co")),
        (Preset::Gfx942, include_bytes!("../blit/gfx942.co")),
        (Preset::Gfx1100, include_bytes!("../blit/gfx1100.co")),
    ];
    for (preset, elf) in objects {
        let kfd = common::emulated(preset, 1);
        let gpu = kfd.gpu(0).unwrap();
        let co = gpu.load_code_object(elf).unwrap();
        let mut names: Vec<&str> = co.kernel_names().collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "kfdrt_blit_copy_aligned",
                "kfdrt_blit_copy_unaligned",
                "kfdrt_blit_fill"
            ]
        );
        let k = co.kernel("kfdrt_blit_fill").unwrap();
        let kd = k.descriptor().unwrap();
        assert_eq!(kd.kernarg_size, 32);
        assert_eq!(kd.wavefront_size32(), preset == Preset::Gfx1100);
        assert_eq!(k.entry_address().unwrap() % 256, 0);
        // Every other target's object is refused with both targets named.
        for (other, other_elf) in objects {
            if other != preset {
                match gpu.load_code_object(other_elf) {
                    Err(e @ Error::CodeObject(_)) => {
                        assert!(e.to_string().contains("code object is for"), "{e}")
                    }
                    r => panic!("{preset} loaded a {other} object: {r:?}"),
                }
            }
        }
        assert!(gpu.load_code_object(b"not an elf").is_err());
        assert!(co.kernel("missing").is_err());
    }
}

#[test]
fn shader_copies_of_unaligned_ranges() {
    let Some(kfd) = common::under_test(
        "sdma::shader_copies_of_unaligned_ranges",
        Preset::Gfx942,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let engine = gpu.shader_copy_engine().unwrap();
    let src = gpu.alloc(1 << 20, MemoryKind::GttCoherent).unwrap();
    let dst = gpu.alloc(1 << 20, MemoryKind::GttCoherent).unwrap();
    let data = pattern(1 << 20, 5);
    src.write(0, &data).unwrap();
    dst.write(0, &vec![0; 1 << 20]).unwrap();
    engine
        .copy(&dst, 3, &src, 1, 700_001, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    let d = dst.to_vec().unwrap();
    assert_eq!(&d[3..700_004], &data[1..700_002]);
    assert_eq!(d[2], 0);
    assert_eq!(d[700_004], 0);
}

#[test]
fn large_same_gpu_vram_copies_run_as_kernels() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let emu = kfd.emulator().unwrap().clone();
    let engine = gpu.copy_engine_preferring(CopyPath::Sdma).unwrap();
    assert_eq!(engine.path(), CopyPath::Sdma);
    assert_eq!(emu.stats().live_queues, 1);
    let n = 2 << 20;
    let src = gpu.alloc(n, MemoryKind::HostVisibleVram).unwrap();
    let dst = gpu.alloc(n, MemoryKind::HostVisibleVram).unwrap();
    let data = pattern(n as usize, 9);
    src.write(0, &data).unwrap();
    engine
        .copy(&dst, 0, &src, 0, 4096, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    assert_eq!(emu.stats().live_queues, 1, "a small copy stays on SDMA");
    engine
        .copy(&dst, 0, &src, 0, n, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    assert_eq!(
        emu.stats().live_queues,
        2,
        "a large VRAM-to-VRAM copy went to the kernel queue"
    );
    assert!(dst.to_vec().unwrap() == data);
}

#[test]
fn copies_on_sdma_5_and_later_write_back_and_invalidate_the_caches() {
    // SDMA 5+ engines read and write through the GL2 the shaders share: each copy is bracketed
    // by GCR_REQ packets (writeback + invalidate before, writeback after); SDMA 4 has none.
    for (preset, per_copy) in [(Preset::Gfx1100, 2), (Preset::Gfx90a, 0)] {
        let kfd = common::emulated(preset, 1);
        let gpu = kfd.gpu(0).unwrap();
        let q = gpu.create_sdma_queue().unwrap();
        let a = gpu.alloc(8192, MemoryKind::GttCoherent).unwrap();
        let b = gpu.alloc(8192, MemoryKind::GttCoherent).unwrap();
        q.copy(&b, 0, &a, 0, 8192, &[]).unwrap().wait(T).unwrap();
        q.fill(&b, 0, 7, 4096, &[]).unwrap().wait(T).unwrap();
        assert_eq!(
            kfd.emulator().unwrap().stats().sdma_cache_requests,
            2 * per_copy,
            "{preset}"
        );
    }
}

/// A COPY_LINEAR with the broadcast bit (kfdtest's P2P scenario): one packet copies the source
/// to a local and a peer destination.
#[test]
fn a_broadcast_copy_writes_both_destinations() {
    let Some(kfd) = common::under_test(
        "sdma::a_broadcast_copy_writes_both_destinations",
        Preset::Gfx90a,
        2,
        &[],
    ) else {
        return;
    };
    let (g0, g1) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    if !reaches_peer_vram("sdma::a_broadcast_copy_writes_both_destinations", &g0, &g1) {
        return;
    }
    let n = 1u64 << 20;
    let src = g0.alloc(n, MemoryKind::GttCoherent).unwrap();
    let local = g0.alloc(n, MemoryKind::HostVisibleVram).unwrap();
    let remote = g1.alloc(n, MemoryKind::HostVisibleVram).unwrap();
    remote.map_to(&g0).unwrap();
    let data = pattern(n as usize, 11);
    src.write(0, &data).unwrap();
    let q = g0.create_sdma_queue().unwrap();
    let copy = SdmaPacket::CopyLinearBroadcast {
        src: src.gpu_address(),
        dst1: local.gpu_address(),
        dst2: remote.gpu_address(),
        bytes: n,
    };
    let mut dwords = Vec::new();
    copy.encode(q.version(), g0.info().gfx_target_version, &mut dwords)
        .unwrap();
    assert_eq!(dwords.len(), 9);
    assert_ne!(dwords[0] & (1 << 27), 0, "the broadcast bit");
    common::sdma_submit(&q, &[copy], LONG).unwrap();
    // The engine runs packets in order: a fill after it completing means the copy ran.
    let mark = g0.alloc(4096, MemoryKind::GttCoherent).unwrap();
    q.fill(&mark, 0, 1, 4, &[]).unwrap().wait(T).unwrap();
    assert!(local.to_vec().unwrap() == data, "first destination");
    assert!(remote.to_vec().unwrap() == data, "second destination");
}

/// SDMA queues on a chosen engine (KFD 1.17's SDMA_BY_ENG_ID): each engine has its own slots,
/// and an engine the GPU lacks is refused.
#[test]
fn sdma_queues_on_a_chosen_engine() {
    let test = "sdma::sdma_queues_on_a_chosen_engine";
    let Some(kfd) = common::under_test(test, Preset::Gfx90a, 1, &[]) else {
        return;
    };
    if !kfd.supports(kfdrt::Feature::SdmaEngineId) {
        eprintln!("{test}: skipped: the driver is older than KFD 1.17");
        return;
    }
    let gpu = kfd.gpu(0).unwrap();
    let info = gpu.info().clone();
    let engines = info.sdma_engines + info.sdma_xgmi_engines;
    let last = engines - 1;
    let per_engine = info.sdma_queues_per_engine as usize;
    let on_last: Vec<_> = (0..per_engine)
        .map(|_| gpu.create_sdma_queue_on_engine(last).unwrap())
        .collect();
    match gpu.create_sdma_queue_on_engine(last) {
        Err(Error::Driver { errno, .. }) => assert_eq!(errno, kfdrt::Errno::ENOMEM),
        other => panic!("a full engine: {other:?}"),
    }
    // Engine 0 still has room, and a queue on it copies.
    let q = gpu.create_sdma_queue_on_engine(0).unwrap();
    let src = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let dst = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    src.write(0, &pattern(4096, 3)).unwrap();
    q.copy(&dst, 0, &src, 0, 4096, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    assert_eq!(dst.to_vec().unwrap(), pattern(4096, 3));
    assert!(matches!(
        gpu.create_sdma_queue_on_engine(engines),
        Err(Error::NotOnThisGpu { .. })
    ));
    drop(on_last);
}

/// An older KFD than 1.17 has no SDMA_BY_ENG_ID queues: the error says which version is needed.
/// Emulated: a KFD 1.16.
#[test]
fn sdma_queues_on_a_chosen_engine_need_kfd_1_17() {
    let mut config = kfdrt::emu::EmuConfig::new(Preset::Gfx90a, 1);
    config.kfd_version = kfdrt::KfdVersion::new(1, 16);
    let old = common::emulated_with(config);
    assert!(matches!(
        old.gpu(0).unwrap().create_sdma_queue_on_engine(0),
        Err(Error::NeedsKfd { .. })
    ));
}

/// A fill that times out waiting for ring space after part of it was committed: the committed
/// part (here the fill itself) still runs once the engine moves on, after the caller has seen
/// the error and dropped the buffer. The submission keeps the buffer until the work completes
/// or the queue is gone, so the engine's write lands in live memory, not in freed memory
/// (which, dedicated and unmapped, would be a GPU page fault).
#[test]
fn a_timed_out_submission_keeps_what_its_committed_packets_use() {
    use kfdrt::{AllocOptions, Signal};
    let debug = DebugOptions::default().with_wait_timeout(Duration::from_millis(300));
    let Some(kfd) = common::under_test_with(
        "sdma::a_timed_out_submission_keeps_what_its_committed_packets_use",
        1,
        &[],
        debug,
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_sdma_queue().unwrap();
    let gfx = gpu.info().gfx_target_version;
    let size = |p: &SdmaPacket| {
        let mut d = Vec::new();
        p.encode(q.version(), gfx, &mut d).unwrap();
        d.len() * 4
    };
    // The submission: a poll per half of each dependency, the fill, then the completion
    // (atomic, fence, trap). Enough dependencies that the fill still fits the empty ring but
    // the whole completion after it does not.
    let poll = size(&SdmaPacket::PollRegMem {
        addr: 0,
        reference: 0,
        mask: 0,
        func: pm4::CompareFunction::Equal,
        interval: 10,
        retry_count: 0xFFF,
    });
    let fill = size(&SdmaPacket::ConstantFill {
        dst: 0,
        data: 0,
        bytes: 4096,
    });
    let ring = 64 * 1024 - 4;
    let deps_n = (ring - fill) / (2 * poll);
    let atomic = size(&SdmaPacket::Atomic {
        addr: 0,
        op: sdma::AtomicOp::Add64,
        src: 0,
        cmp: 0,
        loop_interval: 0,
    });
    let fence = size(&SdmaPacket::Fence {
        addr: 0,
        data: 0,
        mtype_uncached: true,
    });
    let trap = size(&SdmaPacket::Trap { int_context: 0 });
    // What is left after the polls takes the fill, and not the whole completion after it.
    let left = ring - deps_n * 2 * poll;
    assert!(
        left >= fill && left < fill + atomic + fence + trap,
        "{left} bytes left after the polls"
    );
    // Dependencies nobody has met yet: the engine stops at the first poll.
    let pending: Vec<Signal> = (0..deps_n).map(|_| kfd.create_signal(1).unwrap()).collect();
    let deps: Vec<&Signal> = pending.iter().collect();
    let dst = gpu
        .alloc_with(4096, AllocOptions::new(MemoryKind::GttCoherent).dedicated())
        .unwrap();
    match q.fill(&dst, 0, 0x5A5A_5A5A, 4096, &deps) {
        Err(Error::Timeout { .. }) => {}
        other => panic!("expected a timeout for ring space, got {other:?}"),
    }
    drop(dst);
    for s in &pending {
        s.store(0).unwrap();
    }
    // The engine drains the committed part: a later fill waits for room behind it.
    let mark = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    q.fill(&mark, 0, 1, 4, &[])
        .unwrap()
        .wait(Some(Duration::from_secs(30)))
        .expect("the committed fill ran into live memory, not a fault");
    gpu.health().expect("no GPU fault");
}

/// Waits until the engine has consumed everything up to `wptr`.
fn drain(q: &kfdrt::SdmaQueue, wptr: u64) {
    let deadline = std::time::Instant::now() + LONG;
    while q.rptr() < wptr {
        assert!(std::time::Instant::now() < deadline, "the engine stalled");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn without_pcie_atomics() -> common::Checked {
    let mut config = kfdrt::emu::EmuConfig::new(Preset::Gfx90a, 2);
    config.platform.pcie_atomics = false;
    common::emulated_with(config)
}

#[test]
fn on_a_host_without_pcie_atomics_the_links_say_so_and_sdma_atomics_on_system_memory_do_not_land() {
    // kfd_set_iolink_no_atomics: a GPU's PCIe links lack atomics when the root port refused
    // them; its XGMI links (the two MI210s form a hive) and the CPU's links keep them.
    let kfd = without_pcie_atomics();
    let topo = kfd.topology();
    for g in &topo.gpus {
        assert!(
            !g.system_atomics,
            "GPU node {} has no atomics to the CPU",
            g.node
        );
        for l in &g.links {
            let xgmi = l.link_type == 11;
            assert_eq!(l.atomics_64bit(), xgmi, "{l:?}");
        }
    }
    assert!(topo.cpus[0].links.iter().all(|l| l.atomics_64bit()));
    let ideal = common::emulated(Preset::Gfx90a, 1);
    assert!(ideal.topology().gpus[0].system_atomics);

    // The engine's atomic on a GTT word leaves it as it was; on VRAM it lands.
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_sdma_queue().unwrap();
    let host = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let vram = gpu.alloc(4096, MemoryKind::HostVisibleVram).unwrap();
    host.write(0, &5u64.to_le_bytes()).unwrap();
    vram.write(0, &5u64.to_le_bytes()).unwrap();
    let add = |addr| SdmaPacket::Atomic {
        addr,
        op: sdma::AtomicOp::Add64,
        src: 3,
        cmp: 0,
        loop_interval: 0,
    };
    let w = common::sdma_submit(
        &q,
        &[add(host.gpu_address()), add(vram.gpu_address())],
        LONG,
    )
    .unwrap();
    drain(&q, w);
    let word = |b: &kfdrt::Buffer| u64::from_le_bytes(b.to_vec().unwrap()[..8].try_into().unwrap());
    assert_eq!(
        word(&host),
        5,
        "an atomic to system memory landed without PCIe atomics"
    );
    assert_eq!(word(&vram), 8, "an atomic to VRAM did not land");
}

#[test]
fn copies_complete_on_a_host_without_pcie_atomics() {
    // An SDMA atomic decrement of the completion signal (in system memory) would never land:
    // kfdrt writes the value with FENCEs instead, as ROCr does without atomic support.
    let kfd = without_pcie_atomics();
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_sdma_queue().unwrap();
    let n = 1 << 20;
    let src = gpu.alloc(n, MemoryKind::GttCoherent).unwrap();
    let dst = gpu.alloc(n, MemoryKind::DeviceLocal).unwrap();
    let back = gpu.alloc(n, MemoryKind::GttCoherent).unwrap();
    let data = pattern(n as usize, 3);
    src.write(0, &data).unwrap();
    let up = q.copy(&dst, 0, &src, 0, n, &[]).unwrap();
    let down = q.copy(&back, 0, &dst, 0, n, &[up.signal()]).unwrap();
    down.wait(Some(Duration::from_secs(10))).unwrap();
    up.wait(Some(Duration::from_secs(10))).unwrap();
    assert!(back.to_vec().unwrap() == data, "copied bytes differ");
    // And through the copy engine, to a peer GPU's VRAM (on the source's engine).
    let peer = kfd.gpu(1).unwrap();
    let far = peer.alloc(n, MemoryKind::DeviceLocal).unwrap();
    far.map_to(&gpu).unwrap();
    let engine = gpu.copy_engine().unwrap();
    engine
        .copy(&far, 0, &dst, 0, n, &[])
        .unwrap()
        .wait(Some(Duration::from_secs(10)))
        .unwrap();
    let check = peer.alloc(n, MemoryKind::GttCoherent).unwrap();
    peer.copy_engine()
        .unwrap()
        .copy(&check, 0, &far, 0, n, &[])
        .unwrap()
        .wait(Some(Duration::from_secs(10)))
        .unwrap();
    assert!(
        check.to_vec().unwrap() == data,
        "bytes copied to the peer differ"
    );
}

#[test]
fn copies_between_hive_peers_run_on_an_xgmi_engine() {
    let kfd = common::emulated(Preset::Gfx90a, 2);
    let emu = kfd.emulator().unwrap();
    let (a, b) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    let n = 1 << 20;
    let host = a.alloc(n, MemoryKind::GttCoherent).unwrap();
    let near = a.alloc(n, MemoryKind::DeviceLocal).unwrap();
    let far = b.alloc(n, MemoryKind::DeviceLocal).unwrap();
    far.map_to(&a).unwrap();
    let data = pattern(n as usize, 9);
    host.write(0, &data).unwrap();
    let engine = a.copy_engine().unwrap();
    let xgmi = || emu.stats().sdma_xgmi_packets;
    engine
        .copy(&near, 0, &host, 0, n, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    assert_eq!(xgmi(), 0, "a host-to-VRAM copy went to an XGMI engine");
    // To the peer's VRAM, on the source GPU's XGMI engine; and a fill of it.
    engine
        .copy(&far, 0, &near, 0, n, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    let after_copy = xgmi();
    assert!(after_copy > 0, "the hive copy did not use an XGMI engine");
    engine
        .fill(&far, 0, 0x5A5A_5A5A, 4096, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    assert!(
        xgmi() > after_copy,
        "the peer fill did not use an XGMI engine"
    );
    let back = a.alloc(n, MemoryKind::GttCoherent).unwrap();
    engine
        .copy(&back, 0, &far, 0, n, &[])
        .unwrap()
        .wait(T)
        .unwrap();
    let got = back.to_vec().unwrap();
    assert!(got[..4096].iter().all(|&x| x == 0x5A));
    assert!(
        got[4096..] == data[4096..],
        "bytes copied through the hive differ"
    );
    // A part without XGMI engines has no such queue.
    let rdna = common::emulated(Preset::Gfx1100, 1);
    assert!(matches!(
        rdna.gpu(0).unwrap().create_sdma_xgmi_queue(),
        Err(Error::Unsupported(_))
    ));
}

/// Each hive peer keeps one XGMI engine, the peers spread over the engines in the order they
/// first come (ROCr's `GpuAgent::GetXgmiBlit`): copies with one peer stay in order on one
/// engine, and two peers' copies run on two (amdkfd numbers the XGMI engines after the PCIe
/// ones, `allocate_sdma_queue`).
#[test]
fn each_hive_peer_keeps_an_xgmi_engine_of_its_own() {
    let kfd = common::emulated(Preset::Gfx90a, 3);
    let emu = kfd.emulator().unwrap();
    let (a, b, c) = (
        kfd.gpu(0).unwrap(),
        kfd.gpu(1).unwrap(),
        kfd.gpu(2).unwrap(),
    );
    let pcie = a.info().sdma_engines as usize;
    assert!(a.info().sdma_xgmi_engines >= 2);
    let n = 1 << 16;
    let near = a.alloc(n, MemoryKind::DeviceLocal).unwrap();
    let engine = a.copy_engine().unwrap();
    // The counts once the engines are idle (a copy's wait can return before the engine has
    // counted the packets after its fence).
    let per_engine = || {
        let mut last = emu.stats().sdma_engine_packets;
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let now = emu.stats().sdma_engine_packets;
            if now == last {
                return now;
            }
            last = now;
        }
    };
    let mut used = Vec::new();
    for peer in [&b, &c, &b] {
        let far = peer.alloc(n, MemoryKind::DeviceLocal).unwrap();
        far.map_to(&a).unwrap();
        let before = per_engine();
        engine
            .copy(&far, 0, &near, 0, n, &[])
            .unwrap()
            .wait(T)
            .unwrap();
        let after = per_engine();
        let ran: Vec<usize> = (0..16).filter(|&e| after[e] > before[e]).collect();
        assert_eq!(ran.len(), 1, "one engine per copy: {ran:?}");
        used.push(ran[0]);
    }
    assert_eq!(
        used,
        [pcie, pcie + 1, pcie],
        "peer B on the first XGMI engine, peer C on the second, B again on its own"
    );
}
