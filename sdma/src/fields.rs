//! Opcodes and field positions of the SDMA packets, shared by the encoder and the decoder so the
//! two cannot drift apart.
//!
//! Every header has the opcode in bits 0-7 and the sub-opcode in bits 8-15; bits 16-31 belong
//! to the packet. Counts are stored minus one (SDMA 4 and later).

/// Opcodes (header bits 0-7).
pub mod op {
    /// NOP; a zero dword is a one-dword NOP, which is why ring padding is zeros.
    pub const NOP: u8 = 0;
    /// COPY (sub-op [`super::sub_op::COPY_LINEAR`]).
    pub const COPY: u8 = 1;
    /// WRITE (sub-op [`super::sub_op::WRITE_LINEAR`]).
    pub const WRITE: u8 = 2;
    /// INDIRECT buffer (not produced or decoded here).
    pub const INDIRECT: u8 = 4;
    /// FENCE: write a dword.
    pub const FENCE: u8 = 5;
    /// TRAP: raise an interrupt.
    pub const TRAP: u8 = 6;
    /// POLL_REGMEM: wait for a memory (or register) value.
    pub const POLL_REGMEM: u8 = 8;
    /// ATOMIC on a 64-bit word.
    pub const ATOMIC: u8 = 10;
    /// CONSTANT_FILL.
    pub const CONSTANT_FILL: u8 = 11;
    /// TIMESTAMP (sub-op [`super::sub_op::TIMESTAMP_GET_GLOBAL`]).
    pub const TIMESTAMP: u8 = 13;
    /// GCR_REQ: cache writeback/invalidate (SDMA 5 and later).
    pub const GCR_REQ: u8 = 17;
}

/// Sub-opcodes (header bits 8-15) of the opcodes that have several.
pub mod sub_op {
    /// COPY: linear (byte) copy.
    pub const COPY_LINEAR: u8 = 0;
    /// COPY: a rectangular window of one linear surface into another, in elements
    /// (`LINEAR_SUB_WIND` in Linux's headers, `COPY_LINEAR_RECT` in ROCr's).
    pub const COPY_LINEAR_SUB_WINDOW: u8 = 4;
    /// WRITE: linear (untiled) write of inline dwords.
    pub const WRITE_LINEAR: u8 = 0;
    /// TIMESTAMP: write the global (GPU-wide) 64-bit timestamp.
    pub const TIMESTAMP_GET_GLOBAL: u8 = 2;
    /// GCR_REQ as the kernel's own rings write it (Linux `sdma_v5_0`/`sdma_v6_0`).
    pub const GCR_KERNEL: u8 = 0;
    /// GCR_REQ as user-mode queues write it (ROCr `SDMA_SUBOP_USER_GCR`, tinygrad).
    pub const GCR_USER: u8 = 1;
}

/// ATOMIC operation codes (header bits 25-31): the texture cache's `TC_OP` values (Linux
/// `*_enum.h`). [`crate::AtomicOp`] names the one kfdrt uses; the others go through
/// [`crate::AtomicOp::Other`].
pub mod atomic_op {
    /// Swap, 64-bit, returning the old value.
    pub const SWAP_RTN_64: u8 = 0x27;
    /// Compare-and-swap, 64-bit.
    pub const CMPSWAP_RTN_64: u8 = 0x28;
    /// Add, 64-bit (ROCr completes a signal by adding -1).
    pub const ADD_RTN_64: u8 = 0x2F;
    /// Subtract, 64-bit.
    pub const SUB_RTN_64: u8 = 0x30;
}

