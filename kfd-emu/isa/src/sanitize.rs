//! A sanitizer for machine code: what a dispatch checks when asked ([`Sanitizer`] in
//! [`crate::DispatchSetup::sanitize`]), beyond what any hardware reports:
//! - **out-of-bounds accesses**: a lane's global access outside the buffer its pointer came
//!   from, even when the memory there is mapped (another buffer, or the padding after a
//!   suballocated one), which on hardware corrupts or reads its neighbour silently;
//! - **uninitialised LDS**: a read of LDS bytes no wave of the work-group has written;
//! - **LDS races**: two waves of a work-group accessing the same LDS bytes, at least one of them
//!   writing and not both atomically, with no barrier between them.
//!
//! Where a pointer came from is judged per instruction: for a global access with a scalar base
//! (`global_load v, v_off, s[base]`, what compilers emit for kernel-argument pointers) the
//! buffer containing the base; otherwise the buffer containing the first active lane's address.
//! An access whose origin is memory nobody owns (the padding after a buffer, the free part of a
//! suballocator's block) is reported as such; one whose origin is unknown is not checked. So an
//! access through a vector address whose every active lane is past its buffer's end, into an
//! adjacent live buffer, goes unnoticed.
//!
//! LDS accesses are ordered by the work-group's barrier count at the time (its *epoch*): two
//! accesses by different waves in the same epoch are unordered; accesses in different epochs
//! have a barrier between them. That makes the race check independent of how the emulator
//! happens to interleave the waves.

use std::sync::Arc;

/// The buffers a dispatch's memory accesses are checked against.
pub trait BufferMap: Send + Sync {
    /// What is at `address`.
    fn buffer_at(&self, address: u64) -> Owner;
}

/// Who owns an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The buffer `[start, end)`.
    Buffer(u64, u64),
    /// Nobody: the padding after a buffer, or the free part of a suballocator's block.
    Nobody,
    /// Memory the map knows nothing of (not checked).
    Unknown,
}

/// What a sanitized dispatch checks against and reports to.
pub struct Sanitizer {
    /// The buffers in use.
    pub buffers: Arc<dyn BufferMap>,
    /// Gets each finding (as many times as it happens: deduplicating is the sink's choice).
    pub sink: Arc<dyn Fn(&Finding) + Send + Sync>,
}

impl std::fmt::Debug for Sanitizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sanitizer").finish_non_exhaustive()
    }
}

/// What a sanitizer found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FindingKind {
    /// A global access outside the buffer its pointer came from.
    OutOfBounds,
    /// A read of LDS that no wave of the work-group wrote.
    UninitializedLds,
    /// Two waves' unordered, conflicting accesses to the same LDS bytes.
    LdsRace,
}

/// The earlier of two conflicting accesses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtherAccess {
    /// Its instruction's PC.
    pub pc: u64,
    /// The wave (index in the work-group) that made it.
    pub wave: u32,
    /// A store or an atomic (`false`: a load).
    pub write: bool,
}

/// One finding: the access that made it, and what it conflicts with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// What is wrong.
    pub kind: FindingKind,
    /// The instruction's PC.
    pub pc: u64,
    /// The instruction, disassembled.
    pub instruction: String,
    /// The work-group, the wave's index in it, and the lane.
    pub work_group: [u32; 3],
    /// The wave's index in its work-group.
    pub wave: u32,
    /// The lane.
    pub lane: u32,
    /// The address accessed: a GPU virtual address, or an offset in the work-group's LDS.
    pub address: u64,
    /// Bytes accessed.
    pub bytes: u32,
    /// A store or an atomic (`false`: a load).
    pub write: bool,
    /// For an out-of-bounds access, `[start, end)` of the buffer the pointer came from (none:
    /// it points at memory no buffer owns).
    pub buffer: Option<(u64, u64)>,
    /// For a race, the other access.
    pub other: Option<OtherAccess>,
}

