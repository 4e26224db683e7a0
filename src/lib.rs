//! kfdrt: a user-mode runtime for AMD GPUs over the Linux KFD driver (`/dev/kfd`).
//!
//! kfdrt does what ROCr and libhsakmt do, in Rust: discover GPUs from the KFD topology, allocate
//! and map GPU memory, create events, signals and queues, dispatch kernels and copy memory. Every
//! system call goes through the [`kfd_sys::Driver`] seam, so the same code runs on a real GPU and on
//! the emulated device of the `kfd-emu` crate (feature `emu`, on by default).
//!
//! ```no_run
//! # fn main() -> kfdrt::Result<()> {
//! let kfd = kfdrt::Kfd::from_env()?; // KFDRT_DEVICE=auto|hw|emu
//! for gpu in kfd.gpus() {
//!     println!("{} with {} CUs", gpu.info().gfx_target, gpu.info().compute_units);
//!     let buf = gpu.alloc(1 << 20, kfdrt::MemoryKind::GttCoherent)?;
//!     buf.write(0, b"hello")?;
//! }
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

pub mod code_object;
pub mod copy;
mod device;
mod error;
pub mod event;
mod exception;
pub mod kernel;
pub mod kernel_args;
pub mod memory;
pub mod queue;
pub mod signal;
pub mod topology;

pub use aql::FenceScope;
pub use code_object::{CodeObject, CodeObjectError, LoadOptions};
pub use copy::{CopyEngine, CopyPath};
pub use device::{ClockCounters, DeviceChoice, Gpu, Kfd, DEVICE_ENV};
pub use error::{Error, Result};
pub use event::{Event, EventKind, MemoryException, WaitMode};
pub use exception::DeviceReset;
pub use kernel::Kernel;
pub use kernel_args::{KernelArgs, LaunchGeometry};
pub use kfd_sys::{DriverKind, Errno};
pub use memory::{AllocOptions, Buffer, HostRegistration, MemoryKind};
pub use queue::{
    AqlQueue, AqlQueueOptions, CopyCompletion, Dispatch, Pm4Queue, Pm4QueueOptions,
    PreparedDispatch, QueuePriority, SdmaQueue, Submission,
};
pub use signal::{Condition, Signal};
pub use topology::{GpuInfo, Topology};

/// The emulated device, re-exported for programs and tests that configure it.
#[cfg(feature = "emu")]
pub use kfd_emu as emu;
