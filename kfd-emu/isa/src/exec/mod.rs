//! The interpreter: runs one work-group's waves to completion.
//!
//! Waves of a work-group take turns on the calling thread: each runs until it reaches
//! `s_barrier`, ends, or has used its time slice; when every wave still running waits at the
//! barrier, all are released. Different work-groups share nothing but memory (and the code
//! cache), so callers run them on as many threads as they like.

// Per-lane loops index several parallel 64-lane arrays by lane number; iterator chains over
// one of them would obscure that.
#![allow(clippy::needless_range_loop)]

mod access;
mod buffer_format;
mod fpmath;
mod hwreg;
mod image;
mod init;
mod lanes;
mod lds;
pub(crate) mod mfma;
mod salu;
mod smem;
mod snapshot;
mod trap;
mod valu;
mod valu_fast;
mod valu_gfx11;
mod valu_half;
mod valu_misc;
mod valu_operands;
mod valu_ops;
mod valu_wide;
mod vmem;
mod vmem_run;
mod wave;
mod wave_pool;
mod wmma;

use crate::decode::memop::{DsClass, DsOp};
use crate::decode::{Class, Format, Inst, Matrix, Op, Operand};
use crate::dispatch::{DispatchSetup, RunControl};
use crate::error::WaveError;
use crate::memory::{MemFault, Memory};
use crate::program::Region;
use init::{start_wave, GroupStart};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use wave::{Wave, WaveState};

pub use snapshot::WaveSnapshot;

/// Instructions a wave runs before the next wave of its work-group gets a turn.
const TIME_SLICE: u32 = 2048;

/// What a work-group's run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Wave-instructions executed (one per instruction per wave, whatever EXEC holds).
    pub wave_instructions: u64,
    /// Waves run.
    pub waves: u32,
    /// Barriers the work-group passed.
    pub barriers: u32,
}

/// Where execution goes after an instruction.
pub(crate) enum Flow {
    /// The next instruction.
    Next,
    /// An absolute address.
    Jump(u64),
    /// The next instruction, after the work-group's barrier.
    Barrier,
    /// The same instruction again, later: the wave stalls on it (a GWS semaphore it waits
    /// for) and lets other waves run meanwhile.
    Retry,
    /// The wave ends.
    End,
}

/// What the instructions of one work-group share.
pub(crate) struct Ctx<'a, M: Memory + ?Sized> {
    pub mem: &'a M,
    pub setup: &'a DispatchSetup,
    pub lds: Vec<u8>,
    /// (shared aperture base, private aperture base).
    pub apertures: (u64, u64),
    /// The XCC the work-group runs on.
    pub xcc: u32,
    /// The work-group's id.
    pub group_id: [u32; 3],
    /// The sanitizer's record of the LDS (when the dispatch is sanitized).
    pub lds_shadow: Option<crate::sanitize::LdsShadow>,
}

impl<M: Memory + ?Sized> Ctx<'_, M> {
    /// The wave-level error for a memory fault at the wave's PC.
    pub fn fault(&self, w: &Wave, f: MemFault) -> WaveError {
        WaveError::MemoryFault {
            va: f.va,
            kind: f.kind,
            pc: w.pc,
        }
    }
}

/// Runs work-group `group_id` of the dispatch to completion.
///
/// Errors: [`WaveError::InvalidDispatch`] / [`WaveError::ScratchUnavailable`] before any wave
/// starts when the dispatch cannot run; otherwise the first error any wave hits (the
/// work-group stops there, as a queue stops at its first error).
pub fn run_workgroup<M: Memory + ?Sized>(
    setup: &DispatchSetup,
    group_id: [u32; 3],
    mem: &M,
    control: &RunControl<'_>,
) -> Result<Stats, WaveError> {
    setup.validate()?;
    let entry = entry_region(setup, mem);
    let mut group = Group::new(setup, group_id, control.scratch_slot, mem, entry.as_ref())?;
    while !group.round(TIME_SLICE, control, None)? {}
    Ok(group.stats)
}

