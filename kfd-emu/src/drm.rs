//! The DRM render node of each emulated GPU: the few amdgpu ioctls user space makes on it before
//! it hands the node to KFD.
//!
//! libdrm's `amdgpu_device_initialize` (which libhsakmt calls for the marketing name) asks
//! `DRM_IOCTL_VERSION` for the driver name and major version 3, then `DRM_IOCTL_AMDGPU_INFO` for
//! `DEV_INFO` and a handful of registers (`READ_MMR_REG`). Layouts are those of `drm.h` and
//! `amdgpu_drm.h` (uapi); the sizes are checked at compile time. Anything else answers EINVAL,
//! as `drm_ioctl` does for a command it does not know and `amdgpu_info_ioctl` for an unknown query.

use crate::device::GpuState;
pub use kfd_sys::drm::{
    DrmAmdgpuInfo, AMDGPU_INFO_ACCEL_WORKING, AMDGPU_INFO_DEV_INFO, AMDGPU_INFO_MEMORY,
    AMDGPU_INFO_READ_MMR_REG, AMDGPU_INFO_VRAM_GTT, DRM_IOCTL_AMDGPU_INFO,
};
use kfd_sys::{Errno, IoctlRequest};
use std::ffi::c_void;

/// `struct drm_version` (uapi `drm.h`).
#[repr(C)]
#[derive(Debug)]
pub struct DrmVersion {
    /// Driver major version (amdgpu: 3).
    pub version_major: i32,
    /// Driver minor version.
    pub version_minor: i32,
    /// Driver patch level.
    pub version_patchlevel: i32,
    /// In: size of `name`; out: length of the name.
    pub name_len: usize,
    /// Buffer for the driver name.
    pub name: *mut u8,
    /// In: size of `date`; out: length of the date.
    pub date_len: usize,
    /// Buffer for the driver date.
    pub date: *mut u8,
    /// In: size of `desc`; out: length of the description.
    pub desc_len: usize,
    /// Buffer for the description.
    pub desc: *mut u8,
}

/// `struct drm_amdgpu_info_device` (uapi `amdgpu_drm.h`), the answer to `AMDGPU_INFO_DEV_INFO`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)] // field names are the uapi's
pub struct DrmAmdgpuInfoDevice {
    pub device_id: u32,
    pub chip_rev: u32,
    pub external_rev: u32,
    pub pci_rev: u32,
    pub family: u32,
    pub num_shader_engines: u32,
    pub num_shader_arrays_per_engine: u32,
    pub gpu_counter_freq: u32,
    pub max_engine_clock: u64,
    pub max_memory_clock: u64,
    pub cu_active_number: u32,
    pub cu_ao_mask: u32,
    pub cu_bitmap: [[u32; 4]; 4],
    pub enabled_rb_pipes_mask: u32,
    pub num_rb_pipes: u32,
    pub num_hw_gfx_contexts: u32,
    pub _pad: u32,
    pub ids_flags: u64,
    pub virtual_address_offset: u64,
    pub virtual_address_max: u64,
    pub virtual_address_alignment: u32,
    pub pte_fragment_size: u32,
    pub gart_page_size: u32,
    pub ce_ram_size: u32,
    pub vram_type: u32,
    pub vram_bit_width: u32,
    pub vce_harvest_config: u32,
    pub gc_double_offchip_lds_buf: u32,
    pub prim_buf_gpu_addr: u64,
    pub pos_buf_gpu_addr: u64,
    pub cntl_sb_buf_gpu_addr: u64,
    pub param_buf_gpu_addr: u64,
    pub prim_buf_size: u32,
    pub pos_buf_size: u32,
    pub cntl_sb_buf_size: u32,
    pub param_buf_size: u32,
    pub wave_front_size: u32,
    pub num_shader_visible_vgprs: u32,
    pub num_cu_per_sh: u32,
    pub num_tcc_blocks: u32,
    pub gs_vgt_table_depth: u32,
    pub gs_prim_buffer_depth: u32,
    pub max_gs_waves_per_vgt: u32,
    pub _pad1: u32,
    pub cu_ao_bitmap: [[u32; 4]; 4],
    pub high_va_offset: u64,
    pub high_va_max: u64,
    pub pa_sc_tile_steering_override: u32,
    /// The C struct's implicit padding, explicit so every byte of the answer is initialised.
    pub _pad2: u32,
    pub tcc_disabled_mask: u64,
}

const _: () = assert!(std::mem::size_of::<DrmVersion>() == 64);
const _: () = assert!(std::mem::size_of::<DrmAmdgpuInfoDevice>() == 368);
const _: () = assert!(std::mem::offset_of!(DrmAmdgpuInfoDevice, high_va_offset) == 336);
const _: () = assert!(std::mem::offset_of!(DrmAmdgpuInfoDevice, tcc_disabled_mask) == 360);

/// `DRM_IOCTL_VERSION`: `DRM_IOWR(0x00, struct drm_version)`.
pub const DRM_IOCTL_VERSION: IoctlRequest =
    IoctlRequest::iowr(b'd', 0x00, std::mem::size_of::<DrmVersion>());
