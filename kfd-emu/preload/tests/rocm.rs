//! Unmodified ROCm user space on kfd-emu through the preload interposer.
//!
//! - `kfd_probe.c` (needs only `cc`): topology, `/dev/kfd` and render-node calls as libhsakmt and
//!   libdrm make them;
//! - `rocminfo` (Debian's `rocminfo`) lists the emulated gfx90a agent(s);
//! - `hsa_barrier.c` (Debian's `libhsa-runtime-dev`): ROCr's `hsa_init`, agents, an AQL queue and
//!   barrier-AND packets written through ROCr's public API, run by kfd-emu's packet processor.
//!
//! Without those packages the tests print why and skip; `.ci/run` installs them and sets
//! `KFDRT_REQUIRE_ROCM=1`, which turns a missing package into a failure.

use crate::common::*;
use std::path::Path;
use std::process::Command;

/// Compiles one of the C programs beside this test.
fn compile(source: &str, libs: &[&str]) -> Program {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(source);
    let dir = scratch_dir(&format!("bin-{source}"));
    let out = dir.join(source.trim_end_matches(".c"));
    let status = Command::new("cc")
        .args(["-O1", "-Wall", "-Werror", "-o"])
        .arg(&out)
        .arg(&src)
        .args(libs)
        .status()
        .expect("run cc");
    assert!(status.success(), "cc failed for {}", src.display());
    Program { dir, path: out }
}

/// One of the C programs that use ROCr, compiled; `None` (after saying why) when ROCr's
/// headers or a C compiler are missing and the run may skip.
fn rocr_program(source: &str) -> Option<Program> {
    let ok = have(
        "ROCr's headers (libhsa-runtime-dev)",
        Path::new("/usr/include/hsa/hsa.h").exists(),
    ) && have("a C compiler (cc)", has_command("cc", "--version"));
    ok.then(|| compile(source, &["-lhsa-runtime64"]))
}

#[test]
fn plain_libc_calls_see_the_emulated_driver() {
    let _family = family(Family::Rocm);
    if !have("a C compiler (cc)", has_command("cc", "--version")) {
        return;
    }
    let probe = compile("kfd_probe.c", &[]);
    for gpus in [1, 2] {
        let run = run_preloaded(&probe, &[], gpus);
        assert_success("kfd_probe", &run);
        let out = &run.stdout;
        assert_eq!(field(out, "nodes"), Some(&*(gpus + 1).to_string()), "{out}");
        assert_eq!(field(out, "gfx_target_version"), Some("90010"));
        assert_eq!(field(out, "class_link"), Some("ok"));
        // The PCI device at the topology's bus address (issue #25 item 12).
        assert_eq!(field(out, "pci_vendor"), Some("0x1002"), "{out}");
        assert_eq!(field(out, "pci_class"), Some("0x038000"), "{out}");
        assert!(
            matches!(field(out, "pci_numa_node"), Some("0" | "-1")),
            "{out}"
        );
        assert_eq!(field(out, "pci_config_ids"), Some("1002:740f"), "{out}");
        // Listed before any GPU path was opened, beside the host's own devices.
        assert_eq!(
            field(out, "pci_listed_amd"),
            Some(&*gpus.to_string()),
            "{out}"
        );
        let host = std::fs::read_dir("/sys/bus/pci/devices").map_or(0, |d| d.count());
        assert_eq!(
            field(out, "pci_listed"),
            Some(&*(host + gpus as usize).to_string()),
            "{out}"
        );
        assert_eq!(
            field(out, "kfd_version"),
            Some(&*kfd_sys::KFD_ABI.to_string())
        );
        // A request upstream KFD does not know (a number of ROCm's out-of-tree driver) fails as
        // current kernels fail it, and is logged.
        assert_eq!(
            field(out, "unknown_ioctl"),
            Some("-1 Inappropriate ioctl for device")
        );
        assert!(run.stderr.contains("is not a KFD"), "{}", run.stderr);
        assert_eq!(field(out, "read_kfd"), Some("-1 Invalid argument"));
        assert_eq!(field(out, "kfd_is_chr"), Some("1"));
        assert_eq!(field(out, "forked_child_ebadf"), Some("yes"));
        assert_eq!(field(out, "fstatat_empty_chr"), Some("1"));
        assert_eq!(field(out, "fioclex"), Some("1"));
        assert_eq!(field(out, "write_kfd"), Some("EINVAL"));
        assert_eq!(field(out, "o_directory"), Some("ENOTDIR"));
        assert_eq!(field(out, "realpath"), Some("/dev/kfd"));
        assert_eq!(field(out, "odd_path"), Some("device"));
        assert_eq!(field(out, "zero_padded_minor"), Some("missing"));
        assert_eq!(field(out, "failed_dup2_keeps_device"), Some("1"));
        assert_eq!(field(out, "reused_number_is_plain"), Some("1"));
        assert_eq!(field(out, "render_rdev"), Some("226:128"));
        assert_eq!(field(out, "drm_dir"), Some("yes"));
        assert_eq!(field(out, "drm_driver"), Some("amdgpu 3"));
        assert!(out.lines().any(|l| l == "done"));
    }
    // Without the preload the same program finds no driver on this machine (unless it has one).
    if !Path::new("/dev/kfd").exists() {
        let out = Command::new(&*probe).output().expect("run probe");
        assert!(!out.status.success());
    }
}

