//! The part of the amdgpu DRM ABI (`include/uapi/drm/amdgpu_drm.h`) kfdrt uses on a GPU's render
//! node: `DRM_IOCTL_AMDGPU_INFO` queries the KFD topology does not answer.

use crate::IoctlRequest;

/// `struct drm_amdgpu_info`: a query and where its answer goes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DrmAmdgpuInfo {
    /// User pointer the answer is written to.
    pub return_pointer: u64,
    /// Bytes the kernel may write there.
    pub return_size: u32,
    /// `AMDGPU_INFO_*`.
    pub query: u32,
    /// Query arguments; for `READ_MMR_REG`: dword offset, count, instance, flags.
    pub args: [u32; 4],
}

/// `struct drm_amdgpu_info_vram_gtt`, the answer to [`AMDGPU_INFO_VRAM_GTT`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DrmAmdgpuInfoVramGtt {
    /// VRAM bytes (less what the kernel reserves).
    pub vram_size: u64,
    /// VRAM bytes the CPU can map through the BAR.
    pub vram_cpu_accessible_size: u64,
    /// GTT bytes.
    pub gtt_size: u64,
}

const _: () = assert!(std::mem::size_of::<DrmAmdgpuInfo>() == 32);
const _: () = assert!(std::mem::size_of::<DrmAmdgpuInfoVramGtt>() == 24);

/// `DRM_IOCTL_AMDGPU_INFO`: `DRM_IOW(DRM_COMMAND_BASE + DRM_AMDGPU_INFO, struct drm_amdgpu_info)`.
pub const DRM_IOCTL_AMDGPU_INFO: IoctlRequest =
    IoctlRequest::iow(b'd', 0x40 + 0x05, std::mem::size_of::<DrmAmdgpuInfo>());

/// `AMDGPU_INFO_ACCEL_WORKING`.
pub const AMDGPU_INFO_ACCEL_WORKING: u32 = 0x00;
/// `AMDGPU_INFO_VRAM_GTT`: [`DrmAmdgpuInfoVramGtt`].
pub const AMDGPU_INFO_VRAM_GTT: u32 = 0x14;
/// `AMDGPU_INFO_READ_MMR_REG`.
pub const AMDGPU_INFO_READ_MMR_REG: u32 = 0x15;
/// `AMDGPU_INFO_DEV_INFO`.
pub const AMDGPU_INFO_DEV_INFO: u32 = 0x16;
/// `AMDGPU_INFO_MEMORY`: `struct drm_amdgpu_memory_info` (three heap infos).
pub const AMDGPU_INFO_MEMORY: u32 = 0x19;
