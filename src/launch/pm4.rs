//! Kernel dispatches as PM4 packets for a PM4 queue: the compute registers, scratch per XCC,
//! and the `DISPATCH_DIRECT` that starts the kernel.

use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::memory::MemoryKind;
use crate::queue::Pm4Queue;
use aql::code_properties as cp;
use aql::{FenceScope, KernelDispatchPacket, Packet};
use pm4::regs::{self, initiator};
use pm4::Pm4Packet;

impl Pm4Queue {
    /// An image of the AQL packet that would launch this dispatch, for a kernel reading its
    /// dispatch pointer; kept like retired scratch.
    fn packet_image(
        &self,
        kernel: &Kernel,
        grid: [u32; 3],
        workgroup: [u32; 3],
        kernarg_address: u64,
        group_segment_size: u32,
    ) -> Result<u64> {
        let wg = workgroup.map(|w| u16::try_from(w).unwrap_or(u16::MAX));
        let packet = Packet::KernelDispatch(KernelDispatchPacket {
            barrier: true,
            acquire: FenceScope::System,
            release: FenceScope::System,
            dimensions: if grid[2] > 1 || wg[2] > 1 {
                3
            } else if grid[1] > 1 || wg[1] > 1 {
                2
            } else {
                1
            },
            workgroup_size: wg,
            grid_size: grid,
            private_segment_size: kernel.private_segment_size(),
            group_segment_size,
            kernel_object: kernel.object(),
            kernarg_address,
            completion_signal: 0,
        });
        let bytes: Vec<u8> = packet
            .encode()
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let image = self.gpu.alloc(64, MemoryKind::GttCoherent)?;
        image.write(0, &bytes)?;
        let address = image.gpu_address();
        self.dispatch_memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retired
            .push(image);
        Ok(address)
    }

