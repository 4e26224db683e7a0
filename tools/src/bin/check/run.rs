//! Running one test of a libtest binary in a process of its own, with a time limit, and
//! classifying how it ended.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How a test ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Pass,
    /// Passed without testing anything: it said why (`...: skipped: reason`).
    Skip,
    /// Excluded by the skip list before it ran.
    Excluded,
    Fail,
    /// Still running at the time limit: killed.
    Hang,
    /// Ended by a signal (a segfault, an abort).
    Crash,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Skip => "SKIP",
            Status::Excluded => "EXCLUDED",
            Status::Fail => "FAIL",
            Status::Hang => "HANG",
            Status::Crash => "CRASH",
        }
    }
}

/// One test's outcome.
pub struct Outcome {
    pub status: Status,
    pub duration: Duration,
    /// Why it failed, crashed, was skipped or excluded (one line), empty for a pass.
    pub detail: String,
    /// Its whole output, kept for failures.
    pub output: String,
    /// The test said it needs no emulator-only control: it runs on the device under test when
    /// one is selected (kfdrt's tests print `kfdrt-test: hardware-capable`).
    pub hardware_capable: bool,
    /// The test said it opens no device at all (`kfdrt-test: device-free`): it checks host-side
    /// code and runs the same on any machine.
    pub device_free: bool,
}

/// What kfdrt's tests print when they use the device under test.
const HARDWARE_CAPABLE: &str = "kfdrt-test: hardware-capable";
/// What kfdrt's tests print when they open no device.
const DEVICE_FREE: &str = "kfdrt-test: device-free";

/// The tests of `binary`, by libtest's `--list`.
pub fn list(binary: &Path) -> Result<Vec<String>, String> {
    let out = Command::new(binary)
        .args(["--list", "--format", "terse"])
        .output()
        .map_err(|e| format!("running {}: {e}", binary.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} --list failed: {}",
            binary.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_owned)
        .collect())
}

/// The integration-test binary `test` of kfdrt, built by cargo (debug profile) if needed.
pub fn build(test: &str, release: bool) -> Result<PathBuf, String> {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args([
        "test",
        "-p",
        "kfdrt",
        "--no-run",
        "--message-format=json",
        "--test",
        test,
    ]);
    if release {
        cmd.arg("--release");
    }
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("running cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo could not build the test binary {test:?}"));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["target"]["name"] == test)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| format!("cargo built no executable for the test {test:?}"))
}

/// Runs test `name` of `binary` alone, killing it after `limit`.
pub fn run(binary: &Path, name: &str, limit: Duration) -> Outcome {
    let started = Instant::now();
    let child = Command::new(binary)
        .args(["--exact", name, "--test-threads=1", "--nocapture"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return Outcome {
                status: Status::Crash,
                duration: started.elapsed(),
                detail: format!("could not start: {e}"),
                output: String::new(),
                hardware_capable: false,
                device_free: false,
            }
        }
    };
    // Drain both pipes on threads, so a chatty test cannot block on a full pipe.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut s);
            }
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let mut hung = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if started.elapsed() >= limit => {
                hung = true;
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => break None,
        }
    };
    let duration = started.elapsed();
    let output = format!(
        "{}{}",
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default()
    );
    let (status, detail) = classify(status, hung, &output, limit);
    Outcome {
        status,
        duration,
        detail,
        hardware_capable: output.contains(HARDWARE_CAPABLE),
        device_free: output.contains(DEVICE_FREE),
        output,
    }
}

fn classify(
    exit: Option<std::process::ExitStatus>,
    hung: bool,
    output: &str,
    limit: Duration,
) -> (Status, String) {
    use std::os::unix::process::ExitStatusExt;
    if hung {
        return (
            Status::Hang,
            format!("still running after {limit:?}: killed"),
        );
    }
    let Some(exit) = exit else {
        return (Status::Crash, "its status could not be read".into());
    };
    if let Some(signal) = exit.signal() {
        return (Status::Crash, format!("killed by signal {signal}"));
    }
    if exit.success() {
        if !output.contains("test result: ok. 1 passed") {
            return (Status::Fail, "exited 0 without running the test".into());
        }
        let skipped = output.lines().find_map(|l| {
            l.split_once(": skipped: ")
                .map(|(_, why)| why.trim().to_owned())
                .or_else(|| l.strip_prefix("skipping ").map(|why| why.trim().to_owned()))
        });
        return match skipped {
            Some(why) => (Status::Skip, why),
            None => (Status::Pass, String::new()),
        };
    }
    // libtest exits 101 on a failed test; the panic message is the line after "panicked at".
    let mut lines = output.lines();
    let panic = lines
        .by_ref()
        .find(|l| l.contains("panicked at"))
        .and_then(|_| lines.next())
        .map(|l| l.trim().to_owned());
    (
        Status::Fail,
        panic.unwrap_or_else(|| format!("exited with {exit}")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn endings_are_told_apart() {
        let limit = Duration::from_secs(1);
        let ok = "running 1 test\ntest a ... ok\n\ntest result: ok. 1 passed; 0 failed";
        let exit = |code: i32| Some(std::process::ExitStatus::from_raw(code << 8));
        assert_eq!(classify(exit(0), false, ok, limit).0, Status::Pass);
        let skip = format!("hw::x: skipped: /dev/kfd is absent\n{ok}");
        assert_eq!(
            classify(exit(0), false, &skip, limit),
            (Status::Skip, "/dev/kfd is absent".into())
        );
        let failed = "thread 'a' panicked at tests/a.rs:3:5:\nassertion failed: x\n";
        assert_eq!(
            classify(exit(101), false, failed, limit),
            (Status::Fail, "assertion failed: x".into())
        );
        let segv = Some(std::process::ExitStatus::from_raw(11));
        assert_eq!(classify(segv, false, "", limit).0, Status::Crash);
        assert_eq!(classify(None, true, "", limit).0, Status::Hang);
        assert_eq!(
            classify(exit(0), false, "running 0 tests", limit).0,
            Status::Fail
        );
    }
}
