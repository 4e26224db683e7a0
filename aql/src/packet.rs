//! Typed AQL packets and their 64-byte encodings (16 dwords; dword 0 is header | setup << 16).

use crate::header::{FenceScope, Header, PacketType};
use crate::DecodeError;

/// AMD vendor packet format: PM4 indirect buffer (`AMD_AQL_FORMAT_PM4_IB`).
pub const AMD_FORMAT_PM4_IB: u8 = 1;
/// AMD vendor packet format: barrier-value.
pub const AMD_FORMAT_BARRIER_VALUE: u8 = 2;
/// The `dw_cnt_remain` value of a PM4-IB packet (dwords after the IB command).
const PM4_IB_DW_CNT_REMAIN: u32 = 0xA;
/// PM4 type-3 INDIRECT_BUFFER header: `3 << 30 | 2 << 16 | 0x3F << 8` (count 2 = 4 dwords - 2).
const PM4_INDIRECT_BUFFER_HEADER: u32 = 3 << 30 | 2 << 16 | 0x3F << 8;
/// INDIRECT_BUFFER's VALID bit (dword 3).
const PM4_IB_VALID: u32 = 1 << 23;

/// A kernel dispatch packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct KernelDispatchPacket {
    /// Barrier bit.
    pub barrier: bool,
    /// Acquire fence scope.
    pub acquire: FenceScope,
    /// Release fence scope.
    pub release: FenceScope,
    /// Grid dimensions, 1..=3 (the `setup` field).
    pub dimensions: u16,
    /// Work-group size in work-items per dimension.
    pub workgroup_size: [u16; 3],
    /// Grid size in work-items per dimension.
    pub grid_size: [u32; 3],
    /// Scratch bytes per work-item.
    pub private_segment_size: u32,
    /// LDS bytes per work-group.
    pub group_segment_size: u32,
    /// Address of the kernel descriptor.
    pub kernel_object: u64,
    /// Address of the kernel arguments (16-byte aligned).
    pub kernarg_address: u64,
    /// Signal decremented on completion (0 = none).
    pub completion_signal: u64,
}

impl KernelDispatchPacket {
    /// Encodes the packet as 16 dwords ([`Packet::encode`] of a kernel dispatch, without the
    /// match over packet kinds: this runs once per dispatch).
    #[inline]
    pub fn encode(&self) -> [u32; 16] {
        let header = Header {
            packet_type: PacketType::KernelDispatch,
            barrier: self.barrier,
            acquire: self.acquire,
            release: self.release,
        };
        let mut d = [0u32; 16];
        d[0] = u32::from(header.to_bits()) | u32::from(self.dimensions) << 16;
        d[1] = u32::from(self.workgroup_size[0]) | u32::from(self.workgroup_size[1]) << 16;
        d[2] = u32::from(self.workgroup_size[2]); // high half: reserved
        d[3] = self.grid_size[0];
        d[4] = self.grid_size[1];
        d[5] = self.grid_size[2];
        d[6] = self.private_segment_size;
        d[7] = self.group_segment_size;
        put(&mut d, 8, self.kernel_object);
        put(&mut d, 10, self.kernarg_address);
        put(&mut d, 14, self.completion_signal);
        d
    }
}

/// A barrier-AND or barrier-OR packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BarrierPacket {
    /// Barrier bit.
    pub barrier: bool,
    /// Acquire fence scope.
    pub acquire: FenceScope,
    /// Release fence scope.
    pub release: FenceScope,
    /// Dependency signals (0 = unused).
    pub dep_signal: [u64; 5],
    /// Signal decremented on completion (0 = none).
    pub completion_signal: u64,
}

/// AMD vendor packet running a PM4 indirect buffer (used for cache invalidation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Pm4IbPacket {
    /// Barrier bit.
    pub barrier: bool,
    /// Acquire fence scope.
    pub acquire: FenceScope,
    /// Release fence scope.
    pub release: FenceScope,
    /// GPU address of the PM4 buffer (4-byte aligned).
    pub ib_address: u64,
    /// Size of the PM4 buffer in dwords (20 bits).
    pub ib_size_dwords: u32,
    /// Signal decremented on completion (0 = none).
    pub completion_signal: u64,
}

/// AMD vendor barrier-value packet: waits until `(signal & mask) cond value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BarrierValuePacket {
    /// Barrier bit.
    pub barrier: bool,
    /// Acquire fence scope.
    pub acquire: FenceScope,
    /// Release fence scope.
    pub release: FenceScope,
    /// The signal to watch.
    pub signal: u64,
    /// Value compared against.
    pub value: i64,
    /// Mask applied to the signal's value.
    pub mask: i64,
    /// Condition: 0 eq, 1 ne, 2 lt, 3 gte (HSA signal conditions).
    pub condition: u32,
    /// Signal decremented on completion (0 = none).
    pub completion_signal: u64,
}

