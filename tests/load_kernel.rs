//! The ML-runtime path without HIP, as `examples/load_kernel.rs` walks it: a `hipcc --genco` code
//! object loaded, its kernels listed with their metadata, their arguments built, and the kernels
//! run with results checked against the CPU.
//!
//! On the emulated device the kernels run as machine code on kfd-emu's wave interpreter.

use crate::co_util;
use crate::common;

use co_util::fixture;
use kfdrt::code_object::{ArgKind, Dim};
use kfdrt::kernel_args::{KernelArgs, LaunchContext, LaunchGeometry};
use kfdrt::{AqlQueue, AqlQueueOptions, Buffer, Gpu, Kernel, MemoryKind};
use std::time::Duration;

const T: Duration = Duration::from_secs(60);

#[test]
fn lists_the_hipcc_kernels_and_builds_their_arguments() {
    let Some((_kfd, gpu)) = gfx90a() else { return };
    let co = gpu.load_code_object(&fixture("kernels-gfx90a.co")).unwrap();
    let vadd = co.kernel("vector_add").unwrap();
    let md = vadd.metadata().unwrap();
    let explicit: Vec<_> = md.explicit_args().map(|a| a.kind.clone()).collect();
    assert_eq!(
        explicit,
        [
            ArgKind::GlobalBuffer,
            ArgKind::GlobalBuffer,
            ArgKind::GlobalBuffer,
            ArgKind::ByValue
        ]
    );
    assert_eq!(
        md.hidden_args().count(),
        0,
        "hipcc's v4 vector_add reads no hidden argument"
    );
    let (a, b, c) = (buf(&gpu, 64), buf(&gpu, 64), buf(&gpu, 64));
    let mut args = KernelArgs::new(&vadd).unwrap();
    args.set_buffer(0, &a)
        .unwrap()
        .set_buffer(1, &b)
        .unwrap()
        .set_buffer_at(2, &c, 16)
        .unwrap()
        .set_u32(3, 12)
        .unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let bytes = args
        .encode(
            &LaunchGeometry::linear(12, 64),
            &LaunchContext::for_queue(&q),
        )
        .unwrap();
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    assert_eq!(bytes.len(), 28);
    assert_eq!(word(0), a.gpu_address());
    assert_eq!(word(8), b.gpu_address());
    assert_eq!(word(16), c.gpu_address() + 16);
    assert_eq!(u32::from_le_bytes(bytes[24..28].try_into().unwrap()), 12);
    // The v5 build of saxpy asks for hidden arguments: they follow the explicit ones.
    let v5 = gpu.load_code_object(&fixture("hidden_v5.bundle")).unwrap();
    let md = v5.kernel_metadata("saxpy").unwrap();
    let group_size = md.hidden_arg(&ArgKind::HiddenGroupSize(Dim::X)).unwrap();
    assert_eq!((group_size.offset, group_size.size), (44, 2));
}

fn buf(gpu: &Gpu, bytes: u64) -> Buffer {
    gpu.alloc(bytes, MemoryKind::HostVisibleVram).unwrap()
}

