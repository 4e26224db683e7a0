//! [`DeviceSlice<T>`]: a typed, cheaply cloned view of part of a [`Buffer`], the handle a tensor
//! type holds. Its element type is a plain number ([`Element`]), so its bytes can be viewed and
//! copied without conversion.

use super::Buffer;
use crate::error::{Error, Result};
use std::marker::PhantomData;
use std::sync::Arc;

mod sealed {
    pub trait Sealed {}
}

/// A plain number type: every bit pattern is a value, no padding, little-endian on every GPU
/// and host kfdrt supports.
pub trait Element: sealed::Sealed + Copy + Send + Sync + 'static {}

macro_rules! elements {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {}
    )*};
}
elements!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64);

/// The bytes of `values`.
pub(crate) fn as_bytes<T: Element>(values: &[T]) -> &[u8] {
    // SAFETY: `Element` types have no padding and no invalid bit patterns, so their memory is
    // `size_of_val(values)` initialised bytes, readable as `u8` (alignment 1) for the borrow.
    unsafe {
        std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
    }
}

/// The bytes of `values`, to write.
pub(crate) fn as_bytes_mut<T: Element>(values: &mut [T]) -> &mut [u8] {
    // SAFETY: as `as_bytes`; and any bytes written through the view form valid `T`s, since
    // every bit pattern of an `Element` is a value.
    unsafe {
        std::slice::from_raw_parts_mut(
            values.as_mut_ptr().cast::<u8>(),
            std::mem::size_of_val(values),
        )
    }
}

/// `len` elements of `T` at byte `offset` of a shared [`Buffer`]. Clones share the buffer;
/// GPU work given the slice (through [`crate::kernel_args::KernelArgs::set_slice`] or a stream
/// copy) keeps the memory allocated until it completes, as with the buffer itself.
pub struct DeviceSlice<T: Element> {
    buffer: Arc<Buffer>,
    offset: u64,
    len: usize,
    _element: PhantomData<T>,
}

impl<T: Element> Clone for DeviceSlice<T> {
    fn clone(&self) -> Self {
        DeviceSlice {
            buffer: self.buffer.clone(),
            offset: self.offset,
            len: self.len,
            _element: PhantomData,
        }
    }
}

impl<T: Element> std::fmt::Debug for DeviceSlice<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceSlice")
            .field("element", &std::any::type_name::<T>())
            .field("address", &format_args!("{:#x}", self.gpu_address()))
            .field("len", &self.len)
            .finish()
    }
}

impl<T: Element> DeviceSlice<T> {
    /// All of `buffer`, as `buffer.size() / size_of::<T>()` elements.
    pub fn new(buffer: Arc<Buffer>) -> DeviceSlice<T> {
        let len = (buffer.size() / std::mem::size_of::<T>() as u64) as usize;
        DeviceSlice {
            buffer,
            offset: 0,
            len,
            _element: PhantomData,
        }
    }

    /// Elements `start..start + len` of this slice.
    pub fn slice(&self, start: usize, len: usize) -> Result<DeviceSlice<T>> {
        match start.checked_add(len) {
            Some(end) if end <= self.len => Ok(DeviceSlice {
                buffer: self.buffer.clone(),
                offset: self.offset + (start * std::mem::size_of::<T>()) as u64,
                len,
                _element: PhantomData,
            }),
            _ => {
                let bytes = |n: usize| (n as u64).saturating_mul(std::mem::size_of::<T>() as u64);
                Err(Error::OutOfBounds {
                    what: "slice",
                    offset: bytes(start),
                    len: bytes(len),
                    size: bytes(self.len),
                })
            }
        }
    }

    /// How many elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its size in bytes.
    pub fn byte_len(&self) -> u64 {
        (self.len * std::mem::size_of::<T>()) as u64
    }

    /// Where it starts in its buffer, in bytes.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The GPU address of its first element.
    pub fn gpu_address(&self) -> u64 {
        self.buffer.gpu_address() + self.offset
    }

    /// The buffer it views.
    pub fn buffer(&self) -> &Arc<Buffer> {
        &self.buffer
    }
}
