//! A GPU's health: whether the exception events say it faulted, and where a queue's
//! exceptions start.

use super::Gpu;
use crate::error::{Error, Result};

impl Gpu {
    /// Looks at the exception events now (a system call) and returns the error a wait on this
    /// GPU's queue `queue_id`, created at exception epoch `since`, ends with, if any. For
    /// polling loops that do not sleep in `WAIT_EVENTS` (fences, ring space).
    pub(crate) fn poll_exceptions(&self, since: usize, queue_id: u32) -> Result<()> {
        let shared = &self.kfd().shared;
        shared.exceptions.poll(shared.dev.driver())?;
        shared
            .exceptions
            .check(Some(self.id()), since, Some(queue_id))
    }

    /// The exception epoch a queue created now starts at (looks at the events first, so an
    /// exception from before is not taken for a later one). A GPU that faulted has none to
    /// give: KFD creates every later queue there evicted (`create_queue_cpsch`), so it would
    /// never run, and the fault is the answer.
    pub(crate) fn exception_epoch(&self) -> Result<usize> {
        self.health()?;
        Ok(self.kfd().shared.exceptions.epoch())
    }

    /// Whether the GPU can still run work for this process: [`Error::DeviceFault`] with the
    /// fault once it has faulted (looking at the exception events first, a system call).
    ///
    /// A GPU page fault is for the rest of the process: KFD evicts every queue the process has
    /// on the GPU and never restores them, and queues created later are created evicted, so
    /// kfdrt refuses to create them and every wait on the old ones ends with the fault. What
    /// survives: the process's other GPUs, and its buffers, which the CPU can still read and
    /// other GPUs can still copy. A GPU reset ([`Error::DeviceReset`]) ends the waits of the
    /// queues that existed, but queues created afterwards run.
    pub fn health(&self) -> Result<()> {
        let shared = &self.kfd().shared;
        shared.dev.check_process()?;
        shared.exceptions.poll(shared.dev.driver())?;
        match shared.exceptions.fault_on(self.id()) {
            Some(fault) => Err(Error::DeviceFault {
                queue_id: None,
                fault,
                report: None,
            }),
            None => Ok(()),
        }
    }
}
