//! What the recording switches see: one call when a submission is published, one when its
//! completion is observed, one per host operation worth a span. The timeline
//! ([`super::trace`]) and the dependency graph ([`super::depgraph`]) are built from these
//! records; when neither switch is on the device has no recorder and each hook is one branch.

use super::address_map::AddressMap;
use super::capture::Capture;
use super::depgraph::DepGraph;
use super::registry::Registry;
use super::trace::Trace;
use crate::error::report::QueueKind;
use std::sync::Mutex;

/// One submission as it was published.
#[derive(Clone, Debug)]
pub(crate) struct Submitted {
    pub(crate) kind: QueueKind,
    pub(crate) queue_id: u32,
    pub(crate) gpu_id: u32,
    /// Packet indices (AQL), or a per-queue sequence number (PM4, SDMA).
    pub(crate) first: u64,
    pub(crate) last: u64,
    /// What the packets do, one label each ("vector_add", "barrier-and", "copy 4096 B").
    pub(crate) labels: Vec<String>,
    /// Signals the packets wait on (barrier dependencies).
    pub(crate) waits_on: Vec<u64>,
    /// The completion signal of the last packet (0: none).
    pub(crate) completion: u64,
    /// Host time (ns, CLOCK_MONOTONIC_RAW) when building and publishing began and ended.
    pub(crate) host_start: u64,
    pub(crate) host_end: u64,
}

/// The device's recorders.
pub(crate) struct Recorder {
    pub(crate) trace: Option<Mutex<Trace>>,
    pub(crate) depgraph: Option<Mutex<DepGraph>>,
    pub(crate) capture: Option<Mutex<Capture>>,
}

use crate::device::clock::host_ns;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Recorder {
    /// The recorders the options ask for, or `None`.
    pub(crate) fn new(options: &super::options::DebugOptions) -> Option<Recorder> {
        if options.trace.is_none() && options.depgraph.is_none() && options.capture.is_none() {
            return None;
        }
        Some(Recorder {
            trace: options
                .trace
                .as_ref()
                .map(|p| Mutex::new(Trace::new(p.clone()))),
            depgraph: options
                .depgraph
                .as_ref()
                .map(|p| Mutex::new(DepGraph::new(p.clone()))),
            capture: options
                .capture
                .as_ref()
                .map(|p| Mutex::new(Capture::new(p.clone()))),
        })
    }

    /// A submission was published.
    pub(crate) fn submitted(&self, s: Submitted) {
        if let Some(g) = &self.depgraph {
            lock(g).submitted(&s);
        }
        if let Some(t) = &self.trace {
            lock(t).submitted(s);
        }
    }

    /// The completion of queue `queue_id`'s submission ending at `last` was observed; the GPU
    /// ran it from `start` to `end` (GPU clock ticks; 0 when the queue records none).
    pub(crate) fn completed(&self, queue_id: u32, last: u64, start: u64, end: u64) {
        if let Some(t) = &self.trace {
            lock(t).completed(queue_id, last, start, end);
        }
        if let Some(c) = &self.capture {
            lock(c).complete_through(queue_id, last);
        }
    }

    /// A code object was loaded (the capture keeps its bytes).
    pub(crate) fn code_object(&self, base: u64, size: u64, elf: &[u8]) {
        if let Some(c) = &self.capture {
            lock(c).code_object(base, size, elf);
        }
    }

    /// AQL queue `queue_id`'s (on GPU index `gpu`) batch of `packets` is about to be
    /// published, the first at index `first`; `registry` and `buffers` are the device's.
    pub(crate) fn publishing<S>(
        &self,
        (queue_id, gpu): (u32, usize),
        first: u64,
        packets: &[[u32; 16]],
        registry: &Registry<S>,
        buffers: Option<&AddressMap>,
    ) {
        let (Some(c), Some(buffers)) = (&self.capture, buffers) else {
            return;
        };
        let mut c = lock(c);
        for (i, p) in packets.iter().enumerate() {
            if let Ok(aql::Packet::KernelDispatch(k)) = aql::Packet::decode(p) {
                c.dispatch(queue_id, gpu, first + i as u64, &k, registry, buffers);
            }
        }
    }

    /// A host operation (an allocation, a wait) ran from `start` to now (ns, see [`host_ns`]).
    pub(crate) fn host_span(&self, name: &str, start: u64) {
        if let Some(t) = &self.trace {
            lock(t).host_span(name, start, host_ns());
        }
    }

    /// Writes the files (when the device drops, or when asked).
    pub(crate) fn flush(
        &self,
        clocks: &[(
            u32,
            crate::device::clock::ClockCounters,
            crate::device::clock::ClockCounters,
        )],
    ) {
        if let Some(t) = &self.trace {
            if let Err(e) = lock(t).write(clocks) {
                log::error!("kfdrt: writing the KFDRT_TRACE timeline: {e}");
            }
        }
        if let Some(g) = &self.depgraph {
            if let Err(e) = lock(g).write() {
                log::error!("kfdrt: writing the KFDRT_DEPGRAPH graph: {e}");
            }
        }
        if let Some(c) = &self.capture {
            if let Err(e) = lock(c).write() {
                log::error!("kfdrt: writing the KFDRT_CAPTURE manifest: {e}");
            }
        }
    }
}
