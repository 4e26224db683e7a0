//! [`StreamEvent`]: a point recorded in a stream, to wait for from the host or other streams and
//! to time work between two of them.

use crate::device::Gpu;
use crate::error::{Error, Result, StreamError};
use crate::queue::Submission;
use std::sync::Arc;
use std::time::Duration;

/// A point of a [`super::Stream`]: reached when everything enqueued before it has completed.
/// Cheap to clone; it keeps the marker packet's signal until dropped.
#[derive(Clone)]
pub struct StreamEvent {
    gpu: Gpu,
    marker: Arc<Submission>,
}

impl std::fmt::Debug for StreamEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamEvent")
            .field("queue", &self.marker.queue().id())
            .field("packet", &self.marker.packet_index())
            .field("reached", &self.is_reached())
            .finish()
    }
}

impl StreamEvent {
    pub(super) fn new(gpu: Gpu, marker: Arc<Submission>) -> StreamEvent {
        StreamEvent { gpu, marker }
    }

    pub(super) fn marker(&self) -> &Arc<Submission> {
        &self.marker
    }

    /// Refuses an event of another open device, whose signals the stream's GPU cannot read.
    pub(super) fn check_device(&self, gpu: &Gpu) -> Result<()> {
        gpu.kfd().same_device(self.gpu.kfd(), "a stream event")
    }

    /// The GPU whose stream recorded it.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Whether the stream has reached it.
    pub fn is_reached(&self) -> bool {
        self.marker.is_complete()
    }

    /// Waits until the stream reaches it (`None`: no limit but `KFDRT_WAIT_TIMEOUT_MS`). An
    /// error of the stream's queue or GPU ends the wait with that error.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<()> {
        self.marker.wait(timeout)
    }

    /// When the stream reached it, in ticks of the GPU's timestamp counter
    /// ([`Gpu::timestamp_frequency`]); waits for it first.
    pub fn gpu_timestamp(&self) -> Result<u64> {
        self.wait(None)?;
        let (_, end) = self.marker.timestamps();
        if end == 0 {
            return Err(StreamError::NotProfiled.into());
        }
        Ok(end)
    }

    /// The GPU time from `earlier` to this event (both of the same GPU); waits for both.
    pub fn elapsed_since(&self, earlier: &StreamEvent) -> Result<Duration> {
        self.check_device(&earlier.gpu)?;
        if earlier.gpu.id() != self.gpu.id() {
            return Err(StreamError::DifferentGpus {
                earlier_gpu_id: earlier.gpu.id(),
                gpu_id: self.gpu.id(),
            }
            .into());
        }
        let (a, b) = (earlier.gpu_timestamp()?, self.gpu_timestamp()?);
        let hz = self.gpu.timestamp_frequency()?;
        let ticks = u128::from(b.saturating_sub(a));
        Ok(Duration::from_nanos(
            (ticks * 1_000_000_000 / u128::from(hz)) as u64,
        ))
    }
}

/// How long the GPU and system counters are compared for to measure the GPU counter's rate:
/// with system-call jitter of a few microseconds, the rate is good to about 0.1%.
const RATE_WINDOW: Duration = Duration::from_millis(5);

impl Gpu {
    /// The rate of the GPU timestamp counter (in stream events and profiled signals), in Hz.
    ///
    /// KFD does not report it (amdgpu's DRM `DEV_INFO` does, as `gpu_counter_freq`); kfdrt
    /// measures it once, as ROCr converts ticks to system time, from two `GET_CLOCK_COUNTERS`
    /// samples: the one taken when the device was opened and one at least a few milliseconds
    /// later (the first call may sleep that long). It is rounded to kHz.
    pub fn timestamp_frequency(&self) -> Result<u64> {
        let cell = &self.state().timestamp_hz;
        if let Some(&hz) = cell.get() {
            return Ok(hz);
        }
        let kfd = self.kfd();
        let first = match kfd
            .shared
            .clocks_at_open
            .iter()
            .find(|(g, _)| *g == self.id())
        {
            Some((_, c)) => *c,
            None => kfd.clock_counters(self)?,
        };
        let mut now = kfd.clock_counters(self)?;
        let window = |a: u64, b: u64| Duration::from_nanos(b.saturating_sub(a));
        let elapsed = window(first.system, now.system);
        if elapsed < RATE_WINDOW {
            std::thread::sleep(RATE_WINDOW - elapsed);
            now = kfd.clock_counters(self)?;
        }
        let ticks = u128::from(now.gpu.saturating_sub(first.gpu));
        let system = u128::from(now.system.saturating_sub(first.system));
        if ticks == 0 || system == 0 || now.system_freq_hz == 0 {
            return Err(Error::Topology(format!(
                "GPU {:#x}'s timestamp counter does not advance",
                self.id()
            )));
        }
        let hz = ticks * u128::from(now.system_freq_hz) / system;
        let hz = ((hz + 500) / 1000 * 1000) as u64;
        Ok(*cell.get_or_init(|| hz.max(1)))
    }
}
