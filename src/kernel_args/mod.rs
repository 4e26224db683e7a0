//! [`KernelArgs`]: a kernel's arguments built against its metadata, and the hidden arguments
//! filled in for each launch — the kernel ABI a compiler's code expects at dispatch.
//!
//! Explicit arguments are set by index (counting only explicit ones) or by name (when the
//! compiler recorded names): each value must have the argument's size, and pointer arguments
//! are given as [`Buffer`]s. At dispatch, [`KernelArgs::encode`] checks that every explicit
//! argument was set and fills the hidden ones from the launch ([`LaunchGeometry`]) and where it
//! runs ([`LaunchContext`]): block counts, group sizes, remainders, grid dimensions, global
//! offsets (0), dynamic LDS size, the queue pointer, the aperture bases, and the pointers a
//! caller provided (heap, hostcall, printf, ...; null otherwise).
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let kfd = kfdrt::Kfd::from_env()?;
//! # let gpu = kfd.gpu(0).unwrap();
//! # let (x, y) = (gpu.alloc(4096, kfdrt::MemoryKind::GttCoherent)?, gpu.alloc(4096, kfdrt::MemoryKind::GttCoherent)?);
//! use kfdrt::{kernel_args::KernelArgs, Dispatch};
//! let co = gpu.load_code_object(&std::fs::read("saxpy.co")?)?;
//! let saxpy = co.kernel("saxpy")?;
//! let mut args = KernelArgs::new(&saxpy)?;
//! args.set_f32(0, 2.0)?.set_buffer(1, &x)?.set_buffer(2, &y)?.set_u32(3, 1024)?;
//! let queue = gpu.create_aql_queue(Default::default())?;
//! queue
//!     .dispatch(&Dispatch::linear(&saxpy, 1024, 256).with_args(&args))?
//!     .wait(None)?;
//! # Ok(()) }
//! ```

use crate::queue::held::Held;

mod hidden;
pub(crate) mod validate;

pub use crate::error::KernelArgError;
pub use hidden::{LaunchContext, LaunchGeometry};

use crate::code_object::{ArgKind, KernelArg, KernelMetadata};
use crate::error::Result;
use crate::kernel::Kernel;
use crate::memory::Buffer;
use std::fmt;
use std::sync::Arc;

/// Names an explicit argument: its position among the explicit arguments, or its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgRef<'a> {
    /// The `n`-th explicit argument (0-based).
    Index(usize),
    /// The argument whose `.name` this is.
    Name(&'a str),
}

impl From<usize> for ArgRef<'_> {
    fn from(i: usize) -> Self {
        ArgRef::Index(i)
    }
}

impl<'a> From<&'a str> for ArgRef<'a> {
    fn from(n: &'a str) -> Self {
        ArgRef::Name(n)
    }
}

impl fmt::Display for ArgRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgRef::Index(i) => write!(f, "{i}"),
            ArgRef::Name(n) => write!(f, "{n:?}"),
        }
    }
}

/// Which setters an argument kind takes.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Setter {
    /// A number: checked against the argument's `.type_name` where the compiler recorded it.
    Number(Number),
    /// Raw bytes of the argument's size (a struct, a vector): any type.
    Bytes,
    Buffer,
    Address,
}

/// What a numeric setter writes.
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
enum Number {
    Integer,
    Float,
}

