//! What an AQL queue tells a hang or fault report (see [`crate::debug::report`]).

use super::AqlQueueShared;
use crate::debug::registry::{kernel_label, Kernels, Progress, QueueProbe};
use crate::device::KfdShared;
use crate::error::report::{QueueKind, QueueReport};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// An AQL queue as a report sees it.
pub(super) struct AqlProbe {
    pub(super) queue_id: u32,
    pub(super) gpu_id: u32,
    pub(super) queue: Weak<AqlQueueShared>,
    pub(super) progress: Arc<Progress>,
}

impl QueueProbe<KfdShared> for AqlProbe {
    fn queue_id(&self) -> u32 {
        self.queue_id
    }

    fn gpu_id(&self) -> u32 {
        self.gpu_id
    }

    fn drain(&self, _shared: &KfdShared, timeout: Option<Duration>) -> crate::Result<()> {
        // A barrier packet completes after every packet before it (its barrier bit), ordered
        // or not. A queue already destroyed has nothing left to run.
        match self.queue.upgrade() {
            Some(q) => super::AqlQueue(q).barrier_and(&[])?.wait(timeout),
            None => Ok(()),
        }
    }

    fn report(&self, shared: &KfdShared, names: &Kernels) -> QueueReport {
        let mut r = QueueReport {
            kind: QueueKind::Aql,
            queue_id: self.queue_id,
            gpu_id: 0,
            read: 0,
            write: 0,
            stuck_for: None,
            error: None,
            head: Vec::new(),
        };
        let Some(q) = self.queue.upgrade() else {
            r.error = Some("destroyed".into());
            return r;
        };
        r.gpu_id = q.gpu.id();
        r.read = q.ring.read_index();
        r.write = q.ring.write_index();
        let stuck = self.progress.observe(r.read);
        let v = q.inactive.value() as u64;
        let code = if aql::queue_error::is_scratch_request(v) {
            0
        } else {
            v
        };
        let exceptions = q.areas.exceptions.raised();
        if code != 0 || !exceptions.is_empty() {
            r.error = Some(crate::queue::QueueFault { code, exceptions }.to_string());
        }
        if r.read < r.write {
            r.stuck_for = Some(stuck);
            r.head = head(&q, r.read, shared, names);
        }
        r
    }
}

/// The packet at index `index`, decoded, one line per fact.
fn head(q: &AqlQueueShared, index: u64, shared: &KfdShared, names: &Kernels) -> Vec<String> {
    let slot = (index % u64::from(q.size_packets)) * 64;
    let mut bytes = [0u8; 64];
    if let Err(e) = q.ring_mem.read(slot, &mut bytes) {
        return vec![format!("#{index}: unreadable ({e})")];
    }
    let mut d = [0u32; 16];
    for (w, c) in d.iter_mut().zip(bytes.chunks_exact(4)) {
        *w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    }
    if !aql::is_valid_header_word(d[0]) {
        return vec![format!(
            "#{index}: not published yet (header {:#06x}): a producer reserved it and has not \
             written it",
            d[0] & 0xFFFF
        )];
    }
    let signals = shared.signals.lock().unwrap_or_else(|p| p.into_inner());
    let value = |h: u64| {
        signals
            .value_of(h)
            .map_or_else(|| "(not a kfdrt signal)".into(), |v| v.to_string())
    };
    match aql::Packet::decode(&d) {
        Ok(aql::Packet::KernelDispatch(k)) => vec![format!(
            "#{index}: dispatch {} grid {:?} work-group {:?}, kernarg {:#x}, LDS {} B, \
             scratch {} B per work-item, completion signal {:#x} = {}",
            kernel_label(names, k.kernel_object),
            k.grid_size,
            k.workgroup_size,
            k.kernarg_address,
            k.group_segment_size,
            k.private_segment_size,
            k.completion_signal,
            value(k.completion_signal)
        )],
        Ok(packet @ (aql::Packet::BarrierAnd(b) | aql::Packet::BarrierOr(b))) => {
            let kind = if matches!(packet, aql::Packet::BarrierAnd(_)) {
                "barrier-and (all must reach 0)"
            } else {
                "barrier-or (one must reach 0)"
            };
            let mut lines = vec![format!("#{index}: {kind}")];
            for &s in b.dep_signal.iter().filter(|&&s| s != 0) {
                lines.push(format!("  waits on signal {s:#x} = {}", value(s)));
            }
            lines.push(format!(
                "  completion signal {:#x} = {}",
                b.completion_signal,
                value(b.completion_signal)
            ));
            lines
        }
        Ok(aql::Packet::BarrierValue(b)) => vec![format!(
            "#{index}: barrier-value waits on signal {:#x} = {} (condition {} against {}, mask \
             {:#x})",
            b.signal,
            value(b.signal),
            b.condition,
            b.value,
            b.mask
        )],
        Ok(aql::Packet::VendorPm4Ib(p)) => vec![format!(
            "#{index}: PM4 indirect buffer at {:#x}, {} dwords",
            p.ib_address, p.ib_size_dwords
        )],
        Err(e) => vec![format!("#{index}: undecodable ({e:?}): {d:08x?}")],
    }
}
