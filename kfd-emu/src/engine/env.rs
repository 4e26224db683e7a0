//! What the packet processors take from the emulator: the kernels bound to code, the counters
//! they bump, the clock's epoch and the options of the configuration that change how they run.

use crate::config::EmuConfig;
use crate::kernel::KernelRegistry;
use crate::stats::Counters;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The emulator-wide parts every processor thread holds (by reference count: a thread never
/// depends on the emulator outliving it).
#[derive(Clone)]
pub(crate) struct EngineEnv {
    pub(crate) kernels: Arc<KernelRegistry>,
    pub(crate) stats: Arc<Counters>,
    /// When the emulator started: the clocks count from here.
    pub(crate) epoch: Instant,
    pub(crate) options: EngineOptions,
}

/// The configuration options the processors follow (see [`EmuConfig`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct EngineOptions {
    /// Spin instead of sleeping while idle.
    pub(crate) spin_poll: bool,
    /// Consume packets only up to the doorbell (AQL and PM4 queues).
    pub(crate) requires_doorbell: bool,
    /// How long the AQL processor waits after reading a packet before checking it was not torn.
    pub(crate) torn_check_window: Duration,
    /// The strict personality's detectors are on.
    pub(crate) strict: bool,
    /// Host threads a dispatch of machine code may use.
    pub(crate) wave_threads: usize,
}

impl EngineOptions {
    /// The processors' options of `config`.
    pub(crate) fn of(config: &EmuConfig) -> EngineOptions {
        EngineOptions {
            spin_poll: config.spin_poll,
            requires_doorbell: config.aql_requires_doorbell,
            torn_check_window: config.torn_check_window,
            strict: config.strict,
            wave_threads: match config.wave_threads {
                0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
                n => n,
            },
        }
    }
}
