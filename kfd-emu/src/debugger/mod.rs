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
//! The wave-level operations (the trap-mask override, the launch mode, address watches and the
//! precise-memory flag) are in [`wave_controls`]; dispatches started afterwards follow them
//! ([`DebugState::wave_debug`]). The launch modes halt and debug (single step) are taken but
//! waves still start running.
//!
//! What is not modelled: no wave is ever saved
//! into a context-save area (suspension waits for a packet boundary), so the control stack and
//! wave state a debugger finds are empty; a runtime enabling while
//! a debugger is attached is not held until the debugger acknowledges (`ENABLED_BUSY`); a
//! suspended queue can still be destroyed; the process is always the emulator's own, so the
//! target pid must be this process's (the ptrace check KFD makes for another process does not
//! arise).

mod devices;
mod remote;
mod wave_controls;

pub(crate) use devices::topology_bits;

use crate::Emulator;
use devices::{debug_ips, device_snapshots, gpu_ip, report, snapshot_out};
use kfd_sys::bindings::*;
use kfd_sys::Errno;
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Mutex;
use wave_controls::WaveControls;

/// `KFD_EC_MASK(code)`.
const fn ec_mask(code: u32) -> u64 {
    1 << (code - 1)
}

struct Session {
    exception_mask: u64,
    /// The debugger's notification descriptor (KFD holds a reference to its file).
    notify: OwnedFd,
    /// Raised process exceptions (`kfd_process.exception_status`).
    process_raised: u64,
    /// Raised device exceptions, by gpu id (`kfd_process_device.exception_status`).
    device_raised: BTreeMap<u32, u64>,
    /// Raised queue exceptions, by (gpu id, queue id) (`queue_properties.exception_status`).
    queue_raised: BTreeMap<(u32, u32), u64>,
    /// The trap-mask override, launch mode, address watches and flags.
    controls: WaveControls,
}

/// Where an exception was raised.
#[derive(Clone, Copy)]
enum Source {
    Process,
    Device(u32),
    Queue(u32, u32),
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
    /// A debugger is attached (so dispatches need not lock `state` to learn there is none).
    attached: std::sync::atomic::AtomicBool,
    /// The notification descriptors this process attached to other processes with, by
    /// target pid (KFD's `fget` reference; see [`remote`]).
    remote_notify: Mutex<BTreeMap<u32, OwnedFd>>,
    /// What the driver does with a memory violation a debugger took (evict and signal), kept
    /// per GPU until the debugger hands it back (`vm_fault_exc_data`).
    withheld: Mutex<BTreeMap<u32, Withheld>>,
}

/// The delivery of a memory violation the debugger took.
pub(crate) type Withheld = Box<dyn FnOnce() + Send>;

impl Session {
    /// Raises `mask` as `kfd_dbg_ev_raise` does: it is noted where it was raised whether or
    /// not the debugger subscribed, and a debugger that subscribed is told (one byte written
    /// to its descriptor). Returns whether it was told.
    fn raise(&mut self, mask: u64, source: Source) -> bool {
        match source {
            Source::Process => self.process_raised |= mask,
            Source::Device(gpu) => *self.device_raised.entry(gpu).or_default() |= mask,
            Source::Queue(gpu, queue) => {
                *self.queue_raised.entry((gpu, queue)).or_default() |= mask
            }
        }
        if mask & self.exception_mask == 0 {
            return false;
        }
        let byte = b'.';
        // SAFETY: writes one byte from a live local to a descriptor the session owns.
        let n = unsafe { libc::write(self.notify.as_raw_fd(), (&byte as *const u8).cast(), 1) };
        if n != 1 {
            log::debug!("kfd-emu: could not notify the debugger");
        }
        true
    }

