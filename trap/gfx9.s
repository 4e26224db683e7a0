// kfdrt's second-level trap handler, gfx9 family (gfx90a, gfx940, gfx941, gfx942).
//
// KFD's first-level handler jumps here at an s_trap or a wave exception, leaving:
//   ttmp[0:1]  the PC of the instruction that trapped; ttmp1[23:16] the s_trap id (0 for an
//              exception), ttmp1[24] set for a host (debugger) trap
//   ttmp12     the wave's STATUS, restored on the way out (SCC included)
//   ttmp11     (gfx90a) / ttmp13 (gfx94x): the instruction-replay state in bits 31:26
//   TRAPSTS    what the exception was
// ttmp2..ttmp5 are free here.
//
// A wave exception or an s_trap other than llvm.debugtrap is reported to KFD as a queue
// exception, s_sendmsg(MSG_INTERRUPT) with M0 = mask << 10 | doorbell id, where mask bit k-1
// stands for exception code k (EC_QUEUE_WAVE_ABORT = 1 ... EC_QUEUE_WAVE_APERTURE_VIOLATION = 6).
// KFD hands it to the runtime through the queue's context-save area header
// (kfd_send_exception_to_runtime). The wave then halts where it trapped, so its dispatch never
// completes: kfdrt's wait sees the exception and returns an error instead.
// llvm.debugtrap (s_trap 3) is stepped over (no debugger here); a host trap returns at once.

.text
.globl kfdrt_trap_handler
.p2align 8
kfdrt_trap_handler:
    s_bfe_u32       ttmp2, ttmp1, (16 | 8 << 16)    // the s_trap id
    s_cbranch_scc0  .Lreport                         // 0: an exception
    s_bitcmp1_b32   ttmp1, 24                        // a host trap: not ours to report
    s_cbranch_scc1  .Lexit
    s_cmp_eq_u32    ttmp2, 3                         // llvm.debugtrap: step over it
    s_cbranch_scc0  .Lreport
    s_add_u32       ttmp0, ttmp0, 4
    s_addc_u32      ttmp1, ttmp1, 0
    s_branch        .Lexit

.Lreport:
    // The queue's doorbell id: the SQ writes it into EXEC_LO, clearing bit 31 when it has.
    s_mov_b32       ttmp4, exec_lo
    s_mov_b32       ttmp5, exec_hi
    s_mov_b32       exec_lo, 0x80000000
    s_sendmsg       sendmsg(MSG_GET_DOORBELL)
.Lwait_doorbell:
    s_nop           7
    s_bitcmp0_b32   exec_lo, 31
    s_cbranch_scc0  .Lwait_doorbell
    s_and_b32       ttmp3, exec_lo, 0x3ff
    s_mov_b32       exec_lo, ttmp4
    s_mov_b32       exec_hi, ttmp5

    // The exception mask, from TRAPSTS and the trap id.
    s_getreg_b32    ttmp4, hwreg(HW_REG_TRAPSTS)
    s_bitcmp1_b32   ttmp4, 28                        // XNACK_ERROR: a memory violation
    s_cbranch_scc0  .Lno_xnack_error
    s_or_b32        ttmp3, ttmp3, 1 << (10 + 4)
    s_branch        .Lno_mem_viol                    // (an aperture violation needs no XNACK error)
.Lno_xnack_error:
    s_bitcmp1_b32   ttmp4, 8                         // MEM_VIOL: an aperture violation
    s_cbranch_scc0  .Lno_mem_viol
    s_or_b32        ttmp3, ttmp3, 1 << (10 + 5)
.Lno_mem_viol:
    s_bitcmp1_b32   ttmp4, 11                        // ILLEGAL_INST
    s_cbranch_scc0  .Lno_illegal
    s_or_b32        ttmp3, ttmp3, 1 << (10 + 3)
.Lno_illegal:
    // Math exceptions count only where MODE enables them (TRAPSTS.EXCP bits are sticky).
    s_getreg_b32    ttmp5, hwreg(HW_REG_MODE, 12, 7)
    s_and_b32       ttmp4, ttmp4, ttmp5
    s_cbranch_scc0  .Lno_math
    s_or_b32        ttmp3, ttmp3, 1 << (10 + 2)
.Lno_math:
    s_cmp_eq_u32    ttmp2, 2                         // s_trap 2: llvm.trap, abort()
    s_cbranch_scc0  .Lnot_abort
    s_or_b32        ttmp3, ttmp3, 1 << (10 + 0)
.Lnot_abort:
    s_and_b32       ttmp4, ttmp3, 0xfffc00           // nothing named: a plain trap
    s_cbranch_scc1  .Lsend
    s_or_b32        ttmp3, ttmp3, 1 << (10 + 1)
.Lsend:
    s_mov_b32       ttmp4, m0
    s_mov_b32       m0, ttmp3
    s_nop           0
    s_sendmsg       sendmsg(MSG_INTERRUPT)
    s_waitcnt       lgkmcnt(0)
    s_mov_b32       m0, ttmp4
    // Halt where the wave trapped, once STATUS is restored below.
    s_bitset1_b32   ttmp12, 13

.Lexit:
    // The replay state the first-level handler saved goes back into IB_STS.
.if .amdgcn.gfx_generation_minor < 4
    s_lshr_b32      ttmp2, ttmp11, (26 - 15)
.else
    s_lshr_b32      ttmp2, ttmp13, (26 - 15)
.endif
    s_and_b32       ttmp2, ttmp2, 0x1f8000
    s_setreg_b32    hwreg(HW_REG_IB_STS), ttmp2
    s_and_b64       exec, exec, exec                 // STATUS.EXECZ, which s_setreg cannot write
    s_and_b64       vcc, vcc, vcc                    // STATUS.VCCZ, likewise
    s_setreg_b32    hwreg(HW_REG_STATUS), ttmp12
    s_and_b32       ttmp1, ttmp1, 0xffff
    s_rfe_b64       [ttmp0, ttmp1]
