//! The kernel ABI at dispatch: arguments checked against real compilers' metadata, and the
//! hidden arguments written where the metadata puts them (code object v4 and v5), through
//! AQL and PM4 dispatch.

use crate::co_util;
use crate::common;

use co_util::fixture;
use kfdrt::code_object::{self, ArgKind, Dim, KernelArg, KernelMetadata};
use kfdrt::emu::{GpuFault, Preset, WorkGroup};
use kfdrt::kernel_args::{KernelArgError, KernelArgs, LaunchContext, LaunchGeometry};
use kfdrt::{AqlQueueOptions, Error, MemoryKind, Pm4QueueOptions};
use std::sync::Arc;
use std::time::Duration;

const T: Duration = Duration::from_secs(20);

fn metadata(file: &str, kernel: &str) -> Arc<KernelMetadata> {
    let info = code_object::inspect(&fixture(file)).unwrap();
    let md = info.metadata.expect("a metadata note");
    let k = md.kernels.into_iter().find(|k| k.name == kernel).unwrap();
    Arc::new(k)
}

fn read(bytes: &[u8], offset: u32, size: u32) -> u64 {
    let mut b = [0u8; 8];
    b[..size as usize].copy_from_slice(&bytes[offset as usize..][..size as usize]);
    u64::from_le_bytes(b)
}

/// What the ABI says a hidden argument holds for `g` on `c`, computed here independently of the
/// crate: full blocks, the partial block's size, and so on.
fn expected(
    kind: &ArgKind,
    g: &LaunchGeometry,
    c: &LaunchContext,
    pointers: &[(ArgKind, u64)],
) -> u64 {
    let (grid, wg) = (g.grid.map(u64::from), g.workgroup.map(u64::from));
    match kind {
        ArgKind::HiddenBlockCount(d) => grid[d.index()] / wg[d.index()],
        ArgKind::HiddenGroupSize(d) => wg[d.index()],
        ArgKind::HiddenRemainder(d) => grid[d.index()] % wg[d.index()],
        ArgKind::HiddenGridDims => {
            if grid[2] > 1 || wg[2] > 1 {
                3
            } else if grid[1] > 1 || wg[1] > 1 {
                2
            } else {
                1
            }
        }
        ArgKind::HiddenQueuePtr => c.queue_address,
        ArgKind::HiddenPrivateBase => u64::from(c.private_base_hi),
        ArgKind::HiddenSharedBase => u64::from(c.shared_base_hi),
        ArgKind::HiddenDynamicLdsSize => u64::from(g.dynamic_lds),
        k => pointers.iter().find(|(p, _)| p == k).map_or(0, |(_, v)| *v),
    }
}

const GEOMETRY: LaunchGeometry = LaunchGeometry {
    grid: [1000, 6, 3],
    workgroup: [64, 4, 1],
    dynamic_lds: 512,
};
const CONTEXT: LaunchContext = LaunchContext {
    queue_address: 0x7F12_3456_7000,
    private_base_hi: 0x2_0000,
    shared_base_hi: 0x1_0000,
    lds_bytes: 64 * 1024,
};

