//! HSA/AMD ABI structs shared by the runtime and the packet processor: `amd_queue_t`,
//! `amd_signal_t` and the kernel descriptor, with their exact layouts.

use core::mem::{align_of, offset_of, size_of};
use core::sync::atomic::{AtomicI64, AtomicU32, AtomicU64};

/// `queue_properties` bit: a trap handler is installed.
pub const QUEUE_PROPERTY_ENABLE_TRAP_HANDLER: u32 = 1 << 0;
/// `queue_properties` bit: 64-bit pointers.
pub const QUEUE_PROPERTY_IS_PTR64: u32 = 1 << 1;
/// `queue_properties` bit: the CP writes dispatch timestamps into completion signals.
pub const QUEUE_PROPERTY_ENABLE_PROFILING: u32 = 1 << 3;
/// `AMD_QUEUE_PROPERTIES_USE_SCRATCH_ONCE`: the queue's scratch is lent for one dispatch; the
/// CP hands it back ([`crate::queue_error::SCRATCH_RECLAIM`]) when that dispatch is done.
pub const QUEUE_PROPERTY_USE_SCRATCH_ONCE: u32 = 1 << 4;
/// `hsa_queue_t.features`: kernel dispatch packets.
pub const QUEUE_FEATURE_KERNEL_DISPATCH: u32 = 1;
/// `hsa_queue_t.features`: agent dispatch packets.
pub const QUEUE_FEATURE_AGENT_DISPATCH: u32 = 2;
/// `amd_signal_t.kind` of an ordinary (user-mode) signal.
pub const AMD_SIGNAL_KIND_USER: i64 = 1;

/// `amd_queue_t`: the AQL queue descriptor the runtime and the command processor share.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct AmdQueue {
    /// `hsa_queue_t.type` (0 multiple producers, 1 single).
    pub queue_type: u32,
    /// `hsa_queue_t.features`.
    pub features: u32,
    /// Ring base address.
    pub base_address: u64,
    /// Doorbell signal handle.
    pub doorbell_signal: u64,
    /// Ring size in packets.
    pub size: u32,
    reserved1: u32,
    /// Queue id.
    pub id: u64,
    /// Capability bits.
    pub caps: u32,
    reserved2: [u32; 3],
    /// Next packet index to be reserved by producers.
    pub write_dispatch_id: AtomicU64,
    /// High half of the group segment aperture base.
    pub group_segment_aperture_base_hi: u32,
    /// High half of the private segment aperture base.
    pub private_segment_aperture_base_hi: u32,
    /// Highest compute unit id.
    pub max_cu_id: u32,
    /// Highest wave id.
    pub max_wave_id: u32,
    reserved3: [u32; 12],
    /// Index of the next packet the processor will consume.
    pub read_dispatch_id: AtomicU64,
    /// Byte offset of `read_dispatch_id` from the queue start (for the CP).
    pub read_dispatch_id_field_base_byte_offset: u32,
    /// `COMPUTE_TMPRING_SIZE` for scratch.
    pub compute_tmpring_size: u32,
    /// Scratch buffer resource descriptor.
    pub scratch_resource_descriptor: [u32; 4],
    /// Scratch backing memory address.
    pub scratch_backing_memory_location: u64,
    /// Scratch backing memory size.
    pub scratch_backing_memory_byte_size: u64,
    /// Scratch bytes per work-item of a wave64 wave the queue's scratch holds (the CP stops
    /// before a dispatch asking for more).
    pub scratch_wave64_lane_byte_size: u32,
    /// `QUEUE_PROPERTY_*` bits.
    pub queue_properties: u32,
    reserved4: [u32; 2],
    /// Signal the CP writes a queue error code into when the queue becomes inactive.
    pub queue_inactive_signal: AtomicU64,
    reserved5: [u32; 14],
}

