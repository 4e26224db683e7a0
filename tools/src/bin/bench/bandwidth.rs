//! Copy bandwidth per engine (SDMA, shader blit) and direction, by size; and the GPU-to-GPU
//! matrix, each copy on the source GPU's engine (as rocm_bandwidth_test and TransferBench
//! measure).

use crate::stats::format_bytes;
use kfdrt::{Buffer, CopyEngine, CopyPath, Gpu, MemoryKind, PeerAccess, Result};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const TIMEOUT: Option<Duration> = Some(Duration::from_secs(300));

/// Which memory a copy reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Coherent host memory to device-local VRAM.
    HostToDevice,
    /// Device-local VRAM to coherent host memory.
    DeviceToHost,
    /// VRAM to VRAM on one GPU.
    DeviceToDevice,
}

impl Direction {
    pub const ALL: [Direction; 3] = [
        Direction::HostToDevice,
        Direction::DeviceToHost,
        Direction::DeviceToDevice,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Direction::HostToDevice => "host to device",
            Direction::DeviceToHost => "device to host",
            Direction::DeviceToDevice => "device to device",
        }
    }

    fn kinds(self) -> (MemoryKind, MemoryKind) {
        match self {
            Direction::HostToDevice => (MemoryKind::GttCoherent, MemoryKind::DeviceLocal),
            Direction::DeviceToHost => (MemoryKind::DeviceLocal, MemoryKind::GttCoherent),
            Direction::DeviceToDevice => (MemoryKind::DeviceLocal, MemoryKind::DeviceLocal),
        }
    }
}

/// One engine, one direction: bytes per second by size (the median of the repetitions).
pub struct Series {
    pub engine: CopyPath,
    pub direction: Direction,
    /// `(bytes, seconds per copy)`.
    pub points: Vec<(u64, f64)>,
}

impl Series {
    pub fn label(&self) -> String {
        format!("{:?}, {}", self.engine, self.direction.name())
    }
}

/// Copy sizes from 4 KiB to `max`, by factors of 4 (and `max` itself).
pub fn sizes(max: u64) -> Vec<u64> {
    let mut v: Vec<u64> = std::iter::successors(Some(4096u64), |s| Some(s * 4))
        .take_while(|&s| s < max)
        .collect();
    v.push(max.max(4096));
    v
}

/// The median time of copies of `bytes` from `src` to `dst` with `engine`.
fn time_copy(engine: &CopyEngine, dst: &Buffer, src: &Buffer, bytes: u64) -> Result<f64> {
    engine.copy(dst, 0, src, 0, bytes, &[])?.wait(TIMEOUT)?;
    // Small copies are repeated more: their times are short and noisy.
    let reps = if bytes <= 1 << 20 { 11 } else { 3 };
    let mut times: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            engine.copy(dst, 0, src, 0, bytes, &[])?.wait(TIMEOUT)?;
            Ok(t.elapsed().as_secs_f64())
        })
        .collect::<Result<_>>()?;
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

pub fn measure(gpu: &Gpu, max: u64) -> Result<Vec<Series>> {
    let mut out = Vec::new();
    for path in [CopyPath::Sdma, CopyPath::Shader] {
        let engine = gpu.copy_engine_preferring(path)?;
        if engine.path() != path {
            eprintln!("kfdrt-bench: no {path:?} engine on this GPU; skipped");
            continue;
        }
        for direction in Direction::ALL {
            let (from, to) = direction.kinds();
            let src = gpu.alloc(max, from)?;
            let dst = gpu.alloc(max, to)?;
            let points = sizes(max)
                .into_iter()
                .map(|bytes| Ok((bytes, time_copy(&engine, &dst, &src, bytes)?)))
                .collect::<Result<_>>()?;
            out.push(Series {
                engine: path,
                direction,
                points,
            });
        }
    }
    Ok(out)
}

/// GB/s of a copy of `bytes` taking `seconds`.
pub fn gbps(bytes: u64, seconds: f64) -> f64 {
    bytes as f64 / seconds / 1e9
}

pub fn print(series: &[Series]) {
    println!("\nCopy bandwidth (GB/s, median of repeated copies)");
    let Some(first) = series.first() else {
        return;
    };
    print!("  {:<30}", "");
    for (bytes, _) in &first.points {
        print!("{:>10}", format_bytes(*bytes));
    }
    println!();
    for s in series {
        print!("  {:<30}", s.label());
        for &(bytes, secs) in &s.points {
            print!("{:>10.3}", gbps(bytes, secs));
        }
        println!();
    }
}

pub fn json(series: &[Series]) -> Value {
    Value::Array(
        series
            .iter()
            .map(|s| {
                json!({
                    "engine": format!("{:?}", s.engine),
                    "direction": s.direction.name(),
                    "points": s.points.iter().map(|&(b, t)| json!({
                        "bytes": b, "seconds": t, "gb_per_s": gbps(b, t),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

/// GB/s from each GPU's VRAM to each other's, on the source GPU's engine; `None` where the two
/// have no peer path.
pub fn matrix(gpus: &[Gpu], bytes: u64) -> Result<Vec<Vec<Option<f64>>>> {
    let mut rows = Vec::new();
    for src_gpu in gpus {
        let engine = src_gpu.copy_engine()?;
        let src = src_gpu.alloc(bytes, MemoryKind::DeviceLocal)?;
        let mut row = Vec::new();
        for dst_gpu in gpus {
            if src_gpu.peer_access(dst_gpu) == PeerAccess::None {
                row.push(None);
                continue;
            }
            let dst = dst_gpu.alloc(bytes, MemoryKind::DeviceLocal)?;
            if dst_gpu.id() != src_gpu.id() {
                dst.map_to(src_gpu)?;
            }
            row.push(Some(gbps(bytes, time_copy(&engine, &dst, &src, bytes)?)));
        }
        rows.push(row);
    }
    Ok(rows)
}

pub fn print_matrix(m: &[Vec<Option<f64>>], bytes: u64) {
    println!(
        "\nGPU to GPU ({} copies on the source GPU's engine, GB/s; rows: source)",
        format_bytes(bytes)
    );
    print!("  {:>6}", "");
    for j in 0..m.len() {
        print!("{:>10}", format!("GPU {j}"));
    }
    println!();
    for (i, row) in m.iter().enumerate() {
        print!("  {:>6}", format!("GPU {i}"));
        for v in row {
            match v {
                Some(v) => print!("{v:>10.3}"),
                None => print!("{:>10}", "-"),
            }
        }
        println!();
    }
}
