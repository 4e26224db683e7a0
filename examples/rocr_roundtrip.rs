//! The same empty barrier-packet round trip through ROCr and through kfdrt, both on kfd-emu.
//!
//! ROCr side: Debian's ROCr 5.2.3 running `kfd-emu/preload/tests/c/hsa_barrier.c` (compiled here
//! with `cc`) under the preload interposer: `hsa_queue_add_write_index`, the packet written by
//! hand with the header stored last, the doorbell signal, `hsa_signal_wait_scacquire`.
//! kfdrt side: `AqlQueue::barrier_and(&[])` and a wait on its completion, in this process.
//! Both emulators spin-poll (`KFDRT_EMU_SPIN=1`), so the figures compare the runtimes' host paths
//! (packet writing, doorbell, signal wait), not the emulator's idle back-off. Printed beside
//! them, measured in the same run: the round trip of a cache line between two threads, and the
//! AQL handshake alone (`benches/common/floors.rs`), which bound what any runtime can reach.
//!
//! ```sh
//! sudo apt-get install libhsa-runtime-dev          # ROCr 5.2.3 and its headers (Debian 12)
//! cargo run --release --example rocr_roundtrip [-- rounds]
//! cargo run --release --example rocr_roundtrip -- --idle [rounds]   # after 20 ms idle each
//! ```

use kfdrt::emu::{EmuConfig, Preset};
use kfdrt::Kfd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

type Error = Box<dyn std::error::Error>;

#[path = "../benches/common/floors.rs"]
mod floors;

/// Latency percentiles of one runtime, in nanoseconds.
struct Figures {
    p50: u64,
    p99: u64,
    mean: u64,
}