/// GCR_CONTROL bits (19 bits, [`crate::SdmaPacket::Gcr`]'s `control`), positions from ROCr's
/// `SDMA_PKT_GCR` (bits 0-15 travel in DW2 bits 16-31, bits 16-18 in DW3 bits 0-2).
pub mod gcr_control {
    /// GLI (instruction cache) invalidate, 2 bits.
    pub const GLI_INV_SHIFT: u32 = 0;
    /// GL1 range mode, 2 bits.
    pub const GL1_RANGE_SHIFT: u32 = 2;
    /// GLM (metadata cache) writeback.
    pub const GLM_WB: u32 = 1 << 4;
    /// GLM invalidate.
    pub const GLM_INV: u32 = 1 << 5;
    /// GLK (scalar cache) writeback.
    pub const GLK_WB: u32 = 1 << 6;
    /// GLK invalidate.
    pub const GLK_INV: u32 = 1 << 7;
    /// GLV (vector L0) invalidate.
    pub const GLV_INV: u32 = 1 << 8;
    /// GL1 invalidate.
    pub const GL1_INV: u32 = 1 << 9;
    /// GL2 "us" (unsynchronized) mode.
    pub const GL2_US: u32 = 1 << 10;
    /// GL2 range mode, 2 bits (0 = the whole cache, ignoring base and limit).
    pub const GL2_RANGE_SHIFT: u32 = 11;
    /// GL2 discard.
    pub const GL2_DISCARD: u32 = 1 << 13;
    /// GL2 invalidate.
    pub const GL2_INV: u32 = 1 << 14;
    /// GL2 writeback.
    pub const GL2_WB: u32 = 1 << 15;
    /// Base and limit are physical addresses.
    pub const RANGE_IS_PA: u32 = 1 << 16;
    /// Sequencing of the actions, 2 bits.
    pub const SEQ_SHIFT: u32 = 17;
    /// ROCr's writeback after a copy: GL2 and GLK written back.
    pub const WRITEBACK: u32 = GL2_WB | GLK_WB;
    /// ROCr's writeback and invalidate before a copy: GL2 and GLK written back, GL2, GL1, GLV
    /// and GLK invalidated.
    pub const WRITEBACK_INVALIDATE: u32 = WRITEBACK | GL2_INV | GL1_INV | GLV_INV | GLK_INV;
    /// Width of GCR_CONTROL.
    pub const BITS: u32 = 19;
}

/// Header: opcode bits 0-7, sub-opcode bits 8-15.
pub(crate) const SUB_OP_SHIFT: u32 = 8;

/// COPY_LINEAR header: BROADCAST (two destinations, a 9-dword packet).
pub(crate) const COPY_BROADCAST: u32 = 1 << 27;
/// COPY_LINEAR DW1 and CONSTANT_FILL DW4: the widest "bytes - 1" field of any SDMA 4-6 part
/// (30 bits; parts with 22 bits keep bits 22-29 zero).
pub(crate) const BYTE_COUNT_MASK: u32 = 0x3FFF_FFFF;

/// COPY headers: TMZ (the access is to trusted memory) bit 18; on SDMA 6, CPV (the cache
/// policies are valid) bit 19.
pub(crate) const COPY_TMZ: u32 = 1 << 18;
pub(crate) const COPY_CPV: u32 = 1 << 19;

/// LINEAR_SUB_WINDOW: 13 dwords.
pub(crate) const SUB_WINDOW_DWORDS: usize = 13;
/// LINEAR_SUB_WINDOW header: log2 of the element size, bits 29-31 (0-4 are defined: 1 to 16
/// bytes).
pub(crate) const SUB_WINDOW_ELEMENT_SHIFT: u32 = 29;
pub(crate) const SUB_WINDOW_ELEMENT_MAX: u32 = 4;
/// LINEAR_SUB_WINDOW DW3/DW8 (x bits 0-13, y bits 16-29) and DW11 (width - 1 bits 0-13,
/// height - 1 bits 16-29).
pub(crate) const SUB_WINDOW_XY_MASK: u32 = 0x3FFF;
pub(crate) const SUB_WINDOW_Y_SHIFT: u32 = 16;
/// LINEAR_SUB_WINDOW DW4/DW9: z in the low bits (11 or 13, see
/// [`crate::SdmaVersion::sub_window_z_bits`]), pitch - 1 bits 13-31.
pub(crate) const SUB_WINDOW_PITCH_SHIFT: u32 = 13;
pub(crate) const SUB_WINDOW_PITCH_BITS: u32 = 19;
/// LINEAR_SUB_WINDOW DW5/DW10: slice pitch - 1, bits 0-27.
pub(crate) const SUB_WINDOW_SLICE_BITS: u32 = 28;
/// LINEAR_SUB_WINDOW DW12: depth - 1 in the low bits (as z), DST_SW bits 16-17, DST cache
/// policy bits 18-20 (SDMA 6), SRC_SW bits 24-25, SRC cache policy bits 26-28 (SDMA 6).
pub(crate) const SUB_WINDOW_DST_SWAP_SHIFT: u32 = 16;
pub(crate) const SUB_WINDOW_DST_POLICY_SHIFT: u32 = 18;
pub(crate) const SUB_WINDOW_SRC_SWAP_SHIFT: u32 = 24;
pub(crate) const SUB_WINDOW_SRC_POLICY_SHIFT: u32 = 26;
pub(crate) const SWAP_MASK: u32 = 3;
pub(crate) const CACHE_POLICY_MASK: u32 = 7;

