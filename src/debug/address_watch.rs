//! Hardware address watches, armed through KFD's debugger interface (KFD 1.13+, on a GPU whose
//! topology offers debugger firmware support, GFX9 for now: kfdrt's trap handler is GFX9's).
//!
//! [`Gpu::watch_address`] makes kfdrt the debugger of its own process (`DBG_TRAP_ENABLE`, as
//! rocgdb would), enables address-watch traps in every wave it launches
//! (`SET_WAVE_LAUNCH_OVERRIDE`) and arms one of the GPU's four watches
//! (`SET_NODE_ADDRESS_WATCH`, one granule: 64 bytes on MI200, 128 on MI300 and RDNA3). A wave
//! whose access the watch catches traps after the access; kfdrt's trap handler reports it to
//! KFD as `EC_QUEUE_WAVE_TRAP` and halts the wave. KFD tells the debugger, that is a thread of
//! kfdrt, which notes the hit ([`AddressWatch::hits`]) and hands the exception on to the queue
//! (`SEND_RUNTIME_EVENT`), which KFD delivers as it delivers the runtime's own exceptions: every
//! wait on the queue ends with [`crate::Error::QueueError`] naming a trap. So on hardware a watch
//! stops the kernel at its first access to the address, like a data breakpoint.
//! (`KFDRT_EMU_WATCH` on kfd-emu reports every access instead and lets the kernel run on.)
//!
//! The trap is enabled for the waves of dispatches that start after the first watch is armed
//! (the override applies at wave launch; a debugger such as rocgdb also patches the waves
//! already running, which kfdrt does not).
//!
//! While a watch is armed, kfdrt is the process's debugger: a debugger that tries to attach
//! meanwhile gets EALREADY, and arming fails with [`crate::Error::Driver`] (`EALREADY`) while
//! one is attached. Dropping the last watch detaches.

use crate::device::{Gpu, KfdShared};
use crate::error::{Error, Result};
use kfd_sys::bindings::*;
use kfd_sys::{DriverExt, Errno};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// `HSA_CAP_TRAP_DEBUG_FIRMWARE_SUPPORTED`.
const FIRMWARE_SUPPORTED: u64 = 0x2000_0000;

const fn ec(code: u32) -> u64 {
    1 << (code - 1)
}

/// Which accesses a watch catches (`KFD_DBG_TRAP_ADDRESS_WATCH_MODE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchAccess {
    /// Loads.
    Reads,
    /// Stores and atomics.
    Writes,
    /// Atomics.
    Atomics,
    /// Every access.
    All,
}

impl WatchAccess {
    fn mode(self) -> u32 {
        match self {
            WatchAccess::Reads => KFD_DBG_TRAP_ADDRESS_WATCH_MODE_READ,
            WatchAccess::Writes => KFD_DBG_TRAP_ADDRESS_WATCH_MODE_NONREAD,
            WatchAccess::Atomics => KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ATOMIC,
            WatchAccess::All => KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ALL,
        }
    }
}

/// A queue whose wave trapped while watches were armed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchHit {
    /// The GPU.
    pub gpu_id: u32,
    /// The queue ([`crate::AqlQueue::id`]).
    pub queue_id: u32,
}

/// kfdrt as its own process's debugger, while watches are armed.
pub(crate) struct SelfDebugger {
    shared: Arc<KfdShared>,
    hits: Arc<Mutex<Vec<WatchHit>>>,
    stop: Arc<AtomicBool>,
    /// Our end for waking the listener; KFD holds its own reference to the same pipe.
    wake: OwnedFd,
    listener: Option<std::thread::JoinHandle<()>>,
}

fn dbg_trap(
    shared: &KfdShared,
    op: u32,
    fill: impl FnOnce(&mut kfd_ioctl_dbg_trap_args),
) -> std::result::Result<kfd_ioctl_dbg_trap_args, Errno> {
    let mut a = kfd_ioctl_dbg_trap_args {
        pid: std::process::id(),
        op,
        ..Default::default()
    };
    fill(&mut a);
    // SAFETY: the operations used here pass no pointer but ENABLE's runtime-information
    // pointer, which its caller points at a live local.
    unsafe { shared.dev.driver().kfd_ioctl_unchecked(&mut a) }.map(|_| a)
}

fn driver_error(errno: Errno) -> Error {
    Error::Driver {
        op: "AMDKFD_IOC_DBG_TRAP",
        errno,
    }
}

