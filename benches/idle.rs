//! What an idle emulated device costs, and how fast it wakes (issue 18, item 1):
//! - idle CPU: 8 emulated GPUs with an AQL, a PM4 and an SDMA queue each, warmed up and then
//!   left alone for 3 s; the process's CPU time over that window, in % of one core;
//! - wake-up: after 20 ms of idleness (every processor asleep), one dispatch through kfdrt; the
//!   time from the submission to the kernel starting (the processor noticing the doorbell and
//!   running the packet), and the whole round trip (completion observed by the waiting
//!   thread); p50 and p99 of 200, beside the same figures on a busy device (no pause).
//!
//! `cargo bench --bench idle`. Prints its figures; no criterion (the quantities are CPU time
//! over a window and latency percentiles, not a loop's throughput).

use kfdrt::emu::{EmuConfig, GpuFault, Preset, WorkGroup};
use kfdrt::{AqlQueueOptions, Dispatch, Kfd, Pm4QueueOptions};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WAIT: Option<Duration> = Some(Duration::from_secs(10));

fn cpu_time() -> Duration {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `u` is a valid out-parameter for getrusage.
    let r = unsafe { libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr()) };
    assert_eq!(r, 0);
    // SAFETY: getrusage succeeded and filled it.
    let u = unsafe { u.assume_init() };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let kfd = Kfd::builder()
        .emulated(EmuConfig::new(Preset::Gfx90a, 8))
        .open()
        .expect("device");
    let mut keep = Vec::new();
    // IDLE_ONLY_AQL=1: one AQL queue per GPU only (to see what the other processors cost).
    let only_aql = std::env::var("IDLE_ONLY_AQL").is_ok();
    for gpu in kfd.gpus() {
        if only_aql {
            let aql = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
            keep.push((aql, None, None));
            continue;
        }
        let aql = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
        let pm4 = gpu.create_pm4_queue(Pm4QueueOptions::default()).unwrap();
        let sdma = gpu.create_sdma_queue().unwrap();
        aql.barrier_and(&[]).unwrap().wait(WAIT).unwrap();
        pm4.finish(Duration::from_secs(10)).unwrap();
        keep.push((aql, Some(pm4), Some(sdma)));
    }
    std::thread::sleep(Duration::from_millis(200));
    let window = Duration::from_secs(3);
    let (t0, c0) = (Instant::now(), cpu_time());
    std::thread::sleep(window);
    let (wall, cpu) = (t0.elapsed(), cpu_time() - c0);
    println!(
        "idle: 8 GPUs x (AQL + PM4 + SDMA): {:.2}% of a core ({:?} CPU over {:?})",
        cpu.as_secs_f64() / wall.as_secs_f64() * 100.0,
        cpu,
        wall
    );

    let q = &keep[0].0;
    let gpu = kfd.gpu(0).unwrap();
    let epoch = Instant::now();
    let started = Arc::new(AtomicU64::new(0));
    let kernel = {
        let started = started.clone();
        gpu.emulated_kernel(
            "stamp",
            0,
            Arc::new(move |_: &WorkGroup<'_>| -> Result<(), GpuFault> {
                started.store(epoch.elapsed().as_nanos() as u64, Ordering::SeqCst);
                Ok(())
            }),
        )
        .unwrap()
    };
    let run = |pause: Duration, n: usize| {
        let mut notice = Vec::with_capacity(n);
        let mut round = Vec::with_capacity(n);
        for _ in 0..n {
            std::thread::sleep(pause);
            let t0 = epoch.elapsed();
            q.dispatch(&Dispatch::linear(&kernel, 1, 1))
                .unwrap()
                .wait(WAIT)
                .unwrap();
            round.push(epoch.elapsed() - t0);
            notice.push(Duration::from_nanos(started.load(Ordering::SeqCst)) - t0);
        }
        notice.sort();
        round.sort();
        (notice, round)
    };
    let (f50, f99) = wake_floor();
    println!(
        "floor: a thread asleep 20 ms on a condvar, notified: wake-up p50 {f50:?}, p99 {f99:?}"
    );
    for (what, pause, n) in [
        ("after 20 ms idle", Duration::from_millis(20), 200),
        ("busy", Duration::ZERO, 2000),
    ] {
        let (notice, round) = run(pause, n);
        println!(
            "{what}: submission to kernel start p50 {:?}, p99 {:?}; round trip p50 {:?}, p99 {:?}",
            percentile(&notice, 0.5),
            percentile(&notice, 0.99),
            percentile(&round, 0.5),
            percentile(&round, 0.99)
        );
    }
}

/// The host's own wake-up latency: a thread that slept 20 ms on a condvar (as an idle processor
/// does) is notified; the time until it runs. No user-space design wakes a sleeping thread
/// faster, so this is the floor of "noticed after idle" without a spinning thread.
fn wake_floor() -> (Duration, Duration) {
    use std::sync::{Condvar, Mutex};
    let state = Arc::new((Mutex::new(None::<Instant>), Condvar::new()));
    let woke = Arc::new(Mutex::new(Vec::new()));
    let t = {
        let (state, woke) = (state.clone(), woke.clone());
        std::thread::spawn(move || {
            for _ in 0..200 {
                let (m, cv) = &*state;
                let mut g = m.lock().unwrap();
                while g.is_none() {
                    g = cv.wait_timeout(g, Duration::from_secs(1)).unwrap().0;
                }
                let sent = g.take().unwrap();
                woke.lock().unwrap().push(sent.elapsed());
            }
        })
    };
    for _ in 0..200 {
        std::thread::sleep(Duration::from_millis(20));
        let (m, cv) = &*state;
        *m.lock().unwrap() = Some(Instant::now());
        cv.notify_one();
    }
    t.join().unwrap();
    let mut w = woke.lock().unwrap().clone();
    w.sort();
    (percentile(&w, 0.5), percentile(&w, 0.99))
}
