//! The Driver seam: the one trait through which every ioctl, mmap and topology read passes.
//!
//! Above this trait the runtime is the same code for a real `/dev/kfd` ([`crate::DevKfd`]) and for
//! the emulated device (`kfd-emu`), so the emulator exercises the real marshalling of every
//! `kfd_ioctl_*` struct.

use crate::errno::Errno;
use crate::ioctl::{IoctlRequest, KfdIoctl, PlainKfdIoctl};
use core::ffi::c_void;

/// Where the KFD topology tree lives in sysfs; topology paths given to [`Driver`] are relative to it.
pub const KFD_TOPOLOGY_ROOT: &str = "/sys/devices/virtual/kfd/kfd/topology";

/// The file an ioctl or a mapping goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    /// The process's `/dev/kfd` file.
    Kfd,
    /// The DRM render node `/dev/dri/renderD<minor>` (as given by `drm_render_minor` in topology).
    Render(u32),
}

/// What backs a mapping made through [`Driver::mmap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapSource {
    /// Anonymous memory (used to reserve virtual address ranges).
    Anonymous,
    /// An offset of a device file: the KFD fd (doorbells, events page on some kernels, MMIO) or a
    /// render node (buffer objects, at the `mmap_offset` KFD returned).
    File(Node),
}

/// Whether a driver is real hardware or the emulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DriverKind {
    /// `/dev/kfd` on a machine with an AMD GPU.
    Hardware,
    /// The in-process emulated device.
    Emulated,
}

/// The KFD driver as user space sees it.
///
/// Implementations must be usable from many threads at once: queues, signals and memory are used
/// concurrently by runtime users.
pub trait Driver: Send + Sync + 'static {
    /// Hardware or emulated.
    fn kind(&self) -> DriverKind;

    /// One line describing the device file(s) behind this driver, for programs to print.
    fn describe(&self) -> String;

    /// `ioctl(fd, request, arg)` on `node`. Returns the ioctl's non-negative return value.
    ///
    /// # Safety
    /// `arg` must point to a readable and writable value of `request.size()` bytes laid out as the
    /// kernel expects for `request`, and every user pointer inside it must be valid as the request
    /// requires (for example the device array of `MAP_MEMORY_TO_GPU`).
    unsafe fn ioctl(
        &self,
        node: Node,
        request: IoctlRequest,
        arg: *mut c_void,
    ) -> Result<i32, Errno>;

    /// Opens (once; later calls return the same descriptor) the render node with DRM minor `minor`
    /// and returns its descriptor, for `ACQUIRE_VM`'s `drm_fd`.
    fn open_render_node(&self, minor: u32) -> Result<i32, Errno>;

    /// `mmap(addr, len, prot, flags, fd, offset)` with the fd chosen by `source`.
    ///
    /// # Safety
    /// As for `mmap(2)`: with `MAP_FIXED`, `addr..addr+len` must be a range the caller owns (for
    /// example a reservation it made), since whatever was mapped there is replaced.
    unsafe fn mmap(
        &self,
        source: MapSource,
        addr: *mut c_void,
        len: usize,
        prot: i32,
        flags: i32,
        offset: u64,
    ) -> Result<*mut c_void, Errno>;

    /// `munmap(addr, len)`.
    ///
    /// # Safety
    /// The range must be one the caller mapped and nothing may use it afterwards.
    unsafe fn munmap(&self, addr: *mut c_void, len: usize) -> Result<(), Errno>;

    /// Reads a file of the topology tree, `path` relative to [`KFD_TOPOLOGY_ROOT`]
    /// (`"nodes/1/properties"`).
    fn read_topology(&self, path: &str) -> Result<String, Errno>;

    /// Lists a directory of the topology tree (`"nodes"`, `"nodes/1/mem_banks"`), sorted numerically
    /// where the names are numbers.
    fn list_topology(&self, path: &str) -> Result<Vec<String>, Errno>;

    /// The kernel's page size (`PAGE_SIZE`): what the driver rounds buffers to, and the unit of
    /// its doorbell slice, queue pointer pages and mappings. The host's by default; an emulated
    /// driver may model another (an AArch64 kernel of 64 KiB pages).
    fn page_size(&self) -> u64 {
        host_page_size()
    }

    /// A hint that a doorbell of GPU `gpu_id` was just written. Hardware notices doorbells by
    /// itself; the emulator may use this to wake its packet processors promptly.
    fn doorbell_hint(&self, gpu_id: u32) {
        let _ = gpu_id;
    }
}

/// The host's page size (`sysconf(_SC_PAGESIZE)`), 4 KiB if it will not say.
pub fn host_page_size() -> u64 {
    // SAFETY: sysconf only reads a system value.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(n).ok().filter(|&n| n >= 4096).unwrap_or(4096)
}

/// Typed ioctl calls on any [`Driver`].
pub trait DriverExt: Driver {
    /// Issues a KFD ioctl whose argument carries no user pointer, so it cannot touch memory other
    /// than `arg` itself.
    fn kfd_ioctl<T: PlainKfdIoctl>(&self, arg: &mut T) -> Result<i32, Errno> {
        // SAFETY: `KfdIoctl` guarantees `T` is exactly the argument of `T::REQUEST`, `arg` is a live
        // exclusive reference, and `PlainKfdIoctl` guarantees the request dereferences no pointer
        // carried inside `arg`.
        unsafe { self.ioctl(Node::Kfd, T::REQUEST, (arg as *mut T).cast()) }
    }

    /// Issues any KFD ioctl.
    ///
    /// # Safety
    /// Every user pointer or address inside `arg` must be valid for what the request does with it:
    /// arrays the kernel reads or fills, memory the GPU will read and write (queue rings and
    /// pointers), user pages to register.
    unsafe fn kfd_ioctl_unchecked<T: KfdIoctl>(&self, arg: &mut T) -> Result<i32, Errno> {
        // SAFETY: forwarded to the caller, see above; the size matches by `KfdIoctl`.
        unsafe { self.ioctl(Node::Kfd, T::REQUEST, (arg as *mut T).cast()) }
    }
}

impl<D: Driver + ?Sized> DriverExt for D {}

/// Sorts directory entries numerically when they are numbers (sysfs returns `0 1 10 2 ...`).
pub fn sort_topology_entries(names: &mut [String]) {
    names.sort_by(|a, b| match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        (Ok(_), Err(_)) => core::cmp::Ordering::Less,
        (Err(_), Ok(_)) => core::cmp::Ordering::Greater,
        _ => a.cmp(b),
    });
}
