//! Sizes of a compute queue's context save/restore (CWSR) area, as KFD expects them.
//!
//! Linux 6.12+ rejects a queue whose CWSR sizes differ from its own computation, so kfdrt uses
//! the same formula as libhsakmt (see `shared/reference/KFD.md`, "Context save/restore").

use crate::topology::GpuInfo;

const PAGE: u64 = 4096;

fn page_align(v: u64) -> u64 {
    v.div_ceil(PAGE) * PAGE
}

/// CWSR sizes for one queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CwsrSizes {
    /// `ctx_save_restore_size` passed to `CREATE_QUEUE` (per XCC): control stack + work-group data.
    pub ctx_save_restore_size: u32,
    /// `ctl_stack_size` passed to `CREATE_QUEUE`.
    pub ctl_stack_size: u32,
    /// Bytes to allocate: (ctx_save_restore_size + debug area) for every XCC.
    pub total_bytes: u64,
}

/// Computes the CWSR sizes for `gpu`.
pub fn cwsr_sizes(gpu: &GpuInfo) -> CwsrSizes {
    let major = gpu.gfx_target_version / 10000;
    let gfx10_plus = major >= 10;
    let num_xcc = u64::from(gpu.num_xcc.max(1));
    let cu_num = u64::from(gpu.compute_units) / num_xcc;
    let props = &gpu.properties;
    let wave_num = if gfx10_plus {
        cu_num * 32
    } else {
        let arrays = props.get_or_zero("array_count");
        let per_engine = props.get_or_zero("simd_arrays_per_engine").max(1);
        (cu_num * 40).min(arrays / per_engine * 512)
    };
    let mut ctl_stack = page_align(wave_num * if gfx10_plus { 12 } else { 8 } + 8 + 40);
    if major == 10 {
        ctl_stack = ctl_stack.min(0x7000);
    }
    let vgpr: u64 = match gpu.gfx_target_version {
        90008 | 90010 | 90400..=90499 => 0x80000,
        110000 | 110001 | 110501 | 120000 | 120001 => 0x60000,
        _ => 0x40000,
    };
    let wg_data = page_align(cu_num * (vgpr + 0x4000 + 0x10000 + 0x1000));
    let ctx = ctl_stack + wg_data;
    let debug = (wave_num * 32).div_ceil(64) * 64;
    CwsrSizes {
        ctx_save_restore_size: u32::try_from(ctx).unwrap_or(u32::MAX),
        ctl_stack_size: u32::try_from(ctl_stack).unwrap_or(u32::MAX),
        total_bytes: (ctx + debug) * num_xcc,
    }
}
