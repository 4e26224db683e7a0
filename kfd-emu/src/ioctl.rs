//! ioctl dispatch, as `kfd_ioctl` does it: the request is looked up by its command number in
//! the table of the KFD version the emulator reports (ENOTTY for a number outside it, as
//! current kernels answer), whatever argument size the caller's header gave. An argument
//! shorter than the driver's struct is zero-extended and only the caller's bytes are copied
//! back, so programs built against an older header (ROCm 5.2.3's, KFD 1.11) and newer ones both
//! work. Requests the emulator does not model get EINVAL and a log line.

use crate::memory;
use crate::queue;
use crate::Emulator;
use kfd_sys::bindings::*;
use kfd_sys::ioctl::{
    dispatch_kfd_request, kfd_request_by_nr, kfd_request_name, Direction, KfdIoctl,
    KfdRequestHandler,
};
use kfd_sys::{Errno, IoctlRequest, KfdVersion, Node};
use std::ffi::c_void;
use std::sync::atomic::Ordering;

/// The oldest KFD ABI version the emulator can report ([`crate::EmuConfig::kfd_version`]).
pub const OLDEST_VERSION: KfdVersion = KfdVersion::new(1, 11);

/// # Safety
/// As [`kfd_sys::Driver::ioctl`].
pub(crate) unsafe fn dispatch(
    emu: &Emulator,
    node: Node,
    request: IoctlRequest,
    a: *mut c_void,
) -> Result<i32, Errno> {
    if let Node::Render(minor) = node {
        let gpu = emu
            .gpus
            .iter()
            .find(|g| g.render_minor == minor)
            .ok_or(Errno::ENODEV)?;
        // SAFETY: forwarded from the caller's contract on `a`.
        if let Some(r) = unsafe { crate::drm_gem::dispatch(emu, minor, gpu.gpu_id, request, a) } {
            return r.map(|()| 0);
        }
        // SAFETY: forwarded from the caller's contract on `a`.
        if let Some(r) = unsafe { crate::drm_cs::dispatch(emu, minor, gpu.index, request, a) } {
            return r.map(|()| 0);
        }
        // SAFETY: forwarded from the caller's contract on `a`.
        return unsafe {
            crate::drm::dispatch(gpu, emu.config.system_memory_bytes / 2, request, a)
        }
        .map(|()| 0);
    }
    let version = emu.config.kfd_version;
    let known = if request.ty() == b'K' {
        kfd_request_by_nr(request.nr())
    } else {
        None
    };
    let canonical = match known {
        Some((canonical, since)) if since <= version => canonical,
        Some((_, since)) => {
            log::warn!(
                "kfd-emu: {} needs KFD {since}; the emulator reports {version}",
                kfd_request_name(request.nr()).unwrap_or("request"),
            );
            return Err(Errno::ENOTTY);
        }
        None => {
            log::warn!(
                "kfd-emu: request {:#x} is not a KFD {version} request",
                request.raw()
            );
            return Err(Errno::ENOTTY);
        }
    };
    if request.size() == canonical.size() {
        // SAFETY: forwarded from the caller's contract on `a`.
        return unsafe { handle(emu, canonical, a, request.size()) };
    }
    // The caller's struct is another size than the driver's: copy it into one of the driver's
    // size, zero-extended, and back as far as the caller's reaches.
    if a.is_null() {
        return Err(Errno::EFAULT);
    }
    let user = request.size();
    let mut kdata = vec![0u64; user.max(canonical.size()).div_ceil(8)];
    let dir = canonical.dir();
    if matches!(dir, Direction::Write | Direction::ReadWrite) {
        // SAFETY: the caller's contract makes `a` valid for the request's size, `user` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(a as *const u8, kdata.as_mut_ptr() as *mut u8, user)
        };
    }
    // SAFETY: `kdata` is an aligned, zeroed buffer at least the driver's struct size.
    let result = unsafe { handle(emu, canonical, kdata.as_mut_ptr() as *mut c_void, user) };
    if matches!(dir, Direction::Read | Direction::ReadWrite) {
        // SAFETY: as above, `a` is valid for `user` bytes.
        unsafe { std::ptr::copy_nonoverlapping(kdata.as_ptr() as *const u8, a as *mut u8, user) };
    }
    result
}

/// The emulator as KFD's request handlers: one method per request of kfd-sys's table, each
/// given its own argument struct ([`dispatch_kfd_request`] picks it), at the driver's size.
struct Handlers<'a> {
    emu: &'a Emulator,
    /// The bytes of the caller's argument (more than the struct for `SVM`'s attributes).
    user_size: usize,
}

