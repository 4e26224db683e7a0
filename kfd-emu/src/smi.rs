//! System-management events (`AMDKFD_IOC_SMI_EVENTS`, KFD 1.3): a descriptor per client and
//! GPU that streams text lines about the GPU, as `kfd_smi_events.c` writes them. The client
//! writes a `u64` mask of the events it wants (`KFD_SMI_EVENT_MASK_FROM_INDEX`); each line is the
//! event number in hex, a space, and the event's fields in the header's `KFD_EVENT_FMT_*`
//! format.
//!
//! Modelled events: VM faults (`1 pid:task`), GPU resets before and after (`3`/`4`, sequence
//! number and cause), SVM migrations by prefetch (`5`/`6`, boot-time ns, `-pid`, start and
//! size in pages, from and to, the prefetch and preferred locations or the result, trigger),
//! queue eviction and restore (`9`/`a`, boot-time ns, `-pid`, node, trigger; the restore line
//! ends in the NUL the kernel's `%c` of 0 writes). A read of an empty stream is EAGAIN, with
//! or without `O_NONBLOCK`, as `kfd_smi_ev_read` answers. Not modelled: thermal throttling,
//! page-fault events, `KFD_SMI_EVENT_ALL_PROCESS`.

use kfd_sys::bindings::*;
use kfd_sys::Errno;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::sync::Mutex;

/// `KFD_QUEUE_EVICTION_TRIGGER_SVM`: SVM memory a queue needs changed under it.
pub(crate) const EVICTION_SVM: u32 = 0;
/// `KFD_QUEUE_EVICTION_TRIGGER_TTM`: memory pressure.
pub(crate) const EVICTION_TTM: u32 = 2;
/// `KFD_QUEUE_EVICTION_TRIGGER_SUSPEND`: a power-management cycle.
pub(crate) const EVICTION_SUSPEND: u32 = 3;

struct Client {
    gpu_id: u32,
    /// The emulator's end of the client's socket.
    end: OwnedFd,
    mask: u64,
}

/// The process's SMI clients, on every GPU.
#[derive(Default)]
pub(crate) struct SmiHub {
    clients: Mutex<Vec<Client>>,
    reset_seq: Mutex<std::collections::HashMap<u32, u32>>,
}

impl std::fmt::Debug for SmiHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmiHub").finish_non_exhaustive()
    }
}

