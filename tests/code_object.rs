//! Loading real compiler output on the emulated device: offload bundles and ELFs, target and
//! feature checks, segment placement, symbols, refusals of malformed objects, the
//! instruction-cache invalidation and unloading (relocations: `code_object_relocs.rs`).

use crate::co_util;
use crate::common;

use common::raw_dispatch;

use co_util::{fixture, Elf};
use kfdrt::code_object::{
    ArgKind, CodeObjectError, CodeObjectVersion, FeatureSetting, LoadOptions, SymbolKind,
};
use kfdrt::emu::Preset;
use kfdrt::{AqlQueueOptions, Error, Gpu, Kfd};

fn gpu(kfd: &Kfd) -> Gpu {
    kfd.gpu(0).unwrap()
}

fn co_error(r: kfdrt::Result<kfdrt::CodeObject>) -> CodeObjectError {
    match r {
        Err(Error::CodeObject(e)) => e,
        Err(e) => panic!("expected a code-object error, got {e}"),
        Ok(co) => panic!("expected a code-object error, loaded {co:?}"),
    }
}

#[test]
fn gpu_target_ids_come_from_topology_and_the_xnack_mode() {
    let Some(kfd) = common::under_test(
        "code_object::gpu_target_ids_come_from_topology_and_the_xnack_mode",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    // The device under test: its processor is the topology's target.
    let t = gpu(&kfd).target_id();
    assert_eq!(t.processor, gpu(&kfd).info().gfx_target);
    assert!(t.to_string().starts_with(&t.processor), "{t}");
    // Each preset's exact target ID.
    let kfd = common::emulated(Preset::Gfx90a, 1);
    assert_eq!(gpu(&kfd).target_id().to_string(), "gfx90a:sramecc+:xnack-");
    let kfd = common::emulated(Preset::Gfx942, 1);
    assert_eq!(gpu(&kfd).target_id().to_string(), "gfx942:sramecc+:xnack-");
    let kfd = common::emulated(Preset::Gfx1100, 1);
    let t = gpu(&kfd).target_id();
    assert_eq!(t.to_string(), "gfx1100");
    assert_eq!(t.xnack, FeatureSetting::Unsupported);
}

#[test]
fn hipcc_bundle_loads_with_its_metadata_and_segments() {
    let Some(kfd) = common::under_test(
        "code_object::hipcc_bundle_loads_with_its_metadata_and_segments",
        Preset::Gfx90a,
        1,
        &["kernels"],
    ) else {
        return;
    };
    let co = gpu(&kfd)
        .load_code_object(
            &common::code_object_for("kernels", &kfd.gpu(0).unwrap().info().gfx_target).unwrap(),
        )
        .unwrap();
    assert_eq!(co.version(), CodeObjectVersion::V4);
    assert_eq!(co.target().to_string(), "gfx90a");
    let mut names: Vec<_> = co.kernel_names().collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "block_reverse",
            "saxpy",
            "say_hello",
            "scale_bias",
            "vector_add"
        ]
    );
    let md = co.kernel_metadata("saxpy").unwrap();
    let kinds: Vec<_> = md
        .args
        .iter()
        .map(|a| (a.offset, a.size, a.kind.clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            (0, 4, ArgKind::ByValue),
            (8, 8, ArgKind::GlobalBuffer),
            (16, 8, ArgKind::GlobalBuffer),
            (24, 4, ArgKind::ByValue)
        ]
    );
    assert_eq!(md.kernarg_segment_size, 28);
    assert_eq!(md.wavefront_size, 64);
    // The kernel handed out carries the same metadata and its descriptor agrees with it.
    let k = co.kernel("saxpy").unwrap();
    assert_eq!(k.metadata(), Some(md));
    assert_eq!(k.kernarg_size(), md.kernarg_segment_size);
    assert_eq!(k.object() % 64, 0);
    let entry = k.entry_address().unwrap();
    assert_eq!(entry % 256, 0);
    // Segments: read-only data, code, writable dynamic section, each where the ELF puts it.
    let segs = co.segments();
    assert_eq!(segs.len(), 3, "{segs:?}");
    assert!(segs
        .iter()
        .all(|s| s.address - co.base_address() == s.vaddr));
    assert!(segs[0].readable && !segs[0].writable && !segs[0].executable);
    assert!(segs[1].executable && !segs[1].writable);
    assert!(segs[2].writable && !segs[2].executable);
    let code = segs.iter().find(|s| s.executable).unwrap();
    assert!((code.address..code.address + code.mem_size).contains(&entry));
    // The bytes in GPU memory are the ELF's (the code segment, byte for byte).
    let elf =
        Elf(common::code_object_for("kernels", &kfd.gpu(0).unwrap().info().gfx_target).unwrap());
    let text = elf
        .loads()
        .into_iter()
        .find(|p| p.p_flags & 1 != 0)
        .unwrap();
    let mut loaded = vec![0u8; text.p_filesz as usize];
    co.memory().read(text.p_vaddr, &mut loaded).unwrap();
    let file = &elf.0[text.p_offset as usize..][..text.p_filesz as usize];
    assert!(loaded == file, "code segment differs from the file");
    // Kernel descriptor symbols are symbols too.
    let kd = co.symbol("saxpy.kd").unwrap();
    assert_eq!(kd.address, k.object());
    assert_eq!(kd.kind, SymbolKind::Object);
    assert_eq!(co.symbol("saxpy").unwrap().kind, SymbolKind::Function);
}

