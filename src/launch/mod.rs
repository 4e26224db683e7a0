//! Launching kernels on queues: a [`Dispatch`] (a kernel, its grid, its arguments) as an AQL
//! packet, alone or in a [`crate::queue::Batch`], prepared once and reused, or as PM4 packets.
//! Above the queues (which carry packets and know nothing of kernels) and the kernels and
//! their arguments.

mod batch;
mod dispatch;
mod pm4;
mod single;
mod with_args;

pub(crate) use dispatch::DispatchArgs;
pub use dispatch::{Dispatch, PreparedDispatch};
pub(crate) use with_args::check_kernel;
