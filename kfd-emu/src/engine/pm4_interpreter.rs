//! The PM4 interpreter: what the PM4 processor of compute queues (KFD queue type COMPUTE) runs
//! its ring through, and what the AQL processor runs vendor PM4-IB packets through. It lives
//! here, shared, so neither processor depends on the other.
//!
//! Per queue it keeps the SH register state, one file per XCC: every XCC of a multi-XCC GPU
//! (MI300) runs a compute queue's stream, and `PRED_EXEC` narrows the next dwords to some of
//! them. The XCCs run the stream in step here: a dispatch's work-groups go to the XCCs in turn,
//! each XCC's waves with the scratch its registers name, and other packets run once for the
//! XCCs they are meant for (see `EmuStats::unjoined_xcc_fences` for what that forgives).
//! DISPATCH_DIRECT launches the emulated kernel at
//! `COMPUTE_PGM_LO/HI` with the programmed work-group size and the kernel-argument pointer from
//! the user-data registers (placed after whatever the descriptor's enable bits put first);
//! RELEASE_MEM writes data or the clock and raises the event interrupt; WAIT_REG_MEM polls memory;
//! WRITE_DATA, COPY_DATA and one level of INDIRECT_BUFFER run; ACQUIRE_MEM and EVENT_WRITE are
//! accepted (the emulator keeps memory coherent). Anything else stops the queue.

use super::backoff::{poll_until, Polled};
use super::clock::Clock;
use super::control::QueueCtl;
use super::error::QueueErrorCode;
use super::launch::{KernelLaunch, LaunchStop};
use super::machine::{MachineLaunch, MachineStop};
use crate::device::GpuState;
use crate::kernel::KernelRegistry;
use crate::stats::Counters;
use crate::vm::{GpuFault, GpuVm};
use pm4::regs::{self, initiator};
use pm4::{data_sel, CompareFunction, GfxFamily, Pm4Packet};
use std::sync::atomic::Ordering;

/// Why PM4 execution stopped.
#[derive(Debug)]
pub(crate) enum Pm4Error {
    /// The queue is being destroyed.
    Stopped,
    /// An access outside the GPU's page table.
    Fault(GpuFault),
    /// A packet the interpreter does not run, or a malformed one.
    Decode,
    /// A dispatch whose kernel or geometry is unusable.
    BadDispatch,
    /// A wave stopped with an error the queue reports (illegal instruction, trap).
    Wave(QueueErrorCode),
    /// A wave halted: the dispatch never completes.
    Halted,
}

impl From<GpuFault> for Pm4Error {
    fn from(f: GpuFault) -> Self {
        Pm4Error::Fault(f)
    }
}

/// One XCC's SH registers.
type ShFile = [u32; (regs::SH_REG_END - regs::SH_REG_BASE) as usize];

/// PM4 execution state: the SH registers and what commands act on.
pub(crate) struct Interpreter<'a> {
    vm: &'a GpuVm,
    gpu: &'a GpuState,
    ctl: &'a QueueCtl,
    kernels: &'a KernelRegistry,
    stats: &'a Counters,
    wave_threads: usize,
    family: GfxFamily,
    /// The SH registers of each XCC.
    sh: Vec<Box<ShFile>>,
    /// An active PRED_EXEC: the XCCs it selects and how many dwords it still covers.
    predicate: Option<(u32, u64)>,
    /// A dispatch ran on several XCCs since a RELEASE_MEM every XCC runs last told of one.
    unjoined_dispatch: bool,
    clock: Clock,
    /// A dispatch ran since the L2 was last written back: what it wrote may still be in the
    /// GPU's L2, where the CPU does not see it.
    l2_dirty: bool,
}

impl<'a> Interpreter<'a> {
    /// An interpreter with cleared registers for `ctl`'s queue (its GPU, memory and events).
    pub(crate) fn new(
        ctl: &'a QueueCtl,
        kernels: &'a KernelRegistry,
        stats: &'a Counters,
        wave_threads: usize,
        clock: Clock,
    ) -> Self {
        let gpu: &'a GpuState = &ctl.gpu;
        Interpreter {
            vm: &gpu.vm,
            gpu,
            ctl,
            kernels,
            stats,
            wave_threads,
            family: GfxFamily::from_gfx_target_version(gpu.params.gfx_target_version)
                .unwrap_or(GfxFamily::Gfx9),
            sh: (0..gpu.params.num_xcc.clamp(1, 8))
                .map(|_| Box::new([0; (regs::SH_REG_END - regs::SH_REG_BASE) as usize]))
                .collect(),
            predicate: None,
            unjoined_dispatch: false,
            clock,
            l2_dirty: false,
        }
    }

