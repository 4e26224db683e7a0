//! What the debugger learns of the GPUs: the topology bits that offer it, and the device
//! snapshots.

use super::wave_controls::DebugIp;
use crate::Emulator;
use kfd_sys::bindings::*;
use kfd_sys::Errno;

/// The debugger's topology bits of a GPU: its `capability` bits and its `debug_prop`, as
/// `kfd_topology_set_capabilities` and `kfd_topology_set_dbg_firmware_support` set them (and
/// `node_show` adds the watch-point count: 4 watches on every ASIC).
///
/// `HSA_DBG_DISPATCH_INFO_ALWAYS_VALID`, which 9.4.3 and newer GFX11 firmware report, is left
/// out: kfd-emu does not load the dispatch information into the trap temporaries at launch.
pub(crate) fn topology_bits(p: &crate::config::GpuParams) -> (u64, u64) {
    const WATCH_POINTS: u64 = 0x80 | (2 << 8);
    const DOORBELL_TYPE_2_0: u64 = 2 << 12;
    const TRAP_DEBUG: u64 = 0x8000 | 0x1_0000 | 0x2_0000;
    const PRECISE_MEMORY: u64 = 0x4_0000;
    const FIRMWARE_SUPPORTED: u64 = 0x2000_0000;
    let ip = DebugIp::of(p.gfx_target_version);
    let mut cap = WATCH_POINTS | DOORBELL_TYPE_2_0 | TRAP_DEBUG;
    if ip.precise_memory() {
        cap |= PRECISE_MEMORY;
    }
    let firmware = match ip {
        // 9.4.2 needs MEC firmware 51 or newer; 9.4.3 and GFX11 with current MES are taken.
        DebugIp::Gc942 => p.fw_version >= 51,
        DebugIp::Gc943 | DebugIp::Gfx11 => true,
        // 9.0.x-9.4.1 need 459 or newer (9.0.1: 459 + 32768).
        DebugIp::Gfx9Global => p.fw_version >= 459,
    };
    if firmware {
        cap |= FIRMWARE_SUPPORTED;
    }
    let (lo, hi) = ip.watch_mask_bits();
    (cap, u64::from(lo | hi << 4))
}

/// The debugger IP of each GPU of the process.
pub(super) fn debug_ips(emu: &Emulator) -> Vec<DebugIp> {
    emu.gpus
        .iter()
        .map(|g| DebugIp::of(g.params.gfx_target_version))
        .collect()
}

/// The debugger IP of GPU `gpu_id`: ENODEV for an id the process has no GPU with
/// (`kfd_process_device_data_by_id` finding none).
pub(super) fn gpu_ip(emu: &Emulator, gpu_id: u32) -> Result<DebugIp, Errno> {
    emu.gpus
        .iter()
        .find(|g| g.gpu_id == gpu_id)
        .map(|g| DebugIp::of(g.params.gfx_target_version))
        .ok_or(Errno::ENODEV)
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

pub(super) fn device_snapshots(emu: &Emulator) -> Vec<kfd_dbg_device_info_entry> {
    emu.gpus
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let node = i + 1;
            let prop = |key: &str| emu.topology.node_property(node, key).unwrap_or(0);
            let p = &g.params;
            let ap = crate::device::process_apertures(g.gpu_id);
            kfd_dbg_device_info_entry {
                exception_status: 0,
                lds_base: ap.lds_base,
                lds_limit: ap.lds_limit,
                scratch_base: ap.scratch_base,
                scratch_limit: ap.scratch_limit,
                gpuvm_base: ap.gpuvm_base,
                gpuvm_limit: ap.gpuvm_limit,
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

/// Hands a snapshot to the caller as `GET_QUEUE_SNAPSHOT` and `GET_DEVICE_SNAPSHOT` do: up to
/// `*count` entries into `buf` at the caller's stride, then the number of entries there are and
/// the driver's entry size.
///
/// # Safety
/// `buf` must be valid for `*count * *entry_size` bytes.
pub(super) unsafe fn snapshot_out<T>(
    entries: &[T],
    buf: u64,
    count: &mut u32,
    entry_size: &mut u32,
) -> Result<i32, Errno> {
    // SAFETY: forwarded from the caller's contract on the snapshot buffer.
    unsafe { copy_entries(entries, buf, *count, *entry_size)? };
    *count = entries.len() as u32;
    *entry_size = std::mem::size_of::<T>() as u32;
    Ok(0)
}

/// The exceptions raised in `status`, which then loses those in `clear` (what every query and
/// snapshot does with the status it reports).
pub(super) fn report(status: &mut u64, clear: u64) -> u64 {
    let raised = *status;
    *status &= !clear;
    raised
}