/// amdgpu's module parameters are where test suites look for them (kfdtest skips its CWSR
/// tests when `cwsr_enable` is missing or 0).
#[test]
fn amdgpu_module_parameters_are_readable() {
    let _family = family(Family::Rocm);
    let run = run_preloaded(
        Path::new("/bin/cat"),
        &[
            "/sys/module/amdgpu/parameters/cwsr_enable",
            "/sys/module/amdgpu/parameters/sched_policy",
            "/sys/module/amdgpu/parameters/noretry",
        ],
        1,
    );
    assert_success("cat", &run);
    assert_eq!(run.stdout, "1\n0\n1\n");
}

#[test]
fn programs_that_never_touch_the_gpu_are_unaffected() {
    let _family = family(Family::Rocm);
    // A private TMPDIR: the emulator's sysfs tree would be written there if one were started.
    let tmp = scratch_dir("untouched");
    let out = Command::new("sh")
        .args([
            "-c",
            "echo hello > /dev/null && head -1 /proc/self/status && ls /sys > /dev/null",
        ])
        .env("LD_PRELOAD", preload())
        .env("TMPDIR", &tmp)
        .output()
        .expect("run sh");
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("Name:"));
    let entries = std::fs::read_dir(&tmp).map(|d| d.count()).unwrap_or(0);
    assert_eq!(
        entries, 0,
        "an emulator was started for a program that never used it"
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn rocminfo_lists_the_emulated_agents() {
    let _family = family(Family::Rocm);
    if !have("rocminfo", Path::new("/usr/bin/rocminfo").exists()) {
        return;
    }
    for gpus in [1u32, 2] {
        let run = run_preloaded(Path::new("/usr/bin/rocminfo"), &[], gpus);
        assert_success("rocminfo", &run);
        let out = &run.stdout;
        let agents = out
            .lines()
            .filter(|l| l.split_whitespace().collect::<Vec<_>>() == ["Name:", "gfx90a"])
            .count();
        assert_eq!(agents, gpus as usize, "{out}");
        let marketing = out
            .lines()
            .filter(|l| l.contains("Marketing Name:") && l.contains("AMD Instinct MI210"))
            .count();
        assert_eq!(marketing, gpus as usize, "{out}");
        assert!(out.contains("amdgcn-amd-amdhsa--gfx90a"), "{out}");
        assert!(out.contains("ROCk module is loaded"), "{out}");
        assert!(out.contains("*** Done ***"), "{out}");
        // The same package's agent enumerator (a Python script reading the KFD topology).
        let run = run_preloaded(Path::new("/usr/bin/rocm_agent_enumerator"), &[], gpus);
        assert_success("rocm_agent_enumerator", &run);
        let mut expected = vec!["gfx000"];
        expected.extend(std::iter::repeat_n("gfx90a", gpus as usize));
        assert_eq!(run.stdout.lines().collect::<Vec<_>>(), expected);
    }
}

#[test]
fn rocr_runs_barrier_packets_on_kfd_emu() {
    let _family = family(Family::Rocm);
    let Some(program) = rocr_program("hsa_barrier.c") else {
        return;
    };
    for gpus in [1u32, 2] {
        let run = run_preloaded(&program, &["50"], gpus);
        assert_success("hsa_barrier", &run);
        let out = &run.stdout;
        assert!(out.contains("hsa_init ok"), "{out}");
        assert_eq!(
            field(out, &format!("{} agent(s),", gpus + 1)),
            Some(&*format!("{gpus} gpu(s)")),
            "{out}"
        );
        assert_eq!(
            out.lines()
                .filter(|l| l.starts_with("  isa amdgcn-amd-amdhsa--gfx90a"))
                .count(),
            gpus as usize,
            "{out}"
        );
        assert_eq!(
            out.lines()
                .filter(|l| *l == "barrier-AND completed 50 time(s)")
                .count(),
            gpus as usize,
            "{out}"
        );
        assert_eq!(
            out.lines().filter(|l| *l == "queue destroyed").count(),
            gpus as usize
        );
        assert_eq!(
            out.lines().filter(|l| *l == "cu mask set").count(),
            gpus as usize,
            "{out}"
        );
        assert!(out.lines().any(|l| l == "memory lock ok"), "{out}");
        assert!(out.lines().any(|l| l == "hsa_shut_down ok"), "{out}");
    }
}

#[test]
fn rocr_copies_and_fills_run_on_kfd_emu() {
    let _family = family(Family::Rocm);
    // ROCr 5.2.3 copies with its own blit kernels (and SDMA between GPUs), which run as machine
    // code on kfd-emu's wave interpreter. Every byte is checked by the program.
    let Some(program) = rocr_program("hsa_copy.c") else {
        return;
    };
    for gpus in [1u32, 2] {
        let run = run_preloaded(&program, &[], gpus);
        assert_success("hsa_copy", &run);
        let out = &run.stdout;
        for step in [
            "copy host-vram-host ok",
            "misaligned copy ok",
            "fill ok",
            "async copy ok",
            "hsa_shut_down ok",
        ] {
            assert!(out.lines().any(|l| l == step), "missing {step:?}:\n{out}");
        }
        assert_eq!(out.lines().any(|l| l == "peer copy ok"), gpus > 1, "{out}");
    }
}

#[test]
fn rocr_bring_up_uses_the_kfd_requests_it_needs_and_they_succeed() {
    let _family = family(Family::Rocm);
    let Some(program) = rocr_program("hsa_barrier.c") else {
        return;
    };
    let run = run_preloaded_logging(&program, &["1"], 1, "trace");
    assert_success("hsa_barrier", &run);
    // "ioctl 0x... (AMDKFD_IOC_NAME) on Kfd: Ok(0)" lines, in order.
    let calls: Vec<(&str, bool)> = run
        .stderr
        .lines()
        .filter_map(|l| {
            let rest = l.split("kfd-emu-preload: ioctl ").nth(1)?;
            let (head, result) = rest.split_once(") on ")?;
            let name = head.split_once(" (")?.1;
            Some((name, result.contains(": Ok(")))
        })
        .collect();
    let first = |name: &str| calls.iter().position(|&(n, _)| n == name);
    for name in [
        "AMDKFD_IOC_GET_VERSION",
        "AMDKFD_IOC_GET_PROCESS_APERTURES_NEW",
        "AMDKFD_IOC_ACQUIRE_VM",
        "AMDKFD_IOC_SET_MEMORY_POLICY",
        "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU",
        "AMDKFD_IOC_MAP_MEMORY_TO_GPU",
        "AMDKFD_IOC_SET_XNACK_MODE",
        "AMDKFD_IOC_GET_CLOCK_COUNTERS",
        "AMDKFD_IOC_CREATE_EVENT",
        "AMDKFD_IOC_SET_SCRATCH_BACKING_VA",
        "AMDKFD_IOC_SET_TRAP_HANDLER",
        "AMDKFD_IOC_CREATE_QUEUE",
        "AMDKFD_IOC_SET_CU_MASK",
        "AMDKFD_IOC_SET_EVENT",
        "AMDKFD_IOC_DESTROY_QUEUE",
        "AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU",
        "AMDKFD_IOC_FREE_MEMORY_OF_GPU",
    ] {
        assert!(
            first(name).is_some(),
            "ROCr never issued {name}:\n{calls:?}"
        );
    }
    // libhsakmt's bring-up order.
    let order = [
        "AMDKFD_IOC_GET_VERSION",
        "AMDKFD_IOC_GET_PROCESS_APERTURES_NEW",
        "AMDKFD_IOC_ACQUIRE_VM",
        "AMDKFD_IOC_SET_MEMORY_POLICY",
    ];
    let positions: Vec<usize> = order.iter().filter_map(|n| first(n)).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{calls:?}");
    // Every KFD request succeeded except the one KFD 1.11 does not have (ROCm's DBG_TRAP, 0x82),
    // which is unnamed in the log.
    let failed: Vec<_> = calls.iter().filter(|&&(n, ok)| !ok && n != "-").collect();
    assert!(failed.is_empty(), "failed requests: {failed:?}");
    // Doorbell pages and the MMIO remap page were allocated as KFD buffers (libhsakmt maps
    // both through the KFD descriptor): buffer trace lines carry the allocation flags.
    let flags: Vec<u32> = run
        .stderr
        .lines()
        .filter_map(|l| {
            let f = l.split(", flags 0x").nth(1)?.split(',').next()?;
            u32::from_str_radix(f, 16).ok()
        })
        .collect();
    const DOORBELL: u32 = 1 << 3;
    const MMIO_REMAP: u32 = 1 << 4;
    assert!(
        flags.iter().any(|f| f & DOORBELL != 0),
        "no doorbell buffer"
    );
    assert!(
        flags.iter().any(|f| f & MMIO_REMAP != 0),
        "no MMIO remap buffer"
    );
    // The render node answered libdrm's version query.
    assert!(
        run.stderr.contains("on Render(128): Ok(0)"),
        "no render-node ioctl succeeded"
    );
}

/// ROCr 5.2.3's SVM API (libhsakmt's `AMDKFD_IOC_SVM`, attributes carried in the request's
/// size) on the emulated driver: the system reports SVM, a GPU gets access to host memory with
/// a preferred location, the attributes read back, a prefetch completes.
#[test]
fn rocr_sets_and_reads_shared_virtual_memory_attributes() {
    let _family = family(Family::Rocm);
    let Some(program) = rocr_program("hsa_svm.c") else {
        return;
    };
    let run = run_preloaded(&program, &[], 1);
    assert_success("hsa_svm", &run);
    let out = &run.stdout;
    for line in [
        "svm supported 1",
        "attributes set",
        "preferred is the gpu 1",
        "access 0x200",
        "prefetched",
        // HSA_AMD_SVM_ATTRIB_AGENT_NO_ACCESS: the munmap hook removed the range.
        "access after remap 0x202",
        "done",
    ] {
        assert!(
            out.lines().any(|l| l == line),
            "missing {line:?} in:\n{out}"
        );
    }
}
