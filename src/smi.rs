//! System-management events (`AMDKFD_IOC_SMI_EVENTS`, KFD 1.3): a stream of lines about one
//! GPU (VM faults, resets, queue evictions and restores, migrations), what `rocm-smi` and
//! profilers watch. See the `KFD_EVENT_FMT_*` formats in `include/uapi/linux/kfd_ioctl.h`.

use crate::error::{Error, Result};
use crate::Gpu;
use kfd_sys::bindings::kfd_ioctl_smi_events_args;
use kfd_sys::{DriverExt, Feature};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// `KFD_SMI_EVENT_VMFAULT`.
pub const VM_FAULT: u32 = 1;
/// `KFD_SMI_EVENT_GPU_PRE_RESET`.
pub const GPU_PRE_RESET: u32 = 3;
/// `KFD_SMI_EVENT_GPU_POST_RESET`.
pub const GPU_POST_RESET: u32 = 4;
/// `KFD_SMI_EVENT_MIGRATE_START`: SVM memory starts moving (start and size in pages, from and
/// to, the prefetch and preferred locations, the trigger).
pub const MIGRATE_START: u32 = 5;
/// `KFD_SMI_EVENT_MIGRATE_END`: the move is over (as the start, then the trigger and the
/// result).
pub const MIGRATE_END: u32 = 6;
/// `KFD_SMI_EVENT_QUEUE_EVICTION`.
pub const QUEUE_EVICTION: u32 = 9;
/// `KFD_SMI_EVENT_QUEUE_RESTORE`.
pub const QUEUE_RESTORE: u32 = 10;

/// One event line: its number and the fields after it (as the driver formats them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmiEvent {
    /// `KFD_SMI_EVENT_*`.
    pub event: u32,
    /// The rest of the line, without the newline (a NUL the driver wrote is kept).
    pub fields: String,
}

/// A GPU's event stream, for the events asked for.
#[derive(Debug)]
pub struct SmiEvents {
    fd: OwnedFd,
    pending: Vec<u8>,
}

impl Gpu {
    /// Opens the GPU's system-management event stream for `events` (`KFD_SMI_EVENT_*`
    /// numbers).
    pub fn smi_events(&self, events: &[u32]) -> Result<SmiEvents> {
        self.kfd().shared.dev.require(Feature::SmiEvents)?;
        let mut mask = 0u64;
        for &e in events {
            if !(1..=63).contains(&e) {
                return Err(Error::OutOfRange {
                    what: "SMI event",
                    value: u64::from(e),
                    min: 1,
                    max: 63,
                });
            }
            mask |= 1 << (e - 1);
        }
        let mut args = kfd_ioctl_smi_events_args {
            gpuid: self.id(),
            anon_fd: 0,
        };
        self.kfd()
            .driver()
            .kfd_ioctl(&mut args)
            .map_err(Error::ioctl(&args))?;
        let raw = i32::try_from(args.anon_fd).map_err(|_| Error::UnexpectedDriverAnswer {
            request: "AMDKFD_IOC_SMI_EVENTS",
            what: format!("descriptor {}", args.anon_fd),
        })?;
        // SAFETY: the driver created the descriptor for us; nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let bytes = mask.to_le_bytes();
        // SAFETY: writing a live 8-byte local to our own descriptor.
        let n = unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), 8) };
        if n != 8 {
            return Err(Error::Driver {
                op: "write (SMI event mask)",
                errno: kfd_sys::Errno::last(),
            });
        }
        Ok(SmiEvents {
            fd,
            pending: Vec::new(),
        })
    }
}

impl SmiEvents {
    /// The next event, waiting up to `timeout`; `None` when none came.
    pub fn next(&mut self, timeout: Duration) -> Result<Option<SmiEvent>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
                let (num, rest) = text.split_once(' ').unwrap_or((&text, ""));
                let event =
                    u32::from_str_radix(num, 16).map_err(|_| Error::UnexpectedDriverAnswer {
                        request: "SMI event stream",
                        what: format!("line {text:?}"),
                    })?;
                return Ok(Some(SmiEvent {
                    event,
                    fields: rest.to_owned(),
                }));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = i32::try_from(left.as_millis()).unwrap_or(i32::MAX);
            // SAFETY: one valid pollfd.
            let r = unsafe { libc::poll(&mut pfd, 1, ms) };
            if r == 0 {
                return Ok(None);
            }
            if r < 0 {
                let errno = kfd_sys::Errno::last();
                if errno == kfd_sys::Errno::EINTR {
                    continue;
                }
                return Err(Error::Driver {
                    op: "poll (SMI events)",
                    errno,
                });
            }
            let mut buf = [0u8; 512];
            // SAFETY: reading into a live local buffer from our own descriptor.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                // The driver answers EAGAIN on an empty stream (a wake-up with nothing left to
                // read): look again until the deadline.
                let errno = kfd_sys::Errno::last();
                if errno == kfd_sys::Errno::EAGAIN || errno == kfd_sys::Errno::EINTR {
                    continue;
                }
                return Err(Error::Driver {
                    op: "read (SMI events)",
                    errno,
                });
            }
            if n == 0 {
                return Ok(None);
            }
            self.pending.extend_from_slice(&buf[..n as usize]);
        }
    }
}