    /// `kfd_dbg_ev_query_debug_event`: the first queue, then device, then the process whose
    /// raised exceptions include one the debugger subscribed to; all its raised exceptions
    /// are returned, and those in `clear` cleared.
    fn query(&mut self, clear: u64) -> Option<(u64, u32, u32)> {
        let enabled = self.exception_mask;
        if let Some((&(gpu, queue), m)) = self
            .queue_raised
            .iter_mut()
            .find(|(_, m)| **m & enabled != 0)
        {
            return Some((report(m, clear), gpu, queue));
        }
        if let Some((&gpu, m)) = self
            .device_raised
            .iter_mut()
            .find(|(_, m)| **m & enabled != 0)
        {
            return Some((report(m, clear), gpu, KFD_INVALID_QUEUEID));
        }
        if self.process_raised & enabled != 0 {
            let status = report(&mut self.process_raised, clear);
            return Some((status, KFD_INVALID_GPUID, KFD_INVALID_QUEUEID));
        }
        None
    }
}

impl DebugState {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn remote_notify_lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, OwnedFd>> {
        self.remote_notify.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Who hears the queue exceptions `mask` a wave of queue `queue_id` on `gpu_id` raised, as
    /// `kfd_set_dbg_ev_from_interrupt` decides: an attached debugger subscribed to them
    /// (`kfd_dbg_ev_raise`, which tells it), else the runtime if it enabled itself
    /// (`DEBUG_RUNTIME_STATE_ENABLED`: `kfd_send_exception_to_runtime`), else nobody.
    pub(crate) fn route_wave_exception(&self, gpu_id: u32, queue_id: u32, mask: u64) -> Heard {
        let mut g = self.lock();
        if let Some(s) = &mut g.session {
            if s.raise(mask, Source::Queue(gpu_id, queue_id)) {
                return Heard::Debugger;
            }
        }
        if g.runtime.runtime_state == DEBUG_RUNTIME_STATE_ENABLED {
            Heard::Runtime
        } else {
            Heard::Nobody
        }
    }

    /// Keeps the delivery of the memory violation a debugger took on `gpu_id` until it hands
    /// it back.
    pub(crate) fn withhold(&self, gpu_id: u32, deliver: Withheld) {
        self.withheld
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(gpu_id, deliver);
    }

    /// A device exception (`EC_DEVICE_*`) raised on `gpu_id`: an attached debugger that
    /// subscribed hears it. Returns whether it did.
    pub(crate) fn raise_device(&self, gpu_id: u32, mask: u64) -> bool {
        match &mut self.lock().session {
            Some(s) => s.raise(mask, Source::Device(gpu_id)),
            None => remote::raise_device(gpu_id, mask),
        }
    }

    /// Whether the runtime enabled itself (`RUNTIME_ENABLE`).
    pub(crate) fn runtime_enabled(&self) -> bool {
        self.lock().runtime.runtime_state == DEBUG_RUNTIME_STATE_ENABLED
    }

    /// What an attached debugger made the waves of `gpu_id`'s dispatches trap on: nothing
    /// without a debugger, or while the runtime is not enabled (KFD activates the debug trap
    /// only then, `kfd_dbg_trap_activate`).
    pub(crate) fn wave_debug(&self, gpu_id: u32) -> kfd_emu_isa::WaveDebug {
        if !self.attached.load(std::sync::atomic::Ordering::Acquire) {
            return kfd_emu_isa::WaveDebug::default();
        }
        let g = self.lock();
        match &g.session {
            Some(s) if g.runtime.runtime_state == DEBUG_RUNTIME_STATE_ENABLED => {
                kfd_emu_isa::WaveDebug {
                    trap_mask: s.controls.trap_mask,
                    watches: s.controls.watches.get(&gpu_id).copied().unwrap_or_default(),
                }
            }
            _ => kfd_emu_isa::WaveDebug::default(),
        }
    }

