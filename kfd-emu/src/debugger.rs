//! The debugger's ABI (KFD 1.13): `AMDKFD_IOC_RUNTIME_ENABLE` from the runtime and
//! `AMDKFD_IOC_DBG_TRAP` from a debugger, with amdkfd's rules and errnos (`kfd_chardev.c`'s
//! `runtime_enable`/`runtime_disable` and `kfd_ioctl_set_debug_trap`, the operations documented
//! in `kfd_ioctl.h`).
//!
//! What is modelled: the runtime state and its `r_debug` address; attaching (`ENABLE`, which
//! copies the runtime information out and takes a reference on the debugger's notification
//! descriptor) and detaching; the exception mask; exceptions raised to the debugger (a byte
//! written to its descriptor, then `QUERY_DEBUG_EVENT`): `EC_PROCESS_RUNTIME` when the runtime
//! enables or disables, `EC_QUEUE_NEW` for each queue created while attached; queue and device
//! snapshots; suspending and resuming queues at packet boundaries, with the wave-state
//! headers copied into the suspended queues' context-save areas (`wave_state`, also behind
//! `GET_QUEUE_WAVE_STATE`); queue exceptions a wave's trap handler reports go to an attached
//! debugger that subscribed to them before the runtime (`route_wave_exception`).
//!
//! What is not: the wave-level hardware operations (launch override and mode, address
//! watches, flags) answer ENODEV, as for a GPU without debug support; no wave is ever saved
//! into a context-save area (suspension waits for a packet boundary), so the control stack and
//! wave state a debugger finds are empty; a runtime enabling while
//! a debugger is attached is not held until the debugger acknowledges (`ENABLED_BUSY`); a
//! suspended queue can still be destroyed; the process is always the emulator's own, so the
//! target pid must be this process's (the ptrace check KFD makes for another process does not
//! arise).

use crate::Emulator;
use kfd_sys::bindings::*;
use kfd_sys::Errno;
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Mutex;

/// `KFD_EC_MASK(code)`.
const fn ec_mask(code: u32) -> u64 {
    1 << (code - 1)
}

struct Session {
    exception_mask: u64,
    /// The debugger's notification descriptor (KFD holds a reference to its file).
    notify: OwnedFd,
    /// Raised process exceptions.
    process_raised: u64,
    /// Raised queue exceptions, by (gpu id, queue id).
    queue_raised: BTreeMap<(u32, u32), u64>,
}

#[derive(Default)]
struct State {
    runtime: kfd_runtime_info,
    session: Option<Session>,
}

/// Who a wave's exception goes to (see [`DebugState::route_wave_exception`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Heard {
    /// An attached debugger took it.
    Debugger,
    /// The runtime hears it through the queue's context-save area header.
    Runtime,
    /// Nobody: the exception is lost.
    Nobody,
}

/// The process's debug state.
#[derive(Default)]
pub(crate) struct DebugState {
    state: Mutex<State>,
}

impl Session {
    /// Raises `mask` (if the debugger asked for it) and tells the debugger, as
    /// `kfd_dbg_ev_raise` does: one byte written to its descriptor.
    fn raise(&mut self, mask: u64, queue: Option<(u32, u32)>) {
        let mask = mask & self.exception_mask;
        if mask == 0 {
            return;
        }
        match queue {
            Some(q) => *self.queue_raised.entry(q).or_default() |= mask,
            None => self.process_raised |= mask,
        }
        let byte = b'.';
        // SAFETY: writes one byte from a live local to a descriptor the session owns.
        let n = unsafe { libc::write(self.notify.as_raw_fd(), (&byte as *const u8).cast(), 1) };
        if n != 1 {
            log::debug!("kfd-emu: could not notify the debugger");
        }
    }
}

impl DebugState {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Who hears the queue exceptions `mask` a wave of queue `queue_id` on `gpu_id` raised, as
    /// `kfd_set_dbg_ev_from_interrupt` decides: an attached debugger subscribed to them
    /// (`kfd_dbg_ev_raise`, which tells it), else the runtime if it enabled itself
    /// (`DEBUG_RUNTIME_STATE_ENABLED`: `kfd_send_exception_to_runtime`), else nobody.
    pub(crate) fn route_wave_exception(&self, gpu_id: u32, queue_id: u32, mask: u64) -> Heard {
        let mut g = self.lock();
        if let Some(s) = &mut g.session {
            if s.exception_mask & mask != 0 {
                s.raise(mask, Some((gpu_id, queue_id)));
                return Heard::Debugger;
            }
        }
        if g.runtime.runtime_state == DEBUG_RUNTIME_STATE_ENABLED {
            Heard::Runtime
        } else {
            Heard::Nobody
        }
    }