/// amdgpu's most registers one `READ_MMR_REG` query may read.
const MAX_MMR_REGS: u32 = 128;
/// `mmGB_ADDR_CONFIG` on gfx9-gfx11, the register libdrm decodes for compute parts.
const GB_ADDR_CONFIG: u32 = 0x263e;
/// Registers `READ_MMR_REG` may read (a subset of amdgpu's allow-lists, the ones libdrm's
/// `amdgpu_query_gpu_info_init` asks on gfx9+): GB_ADDR_CONFIG, GB_BACKEND_MAP (per shader
/// engine) and PA_SC_RASTER_CONFIG/_1. Others fail with EFAULT, as amdgpu's `unallowed offset`.
const READABLE_REGS: [u32; 4] = [GB_ADDR_CONFIG, 0x263d, 0xa0d4, 0xa0d5];

/// Driver identity answered by `DRM_IOCTL_VERSION`.
const DRIVER_NAME: &[u8] = b"amdgpu";
const DRIVER_DATE: &[u8] = b"20150101";
const DRIVER_DESC: &[u8] = b"AMD GPU (kfd-emu)";

/// Copies `src` into a user buffer of `cap` bytes as the DRM core does (truncating), and returns
/// the full length.
///
/// # Safety
/// `dst` must be null or valid for `cap` bytes.
unsafe fn copy_string(dst: *mut u8, cap: usize, src: &[u8]) -> usize {
    if !dst.is_null() && cap > 0 {
        let n = cap.min(src.len());
        // SAFETY: `dst` is valid for `cap >= n` bytes (the caller's contract).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, n) };
    }
    src.len()
}

/// amdgpu's `family` for a `gfx_target_version`.
fn family(gfx_target_version: u32) -> u32 {
    match gfx_target_version / 10000 {
        9 => 141,  // AMDGPU_FAMILY_AI
        10 => 143, // AMDGPU_FAMILY_NV
        _ => 145,  // AMDGPU_FAMILY_GC_11_0_0
    }
}

fn device_info(gpu: &GpuState) -> DrmAmdgpuInfoDevice {
    let p = &gpu.params;
    let engines = (p.array_count / p.simd_arrays_per_engine.max(1)).max(1);
    let mut cu_bitmap = [[0u32; 4]; 4];
    for row in cu_bitmap.iter_mut().take(engines.min(4) as usize) {
        for sh in row
            .iter_mut()
            .take(p.simd_arrays_per_engine.min(4) as usize)
        {
            *sh = (1u32 << p.cu_per_simd_array.min(31)) - 1;
        }
    }
    DrmAmdgpuInfoDevice {
        device_id: p.device_id,
        pci_rev: p.pci_revision,
        family: family(p.gfx_target_version),
        num_shader_engines: engines,
        num_shader_arrays_per_engine: p.simd_arrays_per_engine,
        gpu_counter_freq: (p.gpu_clock_hz / 1000) as u32,
        max_engine_clock: u64::from(p.max_engine_clk_mhz) * 1000,
        max_memory_clock: 1_600_000,
        cu_active_number: p.compute_units,
        cu_ao_mask: 0,
        cu_bitmap,
        num_hw_gfx_contexts: 8,
        // The split of the GPU's own (non-KFD) VA space that libdrm's VA manager tracks.
        virtual_address_offset: 0x20_0000,
        virtual_address_max: 0x8000_0000_0000,
        virtual_address_alignment: 4096,
        pte_fragment_size: 2 << 20,
        gart_page_size: 4096,
        vram_type: 9, // AMDGPU_VRAM_TYPE_HBM
        vram_bit_width: 4096,
        wave_front_size: p.wave_size,
        num_shader_visible_vgprs: 512,
        num_cu_per_sh: p.cu_per_simd_array,
        num_tcc_blocks: 16,
        high_va_offset: 0xFFFF_8000_0000_0000,
        high_va_max: 0xFFFF_FFFF_FFFF_0000,
        ..Default::default()
    }
}

/// `struct drm_amdgpu_heap_info`, four of whose fields `AMDGPU_INFO_MEMORY` gives per heap.
fn heap_info(total: u64, used: u64) -> [u64; 4] {
    // total_heap_size, usable_heap_size, heap_usage, max_allocation
    [total, total, used, total.saturating_sub(used)]
}

