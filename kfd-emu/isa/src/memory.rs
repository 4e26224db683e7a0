//! The interpreter's view of GPU memory: the [`Memory`] trait every access goes through.
//!
//! kfd-emu implements it over its GPU page table (host memory shared with the host and other
//! work-groups); [`crate::PagedMemory`] is the in-crate implementation the tests use and the
//! reference for kfd-emu's. Every access can fail with a [`MemFault`]; the interpreter turns it
//! into a [`crate::WaveError::MemoryFault`] carrying the faulting wave's PC.

/// What an access was doing when it faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    /// A load (or the read half of nothing else).
    Read,
    /// A store, or an atomic read-modify-write.
    Write,
    /// An instruction fetch.
    Execute,
}

impl std::fmt::Display for AccessKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AccessKind::Read => "read",
            AccessKind::Write => "write",
            AccessKind::Execute => "execute",
        })
    }
}

/// A GPU page fault: `va` is the first byte of the access that is not mapped (or not
/// accessible for `kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MemFault {
    /// The faulting address.
    pub va: u64,
    /// What the access was.
    pub kind: AccessKind,
}

impl std::fmt::Display for MemFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GPU page fault at {:#x} ({})", self.va, self.kind)
    }
}

impl std::error::Error for MemFault {}

/// An atomic read-modify-write operation. `apply32`/`apply64` give the value to store, so an
/// implementation can run any of them as a compare-and-swap loop on host atomics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// Store `src`.
    Swap,
    /// Store `src` if the old value equals `cmp`.
    CmpSwap,
    /// Integer add.
    Add,
    /// Integer subtract.
    Sub,
    /// Signed minimum.
    SMin,
    /// Unsigned minimum.
    UMin,
    /// Signed maximum.
    SMax,
    /// Unsigned maximum.
    UMax,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise xor.
    Xor,
    /// `old >= src ? 0 : old + 1` (unsigned).
    Inc,
    /// `old == 0 || old > src ? src : old - 1` (unsigned).
    Dec,
    /// IEEE float add (f32 in 32-bit atomics, f64 in 64-bit ones).
    FAdd,
    /// IEEE float minimum.
    FMin,
    /// IEEE float maximum.
    FMax,
    /// Two packed f16 adds (32-bit atomics only).
    PkAddF16,
    /// Two packed bf16 adds (32-bit atomics only).
    PkAddBf16,
}

/// Adds two packed 16-bit floats per half, in f32 and rounded back (`bf16`: bfloat16).
fn pk_add(old: u32, src: u32, bf16: bool) -> u32 {
    let half = |x: u32, y: u32| -> u32 {
        if bf16 {
            let s = f32::from_bits(x << 16) + f32::from_bits(y << 16);
            // Round to nearest even on the dropped 16 bits; NaNs stay NaN.
            let b = s.to_bits();
            if s.is_nan() {
                (b >> 16) | 0x40
            } else {
                (b.wrapping_add(0x7FFF + ((b >> 16) & 1))) >> 16
            }
        } else {
            let s = crate::decode::operand::f16_to_f32(x as u16)
                + crate::decode::operand::f16_to_f32(y as u16);
            u32::from(crate::decode::operand::f32_to_f16(s))
        }
    };
    half(old & 0xFFFF, src & 0xFFFF) | half(old >> 16, src >> 16) << 16
}

