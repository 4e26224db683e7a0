//! The state a wave starts in, as the CP and SPI set it up from the kernel descriptor and the
//! dispatch (LLVM AMDGPUUsage, "Initial Kernel Execution State"): user SGPRs in the order of
//! their enable bits, then system SGPRs from `USER_SGPR_COUNT` on, work-item ids in v0 (packed
//! x|y<<10|z<<20 on gfx90a/gfx942, v0/v1/v2 before), EXEC covering the lanes that exist.

use super::wave::{Wave, LANES};
use crate::descriptor::UserSgpr;
use crate::dispatch::DispatchSetup;
use crate::error::WaveError;
use crate::memory::Memory;

/// `dword3` of the scratch buffer resource: DST_SEL xyzw, NUM_FORMAT UINT, DATA_FORMAT 32,
/// ELEMENT_SIZE 4 bytes, INDEX_STRIDE 64, ADD_TID_ENABLE (the layout ROCr gives GFX9 queues).
const SCRATCH_RSRC_DWORD3: u32 = 0x00EA_4FAC;
/// `dword1` bit 31: SWIZZLE_ENABLE.
const SWIZZLE_ENABLE: u32 = 1 << 31;

/// Where one work-group's waves start: its id, its size after clipping to the grid, and its
/// scratch slot's offset in the backing.
pub(crate) struct GroupStart {
    pub group_id: [u32; 3],
    /// Work-items in each dimension of this (possibly partial) work-group.
    pub size: [u32; 3],
    /// Byte offset of the group's first wave's scratch from the backing's base.
    pub scratch_offset: u64,
    /// Lanes per wave (32 for a GFX11 wave32 kernel, else 64).
    pub lanes: u32,
}

impl GroupStart {
    pub fn new(setup: &DispatchSetup, group_id: [u32; 3], slot: u32) -> GroupStart {
        let size = std::array::from_fn(|d| {
            let wg = setup.workgroup_size[d];
            let start = u64::from(group_id[d]) * u64::from(wg);
            (u64::from(setup.grid_size[d]).saturating_sub(start)).min(u64::from(wg)) as u32
        });
        GroupStart {
            group_id,
            size,
            scratch_offset: u64::from(slot).wrapping_mul(setup.scratch_per_slot()),
            lanes: setup.wave_lanes(),
        }
    }

    /// Work-items in the group.
    pub fn items(&self) -> u32 {
        self.size.iter().product()
    }

    /// Waves in the group.
    pub fn waves(&self) -> u32 {
        self.items().div_ceil(self.lanes)
    }
}

