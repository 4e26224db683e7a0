//! The sizes KFD requires of a compute queue's EOP buffer and context save/restore (CWSR) area.
//!
//! Since Linux 6.12, `CREATE_QUEUE` refuses a compute queue whose `ctl_stack_size` differs from
//! the node's, whose `ctx_save_restore_size` is below the node's `cwsr_size`, whose EOP buffer
//! is shorter than the node's `eop_buffer_size` (its mapping: that size page aligned), or whose
//! CWSR mapping is not exactly [`QueueAreaSizes::cwsr_mapping_bytes`] long
//! (`kfd_queue_acquire_buffers` in
//! `drivers/gpu/drm/amd/amdkfd/kfd_queue.c`). The node values come from
//! `kfd_queue_ctx_save_restore_size` in the same file; this module computes them the same way,
//! so the runtime (which must pass them) and the emulated driver (which checks them) agree by
//! construction, and a test pins the numbers for the parts kfdrt knows.

/// A GPU page as the queue checks count it (`AMDGPU_GPU_PAGE_SIZE`).
pub const GPU_PAGE_SIZE: u64 = 4096;

const SGPR_BYTES_PER_CU: u64 = 0x4000;
const LDS_BYTES_PER_CU: u64 = 0x10000;
const HWREG_BYTES_PER_CU: u64 = 0x1000;
const DEBUGGER_BYTES_PER_WAVE: u64 = 32;
const DEBUGGER_BYTES_ALIGN: u64 = 64;
/// `SIZEOF_HSA_USER_CONTEXT_SAVE_AREA_HEADER`.
const SAVE_AREA_HEADER_BYTES: u64 = 40;
/// Navi10: the first part with 12-byte control-stack entries and 32 waves per CU.
const GFX_NAVI10: u32 = 100100;

/// What of a GPU node the sizes depend on (its topology properties).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeShape {
    /// `gfx_target_version` (major * 10000 + minor * 100 + stepping).
    pub gfx_target_version: u32,
    /// `simd_count` (all XCCs).
    pub simd_count: u32,
    /// `simd_per_cu`.
    pub simd_per_cu: u32,
    /// `array_count`.
    pub array_count: u32,
    /// `simd_arrays_per_engine`.
    pub simd_arrays_per_engine: u32,
    /// `lds_size_in_kb`.
    pub lds_size_in_kb: u32,
    /// Accelerator complexes (`num_xcc`; 0 is read as 1).
    pub num_xcc: u32,
}

/// The node's queue-area properties, as KFD computes them on a kernel of `page_size` pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueAreaSizes {
    /// The kernel's `PAGE_SIZE`, which CWSR sizes are aligned to.
    pub page_size: u64,
    /// `ctl_stack_size`: what `CREATE_QUEUE` must pass, exactly.
    pub ctl_stack_size: u32,
    /// `cwsr_size`: the least `ctx_save_restore_size` `CREATE_QUEUE` accepts (control stack
    /// plus work-group context data, per XCC).
    pub cwsr_size: u32,
    /// `debug_memory_size`: the debugger's area after each XCC's save area.
    pub debug_memory_size: u32,
    /// `eop_buffer_size`: an EOP buffer, when given, must be at least this long.
    pub eop_buffer_size: u32,
    /// XCCs each CWSR area is repeated for.
    pub num_xcc: u32,
}

fn align(v: u64, to: u64) -> u64 {
    v.div_ceil(to) * to
}

fn vgpr_bytes_per_cu(gfxv: u32) -> u64 {
    match gfxv {
        // Arcturus, Aldebaran, Aqua Vanjaram (gfx942) and gfx950: 512 VGPRs with AGPRs.
        90008 | 90010 | 90402 | 90500 => 0x80000,
        // Plum Bonito, Wheat Nas, gfx1200, gfx1201: 1.5x the register file.
        110000 | 110001 | 120000 | 120001 => 0x60000,
        _ => 0x40000,
    }
}

impl QueueAreaSizes {
    /// The sizes for a node on a kernel of 4 KiB pages, or `None` for parts older than Carrizo
    /// (gfx 8.0.1), which have no CWSR.
    pub fn for_node(n: &NodeShape) -> Option<QueueAreaSizes> {
        Self::for_node_with_pages(n, GPU_PAGE_SIZE)
    }

