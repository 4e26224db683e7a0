//! [`DevKfd`]: the [`Driver`] seam implemented with real system calls on `/dev/kfd`.

use crate::driver::{
    sort_topology_entries, Driver, DriverKind, MapSource, Node, KFD_TOPOLOGY_ROOT,
};
use crate::errno::Errno;
use crate::ioctl::IoctlRequest;
use core::ffi::c_void;
use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Mutex;

/// The path of the KFD character device.
pub const DEV_KFD_PATH: &str = "/dev/kfd";

/// The real KFD driver: `/dev/kfd` plus the render nodes of its GPUs.
#[derive(Debug)]
pub struct DevKfd {
    kfd: OwnedFd,
    render: Mutex<HashMap<u32, OwnedFd>>,
}

fn open_path(path: &str) -> Result<OwnedFd, Errno> {
    let c = CString::new(path).map_err(|_| Errno::EINVAL)?;
    // SAFETY: `c` is a NUL-terminated path; open returns a new descriptor or -1.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(Errno::last());
    }
    // SAFETY: `fd` was just returned by open and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl DevKfd {
    /// Opens `/dev/kfd`. `ENOENT` means the machine has no KFD (no AMD GPU or no amdgpu driver).
    pub fn open() -> Result<DevKfd, Errno> {
        Ok(DevKfd {
            kfd: open_path(DEV_KFD_PATH)?,
            render: Mutex::new(HashMap::new()),
        })
    }

    /// Whether `/dev/kfd` exists on this machine.
    pub fn present() -> bool {
        std::path::Path::new(DEV_KFD_PATH).exists()
    }

    fn fd_of(&self, node: Node) -> Result<i32, Errno> {
        match node {
            Node::Kfd => Ok(self.kfd.as_raw_fd()),
            Node::Render(minor) => self.open_render_node(minor),
        }
    }
}

impl Driver for DevKfd {
    fn kind(&self) -> DriverKind {
        DriverKind::Hardware
    }

    fn describe(&self) -> String {
        format!("{DEV_KFD_PATH} (hardware)")
    }

    unsafe fn ioctl(
        &self,
        node: Node,
        request: IoctlRequest,
        arg: *mut c_void,
    ) -> Result<i32, Errno> {
        let fd = self.fd_of(node)?;
        // EAGAIN from the debugger's request is an answer ("no event pending" from
        // QUERY_DEBUG_EVENT), not a busy driver: retrying it would wait forever.
        let eagain_answers = node == Node::Kfd && request == crate::ioctl::request::DBG_TRAP;
        loop {
            // SAFETY: the caller guarantees `arg` is valid for `request` (see the trait).
            let r = unsafe { libc::ioctl(fd, request.raw() as libc::c_ulong, arg) };
            if r >= 0 {
                return Ok(r);
            }
            let e = Errno::last();
            // libhsakmt retries these too: a signal or a busy driver is not a failure of the call.
            if e != Errno::EINTR && (e != Errno::EAGAIN || eagain_answers) {
                return Err(e);
            }
        }
    }

    fn open_render_node(&self, minor: u32) -> Result<i32, Errno> {
        let mut map = self.render.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(fd) = map.get(&minor) {
            return Ok(fd.as_raw_fd());
        }
        let fd = open_path(&format!("/dev/dri/renderD{minor}"))?;
        let raw = fd.as_raw_fd();
        map.insert(minor, fd);
        Ok(raw)
    }

    unsafe fn mmap(
        &self,
        source: MapSource,
        addr: *mut c_void,
        len: usize,
        prot: i32,
        flags: i32,
        offset: u64,
    ) -> Result<*mut c_void, Errno> {
        let (fd, flags) = match source {
            MapSource::Anonymous => (-1, flags | libc::MAP_ANONYMOUS),
            MapSource::File(node) => (self.fd_of(node)?, flags),
        };
        // SAFETY: forwarded to the caller's guarantees about `addr`/MAP_FIXED (see the trait).
        let p = unsafe { libc::mmap(addr, len, prot, flags, fd, offset as libc::off_t) };
        if p == libc::MAP_FAILED {
            Err(Errno::last())
        } else {
            Ok(p)
        }
    }

    unsafe fn munmap(&self, addr: *mut c_void, len: usize) -> Result<(), Errno> {
        // SAFETY: the caller owns the mapping and no longer uses it.
        if unsafe { libc::munmap(addr, len) } != 0 {
            Err(Errno::last())
        } else {
            Ok(())
        }
    }

    fn read_topology(&self, path: &str) -> Result<String, Errno> {
        std::fs::read_to_string(format!("{KFD_TOPOLOGY_ROOT}/{path}"))
            .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))
    }

    fn list_topology(&self, path: &str) -> Result<Vec<String>, Errno> {
        let dir = std::fs::read_dir(format!("{KFD_TOPOLOGY_ROOT}/{path}"))
            .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))?;
        let mut names: Vec<String> = dir
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        sort_topology_entries(&mut names);
        Ok(names)
    }
}
