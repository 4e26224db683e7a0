//! Queue priorities as the CP honours them (issue #25 item 13): a queue's priority becomes its
//! pipe priority (`pipe_priority_map`: 0-6 low, 7-10 medium, 11-15 high), and while a
//! higher-priority queue of the GPU has work-groups to start, a lower one starts none.
//! kfd-emu used to run every queue's dispatches side by side whatever their priority.

use crate::common;
use kfdrt::emu::{GpuFault, Preset, WorkGroup};
use kfdrt::{AqlQueueOptions, Dispatch, QueuePriority};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const T: Option<Duration> = Some(Duration::from_secs(30));
const TAG0: [u8; 8] = 0u64.to_le_bytes();
const TAG1: [u8; 8] = 1u64.to_le_bytes();

/// An emulated kernel whose work-groups note their argument (a tag) as they start, then take
/// 2 ms; and the tags noted.
fn tagging_kernel(gpu: &kfdrt::Gpu) -> (kfdrt::Kernel, Arc<Mutex<Vec<u32>>>) {
    let starts: Arc<Mutex<Vec<u32>>> = Arc::default();
    let noted = starts.clone();
    let k = gpu
        .emulated_kernel(
            "tagged",
            8,
            Arc::new(move |wg: &WorkGroup<'_>| -> Result<(), GpuFault> {
                noted.lock().unwrap().push(wg.kernarg_u64(0)? as u32);
                std::thread::sleep(Duration::from_millis(2));
                Ok(())
            }),
        )
        .unwrap();
    (k, starts)
}

/// `k` over `groups` one-item work-groups, with `tag` as its argument.
fn tagged<'a>(k: &'a kfdrt::Kernel, groups: u32, tag: &'a [u8; 8]) -> Dispatch<'a> {
    // SAFETY: the argument is a tag, not a GPU address.
    unsafe { Dispatch::linear(k, groups, 1).with_raw_args(tag) }
}

#[test]
fn a_high_priority_queue_starts_its_work_groups_before_a_low_one_starts_more() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let (k, starts) = tagging_kernel(&gpu);
    let queue = |priority| {
        gpu.create_aql_queue(AqlQueueOptions::default().with_priority(priority))
            .unwrap()
    };
    let (low, high) = (queue(QueuePriority::Low), queue(QueuePriority::High));
    let low_run = low.dispatch(&tagged(&k, 200, &TAG0)).unwrap();
    let t0 = Instant::now();
    while starts.lock().unwrap().len() < 3 && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
    high.dispatch(&tagged(&k, 10, &TAG1))
        .unwrap()
        .wait(T)
        .unwrap();
    low_run.wait(T).unwrap();
    let s = starts.lock().unwrap().clone();
    assert_eq!(s.len(), 210);
    let first_high = s.iter().position(|&t| t == 1).unwrap();
    let last_high = s.iter().rposition(|&t| t == 1).unwrap();
    let low_between = s[first_high..last_high].iter().filter(|&&t| t == 0).count();
    // At most the low work-group that was starting when the high dispatch arrived.
    assert!(
        low_between <= 1,
        "{low_between} low work-groups started among the high ones: {s:?}"
    );
}

#[test]
fn queues_of_the_same_priority_share_the_gpu() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let (k, starts) = tagging_kernel(&gpu);
    let a = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let b = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let ra = a.dispatch(&tagged(&k, 40, &TAG0)).unwrap();
    let rb = b.dispatch(&tagged(&k, 40, &TAG1)).unwrap();
    ra.wait(T).unwrap();
    rb.wait(T).unwrap();
    let s = starts.lock().unwrap().clone();
    // Neither waits for the other to finish.
    let first_b = s.iter().position(|&t| t == 1).unwrap();
    let last_a = s.iter().rposition(|&t| t == 0).unwrap();
    assert!(first_b < last_a, "{s:?}");
}
