//! `KFDRT_TRACE=path.json`: a timeline in Chrome's trace-event format, which Perfetto
//! (ui.perfetto.dev) and chrome://tracing open. Host spans (submissions, waits, allocations)
//! on the thread that made them; device spans from the completion signals' start and end
//! timestamps (AQL queues are created profiled while tracing), one track per queue under one
//! process per GPU; a flow arrow from each submission to its device span. GPU timestamps are
//! put on the host clock with two `GET_CLOCK_COUNTERS` samples (at open and at write).

use super::recorder::Submitted;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;

/// The pid of the host's track group; GPUs get 1000 + their index in the file.
const HOST_PID: u64 = 1;

/// The timeline being recorded.
pub(crate) struct Trace {
    path: PathBuf,
    /// Host spans: (name, thread, start ns, end ns, args).
    host: Vec<(String, u64, u64, u64, Value)>,
    /// Submissions by (queue, last index), waiting for their device span.
    submissions: HashMap<(u32, u64), (Submitted, u64)>,
    /// Device spans: (submission, host thread of the submission, GPU start, GPU end ticks).
    device: Vec<(Submitted, u64, u64, u64)>,
    threads: HashMap<std::thread::ThreadId, u64>,
}

impl Trace {
    pub(crate) fn new(path: PathBuf) -> Trace {
        Trace {
            path,
            host: Vec::new(),
            submissions: HashMap::new(),
            device: Vec::new(),
            threads: HashMap::new(),
        }
    }

    /// A small number for the calling thread (its track).
    fn tid(&mut self) -> u64 {
        let n = self.threads.len() as u64 + 1;
        *self.threads.entry(std::thread::current().id()).or_insert(n)
    }

    pub(crate) fn submitted(&mut self, s: Submitted) {
        let tid = self.tid();
        let name = format!("submit {} q{} {}", s.kind, s.queue_id, s.labels.join(", "));
        let args = json!({
            "queue": s.queue_id,
            "packets": format!("{}..={}", s.first, s.last),
            "completion_signal": format!("{:#x}", s.completion),
        });
        self.host.push((name, tid, s.host_start, s.host_end, args));
        self.submissions.insert((s.queue_id, s.last), (s, tid));
    }

    pub(crate) fn completed(&mut self, queue_id: u32, last: u64, start: u64, end: u64) {
        if let Some((s, tid)) = self.submissions.remove(&(queue_id, last)) {
            if start != 0 && end >= start {
                self.device.push((s, tid, start, end));
            }
        }
    }

    pub(crate) fn host_span(&mut self, name: &str, start: u64, end: u64) {
        let tid = self.tid();
        self.host
            .push((name.to_string(), tid, start, end, Value::Null));
    }

    /// The whole file as JSON.
    fn to_json(
        &self,
        clocks: &[(
            u32,
            crate::device::clock::ClockCounters,
            crate::device::clock::ClockCounters,
        )],
    ) -> Value {
        let us = |ns: u64| ns as f64 / 1000.0;
        let mut events = vec![json!({
            "name": "process_name", "ph": "M", "pid": HOST_PID,
            "args": {"name": "host (kfdrt)"}
        })];
        for (name, tid, start, end, args) in &self.host {
            events.push(json!({
                "name": name, "cat": "host", "ph": "X", "pid": HOST_PID, "tid": tid,
                "ts": us(*start), "dur": us(end.saturating_sub(*start)), "args": args,
            }));
        }
        // GPU ticks to host ns, per GPU, from the samples at open and now.
        let to_host = |gpu_id: u32, ticks: u64| -> Option<u64> {
            let (_, a, b) = clocks.iter().find(|(g, _, _)| *g == gpu_id)?;
            let (dg, dc) = (b.gpu.checked_sub(a.gpu)?, b.cpu.checked_sub(a.cpu)?);
            if dg == 0 {
                return None;
            }
            let rel = ticks as i128 - a.gpu as i128;
            Some((a.cpu as i128 + rel * dc as i128 / dg as i128).max(0) as u64)
        };
        let mut named = std::collections::HashSet::new();
        for (flow, (s, host_tid, start, end)) in self.device.iter().enumerate() {
            let (Some(t0), Some(t1)) = (to_host(s.gpu_id, *start), to_host(s.gpu_id, *end)) else {
                continue;
            };
            let pid = 1000 + u64::from(s.gpu_id);
            if named.insert((pid, 0)) {
                events.push(json!({
                    "name": "process_name", "ph": "M", "pid": pid,
                    "args": {"name": format!("GPU {:#x}", s.gpu_id)}
                }));
            }
            if named.insert((pid, u64::from(s.queue_id))) {
                events.push(json!({
                    "name": "thread_name", "ph": "M", "pid": pid, "tid": s.queue_id,
                    "args": {"name": format!("{} queue {}", s.kind, s.queue_id)}
                }));
            }
            let name = s.labels.join(", ");
            events.push(json!({
                "name": name, "cat": "device", "ph": "X", "pid": pid, "tid": s.queue_id,
                "ts": us(t0), "dur": us(t1.saturating_sub(t0)),
                "args": {"packets": format!("{}..={}", s.first, s.last)},
            }));
            // The arrow from the submission (its end on the host) to the device span.
            events.push(json!({
                "name": "submission", "cat": "flow", "ph": "s", "id": flow,
                "pid": HOST_PID, "tid": host_tid, "ts": us(s.host_end),
            }));
            events.push(json!({
                "name": "submission", "cat": "flow", "ph": "f", "bp": "e", "id": flow,
                "pid": pid, "tid": s.queue_id, "ts": us(t0),
            }));
        }
        json!({"traceEvents": events, "displayTimeUnit": "ns"})
    }

    pub(crate) fn write(
        &self,
        clocks: &[(
            u32,
            crate::device::clock::ClockCounters,
            crate::device::clock::ClockCounters,
        )],
    ) -> std::io::Result<()> {
        let text = serde_json::to_string(&self.to_json(clocks))?;
        std::fs::write(&self.path, text)?;
        log::info!("kfdrt: timeline written to {}", self.path.display());
        Ok(())
    }
}
