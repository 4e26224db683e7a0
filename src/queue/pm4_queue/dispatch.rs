//! Dispatching a kernel with PM4: the program and resource registers from its descriptor, the
//! user SGPRs its enable bits ask for (in the ABI's order), scratch laid out as on an AQL
//! queue, then `DISPATCH_DIRECT`.
//!
//! Every XCC of a multi-XCC GPU (MI300X) runs the queue's stream and a share of each
//! dispatch's work-groups, each with the scratch registers it was given: the scratch is laid
//! out per XCC (as ROCr's `InitScratchSRD` does for AQL queues), and each XCC gets the base of
//! its share through a `PRED_EXEC` naming it alone, as tinygrad's `ops_amd.py` does. With one
//! base for all of them their waves would overwrite each other's private memory.
//! `PRED_EXEC` goes straight into the ring, where tinygrad issues it; one other public source
//! says the CP honours it only inside an indirect buffer. That is unconfirmed here (no MI300X),
//! and kfd-emu honours it in the ring.
//!
//! A PM4 queue has no AQL packet and no `amd_queue_t`, but code objects v4 and older read the
//! work-group size from the dispatch packet: a kernel asking for the dispatch pointer gets an
//! image of the AQL packet that would have launched it. Its queue pointer is null.

use super::Pm4Queue;
use crate::error::Result;
use crate::memory::Buffer;
use crate::queue::scratch_memory::{allocate, wave_slots};
use aql::scratch::ScratchLayout;
use pm4::Pm4Packet;

/// Memory a PM4 queue's dispatches use beyond their arguments.
#[derive(Default)]
pub(crate) struct DispatchMemory {
    /// The scratch the queue's dispatches use now, and its layout.
    pub(crate) scratch: Option<(Buffer, ScratchLayout)>,
    /// Replaced scratch and dispatch-packet images of submitted dispatches, freed once the
    /// queue has been seen idle past them.
    pub(crate) retired: Vec<Buffer>,
}

impl Pm4Queue {
    /// The XCCs that run the queue's stream (more than one only on GFX 9.4.3, MI300).
    pub(crate) fn xccs(&self) -> u32 {
        if self.family == pm4::GfxFamily::Gfx94x {
            self.gpu.info().num_xcc.clamp(1, 8)
        } else {
            1
        }
    }

    /// Appends `packet` for XCC `xcc` alone (behind a `PRED_EXEC`), or as it is on a GPU of one
    /// XCC.
    pub(crate) fn for_xcc(
        &self,
        out: &mut Vec<Pm4Packet>,
        xcc: u32,
        packet: Pm4Packet,
    ) -> Result<()> {
        if self.xccs() == 1 {
            out.push(packet);
            return Ok(());
        }
        // kfdrt's own register writes: a few dwords, far below the predicate's 0x3FFF.
        let predicated =
            Pm4Packet::predicated(self.family, 1 << xcc, std::slice::from_ref(&packet))
                .expect("a register write fits a PRED_EXEC");
        out.extend(predicated);
        Ok(())
    }

    /// The queue's scratch, grown to serve `private` bytes per work-item for `waves_needed`
    /// waves (the replaced backing is kept until the queue is next seen idle).
    pub(crate) fn scratch_for(
        &self,
        private: u32,
        waves_needed: u64,
        lanes: u32,
    ) -> Result<ScratchLayout> {
        let mut mem = self
            .dispatch_memory
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let xccs = self.xccs();
        // Per XCC: the dispatch's work-groups are spread over the XCCs in turn.
        let slots = u64::from(wave_slots(&self.gpu)).div_ceil(u64::from(xccs));
        let per_xcc = waves_needed.div_ceil(u64::from(xccs));
        if let Some((_, s)) = &mem.scratch {
            if s.lane_bytes >= private
                && s.lanes == lanes
                && u64::from(s.waves) >= per_xcc.min(slots)
            {
                return Ok(*s);
            }
        }
        let (buffer, layout, _) = allocate(&self.gpu, private, waves_needed, xccs, lanes)?;
        if let Some((old, _)) = mem.scratch.replace((buffer, layout)) {
            mem.retired.push(old);
        }
        Ok(layout)
    }
}
