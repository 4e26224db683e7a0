//! Real machine code on the emulated device, through kfdrt, beside the same work done by a
//! native host loop in the same run (issue 12's figures):
//! - `vector_add_1m`: hipcc's `vector_add` on 1M floats (`tests/fixtures/code_objects`), with
//!   one host thread for the work-groups and with every core, and the host loop;
//! - `blit_copy_1mib`: a 1 MiB copy with kfdrt's blit kernel, and `memcpy`;
//! - `wave_instructions`: the vector add again, its throughput counted in wave-instructions
//!   (what the emulator's counter says one dispatch runs), on one core and on all.
//!
//! `cargo bench --bench interpreter`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kfdrt::emu::{EmuConfig, Preset};
use kfdrt::kernel_args::KernelArgs;
use kfdrt::{AqlQueue, AqlQueueOptions, Buffer, Dispatch, Kernel, Kfd, MemoryKind};
use std::time::Duration;

const WAIT: Option<Duration> = Some(Duration::from_secs(120));
const N: u32 = 1 << 20;

/// A device whose machine code runs on `threads` host threads (0: every core).
fn device(threads: usize) -> Kfd {
    let mut config = EmuConfig::new(Preset::Gfx90a, 1);
    config.wave_threads = threads;
    Kfd::builder().emulated(config).open().expect("device")
}

struct VectorAdd {
    kfd: Kfd,
    queue: AqlQueue,
    kernel: Kernel,
    args: KernelArgs,
    _buffers: [Buffer; 3],
}

impl VectorAdd {
    fn new(threads: usize) -> VectorAdd {
        let kfd = device(threads);
        let gpu = kfd.gpu(0).expect("gpu");
        let co = gpu
            .load_code_object(include_bytes!(
                "../tests/fixtures/code_objects/kernels-gfx90a.co"
            ))
            .expect("code object");
        let kernel = co.kernel("vector_add").expect("vector_add");
        let bytes = u64::from(N) * 4;
        let alloc = || gpu.alloc(bytes, MemoryKind::GttCoherent).expect("alloc");
        let (a, b, c) = (alloc(), alloc(), alloc());
        let ones: Vec<u8> = (0..N).flat_map(|_| 1.0f32.to_le_bytes()).collect();
        a.write(0, &ones).expect("write");
        b.write(0, &ones).expect("write");
        let mut args = KernelArgs::new(&kernel).expect("args");
        args.set_buffer(0, &a).expect("a");
        args.set_buffer(1, &b).expect("b");
        args.set_buffer(2, &c).expect("c");
        args.set_u32(3, N).expect("n");
        let queue = gpu
            .create_aql_queue(AqlQueueOptions::default())
            .expect("queue");
        VectorAdd {
            kfd,
            queue,
            kernel,
            args,
            _buffers: [a, b, c],
        }
    }

    fn run(&self) {
        self.queue
            .dispatch(&Dispatch::linear(&self.kernel, N, 256).with_args(&self.args))
            .expect("dispatch")
            .wait(WAIT)
            .expect("wait");
    }

    /// Wave-instructions one dispatch runs, from the emulator's counter.
    fn wave_instructions(&self) -> u64 {
        let emu = self.kfd.emulator().expect("emulated");
        let before = emu.stats().wave_instructions;
        self.run();
        emu.stats().wave_instructions - before
    }
}

fn vector_add(c: &mut Criterion) {
    let one = VectorAdd::new(1);
    let all = VectorAdd::new(0);
    let mut g = c.benchmark_group("vector_add_1m");
    g.throughput(Throughput::Elements(u64::from(N)));
    g.sample_size(10);
    g.bench_function("kfd-emu, 1 thread", |b| b.iter(|| one.run()));
    g.bench_function("kfd-emu, all cores", |b| b.iter(|| all.run()));
    let (x, y) = (vec![1.0f32; N as usize], vec![1.0f32; N as usize]);
    let mut z = vec![0.0f32; N as usize];
    g.bench_function("host loop", |b| {
        b.iter(|| {
            for ((z, x), y) in z.iter_mut().zip(&x).zip(&y) {
                *z = std::hint::black_box(*x + *y);
            }
        })
    });
    g.finish();

    let mut g = c.benchmark_group("wave_instructions");
    g.sample_size(10);
    g.throughput(Throughput::Elements(one.wave_instructions()));
    g.bench_function("1 thread", |b| b.iter(|| one.run()));
    g.throughput(Throughput::Elements(all.wave_instructions()));
    g.bench_function("all cores", |b| b.iter(|| all.run()));
    g.finish();
}

fn blit_copy(c: &mut Criterion) {
    let kfd = device(0);
    let gpu = kfd.gpu(0).expect("gpu");
    let shader = gpu.shader_copy_engine().expect("shader");
    let size = 1u64 << 20;
    let src = gpu.alloc(size, MemoryKind::GttCoherent).expect("alloc");
    let dst = gpu.alloc(size, MemoryKind::GttCoherent).expect("alloc");
    src.write(0, &vec![7u8; size as usize]).expect("fill");
    let mut g = c.benchmark_group("blit_copy_1mib");
    g.throughput(Throughput::Bytes(size));
    g.bench_function("kfd-emu blit kernel", |b| {
        b.iter(|| {
            shader
                .copy(&dst, 0, &src, 0, size, &[])
                .expect("copy")
                .wait(WAIT)
                .expect("wait")
        })
    });
    let (s, d) = (src.as_ptr().expect("host"), dst.as_ptr().expect("host"));
    g.bench_function("memcpy", |b| {
        // SAFETY: both buffers are `size` bytes of host-visible memory, distinct allocations.
        b.iter(|| unsafe { std::ptr::copy_nonoverlapping(s, d, size as usize) })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = vector_add, blit_copy
}
criterion_main!(benches);
