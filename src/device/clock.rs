//! The host and GPU clocks: what `GET_CLOCK_COUNTERS` samples together, and the host clock it
//! pairs GPU time with. Below everything that timestamps (queues, the recorder).

/// Clock counters sampled together by the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockCounters {
    /// The GPU's free-running counter.
    pub gpu: u64,
    /// CPU clock (CLOCK_MONOTONIC_RAW, ns).
    pub cpu: u64,
    /// System clock (CLOCK_BOOTTIME, ns).
    pub system: u64,
    /// Frequency of the system counter in Hz.
    pub system_freq_hz: u64,
}

/// The host clock in ns: CLOCK_MONOTONIC_RAW, the CPU clock `GET_CLOCK_COUNTERS` pairs GPU time
/// with ([`ClockCounters::cpu`]), so host and GPU timestamps share a time line.
pub(crate) fn host_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-parameter.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
