//! [`SdmaRing`]: the writer side of an SDMA ring, in bytes.
//!
//! Read and write pointers are 64-bit monotonic byte offsets (SDMA 4 and later): the engine
//! writes its read pointer back to memory, the runtime stores its write pointer to memory and
//! then to the doorbell. A packet never straddles the end of the ring: the tail is filled with
//! zero dwords (one-dword NOPs) and the packet starts again at offset 0. Nothing is written over
//! bytes the engine has not read, and one dword is always left free so that a full ring and an
//! empty one differ (at most `size - 4` bytes are in flight).
//!
//! The writer is `pm4`'s [`DwordRing`], of the kind [`SdmaKind`]; its errors are `pm4`'s
//! [`RingError`], whose [`RingError::BadReadPointer`] only this kind gives.

use core::sync::atomic::{AtomicU64, Ordering};
use pm4::ring::{DwordRing, RingKind};

pub use pm4::ring::RingError;

/// Smallest ring accepted: 256 bytes (64 dwords), enough for the longest fixed-size packet
/// several times over.
pub const MIN_RING_BYTES: u32 = 256;

/// SDMA rings: bytes, and a 64-bit monotonic read pointer checked against the write pointer.
#[derive(Debug)]
pub enum SdmaKind {}

impl RingKind for SdmaKind {
    const NAME: &'static str = "SdmaRing";
    type Unit = u8;
    type ReadPtr = AtomicU64;
    type ReadError = RingError;
    type Space = Result<u64, RingError>;
    const MIN_SIZE: u32 = MIN_RING_BYTES;
    /// A zero dword is a one-dword NOP.
    const FILLER: u32 = 0;

    #[inline]
    fn load(rptr: &AtomicU64) -> u64 {
        rptr.load(Ordering::Acquire)
    }

    /// The read pointer must lie between `wptr - size` and `wptr`, else it cannot be trusted to
    /// say which bytes are free: [`RingError::BadReadPointer`].
    #[inline]
    fn in_flight(rptr: u64, wptr: u64, size: u32) -> Result<u64, RingError> {
        match wptr.checked_sub(rptr) {
            Some(used) if used <= u64::from(size) => Ok(used),
            _ => Err(RingError::BadReadPointer { rptr, wptr }),
        }
    }

    #[inline]
    fn space(free: Result<u64, RingError>) -> Result<u64, RingError> {
        free
    }
}

/// A single-producer SDMA ring writer: size and pointers in bytes, the engine's 64-bit
/// monotonic read pointer checked ([`RingError::BadReadPointer`] when it is ahead of the write
/// pointer or more than a ring behind it; then nothing is written, and `space` is that error),
/// the tail padded with zero dwords. `new` takes a ring of at least [`MIN_RING_BYTES`] and
/// `rptr` aligned to 8 bytes; `try_write` refuses more than `size - 4` bytes.
pub type SdmaRing = DwordRing<SdmaKind>;