    /// Whether a RELEASE_MEM's `cache_action` writes the L2 back (gfx9 `TC_WB_ACTION_EN`,
    /// gfx10+ `GL2_WB`).
    fn writes_back(&self, cache_action: u32) -> bool {
        use pm4::release_mem::{gcr, gfx9};
        let wb = if self.family.is_gfx10_plus() {
            gcr::GL2_WB
        } else {
            gfx9::TC_WB_ACTION_EN
        };
        cache_action & wb != 0
    }

    /// XCC 0's register `r` (the XCCs differ only where a PRED_EXEC made them).
    fn reg(&self, r: u32) -> u32 {
        self.xcc_reg(0, r)
    }

    fn xcc_reg(&self, xcc: usize, r: u32) -> u32 {
        self.sh
            .get(xcc)
            .and_then(|f| f.get((r - regs::SH_REG_BASE) as usize))
            .copied()
            .unwrap_or(0)
    }

    /// Every XCC's bit.
    fn all_xccs(&self) -> u32 {
        (1u32 << self.sh.len()) - 1
    }

    /// Reads and decodes the packet at `addr`, returning it and its length in dwords.
    pub(crate) fn fetch(&self, addr: u64, available: u64) -> Result<(Pm4Packet, u64), Pm4Error> {
        let h = self.vm.read_u32(addr)?;
        // The crate's framing: type-2 fillers and any NOP with count 0x3FFF are one dword.
        let len = pm4::packet_dwords(h).ok_or(Pm4Error::Decode)? as u64;
        if len > available {
            return Err(Pm4Error::Decode);
        }
        let mut bytes = vec![0u8; len as usize * 4];
        self.vm.read(addr, &mut bytes)?;
        let dwords: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let (p, n) = Pm4Packet::decode(self.family, &dwords).map_err(|_| Pm4Error::Decode)?;
        Ok((p, n as u64))
    }

    /// Runs the `dwords` dwords at `addr` (an indirect buffer).
    pub(crate) fn run_buffer(
        &mut self,
        addr: u64,
        dwords: u32,
        depth: u32,
        stopped: &dyn Fn() -> bool,
    ) -> Result<(), Pm4Error> {
        let mut off = 0u64;
        while off < u64::from(dwords) {
            let (p, n) = self.fetch(addr + off * 4, u64::from(dwords) - off)?;
            self.execute(&p, n, depth, stopped)?;
            off += n;
        }
        Ok(())
    }

    /// Executes one packet of `dwords` dwords, on the XCCs an active PRED_EXEC selects (all
    /// of them otherwise).
    pub(crate) fn execute(
        &mut self,
        p: &Pm4Packet,
        dwords: u64,
        depth: u32,
        stopped: &dyn Fn() -> bool,
    ) -> Result<(), Pm4Error> {
        let xccs = match self.predicate.take() {
            Some((mask, left)) => {
                if left > dwords {
                    self.predicate = Some((mask, left - dwords));
                }
                mask & self.all_xccs()
            }
            None => self.all_xccs(),
        };
        if xccs == 0 {
            return Ok(());
        }
        self.execute_on(p, xccs, depth, stopped)
    }

