//! Shared helpers of the integration tests.
//!
//! Tests open the device `KFDRT_DEVICE` names (default `auto`: `/dev/kfd` when present, else the
//! emulator). Tests that need the emulator's counters or several GPUs create their own emulated
//! device; tests that need real hardware call [`hardware_or_skip`].
#![allow(dead_code)]

use kfdrt::emu::{EmuConfig, Preset};
use kfdrt::Kfd;

/// The device under test, as `KFDRT_DEVICE` selects.
pub fn device() -> Kfd {
    match Kfd::from_env() {
        Ok(k) => k,
        Err(e) => panic!("cannot open the device under test: {e}"),
    }
}

/// A fresh emulated device.
pub fn emulated(preset: Preset, gpus: usize) -> Kfd {
    match Kfd::emulated(EmuConfig::new(preset, gpus)) {
        Ok(k) => k,
        Err(e) => panic!("cannot create an emulated {preset} x{gpus}: {e}"),
    }
}

/// `/dev/kfd`, or `None` after printing why the test is skipped.
pub fn hardware_or_skip(test: &str) -> Option<Kfd> {
    if !kfd_sys::DevKfd::present() {
        eprintln!("{test}: skipped: /dev/kfd is absent (no AMD GPU on this machine)");
        return None;
    }
    match Kfd::open() {
        Ok(k) => Some(k),
        Err(e) => {
            eprintln!("{test}: skipped: {e}");
            None
        }
    }
}

/// Submits raw PM4 packets.
pub fn pm4_submit(
    q: &kfdrt::Pm4Queue,
    packets: &[pm4::Pm4Packet],
    timeout: std::time::Duration,
) -> kfdrt::Result<u64> {
    // SAFETY: every address the tests' packets name is a buffer the test keeps until
    // the packets have run (it waits with `finish` or on what they signal), or an address
    // chosen to fault.
    unsafe { q.submit(packets, timeout) }
}

/// Submits raw SDMA packets.
pub fn sdma_submit(
    q: &kfdrt::SdmaQueue,
    packets: &[sdma::SdmaPacket],
    timeout: std::time::Duration,
) -> kfdrt::Result<u64> {
    // SAFETY: as `pm4_submit`.
    unsafe { q.submit(packets, timeout) }
}

/// A dispatch with raw kernel arguments.
pub fn raw_dispatch<'a>(
    kernel: &'a kfdrt::Kernel,
    grid: u32,
    workgroup: u16,
    args: &'a [u8],
) -> kfdrt::Dispatch<'a> {
    // SAFETY: the addresses in every test's arguments are buffers the test keeps until it has
    // waited for the dispatch (or the queue is gone), or addresses chosen to fault.
    unsafe { kfdrt::Dispatch::linear(kernel, grid, workgroup).with_raw_args(args) }
}
