//! What the preload's integration tests share: finding the interposer cargo built, skipping
//! (or failing, under `KFDRT_REQUIRE_ROCM`) when a prerequisite is missing, scratch directories,
//! and running a program under the preload with a timeout.
#![allow(dead_code)] // each test crate uses a part

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a program may run under the preload before it counts as hung.
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// `libkfd_emu_preload.so` as cargo built it for this test run: beside this test executable in
/// `deps/` (the package's lib target is built before its integration tests), or uplifted one
/// directory up by `cargo build`.
pub fn preload() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps directory");
    let candidates = [
        deps.join("libkfd_emu_preload.so"),
        deps.parent().unwrap_or(deps).join("libkfd_emu_preload.so"),
    ];
    candidates
        .iter()
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("libkfd_emu_preload.so not found at {candidates:?}"))
        .clone()
}

/// Returns false (after saying why) when a prerequisite is missing and the run may skip.
pub fn have(what: &str, present: bool) -> bool {
    if present {
        return true;
    }
    if std::env::var_os("KFDRT_REQUIRE_ROCM").is_some() {
        panic!("{what} is required (KFDRT_REQUIRE_ROCM is set) but missing");
    }
    eprintln!("skipping: {what} is not installed");
    false
}

/// Whether `cmd arg` can be started at all (its exit status does not matter).
pub fn has_command(cmd: &str, arg: &str) -> bool {
    Command::new(cmd)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// A directory of this test process's own under the system's temporary directory.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "kfd-emu-preload-test.{}.{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// A compiled test program, deleted with its directory when dropped.
pub struct Program {
    pub dir: PathBuf,
    pub path: PathBuf,
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl std::ops::Deref for Program {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

/// How a program run under the preload ended, and what it printed.
pub struct Run {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `program` with the preload and `gpus` emulated gfx90a GPUs, killing it after
/// [`TIMEOUT`].
pub fn run_preloaded(program: &Path, args: &[&str], gpus: u32) -> Run {
    run_preloaded_logging(program, args, gpus, "warn")
}

/// [`run_preloaded`] with the interposer's log level (`trace` logs every ioctl and buffer).
pub fn run_preloaded_logging(program: &Path, args: &[&str], gpus: u32, log: &str) -> Run {
    run_preloaded_env(program, args, gpus, log, &[])
}

/// [`run_preloaded_logging`] with more environment variables for the program.
pub fn run_preloaded_env(
    program: &Path,
    args: &[&str],
    gpus: u32,
    log: &str,
    env: &[(&str, &str)],
) -> Run {
    // Tests run in parallel: every run gets its own directory.
    static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = scratch_dir(&format!("run-{run}"));
    let out_path = dir.join("stdout");
    let err_path = dir.join("stderr");
    let mut child = Command::new(program)
        .args(args)
        .env("LD_PRELOAD", preload())
        .env("KFDRT_EMU_PRESET", "gfx90a")
        .env("KFDRT_EMU_GPUS", gpus.to_string())
        .env("KFDRT_EMU_LOG", log)
        .envs(env.iter().copied())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", program.display()));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{} hung for {TIMEOUT:?}; stdout:\n{}\nstderr:\n{}",
                program.display(),
                std::fs::read_to_string(&out_path).unwrap_or_default(),
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let run = Run {
        status,
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
    };
    let _ = std::fs::remove_dir_all(&dir);
    run
}

/// Fails the test with the program's output unless it exited with status 0.
pub fn assert_success(what: &str, run: &Run) {
    assert!(
        run.status.success(),
        "{what} failed ({}); stdout:\n{}\nstderr:\n{}",
        run.status,
        run.stdout,
        run.stderr
    );
}

/// The rest of the first stdout line that starts with `key` and a space.
pub fn field<'a>(stdout: &'a str, key: &str) -> Option<&'a str> {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
}

/// The groups of tests that must not run at the same time as each other's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `hip`: compiles its programs with hipcc, many at once, then runs them.
    Hip,
    /// `rocm`: runs ROCr's own programs.
    Rocm,
}

struct Running {
    family: Option<Family>,
    count: usize,
}

static RUNNING: std::sync::Mutex<Running> = std::sync::Mutex::new(Running {
    family: None,
    count: 0,
});
static CHANGED: std::sync::Condvar = std::sync::Condvar::new();

/// Held by a running test of a [`Family`].
pub struct FamilyGuard;

impl Drop for FamilyGuard {
    fn drop(&mut self) {
        let mut r = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        r.count -= 1;
        if r.count == 0 {
            r.family = None;
            CHANGED.notify_all();
        }
    }
}

/// Waits until no test of the other family runs, then counts this one in: tests of one family
/// run beside each other, never beside the other family's. The hip tests' compile load beside
/// ROCr's programs once left `hsa_barrier` hung in a WAIT_EVENTS on the auto-reset event ROCr
/// 5.2.3 shares between its queues and its async-event thread (no event ages before ROCm 5.7).
pub fn family(family: Family) -> FamilyGuard {
    let mut r = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    while r.family.is_some_and(|f| f != family) {
        r = CHANGED.wait(r).unwrap_or_else(|e| e.into_inner());
    }
    r.family = Some(family);
    r.count += 1;
    FamilyGuard
}
