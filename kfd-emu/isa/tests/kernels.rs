//! The compiled HIP kernels (tests/kernels/kernels.hip) run on the interpreter for gfx90a and
//! gfx942, every result checked against the same computation on the CPU.

mod common;

use common::gpu::*;
use kfd_emu_isa::Target;

fn both(f: impl Fn(Target)) {
    for t in Target::ALL {
        f(t);
    }
}

#[test]
fn vector_add() {
    both(|t| {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("vector_add.kd");
        let n = 1000u32;
        let mut rng = Rng(7);
        let a: Vec<f32> = (0..n).map(|_| rng.f32(-100.0, 100.0)).collect();
        let b: Vec<f32> = (0..n).map(|_| rng.f32(-100.0, 100.0)).collect();
        let (da, db) = (gpu.upload(&f32_bytes(&a)), gpu.upload(&f32_bytes(&b)));
        let dc = gpu.alloc(4 * u64::from(n));
        let args = Args::new().ptr(da).ptr(db).ptr(dc).i32(n as i32).done();
        let st = gpu.run(k, &Launch::linear(1024, 256, args)).unwrap();
        let c = to_f32(&gpu.download(dc, 4 * n as usize));
        for i in 0..n as usize {
            assert_eq!(c[i], a[i] + b[i], "{t} element {i}");
        }
        assert_eq!(st.waves, 16);
    });
}