/// Any packet kfdrt writes or the emulator reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet {
    /// Kernel dispatch.
    KernelDispatch(KernelDispatchPacket),
    /// Barrier-AND.
    BarrierAnd(BarrierPacket),
    /// Barrier-OR.
    BarrierOr(BarrierPacket),
    /// AMD vendor PM4 indirect buffer.
    VendorPm4Ib(Pm4IbPacket),
    /// AMD vendor barrier-value.
    BarrierValue(BarrierValuePacket),
}

fn lo(v: u64) -> u32 {
    v as u32
}
fn hi(v: u64) -> u32 {
    (v >> 32) as u32
}
fn q(d: &[u32; 16], i: usize) -> u64 {
    u64::from(d[i]) | u64::from(d[i + 1]) << 32
}
fn put(d: &mut [u32; 16], i: usize, v: u64) {
    d[i] = lo(v);
    d[i + 1] = hi(v);
}

fn get(d: &[u32; 16], i: usize) -> u64 {
    u64::from(d[i]) | u64::from(d[i + 1]) << 32
}

/// The barrier bit of the packet header (bit 8 of dword 0, every packet type).
const HEADER_BARRIER_BIT: u32 = 1 << 8;

/// Whether an encoded packet has the barrier bit set.
pub fn encoded_barrier(d: &[u32; 16]) -> bool {
    d[0] & HEADER_BARRIER_BIT != 0
}

/// Sets or clears the barrier bit of an encoded packet, as [`Packet::set_barrier`] does before
/// encoding. Lets a writer stage packets already encoded and still mark the last of a batch.
pub fn set_encoded_barrier(d: &mut [u32; 16], barrier: bool) {
    if barrier {
        d[0] |= HEADER_BARRIER_BIT;
    } else {
        d[0] &= !HEADER_BARRIER_BIT;
    }
}

/// Sets the completion signal of an encoded packet (dwords 14-15 in every packet format), as
/// [`Packet::set_completion_signal`] does before encoding.
pub fn set_encoded_completion_signal(d: &mut [u32; 16], handle: u64) {
    put(d, 14, handle);
}

/// Adds `base` to the kernarg address (dwords 10-11) of an encoded kernel-dispatch packet, for
/// writers that stage kernel arguments before they know where they will live.
pub fn add_encoded_kernarg_base(d: &mut [u32; 16], base: u64) {
    let a = get(d, 10).wrapping_add(base);
    put(d, 10, a);
}

impl Packet {
    /// The packet's header (type, barrier bit, fences).
    pub fn header(&self) -> Header {
        let (packet_type, barrier, acquire, release) = match self {
            Packet::KernelDispatch(p) => {
                (PacketType::KernelDispatch, p.barrier, p.acquire, p.release)
            }
            Packet::BarrierAnd(p) => (PacketType::BarrierAnd, p.barrier, p.acquire, p.release),
            Packet::BarrierOr(p) => (PacketType::BarrierOr, p.barrier, p.acquire, p.release),
            Packet::VendorPm4Ib(p) => (PacketType::VendorSpecific, p.barrier, p.acquire, p.release),
            Packet::BarrierValue(p) => {
                (PacketType::VendorSpecific, p.barrier, p.acquire, p.release)
            }
        };
        Header {
            packet_type,
            barrier,
            acquire,
            release,
        }
    }

    /// The first 32 bits: header | setup << 16 — the word that publishes the packet.
    pub fn header_word(&self) -> u32 {
        let setup: u16 = match self {
            Packet::KernelDispatch(p) => p.dimensions,
            Packet::VendorPm4Ib(_) => u16::from(AMD_FORMAT_PM4_IB),
            Packet::BarrierValue(_) => u16::from(AMD_FORMAT_BARRIER_VALUE),
            _ => 0,
        };
        u32::from(self.header().to_bits()) | u32::from(setup) << 16
    }

    /// The completion signal handle (0 = none).
    pub fn completion_signal(&self) -> u64 {
        match self {
            Packet::KernelDispatch(p) => p.completion_signal,
            Packet::BarrierAnd(p) | Packet::BarrierOr(p) => p.completion_signal,
            Packet::VendorPm4Ib(p) => p.completion_signal,
            Packet::BarrierValue(p) => p.completion_signal,
        }
    }

    /// Sets the completion signal handle.
    pub fn set_completion_signal(&mut self, handle: u64) {
        match self {
            Packet::KernelDispatch(p) => p.completion_signal = handle,
            Packet::BarrierAnd(p) | Packet::BarrierOr(p) => p.completion_signal = handle,
            Packet::VendorPm4Ib(p) => p.completion_signal = handle,
            Packet::BarrierValue(p) => p.completion_signal = handle,
        }
    }

