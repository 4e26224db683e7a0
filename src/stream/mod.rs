//! [`Stream`]: an in-order sequence of GPU work on one GPU, as a HIP stream is. Launches,
//! copies (device, peer and host memory), fills, waits on other streams' events and host
//! callbacks run in the order they were enqueued; the stream picks the engine for each
//! (kernels on its AQL queue, copies on its copy engine) and wires the signals between them.
//!
//! ```
//! # fn main() -> kfdrt::Result<()> {
//! # let kfd = kfdrt::Kfd::from_env()?;
//! let gpu = kfd.gpu(0).unwrap();
//! let mut stream = gpu.create_stream()?;
//! let buf = gpu.alloc(4096, kfdrt::MemoryKind::DeviceLocal)?;
//! stream.copy_from_host(&buf, 0, &[7u8; 4096])?; // the bytes are staged: `src` is free again
//! let start = stream.record()?;
//! stream.fill(&buf, 0, 0x0101_0101, 1024)?;
//! let end = stream.record()?;
//! let mut back = vec![0u8; 4096];
//! stream.copy_to_host(&mut back, &buf, 0)?; // waits for the work before it
//! assert_eq!(&back[..1024], &[1u8; 1024][..]);
//! assert_eq!(&back[1024..], &[7u8; 3072][..]);
//! println!("the fill took {:?}", end.elapsed_since(&start)?);
//! # Ok(()) }
//! ```
//!
//! # How order is kept
//! Work on the stream's AQL queue is ordered by the barrier bit of each packet (as every
//! [`Dispatch`] sets it unless made [`Dispatch::unordered`]). Work that runs elsewhere (a copy
//! on an SDMA engine, a blit kernel on the copy engine's own queue, a host callback) waits on
//! the completion signal of the stream's previous operation, and the next operation waits on
//! its one: the stream keeps only the last completion, which owns what its work uses.

mod event;
mod graph;
mod host;
mod pool;

pub use self::event::StreamEvent;
pub use self::graph::{Capture, Graph, GraphNode};
pub use self::pool::{MemoryPool, PoolStats, PooledBuffer};
pub use crate::error::StreamError;

use crate::copy::CopyEngine;
use crate::device::Gpu;
use crate::error::Result;
use crate::launch::Dispatch;
use crate::memory::Buffer;
use crate::queue::{AqlQueue, AqlQueueOptions, CopyCompletion, Submission};
use crate::signal::Signal;
use std::sync::Arc;
use std::time::Duration;

/// Options for [`Gpu::create_stream_with`].
#[derive(Clone, Debug)]
pub struct StreamOptions {
    /// The AQL queue's options. The queue starts without profiling and turns it on with the
    /// first [`Stream::record`], as HIP does on its first timed event, so that events carry
    /// timestamps (the GPU then writes them for every packet: ask for `profiled()` queues
    /// from the start if every launch should carry them).
    pub queue: AqlQueueOptions,
    /// Which copy path to prefer (SDMA falls back to blit kernels when no SDMA queue can be had).
    pub copy_path: crate::CopyPath,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            queue: AqlQueueOptions::default(),
            copy_path: crate::CopyPath::Sdma,
        }
    }
}

/// The completion of a stream's most recent operation.
enum Tail {
    /// Nothing enqueued since the last synchronisation.
    Idle,
    /// A kernel launch on the stream's AQL queue.
    Kernel(Submission),
    /// A marker (a barrier packet) on the stream's AQL queue, shared with the events recorded
    /// there.
    Marker(Arc<Submission>),
    /// A copy or fill on the copy engine.
    Copy(CopyCompletion),
}

impl Tail {
    fn signal(&self) -> Option<&Signal> {
        match self {
            Tail::Idle => None,
            Tail::Kernel(s) => Some(s.signal()),
            Tail::Marker(s) => Some(s.signal()),
            Tail::Copy(c) => Some(c.signal()),
        }
    }

    /// Whether the operation ran on the stream's AQL queue, whose barrier bits order the next
    /// packet after it without a signal.
    fn on_queue(&self) -> bool {
        matches!(self, Tail::Kernel(_) | Tail::Marker(_))
    }

    fn wait(&self, timeout: Option<Duration>) -> Result<()> {
        match self {
            Tail::Idle => Ok(()),
            Tail::Kernel(s) => s.wait(timeout),
            Tail::Marker(s) => s.wait(timeout),
            Tail::Copy(c) => c.wait(timeout),
        }
    }
}

/// An in-order stream of GPU work on one GPU (see the [module docs](self)).
///
/// Dropping a stream waits for its work (errors are dropped with it: call
/// [`Stream::synchronize`] to see them).
pub struct Stream {
    gpu: Gpu,
    queue: AqlQueue,
    copies: CopyEngine,
    tail: Tail,
    /// Events of other streams the next operation waits for.
    waits: Vec<Arc<Submission>>,
    host: host::HostService,
    /// Pinned host memory that host copies are staged through.
    staging: MemoryPool,
    /// Whether the queue writes timestamps (turned on by the first event).
    profiled: bool,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("gpu", &format_args!("{:#x}", self.gpu.id()))
            .field("queue", &self.queue.id())
            .field("copy_path", &self.copies.path())
            .finish()
    }
}

impl Gpu {
    /// A new stream on this GPU: a profiled AQL queue and a copy engine of its own.
    pub fn create_stream(&self) -> Result<Stream> {
        self.create_stream_with(StreamOptions::default())
    }

