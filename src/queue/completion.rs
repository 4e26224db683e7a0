//! What work on any kind of queue hands back: a completion to poll or wait on, whether it is a
//! dispatch or barrier on an AQL queue ([`Submission`]) or a copy or fill on an SDMA queue or
//! the shader path ([`CopyCompletion`]). Code that only waits takes any of them.

use super::{CopyCompletion, Submission};
use crate::error::Result;
use crate::signal::Signal;
use std::time::{Duration, Instant};

/// The completion of work submitted to a queue, whatever the queue's kind.
pub trait Completion {
    /// The signal the work decrements when it completes.
    fn signal(&self) -> &Signal;
    /// Whether the work has completed (a load; no system call).
    fn is_complete(&self) -> bool;
    /// Waits until the work completes (`None`: no limit). A fault or error of the queue ends the
    /// wait with that error.
    fn wait(&self, timeout: Option<Duration>) -> Result<()>;
}

impl Completion for Submission {
    fn signal(&self) -> &Signal {
        Submission::signal(self)
    }

    fn is_complete(&self) -> bool {
        Submission::is_complete(self)
    }

    fn wait(&self, timeout: Option<Duration>) -> Result<()> {
        Submission::wait(self, timeout)
    }
}

impl Completion for CopyCompletion {
    fn signal(&self) -> &Signal {
        CopyCompletion::signal(self)
    }

    fn is_complete(&self) -> bool {
        CopyCompletion::is_complete(self)
    }

    fn wait(&self, timeout: Option<Duration>) -> Result<()> {
        CopyCompletion::wait(self, timeout)
    }
}

/// Waits for every completion in `items`, of any queue kinds, within one `timeout` for all of
/// them (`None`: no limit). The first error ends the wait; a timeout is
/// [`crate::Error::Timeout`] from the completion that ran out of time.
///
/// ```
/// # fn f(gpu: &kfdrt::Gpu, a: &kfdrt::Buffer, b: &kfdrt::Buffer) -> kfdrt::Result<()> {
/// use kfdrt::queue::{wait_all, Completion};
/// let queue = gpu.create_aql_queue(kfdrt::AqlQueueOptions::default())?;
/// let barrier = queue.barrier_and(&[])?;
/// let copy = gpu.copy_engine()?.copy(b, 0, a, 0, 4096, &[])?;
/// wait_all(&[&barrier, &copy], Some(std::time::Duration::from_secs(10)))?;
/// assert!(barrier.is_complete() && copy.is_complete());
/// # Ok(()) }
/// ```
pub fn wait_all(items: &[&dyn Completion], timeout: Option<Duration>) -> Result<()> {
    let deadline = timeout.map(|t| Instant::now() + t);
    for c in items {
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        c.wait(left)?;
    }
    Ok(())
}