/// How an access touches LDS.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum LdsAccess {
    Read,
    Write,
    Atomic,
}

const ATOMIC_WRITE: u8 = 1;
const ATOMIC_READS: u8 = 2;

/// What the sanitizer remembers of one LDS dword: which of its bytes were ever written, and the
/// last write and the reads of the current epoch with the bytes they touched (a byte array
/// shared by waves, each its own bytes, is no race).
#[derive(Clone, Copy, Default)]
struct Cell {
    write_pc: u64,
    read_pc: u64,
    write_epoch: u32,
    read_epoch: u32,
    /// The waves that read it in `read_epoch`.
    readers: u32,
    write_wave: u8,
    flags: u8,
    /// Bytes ever written.
    written: u8,
    /// Bytes of the last write.
    write_bytes: u8,
    /// Bytes read in `read_epoch`.
    read_bytes: u8,
}

/// The shadow of a work-group's LDS, a cell per dword.
pub(crate) struct LdsShadow {
    cells: Vec<Cell>,
    /// Barriers the work-group passed.
    pub(crate) epoch: u32,
}

/// The LDS access being checked.
pub(crate) struct DsAccess {
    pub pc: u64,
    pub wave: u32,
    pub offset: u64,
    pub bytes: u32,
    pub how: LdsAccess,
}

impl LdsShadow {
    pub(crate) fn new(bytes: usize) -> LdsShadow {
        LdsShadow {
            cells: vec![Cell::default(); bytes.div_ceil(4)],
            epoch: 0,
        }
    }

    /// Checks one lane's access and records it; returns what it found (one finding per access,
    /// the first dword's). Accesses outside the LDS are not recorded (they read 0 and write
    /// nothing).
    pub(crate) fn access(&mut self, a: &DsAccess) -> Option<(FindingKind, Option<OtherAccess>)> {
        let epoch = self.epoch;
        let wave = a.wave.min(31);
        let end = a.offset.saturating_add(u64::from(a.bytes));
        let atomic = a.how == LdsAccess::Atomic;
        let reads = a.how != LdsAccess::Write;
        let writes = a.how != LdsAccess::Read;
        let mut found = None;
        let mut at = a.offset;
        while at < end {
            let dword = at / 4;
            let Some(c) = self.cells.get_mut(dword as usize) else {
                break;
            };
            // The bytes of this dword the access covers.
            let first = (at % 4) as u32;
            let last = (end - dword * 4).min(4) as u32;
            let bytes = ((1u32 << last) - (1u32 << first)) as u8;
            at = (dword + 1) * 4;
            let access = Touch {
                epoch,
                wave,
                bytes,
                atomic,
                reads,
                writes,
            };
            if found.is_none() {
                found = check(c, &access);
            }
            record(c, &access, a.pc);
        }
        found
    }
}

/// One access's part of one dword.
struct Touch {
    epoch: u32,
    wave: u32,
    bytes: u8,
    atomic: bool,
    reads: bool,
    writes: bool,
}

fn record(c: &mut Cell, t: &Touch, pc: u64) {
    if t.reads {
        if c.read_epoch != t.epoch || c.readers == 0 {
            c.read_epoch = t.epoch;
            c.readers = 0;
            c.read_bytes = 0;
            // Only atomic reads so far: an atomic write races with none of them.
            c.flags = (c.flags & !ATOMIC_READS) | if t.atomic { ATOMIC_READS } else { 0 };
        } else if !t.atomic {
            c.flags &= !ATOMIC_READS;
        }
        c.readers |= 1 << t.wave;
        c.read_bytes |= t.bytes;
        c.read_pc = pc;
    }
    if t.writes {
        c.write_epoch = t.epoch;
        c.write_wave = t.wave as u8;
        c.write_pc = pc;
        c.written |= t.bytes;
        c.write_bytes = t.bytes;
        c.flags = (c.flags & !ATOMIC_WRITE) | if t.atomic { ATOMIC_WRITE } else { 0 };
    }
}