#[test]
fn code_object_v5_hidden_arguments_at_their_metadata_offsets() {
    common::device_free();
    let md = metadata("hidden_v5-gfx90a.elf", "copy_implicit");
    // The v5 implicit block starts after the explicit arguments, with the fixed layout of
    // AMDGPUUsage's table: check the fixture is that layout before checking what kfdrt wrote.
    let start = md.hidden_args().map(|a| a.offset).min().unwrap();
    assert_eq!(start, 16);
    let at = |kind: ArgKind| md.hidden_arg(&kind).map(|a| a.offset - start);
    assert_eq!(at(ArgKind::HiddenBlockCount(Dim::X)), Some(0));
    assert_eq!(at(ArgKind::HiddenBlockCount(Dim::Z)), Some(8));
    assert_eq!(at(ArgKind::HiddenGroupSize(Dim::X)), Some(12));
    assert_eq!(at(ArgKind::HiddenRemainder(Dim::Y)), Some(20));
    assert_eq!(at(ArgKind::HiddenGlobalOffset(Dim::X)), Some(40));
    assert_eq!(at(ArgKind::HiddenGridDims), Some(64));
    assert_eq!(at(ArgKind::HiddenHostcallBuffer), Some(80));
    assert_eq!(at(ArgKind::HiddenMultigridSyncArg), Some(88));
    assert_eq!(at(ArgKind::HiddenHeapV1), Some(96));
    assert_eq!(at(ArgKind::HiddenDefaultQueue), Some(104));
    assert_eq!(at(ArgKind::HiddenQueuePtr), Some(200));

    let out = 0xAB_CDEF_0000u64;
    let mut args = KernelArgs::from_metadata(md.clone());
    // SAFETY: the bytes are only inspected, never run.
    unsafe { args.set_address(0, out) }.unwrap();
    args.set_u32(1, 72).unwrap();
    let heap = 0x5_0000_0000u64;
    // SAFETY: as above.
    unsafe { args.set_hidden_address(ArgKind::HiddenHeapV1, heap) }.unwrap();
    let bytes = args.encode(&GEOMETRY, &CONTEXT).unwrap();
    assert_eq!(bytes.len(), md.kernarg_segment_size as usize);
    assert_eq!(read(&bytes, 0, 8), out);
    assert_eq!(read(&bytes, 8, 4), 72);
    let pointers = [(ArgKind::HiddenHeapV1, heap)];
    for a in md.hidden_args() {
        assert_eq!(
            read(&bytes, a.offset, a.size),
            expected(&a.kind, &GEOMETRY, &CONTEXT, &pointers),
            "{} at {}",
            a.kind,
            a.offset
        );
    }
    // Spot checks against numbers worked out by hand.
    assert_eq!(read(&bytes, 16, 4), 15, "1000 / 64 full blocks");
    assert_eq!(read(&bytes, 16 + 18, 2), 40, "1000 % 64 in the last");
    assert_eq!(read(&bytes, 16 + 64, 2), 3, "three dimensions");
    assert_eq!(read(&bytes, 16 + 200, 8), CONTEXT.queue_address);
    // Bytes no argument covers stay zero.
    let covered = |i: usize| {
        md.args
            .iter()
            .any(|a| (a.offset as usize..(a.offset + a.size) as usize).contains(&i))
    };
    assert!((0..bytes.len())
        .filter(|&i| !covered(i))
        .all(|i| bytes[i] == 0));
}

#[test]
fn code_object_v4_hidden_arguments_at_their_metadata_offsets() {
    common::device_free();
    let md = metadata("kernels-gfx90a.elf", "say_hello");
    let kinds: Vec<_> = md.args.iter().map(|a| (a.offset, a.kind.clone())).collect();
    assert_eq!(
        kinds,
        [
            (0, ArgKind::ByValue),
            (8, ArgKind::HiddenGlobalOffset(Dim::X)),
            (16, ArgKind::HiddenGlobalOffset(Dim::Y)),
            (24, ArgKind::HiddenGlobalOffset(Dim::Z)),
            (32, ArgKind::HiddenHostcallBuffer),
            (40, ArgKind::HiddenNone),
            (48, ArgKind::HiddenNone),
            (56, ArgKind::HiddenMultigridSyncArg),
        ]
    );
    let mut args = KernelArgs::from_metadata(md.clone());
    args.set_i32(0, -7).unwrap();
    let without = args.encode(&GEOMETRY, &CONTEXT).unwrap();
    assert_eq!(read(&without, 0, 4) as u32 as i32, -7);
    assert!(
        without[8..].iter().all(|&b| b == 0),
        "offsets 0, no hostcall, not cooperative"
    );
    let hostcall = 0x1234_5678_9000u64;
    // SAFETY: the bytes are only inspected.
    unsafe { args.set_hidden_address(ArgKind::HiddenHostcallBuffer, hostcall) }.unwrap();
    let with = args.encode(&GEOMETRY, &CONTEXT).unwrap();
    assert_eq!(read(&with, 32, 8), hostcall);
}

