//! Device-wide synchronisation (`hipDeviceSynchronize`): wait for everything submitted to
//! every live queue of a GPU, or of every GPU, through kfdrt — streams, bare queues, copy
//! engines and kfdrt's own (loader, HDP, blit) queues alike.

use super::{Gpu, Kfd};
use crate::error::Result;
use std::time::Duration;

impl Kfd {
    /// Waits until every queue of every GPU has completed what was submitted to it before the
    /// call (`timeout` per queue; `None`: `KFDRT_WAIT_TIMEOUT_MS` or no limit). The first
    /// queue error, GPU fault or timeout ends it.
    pub fn synchronize(&self, timeout: Option<Duration>) -> Result<()> {
        self.drain(None, timeout)
    }

    fn drain(&self, gpu_id: Option<u32>, timeout: Option<Duration>) -> Result<()> {
        let shared = &self.shared;
        let timeout = timeout.or(shared.debug.wait_timeout);
        for q in shared.reports.queues_of(gpu_id) {
            q.drain(shared, timeout)?;
        }
        Ok(())
    }
}

impl Gpu {
    /// [`Kfd::synchronize`] for this GPU's queues only.
    pub fn synchronize(&self, timeout: Option<Duration>) -> Result<()> {
        self.kfd.drain(Some(self.id()), timeout)
    }
}
