//! What a debugger makes the waves do: the trap-mask override and launch mode
//! (`kfd_dbg_trap_set_wave_launch_override`, `kfd_dbg_trap_set_wave_launch_mode`), the
//! address watches (`kfd_dbg_trap_set_dev_address_watch`, `..._clear_dev_address_watch`) and
//! the precise-memory flag (`kfd_dbg_trap_set_flags`), with the rules and errnos of
//! `kfd_debug.c` and the per-GPU limits of the kgd functions behind them
//! (`kgd_aldebaran_validate_trap_override_request`, `kgd_gfx_v9_4_3_...`, `kgd_gfx_v11_...`).
//!
//! The dispatches started afterwards see them through [`super::DebugState::wave_debug`]: the
//! override is applied as the SPI applies it at wave launch, the watches as TCP checks every
//! vector-memory access (`kfd_emu_isa::WaveDebug`). One difference from the hardware: a watch
//! set or cleared while a dispatch runs changes nothing for that dispatch (the TCP's registers
//! take effect at once), so a debugger that arms a watch on a running kernel misses its hits
//! here until the next dispatch.

use kfd_emu_isa::{AddressWatch, WatchMode};
use kfd_sys::bindings::*;
use kfd_sys::Errno;
use std::collections::BTreeMap;

/// `MAX_WATCH_ADDRESSES`.
pub(super) const WATCH_IDS: usize = 4;

/// The wave controls of one debug session (reset when the debugger detaches, as
/// `kfd_dbg_trap_deactivate` resets them).
#[derive(Default)]
pub(super) struct WaveControls {
    /// The trap-mask override (`KFD_DBG_TRAP_MASK_*`).
    pub(super) trap_mask: u32,
    /// `KFD_DBG_TRAP_WAVE_LAUNCH_MODE_*`.
    pub(super) launch_mode: u32,
    /// `KFD_DBG_TRAP_FLAG_*`.
    pub(super) flags: u32,
    /// The address watches of each GPU, by watch id.
    pub(super) watches: BTreeMap<u32, [Option<AddressWatch>; WATCH_IDS]>,
}

/// The GFX IP a `gfx_target_version` belongs to, as the debugger code tells them apart.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum DebugIp {
    /// GFX9 before 9.4.2: one global trap mask for the whole GPU.
    Gfx9Global,
    /// 9.4.2 (MI200): per-VMID controls, no wave start/end traps.
    Gc942,
    /// 9.4.3 (MI300): per-VMID controls with wave start/end traps; 128-byte watch granule.
    Gc943,
    /// GFX11.
    Gfx11,
}

impl DebugIp {
    pub(super) fn of(gfx_target_version: u32) -> DebugIp {
        match gfx_target_version {
            v if v >= 110000 => DebugIp::Gfx11,
            v if v >= 90400 => DebugIp::Gc943,
            90010 => DebugIp::Gc942,
            _ => DebugIp::Gfx9Global,
        }
    }

    /// The trap-mask bits the override may set (`validate_trap_override_request`), or the
    /// errno the mode gets.
    fn supported_traps(self, mode: u32) -> Result<u32, Errno> {
        const ALL_EXCEPTIONS: u32 = 0x1FF;
        match self {
            DebugIp::Gfx9Global => {
                if mode != KFD_DBG_TRAP_OVERRIDE_OR {
                    return Err(Errno::EINVAL);
                }
                Ok(KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH as u32)
            }
            _ if mode != KFD_DBG_TRAP_OVERRIDE_OR && mode != KFD_DBG_TRAP_OVERRIDE_REPLACE => {
                Err(Errno::EPERM)
            }
            DebugIp::Gc943 => Ok(ALL_EXCEPTIONS
                | KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_START as u32
                | KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_END as u32),
            DebugIp::Gc942 | DebugIp::Gfx11 => Ok(ALL_EXCEPTIONS),
        }
    }

    /// The lowest and highest address bits a watch mask programs (`debug_prop`'s
    /// `HSA_DBG_WATCH_ADDR_MASK_LO/HI_BIT`): below the low bit nothing is compared, above the
    /// high one everything.
    pub(super) fn watch_mask_bits(self) -> (u32, u32) {
        match self {
            DebugIp::Gfx9Global | DebugIp::Gc942 => (6, 29),
            DebugIp::Gc943 => (7, 30),
            DebugIp::Gfx11 => (7, 29),
        }
    }

    /// Whether `KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP` is offered (the topology's
    /// `HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED`, which current kernels give
    /// 9.4.2 and 9.4.3 and, since the 2025 fix, no longer GFX11).
    pub(super) fn precise_memory(self) -> bool {
        matches!(self, DebugIp::Gc942 | DebugIp::Gc943)
    }
}

