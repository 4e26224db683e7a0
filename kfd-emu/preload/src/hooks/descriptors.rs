//! Hooks that take a descriptor: device descriptors' ioctls and mmaps go to the emulator, their
//! dups stay devices, and `read`/`write` fail as on the real device files.

use super::set_errno;
use crate::state;
use crate::{fds, real};
use core::ffi::{c_int, c_ulong, c_void};
use kfd_sys::{Driver, IoctlRequest, MapSource, Node};
use libc::{off_t, size_t, ssize_t};

/// The device entry of `fd`, after checking that the descriptor still is the memfd recorded
/// for it (an entry goes stale when the descriptor is closed without `close`, for example by
/// `close_range`, and its number is reused); a stale entry is dropped.
pub(super) fn device(fd: c_int) -> Option<fds::Entry> {
    let entry = fds::lookup(fd)?;
    // SAFETY: all-zero is a valid `struct stat`, filled by fstat.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: `st` is a writable `struct stat`.
    if unsafe { real::fstat(fd, &mut st) } != 0 || st.st_ino != entry.inode {
        forget(fd);
        return None;
    }
    Some(entry)
}

/// A device entry for `fd` opened (or duplicated) in this process.
fn entry_for(fd: c_int, node: Node) -> Option<fds::Entry> {
    // SAFETY: all-zero is a valid `struct stat`, filled by fstat.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: `st` is a writable `struct stat`.
    if unsafe { real::fstat(fd, &mut st) } != 0 {
        return None;
    }
    Some(fds::Entry {
        node,
        opener: std::process::id(),
        inode: st.st_ino,
    })
}

/// Opens an emulated device file: an empty memfd stands in as its descriptor.
pub(super) fn open_device(node: Node, flags: c_int) -> c_int {
    if flags & libc::O_DIRECTORY != 0 {
        set_errno(libc::ENOTDIR);
        return -1;
    }
    let Some(sys) = state::system() else {
        set_errno(libc::ENOENT);
        return -1;
    };
    let mfd_flags = if flags & libc::O_CLOEXEC != 0 {
        libc::MFD_CLOEXEC
    } else {
        0
    };
    // SAFETY: a static NUL-terminated name; memfd_create is not overridden.
    let fd = unsafe { libc::memfd_create(c"kfd-emu-device".as_ptr(), mfd_flags) };
    if fd < 0 {
        return -1;
    }
    let inserted = entry_for(fd, node).is_some_and(|e| fds::insert(fd, e));
    if !inserted {
        // SAFETY: closes the memfd just created.
        unsafe { real::close(fd) };
        set_errno(libc::EMFILE);
        return -1;
    }
    if let Node::Render(minor) = node {
        let _ = sys.emu.attach_render_fd(minor, fd, None);
    }
    log::debug!("kfd-emu-preload: open {node:?} -> fd {fd}");
    fd
}

/// Registers `new` as another descriptor of the open file `old_fd` (entry `old`) is, after a
/// successful dup.
fn dup_device(old: fds::Entry, old_fd: c_int, new: c_int) -> c_int {
    if !fds::insert(new, old) {
        // SAFETY: closes the descriptor just created by dup.
        unsafe { real::close(new) };
        set_errno(libc::EMFILE);
        return -1;
    }
    if let (Node::Render(minor), Some(sys)) = (old.node, state::current()) {
        if old.opener == std::process::id() {
            let _ = sys.emu.attach_render_fd(minor, new, Some(old_fd));
        }
    }
    new
}

/// Forgets `fd` if it was a device descriptor (it is being closed or replaced).
fn forget(fd: c_int) {
    if let Some(node) = fds::remove(fd) {
        log::debug!("kfd-emu-preload: close {node:?} fd {fd}");
        if let (Node::Render(_), Some(sys)) = (node, state::current()) {
            sys.emu.detach_render_fd(fd);
        }
    }
}

/// The device a descriptor used for a driver call stands for, and the emulator serving this
/// process; EBADF (errno set) for a descriptor a forked child inherited, which KFD refuses in
/// any process but the one that opened it.
fn device_for_call(fd: c_int) -> Result<Option<(Node, &'static state::System)>, ()> {
    let Some(e) = device(fd) else {
        return Ok(None);
    };
    match state::current() {
        Some(sys) if e.opener == std::process::id() => Ok(Some((e.node, sys))),
        _ => {
            log::warn!(
                "kfd-emu-preload: fd {fd} of {:?} used by a process that did not open it",
                e.node
            );
            set_errno(libc::EBADF);
            Err(())
        }
    }
}

/// Overrides `close`.
///
/// # Safety
/// As the C function.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    forget(fd);
    // SAFETY: forwarded unchanged (a device descriptor is a memfd).
    unsafe { real::close(fd) }
}

/// Overrides `read`: device files have no `read` (KFD and DRM answer EINVAL).
///
/// # Safety
/// As the C function.
#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, len: size_t) -> ssize_t {
    if device(fd).is_some() {
        set_errno(libc::EINVAL);
        return -1;
    }
    // SAFETY: forwarded unchanged.
    unsafe { real::read(fd, buf, len) }
}

/// Overrides `write`: device files have no `write` either.
///
/// # Safety
/// As the C function.
#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, len: size_t) -> ssize_t {
    if device(fd).is_some() {
        set_errno(libc::EINVAL);
        return -1;
    }
    // SAFETY: forwarded unchanged.
    unsafe { real::write(fd, buf, len) }
}