    fn execute_on(
        &mut self,
        p: &Pm4Packet,
        xccs: u32,
        depth: u32,
        stopped: &dyn Fn() -> bool,
    ) -> Result<(), Pm4Error> {
        match p {
            Pm4Packet::AcquireMem {
                coher_cntl,
                gcr_cntl,
            } => {
                // gfx9 COHER_CNTL TC_WB_ACTION_ENA (bit 18), gfx10+ GCR_CNTL GL2_WB.
                let wb = if self.family.is_gfx10_plus() {
                    gcr_cntl & pm4::acquire_mem::gcr_cntl::GL2_WB != 0
                } else {
                    coher_cntl & pm4::acquire_mem::coher_cntl::TC_WB != 0
                };
                if wb {
                    self.l2_dirty = false;
                }
                let icache = if self.family.is_gfx10_plus() {
                    // gfx10+ fetches code through GL1 and GL2: invalidating the instruction
                    // cache alone refills it from lines there that may be as old.
                    use pm4::acquire_mem::gcr_cntl::{gli_inv, GL1_INV, GL2_INV};
                    gli_inv(*gcr_cntl) != 0 && gcr_cntl & GL1_INV != 0 && gcr_cntl & GL2_INV != 0
                } else {
                    coher_cntl & pm4::acquire_mem::coher_cntl::SH_ICACHE != 0
                };
                if icache {
                    self.gpu.invalidate_icache();
                }
                Ok(())
            }
            Pm4Packet::Nop { .. } | Pm4Packet::EventWrite { .. } => Ok(()),
            Pm4Packet::PredExec {
                xcc_mask,
                exec_dwords,
            } => {
                // PRED_EXEC selects XCCs of GFX 9.4.3's multi-XCC GPUs (`soc15d.h`'s
                // VIRTUAL_XCC_ID_SELECT); other families' predication is not modelled.
                if self.family.is_gfx10_plus() {
                    return Err(Pm4Error::Decode);
                }
                // A count of 0 covers nothing.
                self.predicate = (*exec_dwords > 0).then_some((*xcc_mask, u64::from(*exec_dwords)));
                Ok(())
            }
            Pm4Packet::SetShReg { reg, values } => {
                let first = reg.checked_sub(regs::SH_REG_BASE).ok_or(Pm4Error::Decode)? as usize;
                for (x, file) in self.sh.iter_mut().enumerate() {
                    if xccs >> x & 1 == 0 {
                        continue;
                    }
                    let slots = file
                        .get_mut(first..first + values.len())
                        .ok_or(Pm4Error::Decode)?;
                    slots.copy_from_slice(values);
                }
                Ok(())
            }
            Pm4Packet::DispatchDirect { dims, initiator } => {
                if xccs != self.all_xccs() {
                    // Which work-groups an XCC left out of a dispatch would run is not modelled.
                    log::warn!(
                        "kfd-emu: queue {}: a DISPATCH_DIRECT predicated to XCCs {xccs:#x}",
                        self.ctl.id
                    );
                    return Err(Pm4Error::Decode);
                }
                self.l2_dirty = true;
                self.unjoined_dispatch |= self.sh.len() > 1;
                self.dispatch(*dims, *initiator, stopped)
            }
            Pm4Packet::ReleaseMem {
                int_sel,
                data_sel: sel,
                addr,
                data,
                int_ctxid,
                cache_action,
                ..
            } => {
                // The CPU learns of the work here: without the write-back, what the dispatches
                // wrote may sit in the L2, and the CPU reads the memory's old contents. The
                // emulator's memory is coherent; strict mode counts the fence.
                let signals = *sel != data_sel::NONE
                    || matches!(
                        *int_sel,
                        pm4::int_sel::SEND_INT | pm4::int_sel::SEND_INT_ON_CONFIRM
                    );
                if signals && xccs.count_ones() > 1 && self.unjoined_dispatch && self.gpu.strict {
                    self.unjoined_dispatch = false;
                    self.stats
                        .unjoined_xcc_fences
                        .fetch_add(1, Ordering::Relaxed);
                    log::warn!(
                        "kfd-emu: queue {}: a RELEASE_MEM that every XCC runs tells of \
                         dispatches: each XCC writes it when its own share is done",
                        self.ctl.id
                    );
                }
                if self.writes_back(*cache_action) {
                    self.l2_dirty = false;
                } else if signals && self.l2_dirty && self.gpu.strict {
                    self.stats
                        .fences_before_writeback
                        .fetch_add(1, Ordering::Relaxed);
                    log::warn!(
                        "kfd-emu: queue {}: RELEASE_MEM signals dispatches whose writes were not \
                         written back from the L2 (no write-back action)",
                        self.ctl.id
                    );
                }
                match *sel {
                    data_sel::NONE => {}
                    data_sel::DATA32 => self.vm.write_u32(*addr, *data as u32)?,
                    data_sel::DATA64 => self.vm.write_u64(*addr, *data)?,
                    data_sel::GPU_CLOCK => self.vm.write_u64(*addr, self.clock.gpu_ticks())?,
                    data_sel::SYSTEM_CLOCK => self.vm.write_u64(*addr, self.clock.system_ns())?,
                    _ => return Err(Pm4Error::Decode),
                }
                if matches!(
                    *int_sel,
                    pm4::int_sel::SEND_INT | pm4::int_sel::SEND_INT_ON_CONFIRM
                ) {
                    self.ctl.events.signal_from_device(*int_ctxid);
                }
                Ok(())
            }
            Pm4Packet::WaitRegMem {
                function,
                mem_space,
                addr,
                reference,
                mask,
                ..
            } => {
                if *mem_space != 1 {
                    return Err(Pm4Error::Decode);
                }
                self.wait_mem(*function, *addr, *reference, *mask, stopped)
            }
            Pm4Packet::WriteData { addr, data, .. } => {
                for (i, d) in data.iter().enumerate() {
                    self.vm.write_u32(addr + 4 * i as u64, *d)?;
                }
                Ok(())
            }
            Pm4Packet::CopyData {
                src_sel,
                count64,
                src,
                dst,
                ..
            } => {
                let v = match src_sel {
                    5 => *src,
                    9 => self.clock.gpu_ticks(),
                    1 if *count64 => self.vm.read_u64(*src)?,
                    1 => u64::from(self.vm.read_u32(*src)?),
                    _ => return Err(Pm4Error::Decode),
                };
                if *count64 {
                    self.vm.write_u64(*dst, v)?;
                } else {
                    self.vm.write_u32(*dst, v as u32)?;
                }
                Ok(())
            }
            Pm4Packet::IndirectBuffer {
                addr, size_dwords, ..
            } => {
                // The CP runs one level of indirect buffers from a ring; one that only some XCCs
                // run is not modelled.
                if depth >= 1 || xccs != self.all_xccs() {
                    return Err(Pm4Error::Decode);
                }
                self.run_buffer(*addr, *size_dwords, depth + 1, stopped)
            }
        }
    }