/// What an access finds in a cell before it is recorded.
fn check(c: &Cell, t: &Touch) -> Option<(FindingKind, Option<OtherAccess>)> {
    if t.reads && c.written & t.bytes != t.bytes {
        return Some((FindingKind::UninitializedLds, None));
    }
    let both_atomic = t.atomic && c.flags & ATOMIC_WRITE != 0;
    if c.write_bytes & t.bytes != 0
        && c.write_epoch == t.epoch
        && u32::from(c.write_wave) != t.wave
        && !both_atomic
    {
        let other = OtherAccess {
            pc: c.write_pc,
            wave: u32::from(c.write_wave),
            write: true,
        };
        return Some((FindingKind::LdsRace, Some(other)));
    }
    let other_readers = c.readers & !(1 << t.wave);
    let atomic_reads_only = c.flags & ATOMIC_READS != 0;
    if t.writes
        && c.read_epoch == t.epoch
        && other_readers != 0
        && c.read_bytes & t.bytes != 0
        && !(t.atomic && atomic_reads_only)
    {
        let other = OtherAccess {
            pc: c.read_pc,
            wave: other_readers.trailing_zeros(),
            write: false,
        };
        return Some((FindingKind::LdsRace, Some(other)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(s: &mut LdsShadow, wave: u32, offset: u64, how: LdsAccess) -> Option<FindingKind> {
        s.access(&DsAccess {
            pc: 0x100 + u64::from(wave),
            wave,
            offset,
            bytes: 4,
            how,
        })
        .map(|f| f.0)
    }

    #[test]
    fn barriers_order_waves_and_atomics_do_not_race_with_each_other() {
        let mut s = LdsShadow::new(64);
        assert_eq!(
            access(&mut s, 0, 0, LdsAccess::Read),
            Some(FindingKind::UninitializedLds)
        );
        assert_eq!(access(&mut s, 0, 8, LdsAccess::Write), None);
        // Its own write, read back by the same wave: fine; by another wave in the same epoch:
        // a race, naming the writer.
        assert_eq!(access(&mut s, 0, 8, LdsAccess::Read), None);
        assert_eq!(
            access(&mut s, 1, 8, LdsAccess::Read),
            Some(FindingKind::LdsRace)
        );
        s.epoch += 1;
        assert_eq!(access(&mut s, 1, 8, LdsAccess::Read), None);
        // Wave 1 read it in this epoch: wave 0 writing it now races (write after read).
        assert_eq!(
            access(&mut s, 0, 8, LdsAccess::Write),
            Some(FindingKind::LdsRace)
        );
        // Atomics from every wave: no race among them.
        assert_eq!(access(&mut s, 0, 16, LdsAccess::Write), None);
        s.epoch += 1;
        for w in 0..4 {
            assert_eq!(access(&mut s, w, 16, LdsAccess::Atomic), None, "wave {w}");
        }
        // A plain read of the same word by another wave in the epoch does race with them.
        assert_eq!(
            access(&mut s, 5, 16, LdsAccess::Read),
            Some(FindingKind::LdsRace)
        );
        // Waves writing and reading their own bytes of one dword do not race.
        s.epoch += 1;
        for w in 0..4u32 {
            let byte = |s: &mut LdsShadow, how| {
                s.access(&DsAccess {
                    pc: 0x200,
                    wave: w,
                    offset: 32 + u64::from(w),
                    bytes: 1,
                    how,
                })
            };
            assert_eq!(byte(&mut s, LdsAccess::Write), None, "wave {w}");
            assert_eq!(byte(&mut s, LdsAccess::Read), None, "wave {w}");
        }
        // Outside the shadow: nothing (the access itself reads 0 and writes nothing).
        assert_eq!(access(&mut s, 0, 4096, LdsAccess::Read), None);
    }
}