/// Runs several work-groups of the dispatch to completion, interleaved on the calling thread
/// as a GPU runs the work-groups resident on it side by side: their waves take turns a short
/// slice at a time, so work-groups that stride through memory together (grid-stride loops,
/// kfdrt's blit kernels) touch it together, and work-groups that wait for each other through
/// memory make progress. Work-group `k` of `group_ids` uses scratch slot
/// `control.scratch_slot + k`, so calls running at the same time need disjoint ranges of
/// `group_ids.len()` slots; [`RunControl::max_wave_instructions`] bounds each work-group.
///
/// Returns the work-groups' summed [`Stats`]. Errors as [`run_workgroup`]'s: the first error a
/// wave of any of the work-groups hits stops them all.
pub fn run_workgroups<M: Memory + ?Sized>(
    setup: &DispatchSetup,
    group_ids: &[[u32; 3]],
    mem: &M,
    control: &RunControl<'_>,
) -> Result<Stats, WaveError> {
    run_workgroups_noting(setup, group_ids, mem, control, &mut None)
}

/// [`run_workgroups`], noting in `failed` the state of the wave whose error ends the run (its
/// registers as they were when the failing instruction started, or after a partial update).
pub fn run_workgroups_noting<M: Memory + ?Sized>(
    setup: &DispatchSetup,
    group_ids: &[[u32; 3]],
    mem: &M,
    control: &RunControl<'_>,
    failed: &mut Option<WaveSnapshot>,
) -> Result<Stats, WaveError> {
    setup.validate()?;
    let entry = entry_region(setup, mem);
    let mut groups = Vec::with_capacity(group_ids.len());
    for (k, &id) in group_ids.iter().enumerate() {
        let slot = control.scratch_slot.saturating_add(k as u32);
        groups.push(Group::new(setup, id, slot, mem, entry.as_ref())?);
    }
    let slice = if groups.len() > 1 {
        BATCH_SLICE
    } else {
        TIME_SLICE
    };
    let mut total = Stats::default();
    while !groups.is_empty() {
        let mut k = 0;
        while k < groups.len() {
            if groups[k].round(slice, control, Some(&mut *failed))? {
                let g = groups.swap_remove(k);
                total.wave_instructions += g.stats.wave_instructions;
                total.waves += g.stats.waves;
                total.barriers += g.stats.barriers;
            } else {
                k += 1;
            }
        }
    }
    Ok(total)
}

/// The registers a report shows of `w`: the SGPRs and VGPRs its kernel's descriptor allocates
/// (at most 64 VGPRs).
fn snapshot_of(w: &Wave, group: [u32; 3], setup: &DispatchSetup) -> WaveSnapshot {
    let d = &setup.descriptor;
    let sgprs = (((d.compute_pgm_rsrc1 >> 6) & 0xF) as usize + 1) * 16;
    WaveSnapshot::of(w, group, sgprs, d.vgpr_count().min(64))
}

/// The decoded code at the kernel's entry, looked up once for all the waves about to start
/// (each would look up the same); `None` if that fails, and each wave's first turn reports
/// why, as it would without this.
fn entry_region<M: Memory + ?Sized>(
    setup: &DispatchSetup,
    mem: &M,
) -> Option<(Arc<Region>, usize)> {
    setup.code.lookup(setup.entry(), mem).ok()
}

/// Instructions a wave runs per turn when several work-groups share the thread: short, so
/// their memory accesses stay close in time (a blit loop iteration is about 15 instructions).
const BATCH_SLICE: u32 = 32;

/// One work-group in progress: its waves, its LDS and what it did so far.
struct Group<'a, M: Memory + ?Sized> {
    ctx: Ctx<'a, M>,
    waves: Vec<Wave>,
    stats: Stats,
    id: [u32; 3],
    /// The last [`crate::dispatch::WaveProbe`] request the group answered.
    answered: u64,
}