    fn wait_mem(
        &self,
        f: CompareFunction,
        addr: u64,
        reference: u32,
        mask: u32,
        stopped: &dyn Fn() -> bool,
    ) -> Result<(), Pm4Error> {
        let polled = poll_until(self.gpu, false, stopped, || {
            Ok::<_, GpuFault>(f.eval(self.vm.read_u32(addr)?, reference, mask))
        })?;
        match polled {
            Polled::Ready => Ok(()),
            Polled::Stopped => Err(Pm4Error::Stopped),
        }
    }

    /// XCC `xcc`'s scratch as its registers describe it (`COMPUTE_TMPRING_SIZE`, and the base
    /// in `COMPUTE_DISPATCH_SCRATCH_BASE`), if it has any.
    fn xcc_scratch(&self, xcc: usize) -> Option<kfd_emu_isa::ScratchBacking> {
        let p = &self.gpu.params;
        let format = aql::scratch::ScratchFormat::for_gfx_target_version(p.gfx_target_version)
            .unwrap_or_default();
        let (waves, wave_bytes) = format.tmpring_slots(
            self.xcc_reg(xcc, regs::COMPUTE_TMPRING_SIZE),
            p.shader_engines_per_xcc(),
        );
        let base = (u64::from(self.xcc_reg(xcc, regs::COMPUTE_DISPATCH_SCRATCH_BASE_LO))
            | u64::from(self.xcc_reg(xcc, regs::COMPUTE_DISPATCH_SCRATCH_BASE_HI) & 0xFF) << 32)
            << 8;
        (waves > 0 && wave_bytes > 0).then_some(kfd_emu_isa::ScratchBacking {
            base,
            size: waves * wave_bytes,
            wave_bytes,
            resource: None,
        })
    }

    /// Counts a dispatch whose XCCs' scratch ranges overlap (see
    /// `EmuStats::xcc_scratch_overlaps`).
    fn check_xcc_scratch(&self, scratch: &[Option<kfd_emu_isa::ScratchBacking>]) {
        let ranges: Vec<(u64, u64)> = scratch
            .iter()
            .flatten()
            .map(|s| (s.base, s.base.saturating_add(s.size)))
            .collect();
        let overlap = ranges
            .iter()
            .enumerate()
            .any(|(i, a)| ranges.iter().skip(i + 1).any(|b| a.0 < b.1 && b.0 < a.1));
        if overlap {
            self.stats
                .xcc_scratch_overlaps
                .fetch_add(1, Ordering::Relaxed);
            log::warn!(
                "kfd-emu: queue {}: a dispatch whose XCCs' scratch overlaps ({ranges:x?}): on the \
                 GPU their waves overwrite each other's private memory",
                self.ctl.id
            );
        }
    }

