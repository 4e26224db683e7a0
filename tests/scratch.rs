//! Scratch (private segment memory) of AQL queues, on real compiled kernels that spill: the
//! command processor stops before a dispatch needing more than the queue has and asks for it
//! through the queue's inactive signal; kfdrt sets it up as ROCr does and the dispatch runs.
//! Uses the interpreter's hipcc fixtures (`kfd-emu/isa/tests/kernels/kernels.hip`).

use crate::common;

use kfdrt::emu::Preset;
use kfdrt::kernel_args::KernelArgs;
use kfdrt::{AqlQueue, AqlQueueOptions, Buffer, Dispatch, Gpu, Kernel, Kfd, MemoryKind};
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(120));
const N: u32 = 1024;

fn kernels(gpu: &Gpu) -> kfdrt::CodeObject {
    let bytes: Vec<u8> = match gpu.info().gfx_target.as_str() {
        "gfx90a" => include_bytes!("../kfd-emu/isa/tests/kernels/kernels-gfx90a.co").to_vec(),
        _ => {
            // No compiler here knows gfx942: the fixture is a gfx940 build (the same ISA) with
            // its ELF machine set to gfx942; its metadata still names gfx940, which kfdrt's
            // loader rightly refuses, so name gfx942 there too (same length, same layout).
            let mut b = include_bytes!("../kfd-emu/isa/tests/kernels/kernels-gfx942.co").to_vec();
            let from = b"amdgcn-amd-amdhsa--gfx940";
            let at = b.windows(from.len()).position(|w| w == from).unwrap();
            b[at + from.len() - 1] = b'2';
            b
        }
    };
    gpu.load_code_object(&bytes).unwrap()
}

/// The arguments of `scratch_array`/`scratch_spill`: indices, output, count.
fn index_args(kernel: &Kernel, idx: &Buffer, out: &Buffer) -> KernelArgs {
    let mut args = KernelArgs::new(kernel).unwrap();
    args.set_buffer(0, idx).unwrap().set_buffer(1, out).unwrap();
    args.set_i32(2, N as i32).unwrap();
    args
}

fn buffer_of(gpu: &Gpu, words: &[i32]) -> Buffer {
    let b = gpu
        .alloc(words.len() as u64 * 4, MemoryKind::GttCoherent)
        .unwrap();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    b.write(0, &bytes).unwrap();
    b
}