    /// Whether the barrier bit is set.
    pub fn barrier(&self) -> bool {
        self.header().barrier
    }

    /// Sets the barrier bit.
    pub fn set_barrier(&mut self, barrier: bool) {
        match self {
            Packet::KernelDispatch(p) => p.barrier = barrier,
            Packet::BarrierAnd(p) | Packet::BarrierOr(p) => p.barrier = barrier,
            Packet::VendorPm4Ib(p) => p.barrier = barrier,
            Packet::BarrierValue(p) => p.barrier = barrier,
        }
    }

    /// Encodes the packet as 16 dwords.
    pub fn encode(&self) -> [u32; 16] {
        let mut d = [0u32; 16];
        d[0] = self.header_word();
        match self {
            Packet::KernelDispatch(p) => return p.encode(),
            Packet::BarrierAnd(p) | Packet::BarrierOr(p) => {
                for (i, s) in p.dep_signal.iter().enumerate() {
                    put(&mut d, 2 + 2 * i, *s);
                }
                put(&mut d, 14, p.completion_signal);
            }
            Packet::VendorPm4Ib(p) => {
                d[1] = PM4_INDIRECT_BUFFER_HEADER;
                d[2] = lo(p.ib_address) & !3;
                d[3] = hi(p.ib_address);
                d[4] = (p.ib_size_dwords & 0xF_FFFF) | PM4_IB_VALID;
                d[5] = PM4_IB_DW_CNT_REMAIN;
                put(&mut d, 14, p.completion_signal);
            }
            Packet::BarrierValue(p) => {
                put(&mut d, 2, p.signal);
                put(&mut d, 4, p.value as u64);
                put(&mut d, 6, p.mask as u64);
                d[8] = p.condition;
                put(&mut d, 14, p.completion_signal);
            }
        }
        d
    }

    /// Decodes 16 dwords. Total: any input gives a packet or an error, never a panic.
    pub fn decode(d: &[u32; 16]) -> Result<Packet, DecodeError> {
        let h = Header::from_bits(d[0] as u16)?;
        let setup = (d[0] >> 16) as u16;
        let (barrier, acquire, release) = (h.barrier, h.acquire, h.release);
        Ok(match h.packet_type {
            PacketType::KernelDispatch => Packet::KernelDispatch(KernelDispatchPacket {
                barrier,
                acquire,
                release,
                dimensions: setup & 3,
                workgroup_size: [d[1] as u16, (d[1] >> 16) as u16, d[2] as u16],
                grid_size: [d[3], d[4], d[5]],
                private_segment_size: d[6],
                group_segment_size: d[7],
                kernel_object: q(d, 8),
                kernarg_address: q(d, 10),
                completion_signal: q(d, 14),
            }),
            PacketType::BarrierAnd | PacketType::BarrierOr => {
                let p = BarrierPacket {
                    barrier,
                    acquire,
                    release,
                    dep_signal: [q(d, 2), q(d, 4), q(d, 6), q(d, 8), q(d, 10)],
                    completion_signal: q(d, 14),
                };
                if h.packet_type == PacketType::BarrierAnd {
                    Packet::BarrierAnd(p)
                } else {
                    Packet::BarrierOr(p)
                }
            }
            PacketType::VendorSpecific => match setup as u8 {
                AMD_FORMAT_PM4_IB => {
                    if d[1] != PM4_INDIRECT_BUFFER_HEADER || d[4] & PM4_IB_VALID == 0 {
                        return Err(DecodeError::BadVendorPacket);
                    }
                    Packet::VendorPm4Ib(Pm4IbPacket {
                        barrier,
                        acquire,
                        release,
                        ib_address: u64::from(d[2] & !3) | u64::from(d[3]) << 32,
                        ib_size_dwords: d[4] & 0xF_FFFF,
                        completion_signal: q(d, 14),
                    })
                }
                AMD_FORMAT_BARRIER_VALUE => Packet::BarrierValue(BarrierValuePacket {
                    barrier,
                    acquire,
                    release,
                    signal: q(d, 2),
                    value: q(d, 4) as i64,
                    mask: q(d, 6) as i64,
                    condition: d[8],
                    completion_signal: q(d, 14),
                }),
                f => return Err(DecodeError::UnknownVendorFormat(f)),
            },
            PacketType::Invalid => return Err(DecodeError::NotPublished),
            PacketType::AgentDispatch => {
                return Err(DecodeError::Unsupported(PacketType::AgentDispatch))
            }
        })
    }
}