/// WRITE_LINEAR DW3: "dwords - 1", 20 bits.
pub(crate) const WRITE_COUNT_MASK: u32 = 0xF_FFFF;

/// CONSTANT_FILL header: FILLSIZE bits 30-31; 2 = the data is a dword.
pub(crate) const FILL_SIZE_SHIFT: u32 = 30;
pub(crate) const FILL_SIZE_DWORD: u32 = 2;

/// FENCE header: MTYPE bits 16-18; 3 = uncached.
pub(crate) const FENCE_MTYPE_SHIFT: u32 = 16;
pub(crate) const FENCE_MTYPE_MASK: u32 = 7;
pub(crate) const FENCE_MTYPE_UC: u32 = 3;

/// TRAP DW1: INT_CONTEXT, 28 bits.
pub(crate) const TRAP_INT_CONTEXT_MASK: u32 = 0x0FFF_FFFF;

/// POLL_REGMEM header: HDP_FLUSH bit 26, FUNC bits 28-30, MEM_POLL bit 31.
pub(crate) const POLL_HDP_FLUSH: u32 = 1 << 26;
/// ROCr's HDP flush packet (`hdp_flush_cmd`): a register POLL_REGMEM with these dwords.
pub(crate) const HDP_FLUSH_DWORDS: [u32; 6] = [0x8, 0, 0x8000_0000, 0, 0, 0];
pub(crate) const POLL_FUNC_SHIFT: u32 = 28;
pub(crate) const POLL_MEM: u32 = 1 << 31;
/// POLL_REGMEM DW5: interval bits 0-15, retry count bits 16-27.
pub(crate) const POLL_INTERVAL_MASK: u32 = 0xFFFF;
pub(crate) const POLL_RETRY_SHIFT: u32 = 16;
pub(crate) const POLL_RETRY_MASK: u32 = 0xFFF;

/// ATOMIC header: LOOP bit 16, operation bits 25-31.
pub(crate) const ATOMIC_LOOP: u32 = 1 << 16;
pub(crate) const ATOMIC_OP_SHIFT: u32 = 25;
pub(crate) const ATOMIC_OP_MASK: u32 = 0x7F;
/// ATOMIC DW7: loop interval, 13 bits.
pub(crate) const ATOMIC_LOOP_INTERVAL_MASK: u32 = 0x1FFF;

/// GCR_REQ: addresses in 128-byte granules, bits 7-47 (DW1/DW3 bits 7-31 hold address bits
/// 7-31, DW2/DW4 bits 0-15 address bits 32-47).
pub(crate) const GCR_ADDR_LO_MASK: u32 = !0x7F;
pub(crate) const GCR_ADDR_HI_MASK: u32 = 0xFFFF;
pub(crate) const GCR_ADDR_ALIGN: u64 = 128;
pub(crate) const GCR_ADDR_MAX: u64 = (1 << 48) - 1;
/// GCR_REQ: GCR_CONTROL bits 0-15 in DW2 bits 16-31, bits 16-18 in DW3 bits 0-2.
pub(crate) const GCR_CONTROL_LO_SHIFT: u32 = 16;
pub(crate) const GCR_CONTROL_HI_MASK: u32 = 7;

/// NOP header: count of dwords after the header, bits 16-29.
pub(crate) const NOP_COUNT_SHIFT: u32 = 16;
pub(crate) const NOP_COUNT_MASK: u32 = 0x3FFF;

/// Builds a header dword.
pub(crate) const fn header(op: u8, sub_op: u8, fields: u32) -> u32 {
    op as u32 | (sub_op as u32) << SUB_OP_SHIFT | fields
}
