//! What a PM4 or SDMA queue tells a hang or fault report (see [`crate::debug::report`]): its
//! read and write pointers from the pointer page, and the packet at the read pointer decoded.

use crate::debug::registry::{Kernels, Progress, QueueProbe};
use crate::device::{Gpu, KfdShared};
use crate::error::report::{QueueKind, QueueReport};
use crate::memory::Buffer;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Decodes the dwords at the read pointer into one line.
type Decoder = Box<dyn Fn(&[u32]) -> String + Send + Sync>;

/// A ring queue as a report sees it. It holds the ring and the pointer page (the queue
/// unregisters it before they are freed).
struct RingProbe {
    kind: QueueKind,
    queue_id: u32,
    gpu_id: u32,
    ring: Arc<Buffer>,
    pointers: Arc<Buffer>,
    /// Offsets of the read and write pointers in the pointer page.
    rptr_at: u64,
    wptr_at: u64,
    decode: Decoder,
    progress: Progress,
    /// The GPU's exception epoch when the queue was made (exceptions since end a drain).
    exception_epoch: usize,
}

/// Registers PM4 or SDMA queue `queue_id` of `gpu` for hang reports: its ring, its pointer page
/// with the read and write pointers at `rptr_at` and `wptr_at`, and how to decode a packet.
#[allow(clippy::too_many_arguments)]
pub(crate) fn register<P: std::fmt::Debug, E: std::fmt::Debug>(
    gpu: &Gpu,
    kind: QueueKind,
    queue_id: u32,
    ring: &Arc<Buffer>,
    pointers: &Arc<Buffer>,
    rptr_at: u64,
    wptr_at: u64,
    decode: impl Fn(&[u32]) -> Result<(P, usize), E> + Send + Sync + 'static,
) {
    gpu.kfd().shared.reports.register(Arc::new(RingProbe {
        kind,
        queue_id,
        gpu_id: gpu.id(),
        ring: ring.clone(),
        pointers: pointers.clone(),
        rptr_at,
        wptr_at,
        decode: Box::new(move |d: &[u32]| match decode(d) {
            Ok((p, _)) => format!("{p:?}"),
            Err(e) => format!("undecodable ({e:?}): {:08x?}", &d[..d.len().min(8)]),
        }),
        progress: Progress::default(),
        exception_epoch: gpu.exception_epoch().unwrap_or(0),
    }));
}

impl RingProbe {
    fn word(&self, at: u64) -> u64 {
        let mut v = [0u8; 8];
        // The pointer page is host-visible (checked at creation); a failure reads as 0.
        let _ = self.pointers.read(at, &mut v);
        u64::from_le_bytes(v)
    }

    /// Bytes per unit of the pointers: PM4 counts dwords, SDMA bytes.
    fn unit(&self) -> u64 {
        match self.kind {
            QueueKind::Pm4 => 4,
            _ => 1,
        }
    }
}

impl RingProbe {
    /// The read and write pointers, in the same terms (PM4: a 32-bit offset in the ring
    /// against a monotonic write pointer, so both as offsets).
    fn pointers(&self) -> (u64, u64) {
        let mut read = self.word(self.rptr_at);
        let mut write = self.word(self.wptr_at);
        if self.kind == QueueKind::Pm4 {
            read &= 0xFFFF_FFFF;
            write %= (self.ring.size() / self.unit()).max(1);
        }
        (read, write)
    }
}

impl QueueProbe<KfdShared> for RingProbe {
    fn queue_id(&self) -> u32 {
        self.queue_id
    }

    fn gpu_id(&self) -> u32 {
        self.gpu_id
    }

    fn drain(&self, shared: &KfdShared, timeout: Option<Duration>) -> crate::Result<()> {
        // A ring engine runs its packets one after the other: it has completed what was
        // submitted when its read pointer reaches the write pointer.
        let started = Instant::now();
        loop {
            let (read, write) = self.pointers();
            if read == write {
                return Ok(());
            }
            shared.exceptions.poll(shared.dev.driver())?;
            shared.exceptions.check(
                Some(self.gpu_id),
                self.exception_epoch,
                Some(self.queue_id),
            )?;
            if let Some(t) = timeout.filter(|t| started.elapsed() >= *t) {
                return Err(crate::Error::Timeout {
                    what: format!("{:?} queue {} to drain", self.kind, self.queue_id),
                    after_ms: t.as_millis() as u64,
                    report: None,
                });
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    fn report(&self, _shared: &KfdShared, _kernels: &Kernels) -> QueueReport {
        let unit = self.unit();
        let ring_units = self.ring.size() / unit;
        let (read, write) = self.pointers();
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
            let at = (read % ring_units.max(1)) * unit;
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
