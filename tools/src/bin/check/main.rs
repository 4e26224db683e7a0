//! `kfdrt-check`: kfdrt's integration suite run the way AMD's kfdtest runs, for a driver or
//! runtime engineer with a GPU (or on kfd-emu): each test in a process of its own, so a crash
//! or a hang costs one test; every test classified PASS, FAIL, SKIP, EXCLUDED, HANG or CRASH;
//! per-family skip lists; a table, and JSON with the machine it ran on.
//!
//! ```text
//! cargo run --release -p kfdrt-tools --bin kfdrt-check -- --filter memory:: --json check.json
//! ```

mod exclude;
mod run;

use clap::{value_parser, Arg, ArgAction, Command};
use kfdrt::{DriverKind, Kfd};
use kfdrt_tools::machine;
use run::{Outcome, Status};
use serde_json::json;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The skip list used when none is given (`tools/check.exclude`).
const DEFAULT_EXCLUDE: &str = include_str!("../../../check.exclude");

fn cli() -> Command {
    Command::new("kfdrt-check")
        .about("Runs kfdrt's integration tests one process each, kfdtest-style")
        .arg(
            Arg::new("filter")
                .long("filter")
                .short('f')
                .action(ArgAction::Append)
                .help("run only tests whose name contains this (repeatable)"),
        )
        .arg(
            Arg::new("list")
                .long("list")
                .action(ArgAction::SetTrue)
                .help("list the tests that would run, and what is excluded, then stop"),
        )
        .arg(
            Arg::new("binary")
                .long("binary")
                .value_parser(value_parser!(PathBuf))
                .help("a libtest binary to run instead of building kfdrt's `main` test binary"),
        )
        .arg(
            Arg::new("release")
                .long("release")
                .action(ArgAction::SetTrue)
                .help("build the test binary in the release profile"),
        )
        .arg(
            Arg::new("exclude")
                .long("exclude")
                .value_parser(value_parser!(PathBuf))
                .help("the skip list (default: tools/check.exclude, built in)"),
        )
        .arg(
            Arg::new("timeout")
                .long("timeout")
                .value_parser(value_parser!(u64).range(1..))
                .default_value("120")
                .help("seconds a test may run before it is killed as a HANG"),
        )
        .arg(
            Arg::new("jobs")
                .long("jobs")
                .short('j')
                .value_parser(value_parser!(u64).range(1..256))
                .help("tests run at once (default: the CPUs)"),
        )
        .arg(
            Arg::new("json")
                .long("json")
                .value_parser(value_parser!(PathBuf))
                .help("write the results as JSON to this file"),
        )
}

fn main() {
    match run() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("kfdrt-check: {e}");
            std::process::exit(2);
        }
    }
}

