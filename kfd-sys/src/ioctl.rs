//! ioctl request numbers, computed the way `<asm-generic/ioctl.h>` does, by `const fn`.
//!
//! The KFD requests are `_IOR/_IOW/_IOWR('K', nr, struct kfd_ioctl_*_args)`
//! (see `include/uapi/linux/kfd_ioctl.h`). [`KfdIoctl`] ties each argument struct to its request,
//! so that a typed call can never pass a struct of the wrong size.

use crate::bindings::*;
use crate::KfdVersion;
use core::mem::size_of;

const NRBITS: u32 = 8;
const TYPEBITS: u32 = 8;
const SIZEBITS: u32 = 14;
const NRSHIFT: u32 = 0;
const TYPESHIFT: u32 = NRSHIFT + NRBITS;
const SIZESHIFT: u32 = TYPESHIFT + TYPEBITS;
const DIRSHIFT: u32 = SIZESHIFT + SIZEBITS;

/// Direction bits of an ioctl request (as seen from user space).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// `_IO`: no argument copied.
    None = 0,
    /// `_IOW`: user space writes, the kernel reads.
    Write = 1,
    /// `_IOR`: the kernel writes, user space reads.
    Read = 2,
    /// `_IOWR`: both.
    ReadWrite = 3,
}

/// An encoded ioctl request number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IoctlRequest(u32);

impl IoctlRequest {
    /// Encodes `(dir, type, nr, size)` as `_IOC` does. Panics at compile time when `size` does
    /// not fit the 14-bit size field.
    pub const fn new(dir: Direction, ty: u8, nr: u8, size: usize) -> Self {
        assert!(size < (1 << SIZEBITS), "ioctl argument too large");
        IoctlRequest(
            ((dir as u32) << DIRSHIFT)
                | ((ty as u32) << TYPESHIFT)
                | ((nr as u32) << NRSHIFT)
                | ((size as u32) << SIZESHIFT),
        )
    }
    /// `_IOR(ty, nr, size)`.
    pub const fn ior(ty: u8, nr: u8, size: usize) -> Self {
        Self::new(Direction::Read, ty, nr, size)
    }
    /// `_IOW(ty, nr, size)`.
    pub const fn iow(ty: u8, nr: u8, size: usize) -> Self {
        Self::new(Direction::Write, ty, nr, size)
    }
    /// `_IOWR(ty, nr, size)`.
    pub const fn iowr(ty: u8, nr: u8, size: usize) -> Self {
        Self::new(Direction::ReadWrite, ty, nr, size)
    }
    /// Wraps a raw request number (as passed to `ioctl(2)`).
    pub const fn from_raw(raw: u32) -> Self {
        IoctlRequest(raw)
    }
    /// The raw request number.
    pub const fn raw(self) -> u32 {
        self.0
    }
    /// The command number (`_IOC_NR`).
    pub const fn nr(self) -> u8 {
        (self.0 >> NRSHIFT) as u8
    }
    /// The type/magic byte (`_IOC_TYPE`).
    pub const fn ty(self) -> u8 {
        (self.0 >> TYPESHIFT) as u8
    }
    /// The argument size in bytes (`_IOC_SIZE`).
    pub const fn size(self) -> usize {
        ((self.0 >> SIZESHIFT) & ((1 << SIZEBITS) - 1)) as usize
    }
    /// The direction (`_IOC_DIR`).
    pub const fn dir(self) -> Direction {
        match self.0 >> DIRSHIFT {
            0 => Direction::None,
            1 => Direction::Write,
            2 => Direction::Read,
            _ => Direction::ReadWrite,
        }
    }
}

/// The KFD ioctl magic, `'K'`.
pub const AMDKFD_IOCTL_BASE: u8 = b'K';