#[test]
fn the_bundle_and_its_elf_load_the_same() {
    let Some(kfd) = common::under_test(
        "code_object::the_bundle_and_its_elf_load_the_same",
        Preset::Gfx90a,
        1,
        &["kernels"],
    ) else {
        return;
    };
    let g = gpu(&kfd);
    let a = g
        .load_code_object(
            &common::code_object_for("kernels", &kfd.gpu(0).unwrap().info().gfx_target).unwrap(),
        )
        .unwrap();
    let b = g
        .load_code_object(
            &common::code_object_for("kernels", &kfd.gpu(0).unwrap().info().gfx_target).unwrap(),
        )
        .unwrap();
    assert_eq!(a.metadata(), b.metadata());
    assert!(a.metadata().is_some());
    assert_ne!(a.base_address(), b.base_address());
}

/// Emulated: one GPU of each preset's target.
#[test]
fn a_two_target_bundle_gives_each_gpu_its_own_code() {
    let bundle = fixture("hidden_v5.bundle");
    for (preset, processor) in [(Preset::Gfx90a, "gfx90a"), (Preset::Gfx942, "gfx942")] {
        let kfd = common::emulated(preset, 1);
        let co = gpu(&kfd).load_code_object(&bundle).unwrap();
        assert_eq!(co.target().processor, processor);
        assert_eq!(co.version(), CodeObjectVersion::V5);
        assert!(co.kernel("copy_implicit").is_ok());
    }
    let kfd = common::emulated(Preset::Gfx1100, 1);
    let e = co_error(gpu(&kfd).load_code_object(&bundle));
    let msg = e.to_string();
    assert!(matches!(e, CodeObjectError::NoBundleEntry { .. }), "{msg}");
    for needle in [
        "this GPU (gfx1100)",
        "hipv4-amdgcn-amd-amdhsa--gfx90a",
        "hipv4-amdgcn-amd-amdhsa--gfx942",
        "host-x86_64-unknown-linux-gnu",
    ] {
        assert!(msg.contains(needle), "{needle:?} not in {msg:?}");
    }
}

