//! What a stream does on the host: copies from and to plain host memory (staged through pinned
//! buffers it allocates) and host callbacks (run in order by a service thread).

use super::PooledBuffer;
use super::{Stream, Tail};
use crate::error::{Error, Result, StreamError};
use crate::memory::Buffer;
use crate::queue::Submission;
use crate::signal::Signal;
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;

/// A host callback: what it waits for, the gate it opens, and the function.
struct Task {
    after: Arc<Submission>,
    gate: Signal,
    f: Box<dyn FnOnce(Result<()>) + Send>,
}

/// The thread that runs a stream's host callbacks, started by the first one.
#[derive(Default)]
pub(super) struct HostService {
    tasks: Option<Sender<Task>>,
}

impl HostService {
    /// Hands `task` to the thread (started on first use). If it cannot be, its gate is opened
    /// at once, so the barrier already submitted behind it does not wait forever.
    fn send(&mut self, task: Task) -> Result<()> {
        let tasks = match &mut self.tasks {
            Some(t) => t,
            none => {
                let (tx, rx) = channel::<Task>();
                let spawned = std::thread::Builder::new()
                    .name("kfdrt-stream-host".into())
                    .spawn(move || {
                        for t in rx {
                            run(t);
                        }
                    });
                if let Err(source) = spawned {
                    task.gate.store(0)?;
                    return Err(Error::Os {
                        what: "stream host-callback thread",
                        source,
                    });
                }
                none.insert(tx)
            }
        };
        tasks.send(task).or_else(|lost| {
            lost.0.gate.store(0)?;
            Err(Error::ServiceStopped {
                what: "host callback thread",
            })
        })
    }
}

/// Runs one callback once the work before it is done, then lets the stream go on.
fn run(t: Task) {
    let status = t.after.wait(None);
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (t.f)(status))).is_err() {
        log::error!("kfdrt: a stream host callback panicked");
    }
    // Opened even after a failure: the stream's next work then meets the error itself (its
    // queue is stopped) rather than waiting forever on a gate.
    if let Err(e) = t.gate.store(0) {
        log::error!("kfdrt: could not wake a stream after its host callback: {e}");
    }
}

impl Stream {
    /// A pinned host buffer to stage `bytes` through, from the stream's staging pool. The
    /// host writes or reads it out of stream order, so it is one no GPU work holds any more:
    /// staging buffers are dropped back to the pool, not freed at a stream position.
    fn staging(&self, bytes: usize) -> Result<PooledBuffer> {
        if bytes == 0 {
            return Err(Error::ZeroSize { what: "host copy" });
        }
        self.staging.alloc_async(bytes as u64, self)
    }

    /// Copies `src` (plain host memory) to `dst[dst_off..]` after the work before it. The bytes
    /// are copied into pinned staging memory before this returns, so `src` may be reused at
    /// once; the device copy runs later, in stream order.
    pub fn copy_from_host(&mut self, dst: &Buffer, dst_off: u64, src: &[u8]) -> Result<()> {
        let staging = self.staging(src.len())?;
        staging.write(0, src)?;
        // The copy holds the staging buffer until it completes.
        self.copy(dst, dst_off, &staging, 0, src.len() as u64)
    }

    /// Copies `src[src_off..]` into `dst` (plain host memory): waits for the work before it,
    /// then for the copy, as HIP's copy to pageable memory does. Errors of the earlier work are
    /// returned here.
    pub fn copy_to_host(&mut self, dst: &mut [u8], src: &Buffer, src_off: u64) -> Result<()> {
        let staging = self.staging(dst.len())?;
        self.copy(&staging, 0, src, src_off, dst.len() as u64)?;
        self.synchronize()?;
        staging.read(0, dst)
    }

    /// Runs `f` on a host thread once everything enqueued before it has completed (it gets
    /// that work's status); the stream's later work starts after `f` returns. Callbacks run one
    /// at a time, in order; one that panics is logged and counts as returned.
    pub fn host_fn(&mut self, f: impl FnOnce(Result<()>) + Send + 'static) -> Result<()> {
        let after = self.marker()?;
        let gate = self.gpu.kfd().create_signal(1)?;
        let mut b = self.queue.batch()?;
        b.barrier_and(&[&gate])?;
        let task = Task {
            after,
            gate,
            f: Box::new(f),
        };
        // The barrier waits for the gate: submitted before the task is sent, its signal cannot
        // have opened yet, and the callback cannot run before the work it follows.
        let m = Arc::new(b.submit()?);
        self.host.send(task)?;
        self.push(Tail::Marker(m));
        Ok(())
    }

    /// Copies `values` into `dst` (of the same length) after the work before it, staged as
    /// [`Stream::copy_from_host`] stages bytes.
    pub fn upload<T: crate::Element>(
        &mut self,
        dst: &crate::DeviceSlice<T>,
        values: &[T],
    ) -> Result<()> {
        check_len(dst.len(), values.len())?;
        self.copy_from_host(dst.buffer(), dst.offset(), crate::memory::as_bytes(values))
    }

    /// Copies `src` into `out` (of the same length), waiting as [`Stream::copy_to_host`] does.
    pub fn download<T: crate::Element>(
        &mut self,
        out: &mut [T],
        src: &crate::DeviceSlice<T>,
    ) -> Result<()> {
        check_len(src.len(), out.len())?;
        self.copy_to_host(crate::memory::as_bytes_mut(out), src.buffer(), src.offset())
    }
}

fn check_len(device: usize, host: usize) -> Result<()> {
    if device == host {
        Ok(())
    } else {
        Err(StreamError::LengthMismatch { device, host }.into())
    }
}
