//! The GPU's engines: one packet-processor thread per queue, running AQL, PM4 or SDMA packets.
//!
//! The three processors (`aql`, `pm4`, `sdma`) each run one packet language; what they share
//! lives beside them in small modules of its own, which they import and which import none of
//! them:
//! - `control`: the queue control block the queue table and the processor share (ring, stop,
//!   enable, errors; the pause check, which also asks the fault injector about stalls; the HDP
//!   flush poll at the start of a packet; device exceptions);
//! - `error`: the error codes a queue stops with, as the `aql` crate's queue-error ABI;
//! - `backoff`: the idle loop and memory polls that cost no CPU while nothing changes;
//! - `clock`: the GPU and system clocks engines write;
//! - `launch`: running a host-bound emulated kernel over its grid (AQL dispatches, PM4
//!   `DISPATCH_DIRECT`);
//! - `machine`: running a dispatch's real machine code on the wave interpreter, over a pool of
//!   host threads;
//! - `scratch`: the AQL queue's scratch as the CP reads it from `amd_queue_t`, and the
//!   requests it makes to the runtime when a dispatch needs more;
//! - `pm4_interpreter`: the PM4 interpreter of PM4 queues and of AQL vendor PM4-IB packets;
//! - `env`: what the processors take from the emulator (kernels, counters, options).
//!
//! This module is the entry the queue table uses: [`spawn`] starts the processor a queue's type
//! calls for. Below the engines are the GPU's state (`device`, `vm`, `icache`, `hdp`), `events`,
//! `kernel`, `fault` and `stats`; none of those, and no engine, imports `queue`.

mod aql;
mod backoff;
mod clock;
mod control;
mod env;
mod error;
mod launch;
mod machine;
mod pm4;
mod pm4_interpreter;
mod scratch;
mod sdma;
pub(crate) mod watcher;
mod wave_exception;

pub(crate) use self::aql::mark_free_slots as mark_free_aql_slots;
pub(crate) use self::clock::Clock;
pub(crate) use self::control::QueueCtl;
pub(crate) use self::env::{EngineEnv, EngineOptions};
pub use self::error::QueueErrorCode;
pub(crate) use self::sdma::ib_memory_packet as sdma_ib_packet;

use kfd_sys::bindings::{
    KFD_IOC_QUEUE_TYPE_COMPUTE, KFD_IOC_QUEUE_TYPE_SDMA, KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID,
    KFD_IOC_QUEUE_TYPE_SDMA_XGMI,
};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Starts the packet processor of the queue `ctl`, chosen by its KFD queue type: SDMA queues
/// (also over XGMI and on a chosen engine) get an SDMA engine, COMPUTE queues the PM4 processor, and AQL queues
/// the AQL processor. The queue type was checked by `CREATE_QUEUE`.
pub(crate) fn spawn(ctl: Arc<QueueCtl>, env: &EngineEnv) -> std::io::Result<JoinHandle<()>> {
    match ctl.queue_type {
        KFD_IOC_QUEUE_TYPE_SDMA
        | KFD_IOC_QUEUE_TYPE_SDMA_XGMI
        | KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID => sdma::spawn(ctl, env),
        KFD_IOC_QUEUE_TYPE_COMPUTE => pm4::spawn(ctl, env),
        _ => aql::spawn(ctl, env),
    }
}
