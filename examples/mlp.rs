//! A small MLP forward pass as an ML runtime would run it over kfdrt: hipcc kernels
//! (`examples/kernels/mlp.hip`: a tiled matmul, bias + ReLU, layer norm, softmax) found by their
//! C++ names, weights uploaded on one stream while another waits for them through an event,
//! one forward pass run eagerly with an event between kernels (printing each kernel's GPU time),
//! then captured as a graph and replayed for several batches, each replay given its batch's
//! input buffer with `Graph::set_args`. Every output is checked against the same computation on
//! the CPU.
//!
//! `cargo run --release --example mlp` (on the emulated gfx90a when there is no GPU;
//! `KFDRT_EMU_PRESET=gfx942` for an MI300X).
//!
//! The model: `probs = softmax(relu(layernorm(relu(x W1 + b1)) W2 + b2) W3 + b3)`.

use kfdrt::kernel_args::KernelArgs;
use kfdrt::{Buffer, Dispatch, Gpu, Kernel, Kfd, MemoryKind, Stream, StreamEvent};
use std::time::Instant;

const BATCH: usize = 32;
const INPUT: usize = 256;
const HIDDEN: usize = 512;
const CLASSES: usize = 10;
const BATCHES: usize = 4;
const TILE: u32 = 16;
const EPS: f32 = 1e-5;

fn main() {
    let filter = std::env::var("KFDRT_LOG").unwrap_or_else(|_| "warn".into());
    env_logger::Builder::new().parse_filters(&filter).init();
    if let Err(e) = run() {
        eprintln!("mlp: {e}");
        std::process::exit(1);
    }
}