    /// Whether the runtime enabled itself (`RUNTIME_ENABLE`).
    pub(crate) fn runtime_enabled(&self) -> bool {
        self.lock().runtime.runtime_state == DEBUG_RUNTIME_STATE_ENABLED
    }

    /// A queue was created: an attached debugger hears of it (`EC_QUEUE_NEW`).
    pub(crate) fn queue_created(&self, gpu_id: u32, queue_id: u32) {
        if let Some(s) = &mut self.lock().session {
            s.raise(ec_mask(EC_QUEUE_NEW), Some((gpu_id, queue_id)));
        }
    }
}

/// `AMDKFD_IOC_RUNTIME_ENABLE`.
pub(crate) fn runtime_enable(
    emu: &Emulator,
    a: &mut kfd_ioctl_runtime_enable_args,
) -> Result<(), Errno> {
    let mut g = emu.debug.lock();
    if a.mode_mask & KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK != 0 {
        if g.runtime.runtime_state != DEBUG_RUNTIME_STATE_DISABLED {
            return Err(Errno::EBUSY);
        }
        if emu.queues.live() > 0 {
            return Err(Errno::EEXIST);
        }
        g.runtime = kfd_runtime_info {
            r_debug: a.r_debug,
            runtime_state: DEBUG_RUNTIME_STATE_ENABLED,
            ttmp_setup: u32::from(a.mode_mask & KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK != 0),
        };
    } else {
        let was_enabled = g.runtime.runtime_state == DEBUG_RUNTIME_STATE_ENABLED;
        g.runtime.runtime_state = DEBUG_RUNTIME_STATE_DISABLED;
        g.runtime.ttmp_setup = 0;
        if !was_enabled {
            // runtime_disable: nothing changed, nothing to tell a debugger.
            return Ok(());
        }
    }
    if let Some(s) = &mut g.session {
        s.raise(ec_mask(EC_PROCESS_RUNTIME), None);
    }
    Ok(())
}