/// Overrides `ioctl`: requests on device descriptors go to the emulator.
///
/// # Safety
/// As the C function.
#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, request: c_ulong, arg: *mut c_void) -> c_int {
    // The VFS answers these for every file before a driver sees them: let the memfd do so.
    const GENERIC: [c_ulong; 4] = [
        libc::FIOCLEX,
        libc::FIONCLEX,
        libc::FIONBIO as c_ulong,
        libc::FIOASYNC as c_ulong,
    ];
    let (node, sys) = match device_for_call(fd) {
        Ok(Some(d)) if !GENERIC.contains(&request) => d,
        // SAFETY: forwarded unchanged.
        Ok(_) => return unsafe { real::ioctl(fd, request, arg) },
        Err(()) => return -1,
    };
    // ioctl numbers are 32 bits; glibc's prototype widens them.
    let req = IoctlRequest::from_raw(request as u32);
    // SAFETY: the caller passes what the request needs, as for the real driver.
    let result = unsafe { sys.emu.ioctl(node, req, arg) };
    if log::log_enabled!(log::Level::Trace) {
        let name = match node {
            Node::Kfd => kfd_sys::ioctl::kfd_request_name(req.nr()),
            Node::Render(_) => None,
        };
        log::trace!(
            "kfd-emu-preload: ioctl {:#x} ({}) on {node:?}: {result:?}",
            req.raw(),
            name.unwrap_or("-")
        );
    }
    match result {
        Ok(v) => v,
        Err(e) => {
            log::debug!(
                "kfd-emu-preload: ioctl {:#x} on {node:?} failed: {e}",
                req.raw()
            );
            set_errno(e.raw());
            -1
        }
    }
}

/// # Safety
/// As `mmap(2)`.
unsafe fn mmap_hook(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
    next: unsafe fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void,
) -> *mut c_void {
    let (node, sys) = match device_for_call(fd) {
        Ok(Some(d)) => d,
        // SAFETY: forwarded unchanged.
        Ok(None) => return unsafe { next(addr, len, prot, flags, fd, off) },
        Err(()) => return libc::MAP_FAILED,
    };
    // SAFETY: forwarded from the caller, who owns `addr..addr+len` if it passes MAP_FIXED.
    let r = unsafe {
        sys.emu
            .mmap(MapSource::File(node), addr, len, prot, flags, off as u64)
    };
    match r {
        Ok(p) => p,
        Err(e) => {
            log::debug!("kfd-emu-preload: mmap of {node:?} offset {off:#x} failed: {e}");
            set_errno(e.raw());
            libc::MAP_FAILED
        }
    }
}

/// # Safety
/// As `fcntl(2)`.
unsafe fn fcntl_hook(
    fd: c_int,
    cmd: c_int,
    arg: c_ulong,
    next: unsafe fn(c_int, c_int, c_ulong) -> c_int,
) -> c_int {
    // SAFETY: forwarded unchanged.
    let r = unsafe { next(fd, cmd, arg) };
    if r >= 0 && matches!(cmd, libc::F_DUPFD | libc::F_DUPFD_CLOEXEC) {
        forget(r);
        if let Some(e) = device(fd) {
            return dup_device(e, fd, r);
        }
    }
    r
}

/// Overrides `dup`.
///
/// # Safety
/// As the C function.
#[no_mangle]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    // SAFETY: forwarded unchanged.
    let r = unsafe { real::dup(fd) };
    dup_result(fd, fd, r)
}

/// After a dup of `fd` into `r` (failed if negative): `r` is whatever `fd` is.
fn dup_result(fd: c_int, new: c_int, r: c_int) -> c_int {
    if r < 0 || fd == new && r == fd {
        return r;
    }
    forget(r);
    match device(fd) {
        Some(e) => dup_device(e, fd, r),
        None => r,
    }
}

/// Overrides `dup2`: the table changes only if the call succeeds.
///
/// # Safety
/// As the C function.
#[no_mangle]
pub unsafe extern "C" fn dup2(fd: c_int, new: c_int) -> c_int {
    // SAFETY: forwarded unchanged.
    let r = unsafe { real::dup2(fd, new) };
    dup_result(fd, new, r)
}

/// Overrides `dup3`.
///
/// # Safety
/// As the C function.
#[no_mangle]
pub unsafe extern "C" fn dup3(fd: c_int, new: c_int, flags: c_int) -> c_int {
    // SAFETY: forwarded unchanged.
    let r = unsafe { real::dup3(fd, new, flags) };
    dup_result(fd, new, r)
}

forwarding_hooks! {
    /// Overrides `mmap`: mappings of device descriptors are made by the emulator.
    fn mmap(addr: *mut c_void, len: size_t, prot: c_int, flags: c_int, fd: c_int, off: off_t)
        -> *mut c_void => mmap_hook;
    /// Overrides `mmap64`.
    fn mmap64(addr: *mut c_void, len: size_t, prot: c_int, flags: c_int, fd: c_int, off: off_t)
        -> *mut c_void => mmap_hook;
    /// Overrides `fcntl`: duplicates of device descriptors stay device descriptors.
    fn fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int => fcntl_hook;
    /// Overrides `fcntl64`.
    fn fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int => fcntl_hook;
}