/// Runs the suite; `Ok(false)` when a test failed, hung or crashed.
fn run() -> Result<bool, String> {
    let args = cli().get_matches();
    let kfd = Kfd::from_env().map_err(|e| format!("opening the device: {e}"))?;
    let gpu = kfd.gpu(0).ok_or("the device has no GPU")?;
    let machine = machine::describe(&kfd, &gpu);
    machine::print(
        "kfdrt-check",
        &machine,
        "tests that open the device from the environment run on it.",
    );
    let target = gpu.info().gfx_target.clone();
    let kind = if kfd.kind() == DriverKind::Emulated {
        "emu"
    } else {
        "hw"
    };
    // The tests open the device themselves.
    drop(gpu);
    drop(kfd);

    let rules = match args.get_one::<PathBuf>("exclude") {
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| format!("reading {}: {e}", p.display()))
            .and_then(|t| exclude::parse(&t))?,
        None => exclude::parse(DEFAULT_EXCLUDE)?,
    };
    let binary = match args.get_one::<PathBuf>("binary") {
        Some(b) => b.clone(),
        None => run::build("main", args.get_flag("release"))?,
    };
    let filters: Vec<&String> = args
        .get_many::<String>("filter")
        .into_iter()
        .flatten()
        .collect();
    let tests: Vec<String> = run::list(&binary)?
        .into_iter()
        .filter(|t| filters.is_empty() || filters.iter().any(|f| t.contains(f.as_str())))
        .collect();
    let families = [target.as_str(), kind];
    println!(
        "  tests:    {} of {} (family {}; skip list: {} rules)\n",
        tests.len(),
        binary.display(),
        families.join(", "),
        rules.len()
    );
    if args.get_flag("list") {
        for t in &tests {
            match exclude::excluded(&rules, &families, t) {
                Some(r) => println!("{t}  (excluded: {})", r.reason),
                None => println!("{t}"),
            }
        }
        return Ok(true);
    }

    let limit = Duration::from_secs(args.get_one::<u64>("timeout").copied().unwrap_or(120));
    let jobs = args
        .get_one::<u64>("jobs")
        .map(|&j| j as usize)
        .unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
    let outcomes = run_all(&binary, &tests, &rules, &families, limit, jobs);

    let mut counts = std::collections::BTreeMap::new();
    for (_, o) in &outcomes {
        *counts.entry(o.status).or_insert(0usize) += 1;
    }
    println!();
    for (name, o) in outcomes.iter().filter(|(_, o)| o.status > Status::Excluded) {
        println!(
            "---- {name}: {} ----\n{}",
            o.status.name(),
            o.output.trim_end()
        );
    }
    let summary: Vec<String> = counts
        .iter()
        .map(|(s, n)| format!("{n} {}", s.name()))
        .collect();
    println!(
        "\nkfdrt-check: {} tests: {}",
        outcomes.len(),
        summary.join(", ")
    );
    let capable = outcomes.iter().filter(|(_, o)| o.hardware_capable).count();
    let device_free = outcomes
        .iter()
        .filter(|(_, o)| o.device_free && !o.hardware_capable)
        .count();
    let emulator_only = outcomes.len() - capable - device_free;
    println!(
        "  {capable} of them hardware-capable: they run on the device under test when one is \
         selected; {device_free} open no device (host-side checks); {emulator_only} need an \
         emulator-only control (or were excluded before they said)"
    );
    if let Some(path) = args.get_one::<PathBuf>("json") {
        let results: Vec<_> = outcomes
            .iter()
            .map(|(name, o)| {
                json!({
                    "test": name,
                    "status": o.status.name(),
                    "seconds": o.duration.as_secs_f64(),
                    "detail": o.detail,
                    "hardware_capable": o.hardware_capable,
                    "device_free": o.device_free,
                })
            })
            .collect();
        let doc = json!({
            "machine": machine,
            "binary": binary.display().to_string(),
            "families": families,
            "counts": counts.iter().map(|(s, n)| (s.name().to_owned(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "hardware_capable": capable,
            "device_free": device_free,
            "emulator_only": emulator_only,
            "results": results,
        });
        let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("results: {}", path.display());
    }
    Ok(outcomes.iter().all(|(_, o)| o.status <= Status::Excluded))
}

/// Runs `tests` on `jobs` threads, printing a line per test as it ends; results in list order.
fn run_all(
    binary: &std::path::Path,
    tests: &[String],
    rules: &[exclude::Rule],
    families: &[&str],
    limit: Duration,
    jobs: usize,
) -> Vec<(String, Outcome)> {
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::with_capacity(tests.len()));
    std::thread::scope(|s| {
        for _ in 0..jobs.min(tests.len()).max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(name) = tests.get(i) else { break };
                let outcome = match exclude::excluded(rules, families, name) {
                    Some(r) => Outcome {
                        status: Status::Excluded,
                        duration: Duration::ZERO,
                        detail: r.reason.clone(),
                        output: String::new(),
                        hardware_capable: false,
                        device_free: false,
                    },
                    None => run::run(binary, name, limit),
                };
                println!(
                    "{:<8} {:>8.2}s  {name}{}",
                    outcome.status.name(),
                    outcome.duration.as_secs_f64(),
                    if outcome.detail.is_empty() {
                        String::new()
                    } else {
                        format!("  ({})", outcome.detail)
                    }
                );
                done.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((i, name.clone(), outcome));
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|p| p.into_inner());
    done.sort_by_key(|(i, _, _)| *i);
    done.into_iter().map(|(_, n, o)| (n, o)).collect()
}
