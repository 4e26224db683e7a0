//! `kfdrt-check` tells a pass, a failure, a skip, an exclusion, a hang and a crash apart, each
//! test in a process of its own. The tests it runs are the `fixture_*` ones below, in this very
//! binary: they misbehave only when `KFDRT_CHECK_FIXTURE` is set (as kfdrt-check's run sets it),
//! and otherwise return at once.

use serde_json::Value;
use std::process::Command;
use std::time::Duration;

const FIXTURE: &str = "KFDRT_CHECK_FIXTURE";

fn armed() -> bool {
    std::env::var_os(FIXTURE).is_some()
}

#[test]
fn fixture_passes() {
    if armed() {
        eprintln!("kfdrt-test: hardware-capable, on a fixture");
    }
}

#[test]
fn fixture_fails() {
    assert!(!armed(), "the planted failure");
}

#[test]
fn fixture_skips() {
    if armed() {
        eprintln!("fixture_skips: skipped: nothing to test here");
    }
}

#[test]
fn fixture_hangs() {
    if armed() {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

#[test]
fn fixture_crashes() {
    if armed() {
        std::process::abort();
    }
}

#[test]
fn fixture_excluded() {
    assert!(!armed(), "excluded: never runs under kfdrt-check");
}

#[test]
fn each_ending_is_classified_in_its_own_process() {
    let dir = std::env::temp_dir().join(format!("kfdrt-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let skips = dir.join("skip.list");
    std::fs::write(&skips, "all: check::fixture_excluded  # planted\n").unwrap();
    let json = dir.join("check.json");
    let out = Command::new(env!("CARGO_BIN_EXE_kfdrt-check"))
        .arg("--binary")
        .arg(std::env::current_exe().unwrap())
        .args([
            "--filter",
            "fixture_",
            "--timeout",
            "3",
            "-j",
            "2",
            "--exclude",
        ])
        .arg(&skips)
        .arg("--json")
        .arg(&json)
        .env(FIXTURE, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // A failure, a hang and a crash make the run fail.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let status = |name: &str| {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["test"].as_str().unwrap().ends_with(name))
            .map(|r| {
                (
                    r["status"].as_str().unwrap().to_owned(),
                    r["detail"].as_str().unwrap().to_owned(),
                )
            })
            .unwrap_or_else(|| panic!("{name} did not run:\n{stdout}"))
    };
    assert_eq!(status("fixture_passes").0, "PASS");
    assert_eq!(
        status("fixture_fails"),
        ("FAIL".into(), "the planted failure".into())
    );
    assert_eq!(
        status("fixture_skips"),
        ("SKIP".into(), "nothing to test here".into())
    );
    assert_eq!(status("fixture_hangs").0, "HANG");
    assert_eq!(status("fixture_crashes").0, "CRASH");
    assert_eq!(
        status("fixture_excluded"),
        ("EXCLUDED".into(), "planted".into())
    );
    assert_eq!(v["counts"]["PASS"], 1);
    assert_eq!(v["hardware_capable"], 1, "only fixture_passes says it is");
    assert!(v["machine"]["device"].is_string());
    let _ = std::fs::remove_dir_all(&dir);
}