/// `AMDKFD_IOC_DBG_TRAP`.
///
/// # Safety
/// The pointers inside `a` (runtime-info, queue-array and snapshot buffers) must be valid for
/// the sizes the operation gives them (`copy_to_user`/`copy_from_user` in KFD).
pub(crate) unsafe fn dbg_trap(
    emu: &Emulator,
    a: &mut kfd_ioctl_dbg_trap_args,
) -> Result<i32, Errno> {
    if a.pid != std::process::id() {
        return Err(Errno::ESRCH);
    }
    let mut g = emu.debug.lock();
    match a.op {
        KFD_IOC_DBG_TRAP_ENABLE => {
            // SAFETY: the members are plain integers; the operation names the one the caller filled.
            let e = unsafe { &mut a.__bindgen_anon_1.enable };
            if g.session.is_some() {
                return Err(Errno::EINVAL);
            }
            // fget(): a reference on the debugger's file, released on disable.
            // SAFETY: F_DUPFD_CLOEXEC on any number is safe; failure means it is not open.
            let fd = unsafe { libc::fcntl(e.dbg_fd as i32, libc::F_DUPFD_CLOEXEC, 0) };
            if fd < 0 {
                return Err(Errno::EBADF);
            }
            // SAFETY: `fd` was just created and is owned by nobody else.
            let notify = unsafe { OwnedFd::from_raw_fd(fd) };
            let info = g.runtime;
            let n = (e.rinfo_size as usize).min(std::mem::size_of::<kfd_runtime_info>());
            if n > 0 {
                if e.rinfo_ptr == 0 {
                    return Err(Errno::EFAULT);
                }
                // SAFETY: the caller's contract covers `rinfo_size` bytes at `rinfo_ptr`.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        (&info as *const kfd_runtime_info).cast::<u8>(),
                        e.rinfo_ptr as *mut u8,
                        n,
                    )
                };
            }
            e.rinfo_size = std::mem::size_of::<kfd_runtime_info>() as u32;
            g.session = Some(Session {
                exception_mask: e.exception_mask,
                notify,
                process_raised: 0,
                queue_raised: BTreeMap::new(),
            });
            log::debug!(
                "kfd-emu: debugger attached (exception mask {:#x})",
                e.exception_mask
            );
            Ok(0)
        }
        KFD_IOC_DBG_TRAP_DISABLE => {
            if g.session.take().is_none() {
                return Err(Errno::EINVAL);
            }
            drop(g);
            // Queues the debugger left suspended run again.
            emu.faults.resume_debug_suspended();
            log::debug!("kfd-emu: debugger detached");
            Ok(0)
        }
        op => {
            let runtime_enabled = g.runtime.runtime_state == DEBUG_RUNTIME_STATE_ENABLED;
            let s = g.session.as_mut().ok_or(Errno::EINVAL)?;
            match op {
                KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT => Ok(0),
                KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED => {
                    s.exception_mask =
                        // SAFETY: the members are plain integers; the operation names the one the caller filled.
                        unsafe { a.__bindgen_anon_1.set_exceptions_enabled.exception_mask };
                    Ok(0)
                }
                KFD_IOC_DBG_TRAP_SUSPEND_QUEUES | KFD_IOC_DBG_TRAP_RESUME_QUEUES => {
                    if !runtime_enabled {
                        return Err(Errno::EACCES);
                    }
                    let suspend = op == KFD_IOC_DBG_TRAP_SUSPEND_QUEUES;
                    let (ptr, n) = if suspend {
                        // SAFETY: the members are plain integers; the operation names the one the caller filled.
                        let q = unsafe { &a.__bindgen_anon_1.suspend_queues };
                        (q.queue_array_ptr, q.num_queues)
                    } else {
                        // SAFETY: the members are plain integers; the operation names the one the caller filled.
                        let q = unsafe { &a.__bindgen_anon_1.resume_queues };
                        (q.queue_array_ptr, q.num_queues)
                    };
                    if n > 0 && ptr == 0 {
                        return Err(Errno::EFAULT);
                    }
                    // SAFETY: the caller's contract covers `num_queues` ids at the pointer.
                    let ids =
                        unsafe { std::slice::from_raw_parts_mut(ptr as *mut u32, n as usize) };
                    let mut done = 0;
                    for id in ids {
                        if !crate::queue::exists(emu, *id) {
                            *id |= KFD_DBG_QUEUE_INVALID_MASK;
                        } else if emu.faults.debug_suspend(*id, suspend) {
                            done += 1;
                        } else {
                            // Already in the state asked for.
                            *id |= KFD_DBG_QUEUE_ERROR_MASK;
                        }
                    }
                    if suspend && done > 0 {
                        // The saved state is copied out for the debugger to read.
                        crate::wave_state::copy_context(emu);
                    }
                    Ok(done)
                }
                KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT => {
                    // SAFETY: the members are plain integers; the operation names the one the caller filled.
                    let q = unsafe { &mut a.__bindgen_anon_1.query_debug_event };
                    let clear = q.exception_mask;
                    if s.process_raised != 0 {
                        q.exception_mask = s.process_raised;
                        q.gpu_id = KFD_INVALID_GPUID;
                        q.queue_id = KFD_INVALID_QUEUEID;
                        s.process_raised &= !clear;
                        return Ok(0);
                    }
                    let Some((&(gpu, queue), &raised)) =
                        s.queue_raised.iter().find(|(_, m)| **m != 0)
                    else {
                        return Err(Errno::EAGAIN);
                    };
                    q.exception_mask = raised;
                    q.gpu_id = gpu;
                    q.queue_id = queue;
                    if let Some(m) = s.queue_raised.get_mut(&(gpu, queue)) {
                        *m &= !clear;
                    }
                    Ok(0)
                }
                KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO => {
                    // SAFETY: the members are plain integers; the operation names the one the caller filled.
                    let q = unsafe { &mut a.__bindgen_anon_1.query_exception_info };
                    if q.exception_code != EC_PROCESS_RUNTIME {
                        return Err(Errno::EINVAL);
                    }
                    let info = g.runtime;
                    let n = (q.info_size as usize).min(std::mem::size_of::<kfd_runtime_info>());
                    if n > 0 {
                        if q.info_ptr == 0 {
                            return Err(Errno::EFAULT);
                        }
                        // SAFETY: the caller's contract covers `info_size` bytes at `info_ptr`.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                (&info as *const kfd_runtime_info).cast::<u8>(),
                                q.info_ptr as *mut u8,
                                n,
                            )
                        };
                    }
                    q.info_size = std::mem::size_of::<kfd_runtime_info>() as u32;
                    Ok(0)
                }
                KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT => {
                    // SAFETY: the members are plain integers; the operation names the one the caller filled.
                    let q = unsafe { &mut a.__bindgen_anon_1.queue_snapshot };
                    let entries = crate::queue::snapshots(emu);
                    // SAFETY: forwarded from the caller's contract on the snapshot buffer.
                    unsafe {
                        copy_entries(&entries, q.snapshot_buf_ptr, q.num_queues, q.entry_size)?
                    };
                    q.num_queues = entries.len() as u32;
                    q.entry_size = std::mem::size_of::<kfd_queue_snapshot_entry>() as u32;
                    Ok(0)
                }
                KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT => {
                    // SAFETY: the members are plain integers; the operation names the one the caller filled.
                    let d = unsafe { &mut a.__bindgen_anon_1.device_snapshot };
                    let entries = device_snapshots(emu);
                    // SAFETY: forwarded from the caller's contract on the snapshot buffer.
                    unsafe {
                        copy_entries(&entries, d.snapshot_buf_ptr, d.num_devices, d.entry_size)?
                    };
                    d.num_devices = entries.len() as u32;
                    d.entry_size = std::mem::size_of::<kfd_dbg_device_info_entry>() as u32;
                    Ok(0)
                }
                KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE
                | KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE
                | KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH
                | KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH
                | KFD_IOC_DBG_TRAP_SET_FLAGS => {
                    log::warn!("kfd-emu: debug trap operation {op} is not modelled");
                    Err(Errno::ENODEV)
                }
                _ => Err(Errno::EINVAL),
            }
        }
    }
}

