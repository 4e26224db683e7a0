//! A small `errno` newtype, so that every failure through the seam carries the kernel's code.

use std::fmt;

/// An `errno` value returned by the kernel (or by the emulator, which uses the same values).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(i32);

impl Errno {
    /// Operation not permitted.
    pub const EPERM: Errno = Errno(libc::EPERM);
    /// No such file or directory.
    pub const ENOENT: Errno = Errno(libc::ENOENT);
    /// No such process.
    pub const ESRCH: Errno = Errno(libc::ESRCH);
    /// Address already in use.
    pub const EADDRINUSE: Errno = Errno(libc::EADDRINUSE);
    /// Interrupted system call.
    pub const EINTR: Errno = Errno(libc::EINTR);
    /// I/O error.
    pub const EIO: Errno = Errno(libc::EIO);
    /// Bad file descriptor.
    pub const EBADF: Errno = Errno(libc::EBADF);
    /// Try again.
    pub const EAGAIN: Errno = Errno(libc::EAGAIN);
    /// Out of memory.
    pub const ENOMEM: Errno = Errno(libc::ENOMEM);
    /// Permission denied.
    pub const EACCES: Errno = Errno(libc::EACCES);
    /// Bad address.
    pub const EFAULT: Errno = Errno(libc::EFAULT);
    /// Device or resource busy.
    pub const EBUSY: Errno = Errno(libc::EBUSY);
    /// File exists.
    pub const EEXIST: Errno = Errno(libc::EEXIST);
    /// No such device.
    pub const ENODEV: Errno = Errno(libc::ENODEV);
    /// Invalid argument.
    pub const EINVAL: Errno = Errno(libc::EINVAL);
    /// Inappropriate ioctl for device (unknown request).
    pub const ENOTTY: Errno = Errno(libc::ENOTTY);
    /// No space left on device (KFD uses it for exhausted queue slots in places).
    pub const ENOSPC: Errno = Errno(libc::ENOSPC);
    /// Range error.
    pub const ERANGE: Errno = Errno(libc::ERANGE);
    /// Operation not supported.
    pub const EOPNOTSUPP: Errno = Errno(libc::EOPNOTSUPP);
    /// Operation already in progress (a debugger already attached).
    pub const EALREADY: Errno = Errno(libc::EALREADY);
    /// Timer expired.
    pub const ETIME: Errno = Errno(libc::ETIME);
    /// Function not implemented.
    pub const ENOSYS: Errno = Errno(libc::ENOSYS);

    /// Wraps a raw errno value.
    pub const fn from_raw(raw: i32) -> Errno {
        Errno(raw)
    }

    /// The raw errno value.
    pub const fn raw(self) -> i32 {
        self.0
    }

    /// The calling thread's current `errno`.
    pub fn last() -> Errno {
        Errno(
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        )
    }

    /// The symbolic name of the common values (`"EINVAL"`), or `None`.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            libc::EPERM => "EPERM",
            libc::ENOENT => "ENOENT",
            libc::EINTR => "EINTR",
            libc::EIO => "EIO",
            libc::EBADF => "EBADF",
            libc::EAGAIN => "EAGAIN",
            libc::ENOMEM => "ENOMEM",
            libc::EACCES => "EACCES",
            libc::EFAULT => "EFAULT",
            libc::EBUSY => "EBUSY",
            libc::EEXIST => "EEXIST",
            libc::ENODEV => "ENODEV",
            libc::EINVAL => "EINVAL",
            libc::ENOTTY => "ENOTTY",
            libc::ENOSPC => "ENOSPC",
            libc::ERANGE => "ERANGE",
            libc::EOPNOTSUPP => "EOPNOTSUPP",
            libc::EALREADY => "EALREADY",
            libc::ETIME => "ETIME",
            libc::ENOSYS => "ENOSYS",
            _ => return None,
        })
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "Errno({n})"),
            None => write!(f, "Errno({})", self.0),
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = std::io::Error::from_raw_os_error(self.0);
        match self.name() {
            Some(n) => write!(f, "{n}: {text}"),
            None => write!(f, "errno {}: {text}", self.0),
        }
    }
}

impl std::error::Error for Errno {}

impl From<Errno> for std::io::Error {
    fn from(e: Errno) -> Self {
        std::io::Error::from_raw_os_error(e.0)
    }
}