impl<M: Memory + ?Sized> Drop for Group<'_, M> {
    fn drop(&mut self) {
        wave_pool::give(std::mem::take(&mut self.waves));
    }
}

impl<'a, M: Memory + ?Sized> Group<'a, M> {
    /// Starts work-group `group_id`'s waves, using scratch slot `slot` (the dispatch is
    /// validated).
    fn new(
        setup: &'a DispatchSetup,
        group_id: [u32; 3],
        slot: u32,
        mem: &'a M,
        entry: Option<&(Arc<Region>, usize)>,
    ) -> Result<Group<'a, M>, WaveError> {
        let groups = setup.grid_groups();
        if (0..3).any(|d| group_id[d] >= groups[d]) {
            return Err(WaveError::InvalidDispatch(format!(
                "work-group {group_id:?} outside the grid's {groups:?}"
            )));
        }
        if let Some(s) = setup.scratch {
            let needed = (u64::from(slot) + 1).saturating_mul(setup.scratch_per_slot());
            if needed > s.size {
                return Err(WaveError::ScratchTooSmall {
                    needed,
                    provided: s.size,
                });
            }
        }
        let group = GroupStart::new(setup, group_id, slot);
        let lds_bytes = (setup.group_segment_size() as usize).next_multiple_of(4);
        let ctx = Ctx {
            mem,
            setup,
            lds: vec![0; lds_bytes],
            apertures: (setup.apertures.shared_base, setup.apertures.private_base),
            xcc: {
                let linear = u64::from(group_id[0])
                    + u64::from(groups[0])
                        * (u64::from(group_id[1]) + u64::from(groups[1]) * u64::from(group_id[2]));
                (linear % u64::from(setup.xccs.max(1))) as u32
            },
            group_id,
            lds_shadow: setup
                .sanitize
                .as_ref()
                .map(|_| crate::sanitize::LdsShadow::new(lds_bytes)),
        };
        // The waves of a work-group this thread finished, set up again in place.
        let mut waves = wave_pool::take();
        waves.resize_with(group.waves() as usize, || Wave::new(setup.target, 0, 0, 0));
        for (i, w) in (0..).zip(waves.iter_mut()) {
            start_wave(w, setup, &group, i, mem)?;
            trap::wave_start(w, setup);
            w.region = entry.filter(|_| w.pc == setup.entry()).cloned();
        }
        let stats = Stats {
            waves: waves.len() as u32,
            ..Stats::default()
        };
        Ok(Group {
            ctx,
            waves,
            stats,
            id: group_id,
            answered: setup.probe.as_ref().map_or(0, |p| p.current()),
        })
    }

    /// Notes every wave that has not ended for a hang report.
    #[cold]
    #[inline(never)]
    fn answer(&self, probe: &crate::dispatch::WaveProbe, request: u64) {
        let setup = self.ctx.setup;
        for w in self.waves.iter().filter(|w| w.state != WaveState::Done) {
            let (instruction, op) = match setup.code.lookup(w.pc, self.ctx.mem) {
                Ok((region, i)) => region.insts.get(i).map_or((String::new(), None), |inst| {
                    (
                        crate::disasm::disassemble(setup.target, inst),
                        Some(inst.op),
                    )
                }),
                Err(_) => (String::new(), None),
            };
            let doing = match op {
                _ if w.state == WaveState::Barrier => "at a barrier",
                Some(Op::SSleep) => "sleeping (s_sleep)",
                Some(
                    Op::SWaitcnt
                    | Op::SWaitcntDepctr
                    | Op::SWaitcntExpcnt
                    | Op::SWaitcntLgkmcnt
                    | Op::SWaitcntVmcnt
                    | Op::SWaitcntVscnt,
                ) => "waiting for memory (s_waitcnt)",
                _ => "running",
            };
            probe.note(
                request,
                crate::dispatch::RunningWave {
                    kernel_object: setup.kernel_object,
                    doing,
                    instruction,
                    state: snapshot_of(w, self.id, setup),
                },
            );
        }
    }

    /// One round: every running wave runs up to `slice` instructions (until it ends or waits
    /// at the barrier); when none can run, the barrier they all wait at is released. Returns
    /// whether the work-group has finished.
    fn round(
        &mut self,
        slice: u32,
        control: &RunControl<'_>,
        mut failed: Option<&mut Option<WaveSnapshot>>,
    ) -> Result<bool, WaveError> {
        if let Some(probe) = &self.ctx.setup.probe {
            let request = probe.current();
            if request != self.answered {
                self.answered = request;
                self.answer(probe, request);
            }
        }
        let stats = &mut self.stats;
        let mut any_running = false;
        for w in self.waves.iter_mut() {
            if w.state != WaveState::Running {
                continue;
            }
            any_running = true;
            let before = w.executed;
            let r = run_slice(w, &mut self.ctx, slice);
            stats.wave_instructions += w.executed - before;
            if let (Err(_), Some(failed)) = (&r, failed.as_deref_mut()) {
                if failed.is_none() {
                    *failed = Some(snapshot_of(w, self.id, self.ctx.setup));
                }
            }
            r?;
            if stats.wave_instructions >= control.max_wave_instructions {
                return Err(WaveError::BudgetExhausted {
                    executed: stats.wave_instructions,
                    pc: w.pc,
                });
            }
            if control.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Err(WaveError::Cancelled { pc: w.pc });
            }
        }
        if any_running {
            return Ok(false);
        }
        // Nobody can run: release a barrier everyone still alive waits at, or finish.
        let waiting = self
            .waves
            .iter()
            .filter(|w| w.state == WaveState::Barrier)
            .count();
        if waiting == 0 {
            return Ok(true);
        }
        stats.barriers += 1;
        if let Some(shadow) = &mut self.ctx.lds_shadow {
            shadow.epoch += 1;
        }
        for w in self.waves.iter_mut() {
            if w.state == WaveState::Barrier {
                w.state = WaveState::Running;
            }
        }
        Ok(false)
    }
}

