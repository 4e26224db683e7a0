//! Stream benchmarks on the emulated device (host cost: the GPU's work is waited for outside
//! the timed part), each beside the lower-level path it builds on, measured in the same run:
//! - a stream launch vs a single `AqlQueue::dispatch`;
//! - a graph replay of 64 launches, per packet, vs a batch of 64 prepared dispatches; and the
//!   same graph with metadata-checked arguments (three buffers each) vs 64 `Dispatch::with_args`
//!   launches in a batch;
//! - recording a stream event, and recording two and reading the time between them;
//! - alloc/free pairs from a stream-ordered `MemoryPool` vs `Gpu::alloc` and drop, at 64 KiB
//!   (suballocated) and 8 MiB (whole allocations).
//!
//! `cargo bench --bench streams`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kfdrt::emu::{EmuConfig, Preset, WorkGroup};
use kfdrt::kernel_args::KernelArgs;
use kfdrt::{AqlQueueOptions, Dispatch, Kfd, MemoryKind};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

const WAIT: Option<Duration> = Some(Duration::from_secs(30));

/// Times `submit` alone over `iters` rounds, finishing each round (a wait, untimed) with
/// `finish`; `state` is what both use.
fn host_time<S, T>(
    iters: u64,
    state: &mut S,
    mut submit: impl FnMut(&mut S) -> T,
    mut finish: impl FnMut(&mut S, T),
) -> Duration {
    let mut spent = Duration::ZERO;
    for _ in 0..iters {
        let t = Instant::now();
        let r = submit(state);
        spent += t.elapsed();
        finish(state, r);
    }
    spent
}

fn device() -> Kfd {
    Kfd::builder()
        .emulated(EmuConfig::new(Preset::Gfx90a, 1))
        .open()
        .expect("emulated device")
}