/// `SET_WAVE_LAUNCH_OVERRIDE` over the process's GPUs: validated on every one first (the
/// supported mask is what all of them support), then `new = (bits & request) | (prev &
/// !request)`. Returns the previous mask; `supported` is set even when the request fails, as
/// the ioctl copies its arguments out whatever the result.
pub(super) fn set_override(
    c: &mut WaveControls,
    ips: &[DebugIp],
    mode: u32,
    bits: u32,
    request: u32,
    supported: &mut u32,
) -> Result<u32, Errno> {
    *supported = u32::MAX;
    for ip in ips {
        *supported &= ip.supported_traps(mode)?;
    }
    if request & !*supported != 0 {
        return Err(Errno::EACCES);
    }
    let prev = c.trap_mask;
    c.trap_mask = (bits & request) | (prev & !request);
    Ok(prev)
}

/// `SET_WAVE_LAUNCH_MODE`: normal, halt or debug (single step).
pub(super) fn set_launch_mode(c: &mut WaveControls, mode: u32) -> Result<(), Errno> {
    if ![
        KFD_DBG_TRAP_WAVE_LAUNCH_MODE_NORMAL,
        KFD_DBG_TRAP_WAVE_LAUNCH_MODE_HALT,
        KFD_DBG_TRAP_WAVE_LAUNCH_MODE_DEBUG,
    ]
    .contains(&mode)
    {
        return Err(Errno::EINVAL);
    }
    if mode != KFD_DBG_TRAP_WAVE_LAUNCH_MODE_NORMAL {
        log::warn!(
            "kfd-emu: wave launch mode {mode} is taken but not modelled: waves still start \
             running"
        );
    }
    c.launch_mode = mode;
    Ok(())
}

/// `SET_NODE_ADDRESS_WATCH` on `gpu`: the lowest free watch id (`kfd_dbg_get_dev_watch_id`),
/// programmed as the kgd `set_address_watch` does (the mask shifted into the `MASK` field's
/// bits, the address's low bits dropped). KFD checks neither mode, mask nor address: a mode
/// the hardware has no meaning for is refused here with EINVAL.
pub(super) fn set_watch(
    c: &mut WaveControls,
    gpu: u32,
    ip: DebugIp,
    address: u64,
    mode: u32,
    mask: u32,
) -> Result<u32, Errno> {
    let mode = match mode {
        KFD_DBG_TRAP_ADDRESS_WATCH_MODE_READ => WatchMode::Read,
        KFD_DBG_TRAP_ADDRESS_WATCH_MODE_NONREAD => WatchMode::NonRead,
        KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ATOMIC => WatchMode::Atomic,
        KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ALL => WatchMode::All,
        _ => return Err(Errno::EINVAL),
    };
    let slots = c.watches.entry(gpu).or_default();
    let id = slots
        .iter()
        .position(Option::is_none)
        .ok_or(Errno::ENOMEM)?;
    let (lo, hi) = ip.watch_mask_bits();
    // TCP_WATCH_ADDR_H/L hold bits 47..lo; bits above `hi` are always compared, bits lo..=hi
    // where the mask has a one.
    let va_bits: u64 = (1 << 48) - 1;
    let programmable = ((1u64 << (hi + 1)) - 1) & !((1u64 << lo) - 1);
    let always = va_bits & !((1u64 << (hi + 1)) - 1);
    slots[id] = Some(AddressWatch {
        address: address & va_bits & !((1u64 << lo) - 1),
        mask: always | (u64::from(mask) & programmable),
        mode,
    });
    Ok(id as u32)
}

/// `CLEAR_NODE_ADDRESS_WATCH`: EINVAL unless this process owns the id on `gpu`.
pub(super) fn clear_watch(c: &mut WaveControls, gpu: u32, id: u32) -> Result<(), Errno> {
    let slot = c
        .watches
        .get_mut(&gpu)
        .and_then(|s| s.get_mut(id as usize))
        .filter(|s| s.is_some())
        .ok_or(Errno::EINVAL)?;
    *slot = None;
    Ok(())
}

/// `SET_FLAGS`: the new flags if every GPU offers them (EACCES otherwise); returns the
/// previous flags either way, as `*flags = prev` does.
pub(super) fn set_flags(
    c: &mut WaveControls,
    ips: &[DebugIp],
    flags: u32,
) -> (u32, Result<(), Errno>) {
    let prev = c.flags;
    if flags & KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP != 0 && !ips.iter().all(|ip| ip.precise_memory()) {
        return (prev, Err(Errno::EACCES));
    }
    if flags & !KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP != 0 {
        // SINGLE_ALU_OP needs HSA_CAP_TRAP_DEBUG_PRECISE_ALU_OPERATIONS_SUPPORTED (GFX12).
        return (prev, Err(Errno::EACCES));
    }
    c.flags = flags;
    (prev, Ok(()))
}
