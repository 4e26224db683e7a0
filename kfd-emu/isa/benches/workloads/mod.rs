//! The interpreter's benchmark workloads, shared by `benches/interp.rs` (criterion timings) and
//! `examples/interp_cost.rs` (host instructions under callgrind): a gfx90a code object loaded
//! into [`PagedMemory`] and dispatch setups for a tiled matrix multiply, an MLP-sized GEMM, a
//! vector add and kfdrt's blit copy.

use kfd_emu_isa::{
    run_workgroup, run_workgroups, CodeCache, DispatchSetup, KernelDescriptor, Memory, PagedMemory,
    RunControl, Target,
};
use object::{Object, ObjectSegment, ObjectSymbol};
use std::sync::Arc;

const CODE: u64 = 0x7F00_0000_0000;

pub struct Bench {
    pub mem: PagedMemory,
    code: Arc<CodeCache>,
    next: u64,
    symbols: Vec<(String, u64)>,
}

impl Bench {
    pub fn new() -> Bench {
        Bench::load(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/kernels/kernels-gfx90a.co"
        ))
    }

    pub fn load(path: &str) -> Bench {
        let data = std::fs::read(path).expect("code object");
        let file = object::File::parse(&*data).expect("elf");
        let mut mem = PagedMemory::new();
        for s in file.segments() {
            if s.size() > 0 {
                mem.map(CODE + s.address(), s.size());
                mem.write(CODE + s.address(), s.data().expect("data"))
                    .expect("load");
            }
        }
        let symbols = file
            .symbols()
            .filter_map(|s| Some((s.name().ok()?.to_string(), CODE + s.address())))
            .collect();
        Bench {
            mem,
            code: Arc::new(CodeCache::new(Target::Gfx90a)),
            next: 0x10_0000_0000,
            symbols,
        }
    }

    pub fn alloc(&mut self, data: &[u8]) -> u64 {
        let va = self.next;
        self.mem.map(va, data.len().max(1) as u64);
        self.mem.write(va, data).expect("write");
        self.next = (va + data.len() as u64 + 0x1FFF) & !0xFFF;
        va
    }

    pub fn setup(
        &mut self,
        kernel: &str,
        grid: [u32; 3],
        wg: [u16; 3],
        args: &[u8],
    ) -> DispatchSetup {
        let ko = self
            .symbols
            .iter()
            .find(|(n, _)| n == &format!("{kernel}.kd"))
            .map(|s| s.1)
            .expect("kernel");
        let mut d = [0u8; 64];
        self.mem.read(ko, &mut d).expect("descriptor");
        let desc = KernelDescriptor::from_bytes(&d);
        let kernarg = self.alloc(args);
        let mut p = [0u8; 64];
        p[2] = if grid[1] > 1 { 2 } else { 1 };
        for k in 0..3 {
            p[4 + 2 * k..6 + 2 * k].copy_from_slice(&wg[k].to_le_bytes());
            p[12 + 4 * k..16 + 4 * k].copy_from_slice(&grid[k].to_le_bytes());
        }
        // The segment sizes a runtime takes from the descriptor: without the group segment the
        // work-group has no LDS, and a kernel's LDS accesses go nowhere.
        p[24..28].copy_from_slice(&desc.private_segment_fixed_size.to_le_bytes());
        p[28..32].copy_from_slice(&desc.group_segment_fixed_size.to_le_bytes());
        p[32..40].copy_from_slice(&ko.to_le_bytes());
        p[40..48].copy_from_slice(&kernarg.to_le_bytes());
        let pa = self.alloc(&p);
        DispatchSetup::from_aql_packet(Target::Gfx90a, &p, pa, desc, self.code.clone())
    }

    /// Runs the work-groups on `threads` threads (scratch slot = thread); returns
    /// wave-instructions.
    pub fn run_parallel(&self, s: &DispatchSetup, threads: usize) -> u64 {
        let groups: Vec<[u32; 3]> = s.workgroup_ids().collect();
        std::thread::scope(|scope| {
            let hs: Vec<_> = (0..threads)
                .map(|t| {
                    let groups = &groups;
                    scope.spawn(move || {
                        let c = RunControl {
                            scratch_slot: t as u32,
                            ..RunControl::default()
                        };
                        groups
                            .iter()
                            .skip(t)
                            .step_by(threads)
                            .map(|g| {
                                run_workgroup(s, *g, &self.mem, &c)
                                    .expect("run")
                                    .wave_instructions
                            })
                            .sum::<u64>()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("thread")).sum()
        })
    }

    /// Runs every work-group on this thread, `batch` consecutive ones interleaved at a time
    /// (as kfd-emu does); returns wave-instructions.
    pub fn run_batched(&self, s: &DispatchSetup, batch: usize) -> u64 {
        let groups: Vec<[u32; 3]> = s.workgroup_ids().collect();
        let c = RunControl::default();
        groups
            .chunks(batch)
            .map(|b| {
                run_workgroups(s, b, &self.mem, &c)
                    .expect("run")
                    .wave_instructions
            })
            .sum()
    }

    /// Runs every work-group on this thread; returns wave-instructions.
    pub fn run(&self, s: &DispatchSetup) -> u64 {
        let c = RunControl::default();
        s.workgroup_ids()
            .map(|g| {
                run_workgroup(s, g, &self.mem, &c)
                    .expect("run")
                    .wave_instructions
            })
            .sum()
    }
}

impl Bench {
    /// `n` floats at `va`.
    pub fn floats(&self, va: u64, n: usize) -> Vec<f32> {
        let mut raw = vec![0u8; 4 * n];
        self.mem.read(va, &mut raw).expect("read back");
        raw.chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    }
}

/// The largest difference of `got` from `want`, relative to `want` (or absolute below 1).
pub fn worst_error(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len());
    got.iter()
        .zip(want)
        .map(|(x, y)| (x - y).abs() / y.abs().max(1.0))
        .fold(0f32, f32::max)
}

pub fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn ptrs(p: &[u64], n: i32) -> Vec<u8> {
    let mut a: Vec<u8> = p.iter().flat_map(|x| x.to_le_bytes()).collect();
    a.extend_from_slice(&n.to_le_bytes());
    a
}

/// The tiled 64x64 matrix multiply: its bench, dispatch and host inputs.
pub struct Matmul {
    pub bench: Bench,
    pub setup: DispatchSetup,
    pub n: usize,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    /// Where the kernel writes the product.
    pub out: u64,
}

/// The plain host triple loop the matrix kernels are compared with: `out[m][n] = sum_k
/// a[m][k] * b[k][n]`, row by column, each step `acc = step(a, b, acc)`.
fn host_product(
    a: &[f32],
    b: &[f32],
    (m, n, k): (usize, usize, usize),
    step: impl Fn(f32, f32, f32) -> f32,
) -> Vec<f32> {
    let mut out = vec![0f32; m * n];
    for r in 0..m {
        for c in 0..n {
            let mut acc = 0f32;
            for i in 0..k {
                acc = step(a[r * k + i], b[i * n + c], acc);
            }
            out[r * n + c] = acc;
        }
    }
    out
}

impl Matmul {
    /// The host loop the kernel is compared with (fused multiply-adds, as the bench's native
    /// loop has always been).
    pub fn host(&self) -> Vec<f32> {
        let n = self.n;
        host_product(&self.a, &self.b, (n, n, n), f32::mul_add)
    }

    /// Panics unless the kernel's last run computed the product.
    pub fn check(&self) {
        let got = self.bench.floats(self.out, self.n * self.n);
        let worst = worst_error(&got, &self.host());
        assert!(
            worst < 1e-4,
            "the tiled matmul differs from the host's by {worst}"
        );
    }
}

pub fn matmul() -> Matmul {
    let n = 64usize;
    let mut bench = Bench::new();
    let a: Vec<f32> = (0..n * n).map(|i| (i % 13) as f32 * 0.25).collect();
    let b: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 * 0.5).collect();
    let (da, db, dc) = (
        bench.alloc(&bytes(&a)),
        bench.alloc(&bytes(&b)),
        bench.alloc(&vec![0; 4 * n * n]),
    );
    let setup = bench.setup(
        "matmul_tiled",
        [n as u32, n as u32, 1],
        [16, 16, 1],
        &ptrs(&[da, db, dc], n as i32),
    );
    Matmul {
        bench,
        setup,
        n,
        a,
        b,
        out: dc,
    }
}

