use kfdrt::emu::{EmuConfig, Preset, WorkGroup};
use kfdrt::{AqlQueueOptions, Dispatch, Kfd};
use std::sync::Arc;
use std::time::{Duration, Instant};
fn main() {
    let kfd = Kfd::emulated(EmuConfig::new(Preset::Gfx90a, 1)).unwrap();
    let emu = kfd.emulator().unwrap().clone();
    let gpu = kfd.gpu(0).unwrap();
    let k = gpu.emulated_kernel("empty", 0, Arc::new(|_: &WorkGroup<'_>| Ok(()))).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default().with_size_packets(1024)).unwrap();
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(8);
    let pre: usize = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(0);
    for _ in 0..pre { let mut b = q.batch().unwrap(); for _ in 0..64 { b.dispatch(&Dispatch::linear(&k,1,1)).unwrap(); } b.submit().unwrap().wait(Some(Duration::from_secs(5))).unwrap(); }
    let mut t = vec![Vec::new(); n];
    for _ in 0..2000 {
        emu.faults().stall_queue(q.id());
        let mut subs = Vec::new();
        for i in 0..n {
            let s = Instant::now();
            subs.push(q.dispatch(&Dispatch::linear(&k, 1, 1)).unwrap());
            t[i].push(s.elapsed());
        }
        emu.faults().resume_queue(q.id());
        for s in subs { s.wait(Some(Duration::from_secs(5))).unwrap(); }
    }
    for (i, mut v) in t.into_iter().enumerate() { v.sort(); println!("dispatch #{i}: p50 {:?}", v[v.len()/2]); }
}