impl SelfDebugger {
    /// The live session, or a new one: attached, subscribed to wave traps, address-watch
    /// traps enabled in every wave, and a listener thread.
    fn get_or_attach(shared: &Arc<KfdShared>) -> Result<Arc<SelfDebugger>> {
        // One per device, kept in its slot weakly: the watches keep the session alive.
        shared.slots.get_or_make(0, || Self::attach(shared))
    }

    fn attach(shared: &Arc<KfdShared>) -> Result<Arc<SelfDebugger>> {
        let mut fds = [0; 2];
        // SAFETY: `fds` is a valid out-array of two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(Error::Os {
                what: "the address-watch pipe",
                source: std::io::Error::last_os_error(),
            });
        }
        // SAFETY: both ends were just created and are owned by nobody else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let mut info = kfd_runtime_info::default();
        dbg_trap(shared, KFD_IOC_DBG_TRAP_ENABLE, |a| {
            a.__bindgen_anon_1.enable = kfd_ioctl_dbg_trap_enable_args {
                exception_mask: ec(EC_QUEUE_WAVE_TRAP),
                rinfo_ptr: &mut info as *mut _ as u64,
                rinfo_size: std::mem::size_of::<kfd_runtime_info>() as u32,
                dbg_fd: write.as_raw_fd() as u32,
            }
        })
        .map_err(driver_error)?;
        let watch = KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH as u32;
        let enabled = dbg_trap(shared, KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE, |a| {
            a.__bindgen_anon_1.launch_override = kfd_ioctl_dbg_trap_set_wave_launch_override_args {
                override_mode: KFD_DBG_TRAP_OVERRIDE_OR,
                enable_mask: watch,
                support_request_mask: watch,
                pad: 0,
            }
        });
        if let Err(e) = enabled {
            let _ = dbg_trap(shared, KFD_IOC_DBG_TRAP_DISABLE, |_| {});
            return Err(driver_error(e));
        }
        let hits = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let listener = {
            let (shared, hits, stop) = (shared.clone(), hits.clone(), stop.clone());
            std::thread::Builder::new()
                .name("kfdrt-watch".into())
                .spawn(move || listen(&shared, &read, &hits, &stop))
                .map_err(|source| Error::Os {
                    what: "address-watch listener thread",
                    source,
                })?
        };
        log::debug!("kfdrt: attached as this process's debugger for address watches");
        let s = Arc::new(SelfDebugger {
            shared: shared.clone(),
            hits,
            stop,
            wake: write,
            listener: Some(listener),
        });
        Ok(s)
    }
}

impl Drop for SelfDebugger {
    fn drop(&mut self) {
        // Detaching clears the watches and the override (kfd_dbg_trap_deactivate).
        if let Err(e) = dbg_trap(&self.shared, KFD_IOC_DBG_TRAP_DISABLE, |_| {}) {
            log::warn!("kfdrt: detaching the address-watch debugger: {e}");
        }
        self.stop.store(true, Ordering::Release);
        let byte = 0u8;
        // SAFETY: writes one byte from a live local to our own pipe end.
        unsafe { libc::write(self.wake.as_raw_fd(), (&byte as *const u8).cast(), 1) };
        if let Some(t) = self.listener.take() {
            let _ = t.join();
        }
    }
}