/// Emulated: the presets' exact targets, which the messages name.
#[test]
fn target_and_feature_mismatches_name_both_sides() {
    let kfd = common::emulated(Preset::Gfx942, 1);
    let e = co_error(gpu(&kfd).load_code_object(&fixture("hidden_v5-gfx90a.elf")));
    assert_eq!(
        e.to_string(),
        "code object is for gfx90a, this GPU is gfx942:sramecc+:xnack-"
    );
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let e = co_error(gpu(&kfd).load_code_object(&fixture("hidden_v4-gfx90a-xnack+.elf")));
    assert_eq!(
        e.to_string(),
        "code object is for gfx90a:xnack+, this GPU is gfx90a:sramecc+:xnack-"
    );
    let kfd = common::emulated(Preset::Gfx1100, 1);
    let e = co_error(gpu(&kfd).load_code_object(&fixture("kernels-gfx90a.elf")));
    assert_eq!(
        e.to_string(),
        "code object is for gfx90a, this GPU is gfx1100"
    );
}

#[test]
fn code_object_v3_takes_its_target_from_e_flags() {
    let Some(kfd) = common::under_test(
        "code_object::code_object_v3_takes_its_target_from_e_flags",
        Preset::Gfx90a,
        1,
        &["hidden_v3"],
    ) else {
        return;
    };
    let co = gpu(&kfd)
        .load_code_object(
            &common::code_object_for("hidden_v3", &kfd.gpu(0).unwrap().info().gfx_target).unwrap(),
        )
        .unwrap();
    assert_eq!(co.version(), CodeObjectVersion::V3);
    assert_eq!(co.target().to_string(), "gfx90a:sramecc+:xnack-");
    let md = co.metadata().unwrap();
    assert_eq!(md.metadata_version, (1, 0));
    assert_eq!(md.target, None);
}

#[test]
fn version_and_target_disagreements_between_header_and_metadata_are_refused() {
    let Some(kfd) = common::under_test(
        "code_object::version_and_target_disagreements_between_header_and_metadata_are_refused",
        Preset::Gfx90a,
        1,
        &["hidden_v5"],
    ) else {
        return;
    };
    // A v5 ELF header over v4 metadata: EI_ABIVERSION 3 -> 2.
    let mut elf =
        Elf(common::code_object_for("hidden_v5", &kfd.gpu(0).unwrap().info().gfx_target).unwrap());
    elf.0[8] = 2;
    let e = co_error(gpu(&kfd).load_code_object(&elf.0));
    assert_eq!(
        e.to_string(),
        "the ELF header says code object v4, the metadata says v5 (amdhsa.version 1.2)"
    );
    // e_flags saying xnack+ while the metadata's target says "any".
    let mut elf =
        Elf(common::code_object_for("hidden_v5", &kfd.gpu(0).unwrap().info().gfx_target).unwrap());
    let flags = elf.u32_at(48);
    elf.put_u32(48, flags | 0x300);
    let e = co_error(gpu(&kfd).load_code_object(&elf.0));
    assert!(matches!(e, CodeObjectError::Inconsistent { .. }), "{e}");
    // Code object v2 (EI_ABIVERSION 0) and v6 are named.
    let mut elf =
        Elf(common::code_object_for("hidden_v5", &kfd.gpu(0).unwrap().info().gfx_target).unwrap());
    elf.0[8] = 0;
    let e = co_error(gpu(&kfd).load_code_object(&elf.0));
    assert!(
        e.to_string().starts_with("code object v2 is not supported"),
        "{e}"
    );
    elf.0[8] = 4;
    let e = co_error(gpu(&kfd).load_code_object(&elf.0));
    assert!(
        matches!(e, CodeObjectError::UnsupportedVersion { version: 6, .. }),
        "{e}"
    );
}