/// Deterministic pseudo-random numbers in [-scale, scale).
fn numbers(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// A dense layer's parameters, on the host and on the GPU.
struct Layer {
    w: Vec<f32>,
    b: Vec<f32>,
    inputs: usize,
    outputs: usize,
    dw: Buffer,
    db: Buffer,
}

impl Layer {
    fn new(gpu: &Gpu, inputs: usize, outputs: usize, seed: u64) -> kfdrt::Result<Layer> {
        let scale = 1.0 / (inputs as f32).sqrt();
        Ok(Layer {
            w: numbers(inputs * outputs, seed, scale),
            b: numbers(outputs, seed + 1, 0.1),
            inputs,
            outputs,
            dw: gpu.alloc((inputs * outputs * 4) as u64, MemoryKind::DeviceLocal)?,
            db: gpu.alloc((outputs * 4) as u64, MemoryKind::DeviceLocal)?,
        })
    }

    fn upload(&self, s: &mut Stream) -> kfdrt::Result<()> {
        s.copy_from_host(&self.dw, 0, &bytes(&self.w))?;
        s.copy_from_host(&self.db, 0, &bytes(&self.b))
    }

    /// `x W + b` on the CPU, with ReLU when asked.
    fn cpu(&self, x: &[f32], relu: bool) -> Vec<f32> {
        let mut out = vec![0.0; BATCH * self.outputs];
        for r in 0..BATCH {
            for c in 0..self.outputs {
                let mut acc = 0.0f32;
                for k in 0..self.inputs {
                    acc += x[r * self.inputs + k] * self.w[k * self.outputs + c];
                }
                let v = acc + self.b[c];
                out[r * self.outputs + c] = if relu { v.max(0.0) } else { v };
            }
        }
        out
    }
}

fn cpu_layernorm(x: &[f32], cols: usize, gamma: &[f32], beta: &[f32]) -> Vec<f32> {
    x.chunks(cols)
        .flat_map(|row| {
            let mean = row.iter().sum::<f32>() / cols as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / cols as f32;
            let inv = 1.0 / (var + EPS).sqrt();
            row.iter()
                .enumerate()
                .map(move |(c, v)| (v - mean) * inv * gamma[c] + beta[c])
                .collect::<Vec<_>>()
        })
        .collect()
}

fn cpu_softmax(x: &[f32], cols: usize) -> Vec<f32> {
    x.chunks(cols)
        .flat_map(|row| {
            let m = row.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
            let s: f32 = row.iter().map(|v| (v - m).exp()).sum();
            row.iter()
                .map(move |v| (v - m).exp() / s)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The kernels, found by their C++ names.
struct Kernels {
    matmul: Kernel,
    bias_relu: Kernel,
    bias_add: Kernel,
    layernorm: Kernel,
    softmax: Kernel,
}

/// One forward pass's launches, with their arguments (for a stream or a graph capture).
struct Forward<'k> {
    launches: Vec<(&'static str, Dispatch<'k>)>,
}

/// Activations of one forward pass on the GPU.
struct Activations {
    h1: Buffer,
    h1n: Buffer,
    h2: Buffer,
    logits: Buffer,
    probs: Buffer,
}

#[allow(clippy::too_many_arguments)]
fn build_args(
    k: &Kernels,
    layers: &[Layer; 3],
    norm: (&Buffer, &Buffer),
    x: &Buffer,
    a: &Activations,
) -> kfdrt::Result<Vec<KernelArgs>> {
    let dense = |input: &Buffer, l: &Layer, out: &Buffer| -> kfdrt::Result<KernelArgs> {
        let mut m = KernelArgs::new(&k.matmul)?;
        m.set_buffer(0, input)?
            .set_buffer(1, &l.dw)?
            .set_buffer(2, out)?
            .set_i32(3, BATCH as i32)?
            .set_i32(4, l.outputs as i32)?
            .set_i32(5, l.inputs as i32)?;
        Ok(m)
    };
    let bias = |kernel: &Kernel, l: &Layer, x: &Buffer| -> kfdrt::Result<KernelArgs> {
        let mut b = KernelArgs::new(kernel)?;
        b.set_buffer(0, x)?
            .set_buffer(1, &l.db)?
            .set_i32(2, BATCH as i32)?
            .set_i32(3, l.outputs as i32)?;
        Ok(b)
    };
    let mut ln = KernelArgs::new(&k.layernorm)?;
    ln.set_buffer(0, &a.h1)?
        .set_buffer(1, &a.h1n)?
        .set_buffer(2, norm.0)?
        .set_buffer(3, norm.1)?
        .set_i32(4, HIDDEN as i32)?
        .set_f32(5, EPS)?;
    let mut sm = KernelArgs::new(&k.softmax)?;
    sm.set_buffer(0, &a.logits)?
        .set_buffer(1, &a.probs)?
        .set_i32(2, CLASSES as i32)?;
    Ok(vec![
        dense(x, &layers[0], &a.h1)?,
        bias(&k.bias_relu, &layers[0], &a.h1)?,
        ln,
        dense(&a.h1n, &layers[1], &a.h2)?,
        bias(&k.bias_relu, &layers[1], &a.h2)?,
        dense(&a.h2, &layers[2], &a.logits)?,
        bias(&k.bias_add, &layers[2], &a.logits)?,
        sm,
    ])
}

impl<'k> Forward<'k> {
    fn new(k: &'k Kernels, args: &'k [KernelArgs]) -> kfdrt::Result<Forward<'k>> {
        let tiles = |rows: usize, cols: usize| {
            [
                (cols as u32).div_ceil(TILE),
                (rows as u32).div_ceil(TILE),
                1,
            ]
        };
        let elementwise = |cols: usize| [((BATCH * cols) as u32).div_ceil(256), 1, 1];
        let t = TILE as u16;
        let launches = vec![
            (
                "matmul 1",
                Dispatch::blocks(&k.matmul, tiles(BATCH, HIDDEN), [t, t, 1])?,
            ),
            (
                "bias+relu 1",
                Dispatch::blocks(&k.bias_relu, elementwise(HIDDEN), [256, 1, 1])?,
            ),
            (
                "layernorm",
                Dispatch::blocks(&k.layernorm, [BATCH as u32, 1, 1], [256, 1, 1])?,
            ),
            (
                "matmul 2",
                Dispatch::blocks(&k.matmul, tiles(BATCH, HIDDEN), [t, t, 1])?,
            ),
            (
                "bias+relu 2",
                Dispatch::blocks(&k.bias_relu, elementwise(HIDDEN), [256, 1, 1])?,
            ),
            (
                "matmul 3",
                Dispatch::blocks(&k.matmul, tiles(BATCH, CLASSES), [t, t, 1])?,
            ),
            (
                "bias 3",
                Dispatch::blocks(&k.bias_add, elementwise(CLASSES), [256, 1, 1])?,
            ),
            (
                "softmax",
                Dispatch::blocks(&k.softmax, [BATCH as u32, 1, 1], [256, 1, 1])?,
            ),
        ];
        let launches = launches
            .into_iter()
            .zip(args)
            .map(|((name, d), a)| (name, d.with_args(a)))
            .collect();
        Ok(Forward { launches })
    }
}

fn check(got: &[f32], want: &[f32], what: &str) -> Result<(), Box<dyn std::error::Error>> {
    let worst = got
        .iter()
        .zip(want)
        .map(|(g, w)| (g - w).abs() / w.abs().max(1e-3))
        .fold(0.0f32, f32::max);
    if worst > 1e-3 || got.len() != want.len() {
        return Err(format!(
            "{what}: the GPU's result differs from the CPU's (worst relative error {worst})"
        )
        .into());
    }
    println!("{what}: matches the CPU (worst relative error {worst:.1e})");
    Ok(())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let kfd = Kfd::from_env()?;
    let gpu = kfd
        .gpus()
        .into_iter()
        .find(|g| matches!(g.info().gfx_target.as_str(), "gfx90a" | "gfx942"))
        .ok_or_else(|| kfdrt::Error::NoDevice("no gfx90a or gfx942 GPU".into()))?;
    println!("device: {}, GPU {}", kfd.describe(), gpu.info().gfx_target);
    let co = gpu.load_code_object(match gpu.info().gfx_target.as_str() {
        "gfx90a" => include_bytes!("kernels/mlp-gfx90a.co").as_slice(),
        _ => include_bytes!("kernels/mlp-gfx942.co").as_slice(),
    })?;
    let k = Kernels {
        matmul: co.kernel("matmul")?,
        bias_relu: co.kernel("bias_relu")?,
        bias_add: co.kernel("bias_add(float*, float const*, int, int)")?,
        layernorm: co.kernel("layernorm")?,
        softmax: co.kernel("softmax(float const*, float*, int)")?,
    };

    // Weights go up on their own stream; the compute stream waits for them by an event.
    let layers = [
        Layer::new(&gpu, INPUT, HIDDEN, 1)?,
        Layer::new(&gpu, HIDDEN, HIDDEN, 3)?,
        Layer::new(&gpu, HIDDEN, CLASSES, 5)?,
    ];
    let (gamma, beta) = (numbers(HIDDEN, 7, 1.0), numbers(HIDDEN, 8, 0.5));
    let dgamma = gpu.alloc((HIDDEN * 4) as u64, MemoryKind::DeviceLocal)?;
    let dbeta = gpu.alloc((HIDDEN * 4) as u64, MemoryKind::DeviceLocal)?;
    let mut upload = gpu.create_stream()?;
    let t = Instant::now();
    for l in &layers {
        l.upload(&mut upload)?;
    }
    upload.copy_from_host(&dgamma, 0, &bytes(&gamma))?;
    upload.copy_from_host(&dbeta, 0, &bytes(&beta))?;
    let weights_ready = upload.record()?;
    let mut compute = gpu.create_stream()?;
    compute.wait_event(&weights_ready)?;

    let act = |cols: usize| gpu.alloc((BATCH * cols * 4) as u64, MemoryKind::DeviceLocal);
    let a = Activations {
        h1: act(HIDDEN)?,
        h1n: act(HIDDEN)?,
        h2: act(HIDDEN)?,
        logits: act(CLASSES)?,
        probs: act(CLASSES)?,
    };
    let inputs: Vec<Vec<f32>> = (0..BATCHES)
        .map(|b| numbers(BATCH * INPUT, 100 + b as u64, 1.0))
        .collect();
    let xs: Vec<Buffer> = (0..BATCHES)
        .map(|_| act(INPUT))
        .collect::<kfdrt::Result<_>>()?;
    for (x, input) in xs.iter().zip(&inputs) {
        compute.copy_from_host(x, 0, &bytes(input))?;
    }
    println!(
        "weights ({:.1} MiB) and {BATCHES} inputs enqueued in {:?}",
        layers
            .iter()
            .map(|l| (l.w.len() + l.b.len()) * 4)
            .sum::<usize>() as f64
            / 1048576.0,
        t.elapsed()
    );

    let cpu = |x: &[f32]| {
        let h1 = layers[0].cpu(x, true);
        let h1n = cpu_layernorm(&h1, HIDDEN, &gamma, &beta);
        let h2 = layers[1].cpu(&h1n, true);
        cpu_softmax(&layers[2].cpu(&h2, false), CLASSES)
    };
    let mut probs = vec![0u8; BATCH * CLASSES * 4];

    // An eager forward pass with an event after every kernel.
    let args = build_args(&k, &layers, (&dgamma, &dbeta), &xs[0], &a)?;
    let forward = Forward::new(&k, &args)?;
    let t = Instant::now();
    let mut marks: Vec<(&str, StreamEvent)> = vec![("start", compute.record()?)];
    for (name, d) in &forward.launches {
        compute.launch(d)?;
        marks.push((name, compute.record()?));
    }
    compute.copy_to_host(&mut probs, &a.probs, 0)?;
    println!("eager forward pass: {:?} (host)", t.elapsed());
    for w in marks.windows(2) {
        println!("  {:<12} {:>10.1?}", w[1].0, w[1].1.elapsed_since(&w[0].1)?);
    }
    check(&floats(&probs), &cpu(&inputs[0]), "eager pass, batch 0")?;

    // The same pass as a graph, replayed per batch with that batch's input.
    let mut capture = compute.capture();
    let mut first = None;
    for (_, d) in &forward.launches {
        let node = capture.launch(d)?;
        first.get_or_insert(node);
    }
    let mut graph = capture.finish();
    let first = first.ok_or("an empty graph")?;
    for (b, x) in xs.iter().enumerate() {
        let mut input = args[0].clone();
        input.set_buffer(0, x)?;
        graph.set_args(first, &input)?;
        let start = compute.record()?;
        compute.replay(&graph)?;
        let end = compute.record()?;
        compute.copy_to_host(&mut probs, &a.probs, 0)?;
        println!(
            "graph replay, batch {b}: {:.1?} on the GPU, {} packets, one doorbell",
            end.elapsed_since(&start)?,
            graph.len()
        );
        check(
            &floats(&probs),
            &cpu(&inputs[b]),
            &format!("graph replay, batch {b}"),
        )?;
    }
    compute.synchronize()?;
    Ok(())
}