const _: () = {
    assert!(size_of::<AmdQueue>() == 256);
    assert!(align_of::<AmdQueue>() == 64);
    assert!(offset_of!(AmdQueue, base_address) == 8);
    assert!(offset_of!(AmdQueue, doorbell_signal) == 16);
    assert!(offset_of!(AmdQueue, size) == 24);
    assert!(offset_of!(AmdQueue, id) == 32);
    assert!(offset_of!(AmdQueue, caps) == 40);
    assert!(offset_of!(AmdQueue, write_dispatch_id) == 56);
    assert!(offset_of!(AmdQueue, group_segment_aperture_base_hi) == 64);
    assert!(offset_of!(AmdQueue, private_segment_aperture_base_hi) == 68);
    assert!(offset_of!(AmdQueue, max_cu_id) == 72);
    assert!(offset_of!(AmdQueue, max_wave_id) == 76);
    assert!(offset_of!(AmdQueue, read_dispatch_id) == 128);
    assert!(offset_of!(AmdQueue, compute_tmpring_size) == 140);
    assert!(offset_of!(AmdQueue, scratch_resource_descriptor) == 144);
    assert!(offset_of!(AmdQueue, scratch_backing_memory_location) == 160);
    assert!(offset_of!(AmdQueue, scratch_backing_memory_byte_size) == 168);
    assert!(offset_of!(AmdQueue, scratch_wave64_lane_byte_size) == 176);
    assert!(offset_of!(AmdQueue, queue_properties) == 180);
    assert!(offset_of!(AmdQueue, queue_inactive_signal) == 192);
    // The byte offsets the CP side uses name the same fields.
    use queue_offsets as o;
    assert!(offset_of!(AmdQueue, write_dispatch_id) as u64 == o::WRITE_DISPATCH_ID);
    assert!(offset_of!(AmdQueue, read_dispatch_id) as u64 == o::READ_DISPATCH_ID);
    assert!(
        offset_of!(AmdQueue, group_segment_aperture_base_hi) as u64
            == o::GROUP_SEGMENT_APERTURE_BASE_HI
    );
    assert!(
        offset_of!(AmdQueue, private_segment_aperture_base_hi) as u64
            == o::PRIVATE_SEGMENT_APERTURE_BASE_HI
    );
    assert!(offset_of!(AmdQueue, compute_tmpring_size) as u64 == o::COMPUTE_TMPRING_SIZE);
    assert!(
        offset_of!(AmdQueue, scratch_resource_descriptor) as u64 == o::SCRATCH_RESOURCE_DESCRIPTOR
    );
    assert!(
        offset_of!(AmdQueue, scratch_backing_memory_location) as u64
            == o::SCRATCH_BACKING_MEMORY_LOCATION
    );
    assert!(
        offset_of!(AmdQueue, scratch_backing_memory_byte_size) as u64
            == o::SCRATCH_BACKING_MEMORY_BYTE_SIZE
    );
    assert!(
        offset_of!(AmdQueue, scratch_wave64_lane_byte_size) as u64
            == o::SCRATCH_WAVE64_LANE_BYTE_SIZE
    );
    assert!(offset_of!(AmdQueue, queue_properties) as u64 == o::QUEUE_PROPERTIES);
    assert!(offset_of!(AmdQueue, queue_inactive_signal) as u64 == o::QUEUE_INACTIVE_SIGNAL);
};

impl AmdQueue {
    /// Initialises a queue descriptor in place (every other field zero).
    ///
    /// # Safety
    /// `this` must be valid for writes of 256 bytes, 64-byte aligned, and not yet shared with a
    /// packet processor.
    pub unsafe fn init(
        this: *mut AmdQueue,
        ring: u64,
        size_packets: u32,
        inactive_signal: u64,
        profiling: bool,
    ) {
        // SAFETY: the caller guarantees `this` is writable and unshared; zero is a valid bit
        // pattern for every field (integers and atomics).
        unsafe {
            core::ptr::write_bytes(this.cast::<u8>(), 0, size_of::<AmdQueue>());
            let q = &mut *this;
            q.features = QUEUE_FEATURE_KERNEL_DISPATCH | QUEUE_FEATURE_AGENT_DISPATCH;
            q.base_address = ring;
            q.size = size_packets;
            q.id = this as u64;
            q.read_dispatch_id_field_base_byte_offset =
                offset_of!(AmdQueue, read_dispatch_id) as u32;
            q.queue_properties = QUEUE_PROPERTY_IS_PTR64
                | if profiling {
                    QUEUE_PROPERTY_ENABLE_PROFILING
                } else {
                    0
                };
            *q.queue_inactive_signal.get_mut() = inactive_signal;
        }
    }

    /// Address of `write_dispatch_id` (KFD's `write_pointer_address` for AQL queues).
    pub fn write_dispatch_id_address(&self) -> u64 {
        &self.write_dispatch_id as *const AtomicU64 as u64
    }

    /// Address of `read_dispatch_id` (KFD's `read_pointer_address` for AQL queues).
    pub fn read_dispatch_id_address(&self) -> u64 {
        &self.read_dispatch_id as *const AtomicU64 as u64
    }

    /// Whether profiling is enabled.
    pub fn profiling(&self) -> bool {
        self.queue_properties & QUEUE_PROPERTY_ENABLE_PROFILING != 0
    }
}

