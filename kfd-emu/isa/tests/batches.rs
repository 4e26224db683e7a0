//! `run_workgroups`: several work-groups interleaved on one thread give the same results and
//! counts as running them one by one, each with its own LDS, barriers and scratch slot.

use crate::common;

use common::elf::{blit_dir, CodeObject};
use common::gpu::*;
use kfd_emu_isa::{run_workgroup, run_workgroups, Memory, RunControl, Stats, Target, WaveError};

/// Runs every work-group of the launch in batches of `batch` consecutive ones, on two threads
/// (thread t uses scratch slots t * batch onward); returns the summed stats.
fn run_batched(gpu: &mut Gpu, kernel: u64, l: &Launch, batch: usize) -> Result<Stats, WaveError> {
    let setup = gpu.setup(kernel, l);
    let gpu = &*gpu;
    let ids: Vec<[u32; 3]> = setup.workgroup_ids().collect();
    let chunks: Vec<&[[u32; 3]]> = ids.chunks(batch).collect();
    let results: Vec<Result<Stats, WaveError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2usize)
            .map(|t| {
                let (chunks, setup) = (&chunks, &setup);
                s.spawn(move || {
                    let control = RunControl {
                        cancel: None,
                        max_wave_instructions: l.budget,
                        scratch_slot: (t * batch) as u32,
                    };
                    let mut total = Stats::default();
                    for c in chunks.iter().skip(t).step_by(2) {
                        let st = run_workgroups(setup, c, &gpu.mem, &control)?;
                        total.wave_instructions += st.wave_instructions;
                        total.waves += st.waves;
                        total.barriers += st.barriers;
                    }
                    Ok(total)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    let mut total = Stats::default();
    for r in results {
        let st = r?;
        total.wave_instructions += st.wave_instructions;
        total.waves += st.waves;
        total.barriers += st.barriers;
    }
    Ok(total)
}

#[test]
fn lds_reductions_with_barriers_in_batches() {
    for t in Target::GFX9 {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("reduce_sum.kd");
        let n = 5000u32;
        let v: Vec<i32> = (0..n as i32).map(|i| (i * 37) % 2001 - 1000).collect();
        let dv = gpu.upload(&i32_bytes(&v));
        let out = gpu.alloc(4);
        let args = Args::new().ptr(dv).ptr(out).i32(n as i32).done();
        let l = Launch::linear(n.div_ceil(256) * 256, 256, args);
        let one_by_one = gpu.run(k, &l).unwrap();
        assert_eq!(to_i32(&gpu.download(out, 4))[0], v.iter().sum::<i32>());
        for batch in [1, 3, 16] {
            gpu.mem.write(out, &[0; 4]).unwrap();
            let st = run_batched(&mut gpu, k, &l, batch).unwrap();
            assert_eq!(
                to_i32(&gpu.download(out, 4))[0],
                v.iter().sum::<i32>(),
                "{t} batch {batch}"
            );
            assert_eq!(st, one_by_one, "{t} batch {batch}");
        }
    }
}

#[test]
fn blit_copies_in_batches() {
    for t in Target::GFX9 {
        let co = CodeObject::load(&blit_dir().join(format!("{}.co", t.name())));
        let mut gpu = Gpu::new(t);
        let base = gpu.load(&co);
        let k = base + co.symbol("kfdrt_blit_copy_aligned.kd");
        // More dwords than work-items, so every work-item loops.
        let bytes = 300_004u64;
        let data: Vec<u8> = (0..bytes).map(|i| (i * 13 + i / 7) as u8).collect();
        let src = gpu.upload(&data);
        let dst = gpu.alloc(bytes);
        let stride = 64 * 37u64;
        let args = Args::new()
            .ptr(dst)
            .ptr(src)
            .ptr(bytes)
            .u32(stride as u32)
            .u32(0)
            .done();
        let mut l = Launch::linear(stride as u32, 64, args);
        l.scratch = None;
        let one_by_one = gpu.run(k, &l).unwrap();
        for batch in [5, 16, 64] {
            gpu.mem.write(dst, &vec![0; bytes as usize]).unwrap();
            let st = run_batched(&mut gpu, k, &l, batch).unwrap();
            assert_eq!(gpu.download(dst, bytes as usize), data, "{t} batch {batch}");
            assert_eq!(st, one_by_one, "{t} batch {batch}");
        }
    }
}

#[test]
fn each_work_group_of_a_batch_has_its_own_scratch_slot() {
    for t in Target::GFX9 {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("scratch_array.kd");
        let n = 1000u32;
        let idx: Vec<i32> = (0..n).map(|i| ((i * 37) % 211) as i32).collect();
        let di = gpu.upload(&i32_bytes(&idx));
        let out = gpu.alloc(4 * u64::from(n));
        let args = Args::new().ptr(di).ptr(out).i32(n as i32).done();
        let l = Launch::linear(n.div_ceil(128) * 128, 128, args);
        run_batched(&mut gpu, k, &l, 4).unwrap();
        let got = to_i32(&gpu.download(out, 4 * n as usize));
        for i in 0..n as usize {
            let private: Vec<i32> = (0..64).map(|k| k * i as i32 + 7).collect();
            let want: i32 = (0..8)
                .map(|k| private[((idx[i] + k * 5) & 63) as usize])
                .sum();
            assert_eq!(got[i], want, "{t} [{i}]");
        }
        // The last work-group of a batch needs its slot inside the backing too.
        let setup = gpu.setup(k, &l);
        let slots = setup.scratch.unwrap().size / setup.scratch_per_slot();
        let control = RunControl {
            scratch_slot: slots as u32 - 1,
            ..RunControl::default()
        };
        let ids: Vec<[u32; 3]> = setup.workgroup_ids().take(2).collect();
        assert!(matches!(
            run_workgroups(&setup, &ids, &gpu.mem, &control),
            Err(WaveError::ScratchTooSmall { .. })
        ));
    }
}

#[test]
fn budget_and_errors_per_work_group() {
    let t = Target::Gfx90a;
    let (mut gpu, base, co) = kernels(t);
    let k = base + co.symbol("vector_add.kd");
    let n = 1024u32;
    let (da, db) = (gpu.alloc(4 * 1024), gpu.alloc(4 * 1024));
    let dc = gpu.alloc(4 * 1024);
    let args = Args::new().ptr(da).ptr(db).ptr(dc).i32(n as i32).done();
    let l = Launch::linear(n, 256, args);
    let setup = gpu.setup(k, &l);
    let ids: Vec<[u32; 3]> = setup.workgroup_ids().collect();
    let one = run_workgroup(&setup, ids[0], &gpu.mem, &RunControl::default()).unwrap();
    // The budget bounds each work-group, not the batch.
    let control = RunControl {
        max_wave_instructions: one.wave_instructions + 1,
        ..RunControl::default()
    };
    let all = run_workgroups(&setup, &ids, &gpu.mem, &control).unwrap();
    assert_eq!(all.wave_instructions, 4 * one.wave_instructions);
    assert_eq!(all.waves, 4 * one.waves);
    let control = RunControl {
        max_wave_instructions: one.wave_instructions - 1,
        ..RunControl::default()
    };
    assert!(matches!(
        run_workgroups(&setup, &ids, &gpu.mem, &control),
        Err(WaveError::BudgetExhausted { .. })
    ));
    // A work-group outside the grid is refused before anything runs.
    assert!(matches!(
        run_workgroups(
            &setup,
            &[ids[0], [4, 0, 0]],
            &gpu.mem,
            &RunControl::default()
        ),
        Err(WaveError::InvalidDispatch(_))
    ));
    assert_eq!(
        run_workgroups(&setup, &[], &gpu.mem, &RunControl::default()).unwrap(),
        Stats::default()
    );
}
