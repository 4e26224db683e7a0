//! Suballocator and placement tests.

use crate::common;

use kfdrt::emu::Preset;
use kfdrt::{AllocOptions, Buffer, Error, Kfd, MemoryKind};
use proptest::prelude::*;
use std::sync::Arc;

const SMALL_KINDS: [MemoryKind; 4] = [
    MemoryKind::DeviceLocal,
    MemoryKind::HostVisibleVram,
    MemoryKind::GttCoherent,
    MemoryKind::GttUncached,
];

/// An emulated MI210 with `gpus` GPUs and the default 2 MiB threshold, whatever
/// `KFDRT_DISABLE_SUBALLOCATOR` says (these tests are about the suballocator).
fn suballocating(gpus: usize) -> common::Checked {
    let kfd = common::emulated(Preset::Gfx90a, gpus);
    kfd.set_suballocation_threshold(2 << 20);
    kfd
}

/// The device under test (an emulated MI210 when none is selected) with the default 2 MiB
/// threshold, whatever `KFDRT_DISABLE_SUBALLOCATOR` says; `None` if `test` is skipped.
fn suballocating_under_test(test: &str, gpus: usize) -> Option<common::Checked> {
    let kfd = common::under_test(test, Preset::Gfx90a, gpus, &[])?;
    kfd.set_suballocation_threshold(2 << 20);
    Some(kfd)
}

fn check_no_overlap(live: &[Buffer]) {
    let mut ranges: Vec<(u64, u64)> = live
        .iter()
        .map(|b| (b.gpu_address(), b.gpu_address() + b.size()))
        .collect();
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        assert!(
            w[0].1 <= w[1].0,
            "live allocations overlap: {:#x?} and {:#x?}",
            w[0],
            w[1]
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn random_alloc_free_sequences(ops in prop::collection::vec((
        // Mostly small (suballocated) sizes, sometimes large ones with their own allocation.
        prop_oneof![9 => 1u64..300_000, 1 => (2u64 << 20)..(5 << 20)],
        0u32..13,
        any::<bool>(),
        0usize..4,
    ), 1..200)) {
        let kfd = suballocating(1);
        let gpu = kfd.gpu(0).unwrap();
        let mut live: Vec<Buffer> = Vec::new();
        for (size, align_log, free_one, kind) in ops {
            if free_one && !live.is_empty() {
                let i = (size as usize) % live.len();
                live.swap_remove(i);
                continue;
            }
            let alignment = 64u64 << align_log; // 64 B .. 256 KiB
            let opts = AllocOptions::new(SMALL_KINDS[kind]).with_alignment(alignment);
            let b = gpu.alloc_with(size, opts).unwrap();
            prop_assert_eq!(b.gpu_address() % alignment, 0, "alignment {} not met", alignment);
            prop_assert!(b.allocated_size() >= size);
            prop_assert_eq!(b.is_suballocated(), size < 2 << 20);
            prop_assert!(kfd.emulator().unwrap().is_mapped(gpu.id(), b.gpu_address(), size));
            live.push(b);
            check_no_overlap(&live);
        }
        drop(live);
        kfd.trim_memory();
        prop_assert_eq!(kfd.emulator().unwrap().stats().live_allocations, 0);
    }
}

#[test]
fn sub_allocations_write_through_to_the_gpu_view() {
    let kfd = suballocating(1);
    let gpu = kfd.gpu(0).unwrap();
    let emu = kfd.emulator().unwrap().clone();
    let a = gpu.alloc(100, MemoryKind::GttCoherent).unwrap();
    let b = gpu.alloc(100, MemoryKind::GttCoherent).unwrap();
    assert!(a.is_suballocated() && b.is_suballocated());
    assert_eq!(a.handle(), b.handle(), "both come from one block");
    a.write(0, &[1, 2, 3, 4]).unwrap();
    b.write(0, &[9, 9, 9, 9]).unwrap();
    let vm = emu.gpu_vm(gpu.id()).unwrap();
    assert_eq!(
        vm.read_u32(a.gpu_address()).unwrap(),
        u32::from_le_bytes([1, 2, 3, 4])
    );
    assert_eq!(
        vm.read_u32(b.gpu_address()).unwrap(),
        u32::from_le_bytes([9, 9, 9, 9])
    );
}

#[test]
fn many_small_allocations_share_few_blocks() {
    let kfd = suballocating(1);
    let gpu = kfd.gpu(0).unwrap();
    let emu = kfd.emulator().unwrap().clone();
    let live: Vec<Buffer> = (0..20_000)
        .map(|_| gpu.alloc(64, MemoryKind::DeviceLocal).unwrap())
        .collect();
    let used = 20_000 * 64u64;
    let blocks = emu.stats().live_allocations as u64;
    assert!(
        blocks <= used.div_ceil(2 << 20),
        "{blocks} KFD allocations for {used} bytes"
    );
    drop(live);
    kfd.trim_memory();
    assert_eq!(emu.stats().live_allocations, 0);
}

#[test]
fn four_threads_allocate_and_free_concurrently() {
    let Some(kfd) =
        suballocating_under_test("suballoc::four_threads_allocate_and_free_concurrently", 1)
    else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let gpu = gpu.clone();
            std::thread::spawn(move || {
                let mut live = Vec::new();
                for i in 0..5_000u64 {
                    let size = 64 + (i * 37 + t * 101) % 20_000;
                    live.push(gpu.alloc(size, SMALL_KINDS[(i % 4) as usize]).unwrap());
                    if i % 3 == 0 {
                        live.swap_remove((i as usize * 7) % live.len());
                    }
                }
                live
            })
        })
        .collect();
    let mut all: Vec<Buffer> = Vec::new();
    for t in threads {
        all.extend(t.join().unwrap());
    }
    check_no_overlap(&all);
    drop(all);
    kfd.trim_memory();
    if let Some(emu) = kfd.emulator() {
        assert_eq!(emu.stats().live_allocations, 0);
    }
}