fn boottime_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-parameter.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Whether the client closed its end of the socket.
fn peer_closed(end: &OwnedFd) -> bool {
    let mut p = libc::pollfd {
        fd: end.as_raw_fd(),
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no waiting.
    let ready = unsafe { libc::poll(&mut p, 1, 0) };
    ready > 0 && p.revents & (libc::POLLRDHUP | libc::POLLHUP) != 0
}

fn task_name() -> String {
    std::fs::read_to_string("/proc/self/comm")
        .map(|s| s.trim_end().to_owned())
        .unwrap_or_else(|_| "unknown".into())
}

impl SmiHub {
    /// `AMDKFD_IOC_SMI_EVENTS` for GPU `gpu_id` (checked by the caller): a new client's
    /// descriptor.
    pub(crate) fn open(&self, gpu_id: u32) -> Result<i32, Errno> {
        let mut fds = [0; 2];
        // SAFETY: `fds` is a valid out-array of two descriptors.
        let r = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        if r != 0 {
            return Err(Errno::last());
        }
        // SAFETY: both descriptors were just created and are owned by nobody else.
        let (ours, theirs) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: flag changes on our own descriptors. The client's end never blocks either:
        // `kfd_smi_ev_read` answers EAGAIN on an empty stream whatever the file's flags (a
        // client waits with poll).
        unsafe {
            libc::fcntl(ours.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK);
            libc::fcntl(theirs.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK);
        }
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        // Clients that closed their end go now (KFD frees a client when its file is released),
        // so opening and closing streams does not pile up descriptors.
        clients.retain(|c| !peer_closed(&c.end));
        clients.push(Client {
            gpu_id,
            end: ours,
            mask: 0,
        });
        Ok(theirs.into_raw_fd())
    }

    /// Sends `event` with `fields` to the clients of `gpu_id` that asked for it (`None`: of
    /// every GPU, each line naming the client's own).
    fn post(&self, gpu_id: Option<u32>, event: u32, fields: impl Fn(u32) -> Vec<u8>) {
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        clients.retain_mut(|c| {
            if gpu_id.is_some_and(|g| g != c.gpu_id) {
                return true;
            }
            // The masks the client wrote since: the last whole one counts.
            let mut buf = [0u8; 64];
            loop {
                // SAFETY: reading into a live local buffer from our own descriptor.
                let n = unsafe { libc::read(c.end.as_raw_fd(), buf.as_mut_ptr().cast(), 64) };
                if n <= 0 {
                    if n == 0 {
                        return false; // the client closed its end
                    }
                    break;
                }
                for chunk in buf[..n as usize].chunks_exact(8) {
                    c.mask = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
                }
            }
            if c.mask & (1u64 << (event - 1)) == 0 {
                return true;
            }
            let mut line = format!("{event:x} ").into_bytes();
            line.extend(fields(c.gpu_id));
            // SAFETY: writing a live buffer to our own descriptor; MSG_NOSIGNAL keeps a closed
            // peer from raising SIGPIPE.
            let n = unsafe {
                libc::send(
                    c.end.as_raw_fd(),
                    line.as_ptr().cast(),
                    line.len(),
                    libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                )
            };
            n >= 0 || Errno::last() == Errno::EAGAIN
        });
    }

    /// A migration of SVM memory (`svm_migrate_vma_to_vram` / `_to_ram`): a start line and an
    /// end line (result 0) to the clients of the GPU that moves the bytes (the destination,
    /// or the source when they go to system memory), start and size in pages.
    pub(crate) fn migration(&self, m: &crate::svm::Migration) {
        /// `KFD_MIGRATE_TRIGGER_PREFETCH`.
        const PREFETCH: u32 = 0;
        let pid = std::process::id();
        let (start, pages) = (m.start >> 12, (m.end - m.start) >> 12);
        let gpu = if m.to != 0 { m.to } else { m.from };
        let (from, to, prefetch, preferred) = (m.from, m.to, m.prefetch, m.preferred);
        self.post(Some(gpu), KFD_SMI_EVENT_MIGRATE_START, |_| {
            format!(
                "{} -{pid} @{start:x}({pages:x}) {from:x}->{to:x} {prefetch:x}:{preferred:x} \
                 {PREFETCH}\n",
                boottime_ns()
            )
            .into_bytes()
        });
        self.post(Some(gpu), KFD_SMI_EVENT_MIGRATE_END, |_| {
            format!(
                "{} -{pid} @{start:x}({pages:x}) {from:x}->{to:x} {PREFETCH} 0\n",
                boottime_ns()
            )
            .into_bytes()
        });
    }

    /// A GPU page fault of this process on `gpu_id`.
    pub(crate) fn vm_fault(&self, gpu_id: u32) {
        let (pid, task) = (std::process::id(), task_name());
        self.post(Some(gpu_id), KFD_SMI_EVENT_VMFAULT, |_| {
            format!("{pid:x}:{task}\n").into_bytes()
        });
    }

    /// A reset of `gpu_id`: the pre-reset line, then the post-reset one, with the same
    /// sequence number.
    pub(crate) fn gpu_reset(&self, gpu_id: u32, cause: &str) {
        let seq = {
            let mut g = self.reset_seq.lock().unwrap_or_else(|p| p.into_inner());
            let s = g.entry(gpu_id).or_default();
            *s += 1;
            *s
        };
        for event in [KFD_SMI_EVENT_GPU_PRE_RESET, KFD_SMI_EVENT_GPU_POST_RESET] {
            self.post(Some(gpu_id), event, |_| {
                format!("{seq:x} {cause}\n").into_bytes()
            });
        }
    }

    /// The process's queues were evicted (on every GPU) for `trigger`.
    pub(crate) fn queue_eviction(&self, trigger: u32) {
        let pid = std::process::id();
        self.post(None, KFD_SMI_EVENT_QUEUE_EVICTION, |node| {
            format!("{} -{pid} {node:x} {trigger}\n", boottime_ns()).into_bytes()
        });
    }

    /// The process's queues were restored (on every GPU).
    pub(crate) fn queue_restore(&self) {
        let pid = std::process::id();
        self.post(None, KFD_SMI_EVENT_QUEUE_RESTORE, |node| {
            // `%c` of 0: a NUL byte before the newline, as the kernel writes it.
            format!("{} -{pid} {node:x} \0\n", boottime_ns()).into_bytes()
        });
    }
}
