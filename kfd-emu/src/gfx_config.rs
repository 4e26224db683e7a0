//! The graphics block's address configuration as amdgpu reports it, shared by the render node's
//! register reads ([`crate::drm`]) and KFD's `GET_TILE_CONFIG`.
//!
//! On gfx9 and later amdgpu fills only `gb_addr_config` of its tiling state: the tile-mode (32)
//! and macro-tile-mode (16) tables, `num_banks` and `num_ranks` are gfx6-gfx8 notions that
//! `gfx_v9_0` never sets, so KFD hands out zeros for them (`amdgpu_amdkfd_get_tile_config`).

use crate::Emulator;
use kfd_sys::bindings::kfd_ioctl_get_tile_config_args;
use kfd_sys::Errno;

/// `GB_ADDR_CONFIG` of an MI210: gfx 9.4.2's golden setting (`golden_settings_gc_9_4_2_alde`,
/// 0x2a114042 under mask 0xffff77ff), which `gfx_v9_0_gpu_early_init` keeps when it forces its
/// own bits (`&= ~0xf3e777ff; |= 0x22014042`) for 9.4.2. The gfx942 and gfx1100 presets report
/// the same value (amdgpu reads theirs from the hardware; no public source gives it).
pub(crate) const GB_ADDR_CONFIG_VALUE: u32 = 0x2a11_4042;

/// Entries of amdgpu's `tile_mode_array` and `macrotile_mode_array`: the most `GET_TILE_CONFIG`
/// copies out.
const TILE_CONFIGS: u32 = 32;
const MACRO_TILE_CONFIGS: u32 = 16;

/// Writes `count` zero words at user pointer `ptr`, as `copy_to_user` of the all-zero table.
///
/// # Safety
/// `ptr` must be null or valid for `count` `u32` writes.
unsafe fn copy_zeros(ptr: u64, count: u32) -> Result<(), Errno> {
    if count == 0 {
        return Ok(());
    }
    if ptr == 0 {
        return Err(Errno::EFAULT);
    }
    // SAFETY: the caller's contract: `ptr` is valid for `count` words.
    unsafe { std::ptr::write_bytes(ptr as *mut u32, 0, count as usize) };
    Ok(())
}

/// `AMDKFD_IOC_GET_TILE_CONFIG` (`kfd_ioctl_get_tile_config`): EINVAL for a GPU the process
/// does not have; the counts are clamped to the tables' sizes and written back, and a table that
/// cannot be copied zeroes its count and fails with EFAULT.
///
/// # Safety
/// The two table pointers must be null or valid for their (clamped) counts, as for the ioctl.
pub(crate) unsafe fn get_tile_config(
    emu: &Emulator,
    a: &mut kfd_ioctl_get_tile_config_args,
) -> Result<(), Errno> {
    emu.gpu(a.gpu_id).ok_or(Errno::EINVAL)?;
    a.gb_addr_config = GB_ADDR_CONFIG_VALUE;
    a.num_banks = 0;
    a.num_ranks = 0;
    a.num_tile_configs = a.num_tile_configs.min(TILE_CONFIGS);
    // SAFETY: forwarded from the caller's contract.
    if let Err(e) = unsafe { copy_zeros(a.tile_config_ptr, a.num_tile_configs) } {
        a.num_tile_configs = 0;
        return Err(e);
    }
    a.num_macro_tile_configs = a.num_macro_tile_configs.min(MACRO_TILE_CONFIGS);
    // SAFETY: forwarded from the caller's contract.
    if let Err(e) = unsafe { copy_zeros(a.macro_tile_config_ptr, a.num_macro_tile_configs) } {
        a.num_macro_tile_configs = 0;
        return Err(e);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{EmuConfig, Emulator, Preset};
    use kfd_sys::bindings::kfd_ioctl_get_tile_config_args;
    use kfd_sys::{DriverExt, Errno};

    fn emulator() -> std::sync::Arc<Emulator> {
        Emulator::new(EmuConfig::new(Preset::Gfx90a, 1)).unwrap()
    }

    fn tile_config(emu: &Emulator, a: &mut kfd_ioctl_get_tile_config_args) -> Result<i32, Errno> {
        // SAFETY: the table pointers in `a` are null or point to live arrays of their counts.
        unsafe { emu.kfd_ioctl_unchecked(a) }
    }

    #[test]
    fn tile_config_is_gfx9s_address_config_and_empty_tables() {
        let emu = emulator();
        let mut tiles = [0xFFFF_FFFFu32; 40];
        let mut macro_tiles = [0xFFFF_FFFFu32; 20];
        let mut a = kfd_ioctl_get_tile_config_args {
            tile_config_ptr: tiles.as_mut_ptr() as u64,
            macro_tile_config_ptr: macro_tiles.as_mut_ptr() as u64,
            num_tile_configs: 40,
            num_macro_tile_configs: 20,
            gpu_id: emu.gpu_ids()[0],
            num_banks: 7,
            num_ranks: 7,
            ..Default::default()
        };
        assert_eq!(tile_config(&emu, &mut a), Ok(0));
        assert_eq!(a.gb_addr_config, 0x2a11_4042);
        assert_eq!((a.num_banks, a.num_ranks), (0, 0));
        // Counts clamped to amdgpu's table sizes, the tables zeroed up to them and no further.
        assert_eq!((a.num_tile_configs, a.num_macro_tile_configs), (32, 16));
        assert!(tiles[..32].iter().all(|&t| t == 0));
        assert!(tiles[32..].iter().all(|&t| t == 0xFFFF_FFFF));
        assert!(macro_tiles[..16].iter().all(|&t| t == 0));
        assert!(macro_tiles[16..].iter().all(|&t| t == 0xFFFF_FFFF));
    }

    #[test]
    fn tile_config_refuses_unknown_gpus_and_unwritable_tables() {
        let emu = emulator();
        let mut a = kfd_ioctl_get_tile_config_args {
            gpu_id: 0x1234,
            ..Default::default()
        };
        assert_eq!(tile_config(&emu, &mut a), Err(Errno::EINVAL));
        // No tables asked for: nothing to copy, the scalars still come back.
        a.gpu_id = emu.gpu_ids()[0];
        assert_eq!(tile_config(&emu, &mut a), Ok(0));
        assert_eq!(a.gb_addr_config, 0x2a11_4042);
        // A count without a table: EFAULT, with that count zeroed.
        let mut tiles = [0u32; 32];
        a.tile_config_ptr = tiles.as_mut_ptr() as u64;
        a.num_tile_configs = 32;
        a.num_macro_tile_configs = 4;
        assert_eq!(tile_config(&emu, &mut a), Err(Errno::EFAULT));
        assert_eq!((a.num_tile_configs, a.num_macro_tile_configs), (32, 0));
    }
}