/// A handler's answer: `Ok(())` is the ioctl's 0.
fn done(r: Result<(), Errno>) -> Result<i32, Errno> {
    r.map(|()| 0)
}

/// The answer to a request the emulator does not model (the deprecated debugger requests,
/// CRIU, the old apertures query): EINVAL and a log line.
fn not_modelled<T: KfdIoctl>() -> Result<i32, Errno> {
    log::warn!("kfd-emu: {} is not modelled", T::NAME);
    Err(Errno::EINVAL)
}

/// Runs `request` (a request of the emulator's table, at the driver's size) on `a`, which holds
/// `user_size` bytes of the caller's argument (more than the struct for `SVM`'s attributes).
///
/// # Safety
/// `a` must be valid for `request`'s argument struct and `user_size` bytes, and what it points
/// to as the request describes (the [`kfd_sys::Driver::ioctl`] contract).
unsafe fn handle(
    emu: &Emulator,
    request: IoctlRequest,
    a: *mut c_void,
    user_size: usize,
) -> Result<i32, Errno> {
    if a.is_null() {
        return Err(Errno::EFAULT);
    }
    let mut handlers = Handlers { emu, user_size };
    // SAFETY: `a` is non-null and, per the caller's contract, valid for `request`'s struct.
    unsafe { dispatch_kfd_request(&mut handlers, request, a) }.unwrap_or_else(|| {
        log::warn!(
            "kfd-emu: {} is not modelled",
            kfd_request_name(request.nr()).unwrap_or("request")
        );
        Err(Errno::EINVAL)
    })
}

