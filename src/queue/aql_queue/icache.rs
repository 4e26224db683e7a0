//! Invalidating the GPU's instruction cache through an AQL queue, after code was written.

use super::batch::encode;
use super::{AqlQueue, Submission};
use crate::error::{Error, Result};
use crate::memory::MemoryKind;
use aql::{FenceScope, Packet};

impl AqlQueue {
    /// Invalidates the GPU's instruction cache (after code was written to memory) with a PM4
    /// ACQUIRE_MEM carried by an AMD vendor PM4-IB packet, as ROCr does; completes in order.
    pub fn invalidate_icache(&self) -> Result<Submission> {
        let ib = match self.0.icache_ib.get() {
            Some(b) => b,
            None => {
                let family =
                    pm4::GfxFamily::from_gfx_target_version(self.0.gpu.info().gfx_target_version)
                        .ok_or_else(|| Error::NotOnThisGpu {
                        gfx_target: self.0.gpu.info().gfx_target.clone(),
                        what: "PM4 packet encoding in kfdrt".into(),
                    })?;
                let acquire = if family.is_gfx10_plus() {
                    // Every cache that may hold lines of code, as ROCr's InvalidateCodeCaches:
                    // the instruction cache (GLI_INV = 1: all of it), the scalar and vector
                    // L0s, GL1 and GL2 (code reaches the instruction cache through them).
                    use pm4::acquire_mem::gcr_cntl::*;
                    pm4::Pm4Packet::AcquireMem {
                        coher_cntl: 0,
                        gcr_cntl: gli_inv(1) | GLK_INV | GLV_INV | GL1_INV | GL2_INV,
                    }
                } else {
                    // SH_ICACHE (29) | SH_KCACHE (27) | TC (23) | TCL1 (22), as kfdtest does.
                    pm4::Pm4Packet::AcquireMem {
                        coher_cntl: 0x28C0_0000,
                        gcr_cntl: 0,
                    }
                };
                let mut words = Vec::new();
                acquire.encode(family, &mut words);
                let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                let buf = self
                    .0
                    .gpu
                    .alloc(bytes.len() as u64, MemoryKind::GttCoherent)?;
                buf.write(0, &bytes)?;
                // Another thread may have won the race; either buffer holds the same packet.
                let _ = self.0.icache_ib.set(buf);
                self.0
                    .icache_ib
                    .get()
                    .expect("the icache packet buffer was set just above")
            }
        };
        let dwords = (ib.size() / 4) as u32;
        let mut b = self.batch()?;
        b.packets.push(encode(Packet::VendorPm4Ib(aql::Pm4IbPacket {
            barrier: true,
            acquire: FenceScope::System,
            release: FenceScope::System,
            ib_address: ib.gpu_address(),
            ib_size_dwords: dwords,
            completion_signal: 0,
        })));
        b.submit()
    }
}