/// Sets `w` (a new wave or one a finished work-group gave back) up as wave `index` of the
/// group.
pub(crate) fn start_wave<M: Memory + ?Sized>(
    w: &mut Wave,
    setup: &DispatchSetup,
    group: &GroupStart,
    index: u32,
    mem: &M,
) -> Result<(), WaveError> {
    let d = &setup.descriptor;
    let target = setup.target;
    let wave32 = group.lanes == 32;
    // GFX10+ wave64 allocates VGPRs in granules of 4, not 8.
    let vgprs = if target.supports_wave32() && !wave32 {
        d.vgpr_count() / 2
    } else {
        d.vgpr_count()
    }
    .min(512);
    let accum = if target.unified_vgpr_file() {
        d.accum_offset().min(vgprs)
    } else {
        vgprs
    };
    w.reset(target, vgprs, accum, index);
    w.wave32 = wave32;
    w.pc = setup.entry();
    w.mode = mode_from_rsrc1(d.compute_pgm_rsrc1);
    let wave_scratch = setup.scratch.map_or(0, |s| {
        s.base
            .wrapping_add(group.scratch_offset)
            .wrapping_add(u64::from(index) * setup.scratch_per_wave())
    });
    w.scratch_base = wave_scratch;
    let wave_offset = wave_scratch.wrapping_sub(setup.scratch.map_or(0, |s| s.base));
    let scratch_base = setup.scratch.map_or(0, |s| s.base);

    // User SGPRs: as the registers hold them (PM4), or as the enable bits call for (AQL).
    let mut sgprs = SgprList::default();
    if let Some(user) = &setup.user_sgprs_override {
        sgprs.extend(user.iter().take(d.user_sgpr_count()).copied());
    }
    let from_descriptor = setup.user_sgprs_override.is_none();
    for u in UserSgpr::ORDER.into_iter().filter(|_| from_descriptor) {
        if !d.user_sgpr_enabled(u) {
            continue;
        }
        match u {
            UserSgpr::PrivateSegmentBuffer => match setup.scratch.and_then(|s| s.resource) {
                Some(resource) => sgprs.extend(resource),
                None => {
                    let size = setup.scratch.map_or(0, |s| s.size);
                    sgprs.extend([
                        scratch_base as u32,
                        ((scratch_base >> 32) as u32 & 0xFFFF) | SWIZZLE_ENABLE,
                        size.min(u64::from(u32::MAX)) as u32,
                        SCRATCH_RSRC_DWORD3,
                    ]);
                }
            },
            UserSgpr::DispatchPtr => push64(&mut sgprs, setup.dispatch_packet_address),
            UserSgpr::QueuePtr => push64(&mut sgprs, setup.queue_address),
            UserSgpr::KernargSegmentPtr => push64(&mut sgprs, setup.kernarg_address),
            UserSgpr::DispatchId => push64(&mut sgprs, setup.dispatch_id),
            UserSgpr::FlatScratchInit => push64(&mut sgprs, scratch_base),
            UserSgpr::PrivateSegmentSize => sgprs.push(setup.private_segment_size()),
        }
    }
    // Kernel arguments preloaded into the SGPRs that follow (gfx940+).
    let preload = if from_descriptor {
        usize::from(d.kernarg_preload & 0x7F)
    } else {
        0
    };
    let preload_offset = u64::from(d.kernarg_preload >> 7) * 4;
    for k in 0..preload {
        let va = setup.kernarg_address + preload_offset + 4 * k as u64;
        let v = mem.read_u32(va).map_err(|f| WaveError::MemoryFault {
            va: f.va,
            kind: f.kind,
            pc: w.pc,
        })?;
        sgprs.push(v);
    }
    for (r, v) in sgprs.values().iter().enumerate() {
        w.set_sgpr(r as u8, *v);
    }

    // System SGPRs, from USER_SGPR_COUNT on.
    let mut next = d.user_sgpr_count();
    let mut put = |w: &mut Wave, v: u32| {
        if next < 102 {
            w.set_sgpr(next as u8, v);
        }
        next += 1;
    };
    for (dim, on) in d.workgroup_id_enabled().into_iter().enumerate() {
        if on {
            put(w, group.group_id[dim]);
        }
    }
    if d.workgroup_info_enabled() {
        let first = u32::from(index == 0) << 31;
        put(w, first | (group.waves() & 0x3F));
    }
    if d.scratch_enabled() {
        put(w, wave_offset as u32);
    }
    if target.architected_flat_scratch() {
        w.set_sgpr64(102, wave_scratch);
    }
    if target.hardware_flat_scratch() {
        w.flat_scratch = wave_scratch;
    }

    // Work-item ids and EXEC.
    let items = group.items();
    let [sx, sy, _] = group.size;
    let dims = d.workitem_id_dims();
    let mut exec = 0u64;
    let (sx, sy) = (sx.max(1), sy.max(1));
    // The first lane's id, then one step per lane (x fastest), without a division per lane.
    let lanes = group.lanes as usize;
    let first = index * group.lanes;
    let (mut x, mut y, mut z) = (first % sx, (first / sx) % sy, first / (sx * sy));
    let whole_row = u64::from(first) + lanes as u64 <= u64::from(items)
        && u64::from(x) + lanes as u64 <= u64::from(sx);
    if whole_row && target.packed_work_item_ids() {
        // Every lane exists and only x differs along the wave (the common case).
        let (y, z) = (if dims >= 1 { y } else { 0 }, if dims >= 2 { z } else { 0 });
        let yz = y << 10 | z << 20;
        if let Some(v0) = w.v.get_mut(0) {
            for (lane, r) in v0.iter_mut().enumerate().take(lanes) {
                *r = (x + lane as u32) | yz;
            }
        }
        w.set_exec(w.lane_limit());
        return Ok(());
    }
    for lane in 0..lanes.min(LANES) {
        let flat = first + lane as u32;
        if flat >= items {
            break;
        }
        exec |= 1 << lane;
        let (x, y, z) = {
            let id = (x, y, z);
            x += 1;
            if x == sx {
                x = 0;
                y += 1;
                if y == sy {
                    y = 0;
                    z += 1;
                }
            }
            id
        };
        let (y, z) = (if dims >= 1 { y } else { 0 }, if dims >= 2 { z } else { 0 });
        if target.packed_work_item_ids() {
            if let Some(v0) = w.v.get_mut(0) {
                v0[lane] = x | y << 10 | z << 20;
            }
        } else {
            for (r, val) in [x, y, z].into_iter().enumerate().take(dims as usize + 1) {
                if let Some(v) = w.v.get_mut(r) {
                    v[lane] = val;
                }
            }
        }
    }
    w.set_exec(exec);
    Ok(())
}

/// The user SGPRs a wave starts with, in order: at most the 102 an SGPR file has (more are
/// dropped, as writes past the file are), without an allocation per wave.
struct SgprList {
    values: [u32; 102],
    len: usize,
}

impl Default for SgprList {
    fn default() -> SgprList {
        SgprList {
            values: [0; 102],
            len: 0,
        }
    }
}

impl SgprList {
    fn push(&mut self, x: u32) {
        if let Some(slot) = self.values.get_mut(self.len) {
            *slot = x;
            self.len += 1;
        }
    }

    fn extend(&mut self, xs: impl IntoIterator<Item = u32>) {
        for x in xs {
            self.push(x);
        }
    }

    fn values(&self) -> &[u32] {
        self.values.get(..self.len).unwrap_or(&self.values)
    }
}

fn push64(v: &mut SgprList, x: u64) {
    v.push(x as u32);
    v.push((x >> 32) as u32);
}

/// The MODE register from COMPUTE_PGM_RSRC1: FLOAT_MODE (bits 19:12) to MODE 7:0,
/// DX10_CLAMP (21) to bit 8, IEEE_MODE (23) to bit 9.
fn mode_from_rsrc1(rsrc1: u32) -> u32 {
    ((rsrc1 >> 12) & 0xFF) | ((rsrc1 >> 21) & 1) << 8 | ((rsrc1 >> 23) & 1) << 9
}
