//! [`StreamError`]: a stream, a stream event or a captured graph used in a way it cannot be.

/// A stream, a stream event or a captured graph used in a way it cannot be. Nothing was
/// enqueued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// A graph replayed on a stream other than the one it was captured from.
    #[error(
        "a graph captured on the stream of queue {captured_on} replays only there (this is queue {replayed_on})"
    )]
    OtherStream {
        /// The queue of the stream the graph was captured on.
        captured_on: u32,
        /// The queue of the stream it was to replay on.
        replayed_on: u32,
    },
    /// A launch captured into a graph with raw argument bytes: the graph could not keep the
    /// buffers they name alive for every replay.
    #[error(
        "a graph launch of {kernel:?} with raw argument bytes: give KernelArgs, whose buffers the graph keeps for every replay"
    )]
    RawGraphArguments {
        /// The kernel's name.
        kernel: String,
    },
    /// `Graph::set_args` on a node that is not a launch of the graph.
    #[error("GraphNode({node}) is not a launch of the graph")]
    NotALaunch {
        /// The node's index in the graph.
        node: usize,
    },
    /// `Graph::set_args` on a launch whose arguments were not checked against the kernel's
    /// metadata when captured, so new ones cannot be checked either.
    #[error("GraphNode({node}) ({kernel}) has no metadata-checked arguments to replace")]
    UncheckedArguments {
        /// The node's index in the graph.
        node: usize,
        /// The kernel it launches.
        kernel: String,
    },
    /// A GPU timestamp of an event whose stream's queue is not profiled.
    #[error("the event's stream queue is not profiled: it carries no timestamp")]
    NotProfiled,
    /// The time between events of different GPUs, whose clocks differ.
    #[error("elapsed time between events of GPUs {earlier_gpu_id:#x} and {gpu_id:#x}: their clocks differ")]
    DifferentGpus {
        /// The GPU of the earlier event.
        earlier_gpu_id: u32,
        /// The GPU of the later one.
        gpu_id: u32,
    },
    /// A copy between a device slice and host data of different lengths.
    #[error("a device slice of {device} elements and host data of {host}")]
    LengthMismatch {
        /// Elements of the device slice.
        device: usize,
        /// Elements of the host data.
        host: usize,
    },
}