/// Metadata with every hidden kind at its v5 place, as a kernel using them all would have.
fn every_hidden_kind() -> Arc<KernelMetadata> {
    let mut args = vec![KernelArg::new(ArgKind::GlobalBuffer, 0, 8)];
    let implicit: [(ArgKind, u32, u32); 24] = [
        (ArgKind::HiddenBlockCount(Dim::X), 0, 4),
        (ArgKind::HiddenBlockCount(Dim::Y), 4, 4),
        (ArgKind::HiddenBlockCount(Dim::Z), 8, 4),
        (ArgKind::HiddenGroupSize(Dim::X), 12, 2),
        (ArgKind::HiddenGroupSize(Dim::Y), 14, 2),
        (ArgKind::HiddenGroupSize(Dim::Z), 16, 2),
        (ArgKind::HiddenRemainder(Dim::X), 18, 2),
        (ArgKind::HiddenRemainder(Dim::Y), 20, 2),
        (ArgKind::HiddenRemainder(Dim::Z), 22, 2),
        (ArgKind::HiddenGlobalOffset(Dim::X), 40, 8),
        (ArgKind::HiddenGlobalOffset(Dim::Y), 48, 8),
        (ArgKind::HiddenGlobalOffset(Dim::Z), 56, 8),
        (ArgKind::HiddenGridDims, 64, 2),
        (ArgKind::HiddenPrintfBuffer, 72, 8),
        (ArgKind::HiddenHostcallBuffer, 80, 8),
        (ArgKind::HiddenMultigridSyncArg, 88, 8),
        (ArgKind::HiddenHeapV1, 96, 8),
        (ArgKind::HiddenDefaultQueue, 104, 8),
        (ArgKind::HiddenCompletionAction, 112, 8),
        (ArgKind::HiddenDynamicLdsSize, 120, 4),
        (ArgKind::HiddenPrivateBase, 192, 4),
        (ArgKind::HiddenSharedBase, 196, 4),
        (ArgKind::HiddenQueuePtr, 200, 8),
        (ArgKind::Unknown("hidden_from_the_future".into()), 208, 8),
    ];
    args.extend(
        implicit
            .into_iter()
            .map(|(k, o, s)| KernelArg::new(k, 8 + o, s)),
    );
    Arc::new(KernelMetadata {
        name: "all_hidden".into(),
        symbol: "all_hidden.kd".into(),
        args,
        kernarg_segment_size: 8 + 256,
        kernarg_segment_align: 8,
        group_segment_fixed_size: 1024,
        private_segment_fixed_size: 0,
        uses_dynamic_stack: false,
        wavefront_size: 64,
        sgpr_count: 16,
        vgpr_count: 8,
        agpr_count: 0,
        sgpr_spill_count: 0,
        vgpr_spill_count: 0,
        max_flat_workgroup_size: 1024,
        reqd_workgroup_size: None,
        language: None,
    })
}

#[test]
fn every_hidden_kind_is_filled() {
    common::device_free();
    let md = every_hidden_kind();
    let mut args = KernelArgs::from_metadata(md.clone());
    // SAFETY: the bytes are only inspected.
    unsafe { args.set_address(0, 0x1000) }.unwrap();
    let provided = [
        (ArgKind::HiddenPrintfBuffer, 0x11_0000u64),
        (ArgKind::HiddenCompletionAction, 0x22_0000),
        (ArgKind::HiddenDefaultQueue, 0x33_0000),
    ];
    for (k, p) in &provided {
        // SAFETY: as above.
        unsafe { args.set_hidden_address(k.clone(), *p) }.unwrap();
    }
    let g = LaunchGeometry {
        grid: [7, 1, 1],
        workgroup: [8, 1, 1],
        dynamic_lds: 4096,
    };
    let bytes = args.encode(&g, &CONTEXT).unwrap();
    for a in md.hidden_args() {
        assert_eq!(
            read(&bytes, a.offset, a.size),
            expected(&a.kind, &g, &CONTEXT, &provided),
            "{}",
            a.kind
        );
    }
    // A grid smaller than one group: no full block, a partial one of 7.
    assert_eq!(read(&bytes, 8, 4), 0);
    assert_eq!(read(&bytes, 8 + 18, 2), 7);
    assert_eq!(read(&bytes, 8 + 120, 4), 4096);
    assert_eq!(read(&bytes, 8 + 192, 4), 0x2_0000);
    // Value kinds the runtime fills cannot be set by the caller.
    // SAFETY: refused before anything is stored.
    let e = unsafe { args.set_hidden_address(ArgKind::HiddenQueuePtr, 1) }.unwrap_err();
    assert!(e.to_string().contains("kfdrt fills it"), "{e}");
}