/// An MLP-sized GEMM: `out[m][n] = sum_k a[m][k] * w[k][n]` with the `mlp` example's hipcc
/// kernel (`examples/kernels/mlp.hip`, LDS-tiled, 16x16 work-groups).
pub struct Gemm {
    pub bench: Bench,
    pub setup: DispatchSetup,
    /// (m, n, k).
    pub shape: (usize, usize, usize),
    pub a: Vec<f32>,
    pub w: Vec<f32>,
    /// Where the kernel writes `out`.
    pub out: u64,
}

pub fn gemm(m: usize, n: usize, k: usize) -> Gemm {
    let mut bench = Bench::load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/kernels/mlp-gfx90a.co"
    ));
    let a: Vec<f32> = (0..m * k).map(|i| (i % 13) as f32 * 0.25 - 1.0).collect();
    let w: Vec<f32> = (0..k * n).map(|i| (i % 7) as f32 * 0.125 - 0.25).collect();
    let (da, dw, out) = (
        bench.alloc(&bytes(&a)),
        bench.alloc(&bytes(&w)),
        bench.alloc(&vec![0; 4 * m * n]),
    );
    let mut args: Vec<u8> = [da, dw, out].iter().flat_map(|x| x.to_le_bytes()).collect();
    for d in [m, n, k] {
        args.extend_from_slice(&(d as i32).to_le_bytes());
    }
    let grid = [
        n.next_multiple_of(16) as u32,
        m.next_multiple_of(16) as u32,
        1,
    ];
    let setup = bench.setup("_Z6matmulPKfS0_Pfiii", grid, [16, 16, 1], &args);
    Gemm {
        bench,
        setup,
        shape: (m, n, k),
        a,
        w,
        out,
    }
}