impl AtomicOp {
    /// The new 32-bit value for `old` (`cmp` is used by [`AtomicOp::CmpSwap`] only).
    pub fn apply32(self, old: u32, src: u32, cmp: u32) -> u32 {
        match self {
            AtomicOp::Swap => src,
            AtomicOp::CmpSwap => {
                if old == cmp {
                    src
                } else {
                    old
                }
            }
            AtomicOp::Add => old.wrapping_add(src),
            AtomicOp::Sub => old.wrapping_sub(src),
            AtomicOp::SMin => (old as i32).min(src as i32) as u32,
            AtomicOp::UMin => old.min(src),
            AtomicOp::SMax => (old as i32).max(src as i32) as u32,
            AtomicOp::UMax => old.max(src),
            AtomicOp::And => old & src,
            AtomicOp::Or => old | src,
            AtomicOp::Xor => old ^ src,
            AtomicOp::Inc => {
                if old >= src {
                    0
                } else {
                    old.wrapping_add(1)
                }
            }
            AtomicOp::Dec => {
                if old == 0 || old > src {
                    src
                } else {
                    old - 1
                }
            }
            AtomicOp::FAdd => (f32::from_bits(old) + f32::from_bits(src)).to_bits(),
            AtomicOp::FMin => f32::from_bits(old).min(f32::from_bits(src)).to_bits(),
            AtomicOp::FMax => f32::from_bits(old).max(f32::from_bits(src)).to_bits(),
            AtomicOp::PkAddF16 => pk_add(old, src, false),
            AtomicOp::PkAddBf16 => pk_add(old, src, true),
        }
    }

    /// The new 64-bit value for `old`.
    pub fn apply64(self, old: u64, src: u64, cmp: u64) -> u64 {
        match self {
            AtomicOp::Swap => src,
            AtomicOp::CmpSwap => {
                if old == cmp {
                    src
                } else {
                    old
                }
            }
            AtomicOp::Add => old.wrapping_add(src),
            AtomicOp::Sub => old.wrapping_sub(src),
            AtomicOp::SMin => (old as i64).min(src as i64) as u64,
            AtomicOp::UMin => old.min(src),
            AtomicOp::SMax => (old as i64).max(src as i64) as u64,
            AtomicOp::UMax => old.max(src),
            AtomicOp::And => old & src,
            AtomicOp::Or => old | src,
            AtomicOp::Xor => old ^ src,
            AtomicOp::Inc => {
                if old >= src {
                    0
                } else {
                    old.wrapping_add(1)
                }
            }
            AtomicOp::Dec => {
                if old == 0 || old > src {
                    src
                } else {
                    old - 1
                }
            }
            AtomicOp::FAdd => (f64::from_bits(old) + f64::from_bits(src)).to_bits(),
            AtomicOp::FMin => f64::from_bits(old).min(f64::from_bits(src)).to_bits(),
            AtomicOp::FMax => f64::from_bits(old).max(f64::from_bits(src)).to_bits(),
            // Packed 16-bit adds on each 32-bit half.
            AtomicOp::PkAddF16 | AtomicOp::PkAddBf16 => {
                u64::from(self.apply32(old as u32, src as u32, 0))
                    | u64::from(self.apply32((old >> 32) as u32, (src >> 32) as u32, 0)) << 32
            }
        }
    }
}

/// GPU memory as one GPU sees it. Implementations must be usable from several host threads at
/// once (work-groups of a dispatch run concurrently) and the atomic operations must be atomic
/// with respect to every other access through any implementation sharing the memory and to
/// the host.
///
/// Only [`Memory::read`], [`Memory::write`], [`Memory::atomic32`] and [`Memory::atomic64`]
/// are required; the rest have defaults built on them that an implementation may replace
/// with faster paths.
pub trait Memory: Sync {
    /// Reads `buf.len()` bytes at `va`.
    fn read(&self, va: u64, buf: &mut [u8]) -> Result<(), MemFault>;

    /// Writes `data` at `va`.
    fn write(&self, va: u64, data: &[u8]) -> Result<(), MemFault>;

    /// Atomically replaces the u32 at `va` (4-byte aligned) by `op.apply32(old, src, cmp)` and
    /// returns `old`.
    fn atomic32(&self, va: u64, op: AtomicOp, src: u32, cmp: u32) -> Result<u32, MemFault>;

    /// Atomically replaces the u64 at `va` (8-byte aligned) by `op.apply64(old, src, cmp)` and
    /// returns `old`.
    fn atomic64(&self, va: u64, op: AtomicOp, src: u64, cmp: u64) -> Result<u64, MemFault>;

    /// Reads instruction bytes; a fault is reported as [`AccessKind::Execute`].
    fn fetch(&self, va: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        self.read(va, buf).map_err(|f| MemFault {
            va: f.va,
            kind: AccessKind::Execute,
        })
    }

