//! PM4 compute queues in the spirit of kfdtest's KFDQMTest, and PM4 vs AQL dispatch.

use crate::common;

use common::raw_dispatch;

use kfdrt::emu::{GpuFault, Preset, WorkGroup};
use kfdrt::{AqlQueueOptions, EventKind, EventReset, MemoryKind, Pm4QueueOptions};
use pm4::{CompareFunction, Pm4Packet};
use std::sync::Arc;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);

fn wait_until(what: &str, f: impl Fn() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < T, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn read_u32s(b: &kfdrt::Buffer, n: usize) -> Vec<u32> {
    let mut bytes = vec![0u8; n * 4];
    b.read(0, &mut bytes).unwrap();
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn nop_is_consumed() {
    let Some(kfd) = common::under_test("pm4::nop_is_consumed", Preset::Gfx90a, 1, &[]) else {
        return;
    };
    let q = kfd
        .gpu(0)
        .unwrap()
        .create_pm4_queue(Pm4QueueOptions::default())
        .unwrap();
    let w = common::pm4_submit(
        &q,
        &[Pm4Packet::Nop { padding: 3 }, Pm4Packet::Nop { padding: 0 }],
        T,
    )
    .unwrap();
    assert_eq!(w, 5);
    wait_until("rptr to reach wptr", || {
        u64::from(q.rptr()) == q.wptr() % u64::from(q.size_dwords())
    });
}

#[test]
fn write_data_lands() {
    let Some(kfd) = common::under_test("pm4::write_data_lands", Preset::Gfx1100, 1, &[]) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    let buf = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    buf.write(0, &[0xFF; 64]).unwrap();
    common::pm4_submit(&q, &[q.write_data(buf.gpu_address() + 4, &[1, 2, 3])], T).unwrap();
    q.finish(T).unwrap();
    assert_eq!(read_u32s(&buf, 5), vec![0xFFFF_FFFF, 1, 2, 3, 0xFFFF_FFFF]);
}

#[test]
fn wraparound_with_a_packet_size_that_does_not_divide_the_ring() {
    let Some(kfd) = common::under_test(
        "pm4::wraparound_with_a_packet_size_that_does_not_divide_the_ring",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu
        .create_pm4_queue(Pm4QueueOptions::default().with_ring_bytes(1024))
        .unwrap();
    // WRITE_DATA of 3 dwords is 7 dwords; 256 is not a multiple of 7.
    let per_ring = 256 / 7;
    let n = 2 * (per_ring + 1);
    let buf = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    for i in 0..n {
        let v = 1000 + i as u32;
        common::pm4_submit(
            &q,
            &[q.write_data(buf.gpu_address() + 16 * i as u64, &[v, v, v])],
            T,
        )
        .unwrap();
    }
    q.finish(T).unwrap();
    let words = read_u32s(&buf, 4 * n);
    for i in 0..n {
        assert_eq!(words[4 * i], 1000 + i as u32, "packet {i} did not land");
    }
    assert!(q.wptr() > 2 * 256, "the ring wrapped");
}

#[test]
fn sixty_five_queues_with_a_hundred_packets_each_drain() {
    let Some(kfd) = common::under_test(
        "pm4::sixty_five_queues_with_a_hundred_packets_each_drain",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let buf = gpu.alloc(65 * 100 * 4, MemoryKind::GttCoherent).unwrap();
    let queues: Vec<_> = (0..65)
        .map(|_| {
            gpu.create_pm4_queue(Pm4QueueOptions::default().with_ring_bytes(4096))
                .unwrap()
        })
        .collect();
    for (qi, q) in queues.iter().enumerate() {
        let packets: Vec<Pm4Packet> = (0..100)
            .map(|i| {
                q.write_data(
                    buf.gpu_address() + 4 * (qi * 100 + i) as u64,
                    &[(qi * 100 + i) as u32 + 1],
                )
            })
            .collect();
        common::pm4_submit(q, &packets, T).unwrap();
    }
    for q in &queues {
        q.finish(T).unwrap();
    }
    let words = read_u32s(&buf, 6500);
    for (i, w) in words.iter().enumerate() {
        assert_eq!(*w, i as u32 + 1, "value {i}");
    }
}

/// On the MI300X (8 XCCs) too, where every XCC runs the stream: XCC 0 raises the event once
/// the others have written their fence words, and strict mode sees no fence short of an XCC.
#[test]
fn release_mem_interrupt_wakes_an_event_wait() {
    for preset in [Preset::Gfx90a, Preset::Gfx942] {
        release_mem_interrupt_wakes_an_event_wait_on(preset);
    }
}

fn release_mem_interrupt_wakes_an_event_wait_on(preset: Preset) {
    let kfd = common::emulated(preset, 1);
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    let _first = kfd
        .create_event(EventKind::Signal, EventReset::Auto)
        .unwrap(); // so the id is not 0
    let e = kfd
        .create_event(EventKind::Signal, EventReset::Auto)
        .unwrap();
    assert_ne!(e.id(), 0);
    assert!(!e.wait(Some(Duration::ZERO)).unwrap());
    common::pm4_submit(&q, &q.signal_event(&e).unwrap(), T).unwrap();
    assert!(
        e.wait(Some(T)).unwrap(),
        "the RELEASE_MEM interrupt did not wake the wait"
    );
    // The CP wrote the id into the mailbox (that is what made the interrupt count), and the
    // driver acknowledged it by resetting the slot to unsignaled.
    let vm = kfd.emulator().unwrap().gpu_vm(gpu.id()).unwrap();
    assert_eq!(
        vm.read_u64(e.mailbox_address().unwrap()).unwrap(),
        u64::MAX,
        "mailbox acknowledged"
    );
    assert_eq!(kfd.emulator().unwrap().stats().unjoined_xcc_fences, 0);
}

#[test]
fn disabled_queue_runs_nothing_until_enabled() {
    let Some(kfd) = common::under_test(
        "pm4::disabled_queue_runs_nothing_until_enabled",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    let buf = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    q.disable().unwrap();
    common::pm4_submit(&q, &[q.write_data(buf.gpu_address(), &[77])], T).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(read_u32s(&buf, 1), vec![0], "a disabled queue ran a packet");
    q.enable().unwrap();
    q.finish(T).unwrap();
    assert_eq!(read_u32s(&buf, 1), vec![77]);
}

#[test]
fn wait_reg_mem_holds_later_packets() {
    let Some(kfd) = common::under_test(
        "pm4::wait_reg_mem_holds_later_packets",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    let buf = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let flag = buf.gpu_address();
    common::pm4_submit(
        &q,
        &[
            q.wait_mem(flag, CompareFunction::Equal, 5, 0xFFFF_FFFF),
            q.write_data(flag + 4, &[1]),
        ],
        T,
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(read_u32s(&buf, 2), vec![0, 0]);
    buf.write(0, &5u32.to_le_bytes()).unwrap();
    q.finish(T).unwrap();
    assert_eq!(read_u32s(&buf, 2), vec![5, 1]);
}

#[test]
fn unknown_opcode_stops_the_queue() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    let buf = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    // An unknown opcode, then a WRITE_DATA that must not run.
    let mut words = vec![pm4::header(0x99, 1), 0];
    q.write_data(buf.gpu_address(), &[1])
        .encode(q.family(), &mut words);
    // The ring writer only takes typed packets, so the raw dwords go in an indirect buffer.
    let ib = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    ib.write(0, &bytes).unwrap();
    common::pm4_submit(
        &q,
        &[Pm4Packet::IndirectBuffer {
            addr: ib.gpu_address(),
            size_dwords: words.len() as u32,
            chain: false,
        }],
        T,
    )
    .unwrap();
    let emu = kfd.emulator().unwrap();
    wait_until("the queue error", || emu.queue_error(q.id()).is_some());
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        read_u32s(&buf, 1),
        vec![0],
        "nothing after the bad packet ran"
    );
}

/// Records what a work-group sees: kernarg words, group id, sizes.
fn recorder(wg: &WorkGroup<'_>) -> Result<(), GpuFault> {
    let out = wg.kernarg_u64(0)?;
    let tag = wg.kernarg_u32(8)?;
    let g = wg.group_id[0] + wg.group_id[1] * 4;
    let base = out + u64::from(g) * 32;
    let vals = [
        tag,
        wg.group_id[0],
        wg.group_id[1],
        wg.workgroup_size[0],
        wg.workgroup_size[1],
        wg.grid_size[0],
        wg.grid_size[1],
        0xC0DE,
    ];
    for (i, v) in vals.iter().enumerate() {
        wg.mem.write_u32(base + 4 * i as u64, *v)?;
    }
    Ok(())
}

#[test]
fn pm4_and_aql_dispatch_of_the_same_kernel_agree() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let kernel = gpu
        .emulated_kernel("recorder", 12, Arc::new(recorder))
        .unwrap();
    let out_aql = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let out_pm4 = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let args = |out: u64| {
        let mut a = out.to_le_bytes().to_vec();
        a.extend_from_slice(&0x5EEDu32.to_le_bytes());
        a
    };
    // AQL: grid 4x3 groups of 16x2 work-items.
    let aq = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let a = args(out_aql.gpu_address());
    let d = raw_dispatch(&kernel, 0, 1, &a)
        .with_grid([64, 6, 1])
        .with_workgroup([16, 2, 1]);
    aq.dispatch(&d).unwrap().wait(Some(T)).unwrap();
    // PM4: the same launch, kernel arguments in GPU memory the caller owns.
    let pq = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    let karg = gpu.alloc(64, MemoryKind::GttCoherent).unwrap();
    karg.write(0, &args(out_pm4.gpu_address())).unwrap();
    let packets = pq
        .dispatch_packets(&kernel, [4, 3, 1], [16, 2, 1], karg.gpu_address(), 0)
        .unwrap();
    common::pm4_submit(&pq, &packets, T).unwrap();
    pq.finish(T).unwrap();
    let (x, y) = (read_u32s(&out_aql, 12 * 8), read_u32s(&out_pm4, 12 * 8));
    assert_eq!(x[7], 0xC0DE, "AQL dispatch ran");
    assert_eq!(x, y, "PM4 and AQL dispatches saw different arguments");
    // And the AQL queue's instruction-cache invalidation (a vendor PM4-IB packet) completes.
    aq.invalidate_icache().unwrap().wait(Some(T)).unwrap();
}

#[test]
fn linux_style_nop_fillers_are_one_dword() {
    let Some(kfd) = common::under_test(
        "pm4::linux_style_nop_fillers_are_one_dword",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    let buf = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    // 0xFFFF1000 (Linux's compute-ring filler, no shader-type bit) then a WRITE_DATA, in an IB.
    let mut words = vec![0xFFFF_1000, 0xFFFF_1002];
    q.write_data(buf.gpu_address(), &[42])
        .encode(q.family(), &mut words);
    let ib = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    ib.write(0, &bytes).unwrap();
    common::pm4_submit(
        &q,
        &[Pm4Packet::IndirectBuffer {
            addr: ib.gpu_address(),
            size_dwords: words.len() as u32,
            chain: false,
        }],
        T,
    )
    .unwrap();
    q.finish(T).unwrap();
    assert_eq!(read_u32s(&buf, 1), vec![42]);
    // The emulator also says the queue saw no error (on hardware `finish` returning is it).
    if let Some(emu) = kfd.emulator() {
        assert!(emu.queue_error(q.id()).is_none());
    }
}

#[test]
fn a_dispatch_whose_work_group_wraps_32_bits_stops_the_queue() {
    // COMPUTE_NUM_THREAD_X/Y/Z hold 16 bits each: 32768 x 32768 x 4 work-items is 2^32, which
    // a 32-bit product wraps to 0.
    // The CP refuses a group over 1024; the emulator must too, not run it or panic.
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let r = ran.clone();
    let kernel = gpu
        .emulated_kernel(
            "never",
            0,
            Arc::new(move |_: &WorkGroup<'_>| {
                r.store(true, std::sync::atomic::Ordering::Relaxed);
                Ok(())
            }),
        )
        .unwrap();
    let q = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    let mut packets = q
        .dispatch_packets(&kernel, [1, 1, 1], [1, 1, 1], 0, 0)
        .unwrap();
    let mut patched = false;
    for p in &mut packets {
        if let Pm4Packet::SetShReg { reg, values } = p {
            if *reg == pm4::regs::COMPUTE_NUM_THREAD_X {
                values[..3].copy_from_slice(&[0x8000, 0x8000, 4]);
                patched = true;
            }
        }
    }
    assert!(
        patched,
        "no COMPUTE_NUM_THREAD_X write to patch: {packets:?}"
    );
    common::pm4_submit(&q, &packets, T).unwrap();
    assert!(q.finish(T).is_err(), "the queue ran past the bad dispatch");
    assert!(!ran.load(std::sync::atomic::Ordering::Relaxed));
}

/// The CP reports a packet consumed when it has fetched it, before it runs it: while a
/// WAIT_REG_MEM waits, the read pointer is already past it, so a runtime woken by a later
/// packet's interrupt never sees a read pointer behind that packet (kfdtest's QueueLatency
/// computes free ring space from it and overran when it lagged).
#[test]
fn the_read_pointer_passes_a_packet_before_it_runs() {
    let Some(kfd) = common::under_test(
        "pm4::the_read_pointer_passes_a_packet_before_it_runs",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    let flag = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let wait = q.wait_mem(flag.gpu_address(), CompareFunction::Equal, 1, u32::MAX);
    let w = common::pm4_submit(&q, &[wait], T).unwrap();
    // The packet waits (the flag is 0), and the read pointer is already at its end.
    wait_until("the read pointer to pass the waiting packet", || {
        u64::from(q.rptr()) == w % u64::from(q.size_dwords())
    });
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(u64::from(q.rptr()), w % u64::from(q.size_dwords()));
    flag.write(0, &1u32.to_le_bytes()).unwrap();
    q.finish(T).unwrap();
}

/// A wave32 RDNA3 kernel that needs scratch, dispatched by PM4 (issue #28 item 2; it used to
/// be `Unsupported`): the queue's scratch is laid out in the GFX11 format for 32-lane waves,
/// `COMPUTE_TMPRING_SIZE` in 256-byte `WAVESIZE` units with `WAVES` per shader engine, and the
/// private segment buffer (when the kernel takes one) is a GFX11 resource over it.
#[test]
fn an_rdna3_pm4_dispatch_gets_gfx11_scratch_for_its_wave32_waves() {
    // The packets are only built, not run: any gfx1100 device will do (others skip).
    let Some(kfd) = common::under_test(
        "pm4::an_rdna3_pm4_dispatch_gets_gfx11_scratch_for_its_wave32_waves",
        Preset::Gfx1100,
        1,
        &["private"],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let co = gpu
        .load_code_object(&common::code_object_for("private", &gpu.info().gfx_target).unwrap())
        .unwrap();
    let k = co.kernel("private_sum").unwrap();
    assert_eq!(k.private_segment_size(), 272);
    let q = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
    let packets = q.dispatch_packets(&k, [4, 1, 1], [64, 1, 1], 0, 0).unwrap();
    let reg = |r: u32| {
        packets.iter().find_map(|p| match p {
            Pm4Packet::SetShReg { reg, values } if *reg == r => Some(values.clone()),
            _ => None,
        })
    };
    let tmpring = reg(pm4::regs::COMPUTE_TMPRING_SIZE).expect("TMPRING_SIZE")[0];
    // 272 bytes per lane over 32 lanes: 8704 bytes a wave, in 256-byte units.
    assert_eq!((tmpring >> 12) & 0x7FFF, 8704 / 256);
    let per_engine = tmpring & 0xFFF;
    let info = gpu.info();
    assert!(per_engine > 0 && per_engine * info.shader_engines >= info.compute_units * 32);
    let kd = k.descriptor().unwrap();
    if kd.kernel_code_properties & aql::code_properties::ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER != 0 {
        let user = reg(pm4::regs::COMPUTE_USER_DATA_0).expect("user SGPRs");
        assert_eq!(user[1] >> 30, 1, "GFX11 SWIZZLE_ENABLE");
        assert_eq!(user[3], aql::scratch::GFX11_RESOURCE_DWORD3);
    }
}