/// `amd_signal_t`: a 64-byte signal the CPU and GPUs update atomically.
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub struct AmdSignal {
    /// `AMD_SIGNAL_KIND_*`.
    pub kind: AtomicI64,
    /// The value; completions decrement it.
    pub value: AtomicI64,
    /// Address of the KFD event mailbox to write `event_id` into on change (0 = none).
    pub event_mailbox_ptr: AtomicU64,
    /// KFD event id raised on change.
    pub event_id: AtomicU32,
    reserved1: u32,
    /// Dispatch start timestamp (profiling).
    pub start_ts: AtomicU64,
    /// Dispatch end timestamp (profiling).
    pub end_ts: AtomicU64,
    /// Queue the signal belongs to (informational).
    pub queue_ptr: AtomicU64,
    reserved3: [u32; 2],
}

const _: () = {
    assert!(size_of::<AmdSignal>() == 64);
    assert!(offset_of!(AmdSignal, value) == 8);
    assert!(offset_of!(AmdSignal, event_mailbox_ptr) == 16);
    assert!(offset_of!(AmdSignal, event_id) == 24);
    assert!(offset_of!(AmdSignal, start_ts) == 32);
    assert!(offset_of!(AmdSignal, end_ts) == 40);
    assert!(offset_of!(AmdSignal, queue_ptr) == 48);
};

/// Byte offsets inside `amd_signal_t`, for code that reads signals through other views.
pub mod signal_offsets {
    /// `value`.
    pub const VALUE: u64 = 8;
    /// `event_mailbox_ptr`.
    pub const EVENT_MAILBOX_PTR: u64 = 16;
    /// `event_id`.
    pub const EVENT_ID: u64 = 24;
    /// `start_ts`.
    pub const START_TS: u64 = 32;
    /// `end_ts`.
    pub const END_TS: u64 = 40;
}

/// Byte offsets inside `amd_queue_t`.
pub mod queue_offsets {
    /// `write_dispatch_id`.
    pub const WRITE_DISPATCH_ID: u64 = 56;
    /// `read_dispatch_id`.
    pub const READ_DISPATCH_ID: u64 = 128;
    /// `group_segment_aperture_base_hi`.
    pub const GROUP_SEGMENT_APERTURE_BASE_HI: u64 = 64;
    /// `private_segment_aperture_base_hi`.
    pub const PRIVATE_SEGMENT_APERTURE_BASE_HI: u64 = 68;
    /// `compute_tmpring_size`.
    pub const COMPUTE_TMPRING_SIZE: u64 = 140;
    /// `scratch_resource_descriptor[4]`.
    pub const SCRATCH_RESOURCE_DESCRIPTOR: u64 = 144;
    /// `scratch_backing_memory_location`.
    pub const SCRATCH_BACKING_MEMORY_LOCATION: u64 = 160;
    /// `scratch_backing_memory_byte_size`.
    pub const SCRATCH_BACKING_MEMORY_BYTE_SIZE: u64 = 168;
    /// `scratch_wave64_lane_byte_size`.
    pub const SCRATCH_WAVE64_LANE_BYTE_SIZE: u64 = 176;
    /// `queue_properties`.
    pub const QUEUE_PROPERTIES: u64 = 180;
    /// `queue_inactive_signal`.
    pub const QUEUE_INACTIVE_SIGNAL: u64 = 192;
}

/// The 64-byte kernel descriptor of code object v3+ (`.kd` symbol).
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelDescriptor {
    /// Static LDS bytes.
    pub group_segment_fixed_size: u32,
    /// Static scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// Kernel argument bytes.
    pub kernarg_size: u32,
    reserved0: [u8; 4],
    /// Byte offset of the entry point from the descriptor (256-byte aligned target).
    pub kernel_code_entry_byte_offset: i64,
    reserved1: [u8; 20],
    /// `COMPUTE_PGM_RSRC3`.
    pub compute_pgm_rsrc3: u32,
    /// `COMPUTE_PGM_RSRC1`.
    pub compute_pgm_rsrc1: u32,
    /// `COMPUTE_PGM_RSRC2`.
    pub compute_pgm_rsrc2: u32,
    /// `KERNEL_CODE_PROPERTY_*` bits.
    pub kernel_code_properties: u16,
    /// Kernel-argument preload settings.
    pub kernarg_preload: u16,
    reserved2: [u8; 4],
}

const _: () = {
    assert!(size_of::<KernelDescriptor>() == 64);
    assert!(offset_of!(KernelDescriptor, kernarg_size) == 8);
    assert!(offset_of!(KernelDescriptor, kernel_code_entry_byte_offset) == 16);
    assert!(offset_of!(KernelDescriptor, compute_pgm_rsrc3) == 44);
    assert!(offset_of!(KernelDescriptor, compute_pgm_rsrc1) == 48);
    assert!(offset_of!(KernelDescriptor, compute_pgm_rsrc2) == 52);
    assert!(offset_of!(KernelDescriptor, kernel_code_properties) == 56);
    assert!(offset_of!(KernelDescriptor, kernarg_preload) == 58);
};