impl Number {
    fn name(self) -> &'static str {
        match self {
            Number::Integer => "an integer",
            Number::Float => "a floating-point number",
        }
    }

    /// What a C, OpenCL or HIP scalar type named `type_name` holds, if kfdrt recognises it
    /// (typedefs and structs it does not: those take any setter of their size).
    fn of_type(type_name: &str) -> Option<Number> {
        let t = type_name.trim();
        if t.contains('*') || t.contains('[') {
            return None;
        }
        let words: Vec<&str> = t
            .split_whitespace()
            .filter(|w| !matches!(*w, "const" | "volatile" | "restrict" | "__restrict__"))
            .collect();
        let float = [
            "float", "double", "half", "_Float16", "__fp16", "__bf16", "bfloat16",
        ];
        let integer = [
            "char",
            "short",
            "int",
            "long",
            "unsigned",
            "signed",
            "bool",
            "_Bool",
            "uchar",
            "ushort",
            "uint",
            "ulong",
            "size_t",
            "ptrdiff_t",
            "intptr_t",
            "uintptr_t",
            "int8_t",
            "int16_t",
            "int32_t",
            "int64_t",
            "uint8_t",
            "uint16_t",
            "uint32_t",
            "uint64_t",
        ];
        if words.is_empty() {
            None
        } else if words.iter().all(|w| float.contains(w)) {
            Some(Number::Float)
        } else if words.iter().all(|w| integer.contains(w)) {
            Some(Number::Integer)
        } else {
            None
        }
    }
}

/// A kernel's arguments, checked against its [`KernelMetadata`].
#[derive(Clone, Debug)]
pub struct KernelArgs {
    metadata: Arc<KernelMetadata>,
    /// The kernarg segment with the explicit arguments written so far.
    bytes: Vec<u8>,
    /// Indices (into `metadata.args`) of the explicit arguments, in order.
    explicit: Vec<usize>,
    /// Which explicit arguments were set.
    set: Vec<bool>,
    /// Pointers the caller provided for hidden arguments.
    hidden_pointers: Vec<(ArgKind, u64)>,
    /// The buffers the arguments point into, kept allocated by every dispatch made with them
    /// until it completes.
    held: Held,
    /// The same buffers with the explicit argument each is for: a dispatch checks that they
    /// are mapped on its GPU.
    buffers: Vec<(usize, Arc<Buffer>)>,
}

impl KernelArgs {
    /// Arguments for `kernel`, which must have metadata ([`Kernel::metadata`]).
    pub fn new(kernel: &Kernel) -> Result<KernelArgs> {
        let md = kernel
            .metadata_arc()
            .ok_or_else(|| KernelArgError::NoMetadata {
                kernel: kernel.name().to_owned(),
            })?;
        let mut args = KernelArgs::from_metadata(md.clone());
        if let Some(address) = kernel.hostcall_buffer()? {
            // The kernel holds the service, and every dispatch holds the kernel's code.
            args.hidden_pointers
                .push((ArgKind::HiddenHostcallBuffer, address));
        }
        Ok(args)
    }

    /// Arguments laid out as `metadata` says (for a kernel whose metadata came from elsewhere).
    pub fn from_metadata(metadata: Arc<KernelMetadata>) -> KernelArgs {
        let explicit: Vec<usize> = (0..metadata.args.len())
            .filter(|&i| !metadata.args[i].is_hidden())
            .collect();
        KernelArgs {
            bytes: vec![0; metadata.kernarg_segment_size as usize],
            set: vec![false; explicit.len()],
            explicit,
            hidden_pointers: Vec::new(),
            held: Held::default(),
            buffers: Vec::new(),
            metadata,
        }
    }

    /// The metadata the arguments follow.
    pub fn metadata(&self) -> &KernelMetadata {
        &self.metadata
    }

    pub(crate) fn metadata_arc(&self) -> &Arc<KernelMetadata> {
        &self.metadata
    }

    /// `index (name)` of explicit argument `i`, for messages.
    fn describe(&self, i: usize) -> String {
        match self
            .explicit
            .get(i)
            .and_then(|&a| self.metadata.args[a].name.as_deref())
        {
            Some(name) => format!("{i} ({name})"),
            None => i.to_string(),
        }
    }

    fn resolve(&self, arg: ArgRef<'_>) -> Result<(usize, &KernelArg)> {
        let position = match arg {
            ArgRef::Index(i) => (i < self.explicit.len()).then_some(i),
            ArgRef::Name(n) => self
                .explicit
                .iter()
                .position(|&a| self.metadata.args[a].name.as_deref() == Some(n)),
        };
        let i = position.ok_or_else(|| KernelArgError::NoSuchArgument {
            kernel: self.metadata.name.clone(),
            arg: arg.to_string(),
            count: self.explicit.len(),
        })?;
        Ok((i, &self.metadata.args[self.explicit[i]]))
    }