    /// Reads a little-endian u32.
    fn read_u32(&self, va: u64) -> Result<u32, MemFault> {
        let mut b = [0; 4];
        self.read(va, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Reads a little-endian u64.
    fn read_u64(&self, va: u64) -> Result<u64, MemFault> {
        let mut b = [0; 8];
        self.read(va, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Writes a little-endian u32.
    fn write_u32(&self, va: u64, v: u32) -> Result<(), MemFault> {
        self.write(va, &v.to_le_bytes())
    }

    /// Writes a little-endian u64.
    fn write_u64(&self, va: u64, v: u64) -> Result<(), MemFault> {
        self.write(va, &v.to_le_bytes())
    }
}

impl<M: Memory + ?Sized> Memory for &M {
    fn read(&self, va: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        (**self).read(va, buf)
    }
    fn write(&self, va: u64, data: &[u8]) -> Result<(), MemFault> {
        (**self).write(va, data)
    }
    fn atomic32(&self, va: u64, op: AtomicOp, src: u32, cmp: u32) -> Result<u32, MemFault> {
        (**self).atomic32(va, op, src, cmp)
    }
    fn atomic64(&self, va: u64, op: AtomicOp, src: u64, cmp: u64) -> Result<u64, MemFault> {
        (**self).atomic64(va, op, src, cmp)
    }
    fn fetch(&self, va: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        (**self).fetch(va, buf)
    }
    fn read_u32(&self, va: u64) -> Result<u32, MemFault> {
        (**self).read_u32(va)
    }
    fn read_u64(&self, va: u64) -> Result<u64, MemFault> {
        (**self).read_u64(va)
    }
    fn write_u32(&self, va: u64, v: u32) -> Result<(), MemFault> {
        (**self).write_u32(va, v)
    }
    fn write_u64(&self, va: u64, v: u64) -> Result<(), MemFault> {
        (**self).write_u64(va, v)
    }
}

#[cfg(test)]
mod tests {
    use super::AtomicOp::*;

    #[test]
    fn atomic_ops_follow_the_isa_definitions() {
        assert_eq!(Inc.apply32(5, 5, 0), 0);
        assert_eq!(Inc.apply32(4, 5, 0), 5);
        assert_eq!(Dec.apply32(0, 9, 0), 9);
        assert_eq!(Dec.apply32(10, 9, 0), 9);
        assert_eq!(Dec.apply32(3, 9, 0), 2);
        assert_eq!(CmpSwap.apply32(3, 7, 3), 7);
        assert_eq!(CmpSwap.apply32(4, 7, 3), 4);
        assert_eq!(SMin.apply32(-2i32 as u32, 1, 0), -2i32 as u32);
        assert_eq!(UMin.apply32(-2i32 as u32, 1, 0), 1);
        assert_eq!(SMax.apply64(-2i64 as u64, 1, 0), 1);
        assert_eq!(UMax.apply64(-2i64 as u64, 1, 0), -2i64 as u64);
        assert_eq!(
            FAdd.apply32(1.5f32.to_bits(), 2.0f32.to_bits(), 0),
            3.5f32.to_bits()
        );
        assert_eq!(
            FAdd.apply64(1.5f64.to_bits(), 2.0f64.to_bits(), 0),
            3.5f64.to_bits()
        );
        assert_eq!(Sub.apply32(0, 1, 0), u32::MAX);
        assert_eq!(Xor.apply64(0b1100, 0b1010, 0), 0b0110);
        // f16 1.0 + 2.0 = 3.0 (0x4200), 0.5 + 0.5 = 1.0 (0x3C00).
        assert_eq!(PkAddF16.apply32(0x3800_3C00, 0x3800_4000, 0), 0x3C00_4200);
        // bf16 1.0 (0x3F80) + 1.0 = 2.0 (0x4000); -2.0 (0xC000) + 0.5 (0x3F00) = -1.5 (0xBFC0).
        assert_eq!(PkAddBf16.apply32(0xC000_3F80, 0x3F00_3F80, 0), 0xBFC0_4000);
    }
}