fn words(b: &Buffer, n: usize) -> Vec<i32> {
    b.to_vec().unwrap()[..n * 4]
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// `scratch_spill` on the CPU: a 200-int private array updated at data-dependent places.
fn spill_expected(idx: &[i32]) -> Vec<i32> {
    idx.iter()
        .enumerate()
        .map(|(i, &j)| {
            let mut p: Vec<i32> = (0..200i32).map(|k| k.wrapping_mul(i as i32 + 1)).collect();
            let j = j as usize;
            p[j % 200] = p[j % 200].wrapping_add(1000);
            p[(j * 7) % 200] ^= 0x55;
            (0..200)
                .step_by(13)
                .fold(0i32, |acc, k| acc.wrapping_add(p[(j + k) % 200]))
        })
        .collect()
}

/// `scratch_array` on the CPU: a 64-int private array read at data-dependent places.
fn array_expected(idx: &[i32]) -> Vec<i32> {
    idx.iter()
        .enumerate()
        .map(|(i, &j)| {
            (0..8).fold(0i32, |acc, k| {
                let at = (j + k * 5) & 63;
                acc.wrapping_add(at.wrapping_mul(i as i32).wrapping_add(7))
            })
        })
        .collect()
}

/// A kernel's results computed on the CPU from the indices.
type Expected = fn(&[i32]) -> Vec<i32>;

fn indices() -> Vec<i32> {
    (0..N as i32).map(|i| (i * 37 + 11) % 1000).collect()
}

/// Runs `kernel(idx, out, N)` on `q` and returns `out`, once the CP is past the dispatch (it
/// hands lent scratch back after the completion signal, before the next packet).
fn run(q: &AqlQueue, kernel: &Kernel, idx: &Buffer) -> Vec<i32> {
    let out = buffer_of(q.gpu(), &vec![0; N as usize]);
    let args = index_args(kernel, idx, &out);
    q.dispatch(&Dispatch::linear(kernel, N, 64).with_args(&args))
        .unwrap()
        .wait(T)
        .unwrap();
    q.barrier_and(&[]).unwrap().wait(T).unwrap();
    words(&out, N as usize)
}

fn requests(kfd: &Kfd) -> u64 {
    kfd.emulator().unwrap().stats().scratch_requests
}

/// The CP's scratch requests so far on an emulated device (the emulator counts them), `None`
/// on one that is not.
fn requests_if_emulated(kfd: &Kfd) -> Option<u64> {
    Some(kfd.emulator()?.stats().scratch_requests)
}

/// The device under test (see [`common::under_test`]), or `None` after saying why the test is
/// skipped: the spilling kernels are built for gfx90a and gfx942 only.
fn under_test_with_kernels(test: &str, preset: Preset) -> Option<common::Checked> {
    let kfd = common::under_test(test, preset, 1, &[])?;
    let target = kfd.gpu(0).unwrap().info().gfx_target.clone();
    if !["gfx90a", "gfx942"].contains(&target.as_str()) {
        eprintln!("{test}: skipped: no spilling kernels are built for {target}");
        return None;
    }
    Some(kfd)
}

/// On the device under test; the CP's requests are counted when that is emulated.
#[test]
fn kernels_that_spill_get_scratch_when_the_cp_asks() {
    // (An MI300X has 9728 wave slots: even the smaller kernel's scratch for all of them is over
    // the single limit there, so it is lent; see the next test.)
    const TEST: &str = "scratch::kernels_that_spill_get_scratch_when_the_cp_asks";
    let Some(kfd) = under_test_with_kernels(TEST, Preset::Gfx90a) else {
        return;
    };
    if kfd.gpu(0).unwrap().info().gfx_target != "gfx90a" {
        eprintln!("{TEST}: skipped: an MI300X lends even the smaller kernel's scratch");
        return;
    }
    // The requests so far, when they can be counted, must be `want`.
    let requests = |want: u64, what: &str| {
        if let Some(n) = requests_if_emulated(&kfd) {
            assert_eq!(n, want, "{what}");
        }
    };
    {
        let gpu = kfd.gpu(0).unwrap();
        let preset = gpu.info().gfx_target.clone();
        let co = kernels(&gpu);
        let (array, spill) = (
            co.kernel("scratch_array").unwrap(),
            co.kernel("scratch_spill").unwrap(),
        );
        assert!(array.private_segment_size() > 0 && spill.private_segment_size() > 0);
        assert!(array.private_segment_size() < spill.private_segment_size());
        let idx_words = indices();
        let idx = buffer_of(&gpu, &idx_words);
        let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
        requests(0, &preset);

        // The queue starts with none: the first dispatch makes the CP ask, once.
        assert_eq!(
            run(&q, &array, &idx),
            array_expected(&idx_words),
            "{preset}"
        );
        requests(1, &format!("{preset}: one request for the first scratch"));
        // It stays with the queue: the same needs ask nothing more.
        assert_eq!(
            run(&q, &array, &idx),
            array_expected(&idx_words),
            "{preset}"
        );
        requests(1, &preset);

        // A kernel needing more: for every wave slot it would be more than a queue keeps
        // (SCRATCH_SINGLE_LIMIT), so it is lent for the dispatch and taken back after it (a
        // request each way), as ROCr does.
        let slots =
            u64::from(gpu.info().compute_units) * u64::from(gpu.info().max_slots_scratch_cu);
        let all_slots = slots * 64 * u64::from(spill.private_segment_size().next_multiple_of(16));
        assert!(
            all_slots > kfdrt::queue::SCRATCH_SINGLE_LIMIT,
            "{preset}: {all_slots}"
        );
        for round in 0..2 {
            assert_eq!(
                run(&q, &spill, &idx),
                spill_expected(&idx_words),
                "{preset}"
            );
            requests(3 + 2 * round, &format!("{preset}: grow and reclaim"));
        }
        // The lent scratch went back: the first kernel asks again.
        assert_eq!(
            run(&q, &array, &idx),
            array_expected(&idx_words),
            "{preset}"
        );
        requests(6, &preset);
        assert!(q.fault().is_none());
    }
}

/// An MI300X in SPX mode spreads a dispatch's work-groups over its 8 XCCs, and each XCC's
/// command processor lays out its own wave slots in its share of the backing (ROCr reports
/// `WAVES`, the resource's size and `scratch_backing_memory_byte_size` per XCC). A layout for
/// the whole device (its slots clamped to what `WAVES` counts) puts the later XCCs' shares
/// past the backing, where their waves fault.
#[test]
fn spilling_kernels_use_every_xcc_of_an_mi300x_with_a_share_each() {
    let kfd = common::emulated(Preset::Gfx942, 1);
    let gpu = kfd.gpu(0).unwrap();
    let info = gpu.info().clone();
    assert_eq!(info.num_xcc, 8);
    // N work-items in groups of 64: 16 work-groups, two per XCC. Lent for each dispatch (all
    // 9728 slots' worth is over the single limit): a grow and a reclaim each time.
    run_spilling_kernels(&gpu, 2);
    assert_eq!(requests(&kfd), 8);
    // A queue sized up front describes one XCC's share.
    let sized = gpu
        .create_aql_queue(AqlQueueOptions::default().with_scratch(16))
        .unwrap();
    // SAFETY: the live queue's amd_queue_t; the CP only reads these fields.
    let (tmpring, per_xcc) = unsafe {
        let q = sized.amd_queue_address() as *const u8;
        (
            (q.add(aql::queue_offsets::COMPUTE_TMPRING_SIZE as usize) as *const u32)
                .read_volatile(),
            (q.add(aql::queue_offsets::SCRATCH_BACKING_MEMORY_BYTE_SIZE as usize) as *const u64)
                .read_volatile(),
        )
    };
    let waves = tmpring & 0xFFF;
    let device_slots = info.compute_units * info.max_slots_scratch_cu;
    assert!(
        waves < 0xFFF && waves * 8 >= device_slots,
        "WAVES {waves} is per XCC (the device has {device_slots} slots)"
    );
    assert_eq!(
        per_xcc,
        u64::from(waves) * 1024,
        "16 bytes x 64 lanes per slot"
    );

    // The same MI300X in QPX and CPX modes: each partition is a GPU of its own, whose queues
    // lay out its 2 XCCs or its one.
    for (preset, xccs) in [(Preset::Gfx942Qpx, 2), (Preset::Gfx942Cpx, 1)] {
        let part = common::emulated(preset, 2);
        for gpu in part.gpus() {
            assert_eq!(
                (gpu.info().num_xcc, gpu.info().compute_units),
                (xccs, info.compute_units / 8 * xccs)
            );
            run_spilling_kernels(&gpu, 1);
        }
    }
}

/// Runs both spilling kernels `times` times each on a new queue of `gpu`, checking the results.
fn run_spilling_kernels(gpu: &Gpu, times: usize) {
    let co = kernels(gpu);
    let idx_words = indices();
    let idx = buffer_of(gpu, &idx_words);
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let target = &gpu.info().name;
    for (name, expected) in [
        ("scratch_array", array_expected as Expected),
        ("scratch_spill", spill_expected),
    ] {
        let k = co.kernel(name).unwrap();
        for _ in 0..times {
            assert_eq!(run(&q, &k, &idx), expected(&idx_words), "{target}: {name}");
        }
        assert!(q.fault().is_none(), "{target}: {name}: {:?}", q.fault());
    }
}

/// On the device under test; that the CP never asked is checked when it is emulated.
#[test]
fn a_queue_sized_for_its_kernels_never_stops_for_scratch() {
    let Some(kfd) = under_test_with_kernels(
        "scratch::a_queue_sized_for_its_kernels_never_stops_for_scratch",
        Preset::Gfx90a,
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let co = kernels(&gpu);
    let array = co.kernel("scratch_array").unwrap();
    let idx_words = indices();
    let idx = buffer_of(&gpu, &idx_words);
    let q = gpu
        .create_aql_queue(AqlQueueOptions::default().with_scratch(array.private_segment_size()))
        .unwrap();
    for _ in 0..3 {
        assert_eq!(run(&q, &array, &idx), array_expected(&idx_words));
    }
    if let Some(n) = requests_if_emulated(&kfd) {
        assert_eq!(n, 0);
    }
    // More than a queue keeps for every slot is refused up front.
    let r = gpu.create_aql_queue(AqlQueueOptions::default().with_scratch(64 * 1024));
    assert!(
        matches!(r, Err(kfdrt::Error::TooLarge { limit, .. }) if limit == kfdrt::queue::SCRATCH_SINGLE_LIMIT),
        "{r:?}"
    );
}

#[test]
fn a_request_is_served_when_nobody_waits_on_its_queue() {
    // The dispatch needing scratch is on `a`; the program only waits on `b`, whose barrier
    // depends on it. Without a server of its own, `a` would stay stopped and `b` never finish.
    // On the device under test; the one request is counted when that is emulated.
    let Some(kfd) = under_test_with_kernels(
        "scratch::a_request_is_served_when_nobody_waits_on_its_queue",
        Preset::Gfx90a,
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let co = kernels(&gpu);
    let array = co.kernel("scratch_array").unwrap();
    let idx_words = indices();
    let idx = buffer_of(&gpu, &idx_words);
    let out = buffer_of(&gpu, &vec![0; N as usize]);
    let a = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let b = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let args = index_args(&array, &idx, &out);
    let work = a
        .dispatch(&Dispatch::linear(&array, N, 64).with_args(&args))
        .unwrap();
    b.barrier_and(&[work.signal()]).unwrap().wait(T).unwrap();
    assert_eq!(words(&out, N as usize), array_expected(&idx_words));
    if let Some(n) = requests_if_emulated(&kfd) {
        assert_eq!(n, 1);
    }
    drop(work);
}

#[test]
fn a_kernel_needing_more_than_a_wave_can_hold_stops_its_queue() {
    // A dispatch asking for more scratch per work-item than one wave's slot can hold
    // (WAVESIZE is 13 bits of KiB) cannot be served: the queue stops with an allocation error.
    let Some(kfd) = under_test_with_kernels(
        "scratch::a_kernel_needing_more_than_a_wave_can_hold_stops_its_queue",
        Preset::Gfx90a,
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let co = kernels(&gpu);
    let spill = co.kernel("scratch_spill").unwrap();
    // SAFETY: the descriptor is `spill`'s, which outlives the dispatch; the arguments name no
    // memory (the kernel never starts).
    let greedy = unsafe {
        Kernel::from_raw(
            "greedy",
            spill.object(),
            spill.kernarg_size(),
            spill.group_segment_size(),
            200_000,
        )
    };
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    // SAFETY: see above.
    let d = unsafe { Dispatch::linear(&greedy, 64, 64).with_raw_args(&[0; 24]) };
    // A statement, not the tail expression: the submission it makes must drop before the
    // device (edition 2021 drops a tail expression's temporaries after the locals).
    match q.dispatch(&d).unwrap().wait(T) {
        Err(kfdrt::Error::QueueError { fault, .. }) => {
            assert_eq!(fault.code, kfdrt::queue::error_bits::INVALID_ALLOCATION)
        }
        other => panic!("{other:?}"),
    };
}

/// On the device under test; when that is emulated, on an emulated MI300X too, and the
/// emulator's counters are checked.
#[test]
fn pm4_dispatches_get_scratch_from_their_registers() {
    let Some(dut) = under_test_with_kernels(
        "scratch::pm4_dispatches_get_scratch_from_their_registers",
        Preset::Gfx90a,
    ) else {
        return;
    };
    let mi300 = dut
        .emulator()
        .is_some()
        .then(|| common::emulated(Preset::Gfx942, 1));
    for kfd in std::iter::once(&dut).chain(mi300.as_ref()) {
        let gpu = kfd.gpu(0).unwrap();
        let preset = gpu.info().gfx_target.clone();
        let co = kernels(&gpu);
        let idx_words = indices();
        let idx = buffer_of(&gpu, &idx_words);
        let q = gpu
            .create_pm4_queue(kfdrt::Pm4QueueOptions::default())
            .unwrap();
        let geometry = kfdrt::LaunchGeometry::linear(N, 64);
        // A smaller need first, then a larger one: the queue's scratch grows between them
        // while the first may still run on the old one (kept until `finish`).
        let cases: [(&str, Expected); 2] = [
            ("scratch_array", array_expected),
            ("scratch_spill", spill_expected),
        ];
        let mut outs = Vec::new();
        for (name, _) in cases {
            let kernel = co.kernel(name).unwrap();
            let out = buffer_of(&gpu, &vec![0; N as usize]);
            let args = index_args(&kernel, &idx, &out);
            let karg = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
            let packets = q
                .dispatch_packets_with_args(&kernel, &geometry, &args, &karg)
                .unwrap();
            common::pm4_submit(&q, &packets, T.unwrap()).unwrap();
            outs.push((out, karg));
        }
        q.finish(T.unwrap()).unwrap();
        for ((name, expected), (out, _)) in cases.iter().zip(&outs) {
            assert_eq!(
                words(out, N as usize),
                expected(&idx_words),
                "{preset}: {name}"
            );
        }
        let Some(emu) = kfd.emulator() else {
            continue;
        };
        assert_eq!(requests(kfd), 0, "PM4 queues have no scratch requests");
        let stats = emu.stats();
        assert!(stats.machine_dispatches >= 2);
        // On the MI300X each XCC got a share of its own, and the fence waited for them all.
        assert_eq!(stats.xcc_scratch_overlaps, 0, "{preset}");
        assert_eq!(stats.unjoined_xcc_fences, 0, "{preset}");
    }
}

/// Every XCC of an MI300X runs a PM4 queue's stream, each with its own SH registers: kfdrt
/// gives each its share of the scratch behind a `PRED_EXEC` naming it, and its fences wait for
/// every XCC. kfd-emu runs each XCC's work-groups with the scratch its registers name (an
/// unmapped base for one XCC faults; last, since a fault stops the GPU's queues), counts dispatches whose XCCs share scratch (one base for
/// all, what kfdrt wrote before), and fences that every XCC would write on its own.
#[test]
fn pm4_dispatches_on_an_mi300x_give_each_xcc_its_scratch_and_wait_for_every_xcc() {
    let kfd = common::emulated(Preset::Gfx942, 1);
    let emu = kfd.emulator().unwrap().clone();
    let gpu = kfd.gpu(0).unwrap();
    assert_eq!(gpu.info().num_xcc, 8);
    let co = kernels(&gpu);
    let spill = co.kernel("scratch_spill").unwrap();
    let idx_words = indices();
    let idx = buffer_of(&gpu, &idx_words);
    let geometry = kfdrt::LaunchGeometry::linear(N, 64);
    let base_reg = pm4::regs::COMPUTE_DISPATCH_SCRATCH_BASE_LO;
    let is_base =
        |p: &pm4::Pm4Packet| matches!(p, pm4::Pm4Packet::SetShReg { reg, .. } if *reg == base_reg);
    // Runs `edit`ed dispatch packets on a new queue; the output and the queue's fault, if any.
    let run = |edit: &dyn Fn(Vec<pm4::Pm4Packet>) -> Vec<pm4::Pm4Packet>| {
        let q = gpu
            .create_pm4_queue(kfdrt::Pm4QueueOptions::default())
            .unwrap();
        let out = buffer_of(&gpu, &vec![0; N as usize]);
        let args = index_args(&spill, &idx, &out);
        let karg = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
        let packets = q
            .dispatch_packets_with_args(&spill, &geometry, &args, &karg)
            .unwrap();
        assert_eq!(
            packets.iter().filter(|p| is_base(p)).count(),
            8,
            "a scratch base per XCC"
        );
        common::pm4_submit(&q, &edit(packets), T.unwrap()).unwrap();
        let done = q.finish(T.unwrap());
        (words(&out, N as usize), done)
    };
    // kfdrt's packets: right results, no shared scratch, no fence short of an XCC.
    let (got, done) = run(&|p| p);
    done.unwrap();
    assert_eq!(got, spill_expected(&idx_words));
    assert_eq!(emu.stats().xcc_scratch_overlaps, 0);
    assert_eq!(emu.stats().unjoined_xcc_fences, 0);

    // One base for every XCC (no PRED_EXEC, XCC 0's base last for all): the XCCs would share.
    let (_, done) = run(&|p| {
        let first = p.iter().position(is_base).unwrap();
        p.into_iter()
            .enumerate()
            .filter(|(i, q)| {
                !matches!(q, pm4::Pm4Packet::PredExec { .. }) && (!is_base(q) || *i == first)
            })
            .map(|(_, q)| q)
            .collect()
    });
    done.unwrap();
    assert_eq!(
        emu.stats().xcc_scratch_overlaps,
        1,
        "shared scratch went unnoticed"
    );

    // A fence every XCC runs after a dispatch: the first XCC done would report all of it.
    let word = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let (_, done) = run(&|mut p| {
        let wb = pm4::release_mem::gfx9::TC_WB_ACTION_EN;
        p.push(common::release_mem(word.gpu_address(), 7, wb, None));
        p
    });
    done.unwrap();
    assert_eq!(word.to_vec().unwrap()[0], 7);
    assert_eq!(
        emu.stats().unjoined_xcc_fences,
        1,
        "an unjoined fence went unnoticed"
    );

    // XCC 3's base unmapped: its work-groups (3, 11) fault; the others' registers are theirs.
    let unmapped: u64 = 0x7000_0000_0000;
    let (_, done) = run(&|p| {
        let mut seen = 0;
        p.into_iter()
            .map(|q| {
                if !is_base(&q) {
                    return q;
                }
                seen += 1;
                if seen != 4 {
                    return q;
                }
                pm4::Pm4Packet::SetShReg {
                    reg: base_reg,
                    values: vec![(unmapped >> 8) as u32, (unmapped >> 40) as u32 & 0xFF],
                }
            })
            .collect()
    });
    match done {
        Err(kfdrt::Error::DeviceFault { fault, .. }) => {
            assert_eq!(
                fault.va & !0xFFFF_FFFF,
                unmapped,
                "faulted at {:#x}",
                fault.va
            )
        }
        other => panic!("XCC 3's unmapped scratch did not fault: {other:?}"),
    }
}

/// RDNA3 (gfx11): kfdrt lays scratch out in ROCr's GFX11 formats (`WAVESIZE` in 256-byte
/// units, `WAVES` per shader engine, the GFX11 resource) and sizes it for the wave size the CP
/// asks for: a wave32 kernel's request (`INSUFFICIENT_SCRATCH_WAVE32`) gets slots of 32 lanes,
/// and the dispatch then runs (kfdrt's gfx1100 fill kernel, as wave32 machine code).
#[test]
fn gfx1100_queues_get_gfx11_scratch_sized_for_their_waves() {
    let kfd = common::emulated(Preset::Gfx1100, 1);
    let gpu = kfd.gpu(0).unwrap();
    let info = gpu.info().clone();
    let engines = info.shader_engines;
    let fields = |q: &AqlQueue| {
        // SAFETY: the live queue's amd_queue_t; the CP only reads these fields.
        unsafe {
            let a = q.amd_queue_address() as *const u8;
            let u32_at = |o: u64| (a.add(o as usize) as *const u32).read_volatile();
            let o = aql::queue_offsets::SCRATCH_RESOURCE_DESCRIPTOR;
            (
                u32_at(aql::queue_offsets::COMPUTE_TMPRING_SIZE),
                [u32_at(o), u32_at(o + 4), u32_at(o + 8), u32_at(o + 12)],
                u32_at(aql::queue_offsets::SCRATCH_WAVE64_LANE_BYTE_SIZE),
            )
        }
    };
    // Sized up front for the GPU's own waves (wave32): 100 bytes -> 104 per lane, 3328 per wave.
    let q = gpu
        .create_aql_queue(AqlQueueOptions::default().with_scratch(100))
        .unwrap();
    let (tmpring, resource, wave64_lane) = fields(&q);
    assert_eq!(
        (tmpring >> 12) & 0x7FFF,
        3328 / 256,
        "WAVESIZE in 256-byte units"
    );
    let per_engine = tmpring & 0xFFF;
    assert!(per_engine > 0 && per_engine * engines >= info.compute_units * 32);
    assert_eq!(resource[1] >> 30, 1, "GFX11 SWIZZLE_ENABLE");
    assert_eq!(resource[3], aql::scratch::GFX11_RESOURCE_DWORD3);
    assert_eq!(
        u64::from(resource[2]),
        u64::from(per_engine * engines) * 3328
    );
    assert_eq!(wave64_lane, 52, "104 bytes over 32 lanes, counted over 64");

    // A wave32 kernel needing more stops the CP, which asks for wave32 scratch.
    let co = gpu
        .load_code_object(include_bytes!("../blit/gfx1100.co"))
        .unwrap();
    let k = co.kernel("kfdrt_blit_fill").unwrap();
    // dst, pattern, bytes, stride (kfdrt's CopyEngine layout).
    let dst = gpu.alloc(256, kfdrt::MemoryKind::GttCoherent).unwrap();
    let args = gpu.alloc(4096, kfdrt::MemoryKind::GttCoherent).unwrap();
    let mut raw = Vec::new();
    for v in [dst.gpu_address(), 0x0A0B_0C0D, 256, 64] {
        raw.extend_from_slice(&u64::to_le_bytes(v));
    }
    args.write(0, &raw).unwrap();
    let before = requests(&kfd);
    let packet = aql::Packet::KernelDispatch(aql::KernelDispatchPacket {
        barrier: true,
        acquire: aql::FenceScope::System,
        release: aql::FenceScope::System,
        dimensions: 1,
        workgroup_size: [64, 1, 1],
        grid_size: [64, 1, 1],
        private_segment_size: 400,
        group_segment_size: 0,
        kernel_object: k.object(),
        kernarg_address: args.gpu_address(),
        completion_signal: 0,
    });
    let id = common::raw_publish(&q, &packet);
    // Waiting on work behind it serves the queue's requests (kfdrt's own dispatches start a
    // service thread; this one went around them); the dispatch then runs.
    q.barrier_and(&[])
        .unwrap()
        .wait(T)
        .unwrap_or_else(|e| panic!("dispatch {id}: {e}"));
    assert_eq!(requests(&kfd) - before, 1, "one request, served");
    let filled = dst.to_vec().unwrap();
    assert!(
        filled.chunks(4).all(|c| c == [0x0D, 0x0C, 0x0B, 0x0A]),
        "the fill ran"
    );
    let (tmpring, _, wave64_lane) = fields(&q);
    assert_eq!(
        (tmpring >> 12) & 0x7FFF,
        400 * 32 / 256,
        "slots of 32 lanes"
    );
    assert_eq!(wave64_lane, 200);
    assert!(q.fault().is_none());
}

/// A PM4 submission that times out waiting for ring space after part of it was committed
/// (issue #26 item 5): the committed dispatches still run once the queue moves, after the
/// caller has seen the error and the queue has replaced its scratch for a larger kernel. The
/// scratch they use is kfdrt's, kept until `finish` sees the queue idle past them, so their
/// waves write live memory (freed scratch, dedicated and unmapped, would be a GPU page fault).
#[test]
fn a_timed_out_pm4_submission_keeps_the_scratch_its_committed_dispatches_use() {
    use kfdrt::{LaunchGeometry, Pm4QueueOptions};
    for preset in [Preset::Gfx90a, Preset::Gfx942] {
        let kfd = common::emulated(preset, 1);
        let emu = kfd.emulator().unwrap().clone();
        let gpu = kfd.gpu(0).unwrap();
        let co = kernels(&gpu);
        let array = co.kernel("scratch_array").unwrap();
        let spill = co.kernel("scratch_spill").unwrap();
        assert!(spill.private_segment_size() > array.private_segment_size());
        let idx_words = indices();
        let idx = buffer_of(&gpu, &idx_words);
        let out = buffer_of(&gpu, &vec![0; N as usize]);
        let q = gpu
            .create_pm4_queue(Pm4QueueOptions::default().with_ring_bytes(1024))
            .unwrap();
        let args = index_args(&array, &idx, &out);
        let kernarg = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
        let packets = q
            .dispatch_packets_with_args(&array, &LaunchGeometry::linear(N, 64), &args, &kernarg)
            .unwrap();
        emu.faults().stall_queue(q.id());
        let short = Duration::from_millis(50);
        let mut committed = 0;
        loop {
            // SAFETY: every address in the packets (kernel, arguments, buffers) outlives the queue's
            // last wait below; the scratch is the queue's own.
            match unsafe { q.submit(&packets, short) } {
                Ok(_) => committed += 1,
                Err(kfdrt::Error::Timeout { .. }) => break,
                Err(e) => panic!("{e}"),
            }
            assert!(committed < 1000, "a 1 KiB ring never filled");
        }
        // A kernel needing more scratch: the queue replaces its backing (the old one is retired,
        // not freed, while the committed dispatches may still use it).
        let spill_args = index_args(&spill, &idx, &out);
        let spill_kernarg = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
        q.dispatch_packets_with_args(
            &spill,
            &LaunchGeometry::linear(N, 64),
            &spill_args,
            &spill_kernarg,
        )
        .unwrap();
        // Not idle yet: a fence that cannot be waited for keeps everything.
        assert!(matches!(q.finish(short), Err(kfdrt::Error::Timeout { .. })));
        emu.faults().resume_queue(q.id());
        q.finish(Duration::from_secs(120))
            .expect("the committed dispatches ran into live scratch");
        gpu.health().expect("no GPU fault");
        assert_eq!(words(&out, N as usize), array_expected(&idx_words));
    }
}
