//! Named values and bits of packet fields (Linux `soc15d.h` for gfx9, `nvd.h` for gfx10+).

/// A comparison of WAIT_REG_MEM (and SDMA's POLL_REGMEM): `(value & mask) <op> reference`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum CompareFunction {
    /// Always true.
    Always = 0,
    /// `<`.
    Less = 1,
    /// `<=`.
    LessEqual = 2,
    /// `==`.
    Equal = 3,
    /// `!=`.
    NotEqual = 4,
    /// `>=`.
    GreaterEqual = 5,
    /// `>`.
    Greater = 6,
}

impl CompareFunction {
    /// From the low three bits of `v` (the 3-bit FUNCTION field; higher bits are ignored). The
    /// reserved value 7 gives `None`.
    pub fn from_bits(v: u32) -> Option<CompareFunction> {
        use CompareFunction::*;
        Some(match v & 7 {
            0 => Always,
            1 => Less,
            2 => LessEqual,
            3 => Equal,
            4 => NotEqual,
            5 => GreaterEqual,
            6 => Greater,
            _ => return None,
        })
    }

    /// The 3-bit field value.
    pub fn bits(self) -> u32 {
        self as u32
    }

    /// Evaluates `(value & mask) <op> reference`, unsigned, as the CP does (the reference is
    /// not masked).
    pub fn eval(self, value: u32, reference: u32, mask: u32) -> bool {
        let v = value & mask;
        match self {
            CompareFunction::Always => true,
            CompareFunction::Less => v < reference,
            CompareFunction::LessEqual => v <= reference,
            CompareFunction::Equal => v == reference,
            CompareFunction::NotEqual => v != reference,
            CompareFunction::GreaterEqual => v >= reference,
            CompareFunction::Greater => v > reference,
        }
    }
}

/// Event types (EVENT_WRITE and RELEASE_MEM `EVENT_TYPE`, 6 bits).
pub mod event {
    /// `CS_PARTIAL_FLUSH`: wait for earlier dispatches to finish (EVENT_WRITE, index 4).
    pub const CS_PARTIAL_FLUSH: u32 = 0x07;
    /// `CACHE_FLUSH_AND_INV_TS_EVENT`: end of pipe with cache flush (RELEASE_MEM).
    pub const CACHE_FLUSH_AND_INV_TS: u32 = 0x14;
    /// `CS_DONE`: compute shaders done (RELEASE_MEM, index 6).
    pub const CS_DONE: u32 = 0x2F;
}

/// Event indices (`EVENT_INDEX`, 4 bits).
pub mod event_index {
    /// EVENT_WRITE of a `*_PARTIAL_FLUSH` event.
    pub const PARTIAL_FLUSH: u32 = 4;
    /// RELEASE_MEM at end of pipe.
    pub const END_OF_PIPE: u32 = 5;
    /// RELEASE_MEM when shaders are done.
    pub const SHADER_DONE: u32 = 6;
}

/// RELEASE_MEM `DATA_SEL` values (3 bits).
pub mod data_sel {
    /// No data.
    pub const NONE: u32 = 0;
    /// The low 32 bits of the data.
    pub const DATA32: u32 = 1;
    /// 64-bit data.
    pub const DATA64: u32 = 2;
    /// The 64-bit GPU clock counter.
    pub const GPU_CLOCK: u32 = 3;
    /// The 64-bit system clock counter.
    pub const SYSTEM_CLOCK: u32 = 4;
}

/// RELEASE_MEM `INT_SEL` values (3 bits).
pub mod int_sel {
    /// No interrupt.
    pub const NONE: u32 = 0;
    /// Interrupt only (with `DATA_SEL` none).
    pub const SEND_INT: u32 = 1;
    /// Interrupt once the data write is confirmed.
    pub const SEND_INT_ON_CONFIRM: u32 = 2;
    /// Wait for the write confirmation, no interrupt.
    pub const SEND_DATA_ON_CONFIRM: u32 = 3;
}

