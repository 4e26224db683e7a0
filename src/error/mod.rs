//! The runtime's error type, and the error types its variants carry (a refused code object,
//! refused kernel arguments, a GPU fault, a GPU reset), which the modules that raise them
//! re-export.

mod code_object;
mod device_faults;
mod kernel_args;
mod queue_fault;
pub(crate) mod report;
mod stream;

pub use code_object::CodeObjectError;
pub use device_faults::{DeviceReset, MemoryException};
pub use kernel_args::KernelArgError;
pub use queue_fault::{QueueFault, WaveExceptions};
pub use stream::StreamError;

use kfd_sys::Errno;
use report::DeviceReport;

/// Everything that can go wrong in kfdrt. Errors name the failing operation and carry the errno
/// the driver (or emulator) returned, so a log line is enough to tell what happened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A driver call failed.
    #[error("{op} failed: {errno}")]
    Driver {
        /// The operation, usually the ioctl's name.
        op: &'static str,
        /// What the driver returned.
        errno: Errno,
    },
    /// No usable device: `/dev/kfd` is missing, or the requested backend is not built in.
    #[error("no KFD device: {0}")]
    NoDevice(String),
    /// The driver speaks a KFD ABI version kfdrt does not support.
    #[error("unsupported KFD version {major}.{minor} (kfdrt needs 1.{min_minor} or newer)")]
    UnsupportedVersion {
        /// Major version the driver reported.
        major: u32,
        /// Minor version the driver reported.
        minor: u32,
        /// Oldest minor version kfdrt accepts.
        min_minor: u32,
    },
    /// The driver's KFD ABI is older than a feature needs (the README lists which kernels have
    /// which version).
    #[error("{} needs KFD {} or newer; the driver speaks KFD {have}", feature.name(), feature.since())]
    NeedsKfd {
        /// What was asked for.
        feature: kfd_sys::Feature,
        /// The version the driver reported.
        have: kfd_sys::KfdVersion,
    },
    /// The topology tree is missing something or holds a value that does not parse.
    #[error("topology: {0}")]
    Topology(String),
    /// The device or the process is out of the requested kind of memory.
    #[error("out of {kind} memory on GPU {gpu_id:#x} (requested {requested} bytes)")]
    OutOfMemory {
        /// Memory kind, e.g. "device-local VRAM".
        kind: &'static str,
        /// The GPU's KFD id.
        gpu_id: u32,
        /// Bytes requested.
        requested: u64,
    },
    /// A wait did not complete in time.
    #[error(
        "timed out after {after_ms} ms waiting for {what}{}",
        report_text(report)
    )]
    Timeout {
        /// What was being waited for.
        what: String,
        /// The timeout that expired.
        after_ms: u64,
        /// What every queue of the device was doing (waits on queue work and signals).
        report: Option<Box<DeviceReport>>,
    },
    /// A queue's ring has no room and the call was not allowed to wait.
    #[error("queue {queue_id} is full")]
    QueueFull {
        /// KFD's queue id.
        queue_id: u32,
    },
    /// A queue stopped because of an error the packet processor reported; it runs nothing more.
    #[error("queue {queue_id} stopped: {fault}{}", report_text(report))]
    QueueError {
        /// KFD's queue id.
        queue_id: u32,
        /// What the packet processor reported.
        fault: QueueFault,
        /// What every queue of the device was doing, when a wait ended on the error.
        report: Option<Box<DeviceReport>>,
    },
    /// A GPU fault (a page fault, or an engine exception) stopped every queue of the process on
    /// that GPU, as KFD reports it through the memory-exception event. Work on other GPUs goes
    /// on.
    #[error("{fault}{}{}", stopped(queue_id), report_text(report))]
    DeviceFault {
        /// The queue the failed wait was on (every queue of the GPU stopped), if any.
        queue_id: Option<u32>,
        /// The fault as KFD reported it.
        fault: MemoryException,
        /// The fault with the kernel and the code around it where known, and every queue,
        /// when a wait ended on the fault.
        report: Option<Box<DeviceReport>>,
    },
    /// The GPU was reset (KFD's hardware-exception event): its queues are gone.
    #[error("GPU {:#x} was reset{}{}{}", reset.gpu_id, if reset.memory_lost { ", its memory lost" } else { "" }, stopped(queue_id), report_text(report))]
    DeviceReset {
        /// The queue the failed wait was on, if any.
        queue_id: Option<u32>,
        /// What the event reported.
        reset: DeviceReset,
        /// What every queue of the device was doing, when a wait ended on the reset.
        report: Option<Box<DeviceReport>>,
    },
    /// Work on one GPU names memory that GPU cannot reach: a kernel loaded on another GPU (its
    /// code would fault the whole GPU), a buffer not mapped there.
    #[error("{what} is not mapped on GPU {gpu_id:#x}, which would run the work")]
    NotOnGpu {
        /// What was given.
        what: String,
        /// The GPU the work is for.
        gpu_id: u32,
    },
    /// An object of another open device (another [`crate::Kfd`]) was given where this device's
    /// is needed: its addresses mean nothing to this device's GPUs.
    #[error("{what} belongs to another KFD device")]
    ForeignObject {
        /// What was given.
        what: &'static str,
    },
    /// The driver answered something the KFD ABI does not allow (a driver bug, or a driver kfdrt
    /// does not know).
    #[error("unexpected answer from the driver to {request}: {what}")]
    UnexpectedDriverAnswer {
        /// The request.
        request: &'static str,
        /// What was wrong with the answer.
        what: String,
    },
    /// A wait ended because an event it waited on was destroyed under it (KFD's
    /// `KFD_IOC_WAIT_RESULT_FAIL`).
    #[error("an event waited on was destroyed during the wait")]
    EventDestroyed,
    /// Another runtime in this process already holds the GPU: KFD keeps one VM per process and
    /// GPU, bound to the render-node file that acquired it first, and refuses the rest. It is
    /// another [`crate::Kfd`] opened on the same device (share one: it is cheap to clone) or
    /// another runtime (ROCr, libhsakmt) in the same process, which kfdrt cannot share a
    /// device with.
    #[error(
        "GPU {gpu_id:#x} is already in use by another runtime (or another Kfd) in this process"
    )]
    DeviceInUse {
        /// The GPU whose VM another open file holds.
        gpu_id: u32,
    },
    /// A GPU was asked to map another GPU's VRAM with no peer-to-peer path between them (the
    /// topology lists no XGMI or PCIe peer link: a host without PCIe P2P, or an owner whose
    /// VRAM is not all in its BAR). The driver would move the owner's buffer to system memory
    /// to map it, slowing the owner; kfdrt refuses, as ROCr does (its access is "never
    /// allowed"). Share host memory ([`crate::MemoryKind::GttCoherent`]) instead, or copy.
    #[error("GPU {gpu_id:#x} has no peer-to-peer path to the VRAM of GPU {owner_gpu_id:#x}")]
    NoPeerAccess {
        /// The GPU that would map the buffer.
        gpu_id: u32,
        /// The GPU whose VRAM holds it.
        owner_gpu_id: u32,
    },
    /// The device was opened by another process, of which this one is a `fork()`ed child: KFD
    /// refuses the child the parent's device file and kfdrt keeps the GPU's memory out of
    /// children (see `docs/bad_input.md`). Open a new [`crate::Kfd`] in the child; leak what it
    /// inherited (`std::mem::forget`, or exit) rather than drop it, since its CPU views are not
    /// mapped in the child.
    #[error("the KFD device was opened by process {parent}; this is its forked child {child}, which must open its own")]
    ForkedChild {
        /// The process that opened the device.
        parent: u32,
        /// This process.
        child: u32,
    },
    /// The operating system refused what kfdrt needed from it: a service thread (the process
    /// is out of threads or memory), a pipe (out of descriptors).
    #[error("{what}: {source}")]
    Os {
        /// What kfdrt was starting: `"hostcall thread"`, `"scratch thread"`, ...
        what: &'static str,
        /// What the system returned.
        source: std::io::Error,
    },
    /// Something the device could do that kfdrt does not do for it (yet).
    #[error("not supported: {0}")]
    Unsupported(String),
    /// An environment variable holds a value kfdrt does not understand.
    #[error("environment variable {var}={value:?}: {reason}")]
    Environment {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `KFDRT_VALIDATE` refused a packet before it was published: `field` of the packet holds
    /// `value`, which the hardware would refuse or get wrong.
    #[error("validation: {packet} {field} = {value}: {reason}")]
    Validation {
        /// What kind of packet.
        packet: &'static str,
        /// The field at fault (as the packet or the kernel descriptor names it).
        field: &'static str,
        /// Its value.
        value: String,
        /// Why it is refused.
        reason: String,
    },
    /// A kernel substitution (`KFDRT_SUBSTITUTE`) could not be made.
    #[error("substituting kernel {kernel} from {}: {reason}", path.display())]
    Substitution {
        /// The kernel's name.
        kernel: String,
        /// The code object it was to come from.
        path: std::path::PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A code object was refused (see [`crate::code_object::CodeObjectError`]).
    #[error("code object: {0}")]
    CodeObject(#[from] CodeObjectError),
    /// A range that does not lie inside its buffer: `offset + len` past the buffer's end, or
    /// overflowing.
    #[error("{what} range {offset}+{len} is outside a buffer of {size} bytes")]
    OutOfBounds {
        /// Which range: `"access"` (a CPU read or write), `"source"`, `"destination"`.
        what: &'static str,
        /// Its first byte, from the buffer's start.
        offset: u64,
        /// Its length in bytes.
        len: u64,
        /// The buffer's size in bytes.
        size: u64,
    },
    /// A size of 0 where at least a byte is needed: an allocation, a copy, a fill, a host
    /// registration. Nothing was done.
    #[error("{what} of 0 bytes")]
    ZeroSize {
        /// What was asked for: `"allocation"`, `"copy"`, `"host copy"`, `"host registration"`.
        what: &'static str,
    },
    /// A value that is not aligned as the hardware needs it. Nothing was done.
    #[error("{what} {value:#x} is not a multiple of {align}")]
    Misaligned {
        /// What: `"kernel entry"`, `"fill size"`, `"fill offset"`.
        what: &'static str,
        /// The value given.
        value: u64,
        /// The multiple it must be.
        align: u64,
    },
    /// More of something than its container or the hardware holds. Nothing was done.
    #[error("{what}: {requested} exceeds the limit of {limit}")]
    TooLarge {
        /// What: `"LDS bytes per work-group"`, `"work-items per work-group"`, `"packets in a
        /// batch"`, `"kernel argument bytes"`, `"user SGPRs"`, `"CU mask words"`, ...
        what: &'static str,
        /// How many were asked for.
        requested: u64,
        /// How many fit.
        limit: u64,
    },
    /// A launch the hardware cannot run: a zero dimension, or more than 2^32 work-items in one.
    /// Nothing was written to the ring.
    #[error("grid of {grid:?} work-items in work-groups of {workgroup:?}: {reason}")]
    BadGeometry {
        /// Work-items per dimension.
        grid: [u64; 3],
        /// Work-items per work-group per dimension.
        workgroup: [u32; 3],
        /// What is wrong: `"a zero dimension"`, `"more than 2^32 work-items in a dimension"`.
        reason: &'static str,
    },
    /// A queue size the hardware does not take. No queue was created.
    #[error("{kind} of {requested} {unit}: needs {rule}")]
    QueueSize {
        /// `"AQL queue"`, `"PM4 ring"`.
        kind: &'static str,
        /// The size asked for.
        requested: u64,
        /// `"packets"`, `"bytes"`.
        unit: &'static str,
        /// The rule it breaks: `"a power of two in 64..=131072"`, `"a power of two >= 1024"`.
        rule: &'static str,
    },
    /// Something this GPU does not have (PM4 or SDMA encodings for its generation, blit
    /// kernels, context save/restore, an SDMA engine by that number).
    #[error("{gfx_target} has no {what}")]
    NotOnThisGpu {
        /// The GPU's target (`gfx90a`).
        gfx_target: String,
        /// What it lacks.
        what: String,
    },
    /// No GPU of this device has that index (GPUs are numbered from 0, in the order
    /// [`crate::Kfd::gpus`] lists them).
    #[error("no GPU with index {index}")]
    NoSuchGpuIndex {
        /// The index given.
        index: usize,
    },
    /// No GPU of this device has that KFD id.
    #[error("no GPU {gpu_id:#x}")]
    NoSuchGpuId {
        /// The id given.
        gpu_id: u32,
    },
    /// An event of another kind than the call needs (a signal event, which has a mailbox a
    /// packet can raise it through; a memory event, which reports GPU faults).
    #[error("not a {needed} event")]
    WrongEventKind {
        /// The kind needed: `"signal"`, `"memory"`.
        needed: &'static str,
    },
    /// A wait on no events at all.
    #[error("waiting on no events")]
    NothingToWaitOn,
    /// A stream, stream event or captured graph used in a way it cannot be (see
    /// [`crate::stream::StreamError`]).
    #[error("stream: {0}")]
    Stream(#[from] StreamError),
    /// A service thread of kfdrt's that the call needs has stopped: the host-callback thread of
    /// a stream (a callback panicked), a queue's scratch service or the hostcall service (their
    /// queue or device is being dropped).
    #[error("the {what} has stopped")]
    ServiceStopped {
        /// Which: `"host callback thread"`, `"scratch service (queue destroyed)"`,
        /// `"hostcall service"`.
        what: &'static str,
    },
    /// A buffer that cannot be exported as a dma-buf. Nothing was exported.
    #[error("cannot export as a dma-buf: {reason}")]
    NotExportable {
        /// Why: pageable memory, or a sub-allocated buffer (allocate it dedicated).
        reason: &'static str,
    },
    /// A file descriptor that cannot be one (negative).
    #[error("{what}: descriptor {fd} is not a valid file descriptor")]
    BadDescriptor {
        /// What it was given as: `"dma-buf"`.
        what: &'static str,
        /// The descriptor.
        fd: i32,
    },
    /// A value outside the range the call takes. Nothing was done.
    #[error("{what} {value} is not in {min}..={max}")]
    OutOfRange {
        /// What: `"SMI event"`.
        what: &'static str,
        /// The value given.
        value: u64,
        /// The smallest value taken.
        min: u64,
        /// The largest value taken.
        max: u64,
    },
    /// An allocation alignment that is not a power of two, or larger than kfdrt places
    /// buffers at. Nothing was allocated.
    #[error("alignment {align} is not a power of two up to {max}")]
    BadAlignment {
        /// The alignment asked for, in bytes.
        align: u64,
        /// The largest alignment taken, in bytes (2 MiB).
        max: u64,
    },
    /// CPU access to memory of a kind the CPU cannot map (device-local VRAM).
    #[error("{kind} is not host-accessible")]
    NoCpuAccess {
        /// The memory kind's name.
        kind: &'static str,
    },
    /// `Buffer::unmap_from` the GPU that owns the buffer: its mapping there lives as long as
    /// the buffer.
    #[error("cannot unmap a buffer from the GPU that owns it ({gpu_id:#x})")]
    UnmapFromOwner {
        /// The owning GPU.
        gpu_id: u32,
    },
    /// A recorded capture that does not parse or does not hold what a replay needs.
    #[error("capture: {reason}")]
    BadCapture {
        /// What is wrong with it.
        reason: String,
    },
    /// A kernel that a PM4 dispatch cannot launch: its kernel descriptor is not known (a kernel
    /// made with [`Kernel::from_raw`](crate::Kernel::from_raw)), or its entry address overflows.
    #[error("kernel {kernel:?}: {reason}")]
    NotDispatchable {
        /// The kernel's name.
        kernel: String,
        /// Why: `"its kernel descriptor is not known"`, `"its entry address overflows"`.
        reason: &'static str,
    },
    /// A raw PM4 packet cannot go into its queue's ring (longer than the ring can ever hold).
    /// Nothing of it was written.
    #[error("PM4 packet: {0}")]
    Pm4Packet(pm4::ring::RingError),
    /// A raw SDMA packet does not encode for its engine (a field out of range, a misaligned or
    /// wrapping address, a packet the engine's version lacks). Nothing of it was written.
    #[error("SDMA packet: {0}")]
    SdmaPacket(#[from] sdma::EncodeError),
    /// A raw SDMA packet cannot go into its queue's ring (longer than the ring can ever hold, or
    /// the engine's read pointer is not to be trusted). Nothing of it was written.
    #[error("SDMA packet: {0}")]
    SdmaRing(sdma::ring::RingError),
    /// Kernel arguments do not match the kernel's metadata (see
    /// [`crate::kernel_args::KernelArgError`]).
    #[error("kernel arguments: {0}")]
    KernelArgs(#[from] KernelArgError),
    /// The emulated device could not be created.
    #[cfg(feature = "emu")]
    #[error("emulator: {0}")]
    Emulator(#[from] kfd_emu::EmuError),
}

impl Error {
    /// The errno behind a driver failure, if that is what this is.
    pub fn errno(&self) -> Option<Errno> {
        match self {
            Error::Driver { errno, .. } => Some(*errno),
            _ => None,
        }
    }

    /// The report this error carries (see [`crate::debug::report`]), if any.
    pub fn report(&self) -> Option<&DeviceReport> {
        match self {
            Error::Timeout { report, .. }
            | Error::QueueError { report, .. }
            | Error::DeviceFault { report, .. }
            | Error::DeviceReset { report, .. } => report.as_deref(),
            _ => None,
        }
    }

    pub(crate) fn driver(op: &'static str) -> impl FnOnce(Errno) -> Error {
        move |errno| Error::Driver { op, errno }
    }

    /// The error of KFD request `T` (the type of `_args`, which names it) failing with an errno:
    /// `.map_err(Error::ioctl(&args))`.
    pub(crate) fn ioctl<T: kfd_sys::KfdIoctl>(_args: &T) -> impl FnOnce(Errno) -> Error {
        move |errno| Error::Driver { op: T::NAME, errno }
    }
}

fn report_text(report: &Option<Box<DeviceReport>>) -> String {
    report
        .as_ref()
        .map_or_else(String::new, |r| format!("\n{r}"))
}

fn stopped(queue_id: &Option<u32>) -> String {
    queue_id.map_or_else(String::new, |q| format!(" (queue {q} stopped)"))
}

/// `Result<T, kfdrt::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