#[test]
fn large_allocations_are_fully_2mib_mappable() {
    let kfd = suballocating(1);
    let gpu = kfd.gpu(0).unwrap();
    let emu = kfd.emulator().unwrap().clone();
    for size in [2u64 << 20, 6 << 20, 64 << 20] {
        let b = gpu.alloc(size, MemoryKind::DeviceLocal).unwrap();
        assert!(!b.is_suballocated());
        let stats = emu.page_size_stats(gpu.id()).unwrap();
        assert_eq!(stats.bytes_2m, size, "{size}: {stats:?}");
        assert_eq!(stats.bytes_64k + stats.bytes_4k, 0);
        drop(b);
    }
    // Suballocator blocks are 2 MiB-mappable too.
    let small = gpu.alloc(4096, MemoryKind::DeviceLocal).unwrap();
    assert_eq!(emu.page_size_stats(gpu.id()).unwrap().bytes_2m, 2 << 20);
    drop(small);
}

#[test]
fn out_of_memory_is_typed_and_keeps_nothing() {
    let kfd = suballocating(1);
    let gpu = kfd.gpu(0).unwrap();
    let emu = kfd.emulator().unwrap().clone();
    // Fill one block, then make the next block allocation fail.
    let first: Vec<Buffer> = (0..32)
        .map(|_| gpu.alloc(64 << 10, MemoryKind::GttCoherent).unwrap())
        .collect();
    assert_eq!(emu.stats().live_allocations, 1);
    emu.faults().fail_nth_allocation(1);
    match gpu.alloc(64 << 10, MemoryKind::GttCoherent) {
        Err(Error::OutOfMemory { .. }) => {}
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    assert_eq!(
        emu.stats().live_allocations,
        1,
        "the failed attempt left nothing behind"
    );
    drop(first);
    kfd.trim_memory();
    assert_eq!(emu.stats().live_allocations, 0);
}

#[test]
fn disabling_and_dedicated_allocations_bypass_the_suballocator() {
    let Some(kfd) = suballocating_under_test(
        "suballoc::disabling_and_dedicated_allocations_bypass_the_suballocator",
        1,
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let b = gpu
        .alloc_with(4096, AllocOptions::new(MemoryKind::GttCoherent).dedicated())
        .unwrap();
    assert!(!b.is_suballocated());
    kfd.set_suballocation_threshold(0);
    assert!(!gpu
        .alloc(64, MemoryKind::DeviceLocal)
        .unwrap()
        .is_suballocated());
    kfd.set_suballocation_threshold(1 << 20);
    assert!(gpu
        .alloc(64, MemoryKind::DeviceLocal)
        .unwrap()
        .is_suballocated());
    assert!(!gpu
        .alloc(1 << 20, MemoryKind::DeviceLocal)
        .unwrap()
        .is_suballocated());
    assert!(matches!(
        gpu.alloc_with(
            64,
            AllocOptions::new(MemoryKind::DeviceLocal).with_alignment(3)
        ),
        Err(Error::BadAlignment { align: 3, .. })
    ));
}

#[test]
fn sub_allocation_peer_mapping_follows_its_block() {
    let kfd = suballocating(2);
    let (g0, g1) = (kfd.gpu(0).unwrap(), kfd.gpu(1).unwrap());
    let emu = kfd.emulator().unwrap().clone();
    let a = gpu_small(&g0);
    let b = gpu_small(&g0);
    a.map_to(&g1).unwrap();
    b.map_to(&g1).unwrap();
    assert!(emu.is_mapped(g1.id(), a.gpu_address(), a.size()));
    a.unmap_from(&g1).unwrap();
    assert!(
        emu.is_mapped(g1.id(), b.gpu_address(), b.size()),
        "b still needs the block on the peer"
    );
    drop(b);
    assert!(
        !emu.is_mapped(g1.id(), a.gpu_address(), 1),
        "last claim gone: block unmapped from the peer"
    );
    let kfd2: Kfd = kfd.kfd();
    drop(a);
    kfd2.trim_memory();
    assert_eq!(emu.stats().live_allocations, 0);
    let _ = Arc::strong_count(&emu);
}

fn gpu_small(g: &kfdrt::Gpu) -> Buffer {
    g.alloc(1000, MemoryKind::DeviceLocal).unwrap()
}

#[test]
fn caller_memory_is_registered_while_borrowed() {
    let kfd = suballocating(1);
    let gpu = kfd.gpu(0).unwrap();
    let emu = kfd.emulator().unwrap().clone();
    let mut data = vec![0u8; 3 * 4096 + 100];
    data[5000] = 42;
    {
        let reg = gpu.register_host_memory(&mut data[..]).unwrap();
        assert!(emu.is_mapped(gpu.id(), reg.gpu_address(), reg.len()));
        let vm = emu.gpu_vm(gpu.id()).unwrap();
        let mut b = [0u8; 1];
        vm.read(reg.gpu_address() + 5000, &mut b).unwrap();
        assert_eq!(b[0], 42, "the GPU sees the caller's bytes");
        vm.write(reg.gpu_address() + 7, &[7]).unwrap();
        assert_eq!(emu.stats().live_allocations, 1);
    }
    assert_eq!(data[7], 7, "GPU writes land in the caller's memory");
    assert_eq!(emu.stats().live_allocations, 0);
    assert!(matches!(
        gpu.register_host_memory(&mut []),
        Err(Error::ZeroSize {
            what: "host registration"
        })
    ));
}

/// kfdrt's view of what each GPU should have mapped: whole buffers by their own range, sub-
/// allocations by their 2 MiB block (counted once per block).
fn expected_mappings(buffers: &[&Buffer], gpu_id: u32) -> Vec<(u64, u64)> {
    let mut ranges: Vec<(u64, u64)> = buffers
        .iter()
        .filter(|b| b.mapped_gpus().contains(&gpu_id))
        .map(|b| {
            if b.is_suballocated() {
                let block = 2u64 << 20;
                (b.gpu_address() / block * block, block)
            } else {
                (b.gpu_address(), b.allocated_size())
            }
        })
        .collect();
    ranges.sort_unstable();
    ranges.dedup();
    ranges
}

#[test]
fn mapping_sets_agree_with_the_emulator_page_tables() {
    let kfd = suballocating(4);
    let gpus: Vec<kfdrt::Gpu> = (0..4).map(|i| kfd.gpu(i).unwrap()).collect();
    let emu = kfd.emulator().unwrap().clone();
    for g in &gpus {
        assert_eq!(emu.mapped_bytes(g.id()), Some(0));
    }
    let whole = gpus[0].alloc(3 << 20, MemoryKind::DeviceLocal).unwrap();
    let sub_a = gpus[0].alloc(4096, MemoryKind::GttCoherent).unwrap();
    let sub_b = gpus[0].alloc(100, MemoryKind::GttCoherent).unwrap();
    let other = gpus[2].alloc(8192, MemoryKind::DeviceLocal).unwrap();
    assert!(!whole.is_suballocated() && sub_a.is_suballocated() && sub_b.is_suballocated());
    let all = [&whole, &sub_a, &sub_b, &other];

    // Sets of peers (by index) applied in turn to (whole, sub_a, sub_b).
    let steps: [[&[usize]; 3]; 5] = [
        [&[1, 2, 3], &[1], &[]],
        [&[2], &[1, 3], &[1]],
        [&[0, 3], &[], &[1, 2, 3]],
        [&[1, 2, 3], &[2], &[]],
        [&[], &[], &[]],
    ];
    for (n, step) in steps.iter().enumerate() {
        for (buf, set) in [&whole, &sub_a, &sub_b].into_iter().zip(step) {
            let targets: Vec<&kfdrt::Gpu> = set.iter().map(|&i| &gpus[i]).collect();
            buf.set_mapped_gpus(&targets).unwrap();
            let mut want: Vec<u32> = set.iter().map(|&i| gpus[i].id()).collect();
            want.push(gpus[0].id());
            let mut have = buf.mapped_gpus();
            want.sort_unstable();
            want.dedup();
            have.sort_unstable();
            assert_eq!(have, want, "step {n}: kfdrt's mapping set");
        }
        for g in &gpus {
            let want = expected_mappings(&all, g.id());
            assert_eq!(
                emu.mappings(g.id()),
                want,
                "step {n}: page table of {:#x}",
                g.id()
            );
            assert_eq!(
                emu.mapped_bytes(g.id()),
                Some(want.iter().map(|r| r.1).sum()),
                "step {n}: mapped-byte counter of {:#x}",
                g.id()
            );
            for b in all {
                let listed = b.mapped_gpus().contains(&g.id());
                let visible = emu.is_mapped(g.id(), b.gpu_address(), b.size());
                // A sub-allocation may also be visible through a neighbour's claim on its block.
                assert!(
                    visible == listed || (visible && b.is_suballocated()),
                    "step {n}: buffer at {:#x} on {:#x}: listed {listed}, visible {visible}",
                    b.gpu_address(),
                    g.id()
                );
            }
        }
    }
    // Buffers dropped while mapped to peers take their mappings with them.
    whole.set_mapped_gpus(&[&gpus[1], &gpus[3]]).unwrap();
    sub_b.map_to(&gpus[2]).unwrap();
    drop((whole, sub_a, sub_b, other));
    kfd.trim_memory();
    for g in &gpus {
        assert_eq!(emu.mapped_bytes(g.id()), Some(0));
    }
    assert_eq!(emu.stats().live_allocations, 0);
}

/// Emulated: opens two devices at once in one process, one with the suballocator off and one
/// with it on (on hardware, a process's opens of /dev/kfd share one KFD process).
#[test]
fn environment_switch_turns_the_suballocator_off() {
    common::own_process::in_own_process(
        "suballoc::environment_switch_turns_the_suballocator_off",
        || {
            // In a process of its own: the rest of the suite opens devices that read the variable.
            let before = std::env::var_os("KFDRT_DISABLE_SUBALLOCATOR");
            std::env::set_var("KFDRT_DISABLE_SUBALLOCATOR", "1");
            let off = common::emulated(Preset::Gfx90a, 1);
            std::env::set_var("KFDRT_DISABLE_SUBALLOCATOR", "0");
            let on = common::emulated(Preset::Gfx90a, 1);
            match before {
                Some(v) => std::env::set_var("KFDRT_DISABLE_SUBALLOCATOR", v),
                None => std::env::remove_var("KFDRT_DISABLE_SUBALLOCATOR"),
            }
            assert_eq!(off.suballocation_threshold(), 0);
            assert_eq!(on.suballocation_threshold(), 2 << 20);
            let a = off
                .gpu(0)
                .unwrap()
                .alloc(64, MemoryKind::DeviceLocal)
                .unwrap();
            let b = on
                .gpu(0)
                .unwrap()
                .alloc(64, MemoryKind::DeviceLocal)
                .unwrap();
            assert!(!a.is_suballocated());
            assert!(b.is_suballocated());
        },
    );
}