    /// The packets that dispatch `kernel` on `groups` work-groups of `workgroup` work-items with
    /// the kernel arguments at `kernarg_address` and `dynamic_lds` bytes of LDS per work-group
    /// beyond the kernel's own: cache invalidation, program and resource registers from the
    /// kernel descriptor (with `RSRC2.LDS_SIZE` set to the work-group's LDS, which a PM4 dispatch
    /// has no packet to take it from), scratch when the kernel uses it, user SGPRs in the
    /// documented order, then DISPATCH_DIRECT.
    pub fn dispatch_packets(
        &self,
        kernel: &Kernel,
        groups: [u32; 3],
        workgroup: [u32; 3],
        kernarg_address: u64,
        dynamic_lds: u32,
    ) -> Result<Vec<Pm4Packet>> {
        let not_dispatchable = |reason| Error::NotDispatchable {
            kernel: kernel.name().to_owned(),
            reason,
        };
        let kd = kernel
            .descriptor()
            .ok_or_else(|| not_dispatchable("its kernel descriptor is not known"))?;
        let entry = kernel
            .entry_address()
            .ok_or_else(|| not_dispatchable("its entry address overflows"))?;
        if entry % 256 != 0 {
            return Err(Error::Misaligned {
                what: "kernel entry",
                value: entry,
                align: 256,
            });
        }
        if groups.contains(&0) || workgroup.contains(&0) {
            return Err(Error::BadGeometry {
                grid: std::array::from_fn(|i| u64::from(groups[i]) * u64::from(workgroup[i])),
                workgroup,
                reason: "a zero dimension",
            });
        }
        let items = aql::work_group_items(workgroup);
        if items > aql::MAX_WORK_GROUP_ITEMS {
            return Err(Error::TooLarge {
                what: "work-items per work-group",
                requested: items,
                limit: aql::MAX_WORK_GROUP_ITEMS,
            });
        }
        let grid: [u32; 3] = std::array::from_fn(|i| groups[i].saturating_mul(workgroup[i]));
        let requested = u64::from(kernel.group_segment_size()) + u64::from(dynamic_lds);
        let lds = u32::try_from(requested)
            .ok()
            .filter(|&b| b <= self.gpu.info().lds_bytes)
            .ok_or(Error::TooLarge {
                what: "LDS bytes per work-group (static and dynamic)",
                requested,
                limit: u64::from(self.gpu.info().lds_bytes),
            })?;
        // RSRC2.LDS_SIZE, bits 23:15, in 128-dword granules: what the CP takes from an AQL
        // packet's group segment size, compilers leave 0.
        let rsrc2 = (kd.compute_pgm_rsrc2 & !(0x1FF << 15)) | (lds.div_ceil(512) & 0x1FF) << 15;
        let private = kernel.private_segment_size();
        let scratch = if private > 0 {
            // A wave32 kernel (GFX10+) needs slots of 32 lanes, in the GPU's format (GFX9 or
            // GFX11: `allocate` refuses others).
            let lanes = if self.family.is_gfx10_plus() && kd.wavefront_size32() {
                32
            } else {
                64
            };
            // Saturating: three 32-bit group counts can overflow 64 bits (scratch is sized for
            // at most the GPU's wave slots anyway).
            let waves = groups
                .iter()
                .fold(1u64, |n, &g| n.saturating_mul(u64::from(g)))
                .saturating_mul(aql::work_group_items(workgroup).div_ceil(u64::from(lanes)));
            Some(self.scratch_for(private, waves, lanes)?)
        } else {
            None
        };
        let mut p = vec![if self.family.is_gfx10_plus() {
            // GLI_INV=1 (all), GLK_INV, GLV_INV, GL1_INV, GL2_INV.
            Pm4Packet::AcquireMem {
                coher_cntl: 0,
                gcr_cntl: 1 | 1 << 7 | 1 << 8 | 1 << 9 | 1 << 14,
            }
        } else {
            Pm4Packet::AcquireMem {
                coher_cntl: 0x28C0_0000,
                gcr_cntl: 0,
            }
        }];
        let set = |p: &mut Vec<Pm4Packet>, reg, values: Vec<u32>| {
            p.push(Pm4Packet::SetShReg { reg, values })
        };
        set(
            &mut p,
            regs::COMPUTE_PGM_LO,
            vec![(entry >> 8) as u32, ((entry >> 40) & 0xFF) as u32],
        );
        set(
            &mut p,
            regs::COMPUTE_PGM_RSRC1,
            vec![kd.compute_pgm_rsrc1, rsrc2],
        );
        if let Some(r3) = regs::compute_pgm_rsrc3(self.family) {
            set(&mut p, r3, vec![kd.compute_pgm_rsrc3]);
        }
        set(&mut p, regs::COMPUTE_RESOURCE_LIMITS, vec![0]);
        let layout = scratch.unwrap_or_default();
        set(&mut p, regs::COMPUTE_TMPRING_SIZE, vec![layout.tmpring()]);
        if matches!(self.family, pm4::GfxFamily::Gfx94x | pm4::GfxFamily::Gfx11) {
            // gfx94x's architected flat scratch and GFX11's hardware FLAT_SCRATCH: the SPI
            // starts each wave's FLAT_SCRATCH from here (mesa's radv writes it on GFX11 too,
            // `radv_emit_compute_scratch`), each XCC from its own share.
            for x in 0..self.xccs() {
                let base = layout.base + u64::from(x) * layout.xcc_bytes();
                let packet = Pm4Packet::SetShReg {
                    reg: regs::COMPUTE_DISPATCH_SCRATCH_BASE_LO,
                    values: vec![(base >> 8) as u32, ((base >> 40) & 0xFF) as u32],
                };
                self.for_xcc(&mut p, x, packet)?;
            }
        }
        set(&mut p, regs::COMPUTE_RESTART_X, vec![0, 0, 0]);
        // User SGPRs in the order the descriptor's enable bits define them.
        let props = kd.kernel_code_properties;
        let on = |bit| props & bit != 0;
        let split = |v: u64| [v as u32, (v >> 32) as u32];
        let mut user = Vec::new();
        // The private-segment resource differs per XCC: its user SGPRs are written per XCC
        // below, after the rest.
        let resource_sgprs = on(cp::ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER);
        if resource_sgprs {
            user.extend(layout.resource());
        }
        if on(cp::ENABLE_SGPR_DISPATCH_PTR) {
            user.extend(split(self.packet_image(
                kernel,
                grid,
                workgroup,
                kernarg_address,
                lds,
            )?));
        }
        if on(cp::ENABLE_SGPR_QUEUE_PTR) {
            user.extend([0u32; 2]); // a PM4 queue has no amd_queue_t
        }
        if on(cp::ENABLE_SGPR_KERNARG_SEGMENT_PTR) {
            user.extend(split(kernarg_address));
        }
        if on(cp::ENABLE_SGPR_DISPATCH_ID) {
            user.extend([0u32; 2]);
        }
        if on(cp::ENABLE_SGPR_FLAT_SCRATCH_INIT) {
            user.extend(split(layout.base));
        }
        if on(cp::ENABLE_SGPR_PRIVATE_SEGMENT_SIZE) {
            user.push(private);
        }
        if user.len() > regs::USER_DATA_COUNT as usize {
            return Err(Error::TooLarge {
                what: "user SGPRs (the compute user-data registers)",
                requested: user.len() as u64,
                limit: u64::from(regs::USER_DATA_COUNT),
            });
        }
        if resource_sgprs && self.xccs() > 1 {
            for x in 0..self.xccs() {
                let mut share = layout;
                share.base += u64::from(x) * layout.xcc_bytes();
                let mut values = user.clone();
                values[..4].copy_from_slice(&share.resource());
                let packet = Pm4Packet::SetShReg {
                    reg: regs::COMPUTE_USER_DATA_0,
                    values,
                };
                self.for_xcc(&mut p, x, packet)?;
            }
        } else if !user.is_empty() {
            set(&mut p, regs::COMPUTE_USER_DATA_0, user);
        }
        set(&mut p, regs::COMPUTE_START_X, vec![0, 0, 0]);
        set(&mut p, regs::COMPUTE_NUM_THREAD_X, workgroup.to_vec());
        let w32 = if self.family.is_gfx10_plus() && kd.wavefront_size32() {
            initiator::CS_W32_EN
        } else {
            0
        };
        p.push(Pm4Packet::DispatchDirect {
            dims: groups,
            initiator: initiator::COMPUTE_SHADER_EN | initiator::FORCE_START_AT_000 | w32,
        });
        Ok(p)
    }
}