fn launches(c: &mut Criterion) {
    let kfd = device();
    let gpu = kfd.gpu(0).expect("gpu");
    let kernel = gpu
        .emulated_kernel("empty", 0, Arc::new(|_: &WorkGroup<'_>| Ok(())))
        .expect("kernel");
    let queue = gpu
        .create_aql_queue(AqlQueueOptions::default().with_size_packets(1024))
        .expect("queue");
    let mut stream = gpu.create_stream().expect("stream");
    let mut g = c.benchmark_group("stream");
    g.throughput(Throughput::Elements(1));
    g.bench_function("queue_dispatch_single", |b| {
        b.iter_custom(|iters| {
            host_time(
                iters,
                &mut (),
                |_| {
                    queue
                        .dispatch(&Dispatch::linear(&kernel, black_box(1), black_box(1)))
                        .expect("dispatch")
                },
                |_, s| s.wait(WAIT).expect("wait"),
            )
        })
    });
    // The stream's own queue, directly: what the stream adds is the difference.
    g.bench_function("stream_queue_dispatch_single", |b| {
        b.iter_custom(|iters| {
            host_time(
                iters,
                &mut (),
                |_| {
                    stream
                        .queue()
                        .dispatch(&Dispatch::linear(&kernel, black_box(1), black_box(1)))
                        .expect("dispatch")
                },
                |_, s| s.wait(WAIT).expect("wait"),
            )
        })
    });
    g.bench_function("stream_launch", |b| {
        b.iter_custom(|iters| {
            host_time(
                iters,
                &mut stream,
                |stream| {
                    stream
                        .launch(&Dispatch::linear(&kernel, black_box(1), black_box(1)))
                        .expect("launch")
                },
                |stream, ()| stream.synchronize().expect("sync"),
            )
        })
    });

    // 64 launches: prepared in a batch, and as a replayed graph.
    let prepared = Dispatch::linear(&kernel, 1, 1).prepare().expect("prepare");
    let mut capture = stream.capture();
    for _ in 0..64 {
        capture
            .launch(&Dispatch::linear(&kernel, 1, 1))
            .expect("capture");
    }
    let graph = capture.finish();
    g.throughput(Throughput::Elements(64));
    g.bench_function("prepared_dispatch_batch_64", |b| {
        b.iter_custom(|iters| {
            host_time(
                iters,
                &mut (),
                |_| {
                    let mut bt = queue.batch().expect("batch");
                    for _ in 0..64 {
                        // SAFETY: no arguments, so no address the kernel could use.
                        unsafe { bt.dispatch_prepared(&prepared, &[]) };
                    }
                    bt.submit().expect("submit")
                },
                |_, s| s.wait(WAIT).expect("wait"),
            )
        })
    });
    g.bench_function("graph_replay_64", |b| {
        b.iter_custom(|iters| {
            host_time(
                iters,
                &mut stream,
                |stream| stream.replay(&graph).expect("replay"),
                |stream, ()| stream.synchronize().expect("sync"),
            )
        })
    });

    // The same with metadata-checked arguments naming three buffers: the safe batch path
    // (arguments encoded and buffers held per launch) against the graph (encoded once, all
    // held with one handle per replay). The hipcc kernel runs 64 work-items on the interpreter,
    // outside the timed part.
    let co = gpu
        .load_code_object(include_bytes!(
            "../tests/fixtures/code_objects/kernels-gfx90a.elf"
        ))
        .expect("code object");
    let add = co.kernel("vector_add").expect("kernel");
    let buf = gpu.alloc(256, MemoryKind::DeviceLocal).expect("alloc");
    let mut args = KernelArgs::new(&add).expect("args");
    for i in 0..3 {
        args.set_buffer(i, &buf).expect("arg");
    }
    args.set_u32(3, 64).expect("arg");
    let d = Dispatch::linear(&add, 64, 64).with_args(&args);
    let mut capture = stream.capture();
    for _ in 0..64 {
        capture.launch(&d).expect("capture");
    }
    let graph = capture.finish();
    g.bench_function("args_dispatch_batch_64", |b| {
        b.iter_custom(|iters| {
            host_time(
                iters,
                &mut (),
                |_| {
                    let mut bt = queue.batch().expect("batch");
                    for _ in 0..64 {
                        bt.dispatch(&d).expect("dispatch");
                    }
                    bt.submit().expect("submit")
                },
                |_, s| s.wait(WAIT).expect("wait"),
            )
        })
    });
    g.bench_function("args_graph_replay_64", |b| {
        b.iter_custom(|iters| {
            host_time(
                iters,
                &mut stream,
                |stream| stream.replay(&graph).expect("replay"),
                |stream, ()| stream.synchronize().expect("sync"),
            )
        })
    });
    g.finish();
}

fn events(c: &mut Criterion) {
    let kfd = device();
    let gpu = kfd.gpu(0).expect("gpu");
    let mut stream = gpu.create_stream().expect("stream");
    gpu.timestamp_frequency().expect("frequency");
    let mut g = c.benchmark_group("stream_event");
    g.bench_function("record", |b| {
        b.iter_custom(|iters| {
            host_time(
                iters,
                &mut stream,
                |stream| stream.record().expect("record"),
                |_, e| e.wait(WAIT).expect("wait"),
            )
        })
    });
    g.bench_function("record_two_and_elapsed", |b| {
        b.iter(|| {
            let a = stream.record().expect("record");
            let e = stream.record().expect("record");
            black_box(e.elapsed_since(&a).expect("elapsed"))
        })
    });
    g.finish();
}

fn pool(c: &mut Criterion) {
    let kfd = device();
    let gpu = kfd.gpu(0).expect("gpu");
    let stream = gpu.create_stream().expect("stream");
    let pool = gpu.create_memory_pool(MemoryKind::DeviceLocal);
    let mut g = c.benchmark_group("memory_pool");
    g.throughput(Throughput::Elements(1));
    for (name, bytes) in [("64KiB", 64u64 << 10), ("8MiB", 8 << 20)] {
        g.bench_function(format!("pool_alloc_free_{name}"), |b| {
            b.iter(|| {
                let buf = pool.alloc_async(black_box(bytes), &stream).expect("alloc");
                pool.free_async(buf, &stream);
            })
        });
        g.bench_function(format!("gpu_alloc_drop_{name}"), |b| {
            b.iter(|| {
                drop(
                    gpu.alloc(black_box(bytes), MemoryKind::DeviceLocal)
                        .expect("alloc"),
                )
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = launches, events, pool
}
criterion_main!(benches);
