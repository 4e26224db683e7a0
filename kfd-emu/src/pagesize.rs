//! Which GPU page sizes a GPU's mappings could use.
//!
//! The GPU maps memory with 4 KiB, 64 KiB or 2 MiB pages; a larger page needs the range it
//! covers to be aligned to its size and entirely inside one mapping. This is what placement
//! decides, so the emulator reports it for tests and benchmarks.

use crate::Emulator;

const HUGE: u64 = 2 << 20;
const BIG: u64 = 64 << 10;

/// Bytes of a GPU's mappings by the largest page size that could map them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageSizeStats {
    /// Bytes in 2 MiB-aligned 2 MiB pieces.
    pub bytes_2m: u64,
    /// Other bytes in 64 KiB-aligned 64 KiB pieces.
    pub bytes_64k: u64,
    /// The rest (4 KiB pages).
    pub bytes_4k: u64,
}

fn covered(start: u64, end: u64, page: u64) -> u64 {
    let first = start.div_ceil(page) * page;
    let last = end / page * page;
    last.saturating_sub(first)
}

/// Splits one mapping `[va, va + len)`.
pub fn classify(va: u64, len: u64) -> PageSizeStats {
    let end = va + len;
    let huge = covered(va, end, HUGE);
    let big_total = covered(va, end, BIG);
    PageSizeStats {
        bytes_2m: huge,
        bytes_64k: big_total - huge,
        bytes_4k: len - big_total,
    }
}

impl Emulator {
    /// How `gpu_id`'s mapped bytes split by GPU page size (`None` for an unknown GPU).
    pub fn page_size_stats(&self, gpu_id: u32) -> Option<PageSizeStats> {
        let g = self.gpu(gpu_id)?;
        let mut total = PageSizeStats::default();
        for (va, len) in g.vm.mappings() {
            let c = classify(va, len);
            total.bytes_2m += c.bytes_2m;
            total.bytes_64k += c.bytes_64k;
            total.bytes_4k += c.bytes_4k;
        }
        Some(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        assert_eq!(
            classify(0x20_0000, 4 << 20),
            PageSizeStats {
                bytes_2m: 4 << 20,
                bytes_64k: 0,
                bytes_4k: 0
            }
        );
        // Offset by one 4 KiB page: the 2 MiB pieces shrink, 64 KiB and 4 KiB pages fill in.
        let c = classify(0x20_1000, 4 << 20);
        assert_eq!(c.bytes_2m, 2 << 20);
        assert_eq!(c.bytes_2m + c.bytes_64k + c.bytes_4k, 4 << 20);
        // 60 KiB before the first 64 KiB boundary and 4 KiB after the last.
        assert_eq!(c.bytes_4k, (60 << 10) + (4 << 10));
        assert_eq!(
            classify(0x1000, 0x3000),
            PageSizeStats {
                bytes_2m: 0,
                bytes_64k: 0,
                bytes_4k: 0x3000
            }
        );
    }
}