    /// A queue was created: an attached debugger hears of it (`EC_QUEUE_NEW`).
    pub(crate) fn queue_created(&self, gpu_id: u32, queue_id: u32) {
        if let Some(s) = &mut self.lock().session {
            s.raise(ec_mask(EC_QUEUE_NEW), Source::Queue(gpu_id, queue_id));
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
        s.raise(ec_mask(EC_PROCESS_RUNTIME), Source::Process);
    }
    let info = g.runtime;
    drop(g);
    // A debugger in another process hears of it, and holds the call until it answers.
    remote::runtime_changed(&info);
    Ok(())
}

/// `kfd_dbg_send_exception_to_runtime`: a memory violation the debugger took is handed back
/// and delivered now: queues evicted, memory events signalled (ENODEV for a GPU the process
/// does not have); queue exceptions go to the queue's runtime
/// as the driver's own delivery would (an unknown queue is ignored, as
/// `pqm_get_user_queue` finding none is). `EC_PROCESS_RUNTIME` answers a held runtime enable,
/// which only a debugger in another process can hold here ([`remote`]).
fn send_exception_to_runtime(
    emu: &Emulator,
    e: &kfd_ioctl_dbg_trap_send_runtime_event_args,
) -> Result<i32, Errno> {
    let violation = ec_mask(EC_DEVICE_MEMORY_VIOLATION);
    let mut mask = e.exception_mask & !ec_mask(EC_PROCESS_RUNTIME);
    if mask & violation != 0 {
        gpu_ip(emu, e.gpu_id)?;
        let deliver = emu
            .debug
            .withheld
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&e.gpu_id);
        if let Some(deliver) = deliver {
            deliver();
        }
        mask &= !violation;
    }
    if mask != 0 {
        if let Some(ctl) = emu.queues.ctl(e.queue_id) {
            ctl.send_exception_to_runtime(mask);
        }
    }
    Ok(0)
}

/// Copies the runtime information (up to `*size` bytes of it) to `at` and sets `*size` to
/// its full size, as `kfd_dbg_trap_enable` does.
///
/// # Safety
/// `at` must be valid for `*size` bytes.
unsafe fn copy_runtime_info(info: &kfd_runtime_info, at: u64, size: &mut u32) -> Result<(), Errno> {
    let n = (*size as usize).min(std::mem::size_of::<kfd_runtime_info>());
    if n > 0 {
        if at == 0 {
            return Err(Errno::EFAULT);
        }
        // SAFETY: the caller's contract covers `n <= *size` bytes at `at`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (info as *const kfd_runtime_info).cast::<u8>(),
                at as *mut u8,
                n,
            )
        };
    }
    *size = std::mem::size_of::<kfd_runtime_info>() as u32;
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
        // SAFETY: forwarded from the caller's contract.
        return unsafe { remote::dbg_trap(emu, a) };
    }
    let mut g = emu.debug.lock();
    match a.op {
        KFD_IOC_DBG_TRAP_ENABLE => {
            // SAFETY: the members are plain integers; the operation names the one the caller filled.
            let e = unsafe { &mut a.__bindgen_anon_1.enable };
            if g.session.is_some() {
                // kfd_dbg_trap_enable
                return Err(Errno::EALREADY);
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
            // SAFETY: the caller's contract covers `rinfo_size` bytes at `rinfo_ptr`.
            unsafe { copy_runtime_info(&info, e.rinfo_ptr, &mut e.rinfo_size)? };
            g.session = Some(Session {
                exception_mask: e.exception_mask,
                notify,
                process_raised: 0,
                device_raised: BTreeMap::new(),
                queue_raised: BTreeMap::new(),
                controls: WaveControls::default(),
            });
            emu.debug
                .attached
                .store(true, std::sync::atomic::Ordering::Release);
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
            emu.debug
                .attached
                .store(false, std::sync::atomic::Ordering::Release);
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
                KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT => {
                    // SAFETY: the members are plain integers; the operation names the one the caller filled.
                    let e = unsafe { a.__bindgen_anon_1.send_runtime_event };
                    drop(g);
                    send_exception_to_runtime(emu, &e)
                }
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
                        let new = s
                            .queue_raised
                            .iter()
                            .any(|(&(_, q), m)| q == *id && m & ec_mask(EC_QUEUE_NEW) != 0);
                        if !crate::queue::exists(emu, *id) || (suspend && new) {
                            // A queue the debugger has not yet seen created cannot be
                            // suspended (`suspend_queues`: EC_QUEUE_NEW still raised).
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
                    let (status, gpu, queue) = s.query(q.exception_mask).ok_or(Errno::EAGAIN)?;
                    q.exception_mask = status;
                    q.gpu_id = gpu;
                    q.queue_id = queue;
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
                    let mut entries = crate::queue::snapshots(emu);
                    // set_queue_snapshot_entry: each queue's raised exceptions, then those in
                    // the mask cleared.
                    for e in &mut entries {
                        if let Some(m) = s.queue_raised.get_mut(&(e.gpu_id, e.queue_id)) {
                            e.exception_status = report(m, q.exception_mask);
                        }
                    }
                    // SAFETY: forwarded from the caller's contract on the snapshot buffer.
                    unsafe {
                        snapshot_out(
                            &entries,
                            q.snapshot_buf_ptr,
                            &mut q.num_queues,
                            &mut q.entry_size,
                        )
                    }
                }
                KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT => {
                    // SAFETY: the members are plain integers; the operation names the one the caller filled.
                    let d = unsafe { &mut a.__bindgen_anon_1.device_snapshot };
                    let mut entries = device_snapshots(emu);
                    for e in &mut entries {
                        if let Some(m) = s.device_raised.get_mut(&e.gpu_id) {
                            e.exception_status = report(m, d.exception_mask);
                        }
                    }
                    // SAFETY: forwarded from the caller's contract on the snapshot buffer.
                    unsafe {
                        snapshot_out(
                            &entries,
                            d.snapshot_buf_ptr,
                            &mut d.num_devices,
                            &mut d.entry_size,
                        )
                    }
                }
                KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE..=KFD_IOC_DBG_TRAP_SET_FLAGS
                    if !runtime_enabled =>
                {
                    // kfd_ioctl_set_debug_trap: the hardware operations need the runtime.
                    Err(Errno::EPERM)
                }
                KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE => {
                    // SAFETY: the members are plain integers; the operation names the one the caller filled.
                    let o = unsafe { &mut a.__bindgen_anon_1.launch_override };
                    let ips = debug_ips(emu);
                    let mut supported = 0;
                    let r = wave_controls::set_override(
                        &mut s.controls,
                        &ips,
                        o.override_mode,
                        o.enable_mask,
                        o.support_request_mask,
                        &mut supported,
                    );
                    o.support_request_mask = supported;
                    o.enable_mask = r?;
                    Ok(0)
                }
                KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE => {
                    // SAFETY: the members are plain integers; the operation names the one the caller filled.
                    let m = unsafe { a.__bindgen_anon_1.launch_mode.launch_mode };
                    wave_controls::set_launch_mode(&mut s.controls, m).map(|()| 0)
                }
                KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH => {
                    // SAFETY: the members are plain integers; the operation names the one the caller filled.
                    let w = unsafe { &mut a.__bindgen_anon_1.set_node_address_watch };
                    let ip = gpu_ip(emu, w.gpu_id)?;
                    let id = wave_controls::set_watch(
                        &mut s.controls,
                        w.gpu_id,
                        ip,
                        w.address,
                        w.mode,
                        w.mask,
                    );
                    // kfd_dbg_get_dev_watch_id leaves -1 when none is free.
                    w.id = *id.as_ref().unwrap_or(&u32::MAX);
                    id.map(|_| 0)
                }
                KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH => {
                    // SAFETY: the members are plain integers; the operation names the one the caller filled.
                    let w = unsafe { &a.__bindgen_anon_1.clear_node_address_watch };
                    gpu_ip(emu, w.gpu_id)?;
                    wave_controls::clear_watch(&mut s.controls, w.gpu_id, w.id).map(|()| 0)
                }
                KFD_IOC_DBG_TRAP_SET_FLAGS => {
                    // SAFETY: the members are plain integers; the operation names the one the caller filled.
                    let f = unsafe { &mut a.__bindgen_anon_1.set_flags };
                    let (prev, r) =
                        wave_controls::set_flags(&mut s.controls, &debug_ips(emu), f.flags);
                    f.flags = prev;
                    r.map(|()| 0)
                }
                _ => Err(Errno::EINVAL),
            }
        }
    }
}