/// The debugger's thread: at each notification, every queue with a wave trap raised is noted
/// and its exceptions handed on to the queue.
fn listen(shared: &KfdShared, read: &OwnedFd, hits: &Mutex<Vec<WatchHit>>, stop: &AtomicBool) {
    let mut buf = [0u8; 64];
    loop {
        // SAFETY: reads into a live local buffer of its length.
        let n = unsafe { libc::read(read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if stop.load(Ordering::Acquire) {
            return;
        }
        if n <= 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        loop {
            let q = dbg_trap(shared, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, |a| {
                a.__bindgen_anon_1.query_debug_event.exception_mask = ec(EC_QUEUE_WAVE_TRAP);
            });
            // SAFETY: the member the operation fills.
            let Ok(q) = q.map(|a| unsafe { a.__bindgen_anon_1.query_debug_event }) else {
                break;
            };
            if q.exception_mask & ec(EC_QUEUE_WAVE_TRAP) == 0 || q.queue_id == KFD_INVALID_QUEUEID {
                continue;
            }
            log::warn!(
                "kfdrt: address watch: a wave of queue {} on GPU {:#x} trapped; the queue stops",
                q.queue_id,
                q.gpu_id
            );
            hits.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(WatchHit {
                    gpu_id: q.gpu_id,
                    queue_id: q.queue_id,
                });
            let sent = dbg_trap(shared, KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT, |a| {
                a.__bindgen_anon_1.send_runtime_event = kfd_ioctl_dbg_trap_send_runtime_event_args {
                    exception_mask: ec(EC_QUEUE_WAVE_TRAP),
                    gpu_id: q.gpu_id,
                    queue_id: q.queue_id,
                }
            });
            if let Err(e) = sent {
                log::warn!("kfdrt: handing the trap on to queue {}: {e}", q.queue_id);
            }
        }
    }
}

/// An armed hardware address watch (see the module docs); dropping it disarms it.
pub struct AddressWatch {
    session: Arc<SelfDebugger>,
    gpu_id: u32,
    id: u32,
    address: u64,
    granule: u64,
}

impl AddressWatch {
    /// The watched address, rounded down to the granule.
    pub fn address(&self) -> u64 {
        self.address
    }

    /// The bytes the watch covers from [`AddressWatch::address`] (the GPU's watch granule).
    pub fn granule(&self) -> u64 {
        self.granule
    }

    /// The queues whose waves trapped since the first watch of this process was armed.
    pub fn hits(&self) -> Vec<WatchHit> {
        self.session
            .hits
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for AddressWatch {
    fn drop(&mut self) {
        let (gpu_id, id) = (self.gpu_id, self.id);
        let r = dbg_trap(
            &self.session.shared,
            KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH,
            |a| {
                a.__bindgen_anon_1.clear_node_address_watch =
                    kfd_ioctl_dbg_trap_clear_node_address_watch_args { gpu_id, id };
            },
        );
        if let Err(e) = r {
            log::warn!("kfdrt: clearing address watch {id} on GPU {gpu_id:#x}: {e}");
        }
    }
}

impl std::fmt::Debug for AddressWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddressWatch")
            .field("gpu_id", &self.gpu_id)
            .field("id", &self.id)
            .field("address", &format_args!("{:#x}", self.address))
            .field("granule", &self.granule)
            .finish()
    }
}

impl Gpu {
    /// Arms a hardware address watch on the granule holding `address`: the first wave whose
    /// access of kind `access` touches it traps, and the waits on its queue end with
    /// [`Error::QueueError`] naming a trap (see [`crate::debug::address_watch`]).
    ///
    /// Errors: [`Error::Unsupported`] without KFD's debugger interface (KFD < 1.13), on a GPU
    /// without debugger firmware support, or not GFX9; [`Error::Driver`] with `EALREADY` while
    /// another debugger is attached, `ENOMEM` when the GPU's four watches are in use.
    pub fn watch_address(&self, address: u64, access: WatchAccess) -> Result<AddressWatch> {
        let shared = &self.kfd().shared;
        let info = self.info();
        if !shared.dev.runtime_enabled {
            return Err(Error::Unsupported(
                "address watches need KFD's debugger interface (1.13 or newer)".into(),
            ));
        }
        if info.properties.get_or_zero("capability") & FIRMWARE_SUPPORTED == 0 {
            return Err(Error::Unsupported(format!(
                "GPU {:#x} reports no debugger firmware support",
                self.id()
            )));
        }
        if crate::queue::wave_exception::handler_code(info.gfx_target_version).is_none() {
            return Err(Error::Unsupported(format!(
                "address watches need kfdrt's trap handler, which GPU {:#x} (gfx target {}) has not",
                self.id(),
                info.gfx_target_version
            )));
        }
        let low_bit = info.properties.get_or_zero("debug_prop") & 0xF;
        let granule = 1u64 << low_bit.max(2);
        let address = address & !(granule - 1);
        let session = SelfDebugger::get_or_attach(shared)?;
        let gpu_id = self.id();
        let a = dbg_trap(shared, KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH, |a| {
            a.__bindgen_anon_1.set_node_address_watch =
                kfd_ioctl_dbg_trap_set_node_address_watch_args {
                    address,
                    mode: access.mode(),
                    // Every programmable bit compared: one granule.
                    mask: u32::MAX,
                    gpu_id,
                    id: 0,
                }
        })
        .map_err(driver_error)?;
        // SAFETY: the member the operation fills.
        let id = unsafe { a.__bindgen_anon_1.set_node_address_watch.id };
        Ok(AddressWatch {
            session,
            gpu_id,
            id,
            address,
            granule,
        })
    }
}
