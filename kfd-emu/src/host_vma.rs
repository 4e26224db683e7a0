//! The process's own memory map, as the driver sees it through the VMAs when it maps shared
//! virtual memory for a GPU: `svm_range_validate_and_map` maps a page read-only when its VMA
//! lacks `VM_WRITE` (`readonly = !(vma->vm_flags & VM_WRITE)`, with XNACK off as here), and a
//! page outside every VMA, or one the process may not read, cannot be mapped at all.
//!
//! Read from `/proc/self/maps` each time a caller asks: the emulator keeps no copy, so what it
//! maps follows the process's `mmap`, `mprotect` and `munmap` calls as of the moment it looks.

/// One span of the process's address space and what the process may do with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Vma {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) read: bool,
    pub(crate) write: bool,
}

/// The process's VMAs, sorted and disjoint.
#[derive(Debug, Default)]
pub(crate) struct HostMap(Vec<Vma>);

impl HostMap {
    /// The process's memory map now. If `/proc/self/maps` cannot be read, the map says every
    /// address is readable and writable (what the emulator assumed before it looked).
    pub(crate) fn read() -> HostMap {
        match std::fs::read_to_string("/proc/self/maps") {
            Ok(text) => HostMap::parse(&text),
            Err(e) => {
                log::warn!("kfd-emu: cannot read /proc/self/maps ({e}): SVM pages map writable");
                HostMap(vec![Vma {
                    start: 0,
                    end: u64::MAX,
                    read: true,
                    write: true,
                }])
            }
        }
    }

    /// Parses `/proc/<pid>/maps` lines (`start-end perms offset dev inode [path]`); lines it
    /// cannot read are skipped.
    pub(crate) fn parse(text: &str) -> HostMap {
        let mut v: Vec<Vma> = text
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let (s, e) = f.next()?.split_once('-')?;
                let perms = f.next()?.as_bytes();
                Some(Vma {
                    start: u64::from_str_radix(s, 16).ok()?,
                    end: u64::from_str_radix(e, 16).ok()?,
                    read: perms.first() == Some(&b'r'),
                    write: perms.get(1) == Some(&b'w'),
                })
            })
            .collect();
        v.sort_by_key(|m| m.start);
        HostMap(v)
    }

    /// Takes `read`/`write` away from `start..end` (never grants them): what the map will say
    /// once a pending `mprotect` or `munmap` of that span is done.
    pub(crate) fn restrict(&mut self, start: u64, end: u64, read: bool, write: bool) {
        let mut out = Vec::with_capacity(self.0.len() + 2);
        for m in self.0.drain(..) {
            if m.end <= start || m.start >= end {
                out.push(m);
                continue;
            }
            if m.start < start {
                out.push(Vma { end: start, ..m });
            }
            out.push(Vma {
                start: m.start.max(start),
                end: m.end.min(end),
                read: m.read && read,
                write: m.write && write,
            });
            if m.end > end {
                out.push(Vma { start: end, ..m });
            }
        }
        self.0 = out;
    }

    /// The parts of `start..end` that lie in VMAs, clipped to it, in address order.
    pub(crate) fn pieces(&self, start: u64, end: u64) -> impl Iterator<Item = Vma> + '_ {
        self.0
            .iter()
            .filter(move |m| m.start < end && start < m.end)
            .map(move |m| Vma {
                start: m.start.max(start),
                end: m.end.min(end),
                ..*m
            })
    }

    /// The VMA holding `va`, whole.
    pub(crate) fn vma_at(&self, va: u64) -> Option<Vma> {
        self.0.iter().find(|m| m.start <= va && va < m.end).copied()
    }

    /// Whether every page of `start..end` lies in a VMA (`svm_range_is_valid`).
    pub(crate) fn covers(&self, start: u64, end: u64) -> bool {
        let mut at = start;
        for m in self.pieces(start, end) {
            if m.start > at {
                return false;
            }
            at = m.end;
        }
        at >= end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
1000-3000 rw-p 00000000 00:00 0 [heap]
3000-4000 r--p 00000000 00:00 0
6000-8000 ---p 00000000 00:00 0
";

    #[test]
    fn pieces_carry_each_vmas_permissions() {
        let m = HostMap::parse(MAPS);
        let p: Vec<_> = m.pieces(0x2000, 0x7000).collect();
        assert_eq!(
            p,
            [
                Vma {
                    start: 0x2000,
                    end: 0x3000,
                    read: true,
                    write: true
                },
                Vma {
                    start: 0x3000,
                    end: 0x4000,
                    read: true,
                    write: false
                },
                Vma {
                    start: 0x6000,
                    end: 0x7000,
                    read: false,
                    write: false
                },
            ]
        );
        assert!(m.covers(0x1000, 0x4000));
        assert!(!m.covers(0x3000, 0x7000), "4000..6000 is a hole");
    }

    #[test]
    fn restrict_only_takes_away() {
        let mut m = HostMap::parse(MAPS);
        m.restrict(0x2000, 0x3800, true, false);
        let p: Vec<_> = m
            .pieces(0x1000, 0x4000)
            .map(|v| (v.start, v.write))
            .collect();
        assert_eq!(
            p,
            [
                (0x1000, true),
                (0x2000, false),
                (0x3000, false),
                (0x3800, false)
            ]
        );
        m.restrict(0x6000, 0x8000, true, true);
        assert!(
            m.pieces(0x6000, 0x8000).all(|v| !v.read),
            "restrict never grants"
        );
    }
}