/// Runs a wave for up to `slice` instructions, or until it waits at a barrier or ends.
fn run_slice<M: Memory + ?Sized>(
    w: &mut Wave,
    ctx: &mut Ctx<'_, M>,
    slice: u32,
) -> Result<(), WaveError> {
    let (mut region, mut idx) = match w.region.take() {
        Some(r) => r,
        None => ctx.setup.code.lookup(w.pc, ctx.mem)?,
    };
    for _ in 0..slice {
        let Some(inst) = region.insts.get(idx) else {
            (region, idx) = ctx.setup.code.lookup(w.pc, ctx.mem)?;
            continue;
        };
        let flow = match step(w, inst, ctx) {
            Ok(f) => f,
            Err(e) => Flow::Jump(trap::take(w, e, ctx.setup)?),
        };
        // A stalled wave counts its tries, so the dispatch's instruction budget bounds a wait
        // that never ends.
        w.executed += 1;
        match flow {
            Flow::Retry => {
                w.region = Some((region, idx));
                std::thread::yield_now();
                return Ok(());
            }
            Flow::Next | Flow::Barrier => {
                w.pc = w.pc.wrapping_add(inst.size());
                idx += 1;
                if w.exception_pending {
                    let target = trap::exception(w, w.pc, ctx.setup)?;
                    if target != w.pc {
                        w.pc = target;
                        (region, idx) = ctx.setup.code.lookup(target, ctx.mem)?;
                        continue;
                    }
                }
                if matches!(flow, Flow::Barrier) {
                    w.state = WaveState::Barrier;
                    w.region = Some((region, idx));
                    return Ok(());
                }
            }
            Flow::Jump(target) => {
                w.pc = target;
                match region.index_of(target) {
                    Some(i) => idx = i,
                    None => (region, idx) = ctx.setup.code.lookup(target, ctx.mem)?,
                }
            }
            Flow::End => {
                if let Some(handler) = trap::wave_end(w, w.pc, ctx.setup) {
                    w.pc = handler;
                    (region, idx) = ctx.setup.code.lookup(handler, ctx.mem)?;
                    continue;
                }
                w.state = WaveState::Done;
                return Ok(());
            }
        }
    }
    w.region = Some((region, idx));
    Ok(())
}

