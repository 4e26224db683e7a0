//! A debugger in another process. KFD keeps one `kfd_process` per process and lets a
//! debugger reach its tracee's (`kfd_ioctl_set_debug_trap`: the target found by pid, a KFD
//! process created for a tracee that never opened `/dev/kfd`, EPERM unless the caller is the
//! target's `ptrace_parent`). Under kfd-emu each process has its own emulator, and the tracee
//! is usually stopped while the debugger works on it, so the part of the debug state both
//! sides touch lives in a small record file per target process, locked with `flock`: the
//! target's runtime state (which the target publishes at `RUNTIME_ENABLE`), the session the
//! debugger attached, the runtime-enable semaphore, and the raised process and device
//! exceptions.
//!
//! The handshake is the driver's (`runtime_enable`/`runtime_disable`): with a debugger
//! attached, the target raises `EC_PROCESS_RUNTIME` and blocks until the debugger answers with
//! `SEND_RUNTIME_EVENT`; detaching does not release it. A page fault in the target goes to a
//! debugger subscribed to `EC_DEVICE_MEMORY_VIOLATION` (`kfd_set_dbg_ev_from_interrupt`).
//! The debugger is told through its notification descriptor, which the target opens through
//! `/proc/<debugger>/fd/<n>` (a FIFO or a pipe; not an eventfd).
//!
//! Differences from the driver: the held `RUNTIME_ENABLE` is not interrupted by a signal (the
//! kernel's `down_interruptible` returns EINTR; here only the debugger's answer, or the end of
//! the process, ends the wait); and the record is per process, so several emulators in one
//! process (kfdrt's tests) publish into the same one, the last runtime change winning.
//!
//! Not modelled across processes: the target's queues (queue snapshots are empty; suspend,
//! resume and wave-state requests, and the wave controls, answer EOPNOTSUPP with a log line),
//! and queue exceptions (they go to the target's runtime).

use super::ec_mask;
use crate::Emulator;
use kfd_sys::bindings::*;
use kfd_sys::Errno;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::time::Duration;

const MAGIC: u64 = 0x6B66_642D_6462_6701;
const DEVICES: usize = 8;
// The record's words.
const W_MAGIC: usize = 0;
const W_START: usize = 1;
const W_R_DEBUG: usize = 2;
const W_RUNTIME_STATE: usize = 3;
const W_TTMP_SETUP: usize = 4;
const W_ATTACHED: usize = 5;
const W_DEBUGGER_PID: usize = 6;
const W_NOTIFY_FD: usize = 7;
const W_SEMA: usize = 8;
const W_EXCEPTION_MASK: usize = 9;
const W_PROCESS_RAISED: usize = 10;
const W_DEVICE_IDS: usize = 11;
const W_DEVICE_RAISED: usize = W_DEVICE_IDS + DEVICES;
const WORDS: usize = W_DEVICE_RAISED + DEVICES;

type Record = [u64; WORDS];

fn dir() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    let base = if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    };
    base.join("kfd-emu-debug")
}

/// The start time of process `pid` (`/proc/<pid>/stat` field 22), which tells a record of a
/// process from one of an earlier process with the same pid. `None`: no such process.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_comm = &stat[stat.rfind(')')? + 1..];
    after_comm.split_whitespace().nth(19)?.parse().ok()
}

/// Runs `f` on the record of process `pid` under its lock; a missing or stale record is
/// created fresh when `create` is set, and is `None` otherwise.
fn with_record<R>(pid: u32, create: bool, f: impl FnOnce(&mut Record) -> R) -> Option<R> {
    let start = start_time(pid)?;
    let dir = dir();
    if create {
        let _ = std::fs::create_dir_all(&dir);
    }
    let path = dir.join(pid.to_string());
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .open(&path)
        .ok()?;
    let _lock = Flock::exclusive(&file)?;
    let mut bytes = [0u8; WORDS * 8];
    let got = file.read_at(&mut bytes, 0).unwrap_or(0);
    let mut r: Record = [0; WORDS];
    for (w, b) in r.iter_mut().zip(bytes.chunks_exact(8)) {
        *w = u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    }
    if got < bytes.len() || r[W_MAGIC] != MAGIC || r[W_START] != start {
        if !create {
            return None;
        }
        r = [0; WORDS];
        r[W_MAGIC] = MAGIC;
        r[W_START] = start;
        collect_stale(&dir);
    }
    let out = f(&mut r);
    for (w, b) in r.iter().zip(bytes.chunks_exact_mut(8)) {
        b.copy_from_slice(&w.to_le_bytes());
    }
    if file.write_at(&bytes, 0).is_err() {
        log::warn!(
            "kfd-emu: could not write the debug record {}",
            path.display()
        );
    }
    Some(out)
}

/// Removes the records of processes that are gone.
fn collect_stale(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let gone = e
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|pid| start_time(pid).is_none());
        if gone {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// An exclusive `flock`, released on drop.
struct Flock<'a>(&'a File);

