//! kfdrt: a user-mode runtime for AMD GPUs over the Linux KFD driver (`/dev/kfd`).
//!
//! kfdrt does what ROCr and libhsakmt do, in Rust: discover GPUs from the KFD topology, allocate
//! and map GPU memory, create events, signals and queues, dispatch kernels and copy memory. Every
//! system call goes through the [`kfd_sys::Driver`] seam, so the same code runs on a real GPU and on
//! the emulated device of the `kfd-emu` crate (feature `emu`: off by default, so a program that
//! links kfdrt for a GPU compiles no emulator; this workspace's tests and examples turn it on).
//! A device opens through [`Kfd::builder`] ([`Kfd::from_env`] is its one-line form).
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
//!
//! # Ownership: GPU work owns what it uses
//!
//! A submission (a dispatch, a barrier, a copy or a fill) keeps the kernel's code, the buffers
//! it was given and the signals it waits on allocated until its completion is observed; dropping
//! the [`Buffer`], the [`Kernel`] or the completion early is safe, and the memory is freed once
//! the GPU is done with it (or its queue destroyed). What kfdrt cannot see is `unsafe`: raw
//! kernel-argument bytes and raw PM4 or SDMA packets carry addresses it cannot track.
//!
//! ```compile_fail,E0133
//! # fn f(kernel: &kfdrt::Kernel, queue: &kfdrt::AqlQueue) {
//! let bytes = [0u8; 16]; // whatever addresses these hold, kfdrt cannot keep them alive
//! let d = kfdrt::Dispatch::linear(kernel, 64, 64).with_raw_args(&bytes); // needs `unsafe`
//! # }
//! ```
//!
//! ```compile_fail,E0133
//! # fn f(q: &kfdrt::Pm4Queue, addr: u64) {
//! let p = q.write_data(addr, &[1]);
//! q.submit(&[p], std::time::Duration::from_secs(1)); // raw packets: needs `unsafe`
//! # }
//! ```
//!
//! Borrows the compiler enforces: a batch does not outlive its queue, a prepared dispatch does
//! not outlive its kernel, registered host memory is not touched while the GPU may use it, and
//! a mutable view of a buffer excludes every other access through it.
//!
//! ```compile_fail,E0597
//! # fn f(gpu: &kfdrt::Gpu) -> kfdrt::Result<()> {
//! let batch = {
//!     let queue = gpu.create_aql_queue(Default::default())?;
//!     queue.batch()?
//! }; // the queue is gone
//! batch.submit()?;
//! # Ok(()) }
//! ```
//!
//! ```compile_fail,E0597
//! # fn f(gpu: &kfdrt::Gpu) -> kfdrt::Result<()> {
//! let prepared = {
//!     let kernel = gpu.emulated_kernel("k", 0, std::sync::Arc::new(|_: &kfdrt::emu::WorkGroup<'_>| Ok(())))?;
//!     kfdrt::Dispatch::linear(&kernel, 64, 64).prepare()?
//! }; // the kernel is gone
//! drop(prepared);
//! # Ok(()) }
//! ```
//!
//! ```compile_fail,E0499
//! # fn f(gpu: &kfdrt::Gpu) -> kfdrt::Result<()> {
//! let mut host = vec![0u8; 4096];
//! let registration = gpu.register_host_memory(&mut host)?;
//! host[0] = 1; // the GPU may be reading it
//! drop(registration);
//! # Ok(()) }
//! ```
//!
//! ```compile_fail,E0502
//! # fn f(mut buf: kfdrt::Buffer) -> kfdrt::Result<()> {
//! let view = buf.as_mut_slice().unwrap();
//! buf.write(0, &[1])?; // would change `view` underneath
//! view[0] = 2;
//! # Ok(()) }
//! ```
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

/// The code of the README and of `docs/`, compiled as doctests: every snippet a user may copy
/// builds against the current API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// See [`ReadmeDoctests`].
#[cfg(doctest)]
#[doc = include_str!("../docs/debugging.md")]
pub struct DebuggingDocDoctests;

pub mod code_object;
pub mod copy;
pub mod debug;
mod device;
mod error;
pub mod event;
mod exception;
pub mod hostcall;
pub mod kernel;
pub mod kernel_args;
pub mod launch;
pub mod memory;
pub mod queue;
pub mod signal;
pub mod smi;
pub mod stream;
pub mod topology;

pub use aql::FenceScope;
pub use code_object::{CodeObject, CodeObjectError, LoadOptions};
pub use copy::{CopyEngine, CopyPath};
pub use debug::DebugOptions;
pub use device::{ClockCounters, DeviceChoice, Gpu, Kfd, KfdBuilder, DEVICE_ENV};
pub use error::{Error, Result};
pub use event::{Event, EventKind, EventReset, MemoryException, WaitMode};
pub use exception::DeviceReset;
pub use kernel::Kernel;
pub use kernel_args::{KernelArgs, LaunchGeometry};
pub use kfd_sys::{DriverKind, Errno, Feature, KfdVersion};
pub use launch::{Dispatch, PreparedDispatch};
pub use memory::{AllocOptions, Buffer, DeviceSlice, Element, HostRegistration, MemoryKind};
pub use queue::{
    AqlQueue, AqlQueueOptions, CopyCompletion, Pm4Queue, Pm4QueueOptions, QueuePriority, SdmaQueue,
    Submission, WaveExceptions,
};
pub use signal::{Condition, Signal};
pub use stream::{Graph, MemoryPool, PoolStats, PooledBuffer, Stream, StreamEvent, StreamOptions};
pub use topology::{CwsrSizes, GpuInfo, IoLink, IoLinkFlags, PeerAccess, Topology};

/// The emulated device, re-exported for programs and tests that configure it.
#[cfg(feature = "emu")]
pub use kfd_emu as emu;