/// Executes one instruction.
fn step<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
) -> Result<Flow, WaveError> {
    if inst.op == Op::Invalid {
        return Err(WaveError::Undecodable {
            pc: w.pc,
            words: inst.word_slice().to_vec(),
        });
    }
    match inst.format {
        Format::Sop1 | Format::Sop2 | Format::Sopk | Format::Sopc | Format::Sopp => {
            salu::exec(w, inst, ctx)
        }
        Format::Smem => smem::exec(w, inst, ctx),
        Format::Vop3p if inst.class == Class::Matrix(Matrix::Wmma) => {
            wmma::exec(w, inst).map(|()| Flow::Next)
        }
        Format::Vop3p if matches!(inst.class, Class::Matrix(_)) => {
            mfma::exec(w, inst, w.target).map(|()| Flow::Next)
        }
        Format::Vop1 | Format::Vop2 | Format::Vopc | Format::Vop3 | Format::Vop3p => {
            valu::exec(w, inst, ctx.apertures).map(|()| Flow::Next)
        }
        Format::Ds => match inst.class {
            Class::Ds(DsOp {
                class: DsClass::Gws(op),
                ..
            }) => lds::gws(w, inst, ctx, op),
            _ => lds::exec(w, inst, ctx).map(|()| Flow::Next),
        },
        // GFX10+ buffer descriptors and MTBUF name formats differently (one unified format
        // number); only GFX9's are modelled, so GFX11's formatted accesses refuse.
        Format::Mubuf | Format::Mtbuf
            if w.target.generation() == crate::target::Generation::Gfx11
                && matches!(inst.class, Class::Formatted(_)) =>
        {
            Err(w.unimplemented(inst))
        }
        Format::Mubuf if matches!(inst.class, Class::Formatted(_)) => {
            buffer_format::exec(w, inst, ctx).map(|()| Flow::Next)
        }
        Format::Flat | Format::Global | Format::Scratch | Format::Mubuf => {
            vmem::exec(w, inst, ctx).map(|()| Flow::Next)
        }
        Format::Mtbuf => buffer_format::exec(w, inst, ctx).map(|()| Flow::Next),
        Format::Mimg if w.target.generation() == crate::target::Generation::Gfx11 => {
            Err(w.unimplemented(inst))
        }
        Format::Mimg => image::exec(w, inst, ctx).map(|()| Flow::Next),
        Format::VopdX | Format::VopdY => vopd(w, inst, ctx.apertures).map(|()| Flow::Next),
    }
}

/// A GFX11 dual-issue instruction: both halves read their sources before either writes. X
/// runs first; when Y reads X's destination (the bank rules forbid equal destinations, not
/// that), Y is given that register as it was before X wrote it.
fn vopd(w: &mut Wave, inst: &Inst, ap: (u64, u64)) -> Result<(), WaveError> {
    let Some([x, y]) = inst.pair else {
        return Err(w.unimplemented(inst));
    };
    // fmac and dot2acc also read their destination (they accumulate into it).
    let reads = |h: &Inst, r: Operand| {
        h.src.contains(&r) || (matches!(h.op, Op::VFmacF32 | Op::VDot2cF32F16) && h.dst == r)
    };
    if !reads(y, x.dst) {
        valu::exec(w, x, ap)?;
        return valu::exec(w, y, ap);
    }
    let before = *w.vreg(inst, x.dst, 0)?;
    valu::exec(w, x, ap)?;
    let after = std::mem::replace(w.vreg_mut(inst, x.dst, 0)?, before);
    valu::exec(w, y, ap)?;
    *w.vreg_mut(inst, x.dst, 0)? = after;
    Ok(())
}