    /// A new stream with `options`.
    pub fn create_stream_with(&self, options: StreamOptions) -> Result<Stream> {
        Ok(Stream {
            gpu: self.clone(),
            queue: self.create_aql_queue(options.queue)?,
            copies: self.copy_engine_preferring(options.copy_path)?,
            tail: Tail::Idle,
            waits: Vec::new(),
            host: host::HostService::default(),
            staging: self.create_memory_pool(crate::MemoryKind::GttCoherent),
            profiled: options.queue.profiling,
        })
    }
}

impl Stream {
    /// The GPU the stream runs on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The AQL queue kernels run on.
    pub fn queue(&self) -> &AqlQueue {
        &self.queue
    }

    /// The engine copies and fills run on.
    pub fn copy_engine(&self) -> &CopyEngine {
        &self.copies
    }

    /// The signals the next operation must wait for, if it runs on the AQL queue
    /// (`on_queue`) or elsewhere.
    fn deps(&self, on_queue: bool) -> Vec<&Signal> {
        let mut deps: Vec<&Signal> = self.waits.iter().map(|e| e.signal()).collect();
        if !(on_queue && self.tail.on_queue()) {
            deps.extend(self.tail.signal());
        }
        deps
    }

    /// Makes `tail` the stream's last operation; what the previous one held is released when it
    /// completes (its completion is handed to its queue).
    fn push(&mut self, tail: Tail) {
        self.waits.clear();
        self.tail = tail;
    }

    /// Launches `d` after everything enqueued before it.
    pub fn launch(&mut self, d: &Dispatch<'_>) -> Result<()> {
        let deps = self.deps(true);
        let done = if deps.is_empty() {
            self.queue.dispatch(d)?
        } else {
            let mut b = self.queue.batch()?;
            b.barrier_and(&deps)?;
            b.dispatch(d)?;
            b.submit()?
        };
        self.push(Tail::Kernel(done));
        Ok(())
    }

    /// Copies `bytes` from `src[src_off..]` to `dst[dst_off..]` (device, peer or pinned host
    /// buffers) on the stream's copy engine.
    pub fn copy(
        &mut self,
        dst: &Buffer,
        dst_off: u64,
        src: &Buffer,
        src_off: u64,
        bytes: u64,
    ) -> Result<()> {
        let done = {
            let deps = self.deps(false);
            self.copies.copy(dst, dst_off, src, src_off, bytes, &deps)?
        };
        self.push(Tail::Copy(done));
        Ok(())
    }

    /// Fills `bytes` (a multiple of 4) of `dst[dst_off..]` with `pattern`.
    pub fn fill(&mut self, dst: &Buffer, dst_off: u64, pattern: u32, bytes: u64) -> Result<()> {
        let done = {
            let deps = self.deps(false);
            self.copies.fill(dst, dst_off, pattern, bytes, &deps)?
        };
        self.push(Tail::Copy(done));
        Ok(())
    }

    /// Makes the stream's next operation wait until `event` (of any stream on this device) has
    /// been reached.
    pub fn wait_event(&mut self, event: &StreamEvent) -> Result<()> {
        event.check_device(&self.gpu)?;
        self.waits.push(event.marker().clone());
        Ok(())
    }

    /// Submits a marker after everything enqueued so far: a barrier packet on the AQL queue,
    /// waiting for the pending cross-engine dependencies.
    fn marker(&mut self) -> Result<Arc<Submission>> {
        if let (Tail::Marker(m), true) = (&self.tail, self.waits.is_empty()) {
            return Ok(m.clone());
        }
        let deps = self.deps(true);
        let mut b = self.queue.batch()?;
        b.barrier_and(&deps)?;
        let m = Arc::new(b.submit()?);
        self.push(Tail::Marker(m.clone()));
        Ok(m)
    }

    /// Records an event at this point of the stream: it is reached when everything enqueued
    /// before it has completed, and carries the GPU time at which that happened.
    pub fn record(&mut self) -> Result<StreamEvent> {
        if !self.profiled {
            self.queue.set_profiling(true);
            self.profiled = true;
        }
        // A fresh marker even right after another: each event has its own timestamp.
        let deps = self.deps(true);
        let mut b = self.queue.batch()?;
        b.barrier_and(&deps)?;
        let m = Arc::new(b.submit()?);
        self.push(Tail::Marker(m.clone()));
        Ok(StreamEvent::new(self.gpu.clone(), m))
    }

    /// Waits until everything enqueued has completed. A queue error, a GPU fault or a failed
    /// host callback ends the wait with its error; the stream is then idle.
    pub fn synchronize(&mut self) -> Result<()> {
        let timeout = self.gpu.kfd().shared.debug.wait_timeout;
        let r = self.tail.wait(timeout);
        if r.is_ok() {
            self.tail = Tail::Idle;
        }
        r
    }

    /// Whether everything enqueued has completed.
    pub fn is_idle(&self) -> bool {
        self.tail.signal().is_none_or(|s| s.value() <= 0) && self.waits.is_empty()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // The queue and copy engine go with the stream: their work must end first.
        if let Err(e) = self.tail.wait(self.gpu.kfd().shared.debug.wait_timeout) {
            log::warn!("kfdrt: a stream dropped with failed work: {e}");
        }
    }
}