/// `kernel_code_properties` bits.
pub mod code_properties {
    /// User SGPRs hold the private segment buffer descriptor.
    pub const ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER: u16 = 1 << 0;
    /// User SGPRs hold the dispatch packet pointer.
    pub const ENABLE_SGPR_DISPATCH_PTR: u16 = 1 << 1;
    /// User SGPRs hold the queue pointer.
    pub const ENABLE_SGPR_QUEUE_PTR: u16 = 1 << 2;
    /// User SGPRs hold the kernarg segment pointer.
    pub const ENABLE_SGPR_KERNARG_SEGMENT_PTR: u16 = 1 << 3;
    /// User SGPRs hold the dispatch id.
    pub const ENABLE_SGPR_DISPATCH_ID: u16 = 1 << 4;
    /// User SGPRs hold the flat scratch init.
    pub const ENABLE_SGPR_FLAT_SCRATCH_INIT: u16 = 1 << 5;
    /// User SGPRs hold the private segment size.
    pub const ENABLE_SGPR_PRIVATE_SEGMENT_SIZE: u16 = 1 << 6;
    /// The kernel runs in wave32 mode (gfx10+).
    pub const ENABLE_WAVEFRONT_SIZE32: u16 = 1 << 10;
}

impl KernelDescriptor {
    fn set_prop(&mut self, bit: u16, on: bool) {
        if on {
            self.kernel_code_properties |= bit;
        } else {
            self.kernel_code_properties &= !bit;
        }
    }

    /// Sets ENABLE_SGPR_KERNARG_SEGMENT_PTR.
    pub fn set_kernarg_segment_ptr(&mut self, on: bool) {
        self.set_prop(code_properties::ENABLE_SGPR_KERNARG_SEGMENT_PTR, on);
    }

    /// Sets ENABLE_WAVEFRONT_SIZE32.
    pub fn set_wavefront_size32(&mut self, on: bool) {
        self.set_prop(code_properties::ENABLE_WAVEFRONT_SIZE32, on);
    }

    /// Whether the kernel is wave32.
    pub fn wavefront_size32(&self) -> bool {
        self.kernel_code_properties & code_properties::ENABLE_WAVEFRONT_SIZE32 != 0
    }

    /// `COMPUTE_PGM_RSRC2.USER_SGPR_COUNT` (bits 1-5).
    pub fn user_sgpr_count(&self) -> u32 {
        (self.compute_pgm_rsrc2 >> 1) & 0x1F
    }

    /// `COMPUTE_PGM_RSRC2.ENABLE_SGPR_WORKGROUP_ID_X/Y/Z` (bits 7, 8, 9).
    pub fn workgroup_id_enabled(&self) -> [bool; 3] {
        [7, 8, 9].map(|b| self.compute_pgm_rsrc2 & (1 << b) != 0)
    }

    /// `COMPUTE_PGM_RSRC2.ENABLE_VGPR_WORKITEM_ID` (bits 11-12): dimensions of work-item ids.
    pub fn workitem_id_dims(&self) -> u32 {
        (self.compute_pgm_rsrc2 >> 11) & 3
    }

    /// `COMPUTE_PGM_RSRC2.SCRATCH_EN` (bit 0).
    pub fn scratch_enabled(&self) -> bool {
        self.compute_pgm_rsrc2 & 1 != 0
    }

    /// `COMPUTE_PGM_RSRC1` VGPR granule count (bits 0-5).
    pub fn vgpr_granules(&self) -> u32 {
        self.compute_pgm_rsrc1 & 0x3F
    }

    /// `COMPUTE_PGM_RSRC1` SGPR granule count (bits 6-9).
    pub fn sgpr_granules(&self) -> u32 {
        (self.compute_pgm_rsrc1 >> 6) & 0xF
    }

    /// Reads a descriptor from 64 bytes.
    pub fn from_bytes(b: &[u8; 64]) -> KernelDescriptor {
        // SAFETY: KernelDescriptor is 64 bytes of plain integers, so any byte pattern is valid;
        // `read_unaligned` tolerates the source's alignment.
        unsafe { core::ptr::read_unaligned(b.as_ptr().cast()) }
    }

    /// The descriptor's 64 bytes.
    pub fn to_bytes(&self) -> [u8; 64] {
        // SAFETY: as above, in the other direction; [u8; 64] has no alignment requirement.
        unsafe { core::mem::transmute_copy(self) }
    }
}