    fn put(&mut self, arg: ArgRef<'_>, value: &[u8], setter: Setter) -> Result<&mut Self> {
        let (i, a) = self.resolve(arg)?;
        let (offset, size) = (a.offset, a.size);
        let is_value = matches!(setter, Setter::Number(_) | Setter::Bytes);
        let advice = match a.kind {
            ArgKind::ByValue | ArgKind::DynamicSharedPointer => {
                (!is_value).then_some("set it with a value setter")
            }
            ArgKind::GlobalBuffer => is_value.then_some("pass a Buffer (set_buffer)"),
            _ => (setter != Setter::Address)
                .then_some("kfdrt has no safe setter for it: use set_address"),
        };
        if let Some(advice) = advice {
            return Err(KernelArgError::WrongKind {
                kernel: self.metadata.name.clone(),
                arg: self.describe(i),
                kind: a.kind.name(),
                advice,
            }
            .into());
        }
        if value.len() != size as usize {
            return Err(KernelArgError::SizeMismatch {
                kernel: self.metadata.name.clone(),
                arg: self.describe(i),
                expected: size,
                given: value.len(),
            }
            .into());
        }
        if let (Setter::Number(given), Some(declared)) = (setter, a.type_name.as_deref()) {
            if Number::of_type(declared).is_some_and(|n| n != given) {
                return Err(KernelArgError::WrongType {
                    kernel: self.metadata.name.clone(),
                    arg: self.describe(i),
                    declared: declared.to_owned(),
                    given: given.name(),
                }
                .into());
            }
        }
        let range = offset as usize..offset as usize + size as usize;
        let Some(slot) = self.bytes.get_mut(range) else {
            return Err(KernelArgError::Layout {
                kernel: self.metadata.name.clone(),
                offset,
                size,
                segment: self.metadata.kernarg_segment_size,
            }
            .into());
        };
        slot.copy_from_slice(value);
        self.set[i] = true;
        Ok(self)
    }

