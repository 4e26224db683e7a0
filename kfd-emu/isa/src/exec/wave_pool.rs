//! Waves that finished work-groups gave back, kept per host thread for the next work-group it
//! runs: starting a work-group's waves then allocates nothing and moves no wave (one is about
//! 1.5 KiB plus its vector file), which for short kernels (a vector add's wave runs 33
//! instructions) was a sixth of the run.

use super::wave::Wave;
use std::cell::RefCell;

/// Work-groups' wave lists a thread keeps (kfd-emu interleaves 16 work-groups per thread).
const LISTS: usize = 16;
/// Vector registers a kept list may hold in all (256 B each): 512 KiB, so a thread keeps at
/// most 8 MiB however large the kernels it ran.
const REGISTERS: usize = 2048;

thread_local! {
    static FREE: RefCell<Vec<Vec<Wave>>> = const { RefCell::new(Vec::new()) };
}

/// A wave list to start a work-group with: one a finished work-group gave back, or a new one.
/// Its waves are in whatever state they ended in; `init::start_wave` resets each.
pub(super) fn take() -> Vec<Wave> {
    FREE.try_with(|f| f.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Gives a finished work-group's waves back (dropping them when the thread keeps enough).
pub(super) fn give(mut waves: Vec<Wave>) {
    let registers: usize = waves.iter().map(|w| w.v.capacity()).sum();
    if waves.is_empty() || registers > REGISTERS {
        return;
    }
    for w in waves.iter_mut() {
        // The decoded code a wave was at stays alive while anything holds it: let it go.
        w.region = None;
    }
    // A thread being torn down drops the list instead.
    let _ = FREE.try_with(|f| {
        let mut f = f.borrow_mut();
        if f.len() < LISTS {
            f.push(waves);
        }
    });
}