    fn dispatch(
        &self,
        dims: [u32; 3],
        init: u32,
        stopped: &dyn Fn() -> bool,
    ) -> Result<(), Pm4Error> {
        let entry = (u64::from(self.reg(regs::COMPUTE_PGM_LO))
            | u64::from(self.reg(regs::COMPUTE_PGM_HI) & 0xFF) << 32)
            << 8;
        // The first instruction fetch: the code must be mapped executable.
        self.vm.check_exec(entry, 4)?;
        self.gpu.fetch_code(entry);
        let wg: [u32; 3] =
            std::array::from_fn(|i| self.reg(regs::COMPUTE_NUM_THREAD_X + i as u32) & 0xFFFF);
        if wg.contains(&0)
            || aql::work_group_items(wg) > aql::MAX_WORK_GROUP_ITEMS
            || dims.contains(&0)
        {
            return Err(Pm4Error::BadDispatch);
        }
        let (groups, grid) = if init & initiator::USE_THREAD_DIMENSIONS != 0 {
            (std::array::from_fn(|i| dims[i].div_ceil(wg[i])), dims)
        } else {
            (dims, std::array::from_fn(|i| dims[i].saturating_mul(wg[i])))
        };
        // A host function bound to the descriptor 256 bytes before the entry (where kfdrt's and
        // the emulator's code objects put it) stands in for the code; otherwise the code runs.
        match entry
            .checked_sub(256)
            .and_then(|kd| self.kernels.get(kd).map(|f| (kd, f)))
        {
            Some((kd_addr, f)) => self.dispatch_bound(&*f, kd_addr, wg, groups, grid, stopped),
            None => self.dispatch_machine_code(entry, wg, grid, init),
        }
    }

    /// Runs a host-bound kernel: its kernel arguments are where the descriptor's enable bits
    /// put the kernarg pointer among the user-data registers.
    fn dispatch_bound(
        &self,
        f: &crate::kernel::KernelFn,
        kd_addr: u64,
        wg: [u32; 3],
        groups: [u32; 3],
        grid: [u32; 3],
        stopped: &dyn Fn() -> bool,
    ) -> Result<(), Pm4Error> {
        let mut raw = [0u8; 64];
        self.vm
            .read(kd_addr, &mut raw)
            .map_err(|_| Pm4Error::BadDispatch)?;
        let kd = aql::KernelDescriptor::from_bytes(&raw);
        let props = kd.kernel_code_properties;
        use aql::code_properties as cp;
        let mut sgpr = 0u32;
        for (bit, n) in [
            (cp::ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER, 4),
            (cp::ENABLE_SGPR_DISPATCH_PTR, 2),
            (cp::ENABLE_SGPR_QUEUE_PTR, 2),
        ] {
            if props & bit != 0 {
                sgpr += n;
            }
        }
        let kernarg = if props & cp::ENABLE_SGPR_KERNARG_SEGMENT_PTR != 0
            && sgpr + 1 < regs::USER_DATA_COUNT
        {
            u64::from(self.reg(regs::COMPUTE_USER_DATA_0 + sgpr))
                | u64::from(self.reg(regs::COMPUTE_USER_DATA_0 + sgpr + 1)) << 32
        } else {
            0
        };
        let launch = KernelLaunch {
            kernel: f,
            vm: self.vm,
            gpu_id: self.gpu.gpu_id,
            groups,
            workgroup_size: wg,
            grid_size: grid,
            kernarg_address: kernarg,
            arbiter: &self.ctl.gpu.arbiter,
            pipe_priority: crate::arbiter::pipe_priority(self.ctl.priority.load(Ordering::Acquire)),
        };
        launch.run(stopped).map_err(|stop| match stop {
            LaunchStop::Stopped => Pm4Error::Stopped,
            LaunchStop::Fault(f) => Pm4Error::Fault(f),
        })
    }