#[test]
fn overlapping_or_oversized_segments_are_refused() {
    let Some(kfd) = common::under_test(
        "code_object::overlapping_or_oversized_segments_are_refused",
        Preset::Gfx90a,
        1,
        &["kernels"],
    ) else {
        return;
    };
    let g = gpu(&kfd);
    let kernels = || common::code_object_for("kernels", &g.info().gfx_target).unwrap();
    let mut elf = Elf(kernels());
    let loads = elf.loads();
    // The code segment moved onto the first (read-only) one.
    elf.put_u64(loads[1].at + 16, loads[0].p_vaddr + 0x10);
    assert!(matches!(
        co_error(g.load_code_object(&elf.0)),
        CodeObjectError::OverlappingSegments { .. }
    ));
    // A segment claiming a terabyte of memory: refused before anything is allocated.
    let mut elf = Elf(kernels());
    let last = elf.loads().into_iter().last().unwrap();
    elf.put_u64(last.at + 40, 1 << 40);
    let live = || kfd.emulator().map(|emu| emu.stats().live_allocations);
    let before = live();
    let e = co_error(g.load_code_object(&elf.0));
    assert!(matches!(e, CodeObjectError::ImageTooLarge { .. }), "{e}");
    assert_eq!(
        live(),
        before,
        "nothing allocated (counted on the emulator)"
    );
    // A lower limit applies to ordinary objects too.
    let small = LoadOptions::default().with_max_image_bytes(4096);
    let e = co_error(g.load_code_object_with(&kernels(), &small));
    assert!(
        matches!(e, CodeObjectError::ImageTooLarge { limit: 4096, .. }),
        "{e}"
    );
    // File bytes past the end of the file.
    let mut elf = Elf(kernels());
    let load = elf.loads()[1];
    elf.put_u64(load.at + 8, elf.0.len() as u64 - 16);
    assert!(matches!(
        co_error(g.load_code_object(&elf.0)),
        CodeObjectError::Malformed(_)
    ));
}

#[test]
fn misplaced_descriptors_are_refused() {
    let Some(kfd) = common::under_test(
        "code_object::misplaced_descriptors_are_refused",
        Preset::Gfx90a,
        1,
        &["kernels"],
    ) else {
        return;
    };
    let g = gpu(&kfd);
    type Move = fn(u64) -> u64;
    let cases: [(&str, Move); 3] = [
        ("outside the image", |_| 0x40_0000),
        ("misaligned", |v| v + 8),
        // Onto the code: then its entry offset (code bytes) points nowhere useful.
        ("not a descriptor", |_| 0x1700),
    ];
    for (what, new_value) in cases {
        let mut elf =
            Elf(
                common::code_object_for("kernels", &kfd.gpu(0).unwrap().info().gfx_target).unwrap(),
            );
        let sym = elf.dynsym("saxpy.kd");
        let value = elf.u64_at(sym + 8);
        elf.put_u64(sym + 8, new_value(value));
        let e = co_error(g.load_code_object(&elf.0));
        assert!(
            matches!(&e, CodeObjectError::BadDescriptor { kernel, .. } if kernel == "saxpy"),
            "{what}: {e}"
        );
    }
    // An entry offset pointing outside the code.
    let mut elf =
        Elf(common::code_object_for("kernels", &kfd.gpu(0).unwrap().info().gfx_target).unwrap());
    let sym = elf.dynsym("saxpy.kd");
    let kd = elf.u64_at(sym + 8) as usize; // vaddr == file offset in the first segment
    elf.put_u64(kd + 16, 0x7FFF_0000);
    let e = co_error(g.load_code_object(&elf.0));
    assert!(e.to_string().contains("code entry"), "{e}");
}