    /// The sizes for a node on a kernel of `page_size` pages: `cwsr_size` is aligned to the
    /// page (`kfd_queue_ctx_save_restore_size`: the control stack and the work-group data to
    /// the GPU page, their sum to `PAGE_SIZE`).
    pub fn for_node_with_pages(n: &NodeShape, page_size: u64) -> Option<QueueAreaSizes> {
        let page_size = page_size.max(GPU_PAGE_SIZE);
        let gfxv = n.gfx_target_version;
        if gfxv < 80001 || n.simd_per_cu == 0 {
            return None;
        }
        let xcc = u64::from(n.num_xcc.max(1));
        let cu = u64::from(n.simd_count) / u64::from(n.simd_per_cu) / xcc;
        let waves = if gfxv < GFX_NAVI10 {
            let per_engine = u64::from(n.simd_arrays_per_engine.max(1));
            (cu * 40).min(u64::from(n.array_count) / per_engine * 512)
        } else {
            cu * 32
        };
        // gfx950 saves the whole LDS of a CU; earlier parts a fixed 64 KiB.
        let lds = if gfxv == 90500 {
            u64::from(n.lds_size_in_kb) << 10
        } else {
            LDS_BYTES_PER_CU
        };
        let wg_data = align(
            cu * (vgpr_bytes_per_cu(gfxv) + SGPR_BYTES_PER_CU + lds + HWREG_BYTES_PER_CU),
            GPU_PAGE_SIZE,
        );
        let entry = if gfxv >= GFX_NAVI10 { 12 } else { 8 };
        let mut ctl = align(SAVE_AREA_HEADER_BYTES + waves * entry + 8, GPU_PAGE_SIZE);
        if gfxv / 10000 == 10 {
            // The gfx10 hardware limits the control stack to 0x7000 bytes.
            ctl = ctl.min(0x7000);
        }
        let eop = if gfxv == 80002 { 0x8000 } else { 4096 };
        Some(QueueAreaSizes {
            page_size,
            ctl_stack_size: u32::try_from(ctl).ok()?,
            cwsr_size: u32::try_from(align(ctl + wg_data, page_size)).ok()?,
            debug_memory_size: u32::try_from(align(
                waves * DEBUGGER_BYTES_PER_WAVE,
                DEBUGGER_BYTES_ALIGN,
            ))
            .ok()?,
            eop_buffer_size: eop,
            num_xcc: u32::try_from(xcc).ok()?,
        })
    }

    /// Bytes the CWSR area of a queue created with `ctx_save_restore_size` must map, exactly:
    /// `(ctx_save_restore_size + debug_memory_size) * XCCs`, page aligned.
    pub fn cwsr_mapping_bytes(&self, ctx_save_restore_size: u32) -> u64 {
        align(
            (u64::from(ctx_save_restore_size) + u64::from(self.debug_memory_size))
                * u64::from(self.num_xcc),
            self.page_size.max(GPU_PAGE_SIZE),
        )
    }

    /// Bytes an EOP buffer of `eop_buffer_size` must map, exactly: the size page aligned
    /// (`ALIGN((u64)eop_ring_buffer_size, PAGE_SIZE)`).
    pub fn eop_mapping_bytes(&self, eop_buffer_size: u64) -> u64 {
        align(eop_buffer_size, self.page_size.max(GPU_PAGE_SIZE))
    }

    /// [`QueueAreaSizes::cwsr_mapping_bytes`] for the node's own `cwsr_size`.
    pub fn cwsr_total_bytes(&self) -> u64 {
        self.cwsr_mapping_bytes(self.cwsr_size)
    }
}

