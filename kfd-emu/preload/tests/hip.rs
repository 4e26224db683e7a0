//! Unmodified HIP programs (Debian's hipcc and libamdhip64 5.2.3) on kfd-emu through the preload.
//!
//! The programs in `tests/hip/` check their own results and exit non-zero with a message on the
//! first mismatch. They are compiled with `hipcc --offload-arch=gfx90a` at test time, all at once
//! in parallel, into a scratch directory removed when the test process exits.
//!
//! Every kernel runs as machine code on kfd-emu's wave interpreter: the programs' own, HIP's
//! blit kernels (HIP fills, and copies VRAM to VRAM on one GPU, with kernels) and ROCr's. A
//! kernel that spills gets its scratch through the CP's request to ROCr, as on a GPU.
//!
//! Without hipcc or HIP's headers the tests print why and skip; `.ci/run` installs them and sets
//! `KFDRT_REQUIRE_ROCM=1`, which turns a missing package into a failure.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Every program in `tests/hip/` (without `.hip`).
const PROGRAMS: [&str; 16] = [
    "arrays",
    "device",
    "memcpy",
    "memcpy_d2d",
    "memset",
    "streams_events",
    "peer",
    "vector_add",
    "kernel_args",
    "dynamic_lds",
    "scratch",
    "managed",
    "lane_ops",
    "printf",
    "sanitize",
    "textures",
];

/// The scratch directory holding the compiled programs: `Ok(None)` when the run skips, `Err`
/// with the compiler's messages when a program does not compile.
static BUILT: OnceLock<Result<Option<PathBuf>, String>> = OnceLock::new();