/// RELEASE_MEM DW1 cache-action bits ([`Pm4Packet::ReleaseMem`](crate::Pm4Packet)'s
/// `cache_action`): everything above the event fields, bits 12-31.
pub mod release_mem {
    /// The DW1 bits `cache_action` may use.
    pub const CACHE_ACTION_MASK: u32 = 0xFFFF_F000;

    /// `CACHE_POLICY` (bits 25-26): 0 LRU, 1 stream, 2 NOA, 3 bypass.
    pub const fn cache_policy(policy: u32) -> u32 {
        (policy & 3) << 25
    }

    /// gfx9 (gfx900 to gfx94x) action enables (`soc15d.h`).
    pub mod gfx9 {
        /// `TCL1_VOL_ACTION_EN`.
        pub const TCL1_VOL_ACTION_EN: u32 = 1 << 12;
        /// `TC_VOL_ACTION_EN` (L2).
        pub const TC_VOL_ACTION_EN: u32 = 1 << 13;
        /// `TC_WB_ACTION_EN`: write back L2.
        pub const TC_WB_ACTION_EN: u32 = 1 << 15;
        /// `TCL1_ACTION_EN`.
        pub const TCL1_ACTION_EN: u32 = 1 << 16;
        /// `TC_ACTION_EN`: invalidate L2.
        pub const TC_ACTION_EN: u32 = 1 << 17;
        /// `TC_NC_ACTION_EN`: act on non-coherent L2 lines.
        pub const TC_NC_ACTION_EN: u32 = 1 << 19;
        /// `TC_MD_ACTION_EN` (L2 metadata).
        pub const TC_MD_ACTION_EN: u32 = 1 << 21;
        /// `EXEC` (trailing fence; bit 28 per `soc15d.h`).
        pub const EXEC: u32 = 1 << 28;
    }

    /// gfx10+ GCR bits of RELEASE_MEM DW1 (`nvd.h`).
    pub mod gcr {
        /// `GLM_WB`.
        pub const GLM_WB: u32 = 1 << 12;
        /// `GLM_INV` (set together with `GLM_WB`).
        pub const GLM_INV: u32 = 1 << 13;
        /// `GLV_INV`: invalidate the vector L0.
        pub const GLV_INV: u32 = 1 << 14;
        /// `GL1_INV`.
        pub const GL1_INV: u32 = 1 << 15;
        /// `GL2_US`.
        pub const GL2_US: u32 = 1 << 16;
        /// `GL2_RANGE` (bits 17-18).
        pub const fn gl2_range(range: u32) -> u32 {
            (range & 3) << 17
        }
        /// `GL2_DISCARD`.
        pub const GL2_DISCARD: u32 = 1 << 19;
        /// `GL2_INV`.
        pub const GL2_INV: u32 = 1 << 20;
        /// `GL2_WB`.
        pub const GL2_WB: u32 = 1 << 21;
        /// `SEQ`: perform the actions in sequence.
        pub const SEQ: u32 = 1 << 22;
        /// `EXECUTE` (bit 28).
        pub const EXECUTE: u32 = 1 << 28;
    }
}