fn main() -> Result<(), Error> {
    // The program's own logger: kfdrt and kfd-emu log through `log` (KFDRT_LOG or RUST_LOG
    // pick what is shown, e.g. KFDRT_LOG=debug or KFDRT_LOG=kfdrt=trace).
    let filter = std::env::var("KFDRT_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "warn".into());
    env_logger::Builder::new().parse_filters(&filter).init();
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let idle = args.first().is_some_and(|a| a == "--idle");
    if idle {
        args.remove(0);
    }
    let rounds: usize = match args.first() {
        Some(a) => a
            .parse()
            .map_err(|_| format!("rounds: {a:?} is not a number"))?,
        None if idle => 200,
        None => 20_000,
    };
    if rounds == 0 {
        return Err("rounds must be at least 1".into());
    }
    if idle {
        return after_idle(&find_preload()?, rounds);
    }
    let preload = find_preload()?;
    // The floors first, while nothing else spins on the two cores.
    let line = floors::quantile(&floors::cache_line_round_trips(rounds * 10), 0.5);
    let protocol = floors::quantile(&floors::aql_protocol_round_trips(rounds * 10), 0.5);
    let rocr = rocr_round_trip(&preload, rounds, Duration::ZERO)?;
    let kfdrt = kfdrt_round_trip(rounds, Duration::ZERO)?;
    println!(
        "empty barrier-AND round trip on kfd-emu (gfx90a, spin-polling), {rounds} rounds each"
    );
    println!("{:<28} {:>10} {:>10} {:>10}", "", "p50", "p99", "mean");
    for (name, f) in [
        ("ROCr 5.2.3 (hsa_queue)", &rocr),
        ("kfdrt (AqlQueue)", &kfdrt),
    ] {
        println!(
            "{name:<28} {:>8} ns {:>7} ns {:>7} ns",
            f.p50, f.p99, f.mean
        );
    }
    println!(
        "ROCr / kfdrt: p50 {:.2}x, mean {:.2}x",
        rocr.p50 as f64 / kfdrt.p50.max(1) as f64,
        rocr.mean as f64 / kfdrt.mean.max(1) as f64
    );
    let protocol_ns = protocol.as_nanos().max(1) as f64;
    println!(
        "floors, same run: cache-line round trip p50 {} ns, AQL handshake alone p50 {} ns; \
         ROCr p50 / handshake = {:.2}x (the most any runtime could beat ROCr by on this \
         machine if it and the packet processor cost nothing), kfdrt p50 / handshake = {:.2}x",
        line.as_nanos(),
        protocol.as_nanos(),
        rocr.p50 as f64 / protocol_ns,
        kfdrt.p50 as f64 / protocol_ns
    );
    Ok(())
}

/// The interposer built with the same profile as this example: kfd-emu-preload is a
/// dev-dependency, so cargo builds it (into `target/<profile>/deps/`) with the example.
fn find_preload() -> Result<PathBuf, Error> {
    let exe = std::env::current_exe()?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("cannot locate the target directory")?;
    [profile_dir.join("deps"), profile_dir.to_path_buf()]
        .iter()
        .map(|d| d.join("libkfd_emu_preload.so"))
        .find(|p| p.exists())
        .ok_or_else(|| {
            format!(
                "libkfd_emu_preload.so not found under {}: build it with \
                 `cargo build -p kfd-emu-preload` (same profile)",
                profile_dir.display()
            )
            .into()
        })
}

/// Each round trip after `IDLE_PAUSE` of idleness, without spin-polling: every processor is
/// asleep when the doorbell rings. ROCr rings it without telling the emulator (the preload's
/// doorbell traps notice the store); kfdrt also passes a hint.
fn after_idle(preload: &Path, rounds: usize) -> Result<(), Error> {
    let rocr = rocr_round_trip(preload, rounds, IDLE_PAUSE)?;
    let kfdrt = kfdrt_round_trip(rounds, IDLE_PAUSE)?;
    println!(
        "empty barrier-AND round trip after {IDLE_PAUSE:?} idle on kfd-emu (gfx90a, processors \
         asleep), {rounds} rounds each"
    );
    println!("{:<28} {:>11} {:>11}", "", "p50", "p99");
    for (name, f) in [
        ("ROCr 5.2.3 (doorbell trap)", &rocr),
        ("kfdrt (doorbell hint)", &kfdrt),
    ] {
        println!(
            "{name:<28} {:>8.1} us {:>8.1} us",
            f.p50 as f64 / 1e3,
            f.p99 as f64 / 1e3
        );
    }
    Ok(())
}

/// How long the device idles before each round trip of `--idle`.
const IDLE_PAUSE: Duration = Duration::from_millis(20);

fn rocr_round_trip(preload: &Path, rounds: usize, pause: Duration) -> Result<Figures, Error> {
    if !Path::new("/usr/include/hsa/hsa.h").exists() {
        return Err("ROCr's headers are missing: install libhsa-runtime-dev".into());
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("kfd-emu/preload/tests/c/hsa_barrier.c");
    let bin = std::env::temp_dir().join(format!("kfdrt-rocr-roundtrip.{}", std::process::id()));
    let status = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&bin)
        .arg(&src)
        .arg("-lhsa-runtime64")
        .status()
        .map_err(|e| format!("cc: {e}"))?;
    if !status.success() {
        return Err(format!("cc failed on {}", src.display()).into());
    }
    let spin = if pause.is_zero() { "1" } else { "0" };
    let out = Command::new(&bin)
        .args([
            &rounds.to_string(),
            "--timing",
            &pause.as_micros().to_string(),
        ])
        .env("LD_PRELOAD", preload)
        .env("KFDRT_EMU_PRESET", "gfx90a")
        .env("KFDRT_EMU_GPUS", "1")
        .env("KFDRT_EMU_SPIN", spin)
        .env("KFDRT_EMU_LOG", "error")
        .output()?;
    let _ = std::fs::remove_file(&bin);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "hsa_barrier failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    // "roundtrip_ns p50 X p99 Y mean Z n N"
    let line = stdout
        .lines()
        .find(|l| l.starts_with("roundtrip_ns "))
        .ok_or("hsa_barrier printed no timing")?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let get = |key: &str| -> Result<u64, Error> {
        let i = words
            .iter()
            .position(|w| *w == key)
            .ok_or_else(|| format!("no {key} in {line:?}"))?;
        Ok(words.get(i + 1).ok_or("truncated timing line")?.parse()?)
    };
    let figures = Figures {
        p50: get("p50")?,
        p99: get("p99")?,
        mean: get("mean")?,
    };
    // After idle: the doorbell store's own duration (a trapped store faults).
    if let Some(l) = stdout.lines().find(|l| l.starts_with("doorbell_store_ns ")) {
        println!("ROCr's doorbell store itself (the trapped fault included): {l}");
    }
    Ok(figures)
}

fn kfdrt_round_trip(rounds: usize, pause: Duration) -> Result<Figures, Error> {
    let mut config = EmuConfig::new(Preset::Gfx90a, 1);
    config.spin_poll = pause.is_zero();
    let kfd = Kfd::builder().emulated(config).open()?;
    let gpu = kfd.gpu(0).ok_or("no GPU")?;
    let queue = gpu.create_aql_queue(Default::default())?;
    let wait = Some(Duration::from_secs(30));
    let mut ns = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
        let t = Instant::now();
        queue.barrier_and(&[])?.wait(wait)?;
        ns.push(t.elapsed().as_nanos() as u64);
    }
    ns.sort_unstable();
    Ok(Figures {
        p50: ns[(ns.len() - 1) / 2],
        p99: ns[(ns.len() - 1) * 99 / 100],
        mean: ns.iter().sum::<u64>() / ns.len() as u64,
    })
}