fn kernel_args_error(e: Error) -> KernelArgError {
    match e {
        Error::KernelArgs(e) => e,
        e => panic!("expected a kernel-argument error, got {e}"),
    }
}

#[test]
fn arguments_by_name_are_checked_against_the_metadata() {
    let Some(kfd) = common::under_test(
        "kernel_args::arguments_by_name_are_checked_against_the_metadata",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let data = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let md = metadata("args-gfx90a.elf", "scale_rows");
    let mut args = KernelArgs::from_metadata(md.clone());
    args.set_buffer("data", &data)
        .unwrap()
        .set_f32("factor", 1.5)
        .unwrap()
        .set_u32("row_len", 64)
        .unwrap()
        .set_u32("tile", 0)
        .unwrap();
    let e = kernel_args_error(
        args.encode(&LaunchGeometry::linear(256, 64), &CONTEXT)
            .unwrap_err(),
    );
    assert_eq!(
        e.to_string(),
        "argument 4 (tag) of kernel \"scale_rows\" was not set"
    );
    args.set_u64("tag", 0xFEED).unwrap();
    let bytes = args
        .encode(&LaunchGeometry::linear(256, 64), &CONTEXT)
        .unwrap();
    assert_eq!(read(&bytes, 0, 8), data.gpu_address());
    assert_eq!(f32::from_bits(read(&bytes, 8, 4) as u32), 1.5);
    assert_eq!(read(&bytes, 12, 4), 64);
    assert_eq!(read(&bytes, 24, 8), 0xFEED);
    // By index the same slots.
    args.set_u32(2, 65).unwrap();
    assert_eq!(
        read(
            &args
                .encode(&LaunchGeometry::linear(256, 64), &CONTEXT)
                .unwrap(),
            12,
            4
        ),
        65
    );

    let errors = [
        (
            args.set_u32("nope", 1).map(drop),
            "has no argument \"nope\" (it has 5)",
        ),
        (args.set_u32(5, 1).map(drop), "has no argument 5"),
        (
            args.set_u64("factor", 1).map(drop),
            "is 4 bytes, the value is 8",
        ),
        (
            args.set_u64("data", 1).map(drop),
            "is global_buffer: pass a Buffer",
        ),
        (args.set_buffer("factor", &data).map(drop), "is by_value"),
        // The compiler recorded the types: a number of the other kind is refused.
        (
            args.set_u32("factor", 3).map(drop),
            "is declared \"float\"; an integer was given",
        ),
        (
            args.set_f32("row_len", 3.0).map(drop),
            "is declared \"uint\"; a floating-point number was given",
        ),
        (
            args.set_f64("tag", 3.0).map(drop),
            "is declared \"ulong\"; a floating-point number was given",
        ),
        (
            args.set_buffer_at("data", &data, 4097).map(drop),
            "offset 4097 is past the buffer's 4096 bytes",
        ),
    ];
    for (r, needle) in errors {
        let e = kernel_args_error(r.unwrap_err());
        assert!(e.to_string().contains(needle), "{needle:?} not in {e}");
    }
    args.set_buffer_at("data", &data, 4096).unwrap();
    // The launch must fit the kernel (compiled for at most 256 work-items) and the GPU's LDS.
    let big_group = LaunchGeometry::linear(1024, 512);
    let e = kernel_args_error(args.encode(&big_group, &CONTEXT).unwrap_err());
    assert!(
        e.to_string().contains(".max_flat_workgroup_size 256"),
        "{e}"
    );
    let lds = LaunchGeometry {
        dynamic_lds: 70_000,
        ..LaunchGeometry::linear(256, 64)
    };
    let context = LaunchContext::for_gpu(&gpu);
    assert_eq!(context.lds_bytes, 64 * 1024);
    let e = kernel_args_error(args.encode(&lds, &context).unwrap_err());
    assert_eq!(
        e,
        KernelArgError::LdsTooLarge {
            kernel: "scale_rows".into(),
            static_bytes: 0,
            dynamic_bytes: 70_000,
            gpu_bytes: 65536
        }
    );
    assert!(
        e.to_string().contains("more than this GPU's 65536 bytes"),
        "{e}"
    );
}

/// An emulated kernel that copies its first `words` kernarg words to the buffer its first
/// argument points at, so a test sees the bytes the packet processor handed the kernel.
fn kernarg_copier(words: u32) -> Arc<kfdrt::emu::KernelFn> {
    Arc::new(move |wg: &WorkGroup<'_>| -> Result<(), GpuFault> {
        if wg.group_id != [0, 0, 0] {
            return Ok(());
        }
        let out = wg.kernarg_u64(0)?;
        for i in 0..u64::from(words) {
            wg.mem.write_u32(out + 4 * i, wg.kernarg_u32(4 * i)?)?;
        }
        Ok(())
    })
}