impl KfdRequestHandler for Handlers<'_> {
    type Output = Result<i32, Errno>;

    fn get_version(&mut self, v: &mut kfd_ioctl_get_version_args) -> Self::Output {
        let emu = self.emu;
        done({
            v.major_version = emu.config.kfd_version.major;
            v.minor_version = emu.config.kfd_version.minor;
            Ok(())
        })
    }

    fn get_process_apertures_new(
        &mut self,
        v: &mut kfd_ioctl_get_process_apertures_new_args,
    ) -> Self::Output {
        let emu = self.emu;
        done(apertures(emu, v))
    }

    fn acquire_vm(&mut self, v: &mut kfd_ioctl_acquire_vm_args) -> Self::Output {
        let emu = self.emu;
        done({
            let g = emu.gpu(v.gpu_id).ok_or(Errno::EINVAL)?;
            g.acquire_vm(v.drm_fd as i32)
        })
    }

    fn set_memory_policy(&mut self, v: &mut kfd_ioctl_set_memory_policy_args) -> Self::Output {
        let emu = self.emu;
        done({
            emu.gpu(v.gpu_id).ok_or(Errno::EINVAL)?;
            if v.default_policy > 1 || v.alternate_policy > 1 {
                return Err(Errno::EINVAL);
            }
            Ok(())
        })
    }

    fn svm(&mut self, v: &mut kfd_ioctl_svm_args) -> Self::Output {
        let emu = self.emu;
        done({
            // The attributes follow the struct, inside the request's size (libhsakmt adds
            // them to it); more than the size covers would be read from past the argument.
            let attr = std::mem::size_of::<kfd_ioctl_svm_attribute>();
            let covered = self
                .user_size
                .saturating_sub(std::mem::size_of::<kfd_ioctl_svm_args>())
                / attr;
            if v.nattr as usize > covered {
                return Err(Errno::EINVAL);
            }
            // SAFETY: `nattr` attributes follow the struct, within the argument (checked).
            unsafe { crate::svm::ioctl(emu, v) }
        })
    }

    fn set_xnack_mode(&mut self, v: &mut kfd_ioctl_set_xnack_mode_args) -> Self::Output {
        let emu = self.emu;
        done({
            // kfd_ioctl_set_xnack_mode: a query (negative) reports the mode; a change is refused
            // with EBUSY while the process has any user queue ("Process has user queues
            // running"), before the mode is even compared; turning XNACK on is EPERM unless
            // every GPU allows it per process (kfd_process_xnack_mode).
            let on = emu.svm.xnack();
            if v.xnack_enabled < 0 {
                v.xnack_enabled = i32::from(on);
                Ok(())
            } else if emu.queues.live() > 0 {
                Err(Errno::EBUSY)
            } else if (v.xnack_enabled != 0) == on {
                Ok(())
            } else if v.xnack_enabled != 0 && !emu.xnack_supported() {
                Err(Errno::EPERM)
            } else {
                emu.set_xnack(v.xnack_enabled != 0);
                Ok(())
            }
        })
    }

    fn get_clock_counters(&mut self, v: &mut kfd_ioctl_get_clock_counters_args) -> Self::Output {
        let emu = self.emu;
        done({
            // KFD answers for any id: a node without a GPU (the CPU) gets a zero GPU clock.
            v.gpu_clock_counter = if emu.gpu(v.gpu_id).is_some() {
                emu.gpu_clock()
            } else {
                0
            };
            v.cpu_clock_counter = clock_ns(libc::CLOCK_MONOTONIC_RAW);
            v.system_clock_counter = clock_ns(libc::CLOCK_BOOTTIME);
            v.system_clock_freq = 1_000_000_000;
            Ok(())
        })
    }

    fn set_scratch_backing_va(
        &mut self,
        v: &mut kfd_ioctl_set_scratch_backing_va_args,
    ) -> Self::Output {
        let emu = self.emu;
        done({
            let g = emu.gpu(v.gpu_id).ok_or(Errno::EINVAL)?;
            // SH_HIDDEN_PRIVATE_BASE: the scratch backing VA in 64 KiB units.
            g.scratch_backing_va.store(v.va_addr, Ordering::Release);
            Ok(())
        })
    }

    fn get_tile_config(&mut self, v: &mut kfd_ioctl_get_tile_config_args) -> Self::Output {
        let emu = self.emu;
        done({
            // SAFETY: the caller's contract covers the table pointers (copy_to_user in KFD).
            unsafe { crate::gfx_config::get_tile_config(emu, v) }
        })
    }

    fn set_trap_handler(&mut self, v: &mut kfd_ioctl_set_trap_handler_args) -> Self::Output {
        let emu = self.emu;
        done({
            let g = emu.gpu(v.gpu_id).ok_or(Errno::EINVAL)?;
            g.trap_handler_tba.store(v.tba_addr, Ordering::Release);
            g.trap_handler_tma.store(v.tma_addr, Ordering::Release);
            Ok(())
        })
    }

    fn available_memory(&mut self, v: &mut kfd_ioctl_get_available_memory_args) -> Self::Output {
        let emu = self.emu;
        done({
            let g = emu.gpu(v.gpu_id).ok_or(Errno::EINVAL)?;
            v.available = g
                .params
                .vram_bytes
                .saturating_sub(g.vram_used.load(Ordering::Acquire));
            Ok(())
        })
    }

    fn alloc_memory_of_gpu(&mut self, v: &mut kfd_ioctl_alloc_memory_of_gpu_args) -> Self::Output {
        let emu = self.emu;
        done(memory::alloc(emu, v))
    }

    fn free_memory_of_gpu(&mut self, v: &mut kfd_ioctl_free_memory_of_gpu_args) -> Self::Output {
        let emu = self.emu;
        done(memory::free(emu, v.handle))
    }

    fn map_memory_to_gpu(&mut self, v: &mut kfd_ioctl_map_memory_to_gpu_args) -> Self::Output {
        let emu = self.emu;
        done({
            memory::map(
                emu,
                v.handle,
                v.device_ids_array_ptr,
                v.n_devices,
                &mut v.n_success,
                true,
            )
        })
    }

    fn unmap_memory_from_gpu(
        &mut self,
        v: &mut kfd_ioctl_unmap_memory_from_gpu_args,
    ) -> Self::Output {
        let emu = self.emu;
        done({
            memory::map(
                emu,
                v.handle,
                v.device_ids_array_ptr,
                v.n_devices,
                &mut v.n_success,
                false,
            )
        })
    }

    fn create_event(&mut self, v: &mut kfd_ioctl_create_event_args) -> Self::Output {
        let emu = self.emu;
        done(emu.events.create(v, |h| memory::events_page(emu, h)))
    }

    fn destroy_event(&mut self, v: &mut kfd_ioctl_destroy_event_args) -> Self::Output {
        let emu = self.emu;
        done(emu.events.destroy(v.event_id))
    }

    fn set_event(&mut self, v: &mut kfd_ioctl_set_event_args) -> Self::Output {
        let emu = self.emu;
        done(emu.events.set(v.event_id))
    }

    fn reset_event(&mut self, v: &mut kfd_ioctl_reset_event_args) -> Self::Output {
        let emu = self.emu;
        done(emu.events.reset(v.event_id))
    }

    fn wait_events(&mut self, v: &mut kfd_ioctl_wait_events_args) -> Self::Output {
        let emu = self.emu;
        done({
            if v.num_events == 0 || v.events_ptr == 0 {
                return Err(Errno::EINVAL);
            }
            // SAFETY: the caller's contract covers the events array (copy_from_user in KFD).
            let data = unsafe {
                std::slice::from_raw_parts_mut(
                    v.events_ptr as *mut kfd_event_data,
                    v.num_events as usize,
                )
            };
            let ages = emu
                .config
                .kfd_version
                .supports(kfd_sys::Feature::SignalEventAge);
            v.wait_result = emu
                .events
                .wait(data, v.wait_for_all != 0, v.timeout, ages)?;
            Ok(())
        })
    }

    fn create_queue(&mut self, v: &mut kfd_ioctl_create_queue_args) -> Self::Output {
        let emu = self.emu;
        done(queue::create(emu, v))
    }

    fn destroy_queue(&mut self, v: &mut kfd_ioctl_destroy_queue_args) -> Self::Output {
        let emu = self.emu;
        done(queue::destroy(emu, v.queue_id))
    }

    fn set_cu_mask(&mut self, v: &mut kfd_ioctl_set_cu_mask_args) -> Self::Output {
        let emu = self.emu;
        done(queue::set_cu_mask(emu, v))
    }

    fn smi_events(&mut self, v: &mut kfd_ioctl_smi_events_args) -> Self::Output {
        let emu = self.emu;
        done({
            emu.gpu(v.gpuid).ok_or(Errno::EINVAL)?;
            v.anon_fd = emu.faults.smi.open(v.gpuid)? as u32;
            Ok(())
        })
    }

    fn alloc_queue_gws(&mut self, v: &mut kfd_ioctl_alloc_queue_gws_args) -> Self::Output {
        let emu = self.emu;
        done(queue::alloc_gws(emu, v))
    }

    fn export_dmabuf(&mut self, v: &mut kfd_ioctl_export_dmabuf_args) -> Self::Output {
        let emu = self.emu;
        done(crate::dmabuf::export(emu, v))
    }

    fn get_dmabuf_info(&mut self, v: &mut kfd_ioctl_get_dmabuf_info_args) -> Self::Output {
        let emu = self.emu;
        done({
            // SAFETY: the caller's contract covers the metadata buffer (copy_to_user).
            unsafe { crate::dmabuf::info(emu, v) }
        })
    }

    fn import_dmabuf(&mut self, v: &mut kfd_ioctl_import_dmabuf_args) -> Self::Output {
        let emu = self.emu;
        done(crate::dmabuf::import(emu, v))
    }

    fn get_queue_wave_state(
        &mut self,
        v: &mut kfd_ioctl_get_queue_wave_state_args,
    ) -> Self::Output {
        let emu = self.emu;
        done(crate::wave_state::get_queue_wave_state(emu, v))
    }

    fn runtime_enable(&mut self, v: &mut kfd_ioctl_runtime_enable_args) -> Self::Output {
        let emu = self.emu;
        done(crate::debugger::runtime_enable(emu, v))
    }

    fn dbg_trap(&mut self, v: &mut kfd_ioctl_dbg_trap_args) -> Self::Output {
        let emu = self.emu;
        {
            // SAFETY: forwarded from the caller's contract on the pointers inside.
            unsafe { crate::debugger::dbg_trap(emu, v) }
        }
    }

    fn update_queue(&mut self, v: &mut kfd_ioctl_update_queue_args) -> Self::Output {
        let emu = self.emu;
        done(queue::update(emu, v))
    }

    fn get_process_apertures(
        &mut self,
        _: &mut kfd_ioctl_get_process_apertures_args,
    ) -> Self::Output {
        not_modelled::<kfd_ioctl_get_process_apertures_args>()
    }

    fn dbg_register_deprecated(&mut self, _: &mut kfd_ioctl_dbg_register_args) -> Self::Output {
        not_modelled::<kfd_ioctl_dbg_register_args>()
    }

    fn dbg_unregister_deprecated(&mut self, _: &mut kfd_ioctl_dbg_unregister_args) -> Self::Output {
        not_modelled::<kfd_ioctl_dbg_unregister_args>()
    }

    fn dbg_address_watch_deprecated(
        &mut self,
        _: &mut kfd_ioctl_dbg_address_watch_args,
    ) -> Self::Output {
        not_modelled::<kfd_ioctl_dbg_address_watch_args>()
    }

    fn dbg_wave_control_deprecated(
        &mut self,
        _: &mut kfd_ioctl_dbg_wave_control_args,
    ) -> Self::Output {
        not_modelled::<kfd_ioctl_dbg_wave_control_args>()
    }

    fn criu_op(&mut self, _: &mut kfd_ioctl_criu_args) -> Self::Output {
        not_modelled::<kfd_ioctl_criu_args>()
    }
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-parameter.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn apertures(
    emu: &Emulator,
    v: &mut kfd_ioctl_get_process_apertures_new_args,
) -> Result<(), Errno> {
    // Only the GPUs the process has device data for (`kfd_init_apertures`).
    let n = emu.process_gpus().count() as u32;
    if v.num_of_nodes == 0 {
        v.num_of_nodes = n;
        return Ok(());
    }
    if v.kfd_process_device_apertures_ptr == 0 {
        return Err(Errno::EFAULT);
    }
    let count = v.num_of_nodes.min(n) as usize;
    // SAFETY: the caller's contract covers `num_of_nodes` entries at the pointer.
    let out = unsafe {
        std::slice::from_raw_parts_mut(
            v.kfd_process_device_apertures_ptr as *mut kfd_process_device_apertures,
            count,
        )
    };
    for (slot, g) in out.iter_mut().zip(emu.process_gpus()) {
        *slot = crate::device::process_apertures(g.gpu_id);
    }
    v.num_of_nodes = count as u32;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{EmuConfig, Emulator, Preset};
    use kfd_sys::bindings::kfd_ioctl_svm_args;
    use kfd_sys::{DriverExt, Errno};

    /// `kfd_ioctl` matches a request by number: a caller whose header gives the struct
    /// another size (CREATE_QUEUE is 8 bytes longer since 1.17) is answered, its struct
    /// zero-extended and only its own bytes copied back.
    #[test]
    fn arguments_of_another_size_are_matched_by_number() {
        use kfd_sys::ioctl::IoctlRequest;
        use kfd_sys::{Driver, Node};
        let emu = Emulator::new(EmuConfig::new(Preset::Gfx90a, 1)).unwrap();
        const GUARD: u32 = 0xDEAD_BEEF;
        // GET_VERSION's struct is 8 bytes: a 4-byte caller gets the major version only.
        let mut v = [0u32, GUARD];
        // SAFETY: `v` is larger than the 4 bytes the request claims.
        let r = unsafe {
            emu.ioctl(
                Node::Kfd,
                IoctlRequest::ior(b'K', 0x01, 4),
                v.as_mut_ptr().cast(),
            )
        };
        assert_eq!(r, Ok(0));
        assert_eq!(
            v,
            [1, GUARD],
            "nothing past the caller's 4 bytes is written"
        );
        // A 16-byte caller gets both, and zeros past the driver's struct.
        let mut v = [GUARD; 4];
        // SAFETY: `v` is the 16 bytes the request claims.
        let r = unsafe {
            emu.ioctl(
                Node::Kfd,
                IoctlRequest::ior(b'K', 0x01, 16),
                v.as_mut_ptr().cast(),
            )
        };
        assert_eq!(r, Ok(0));
        assert_eq!(v, [1, kfd_sys::KFD_ABI.minor, 0, 0]);
    }

    #[test]
    fn requests_newer_than_the_configured_version_are_unknown() {
        use kfd_sys::bindings::{kfd_ioctl_get_version_args, kfd_ioctl_runtime_enable_args};
        let mut config = EmuConfig::new(Preset::Gfx90a, 1);
        config.kfd_version = kfd_sys::KfdVersion::new(1, 11);
        let emu = Emulator::new(config).unwrap();
        let mut v = kfd_ioctl_get_version_args::default();
        emu.kfd_ioctl(&mut v).unwrap();
        assert_eq!((v.major_version, v.minor_version), (1, 11));
        let mut rt = kfd_ioctl_runtime_enable_args::default();
        // SAFETY: r_debug 0 points nowhere the driver would read.
        let r = unsafe { emu.kfd_ioctl_unchecked(&mut rt) };
        assert_eq!(r, Err(Errno::ENOTTY));
        // The emulator models nothing older than 1.11, nor newer than the bindings.
        for minor in [10, kfd_sys::KFD_ABI.minor + 1] {
            let mut config = EmuConfig::new(Preset::Gfx90a, 1);
            config.kfd_version = kfd_sys::KfdVersion::new(1, minor);
            assert!(Emulator::new(config).is_err());
        }
    }

    /// SVM attributes follow the struct inside the request's size; more than it covers is
    /// refused rather than read from past the argument.
    #[test]
    fn svm_attributes_must_lie_inside_the_request() {
        let emu = Emulator::new(EmuConfig::new(Preset::Gfx90a, 1)).unwrap();
        let mut a = kfd_ioctl_svm_args {
            start_addr: 0x1000_0000,
            size: 0x1000,
            nattr: 4,
            ..Default::default()
        };
        // SAFETY: the emulator refuses before reading any attribute.
        let r = unsafe { emu.kfd_ioctl_unchecked(&mut a) };
        assert_eq!(r, Err(Errno::EINVAL));
    }
}