/// An argument struct of a KFD ioctl, tied to its request number.
///
/// # Safety
/// `REQUEST` must be the request whose argument is exactly `Self` (size and layout), and `Self` must
/// be plain old data that the kernel may read and overwrite.
pub unsafe trait KfdIoctl: Sized {
    /// The request number.
    const REQUEST: IoctlRequest;
    /// The request's name, for error messages (`"AMDKFD_IOC_ALLOC_MEMORY_OF_GPU"`).
    const NAME: &'static str;
    /// The first KFD version that answers the request (older ones fail it with ENOTTY or
    /// EINVAL).
    const SINCE: KfdVersion;
}

/// A KFD ioctl argument with no user pointer or GPU-visible address inside, which the kernel can
/// only read and write in place: safe to issue through [`crate::DriverExt::kfd_ioctl`].
///
/// # Safety
/// The request must dereference nothing but the argument struct itself.
pub unsafe trait PlainKfdIoctl: KfdIoctl {}

macro_rules! kfd_ioctls {
    ($($name:ident($method:ident) = $dir:ident($nr:literal, $ty:ty) since $minor:literal $($plain:ident)?;)*) => {
        /// Every KFD request of the bindings' ABI (see [`crate::KFD_ABI`]), by name.
        pub mod request {
            use super::*;
            $(
                #[doc = concat!("`AMDKFD_IOC_", stringify!($name), "` (KFD 1.", stringify!($minor), ").")]
                pub const $name: IoctlRequest =
                    IoctlRequest::$dir(AMDKFD_IOCTL_BASE, $nr, size_of::<$ty>());
            )*
        }
        $(
            // SAFETY: the request is computed from this exact type's size and the header's nr.
            unsafe impl KfdIoctl for $ty {
                const REQUEST: IoctlRequest = request::$name;
                const NAME: &'static str = concat!("AMDKFD_IOC_", stringify!($name));
                const SINCE: KfdVersion = KfdVersion::new(1, $minor);
            }
            $(kfd_ioctls!(@$plain $ty);)?
        )*
        /// One method per KFD request, each taking that request's argument struct:
        /// [`dispatch_kfd_request`] calls the one a request names. A driver model (kfd-emu)
        /// implements it, so a request added to the table does not compile until it is handled,
        /// and a handler cannot be given another request's struct:
        ///
        /// ```compile_fail
        /// use kfd_sys::bindings::kfd_ioctl_get_version_args;
        /// use kfd_sys::ioctl::KfdRequestHandler;
        /// fn wrong(h: &mut impl KfdRequestHandler, a: &mut kfd_ioctl_get_version_args) {
        ///     h.create_queue(a); // CREATE_QUEUE takes kfd_ioctl_create_queue_args
        /// }
        /// ```
        pub trait KfdRequestHandler {
            /// What every method returns.
            type Output;
            $(
                #[doc = concat!("`AMDKFD_IOC_", stringify!($name), "`.")]
                fn $method(&mut self, arg: &mut $ty) -> Self::Output;
            )*
        }

        /// Calls `handler`'s method for `req` with `arg` as the request's argument struct, or
        /// returns `None` if `req` is none of the table's requests (number, direction and size
        /// must all match: look a caller's request up by number first, as `kfd_ioctl` does).
        ///
        /// # Safety
        /// `arg` must be non-null, aligned and valid for reads and writes of the request's
        /// argument struct, and not aliased for the call (the [`crate::Driver::ioctl`] contract).
        pub unsafe fn dispatch_kfd_request<H: KfdRequestHandler + ?Sized>(
            handler: &mut H,
            req: IoctlRequest,
            arg: *mut std::ffi::c_void,
        ) -> Option<H::Output> {
            $(
                if req == request::$name {
                    // SAFETY: `req` is this row's request, whose argument struct is `$ty`; the
                    // caller vouches for `arg` being one.
                    return Some(handler.$method(unsafe { &mut *(arg as *mut $ty) }));
                }
            )*
            None
        }

        /// The name of a KFD request, by its command number (for logs of unknown requests).
        pub fn kfd_request_name(nr: u8) -> Option<&'static str> {
            match nr {
                $($nr => Some(concat!("AMDKFD_IOC_", stringify!($name))),)*
                _ => None,
            }
        }
        /// The request a KFD of the bindings' ABI defines for command number `nr` (its
        /// direction and argument size), and the first KFD version that has it. `kfd_ioctl`
        /// looks requests up this way: by number, whatever size the caller's header gave.
        pub fn kfd_request_by_nr(nr: u8) -> Option<(IoctlRequest, KfdVersion)> {
            match nr {
                $($nr => Some((request::$name, KfdVersion::new(1, $minor))),)*
                _ => None,
            }
        }
    };
    (@plain $ty:ty) => {
        // SAFETY: marked `plain` below only for requests whose struct holds ids, sizes and flags.
        unsafe impl PlainKfdIoctl for $ty {}
    };
}