#[test]
fn a_bad_metadata_note_is_an_error() {
    let Some(kfd) = common::under_test(
        "code_object::a_bad_metadata_note_is_an_error",
        Preset::Gfx90a,
        1,
        &["kernels"],
    ) else {
        return;
    };
    let g = gpu(&kfd);
    let mut elf =
        Elf(common::code_object_for("kernels", &kfd.gpu(0).unwrap().info().gfx_target).unwrap());
    let desc = elf.metadata_desc();
    elf.0[desc.start] = 0xC1; // never used by msgpack
    let e = co_error(g.load_code_object(&elf.0));
    assert!(matches!(e, CodeObjectError::Metadata(_)), "{e}");
    // Cut short: the document ends inside a string.
    let mut elf =
        Elf(common::code_object_for("kernels", &kfd.gpu(0).unwrap().info().gfx_target).unwrap());
    let desc = elf.metadata_desc();
    for b in &mut elf.0[desc.start + desc.len() / 2..desc.end] {
        *b = 0;
    }
    let e = co_error(g.load_code_object(&elf.0));
    assert!(matches!(e, CodeObjectError::Metadata(_)), "{e}");
    // A kernel's descriptor symbol renamed: the metadata's kernel has no descriptor.
    let mut elf =
        Elf(common::code_object_for("kernels", &kfd.gpu(0).unwrap().info().gfx_target).unwrap());
    let dynstr = elf.section(".dynstr");
    let at = dynstr.sh_offset as usize
        + elf.0[dynstr.sh_offset as usize..]
            .windows(9)
            .position(|w| w == b"saxpy.kd\0")
            .unwrap();
    elf.0[at..at + 8].copy_from_slice(b"saxpy.kk");
    let e = co_error(g.load_code_object(&elf.0));
    assert!(
        e.to_string().contains("\"saxpy.kd\" is not in .dynsym"),
        "{e}"
    );
}

#[test]
fn not_code_objects_are_named() {
    let Some(kfd) = common::under_test(
        "code_object::not_code_objects_are_named",
        Preset::Gfx90a,
        1,
        &["kernels"],
    ) else {
        return;
    };
    let g = gpu(&kfd);
    for (bytes, what) in [
        (&b""[..], "malformed"),
        (b"\x7fELF", "malformed"),
        (
            b"hello world, not an ELF file at all, long enough to look",
            "malformed",
        ),
    ] {
        let e = co_error(g.load_code_object(bytes));
        assert!(e.to_string().contains(what), "{e}");
    }
    let mut elf =
        Elf(common::code_object_for("kernels", &kfd.gpu(0).unwrap().info().gfx_target).unwrap());
    elf.put_u16(18, 62); // EM_X86_64
    assert!(matches!(
        co_error(g.load_code_object(&elf.0)),
        CodeObjectError::NotAmdgpu(_)
    ));
    let mut elf =
        Elf(common::code_object_for("kernels", &kfd.gpu(0).unwrap().info().gfx_target).unwrap());
    elf.0[48] = 0xEE; // EF_AMDGPU_MACH nobody knows
    assert_eq!(
        co_error(g.load_code_object(&elf.0)),
        CodeObjectError::UnknownProcessor { mach: 0xEE }
    );
}

#[test]
fn every_load_invalidates_the_instruction_cache_on_one_loader_queue() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let g = gpu(&kfd);
    let emu = kfd.emulator().unwrap().clone();
    assert_eq!(emu.stats().live_queues, 0);
    let before = emu.stats().packets_run;
    let a = g.load_code_object(&fixture("kernels-gfx90a.co")).unwrap();
    assert_eq!(emu.stats().live_queues, 1, "the GPU's loader queue");
    let after_first = emu.stats().packets_run;
    assert!(
        after_first > before,
        "the load ran a packet (the invalidation)"
    );
    let b = g.load_code_object(&fixture("relocs-gfx90a.elf")).unwrap();
    assert_eq!(emu.stats().live_queues, 1, "the same queue again");
    assert!(emu.stats().packets_run > after_first);
    drop((a, b));
    assert_eq!(
        emu.stats().live_queues,
        0,
        "no code object, no loader queue"
    );
    // A caller's queue can do it instead; it must be on the same GPU.
    let q = g.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let on_q = LoadOptions::default().with_icache_queue(&q);
    let written_before = q.write_index();
    let _c = g
        .load_code_object_with(&fixture("relocs-gfx90a.elf"), &on_q)
        .unwrap();
    assert_eq!(emu.stats().live_queues, 1);
    assert_eq!(
        q.write_index(),
        written_before + 1,
        "one packet on the caller's queue"
    );
    let two = common::emulated(Preset::Gfx90a, 2);
    let other = two
        .gpu(1)
        .unwrap()
        .create_aql_queue(AqlQueueOptions::default())
        .unwrap();
    let wrong = LoadOptions::default().with_icache_queue(&other);
    let e = gpu(&two)
        .load_code_object_with(&fixture("relocs-gfx90a.elf"), &wrong)
        .unwrap_err();
    assert!(
        matches!(e, Error::NotOnGpu { gpu_id, .. } if gpu_id == gpu(&two).id()),
        "{e}"
    );
}