impl Gemm {
    /// The host loop the kernel is compared with (a multiply and an add per step, as plain
    /// C++ compiles).
    pub fn host(&self) -> Vec<f32> {
        host_product(&self.a, &self.w, self.shape, |x, y, acc| acc + x * y)
    }

    /// Panics unless the kernel's last run computed the product (its fused multiply-adds in
    /// tile order against the host's sums: close, not equal).
    pub fn check(&self) {
        let (m, n, _) = self.shape;
        let worst = worst_error(&self.bench.floats(self.out, m * n), &self.host());
        assert!(worst < 1e-4, "the GEMM differs from the host's by {worst}");
    }
}

/// The vector add of `n` floats: its bench, dispatch and host inputs.
pub struct VectorAdd {
    pub bench: Bench,
    pub setup: DispatchSetup,
    pub x: Vec<f32>,
    pub y: Vec<f32>,
    /// Where the kernel writes the sum.
    pub out: u64,
}

impl VectorAdd {
    /// Panics unless the kernel's last run computed the sum.
    pub fn check(&self) {
        let got = self.bench.floats(self.out, self.x.len());
        let want: Vec<f32> = self.x.iter().zip(&self.y).map(|(a, b)| a + b).collect();
        assert!(got == want, "the vector add differs from the host's");
    }
}

pub fn vector_add(n: usize) -> VectorAdd {
    let mut bench = Bench::new();
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| (n - i) as f32).collect();
    let (dx, dy, dz) = (
        bench.alloc(&bytes(&x)),
        bench.alloc(&bytes(&y)),
        bench.alloc(&vec![0; 4 * n]),
    );
    let setup = bench.setup(
        "vector_add",
        [n as u32, 1, 1],
        [256, 1, 1],
        &ptrs(&[dx, dy, dz], n as i32),
    );
    VectorAdd {
        bench,
        setup,
        x,
        y,
        out: dz,
    }
}

/// kfdrt's blit copy of `bytes` bytes, launched as kfdrt launches it: its bench, dispatch and
/// source data.
pub struct Blit {
    pub bench: Bench,
    pub setup: DispatchSetup,
    pub src: Vec<u8>,
    /// Where the kernel copies to.
    pub dst: u64,
}

impl Blit {
    /// Panics unless the kernel's last run copied the source.
    pub fn check(&self) {
        let mut got = vec![0u8; self.src.len()];
        self.bench.mem.read(self.dst, &mut got).expect("read back");
        assert!(got == self.src, "the blit copy differs from its source");
    }
}

pub fn blit(bytes: usize) -> Blit {
    let mut bench = Bench::load(concat!(env!("CARGO_MANIFEST_DIR"), "/../../blit/gfx90a.co"));
    let src: Vec<u8> = (0..bytes).map(|i| i as u8).collect();
    let (ds, dd) = (bench.alloc(&src), bench.alloc(&vec![0; bytes]));
    // kfdrt's launch: dwords / 64 groups capped at 1024, work-items striding through the rest.
    let items = (bytes / 4) as u64;
    let groups = items.div_ceil(64).clamp(1, 1024);
    let stride = (groups * 64) as u32;
    let mut args: Vec<u8> = [dd, ds, bytes as u64]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    args.extend_from_slice(&stride.to_le_bytes());
    args.extend_from_slice(&[0; 4]);
    let setup = bench.setup("kfdrt_blit_copy_aligned", [stride, 1, 1], [64, 1, 1], &args);
    Blit {
        bench,
        setup,
        src,
        dst: dd,
    }
}