// `since`: the first KFD minor version with the request, from the header's version history
// (requests older than 1.3 are listed as 1.1, where the history starts).
kfd_ioctls! {
    GET_VERSION(get_version) = ior(0x01, kfd_ioctl_get_version_args) since 1 plain;
    CREATE_QUEUE(create_queue) = iowr(0x02, kfd_ioctl_create_queue_args) since 1;
    DESTROY_QUEUE(destroy_queue) = iowr(0x03, kfd_ioctl_destroy_queue_args) since 1 plain;
    SET_MEMORY_POLICY(set_memory_policy) = iow(0x04, kfd_ioctl_set_memory_policy_args) since 1 plain;
    GET_CLOCK_COUNTERS(get_clock_counters) = iowr(0x05, kfd_ioctl_get_clock_counters_args) since 1 plain;
    GET_PROCESS_APERTURES(get_process_apertures) = ior(0x06, kfd_ioctl_get_process_apertures_args) since 1 plain;
    UPDATE_QUEUE(update_queue) = iow(0x07, kfd_ioctl_update_queue_args) since 1;
    CREATE_EVENT(create_event) = iowr(0x08, kfd_ioctl_create_event_args) since 1 plain;
    DESTROY_EVENT(destroy_event) = iow(0x09, kfd_ioctl_destroy_event_args) since 1 plain;
    SET_EVENT(set_event) = iow(0x0A, kfd_ioctl_set_event_args) since 1 plain;
    RESET_EVENT(reset_event) = iow(0x0B, kfd_ioctl_reset_event_args) since 1 plain;
    WAIT_EVENTS(wait_events) = iowr(0x0C, kfd_ioctl_wait_events_args) since 1;
    DBG_REGISTER_DEPRECATED(dbg_register_deprecated) = iow(0x0D, kfd_ioctl_dbg_register_args) since 1 plain;
    DBG_UNREGISTER_DEPRECATED(dbg_unregister_deprecated) = iow(0x0E, kfd_ioctl_dbg_unregister_args) since 1 plain;
    DBG_ADDRESS_WATCH_DEPRECATED(dbg_address_watch_deprecated) = iow(0x0F, kfd_ioctl_dbg_address_watch_args) since 1;
    DBG_WAVE_CONTROL_DEPRECATED(dbg_wave_control_deprecated) = iow(0x10, kfd_ioctl_dbg_wave_control_args) since 1;
    SET_SCRATCH_BACKING_VA(set_scratch_backing_va) = iowr(0x11, kfd_ioctl_set_scratch_backing_va_args) since 1;
    GET_TILE_CONFIG(get_tile_config) = iowr(0x12, kfd_ioctl_get_tile_config_args) since 1;
    SET_TRAP_HANDLER(set_trap_handler) = iow(0x13, kfd_ioctl_set_trap_handler_args) since 1;
    GET_PROCESS_APERTURES_NEW(get_process_apertures_new) = iowr(0x14, kfd_ioctl_get_process_apertures_new_args) since 1;
    ACQUIRE_VM(acquire_vm) = iow(0x15, kfd_ioctl_acquire_vm_args) since 1 plain;
    ALLOC_MEMORY_OF_GPU(alloc_memory_of_gpu) = iowr(0x16, kfd_ioctl_alloc_memory_of_gpu_args) since 1;
    FREE_MEMORY_OF_GPU(free_memory_of_gpu) = iow(0x17, kfd_ioctl_free_memory_of_gpu_args) since 1 plain;
    MAP_MEMORY_TO_GPU(map_memory_to_gpu) = iowr(0x18, kfd_ioctl_map_memory_to_gpu_args) since 1;
    UNMAP_MEMORY_FROM_GPU(unmap_memory_from_gpu) = iowr(0x19, kfd_ioctl_unmap_memory_from_gpu_args) since 1;
    SET_CU_MASK(set_cu_mask) = iow(0x1A, kfd_ioctl_set_cu_mask_args) since 1;
    GET_QUEUE_WAVE_STATE(get_queue_wave_state) = iowr(0x1B, kfd_ioctl_get_queue_wave_state_args) since 1;
    GET_DMABUF_INFO(get_dmabuf_info) = iowr(0x1C, kfd_ioctl_get_dmabuf_info_args) since 1;
    IMPORT_DMABUF(import_dmabuf) = iowr(0x1D, kfd_ioctl_import_dmabuf_args) since 1;
    ALLOC_QUEUE_GWS(alloc_queue_gws) = iowr(0x1E, kfd_ioctl_alloc_queue_gws_args) since 1 plain;
    SMI_EVENTS(smi_events) = iowr(0x1F, kfd_ioctl_smi_events_args) since 3 plain;
    SVM(svm) = iowr(0x20, kfd_ioctl_svm_args) since 5;
    SET_XNACK_MODE(set_xnack_mode) = iowr(0x21, kfd_ioctl_set_xnack_mode_args) since 5 plain;
    CRIU_OP(criu_op) = iowr(0x22, kfd_ioctl_criu_args) since 7;
    AVAILABLE_MEMORY(available_memory) = iowr(0x23, kfd_ioctl_get_available_memory_args) since 9 plain;
    EXPORT_DMABUF(export_dmabuf) = iowr(0x24, kfd_ioctl_export_dmabuf_args) since 12 plain;
    RUNTIME_ENABLE(runtime_enable) = iowr(0x25, kfd_ioctl_runtime_enable_args) since 13;
    DBG_TRAP(dbg_trap) = iowr(0x26, kfd_ioctl_dbg_trap_args) since 13;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_matches_asm_generic() {
        // _IOR('K', 1, 8) written out by hand: dir 2 << 30 | size 8 << 16 | 'K' << 8 | 1.
        assert_eq!(
            request::GET_VERSION.raw(),
            (2 << 30) | (8 << 16) | (0x4B << 8) | 1
        );
        let r = request::ALLOC_MEMORY_OF_GPU;
        assert_eq!(r.nr(), 0x16);
        assert_eq!(r.ty(), b'K');
        assert_eq!(r.dir(), Direction::ReadWrite);
        assert_eq!(r.size(), size_of::<kfd_ioctl_alloc_memory_of_gpu_args>());
        assert_eq!(kfd_request_name(0x0C), Some("AMDKFD_IOC_WAIT_EVENTS"));
        // Every request has a name (kfd-emu logs unknown ones by it).
        assert_eq!(kfd_request_name(0x1E), Some("AMDKFD_IOC_ALLOC_QUEUE_GWS"));
        assert_eq!(
            kfd_request_name(0x06),
            Some("AMDKFD_IOC_GET_PROCESS_APERTURES")
        );
        assert_eq!(kfd_request_name(0x22), Some("AMDKFD_IOC_CRIU_OP"));
        assert_eq!(kfd_request_name(0x26), Some("AMDKFD_IOC_DBG_TRAP"));
        assert_eq!(
            kfd_request_by_nr(0x25).map(|(r, v)| (r.nr(), v)),
            Some((0x25, KfdVersion::new(1, 13)))
        );
        for nr in 0x01..=0x26u8 {
            assert!(
                kfd_request_name(nr).is_some(),
                "request {nr:#x} has no name"
            );
        }
        assert_eq!(kfd_request_name(0xEE), None);
    }
}