/// Bytes the ring of a queue of KFD type `queue_type` (`KFD_IOC_QUEUE_TYPE_*`) created with
/// `ring_size` must map, exactly (from its first page), on a kernel of `page_size` pages: AQL
/// queues on gfx7 and gfx8 are mapped twice and appear twice their size, and the size is page
/// aligned (`PAGE_ALIGN`).
pub fn expected_ring_bytes(
    gfx_target_version: u32,
    queue_type: u32,
    ring_size: u64,
    page_size: u64,
) -> u64 {
    let aql = queue_type == crate::bindings::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL;
    let bytes = if aql && (70000..90000).contains(&gfx_target_version) {
        ring_size / 2
    } else {
        ring_size
    };
    align(bytes, page_size.max(GPU_PAGE_SIZE))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MI210: 104 CUs (416 SIMDs), 8 arrays, 1 array per engine.
    const MI210: NodeShape = NodeShape {
        gfx_target_version: 90010,
        simd_count: 416,
        simd_per_cu: 4,
        array_count: 8,
        simd_arrays_per_engine: 1,
        lds_size_in_kb: 64,
        num_xcc: 1,
    };

    /// Numbers worked out by hand from `kfd_queue_ctx_save_restore_size` for the parts the
    /// emulator models, so a change to the formula shows up here, not as a refused queue.
    #[test]
    fn sizes_of_known_parts() {
        let mi210 = QueueAreaSizes::for_node(&MI210).unwrap();
        // waves = min(104 * 40, 8 * 512) = 4096; ctl = align(40 + 4096 * 8 + 8) = 0x9000.
        assert_eq!(mi210.ctl_stack_size, 0x9000);
        // wg = 104 * (0x80000 + 0x4000 + 0x10000 + 0x1000) = 0x3C8_8000.
        assert_eq!(mi210.cwsr_size, 0x9000 + 0x3C8_8000);
        assert_eq!(mi210.debug_memory_size, 4096 * 32);
        assert_eq!(mi210.eop_buffer_size, 4096);
        assert_eq!(
            mi210.cwsr_total_bytes(),
            u64::from(mi210.cwsr_size) + 4096 * 32
        );

        // MI300X: 304 CUs over 8 XCCs (38 each), 32 arrays.
        let mi300 = QueueAreaSizes::for_node(&NodeShape {
            gfx_target_version: 90402,
            simd_count: 1216,
            simd_per_cu: 4,
            array_count: 32,
            simd_arrays_per_engine: 1,
            lds_size_in_kb: 64,
            num_xcc: 8,
        })
        .unwrap();
        // waves = min(38 * 40, 32 * 512) = 1520; ctl = align(40 + 1520 * 8 + 8) = 0x3000.
        assert_eq!(mi300.ctl_stack_size, 0x3000);
        assert_eq!(mi300.cwsr_size, 0x3000 + 38 * 0x95000);
        assert_eq!(mi300.debug_memory_size, 1520 * 32);
        assert_eq!(
            mi300.cwsr_total_bytes(),
            (u64::from(mi300.cwsr_size) + 1520 * 32) * 8
        );

        // RX 7900 XTX: 96 CUs (gfx11 counts 2 SIMDs per CU), wave32 parts use 32 waves per CU.
        let navi31 = QueueAreaSizes::for_node(&NodeShape {
            gfx_target_version: 110000,
            simd_count: 192,
            simd_per_cu: 2,
            array_count: 12,
            simd_arrays_per_engine: 2,
            lds_size_in_kb: 64,
            num_xcc: 1,
        })
        .unwrap();
        // waves = 96 * 32 = 3072; ctl = align(40 + 3072 * 12 + 8) = 0xA000.
        assert_eq!(navi31.ctl_stack_size, 0xA000);
        assert_eq!(navi31.cwsr_size, 0xA000 + 96 * 0x75000);

        // gfx10 caps the control stack; gfx940 keeps the small VGPR area; gfx950 saves its LDS.
        let navi21 = QueueAreaSizes::for_node(&NodeShape {
            gfx_target_version: 100300,
            simd_count: 160,
            simd_per_cu: 2,
            array_count: 8,
            simd_arrays_per_engine: 2,
            lds_size_in_kb: 64,
            num_xcc: 1,
        })
        .unwrap();
        assert_eq!(navi21.ctl_stack_size, 0x7000);
        let gfx940 = NodeShape {
            gfx_target_version: 90400,
            simd_count: 912,
            simd_per_cu: 4,
            array_count: 24,
            simd_arrays_per_engine: 1,
            lds_size_in_kb: 64,
            num_xcc: 6,
        };
        let s = QueueAreaSizes::for_node(&gfx940).unwrap();
        assert_eq!(s.cwsr_size - s.ctl_stack_size, 38 * 0x55000);
        let gfx950 = QueueAreaSizes::for_node(&NodeShape {
            gfx_target_version: 90500,
            lds_size_in_kb: 160,
            ..gfx940
        })
        .unwrap();
        assert_eq!(
            gfx950.cwsr_size - gfx950.ctl_stack_size,
            38 * (0x80000 + 0x4000 + 160 * 1024 + 0x1000)
        );
        assert_eq!(
            QueueAreaSizes::for_node(&NodeShape {
                gfx_target_version: 80002,
                ..gfx940
            })
            .unwrap()
            .eop_buffer_size,
            0x8000
        );
        assert!(QueueAreaSizes::for_node(&NodeShape {
            gfx_target_version: 70002,
            ..gfx940
        })
        .is_none());
    }

    #[test]
    fn ring_bytes() {
        use crate::bindings::{KFD_IOC_QUEUE_TYPE_COMPUTE, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL};
        let ring = |gfx, ty, size| expected_ring_bytes(gfx, ty, size, 4096);
        assert_eq!(ring(80003, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 8192), 4096);
        assert_eq!(ring(80003, KFD_IOC_QUEUE_TYPE_COMPUTE, 8192), 8192);
        assert_eq!(ring(90010, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 8192), 8192);
        // PAGE_ALIGN on a kernel of 64 KiB pages.
        assert_eq!(
            expected_ring_bytes(90010, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 8192, 64 << 10),
            64 << 10
        );
    }

    #[test]
    fn sizes_on_a_kernel_of_64_kib_pages() {
        let small = QueueAreaSizes::for_node(&MI210).unwrap();
        let big = QueueAreaSizes::for_node_with_pages(&MI210, 64 << 10).unwrap();
        // The control stack keeps GPU-page alignment; the save area is page aligned.
        assert_eq!(big.ctl_stack_size, small.ctl_stack_size);
        assert_eq!(u64::from(big.cwsr_size) % (64 << 10), 0);
        assert!(big.cwsr_size >= small.cwsr_size);
        assert_eq!(big.cwsr_total_bytes() % (64 << 10), 0);
        assert_eq!(big.eop_mapping_bytes(4096), 64 << 10);
        assert_eq!(small.eop_mapping_bytes(4096), 4096);
    }
}