/// ACQUIRE_MEM cache-control bits.
pub mod acquire_mem {
    /// gfx9 `COHER_CNTL` (DW1 bits 0-30) action enables (`soc15d.h`). kfdtest uses
    /// `SH_ICACHE | SH_KCACHE | TC | TCL1` = 0x28C0_0000.
    pub mod coher_cntl {
        /// `TC_NC_ACTION_ENA`.
        pub const TC_NC: u32 = 1 << 3;
        /// `TC_WC_ACTION_ENA`.
        pub const TC_WC: u32 = 1 << 4;
        /// `TC_INV_METADATA_ACTION_ENA`.
        pub const TC_INV_METADATA: u32 = 1 << 5;
        /// `TCL1_VOL_ACTION_ENA`.
        pub const TCL1_VOL: u32 = 1 << 15;
        /// `TC_WB_ACTION_ENA`.
        pub const TC_WB: u32 = 1 << 18;
        /// `TCL1_ACTION_ENA`: invalidate the vector L1.
        pub const TCL1: u32 = 1 << 22;
        /// `TC_ACTION_ENA`: invalidate L2.
        pub const TC: u32 = 1 << 23;
        /// `SH_KCACHE_ACTION_ENA`: invalidate the scalar cache.
        pub const SH_KCACHE: u32 = 1 << 27;
        /// `SH_KCACHE_VOL_ACTION_ENA`.
        pub const SH_KCACHE_VOL: u32 = 1 << 28;
        /// `SH_ICACHE_ACTION_ENA`: invalidate the instruction cache.
        pub const SH_ICACHE: u32 = 1 << 29;
        /// `SH_KCACHE_WB_ACTION_ENA`.
        pub const SH_KCACHE_WB: u32 = 1 << 30;
    }

    /// gfx10+ `GCR_CNTL` (DW7) bits (`nvd.h`).
    pub mod gcr_cntl {
        /// `GLI_INV` (bits 0-1): 1 invalidates the whole instruction cache.
        pub const fn gli_inv(mode: u32) -> u32 {
            mode & 3
        }
        /// `GL1_RANGE` (bits 2-3).
        pub const fn gl1_range(range: u32) -> u32 {
            (range & 3) << 2
        }
        /// `GLM_WB`.
        pub const GLM_WB: u32 = 1 << 4;
        /// `GLM_INV`.
        pub const GLM_INV: u32 = 1 << 5;
        /// `GLK_WB`: write back the scalar cache.
        pub const GLK_WB: u32 = 1 << 6;
        /// `GLK_INV`: invalidate the scalar cache.
        pub const GLK_INV: u32 = 1 << 7;
        /// `GLV_INV`: invalidate the vector L0.
        pub const GLV_INV: u32 = 1 << 8;
        /// `GL1_INV`.
        pub const GL1_INV: u32 = 1 << 9;
        /// `GL2_US`.
        pub const GL2_US: u32 = 1 << 10;
        /// `GL2_RANGE` (bits 11-12).
        pub const fn gl2_range(range: u32) -> u32 {
            (range & 3) << 11
        }
        /// `GL2_DISCARD`.
        pub const GL2_DISCARD: u32 = 1 << 13;
        /// `GL2_INV`.
        pub const GL2_INV: u32 = 1 << 14;
        /// `GL2_WB`.
        pub const GL2_WB: u32 = 1 << 15;
        /// `SEQ` (bits 16-17).
        pub const fn seq(mode: u32) -> u32 {
            (mode & 3) << 16
        }
    }
}

/// `DST_SEL` of WRITE_DATA and COPY_DATA, and `SRC_SEL` of COPY_DATA (4 bits).
pub mod sel {
    /// A memory-mapped register (the address is a dword register offset).
    pub const REGISTER: u32 = 0;
    /// WRITE_DATA destination: memory, synchronous through GRBM; COPY_DATA source: memory.
    pub const MEMORY_SYNC: u32 = 1;
    /// Memory through L2.
    pub const TC_L2: u32 = 2;
    /// GDS.
    pub const GDS: u32 = 3;
    /// Performance counters (COPY_DATA).
    pub const PERFCOUNTERS: u32 = 4;
    /// WRITE_DATA / COPY_DATA destination: memory, asynchronous (direct).
    pub const MEMORY: u32 = 5;
    /// COPY_DATA source: the immediate value in the source-address dwords.
    pub const IMMEDIATE: u32 = 5;
    /// COPY_DATA source: the 64-bit GPU clock counter.
    pub const GPU_CLOCK: u32 = 9;
}

/// WAIT_REG_MEM `MEM_SPACE` values.
pub mod mem_space {
    /// Poll a register.
    pub const REGISTER: u32 = 0;
    /// Poll memory.
    pub const MEMORY: u32 = 1;
}