/// Copies up to `room` entries of `entry_size` bytes each (the caller's stride; bytes past
/// the driver's entry are left alone) to `buf`.
///
/// # Safety
/// `buf` must be valid for `room * entry_size` bytes.
unsafe fn copy_entries<T>(
    entries: &[T],
    buf: u64,
    room: u32,
    entry_size: u32,
) -> Result<(), Errno> {
    if room == 0 {
        return Ok(());
    }
    if buf == 0 {
        return Err(Errno::EFAULT);
    }
    let n = std::mem::size_of::<T>().min(entry_size as usize);
    for (i, e) in entries.iter().take(room as usize).enumerate() {
        // SAFETY: entry `i` of the caller's buffer, `n <= entry_size` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (e as *const T).cast::<u8>(),
                (buf as *mut u8).add(i * entry_size as usize),
                n,
            )
        };
    }
    Ok(())
}

fn device_snapshots(emu: &Emulator) -> Vec<kfd_dbg_device_info_entry> {
    use crate::device::{LDS_APERTURE_BASE, SCRATCH_APERTURE_BASE};
    emu.gpus
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let node = i + 1;
            let prop = |key: &str| emu.topology.node_property(node, key).unwrap_or(0);
            let p = &g.params;
            kfd_dbg_device_info_entry {
                exception_status: 0,
                lds_base: LDS_APERTURE_BASE,
                lds_limit: LDS_APERTURE_BASE | 0xFFFF_FFFF,
                scratch_base: SCRATCH_APERTURE_BASE,
                scratch_limit: SCRATCH_APERTURE_BASE | 0xFFFF_FFFF,
                gpuvm_base: 0x1_0000,
                gpuvm_limit: 0x0000_7FFF_FFFF_FFFF,
                gpu_id: g.gpu_id,
                location_id: prop("location_id") as u32,
                vendor_id: 0x1002,
                device_id: p.device_id,
                revision_id: p.pci_revision,
                subsystem_vendor_id: 0x1002,
                subsystem_device_id: p.device_id,
                fw_version: p.fw_version,
                gfx_target_version: p.gfx_target_version,
                simd_count: p.compute_units * p.simd_per_cu,
                max_waves_per_simd: p.max_waves_per_simd,
                array_count: p.array_count,
                simd_arrays_per_engine: p.simd_arrays_per_engine,
                num_xcc: p.num_xcc,
                capability: prop("capability") as u32,
                debug_prop: prop("debug_prop") as u32,
            }
        })
        .collect()
}