/// With an emulated kernel that copies the whole kernarg segment, explicit arguments included
/// (the compiled kernel's run on the device under test is
/// `the_compiled_kernel_reads_the_hidden_arguments_kfdrt_filled`).
#[test]
fn aql_and_pm4_dispatches_carry_the_hidden_arguments() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let md = metadata("hidden_v5-gfx90a.elf", "copy_implicit");
    let size = md.kernarg_segment_size;
    let kernel = gpu
        .emulated_kernel("copy_implicit", size, kernarg_copier(size / 4))
        .unwrap();
    let g = LaunchGeometry {
        grid: [96, 2, 1],
        workgroup: [32, 2, 1],
        dynamic_lds: 256,
    };
    let run = |out: &kfdrt::Buffer, pm4: bool| -> (Vec<u8>, LaunchContext) {
        let mut args = KernelArgs::from_metadata(md.clone());
        args.set_buffer(0, out)
            .unwrap()
            .set_u32(1, size / 4)
            .unwrap();
        if pm4 {
            let q = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
            let karg = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
            let packets = q
                .dispatch_packets_with_args(&kernel, &g, &args, &karg)
                .unwrap();
            common::pm4_submit(&q, &packets, T).unwrap();
            q.finish(T).unwrap();
            (
                out.to_vec().unwrap()[..size as usize].to_vec(),
                LaunchContext::for_gpu(&gpu),
            )
        } else {
            let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
            q.dispatch(&g.dispatch(&kernel).with_args(&args))
                .unwrap()
                .wait(Some(T))
                .unwrap();
            (
                out.to_vec().unwrap()[..size as usize].to_vec(),
                LaunchContext::for_queue(&q),
            )
        }
    };
    for pm4 in [false, true] {
        let out = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
        let (bytes, context) = run(&out, pm4);
        assert_eq!(read(&bytes, 0, 8), out.gpu_address(), "pm4 {pm4}");
        for a in md.hidden_args() {
            assert_eq!(
                read(&bytes, a.offset, a.size),
                expected(&a.kind, &g, &context, &[]),
                "pm4 {pm4}: {}",
                a.kind
            );
        }
        let queue_ptr = md.hidden_arg(&ArgKind::HiddenQueuePtr).unwrap();
        let q = read(&bytes, queue_ptr.offset, 8);
        assert_eq!(q == 0, pm4, "the AQL queue's amd_queue_t, none for PM4");
    }
}