/// Handles an ioctl on `gpu`'s render node.
///
/// # Safety
/// `arg` must be valid for the request's argument, and the user pointers inside it for what the
/// request does with them (as for `ioctl(2)` on a real render node).
pub(crate) unsafe fn dispatch(
    gpu: &GpuState,
    gtt_bytes: u64,
    request: IoctlRequest,
    arg: *mut c_void,
) -> Result<(), Errno> {
    if request.ty() != b'd' {
        return Err(Errno::ENOTTY);
    }
    if arg.is_null() {
        return Err(Errno::EFAULT);
    }
    if request == DRM_IOCTL_VERSION {
        // SAFETY: the request matched `struct drm_version`; `arg` is valid for it.
        let v = unsafe { &mut *(arg as *mut DrmVersion) };
        v.version_major = 3;
        v.version_minor = 42;
        v.version_patchlevel = 0;
        // SAFETY: each buffer is valid for its given length (the caller's contract).
        unsafe {
            v.name_len = copy_string(v.name, v.name_len, DRIVER_NAME);
            v.date_len = copy_string(v.date, v.date_len, DRIVER_DATE);
            v.desc_len = copy_string(v.desc, v.desc_len, DRIVER_DESC);
        }
        return Ok(());
    }
    if request == DRM_IOCTL_AMDGPU_INFO {
        // SAFETY: the request matched `struct drm_amdgpu_info`.
        let q = unsafe { *(arg as *const DrmAmdgpuInfo) };
        // SAFETY: forwarded from the caller's contract on the return buffer.
        return unsafe { info(gpu, gtt_bytes, &q) };
    }
    log::warn!(
        "kfd-emu: unsupported DRM ioctl {:#x} on render node {}",
        request.raw(),
        gpu.render_minor
    );
    Err(Errno::EINVAL)
}

/// # Safety
/// `q.return_pointer` must be valid for `q.return_size` bytes.
unsafe fn info(gpu: &GpuState, gtt_bytes: u64, q: &DrmAmdgpuInfo) -> Result<(), Errno> {
    log::trace!(
        "kfd-emu: AMDGPU_INFO query {:#x} (args {:x?}) on render node {}",
        q.query,
        q.args,
        gpu.render_minor
    );
    let out = q.return_pointer as *mut u8;
    if out.is_null() || q.return_size == 0 {
        return Err(Errno::EINVAL);
    }
    let write = |bytes: &[u8]| {
        let n = bytes.len().min(q.return_size as usize);
        // SAFETY: `out` is valid for `return_size >= n` bytes (the caller's contract).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out, n) };
    };
    match q.query {
        AMDGPU_INFO_ACCEL_WORKING => {
            write(&1u32.to_ne_bytes());
            Ok(())
        }
        AMDGPU_INFO_DEV_INFO => {
            let d = device_info(gpu);
            // SAFETY: `DrmAmdgpuInfoDevice` is plain old data whose every byte is a field (its
            // one padding hole is the explicit `_pad2`), so all of it is initialised.
            let bytes = unsafe {
                std::slice::from_raw_parts(
                    (&d as *const DrmAmdgpuInfoDevice).cast::<u8>(),
                    std::mem::size_of::<DrmAmdgpuInfoDevice>(),
                )
            };
            write(bytes);
            Ok(())
        }
        AMDGPU_INFO_VRAM_GTT => {
            // vram_size, vram_cpu_accessible_size, gtt_size: what a runtime reads to learn the
            // BAR of a small-BAR part (the topology only says "private").
            let p = &gpu.params;
            let v = [p.vram_bytes, p.host_visible_vram_bytes, gtt_bytes];
            write(&v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>());
            Ok(())
        }
        AMDGPU_INFO_MEMORY => {
            let p = &gpu.params;
            let vram_used = gpu.vram_used.load(std::sync::atomic::Ordering::Acquire);
            let visible_used = gpu
                .visible_vram_used
                .load(std::sync::atomic::Ordering::Acquire);
            let heaps = [
                heap_info(p.vram_bytes, vram_used),
                heap_info(p.host_visible_vram_bytes, visible_used),
                heap_info(gtt_bytes, 0),
            ];
            write(
                &heaps
                    .iter()
                    .flatten()
                    .flat_map(|x| x.to_ne_bytes())
                    .collect::<Vec<u8>>(),
            );
            Ok(())
        }
        AMDGPU_INFO_READ_MMR_REG => {
            let [offset, count, _instance, _flags] = q.args;
            if count > MAX_MMR_REGS {
                return Err(Errno::EINVAL);
            }
            let mut regs = Vec::with_capacity(count as usize * 4);
            for r in (0..count).map(|i| offset.wrapping_add(i)) {
                if !READABLE_REGS.contains(&r) {
                    log::debug!("kfd-emu: READ_MMR_REG of unallowed offset {r:#x}");
                    return Err(Errno::EFAULT);
                }
                // GB_ADDR_CONFIG: 4 pipes, 256-byte interleave, as on the gfx9 data-centre
                // parts; the raster and backend registers read as zero (nothing harvested).
                let v: u32 = if r == GB_ADDR_CONFIG {
                    crate::gfx_config::GB_ADDR_CONFIG_VALUE
                } else {
                    0
                };
                regs.extend_from_slice(&v.to_ne_bytes());
            }
            // amdgpu copies min(return_size, count * 4) bytes.
            write(&regs);
            Ok(())
        }
        other => {
            log::warn!(
                "kfd-emu: unsupported AMDGPU_INFO query {other:#x} on render node {}",
                gpu.render_minor
            );
            Err(Errno::EINVAL)
        }
    }
}
