//! AMDGPU machine code for kfd-emu: a GFX9 (gfx90a, gfx942) and GFX11 (gfx1100) decoder, a
//! disassembler that prints what `llvm-objdump-16 -d` prints, and a wave interpreter (wave64,
//! and wave32 on GFX11) that runs one AQL dispatch's work-groups against a [`Memory`] the
//! caller provides. Pure Rust, no system calls,
//! no threads and no `unsafe`: callers run work-groups on as many host threads as they like.
//!
//! # Integration (how kfd-emu's AQL/PM4 processors use it)
//!
//! 1. Implement [`Memory`] over the GPU's page table: `read`/`write` of bytes at a GPU VA,
//!    `atomic32`/`atomic64` read-modify-writes that are atomic with respect to every other
//!    access (host atomics on the shared host mapping; [`AtomicOp::apply32`]/[`AtomicOp::apply64`]
//!    give the new value, so a compare-and-swap loop implements every operation), and
//!    optionally `fetch` (instruction reads, reported as [`AccessKind::Execute`]). A fault is a
//!    [`MemFault`] with the first faulting address. [`PagedMemory`] is the reference
//!    implementation (pages of `AtomicU64`).
//! 2. Keep one [`CodeCache`] per GPU (or per process and target). It decodes code once per
//!    address and is shared by every dispatch and thread; call [`CodeCache::invalidate`] (or
//!    `invalidate_range`) where the hardware invalidates its instruction cache (PM4
//!    ACQUIRE_MEM with the I-cache bit, ROCr's code-upload path). Until then a wave runs the
//!    instructions decoded before, as a real GPU with a stale I-cache would.
//! 3. For each kernel-dispatch packet, read the 64-byte descriptor at `kernel_object`
//!    ([`KernelDescriptor::from_bytes`]) and build a [`DispatchSetup`]
//!    ([`DispatchSetup::from_aql_packet`] parses the packet's sizes, dimensions, kernarg
//!    address and segment sizes), then set `queue_address` (the `amd_queue_t`), `dispatch_id`
//!    (the packet index), `scratch` (the queue's scratch backing, if any) and `apertures`
//!    (the process's LDS/scratch aperture bases, as KFD reports them).
//!    For a PM4 `DISPATCH_DIRECT`, build the setup from the SH registers instead: a
//!    [`KernelDescriptor`] whose `compute_pgm_rsrc1/2/3` are the register values (its
//!    `kernel_code_properties` play no part), `entry_override` = `COMPUTE_PGM_LO/HI << 8`,
//!    `user_sgprs_override` = `COMPUTE_USER_DATA_0..`, the work-group size from
//!    `COMPUTE_NUM_THREAD_*` and the grid from the packet (in threads or in groups); on GFX11
//!    the packet's `DISPATCH_INITIATOR.CS_W32_EN` (bit 15) sets the descriptor's
//!    `ENABLE_WAVEFRONT_SIZE32` bit, the one property that then matters.
//! 4. Run every work-group id of [`DispatchSetup::workgroup_ids`] with [`run_workgroup`],
//!    spread over a pool of host threads. Give work-groups that run at the same time distinct
//!    [`RunControl::scratch_slot`]s (the host thread's index): a work-group's waves use the
//!    scratch at `scratch.base + slot * setup.scratch_per_slot()`, so the backing must hold
//!    `threads * scratch_per_slot()` bytes. [`RunControl::cancel`] stops a run (a queue being
//!    destroyed) and [`RunControl::max_wave_instructions`] bounds one work-group.
//!    [`run_workgroups`] runs a batch of work-groups interleaved on one thread, as a compute
//!    unit runs its resident work-groups side by side (kfd-emu hands each thread batches of
//!    consecutive work-groups, so grid-stride loops walk memory together); work-group `k` of
//!    a batch uses scratch slot `scratch_slot + k`.
//! 5. Map a [`WaveError`] to the queue error the CP would raise. Suggested:
//!    [`WaveError::MemoryFault`] → memory violation (with the address, as a GPU page fault);
//!    [`WaveError::Undecodable`], [`WaveError::Unimplemented`], [`WaveError::IllegalOperand`]
//!    → illegal instruction (log the PC, words and text); [`WaveError::Trap`] → the wave's
//!    trap (no trap handler: queue error); [`WaveError::ScratchUnavailable`] /
//!    [`WaveError::ScratchTooSmall`] → out of resources; [`WaveError::InvalidDispatch`] →
//!    incompatible/invalid arguments; [`WaveError::Cancelled`] /
//!    [`WaveError::BudgetExhausted`] → the caller's own policy (queue destroyed, hang).
//!
//! ```
//! use kfd_emu_isa::*;
//! use std::sync::Arc;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A one-instruction kernel (s_endpgm) at 0x1000 with its descriptor at 0x1000 - 256.
//! let mut mem = PagedMemory::new();
//! mem.map(0x0, 0x2000);
//! let desc = KernelDescriptor { kernel_code_entry_byte_offset: 256, ..Default::default() };
//! mem.write(0xF00, &desc.to_bytes())?;
//! mem.write_u32(0x1000, 0xBF81_0000)?;
//! let mut packet = [0u8; 64];
//! packet[2] = 1; // one dimension
//! packet[4] = 64; // work-group of 64
//! packet[12] = 128; // grid of 128 work-items
//! packet[32..40].copy_from_slice(&0xF00u64.to_le_bytes());
//! let code = Arc::new(CodeCache::new(Target::Gfx90a));
//! let setup = DispatchSetup::from_aql_packet(Target::Gfx90a, &packet, 0x1800, desc, code);
//! for g in setup.workgroup_ids() {
//!     let stats = run_workgroup(&setup, g, &mem, &RunControl::default())?;
//!     assert_eq!(stats.waves, 1);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # What a wave starts with
//!
//! As the AMDGPU ABI ("Initial Kernel Execution State") and the hardware set it up: the
//! enabled user SGPRs in order (private segment buffer, dispatch pointer, queue pointer,
//! kernarg pointer, dispatch id, flat-scratch init, private segment size, then preloaded
//! kernel arguments on gfx940+), the system SGPRs from `USER_SGPR_COUNT` on (work-group ids
//! x/y/z, work-group info, private segment wave offset), FLAT_SCRATCH set to the wave's
//! scratch on gfx942 (architected flat scratch) and GFX11's hardware FLAT_SCRATCH register
//! likewise, work-item ids packed into v0 (x | y << 10 | z << 20), EXEC holding the lanes that
//! exist (32 of them in a GFX11 wave32, whose lane masks in SGPRs are one register) (a partial work-group at the
//! grid's edge has its real size and fewer lanes), the MODE register from
//! `COMPUTE_PGM_RSRC1`, and the unified VGPR/AGPR file split at the descriptor's
//! `accum_offset`. A kernel that needs scratch on a dispatch without scratch backing gets
//! [`WaveError::ScratchUnavailable`] before any wave starts.
//!
//! # What is covered and what is not
//!
//! Decoding and disassembly: every opcode llvm-mc-16 knows for gfx90a and gfx940/942 in the
//! SOP1/SOP2/SOPK/SOPC/SOPP, SMEM, VOP1/VOP2/VOPC (with DPP and SDWA), VOP3 (a and b),
//! VOP3P (packed, MFMA, SMFMAC), DS, FLAT/GLOBAL/SCRATCH, MUBUF and MTBUF encodings, and for
//! gfx1100 in GFX11's (VOP3 with literals and DPP, DPP8, VOPD, WMMA, MIMG without NSA),
//! checked against llvm-mc's text for each opcode and operand-form corpora and llvm-objdump's
//! for every checked-in code object. GFX11 code prints as wave32 code (lane masks as `vcc_lo`
//! and one SGPR), as llvm-objdump prints it without `-mattr=+wavefrontsize64`.
//!
//! Execution: the scalar ALU and program control (all branches, calls through
//! `s_setpc`/`s_swappc`/`s_getpc`/`s_call`, `s_barrier`, `s_trap`, waits and cache controls as
//! no-ops), scalar loads/stores/atomics, the vector ALU (32/64-bit integer, f16/f32/f64
//! arithmetic, conversions, compares with `v_cmpx`, carries, `v_div_*`, transcendental
//! approximations as exact host math, bit manipulation, lane access, packed f32/f16/i16,
//! dot products, `v_fma_mix*`, DPP and SDWA), AGPR moves, LDS (loads, stores, read2/write2,
//! atomics, swizzles, permutes, append/consume), FLAT (global, LDS and scratch apertures),
//! GLOBAL, SCRATCH and MUBUF loads, stores and atomics (32/64-bit, f32/f64 add, min/max), with
//! swizzled scratch and buffer range checks, and loads into LDS (MUBUF's `lds` bit,
//! `global_load_lds_*`, `scratch_load_lds_*`, GFX11's `buffer_load_lds_*`: each lane's value,
//! extended to a dword, at `M0[15:0] + offset + 4 * lane`, as the ISA guides give it; the
//! formatted `buffer_load_format_x ... lds` is refused). Matrix-core instructions, formatted
//! buffer access and images run too (see their modules). `COVERAGE.md` lists, per target and
//! encoding, the opcodes that run and those that return [`WaveError::Unimplemented`] (SMEM
//! scratch, cube-map and legacy graphics ops, GPR indexing mode, fork/join, ...).
//!
//! Not modelled: float denormal flushing and rounding modes (the host's IEEE round-to-nearest
//! with denormals is used; MODE is readable but does not change arithmetic); the exact error
//! of `v_rcp`/`v_rsq`/`v_sqrt`/`v_exp`/`v_log`/`v_sin`/`v_cos` (computed exactly, where the
//! hardware is within about 1 ulp); `v_div_scale` pre-scaling (it returns its operand, so
//! quotients whose operands are near the ends of the exponent range may differ in the last
//! bit from hardware); caches and memory ordering (every access goes to memory; waits are
//! no-ops); the GDS; traps into a trap handler. Clocks (`s_memtime`) count executed
//! instructions.
//!
//! GFX11 (gfx1100) has its own format split and opcode table ([`decode::decode`] dispatches on
//! the [`target::Generation`]); operations GFX11 only renamed decode to GFX9's [`decode::Op`],
//! so the executor's semantics serve both, and GFX11's register numbering (`null` at 124, M0 at
//! 125) is swapped into GFX9's at decode. GFX11 adds: wave32 (the descriptor's
//! `ENABLE_WAVEFRONT_SIZE32`; a wave32 runs 32 lanes, its lane masks one SGPR), VOPD dual issue
//! (both halves read before either writes), DPP8 and fetch-inactive, the `_b32` save-exec
//! forms, three-way XOR, min-max pairs, DX9 multiply-adds, cross-row permutes and WMMA
//! (`exec/wmma.rs`, whose rounding assumption is written there), and buffer range checks by
//! the resource's OOB_SELECT (the modes as mesa's `sid.h` names them: structured with offset,
//! structured, disabled, raw) with GFX11's swizzle field. Not run on GFX11: images and
//! formatted buffer access (GFX10+ descriptors and unified formats are not modelled), and the
//! other opcodes `COVERAGE.md` lists. RDNA4 (gfx1200/gfx1201)
//! is not modelled; `kfd-emu/isa/README.md` says what it would take.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]
#![forbid(unsafe_code)]

pub mod decode;
pub mod descriptor;
pub mod disasm;
pub mod dispatch;
pub mod error;
mod exec;
pub mod gws;
pub mod memory;
pub mod paged;
pub mod program;
pub mod sanitize;
pub mod target;
pub mod wave_debug;

pub use descriptor::KernelDescriptor;
pub use dispatch::{
    Apertures, DispatchSetup, MessageSink, RunControl, RunningWave, ScratchBacking, SqMessage,
    TrapHandler, TrapRouting, WatchHit, WatchSet, WaveProbe,
};
pub use error::WaveError;
pub use exec::{run_workgroup, run_workgroups, run_workgroups_noting, Stats, WaveSnapshot};
pub use memory::{AccessKind, AtomicOp, MemFault, Memory};
pub use paged::PagedMemory;
pub use program::CodeCache;
pub use target::Target;
pub use wave_debug::{AddressWatch, WatchAccess, WatchMode, WaveDebug};
