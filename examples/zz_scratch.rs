use kfdrt::emu::{EmuConfig, Preset, WorkGroup};
use kfdrt::{AqlQueueOptions, Dispatch, Kfd};
use std::sync::Arc;
use std::time::{Duration, Instant};
fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    let kfd = Kfd::emulated(EmuConfig::new(Preset::Gfx90a, 1)).unwrap();
    let gpu = kfd.gpu(0).unwrap();
    let kernel = gpu
        .emulated_kernel("empty", 0, Arc::new(|_: &WorkGroup<'_>| Ok(())))
        .unwrap();
    let queue = gpu
        .create_aql_queue(AqlQueueOptions::default().with_size_packets(1024))
        .unwrap();
    let _extra_aql =
        (which.contains('a')).then(|| gpu.create_aql_queue(AqlQueueOptions::default()).unwrap());
    let _extra_prof = (which.contains('p')).then(|| {
        gpu.create_aql_queue(AqlQueueOptions::default().profiled())
            .unwrap()
    });
    let _extra_sdma = (which.contains('s')).then(|| gpu.create_sdma_queue().unwrap());
    let _stream = (which.contains('t')).then(|| gpu.create_stream().unwrap());
    std::thread::sleep(Duration::from_millis(50));
    for _round in 0..3 {
        let mut spent = Duration::ZERO;
        let n = 20000;
        for _ in 0..n {
            let t = Instant::now();
            let s = queue.dispatch(&Dispatch::linear(&kernel, 1, 1)).unwrap();
            spent += t.elapsed();
            s.wait(None).unwrap();
        }
        let emu = kfd.emulator().unwrap();
        println!(
            "{which:>4}: {:?} per dispatch, traps {} hints {}",
            spent / n,
            emu.doorbell_traps(gpu.id()),
            emu.doorbell_hints(gpu.id())
        );
    }
}
