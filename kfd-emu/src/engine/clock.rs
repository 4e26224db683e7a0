//! The clocks engines write into memory (timestamps in signals, RELEASE_MEM and COPY_DATA
//! sources, SDMA TIMESTAMP).

use std::time::Instant;

/// One GPU's clocks, counted from the emulator's start.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    epoch: Instant,
    gpu_clock_hz: u64,
}

impl Clock {
    /// The clocks of a GPU whose timestamp counter runs at `gpu_clock_hz`, started at `epoch`.
    pub(crate) fn new(epoch: Instant, gpu_clock_hz: u64) -> Clock {
        Clock {
            epoch,
            gpu_clock_hz,
        }
    }

    /// The GPU timestamp counter: ticks at the GPU's clock since the epoch.
    pub(crate) fn gpu_ticks(&self) -> u64 {
        (self.epoch.elapsed().as_nanos() * u128::from(self.gpu_clock_hz) / 1_000_000_000) as u64
    }

    /// The system clock PM4 reads (`SYSTEM_CLOCK`): nanoseconds since the epoch.
    pub(crate) fn system_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
}