extern "C" fn remove_programs() {
    if let Some(Ok(Some(dir))) = BUILT.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Compiles every program with one hipcc process each, all running at once.
fn build_all() -> Result<Option<PathBuf>, String> {
    let ok = have("hipcc (Debian's hipcc)", has_command("hipcc", "--version"))
        && have(
            "HIP's headers and runtime (libamdhip64-dev)",
            Path::new("/usr/include/hip/hip_runtime.h").exists(),
        );
    if !ok {
        return Ok(None);
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hip");
    let dir = scratch_dir("hip-programs");
    // SAFETY: `atexit` only records the function; `remove_programs` takes no arguments and
    // touches nothing that exit tears down before it runs.
    unsafe { libc::atexit(remove_programs) };
    let children: Vec<_> = PROGRAMS
        .iter()
        .map(|name| {
            let child = Command::new("hipcc")
                .args([
                    "--offload-arch=gfx90a",
                    "-O2",
                    "-Wall",
                    "-Wextra",
                    "-Werror",
                ])
                .arg("-o")
                .arg(dir.join(name))
                .arg(src.join(format!("{name}.hip")))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("start hipcc: {e}"));
            (name, child)
        })
        .collect();
    let mut errors = String::new();
    for (name, child) in children {
        match child.and_then(|c| c.wait_with_output().map_err(|e| e.to_string())) {
            Ok(out) if out.status.success() => {}
            Ok(out) => errors.push_str(&format!(
                "hipcc failed for {name}.hip ({}):\n{}{}\n",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )),
            Err(e) => errors.push_str(&format!("{name}.hip: {e}\n")),
        }
    }
    if errors.is_empty() {
        Ok(Some(dir))
    } else {
        Err(errors)
    }
}

/// The compiled program `name`, or `None` (after saying why) when the run may skip.
fn hip_program(name: &str) -> Option<PathBuf> {
    match BUILT.get_or_init(build_all) {
        Ok(Some(dir)) => Some(dir.join(name)),
        Ok(None) => {
            eprintln!("skipping {name}: hipcc or HIP's headers are not installed");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// ROCm 5.2.3's `DBG_TRAP` request (0x82, out of tree): ROCr asks it once at start-up and
/// carries on when KFD 1.11 refuses it, as on an upstream kernel.
const ROCM_DBG_TRAP: &str = "0xc0284b82";

/// What the emulator and the interposer warned about or reported as an error (requests refused
/// as unsupported, strict-mode findings), other than ROCm's `DBG_TRAP`.
fn complaints(run: &Run) -> Vec<&str> {
    run.stderr
        .lines()
        .filter(|l| l.starts_with("[WARN ") || l.starts_with("[ERROR "))
        .filter(|l| !l.contains(ROCM_DBG_TRAP))
        .collect()
}

/// Runs `name` with `args` on `gpus` emulated GPUs; `None` when the run skips.
fn run(name: &str, args: &[&str], gpus: u32) -> Option<Run> {
    let program = hip_program(name)?;
    Some(run_preloaded(&program, args, gpus))
}

/// Runs `name` and checks that it ran to its end, every check passed, and the emulator had
/// nothing to complain about (no request refused as unsupported, no strict-mode finding).
fn passes(name: &str, args: &[&str], gpus: u32) -> Option<Run> {
    let run = run(name, args, gpus)?;
    assert_success(name, &run);
    assert!(
        run.stdout.lines().any(|l| l == "ok done"),
        "{name} did not finish:\n{}",
        run.stdout
    );
    let complaints = complaints(&run);
    assert!(complaints.is_empty(), "{name}: {complaints:#?}");
    Some(run)
}

#[test]
fn hip_device_properties_and_memory() {
    let _family = family(Family::Hip);
    for gpus in [1u32, 2] {
        let Some(run) = passes("device", &[&gpus.to_string()], gpus) else {
            return;
        };
        let devices = run
            .stdout
            .lines()
            .filter(|l| l.contains("AMD Instinct MI210, gfx90a:sramecc+:xnack-, 104 CUs"))
            .count();
        assert_eq!(devices, gpus as usize, "{}", run.stdout);
    }
}

#[test]
fn hip_copies_between_host_and_device_pageable_pinned_and_registered() {
    let _family = family(Family::Hip);
    let Some(run) = passes("memcpy", &[], 1) else {
        return;
    };
    for step in [
        "ok pageable H2D/D2H",
        "ok pinned H2D/D2H",
        "ok pinned async H2D/D2H",
        "ok registered H2D/D2H",
        "ok H2H",
        "ok hipMemcpyDefault",
    ] {
        assert!(run.stdout.lines().any(|l| l == step), "{}", run.stdout);
    }
}

#[test]
fn hip_streams_and_events() {
    let _family = family(Family::Hip);
    let Some(run) = passes("streams_events", &[], 1) else {
        return;
    };
    assert!(
        run.stdout
            .lines()
            .any(|l| l == "ok cross-stream event wait"),
        "{}",
        run.stdout
    );
}

#[test]
fn hip_peer_access_and_copies_between_two_gpus() {
    let _family = family(Family::Hip);
    let Some(run) = passes("peer", &[], 2) else {
        return;
    };
    for step in ["ok peer access enabled", "ok peer copies"] {
        assert!(run.stdout.lines().any(|l| l == step), "{}", run.stdout);
    }
}

/// HIP array copies run on ROCr's image blit kernels (`image_load`/`image_store`): until those
/// ran, every one stopped its queue on an undecodable instruction (issue #27 item 2b).
#[test]
fn hip_array_copies_run_through_rocrs_image_kernels() {
    let _family = family(Family::Hip);
    let Some(run) = passes("arrays", &[], 1) else {
        return;
    };
    for step in [
        "ok float4 array round trip",
        "ok array through device memory to array",
        "ok uchar4 array round trip",
    ] {
        assert!(run.stdout.lines().any(|l| l == step), "{}", run.stdout);
    }
}

/// HIP texture reads (`tex2D` on a texture object: `image_sample` with a sampler), point and
/// bilinear, in texel and normalised coordinates, clamped and wrapped.
#[test]
fn hip_texture_reads_sample_as_the_sampler_says() {
    let _family = family(Family::Hip);
    let Some(run) = passes("textures", &[], 1) else {
        return;
    };
    for step in [
        "ok point sampling",
        "ok normalised, clamped",
        "ok normalised, wrapped",
        "ok bilinear",
    ] {
        assert!(run.stdout.lines().any(|l| l == step), "{}", run.stdout);
    }
}

#[test]
fn hip_vector_add() {
    let _family = family(Family::Hip);
    passes("vector_add", &[], 1);
}

#[test]
fn hip_kernel_arguments_of_every_kind() {
    let _family = family(Family::Hip);
    passes("kernel_args", &[], 1);
}

#[test]
fn hip_memset() {
    let _family = family(Family::Hip);
    passes("memset", &[], 1);
}

#[test]
fn hip_device_to_device_copies() {
    let _family = family(Family::Hip);
    passes("memcpy_d2d", &[], 1);
}

#[test]
fn hip_dynamic_shared_memory() {
    let _family = family(Family::Hip);
    passes("dynamic_lds", &[], 1);
}

#[test]
fn hip_kernel_spilling_to_scratch() {
    let _family = family(Family::Hip);
    passes("scratch", &[], 1);
}

#[test]
fn hip_kernel_reading_peer_memory() {
    let _family = family(Family::Hip);
    passes("peer", &["kernel"], 2);
}

/// Managed memory: advice reads back through the range queries (which ask the SVM driver for
/// set and clear flags together), and a kernel updates the memory in place.
#[test]
fn hip_managed_memory_and_its_range_queries() {
    let _family = family(Family::Hip);
    passes("managed", &[], 1);
}

/// `__syncthreads_and`/`_or` in a work-group of 100 (a partial second wave) and `__clzll(0)`:
/// DPP must not read lanes EXEC disables, and the clamp bit must saturate integer adds.
#[test]
fn hip_lane_built_ins_in_a_partial_wave() {
    let _family = family(Family::Hip);
    passes("lane_ops", &[], 1);
}

/// HIP's device printf through ROCclr's own hostcall listener: every work-item's line, and one
/// work-item's lines in program order, before the synchronisation after its launch returns.
#[test]
fn hip_device_printf() {
    let _family = family(Family::Hip);
    let Some(run) = passes("printf", &[], 1) else {
        return;
    };
    let lines: Vec<&str> = run.stdout.lines().collect();
    let at = |step: &str| lines.iter().position(|l| *l == step).unwrap();
    let (greet, countdown) = (at("ok greet"), at("ok countdown"));
    let mut greeted: Vec<&str> = lines[..greet].to_vec();
    greeted.sort_unstable();
    let mut expected: Vec<String> = (0..100)
        .map(|i| format!("device says {i} of 100 ({:.1})", 0.5 * f64::from(i)))
        .collect();
    expected.sort_unstable();
    assert_eq!(greeted, expected, "{}", run.stdout);
    let steps: Vec<String> = (1..=5).rev().map(|k| format!("device step {k}")).collect();
    assert_eq!(lines[greet + 1..countdown], steps, "{}", run.stdout);
    let crowd = at("ok crowd");
    let mut crowded: Vec<&str> = lines[countdown + 1..crowd].to_vec();
    crowded.sort_unstable();
    let mut expected: Vec<String> = (0..2048i64)
        .map(|i| format!("crowd {i}: hello {:.1} {}", 0.5 * i as f64, i << 33))
        .collect();
    expected.sort_unstable();
    assert_eq!(crowded, expected, "{}", run.stdout);
}

/// kfd-emu's sanitizer on a HIP program: the preload registers each `hsa_amd_memory_pool_allocate`
/// (ROCr carves both 4 KiB `hipMalloc`s from one 2 MiB block), so a kernel writing past the end
/// of the first into the second is reported, naming the first as the pointer's buffer.
#[test]
fn hip_overrun_into_the_next_allocation_is_caught_by_the_sanitizer() {
    let _family = family(Family::Hip);
    let Some(program) = hip_program("sanitize") else {
        return;
    };
    let run = run_preloaded_env(&program, &[], 1, "warn", &[("KFDRT_EMU_SANITIZE", "1")]);
    assert_success("sanitize", &run);
    assert!(run.stdout.lines().any(|l| l == "ok done"), "{}", run.stdout);
    let a = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("ok allocated a=0x"))
        .and_then(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok())
        .expect("the program prints its allocations");
    let findings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("sanitizer: out-of-bounds write"))
        .collect();
    assert_eq!(findings.len(), 1, "{}", run.stderr);
    let expect = format!(
        "out-of-bounds write of 4 bytes at {:#x}, just past its end: the pointer came from the buffer [{a:#x}, {:#x}) (4096 bytes)",
        a + 4096,
        a + 4096
    );
    assert!(findings[0].contains(&expect), "{}", findings[0]);
    // Without the sanitizer: nothing to say.
    let quiet = run_preloaded(&program, &[], 1);
    assert!(!quiet.stderr.contains("sanitizer"), "{}", quiet.stderr);
}
