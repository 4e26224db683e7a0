//! Queues: AQL (kernel dispatch), PM4 and SDMA, with the doorbell, kernel-argument, CWSR and
//! ownership plumbing they share.

mod aql_queue;
mod completion;
pub(crate) mod cwsr;
pub(crate) mod doorbell;
mod handle;
pub(crate) mod hdp_queue;
pub(crate) mod held;
pub(crate) mod kernarg;
mod pm4_queue;
pub(crate) mod ring_probe;
mod ring_queue;
pub(crate) mod scratch_memory;
mod sdma_queue;
pub(crate) mod wave_exception;

pub use self::aql_queue::{
    AqlQueue, AqlQueueOptions, Batch, QueueFault, QueuePriority, Submission,
};
pub use self::completion::{wait_all, Completion};
pub use self::pm4_queue::{Pm4Queue, Pm4QueueOptions};
pub use self::scratch_memory::SINGLE_LIMIT as SCRATCH_SINGLE_LIMIT;
pub(crate) use self::sdma_queue::{check_fill, check_range};
pub use self::sdma_queue::{CopyCompletion, SdmaQueue};
pub use self::wave_exception::WaveExceptions;

/// The error bits a packet processor writes into a queue's inactive signal when the queue stops
/// (the values ROCr decodes into `hsa_status_t`). Defined once, in the `aql` crate, which the
/// emulated command processor writes them from.
pub use aql::queue_error as error_bits;