#[test]
fn unloading_frees_the_code_once_no_kernel_uses_it() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    // Whole allocations, so the emulator's count shows the code memory itself.
    kfd.set_suballocation_threshold(0);
    let g = gpu(&kfd);
    let emu = kfd.emulator().unwrap().clone();
    let q = g.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let options = LoadOptions::default().with_icache_queue(&q);
    // The queue's invalidation packet buffer and the MMIO page of HDP flushes are made on
    // first use: make them now.
    q.invalidate_icache().unwrap().wait(None).unwrap();
    kfd.flush_hdp().unwrap();
    let base = emu.stats().live_allocations;
    let co = g
        .load_code_object_with(&fixture("kernels-gfx90a.co"), &options)
        .unwrap();
    assert_eq!(emu.stats().live_allocations, base + 1);
    let kernel = co.kernel("vector_add").unwrap();
    drop(co);
    assert_eq!(
        emu.stats().live_allocations,
        base + 1,
        "the kernel keeps the code"
    );
    drop(kernel);
    assert_eq!(
        emu.stats().live_allocations,
        base,
        "freed with the last kernel"
    );
}

/// Dispatches `kernel` on a fresh queue so the packet processor fetches and runs its code
/// (`vector_add` with a count of 0 and null pointers: the bound check skips every access).
fn fetch(gpu: &Gpu, kernel: &kfdrt::Kernel) {
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let d = raw_dispatch(kernel, 64, 64, &[0; 28]);
    q.dispatch(&d)
        .and_then(|s| s.wait(Some(std::time::Duration::from_secs(20))))
        .unwrap();
}

#[test]
fn code_loaded_over_old_code_is_never_fetched_stale() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let g = gpu(&kfd);
    let emu = kfd.emulator().unwrap().clone();
    let original = fixture("kernels-gfx90a.elf");
    let co = g.load_code_object(&original).unwrap();
    let k = co.kernel("vector_add").unwrap();
    let entry = k.entry_address().unwrap();
    let entry_vaddr = entry - co.base_address();
    fetch(&g, &k);
    drop((k, co));
    // Different code at the same place: the first instruction of vector_add changed.
    let mut changed = Elf(original);
    let text = changed
        .loads()
        .into_iter()
        .find(|p| p.p_flags & 1 != 0)
        .unwrap();
    let at = (text.p_offset + (entry_vaddr - text.p_vaddr)) as usize;
    changed.0[at] ^= 0x01;
    let co = g.load_code_object(&changed.0).unwrap();
    let k = co.kernel("vector_add").unwrap();
    assert_eq!(
        k.entry_address(),
        Some(entry),
        "the loader reused the freed code memory"
    );
    fetch(&g, &k);
    assert_eq!(
        emu.stats().stale_code_fetches,
        0,
        "the load invalidated the cache"
    );
    // The detector works: code rewritten behind the loader's back is fetched stale.
    let offset = entry - co.base_address();
    let mut word = [0u8; 4];
    co.memory().read(offset, &mut word).unwrap();
    word[0] ^= 0x02;
    co.memory().write(offset, &word).unwrap();
    fetch(&g, &k);
    assert_eq!(emu.stats().stale_code_fetches, 1);
}
