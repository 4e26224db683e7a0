//! Debugging switches: logging, validation, serialized submission, hang reports, timelines,
//! dependency graphs, capture and substitution.
//!
//! Each switch is an environment variable read once when a [`crate::Kfd`] opens
//! ([`DebugOptions::from_env`]), or set in code ([`crate::KfdBuilder::debug`]). None costs anything
//! when off beyond a branch on a field read at open. `docs/debugging.md` says which to use for
//! which symptom.
//!
//! | Variable | Effect |
//! |---|---|
//! | `KFDRT_LOG=level[,target=level]` | log through `log`; installs a stderr logger if the program has none |
//! | `KFDRT_VALIDATE=1` | check every packet against what the hardware would refuse before publishing it |
//! | `KFDRT_SERIALIZE=1` | every submission waits for its completion before returning |
//! | `KFDRT_WAIT_TIMEOUT_MS=n` | waits without a timeout give up after `n` ms with a hang report |
//! | `KFDRT_TRACE=path.json` | Chrome trace-event timeline, written when the device drops (AQL queues are created profiled) |
//! | `KFDRT_DEPGRAPH=path.dot` | submissions, signals and barrier edges as a DOT graph |
//! | `KFDRT_CAPTURE=dir` | record every kernel dispatch for `kfdrt-replay` (serializes submissions) |
//! | `KFDRT_SUBSTITUTE=name=path.co[;name=path.co]` | dispatch kernel `name` from another code object |

pub(crate) mod address_map;
pub mod address_watch;
pub(crate) mod capture;
mod depgraph;
pub(crate) mod log;
pub(crate) mod options;
pub(crate) mod r_debug;
pub(crate) mod recorder;
pub(crate) mod registry;
pub mod replay;
pub mod report;
pub(crate) mod source_lines;
mod trace;

pub use r_debug::{address as r_debug_address, loaded_code_objects, LoadedCodeObject};

pub use options::{
    DebugOptions, CAPTURE_ENV, DEPGRAPH_ENV, LOG_ENV, SERIALIZE_ENV, SUBSTITUTE_ENV, TRACE_ENV,
    UNCHECKED_ENV, VALIDATE_ENV, WAIT_TIMEOUT_ENV,
};

impl crate::device::Kfd {
    /// Where GPU address `pc` is in the source, when it lies in a loaded code object built with
    /// line tables: `file:line in function`, innermost first, then each place an inlined
    /// function was inlined at (empty otherwise). Fault reports use it; so can a debugger's
    /// address-watch hits (kfd-emu's `Emulator::watch_hits`).
    pub fn source_location(&self, pc: u64) -> Vec<String> {
        self.shared.reports.sources.locate(pc).unwrap_or_default()
    }
}
