//! A debugger in another process (KFD 1.13): it attaches to its tracee by pid, before the
//! tracee has opened the device; the tracee's `RUNTIME_ENABLE` is held until the debugger
//! answers the `EC_PROCESS_RUNTIME` it raised, and the tracee's page fault reaches the
//! debugger as a device exception (`kfd_ioctl_set_debug_trap`, `runtime_enable`,
//! `kfd_set_dbg_ev_from_interrupt`). Each process has its own emulator here: what both sides
//! touch is shared through a record file per target (see kfd-emu's `debugger::remote`).
//! Found by AMD's kfdtest (`KFDDBGTest.AttachToSpawnedProcess`, `HitMemoryViolation`).

use crate::common;
use crate::debugger::{dbg_trap, dbg_trap_out, pipe};

use kfd_sys::bindings::*;
use kfd_sys::Errno;
use kfdrt::emu::Preset;
use kfdrt::{AqlQueueOptions, Dispatch};
use std::io::Read;
use std::time::{Duration, Instant};

const fn ec(code: u32) -> u64 {
    1 << (code - 1)
}

/// The DBG_TRAP request `op` on process `pid`.
fn on(
    kfd: &kfdrt::Kfd,
    pid: i32,
    op: u32,
    fill: impl FnOnce(&mut kfd_ioctl_dbg_trap_args),
) -> Result<i32, Errno> {
    dbg_trap(kfd, op, |a| {
        a.pid = pid as u32;
        fill(a);
    })
}

/// Waits up to 20 s for a notification byte, passing on the signals that stop the tracee
/// meanwhile as a debugger does (the emulator's doorbell traps are signals).
fn notified(reader: &mut std::fs::File, pid: i32) -> bool {
    let end = Instant::now() + Duration::from_secs(20);
    let mut b = [0u8; 16];
    while Instant::now() < end {
        if matches!(reader.read(&mut b), Ok(n) if n > 0) {
            return true;
        }
        pump(pid);
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

/// Continues the tracee if a signal stopped it, delivering the signal.
fn pump(pid: i32) {
    let mut status = 0;
    // SAFETY: polls our own child.
    if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid && libc::WIFSTOPPED(status)
    {
        // SAFETY: resumes our stopped tracee with the signal that stopped it.
        unsafe { libc::ptrace(libc::PTRACE_CONT, pid, 0, libc::WSTOPSIG(status)) };
    }
}

fn query(kfd: &kfdrt::Kfd, pid: i32, clear: u64) -> Result<(u64, u32), Errno> {
    let (r, a) = dbg_trap_out(kfd, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, |a| {
        a.pid = pid as u32;
        a.__bindgen_anon_1.query_debug_event.exception_mask = clear;
    });
    r?;
    // SAFETY: the member the operation fills.
    let q = unsafe { a.__bindgen_anon_1.query_debug_event };
    Ok((q.exception_mask, q.gpu_id))
}

/// The tracee: stops for its parent to attach, opens a device (kfdrt enables the runtime),
/// then faults. Never returns.
fn tracee() -> ! {
    let code = std::panic::catch_unwind(|| {
        // SAFETY: plain requests on this process.
        unsafe {
            libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0);
            libc::raise(libc::SIGSTOP);
        }
        let kfd = common::emulated(Preset::Gfx90a, 1);
        let gpu = kfd.gpu(0).unwrap();
        let k = common::page_faulting_kernel(&gpu);
        let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
        let r = q
            .dispatch(&Dispatch::linear(&k, 1, 1))
            .unwrap()
            .wait(Some(Duration::from_millis(500)));
        assert!(r.is_err());
        // Not dropped: dropping would disable the runtime, another handshake.
        std::mem::forget((q, k, gpu, kfd));
    })
    .map_or(2, |()| 0);
    // SAFETY: ends the child at once, running no destructor of the parent's objects.
    unsafe { libc::_exit(code) }
}

#[test]
fn a_tracees_runtime_enable_waits_for_its_debugger_and_its_fault_reaches_it() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    // Not ours to debug: this process does not trace the test harness's parent.
    let parent = std::os::unix::process::parent_id() as i32;
    assert_eq!(
        on(&kfd, parent, KFD_IOC_DBG_TRAP_ENABLE, |_| {}),
        Err(Errno::EPERM)
    );
    assert_eq!(
        on(&kfd, i32::MAX - 1, KFD_IOC_DBG_TRAP_ENABLE, |_| {}),
        Err(Errno::ESRCH)
    );

    // SAFETY: the child only runs `tracee`, which ends in `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        tracee();
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    let stopped = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
    assert_eq!(stopped, pid);
    assert!(libc::WIFSTOPPED(status));

    let (mut notify, write_end) = pipe();
    let mut info = kfd_runtime_info::default();
    let subscribed = ec(EC_PROCESS_RUNTIME) | ec(EC_DEVICE_MEMORY_VIOLATION);
    on(&kfd, pid, KFD_IOC_DBG_TRAP_ENABLE, |a| {
        a.__bindgen_anon_1.enable = kfd_ioctl_dbg_trap_enable_args {
            exception_mask: subscribed,
            rinfo_ptr: &mut info as *mut _ as u64,
            rinfo_size: std::mem::size_of::<kfd_runtime_info>() as u32,
            dbg_fd: write_end as u32,
        }
    })
    .unwrap();
    // SAFETY: our copy; the driver holds its own reference.
    unsafe { libc::close(write_end) };
    assert_eq!(
        info.runtime_state, DEBUG_RUNTIME_STATE_DISABLED,
        "the tracee has not opened the device"
    );
    assert_eq!(
        on(&kfd, pid, KFD_IOC_DBG_TRAP_ENABLE, |_| {}),
        Err(Errno::EALREADY)
    );

    // SAFETY: resumes our stopped tracee.
    unsafe { libc::ptrace(libc::PTRACE_CONT, pid, 0, 0) };
    assert!(notified(&mut notify, pid), "no EC_PROCESS_RUNTIME");
    assert_eq!(
        query(&kfd, pid, ec(EC_PROCESS_RUNTIME)).unwrap().0 & ec(EC_PROCESS_RUNTIME),
        ec(EC_PROCESS_RUNTIME)
    );
    // Held until answered.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        query(&kfd, pid, 0),
        Err(Errno::EAGAIN),
        "the tracee went on unanswered"
    );
    on(&kfd, pid, KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT, |a| {
        a.__bindgen_anon_1.send_runtime_event.exception_mask = ec(EC_PROCESS_RUNTIME);
    })
    .unwrap();

    // The tracee's page fault.
    assert!(notified(&mut notify, pid), "no memory violation");
    let (status_bits, gpu_id) = query(&kfd, pid, ec(EC_DEVICE_MEMORY_VIOLATION)).unwrap();
    assert_ne!(status_bits & ec(EC_DEVICE_MEMORY_VIOLATION), 0);
    assert_eq!(gpu_id, kfd.gpu(0).unwrap().id());

    on(&kfd, pid, KFD_IOC_DBG_TRAP_DISABLE, |_| {}).unwrap();
    // Until it exits, the tracee's signals stop it.
    loop {
        // SAFETY: waits for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        if !libc::WIFSTOPPED(status) {
            break;
        }
        // SAFETY: resumes our stopped tracee with its signal.
        unsafe { libc::ptrace(libc::PTRACE_CONT, pid, 0, libc::WSTOPSIG(status)) };
    }
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "tracee status {status:#x}"
    );
}
