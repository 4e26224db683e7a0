//! [`KernelArgError`]: kernel arguments that do not match what the kernel's metadata asks for.

/// Why kernel arguments were refused. Wrapped in [`crate::Error::KernelArgs`]. Arguments are
/// named as `index (name)`, the index counting the kernel's explicit arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KernelArgError {
    /// The kernel has no metadata to check arguments against.
    #[error(
        "kernel {kernel:?} has no metadata (a code object without an NT_AMDGPU_METADATA note, \
         or an emulated kernel): pass raw kernel-argument bytes instead"
    )]
    NoMetadata {
        /// The kernel.
        kernel: String,
    },
    /// No explicit argument has that index or name.
    #[error("kernel {kernel:?} has no argument {arg} (it has {count})")]
    NoSuchArgument {
        /// The kernel.
        kernel: String,
        /// The index or name asked for.
        arg: String,
        /// How many explicit arguments it has.
        count: usize,
    },
    /// A value of another size than the argument's.
    #[error("argument {arg} of kernel {kernel:?} is {expected} bytes, the value is {given}")]
    SizeMismatch {
        /// The kernel.
        kernel: String,
        /// The argument.
        arg: String,
        /// The argument's size.
        expected: u32,
        /// The value's size.
        given: usize,
    },
    /// A setter that does not fit the argument's kind (a number for a pointer, a buffer for a
    /// value).
    #[error("argument {arg} of kernel {kernel:?} is {kind}: {advice}")]
    WrongKind {
        /// The kernel.
        kernel: String,
        /// The argument.
        arg: String,
        /// Its `.value_kind`.
        kind: String,
        /// What to use instead.
        advice: &'static str,
    },
    /// A numeric setter that does not fit the argument's declared type (`set_f32` on an `int`):
    /// checked where the compiler recorded `.type_name` (HIP and OpenCL with argument info).
    #[error("argument {arg} of kernel {kernel:?} is declared {declared:?}; {given} was given")]
    WrongType {
        /// The kernel.
        kernel: String,
        /// The argument.
        arg: String,
        /// Its `.type_name`.
        declared: String,
        /// What the setter writes.
        given: &'static str,
    },
    /// A buffer offset past the buffer's end.
    #[error(
        "argument {arg} of kernel {kernel:?}: offset {offset} is past the buffer's {size} bytes"
    )]
    OutOfRange {
        /// The kernel.
        kernel: String,
        /// The argument.
        arg: String,
        /// The offset asked for.
        offset: u64,
        /// The buffer's size.
        size: u64,
    },
    /// A dispatch passes no arguments to a kernel that reads some: it would run on zeroes
    /// (a kernel computing nothing, or hidden arguments such as its block size read as 0).
    #[error(
        "kernel {kernel:?} reads {bytes} bytes of arguments and the dispatch passes none: give it \
         `Dispatch::with_args` (or `with_raw_args`)"
    )]
    NoArguments {
        /// The kernel.
        kernel: String,
        /// Bytes of kernel arguments it reads.
        bytes: u32,
    },
    /// Raw argument bytes shorter than the kernarg segment the kernel reads: the rest would
    /// be zeroes (or, on hardware, whatever follows in memory).
    #[error("kernel {kernel:?} reads {expected} bytes of arguments; {given} were given")]
    ShortArguments {
        /// The kernel.
        kernel: String,
        /// Bytes it reads.
        expected: u32,
        /// Bytes given.
        given: usize,
    },
    /// An explicit argument was never set.
    #[error("argument {arg} of kernel {kernel:?} was not set")]
    Missing {
        /// The kernel.
        kernel: String,
        /// The first argument missing.
        arg: String,
    },
    /// Static plus dynamic LDS exceeds what a work-group can have on the GPU.
    #[error(
        "kernel {kernel:?} needs {static_bytes} bytes of static LDS plus {dynamic_bytes} dynamic, \
         more than this GPU's {gpu_bytes} bytes per work-group"
    )]
    LdsTooLarge {
        /// The kernel.
        kernel: String,
        /// `.group_segment_fixed_size`.
        static_bytes: u32,
        /// The launch's dynamic LDS.
        dynamic_bytes: u32,
        /// The GPU's LDS per work-group.
        gpu_bytes: u32,
    },
    /// A launch shape the kernel cannot run with.
    #[error("kernel {kernel:?}: {why}")]
    Geometry {
        /// The kernel.
        kernel: String,
        /// What is wrong.
        why: String,
    },
    /// The arguments were built for another kernel than the one dispatched.
    #[error("arguments built for kernel {built_for:?} dispatched with kernel {kernel:?}")]
    OtherKernel {
        /// The kernel the arguments were built for.
        built_for: String,
        /// The kernel dispatched.
        kernel: String,
    },
    /// The metadata places an argument outside the kernarg segment.
    #[error("kernel {kernel:?}: argument at bytes {offset}..+{size} is outside its {segment}-byte kernarg segment")]
    Layout {
        /// The kernel.
        kernel: String,
        /// The argument's offset.
        offset: u32,
        /// The argument's size.
        size: u32,
        /// `.kernarg_segment_size`.
        segment: u32,
    },
}
