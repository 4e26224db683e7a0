//! Leak accounting: what a client holds of the device (buffers, GPU and CPU mappings, queues,
//! events) counted where it lives, so a test can check that dropping its runtime gave back
//! everything ([`crate::Emulator::live_objects`]).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;

/// What a CPU mapping made through the driver seam maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CpuMapKind {
    /// Anonymous memory (address-space reservations).
    Anonymous,
    /// A buffer, through its render node's mmap offset.
    Buffer,
    /// A GPU's doorbell pages.
    Doorbell,
    /// A GPU's MMIO-remap page.
    Mmio,
}

/// CPU mappings made through [`kfd_sys::Driver::mmap`] and not yet unmapped, as address ranges.
/// A mapping over an older one (`MAP_FIXED` into a reservation) replaces the part it covers, as
/// the kernel does; an unmap removes whatever part of each range it covers.
#[derive(Default)]
pub(crate) struct CpuMaps {
    /// start -> (end, kind); ranges never overlap.
    ranges: Mutex<BTreeMap<usize, (usize, CpuMapKind)>>,
}

impl CpuMaps {
    /// Notes a new mapping of `[start, start + len)`.
    pub(crate) fn mapped(&self, start: usize, len: usize, kind: CpuMapKind) {
        let mut r = self.lock();
        let end = start.saturating_add(len);
        cut(&mut r, start, end);
        r.insert(start, (end, kind));
    }

    /// Notes that `[start, start + len)` was unmapped.
    pub(crate) fn unmapped(&self, start: usize, len: usize) {
        cut(&mut self.lock(), start, start.saturating_add(len));
    }

    /// Live mappings of `kind`.
    pub(crate) fn count(&self, kind: CpuMapKind) -> usize {
        self.lock().values().filter(|(_, k)| *k == kind).count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<usize, (usize, CpuMapKind)>> {
        self.ranges.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Removes `[start, end)` from every range, keeping the parts outside it.
fn cut(r: &mut BTreeMap<usize, (usize, CpuMapKind)>, start: usize, end: usize) {
    if start >= end {
        return;
    }
    let hit: Vec<(usize, usize, CpuMapKind)> = r
        .range(..end)
        .rev()
        .take_while(|(_, (e, _))| *e > start)
        .map(|(s, (e, k))| (*s, *e, *k))
        .collect();
    for (s, e, k) in hit {
        r.remove(&s);
        if s < start {
            r.insert(s, (start, k));
        }
        if e > end {
            r.insert(end, (e, k));
        }
    }
}

/// What a client holds of the device: all zero once a runtime that cleans up has dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveObjects {
    /// Buffers allocated and not freed (`ALLOC_MEMORY_OF_GPU`).
    pub allocations: usize,
    /// (buffer, GPU) pairs mapped and not unmapped (`MAP_MEMORY_TO_GPU`).
    pub gpu_mappings: usize,
    /// CPU mappings of buffers through a render node, not unmapped.
    pub buffer_cpu_mappings: usize,
    /// CPU mappings of doorbell pages, not unmapped.
    pub doorbell_mappings: usize,
    /// CPU mappings of MMIO-remap pages, not unmapped.
    pub mmio_mappings: usize,
    /// Anonymous mappings (address reservations) made through the driver seam, not unmapped.
    pub anonymous_mappings: usize,
    /// Queues created and not destroyed.
    pub queues: usize,
    /// Events created and not destroyed.
    pub events: usize,
}

impl LiveObjects {
    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        *self == LiveObjects::default()
    }
}

impl fmt::Display for LiveObjects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts = [
            ("allocations", self.allocations),
            ("GPU mappings", self.gpu_mappings),
            ("buffer CPU mappings", self.buffer_cpu_mappings),
            ("doorbell mappings", self.doorbell_mappings),
            ("MMIO mappings", self.mmio_mappings),
            ("anonymous mappings", self.anonymous_mappings),
            ("queues", self.queues),
            ("events", self.events),
        ];
        let live: Vec<String> = parts
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(what, n)| format!("{n} {what}"))
            .collect();
        if live.is_empty() {
            f.write_str("nothing live")
        } else {
            f.write_str(&live.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_mappings_replace_parts_of_reservations_and_unmaps_trim() {
        let m = CpuMaps::default();
        m.mapped(0x10000, 0x10000, CpuMapKind::Anonymous);
        m.mapped(0x14000, 0x1000, CpuMapKind::Buffer);
        assert_eq!(m.count(CpuMapKind::Anonymous), 2);
        assert_eq!(m.count(CpuMapKind::Buffer), 1);
        m.unmapped(0x14000, 0x1000);
        assert_eq!(m.count(CpuMapKind::Buffer), 0);
        m.unmapped(0x10000, 0x8000);
        assert_eq!(m.count(CpuMapKind::Anonymous), 1);
        m.unmapped(0x18000, 0x8000);
        assert_eq!(m.count(CpuMapKind::Anonymous), 0);
        m.unmapped(0x18000, 0x8000);
    }

    #[test]
    fn display_lists_only_what_is_live() {
        assert_eq!(LiveObjects::default().to_string(), "nothing live");
        let l = LiveObjects {
            queues: 2,
            events: 1,
            ..Default::default()
        };
        assert!(!l.is_empty());
        assert_eq!(l.to_string(), "2 queues, 1 events");
    }
}
