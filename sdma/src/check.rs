//! The field checks both encoders (`encode`, `sub_window`) make before writing a packet: each
//! names the packet and the field in its [`EncodeError`].

use crate::EncodeError;

/// `addr` must be a multiple of `align`.
pub(crate) fn aligned(packet: &'static str, addr: u64, align: u64) -> Result<(), EncodeError> {
    if addr % align == 0 {
        Ok(())
    } else {
        Err(EncodeError::Misaligned {
            packet,
            addr,
            align,
        })
    }
}

/// `value` must be at most `max`.
pub(crate) fn fits(
    packet: &'static str,
    field: &'static str,
    value: u64,
    max: u64,
) -> Result<(), EncodeError> {
    if value <= max {
        Ok(())
    } else {
        Err(EncodeError::FieldRange {
            packet,
            field,
            value,
            max,
        })
    }
}

/// A length of 1 to `max` bytes.
pub(crate) fn length(packet: &'static str, bytes: u64, max: u64) -> Result<(), EncodeError> {
    if bytes == 0 || bytes > max {
        Err(EncodeError::Length { packet, bytes, max })
    } else {
        Ok(())
    }
}

/// `[addr, addr + bytes)` must not run past 2^64 (`bytes` is at least 1 here).
pub(crate) fn no_wrap(packet: &'static str, addr: u64, bytes: u64) -> Result<(), EncodeError> {
    match addr.checked_add(bytes - 1) {
        Some(_) => Ok(()),
        None => Err(EncodeError::AddressWrap {
            packet,
            addr,
            bytes,
        }),
    }
}
