//! What a PM4 or SDMA queue tells a hang or fault report (see [`crate::debug::report`]): its
//! read and write pointers from the pointer page, and the packet at the read pointer decoded.

use crate::debug::report::{Progress, QueueKind, QueueProbe, QueueReport};
use crate::device::KfdShared;
use crate::memory::Buffer;
use std::collections::HashMap;
use std::sync::Arc;

/// Decodes the dwords at the read pointer into one line.
pub(crate) type Decoder = Box<dyn Fn(&[u32]) -> String + Send + Sync>;

/// A ring queue as a report sees it. It holds the ring and the pointer page (the queue
/// unregisters it before they are freed).
pub(crate) struct RingProbe {
    pub(crate) kind: QueueKind,
    pub(crate) queue_id: u32,
    pub(crate) gpu_id: u32,
    pub(crate) ring: Arc<Buffer>,
    pub(crate) pointers: Arc<Buffer>,
    /// Offsets of the read and write pointers in the pointer page.
    pub(crate) rptr_at: u64,
    pub(crate) wptr_at: u64,
    /// Bytes per unit of the pointers (4: dwords, PM4; 1: bytes, SDMA).
    pub(crate) unit: u64,
    /// Whether the read pointer is an offset in the ring (PM4) rather than monotonic (SDMA).
    pub(crate) rptr_wraps: bool,
    pub(crate) decode: Decoder,
    pub(crate) progress: Progress,
}

impl RingProbe {
    fn word(&self, at: u64) -> u64 {
        let mut v = [0u8; 8];
        // The pointer page is host-visible (checked at creation); a failure reads as 0.
        let _ = self.pointers.read(at, &mut v);
        u64::from_le_bytes(v)
    }
}

impl QueueProbe for RingProbe {
    fn queue_id(&self) -> u32 {
        self.queue_id
    }

    fn report(&self, _shared: &KfdShared, _names: &HashMap<u64, String>) -> QueueReport {
        let ring_units = self.ring.size() / self.unit;
        let mut read = self.word(self.rptr_at);
        let mut write = self.word(self.wptr_at);
        if self.rptr_wraps {
            // PM4: a 32-bit offset in the ring against a monotonic write pointer.
            read &= 0xFFFF_FFFF;
            write %= ring_units.max(1);
        }
        let stuck = self.progress.observe(read);
        let mut r = QueueReport {
            kind: self.kind,
            queue_id: self.queue_id,
            gpu_id: self.gpu_id,
            read,
            write,
            stuck_for: None,
            error: None,
            head: Vec::new(),
        };
        if read != write {
            r.stuck_for = Some(stuck);
            if read > write {
                // Wrapped (PM4): report as pending, write past read.
                r.write = read + (write + ring_units - read) % ring_units.max(1);
            }
            let at = (read % ring_units.max(1)) * self.unit;
            let n = ((self.ring.size() - at) / 4).min(64) as usize;
            let mut bytes = vec![0u8; n * 4];
            r.head = match self.ring.read(at, &mut bytes) {
                Ok(()) => {
                    let dwords: Vec<u32> = bytes
                        .chunks_exact(4)
                        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .collect();
                    vec![format!("at {read}: {}", (self.decode)(&dwords))]
                }
                Err(e) => vec![format!("at {read}: unreadable ({e})")],
            };
        }
        r
    }
}