/// `copy_implicit` as hipcc compiled it copies its implicit-argument block (every hidden
/// argument of code object v5) out; through AQL and PM4 on the device under test, each holds
/// what the ABI says kfdrt must fill in.
#[test]
fn the_compiled_kernel_reads_the_hidden_arguments_kfdrt_filled() {
    let Some(kfd) = common::under_test(
        "kernel_args::the_compiled_kernel_reads_the_hidden_arguments_kfdrt_filled",
        Preset::Gfx90a,
        1,
        &["hidden_v5"],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let co = common::load_for(&gpu, "hidden_v5");
    let kernel = co.kernel("copy_implicit").unwrap();
    let md = kernel.metadata_arc().unwrap().clone();
    let size = md.kernarg_segment_size;
    // The implicit-argument block starts at the first hidden argument; one work-item of the
    // first work-group copies each of its words.
    let base = md.hidden_args().map(|a| a.offset).min().unwrap();
    let words = (size - base) / 4;
    assert!(words <= 64, "{words} words");
    // The kernel's metadata lists a hostcall buffer: kfdrt provides its own.
    let hostcall = [(
        ArgKind::HiddenHostcallBuffer,
        kernel.hostcall_buffer().unwrap().unwrap_or(0),
    )];
    for pm4 in [false, true] {
        // Partial work-groups through AQL; a PM4 dispatch runs whole ones.
        let g = LaunchGeometry {
            grid: if pm4 { [128, 4, 1] } else { [160, 3, 1] },
            workgroup: [64, 2, 1],
            dynamic_lds: 256,
        };
        let out = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
        let mut args = KernelArgs::new(&kernel).unwrap();
        args.set_buffer(0, &out).unwrap().set_u32(1, words).unwrap();
        let context = if pm4 {
            let q = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
            let karg = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
            let packets = q
                .dispatch_packets_with_args(&kernel, &g, &args, &karg)
                .unwrap();
            common::pm4_submit(&q, &packets, T).unwrap();
            q.finish(T).unwrap();
            LaunchContext::for_gpu(&gpu)
        } else {
            let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
            q.dispatch(&g.dispatch(&kernel).with_args(&args))
                .unwrap()
                .wait(Some(T))
                .unwrap();
            LaunchContext::for_queue(&q)
        };
        // The kernarg segment as the kernel saw it, its explicit part left zero.
        let mut bytes = vec![0u8; size as usize];
        bytes[base as usize..].copy_from_slice(&out.to_vec().unwrap()[..(4 * words) as usize]);
        for a in md.hidden_args() {
            assert_eq!(
                read(&bytes, a.offset, a.size),
                expected(&a.kind, &g, &context, &hostcall),
                "pm4 {pm4}: {}",
                a.kind
            );
        }
        let queue_ptr = md.hidden_arg(&ArgKind::HiddenQueuePtr).unwrap();
        let q = read(&bytes, queue_ptr.offset, 8);
        assert_eq!(q == 0, pm4, "the AQL queue's amd_queue_t, none for PM4");
    }
}

#[test]
fn arguments_must_belong_to_the_kernel_dispatched() {
    let Some(kfd) = common::under_test(
        "kernel_args::arguments_must_belong_to_the_kernel_dispatched",
        Preset::Gfx90a,
        1,
        &["kernels"],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let co = common::load_for(&gpu, "kernels");
    let (saxpy, vadd) = (
        co.kernel("saxpy").unwrap(),
        co.kernel("vector_add").unwrap(),
    );
    let x = gpu.alloc(4096, MemoryKind::GttCoherent).unwrap();
    let mut args = KernelArgs::new(&saxpy).unwrap();
    args.set_f32(0, 2.0)
        .unwrap()
        .set_buffer(1, &x)
        .unwrap()
        .set_buffer(2, &x)
        .unwrap()
        .set_u32(3, 8)
        .unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let e = kernel_args_error(
        q.dispatch(
            &LaunchGeometry::linear(8, 8)
                .dispatch(&vadd)
                .with_args(&args),
        )
        .unwrap_err(),
    );
    assert!(matches!(e, KernelArgError::OtherKernel { .. }), "{e}");
    assert_eq!(q.write_index(), 0, "nothing was submitted");
    // Kernels without metadata have no builder.
    // SAFETY: never dispatched; the address names nothing.
    let plain = unsafe { kfdrt::Kernel::from_raw("plain", 0x10_0000_0000, 8, 0, 0) };
    let e = kernel_args_error(KernelArgs::new(&plain).unwrap_err());
    assert!(matches!(e, KernelArgError::NoMetadata { .. }), "{e}");
}