impl<'a> Flock<'a> {
    fn exclusive(f: &'a File) -> Option<Flock<'a>> {
        // SAFETY: flock on a descriptor `f` owns.
        (unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0).then_some(Flock(f))
    }
}

impl Drop for Flock<'_> {
    fn drop(&mut self) {
        // SAFETY: as in `exclusive`.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// Raises `mask` in the record (into the device word of `gpu`, or the process's) and tells
/// the debugger if it subscribed, as `kfd_dbg_ev_raise` does. Returns whether it was told.
fn raise(r: &mut Record, mask: u64, gpu: Option<u32>) -> bool {
    match gpu {
        None => r[W_PROCESS_RAISED] |= mask,
        Some(gpu) => {
            let ids = &r[W_DEVICE_IDS..W_DEVICE_IDS + DEVICES];
            let slot = ids
                .iter()
                .position(|&id| id == u64::from(gpu))
                .or_else(|| ids.iter().position(|&id| id == 0));
            if let Some(i) = slot {
                r[W_DEVICE_IDS + i] = u64::from(gpu);
                r[W_DEVICE_RAISED + i] |= mask;
            }
        }
    }
    if r[W_EXCEPTION_MASK] & mask == 0 {
        return false;
    }
    let at = format!("/proc/{}/fd/{}", r[W_DEBUGGER_PID], r[W_NOTIFY_FD]);
    let told = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&at)
        .and_then(|f| std::io::Write::write(&mut &f, b"."))
        .is_ok();
    if !told {
        log::warn!("kfd-emu: could not tell the debugger through {at}");
    }
    true
}

// The target's side.

/// The target's runtime changed to `info`: published for a debugger to read when it attaches;
/// with one attached, `EC_PROCESS_RUNTIME` is raised and the call blocks until the debugger
/// answers (`runtime_enable`'s `down_interruptible(&p->runtime_enable_sema)`).
pub(super) fn runtime_changed(info: &kfd_runtime_info) {
    let me = std::process::id();
    let attached = with_record(me, true, |r| {
        r[W_R_DEBUG] = info.r_debug;
        r[W_RUNTIME_STATE] = u64::from(info.runtime_state);
        r[W_TTMP_SETUP] = u64::from(info.ttmp_setup);
        if r[W_ATTACHED] == 0 {
            return false;
        }
        raise(r, ec_mask(EC_PROCESS_RUNTIME), None);
        true
    });
    if attached != Some(true) {
        return;
    }
    log::debug!("kfd-emu: runtime change held until the debugger answers");
    loop {
        let acked = with_record(me, false, |r| {
            let ok = r[W_SEMA] > 0;
            r[W_SEMA] = r[W_SEMA].saturating_sub(u64::from(ok));
            ok
        });
        if acked != Some(false) {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A device exception on `gpu` of this process: a debugger in another process that subscribed
/// to it takes it. Returns whether one did.
pub(super) fn raise_device(gpu: u32, mask: u64) -> bool {
    with_record(std::process::id(), false, |r| {
        r[W_ATTACHED] != 0 && raise(r, mask, Some(gpu))
    })
    .unwrap_or(false)
}

// The debugger's side.

/// Whether the calling thread traces `pid` (`ptrace_parent(target) == current`: a thread, so
/// another thread of the debugger is refused, as in the kernel).
fn traced_by_me(pid: u32) -> bool {
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() } as u32;
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("TracerPid:"))
                .and_then(|v| v.trim().parse::<u32>().ok())
        })
        == Some(me)
}

/// `AMDKFD_IOC_DBG_TRAP` on process `a.pid`, another than the caller's.
///
/// # Safety
/// As [`super::dbg_trap`].
pub(super) unsafe fn dbg_trap(
    emu: &Emulator,
    a: &mut kfd_ioctl_dbg_trap_args,
) -> Result<i32, Errno> {
    let pid = a.pid;
    if start_time(pid).is_none() {
        return Err(Errno::ESRCH);
    }
    if a.op != KFD_IOC_DBG_TRAP_DISABLE && !traced_by_me(pid) {
        return Err(Errno::EPERM);
    }
    let create = a.op == KFD_IOC_DBG_TRAP_ENABLE;
    // SAFETY: forwarded from the caller's contract.
    let r = with_record(pid, create, |r| unsafe { on_record(emu, r, a) });
    // A target with no record never enabled a runtime or met a debugger: not debug-enabled.
    r.unwrap_or(Err(Errno::EINVAL))
}