    /// Sets a 4-byte argument to a `u32`.
    pub fn set_u32<'a>(&mut self, arg: impl Into<ArgRef<'a>>, v: u32) -> Result<&mut Self> {
        self.put(
            arg.into(),
            &v.to_le_bytes(),
            Setter::Number(Number::Integer),
        )
    }

    /// Sets a 4-byte argument to an `i32`.
    pub fn set_i32<'a>(&mut self, arg: impl Into<ArgRef<'a>>, v: i32) -> Result<&mut Self> {
        self.put(
            arg.into(),
            &v.to_le_bytes(),
            Setter::Number(Number::Integer),
        )
    }

    /// Sets a 4-byte argument to an `f32`.
    pub fn set_f32<'a>(&mut self, arg: impl Into<ArgRef<'a>>, v: f32) -> Result<&mut Self> {
        self.put(arg.into(), &v.to_le_bytes(), Setter::Number(Number::Float))
    }

    /// Sets an 8-byte value argument to a `u64`.
    pub fn set_u64<'a>(&mut self, arg: impl Into<ArgRef<'a>>, v: u64) -> Result<&mut Self> {
        self.put(
            arg.into(),
            &v.to_le_bytes(),
            Setter::Number(Number::Integer),
        )
    }

    /// Sets an 8-byte value argument to an `i64`.
    pub fn set_i64<'a>(&mut self, arg: impl Into<ArgRef<'a>>, v: i64) -> Result<&mut Self> {
        self.put(
            arg.into(),
            &v.to_le_bytes(),
            Setter::Number(Number::Integer),
        )
    }

    /// Sets an 8-byte value argument to an `f64`.
    pub fn set_f64<'a>(&mut self, arg: impl Into<ArgRef<'a>>, v: f64) -> Result<&mut Self> {
        self.put(arg.into(), &v.to_le_bytes(), Setter::Number(Number::Float))
    }

    /// Sets a value argument (a struct, a vector) to raw little-endian bytes of its size.
    pub fn set_bytes<'a>(&mut self, arg: impl Into<ArgRef<'a>>, v: &[u8]) -> Result<&mut Self> {
        self.put(arg.into(), v, Setter::Bytes)
    }

    /// Sets a pointer (`global_buffer`) argument to the start of `buffer`, which must be mapped
    /// to the GPU that runs the kernel. Every dispatch made with these arguments keeps the
    /// buffer's memory allocated until it completes, even if the `Buffer` is dropped.
    pub fn set_buffer<'a>(
        &mut self,
        arg: impl Into<ArgRef<'a>>,
        buffer: &Buffer,
    ) -> Result<&mut Self> {
        self.set_buffer_at(arg, buffer, 0)
    }

    /// Sets a pointer argument to `offset` bytes into `buffer` (at most its size: a pointer
    /// one past the end is valid).
    pub fn set_buffer_at<'a>(
        &mut self,
        arg: impl Into<ArgRef<'a>>,
        buffer: &Buffer,
        offset: u64,
    ) -> Result<&mut Self> {
        let arg = arg.into();
        if offset > buffer.size() {
            let (i, _) = self.resolve(arg)?;
            return Err(KernelArgError::OutOfRange {
                kernel: self.metadata.name.clone(),
                arg: self.describe(i),
                offset,
                size: buffer.size(),
            }
            .into());
        }
        let address = buffer.gpu_address() + offset;
        let (i, _) = self.resolve(arg)?;
        self.put(arg, &address.to_le_bytes(), Setter::Buffer)?;
        self.held.push(buffer.retain());
        // The argument's earlier buffer no longer counts for the mapping check.
        self.buffers.retain(|(a, _)| *a != i);
        self.buffers.push((i, Arc::new(buffer.shared_handle())));
        Ok(self)
    }

    /// Sets a pointer argument to the first element of `slice` (kept allocated by every
    /// dispatch made with these arguments, as [`KernelArgs::set_buffer`] keeps a buffer).
    pub fn set_slice<'a, T: crate::Element>(
        &mut self,
        arg: impl Into<ArgRef<'a>>,
        slice: &crate::DeviceSlice<T>,
    ) -> Result<&mut Self> {
        self.set_buffer_at(arg, slice.buffer(), slice.offset())
    }

    /// Refuses the arguments on GPU `gpu_id` if a buffer they name is not mapped there: the
    /// kernel's first access would fault the whole GPU.
    pub(crate) fn check_mapped(&self, gpu_id: u32) -> Result<()> {
        match self.buffers.iter().find(|(_, b)| !b.is_mapped_on(gpu_id)) {
            None => Ok(()),
            Some((i, b)) => Err(crate::Error::NotOnGpu {
                what: format!(
                    "the buffer at {:#x} given as argument {} of kernel {:?}",
                    b.gpu_address(),
                    self.describe(*i),
                    self.metadata.name
                ),
                gpu_id,
            }),
        }
    }

    /// The buffers the arguments point into.
    pub(crate) fn held(&self) -> &Held {
        &self.held
    }

    /// Sets a pointer-sized argument of any explicit kind (buffer, image, sampler, pipe, queue,
    /// or one kfdrt does not know) to a raw GPU address.
    ///
    /// # Safety
    /// The kernel will access memory at `address` as its argument's kind implies: it must be
    /// valid, mapped to the GPU, and outlive the kernel's execution.
    pub unsafe fn set_address<'a>(
        &mut self,
        arg: impl Into<ArgRef<'a>>,
        address: u64,
    ) -> Result<&mut Self> {
        self.put(arg.into(), &address.to_le_bytes(), Setter::Address)
    }

    /// Provides the buffer a pointer-valued hidden argument points to: `HiddenHeapV1`,
    /// `HiddenHostcallBuffer`, `HiddenPrintfBuffer`, `HiddenDefaultQueue`,
    /// `HiddenCompletionAction` or `HiddenMultigridSyncArg`. Kernels without that argument
    /// ignore it; without it, the argument is null.
    pub fn set_hidden_buffer(&mut self, kind: ArgKind, buffer: &Buffer) -> Result<&mut Self> {
        // SAFETY: a live buffer's address, kept allocated by every dispatch of these arguments.
        unsafe { self.set_hidden_address(kind, buffer.gpu_address()) }?;
        self.held.push(buffer.retain());
        Ok(self)
    }

    /// [`KernelArgs::set_hidden_buffer`] with a raw address.
    ///
    /// # Safety
    /// As for [`KernelArgs::set_address`]: the kernel will use `address` as the runtime object
    /// `kind` names.
    pub unsafe fn set_hidden_address(&mut self, kind: ArgKind, address: u64) -> Result<&mut Self> {
        let pointer_kind = matches!(
            kind,
            ArgKind::HiddenHeapV1
                | ArgKind::HiddenHostcallBuffer
                | ArgKind::HiddenPrintfBuffer
                | ArgKind::HiddenDefaultQueue
                | ArgKind::HiddenCompletionAction
                | ArgKind::HiddenMultigridSyncArg
        );
        if !pointer_kind {
            return Err(KernelArgError::WrongKind {
                kernel: self.metadata.name.clone(),
                arg: kind.name(),
                kind: "not a pointer the caller provides".into(),
                advice: "kfdrt fills it from the launch",
            }
            .into());
        }
        self.hidden_pointers.retain(|(k, _)| *k != kind);
        self.hidden_pointers.push((kind, address));
        Ok(self)
    }

    /// The first explicit argument not yet set, as `index (name)`.
    pub fn first_missing(&self) -> Option<String> {
        self.set.iter().position(|s| !s).map(|i| self.describe(i))
    }

    /// The kernarg segment for one launch: the explicit arguments as set, the hidden ones as
    /// the metadata asks, filled for `geometry` on `context`. Errors when an explicit argument
    /// is missing, or the launch does not fit the kernel or the GPU.
    ///
    /// The bytes are what a raw-bytes dispatch takes, e.g. with a prepared dispatch:
    /// `batch.dispatch_prepared(&prepared, &args.encode(&LaunchGeometry::of(&d),
    /// &LaunchContext::for_queue(batch.queue()))?)`.
    pub fn encode(&self, geometry: &LaunchGeometry, context: &LaunchContext) -> Result<Vec<u8>> {
        if let Some(arg) = self.first_missing() {
            return Err(KernelArgError::Missing {
                kernel: self.metadata.name.clone(),
                arg,
            }
            .into());
        }
        hidden::check_launch(&self.metadata, geometry, context)?;
        let mut out = self.bytes.clone();
        hidden::fill(
            &self.metadata,
            &mut out,
            geometry,
            context,
            &self.hidden_pointers,
        )?;
        Ok(out)
    }
}

#[cfg(test)]
mod type_name_tests {
    use super::Number;

    #[test]
    fn scalar_type_names_are_told_apart_and_others_left_alone() {
        for t in [
            "int",
            "unsigned int",
            "uint",
            "long long",
            "const size_t",
            "uint8_t",
            "bool",
        ] {
            assert_eq!(Number::of_type(t), Some(Number::Integer), "{t}");
        }
        for t in [
            "float",
            "double",
            "const float",
            "half",
            "_Float16",
            "__bf16",
        ] {
            assert_eq!(Number::of_type(t), Some(Number::Float), "{t}");
        }
        for t in ["float*", "int[4]", "float4", "my_struct", "", "struct pair"] {
            assert_eq!(Number::of_type(t), None, "{t}");
        }
    }
}