fn floats(b: &Buffer, n: usize) -> Vec<f32> {
    let mut raw = vec![0u8; n * 4];
    b.read(0, &mut raw).unwrap();
    raw.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn upload(b: &Buffer, v: &[f32]) {
    b.write(
        0,
        &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>(),
    )
    .unwrap();
}

fn run(q: &AqlQueue, k: &Kernel, g: LaunchGeometry, args: &KernelArgs) {
    q.dispatch(&g.dispatch(k).with_args(args))
        .unwrap()
        .wait(Some(T))
        .unwrap();
}

/// The device under test (`KFDRT_DEVICE`), when it is a gfx90a the hipcc object is built for.
/// The device under test and its first GPU, if that is a gfx90a (the device is returned so the
/// caller keeps it, and its leak check runs when the test ends).
fn gfx90a() -> Option<(common::Checked, Gpu)> {
    let kfd = common::device();
    let gpu = kfd.gpu(0)?;
    if gpu.info().gfx_target != "gfx90a" {
        eprintln!(
            "skipped: the hipcc fixture is for gfx90a, the GPU is {}",
            gpu.info().gfx_target
        );
        return None;
    }
    Some((kfd, gpu))
}

#[test]
fn runs_hipcc_kernels_and_matches_the_cpu() {
    let Some((_kfd, gpu)) = gfx90a() else { return };
    let co = gpu.load_code_object(&fixture("kernels-gfx90a.co")).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    // A grid that is not a multiple of the work-group: the bound check in the kernel matters.
    let n = 1000usize;
    let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    let ys: Vec<f32> = (0..n).map(|i| 3.0 - i as f32).collect();
    let (a, b, c) = (buf(&gpu, 4096), buf(&gpu, 4096), buf(&gpu, 4096));
    upload(&a, &xs);
    upload(&b, &ys);

    let vadd = co.kernel("vector_add").unwrap();
    let mut args = KernelArgs::new(&vadd).unwrap();
    args.set_buffer(0, &a).unwrap().set_buffer(1, &b).unwrap();
    args.set_buffer(2, &c)
        .unwrap()
        .set_u32(3, n as u32)
        .unwrap();
    run(&q, &vadd, LaunchGeometry::linear(1024, 256), &args);
    let sum: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| x + y).collect();
    assert_eq!(floats(&c, n), sum);

    let saxpy = co.kernel("saxpy").unwrap();
    let mut args = KernelArgs::new(&saxpy).unwrap();
    args.set_f32(0, 2.5).unwrap().set_buffer(1, &a).unwrap();
    args.set_buffer(2, &b)
        .unwrap()
        .set_u32(3, n as u32)
        .unwrap();
    run(&q, &saxpy, LaunchGeometry::linear(1024, 128), &args);
    let expect: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| 2.5 * x + y).collect();
    assert_eq!(floats(&b, n), expect);

    // Dynamic LDS: each 64-item block reversed through shared memory.
    let rev = co.kernel("block_reverse").unwrap();
    let ints: Vec<u8> = (0..256i32).flat_map(|i| (i * 3).to_le_bytes()).collect();
    let (src, dst) = (buf(&gpu, 1024), buf(&gpu, 1024));
    src.write(0, &ints).unwrap();
    let mut args = KernelArgs::new(&rev).unwrap();
    args.set_buffer(0, &src)
        .unwrap()
        .set_buffer(1, &dst)
        .unwrap()
        .set_u32(2, 256)
        .unwrap();
    let g = LaunchGeometry {
        dynamic_lds: 64 * 4,
        ..LaunchGeometry::linear(256, 64)
    };
    run(&q, &rev, g, &args);
    let mut out = vec![0u8; 1024];
    dst.read(0, &mut out).unwrap();
    for i in 0..256usize {
        let j = (i / 64) * 64 + 63 - i % 64;
        let v = i32::from_le_bytes(out[i * 4..i * 4 + 4].try_into().unwrap());
        assert_eq!(v, j as i32 * 3, "element {i}");
    }

    // 8-byte values by value: a double and a 64-bit integer.
    let sb = co.kernel("scale_bias").unwrap();
    let d: Vec<u8> = (0..100).flat_map(|i| f64::from(i).to_le_bytes()).collect();
    let data = buf(&gpu, 800);
    data.write(0, &d).unwrap();
    let mut args = KernelArgs::new(&sb).unwrap();
    args.set_buffer(0, &data).unwrap().set_f64(1, 0.5).unwrap();
    args.set_i64(2, -4).unwrap().set_u32(3, 100).unwrap();
    run(&q, &sb, LaunchGeometry::linear(128, 64), &args);
    let mut out = vec![0u8; 800];
    data.read(0, &mut out).unwrap();
    for i in 0..100usize {
        let v = f64::from_le_bytes(out[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!(v, i as f64 * 0.5 - 4.0, "element {i}");
    }
}

#[test]
fn compiled_code_reads_the_hidden_arguments_kfdrt_fills() {
    let kfd = common::device();
    let gpu = kfd.gpu(0).unwrap();
    // The v5 bundle holds gfx90a and gfx942 builds.
    let co = gpu.load_code_object(&fixture("hidden_v5.bundle")).unwrap();
    let k = co.kernel("copy_implicit").unwrap();
    let md = k.metadata().unwrap().clone();
    let words = 64u32;
    let out = buf(&gpu, 4096);
    let mut args = KernelArgs::new(&k).unwrap();
    args.set_buffer(0, &out).unwrap().set_u32(1, words).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let g = LaunchGeometry {
        grid: [200, 3, 1],
        workgroup: [64, 1, 1],
        dynamic_lds: 0,
    };
    let expected = args.encode(&g, &LaunchContext::for_queue(&q)).unwrap();
    run(&q, &k, g, &args);
    let mut seen = vec![0u8; words as usize * 4];
    out.read(0, &mut seen).unwrap();
    // The kernel copied its implicit block, which starts at the first hidden argument.
    let start = md.hidden_args().map(|a| a.offset).min().unwrap() as usize;
    for a in md.hidden_args() {
        let at = a.offset as usize - start;
        let len = a.size as usize;
        if at + len <= seen.len() {
            assert_eq!(
                seen[at..at + len],
                expected[a.offset as usize..a.offset as usize + len],
                "{}",
                a.kind
            );
        }
    }
}