/// # Safety
/// As [`super::dbg_trap`].
unsafe fn on_record(
    emu: &Emulator,
    r: &mut Record,
    a: &mut kfd_ioctl_dbg_trap_args,
) -> Result<i32, Errno> {
    if a.op == KFD_IOC_DBG_TRAP_ENABLE {
        // SAFETY: the members are plain integers; the operation names the one the caller filled.
        let e = unsafe { &mut a.__bindgen_anon_1.enable };
        if r[W_ATTACHED] != 0 {
            return Err(Errno::EALREADY);
        }
        let info = kfd_runtime_info {
            r_debug: r[W_R_DEBUG],
            runtime_state: r[W_RUNTIME_STATE] as u32,
            ttmp_setup: r[W_TTMP_SETUP] as u32,
        };
        // fget(): a reference on the debugger's file, which the target reaches through
        // /proc/<debugger>/fd/<reference>.
        // SAFETY: F_DUPFD_CLOEXEC on any number is safe; failure means it is not open.
        let fd = unsafe { libc::fcntl(e.dbg_fd as i32, libc::F_DUPFD_CLOEXEC, 0) };
        if fd < 0 {
            return Err(Errno::EBADF);
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        let notify = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: the caller's contract covers `rinfo_size` bytes at `rinfo_ptr`.
        unsafe { super::copy_runtime_info(&info, e.rinfo_ptr, &mut e.rinfo_size)? };
        r[W_ATTACHED] = 1;
        r[W_DEBUGGER_PID] = u64::from(std::process::id());
        r[W_NOTIFY_FD] = fd as u64;
        emu.debug.remote_notify_lock().insert(a.pid, notify);
        r[W_EXCEPTION_MASK] = e.exception_mask;
        r[W_PROCESS_RAISED] = 0;
        r[W_DEVICE_IDS..WORDS].fill(0);
        log::debug!("kfd-emu: debugger attached to process {}", a.pid);
        return Ok(0);
    }
    if r[W_ATTACHED] == 0 {
        return Err(Errno::EINVAL);
    }
    match a.op {
        KFD_IOC_DBG_TRAP_DISABLE => {
            r[W_ATTACHED] = 0;
            r[W_EXCEPTION_MASK] = 0;
            emu.debug.remote_notify_lock().remove(&a.pid);
            Ok(0)
        }
        KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT => {
            // SAFETY: as above.
            let mask = unsafe { a.__bindgen_anon_1.send_runtime_event.exception_mask };
            if mask & ec_mask(EC_PROCESS_RUNTIME) != 0 {
                // up(&runtime_enable_sema), waiter or not.
                r[W_SEMA] += 1;
            }
            Ok(0)
        }
        KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED => {
            // SAFETY: as above.
            r[W_EXCEPTION_MASK] =
                unsafe { a.__bindgen_anon_1.set_exceptions_enabled.exception_mask };
            Ok(0)
        }
        KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT => {
            // SAFETY: as above.
            let q = unsafe { &mut a.__bindgen_anon_1.query_debug_event };
            let enabled = r[W_EXCEPTION_MASK];
            let device = (0..DEVICES).find(|&i| r[W_DEVICE_RAISED + i] & enabled != 0);
            let (status, gpu) = if let Some(i) = device {
                let gpu = r[W_DEVICE_IDS + i] as u32;
                (
                    super::report(&mut r[W_DEVICE_RAISED + i], q.exception_mask),
                    gpu,
                )
            } else if r[W_PROCESS_RAISED] & enabled != 0 {
                (
                    super::report(&mut r[W_PROCESS_RAISED], q.exception_mask),
                    KFD_INVALID_GPUID,
                )
            } else {
                return Err(Errno::EAGAIN);
            };
            q.exception_mask = status;
            q.gpu_id = gpu;
            q.queue_id = KFD_INVALID_QUEUEID;
            Ok(0)
        }
        KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT => {
            // SAFETY: as above.
            let d = unsafe { &mut a.__bindgen_anon_1.device_snapshot };
            // The target's GPUs are this emulator's: both processes are configured alike.
            let mut entries = super::device_snapshots(emu);
            for e in &mut entries {
                let at = (0..DEVICES).find(|&i| r[W_DEVICE_IDS + i] == u64::from(e.gpu_id));
                if let Some(i) = at {
                    e.exception_status =
                        super::report(&mut r[W_DEVICE_RAISED + i], d.exception_mask);
                }
            }
            // SAFETY: forwarded from the caller's contract on the snapshot buffer.
            unsafe {
                super::snapshot_out(
                    &entries,
                    d.snapshot_buf_ptr,
                    &mut d.num_devices,
                    &mut d.entry_size,
                )
            }
        }
        KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT => {
            // SAFETY: as above.
            let q = unsafe { &mut a.__bindgen_anon_1.queue_snapshot };
            log::warn!("kfd-emu: another process's queues are not visible here: empty snapshot");
            q.num_queues = 0;
            q.entry_size = std::mem::size_of::<kfd_queue_snapshot_entry>() as u32;
            Ok(0)
        }
        op => {
            log::warn!(
                "kfd-emu: debug operation {op} on another process ({}) is not modelled",
                a.pid
            );
            Err(Errno::EOPNOTSUPP)
        }
    }
}