    /// Runs the machine code at `entry` as the SPI starts it from the SH registers: the program
    /// registers (`COMPUTE_PGM_RSRC1/2/3`) instead of a descriptor, the user-data registers as
    /// the user SGPRs, LDS from `RSRC2.LDS_SIZE` and scratch laid out by
    /// `COMPUTE_TMPRING_SIZE` (its base from `COMPUTE_DISPATCH_SCRATCH_BASE` where the target
    /// has architected flat scratch or GFX11's hardware FLAT_SCRATCH; elsewhere the kernel gets
    /// it through its user SGPRs).
    ///
    /// On GFX10+ the packet's `DISPATCH_INITIATOR.CS_W32_EN` runs the waves as wave32 (the
    /// one kernel property the registers do not hold), and `COMPUTE_TMPRING_SIZE` is in
    /// GFX11's format (`WAVESIZE` in 256-byte units, `WAVES` per shader engine).
    fn dispatch_machine_code(
        &self,
        entry: u64,
        wg: [u32; 3],
        grid: [u32; 3],
        init: u32,
    ) -> Result<(), Pm4Error> {
        let Some(code) = self.gpu.code.clone() else {
            log::error!(
                "kfd-emu: queue {}: machine code at {entry:#x} for gfx target version {}, which \
                 the wave interpreter does not run",
                self.ctl.id,
                self.gpu.params.gfx_target_version
            );
            return Err(Pm4Error::Wave(QueueErrorCode::IllegalInstruction));
        };
        let rsrc2 = self.reg(regs::COMPUTE_PGM_RSRC2);
        let p = &self.gpu.params;
        let wave32 = p.gfx_target_version >= 100000 && init & initiator::CS_W32_EN != 0;
        let descriptor = kfd_emu_isa::KernelDescriptor {
            compute_pgm_rsrc1: self.reg(regs::COMPUTE_PGM_RSRC1),
            compute_pgm_rsrc2: rsrc2,
            compute_pgm_rsrc3: regs::compute_pgm_rsrc3(self.family).map_or(0, |r| self.reg(r)),
            kernel_code_properties: if wave32 {
                aql::code_properties::ENABLE_WAVEFRONT_SIZE32
            } else {
                0
            },
            ..Default::default()
        };
        let lanes = if wave32 { 32 } else { 64 };
        let scratch: Vec<_> = (0..self.sh.len()).map(|x| self.xcc_scratch(x)).collect();
        let (_, wave_bytes) = scratch
            .first()
            .copied()
            .flatten()
            .map_or((0, 0), |s| (s.base, s.wave_bytes));
        if rsrc2 & 1 != 0 && scratch.iter().any(Option::is_some) {
            self.check_xcc_scratch(&scratch);
        }
        let user: Vec<u32> = (0..regs::USER_DATA_COUNT)
            .map(|i| self.reg(regs::COMPUTE_USER_DATA_0 + i))
            .collect();
        let setup = kfd_emu_isa::DispatchSetup {
            target: code.target(),
            kernel_object: entry,
            descriptor,
            workgroup_size: wg,
            grid_size: grid,
            dimensions: 3,
            kernarg_address: 0,
            dispatch_packet_address: 0,
            queue_address: 0,
            dispatch_id: 0,
            // LDS_SIZE, bits 23:15, in 128-dword granules.
            group_segment_size: ((rsrc2 >> 15) & 0x1FF) * 512,
            private_segment_size: (wave_bytes / lanes) as u32,
            scratch: scratch.first().copied().flatten(),
            apertures: kfd_emu_isa::Apertures::default(),
            gws: self.ctl.gws(),
            trap: self.ctl.trap_routing(),
            debug: self.ctl.debug.wave_debug(self.ctl.gpu.gpu_id),
            xccs: self.ctl.gpu.params.num_xcc.max(1),
            messages: Some(self.ctl.message_sink()),
            watch: self.ctl.gpu.watch.current(),
            probe: Some(self.ctl.gpu.probe.clone()),
            sanitize: self.ctl.gpu.sanitizer.for_dispatch(&self.ctl.gpu),
            code,
            entry_override: Some(entry),
            user_sgprs_override: Some(user),
        };
        let launch = MachineLaunch {
            setup,
            vm: self.vm,
            cancel: &self.ctl.stop,
            threads: self.wave_threads,
            queue_id: self.ctl.id,
            fault_log: &self.ctl.gpu.fault_log,
            other_xccs: scratch.iter().skip(1).copied().collect(),
            arbiter: &self.ctl.gpu.arbiter,
            pipe_priority: crate::arbiter::pipe_priority(self.ctl.priority.load(Ordering::Acquire)),
        };
        self.stats
            .machine_dispatches
            .fetch_add(1, Ordering::Relaxed);
        match launch.run() {
            Ok(n) => {
                self.stats.wave_instructions.fetch_add(n, Ordering::Relaxed);
                Ok(())
            }
            Err(MachineStop::Stopped) => Err(Pm4Error::Stopped),
            Err(MachineStop::Fault(f)) => Err(Pm4Error::Fault(f)),
            Err(MachineStop::Error(code)) => Err(Pm4Error::Wave(code)),
            Err(MachineStop::Halted) => Err(Pm4Error::Halted),
        }
    }
}
