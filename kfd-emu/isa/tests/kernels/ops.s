// Instruction-level cases the compiled kernels do not cover (DPP, SDWA, VOP3 modifiers,
// packed math, AGPR moves, lane access, DS read2/write2 and swizzles, buffer addressing,
// returning atomics, 64-bit shifts). One wave of 64; each case leaves its result in v10 and
// STORE writes it at out + case * 256 + lane * 4. Kernargs: out @0, in @8 (64 dwords).
// The test (tests/ops.rs) computes every expected value on the CPU. RETURN_PRE_OP is the
// cache bit that makes an atomic return (glc; sc0 on gfx940), substituted by regen.sh.
.text
.globl ops
.p2align 8
.type ops,@function

.macro STORE
    global_store_dword v1, v10, s[20:21]
    s_add_u32 s20, s20, 256
    s_addc_u32 s21, s21, 0
.endm

ops:
    s_load_dwordx4 s[20:23], s[0:1], 0x0          // out, in
    s_waitcnt lgkmcnt(0)
    v_lshlrev_b32 v1, 2, v0                       // lane * 4
    v_mad_u32_u24 v2, v0, 3, 1                    // v2 = 3 * lane + 1
    v_mov_b32 v3, 0x12345678
    v_cvt_f32_u32 v5, v0                          // v5 = float(lane)
    v_add_f32 v6, 0.5, v5                         // v6 = lane + 0.5
    global_load_dword v4, v1, s[22:23]            // v4 = in[lane]
    s_waitcnt vmcnt(0)

    // 0: DPP quad permute
    v_mov_b32_dpp v10, v0 quad_perm:[3,2,1,0] row_mask:0xf bank_mask:0xf
    STORE
    // 1: DPP row shift right with bound_ctrl (lane 0 of each row reads 0)
    v_mov_b32_dpp v10, v0 row_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:0
    STORE
    // 2: DPP row broadcast into rows 1 and 3 only
    v_mov_b32 v10, 0x77
    v_add_u32_dpp v10, v0, v0 row_bcast:15 row_mask:0xa bank_mask:0xf
    STORE
    // 3: DPP row rotate, bank mask 0x5 (banks 0 and 2 write)
    v_mov_b32 v10, 0x55
    v_mov_b32_dpp v10, v2 row_ror:4 row_mask:0xf bank_mask:0x5
    STORE
    // 4: SDWA byte/word selects into a preserved high word
    v_mov_b32 v10, v3
    v_add_u32_sdwa v10, v2, v3 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_0 src1_sel:WORD_0
    STORE
    // 5: SDWA sign-extended byte
    v_mov_b32_sdwa v10, sext(v4) dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_1
    STORE
    // 6: VOP3 modifiers: fma(-|lane|, lane + 0.5, 0.5) * 2, clamped
    v_fma_f32 v10, -|v5|, v6, 0.5 mul:2
    STORE
    // 7: clamp
    v_mul_f32_e64 v10, v5, 0.5 clamp
    STORE
    // 8, 9: packed f32 fma on pairs (v[6:7] = {lane + 0.5, 4.0}, v[8:9] = {2.0, lane})
    v_mov_b32 v7, 4.0
    v_mov_b32 v8, 2.0
    v_mov_b32 v9, v5
    v_pk_fma_f32 v[10:11], v[6:7], v[8:9], v[6:7]
    STORE
    v_mov_b32 v10, v11
    STORE
    // 10: packed f16 add with op_sel: halves of {lo = lane, hi = 2 * lane} in f16
    v_cvt_f16_f32 v12, v5
    v_add_f32 v13, v5, v5
    v_cvt_f16_f32 v13, v13
    v_lshl_or_b32 v12, v13, 16, v12
    v_pk_add_f16 v10, v12, v12 op_sel:[1,0] op_sel_hi:[0,1]
    STORE
    // 11: AGPR round trip
    v_accvgpr_write_b32 a1, v2
    v_accvgpr_mov_b32 a2, a1
    v_accvgpr_read_b32 v10, a2
    STORE
    // 12: readlane / writelane
    v_readlane_b32 s30, v2, 17
    v_mov_b32 v10, v0
    v_writelane_b32 v10, s30, 5
    STORE
    // 13: readfirstlane under a partial EXEC
    s_mov_b64 s[32:33], exec
    v_cmp_lt_u32 vcc, 40, v0
    s_and_b64 exec, exec, vcc
    v_readfirstlane_b32 s31, v2
    s_mov_b64 exec, s[32:33]
    v_mov_b32 v10, s31
    STORE
    // 14, 15: ds_write2 / ds_read2 (offsets in dwords) and read2st64
    v_lshlrev_b32 v14, 3, v0                      // 8 bytes per lane
    ds_write2_b32 v14, v2, v0 offset1:1
    s_waitcnt lgkmcnt(0)
    ds_read2_b32 v[10:11], v14 offset1:1
    s_waitcnt lgkmcnt(0)
    v_sub_u32 v10, v10, v11
    STORE
    v_mov_b32 v15, 0
    ds_read2st64_b32 v[10:11], v15 offset1:1      // LDS dwords 0 and 64
    s_waitcnt lgkmcnt(0)
    v_add_u32 v10, v10, v11
    STORE
    // 16, 17: ds_swizzle (swap neighbours; broadcast lane 1 of each group of 4)
    ds_swizzle_b32 v10, v2 offset:swizzle(SWAP,1)
    s_waitcnt lgkmcnt(0)
    STORE
    ds_swizzle_b32 v10, v2 offset:swizzle(BROADCAST,4,1)
    s_waitcnt lgkmcnt(0)
    STORE
    // 18: structured buffer load (stride 8, 40 records, idxen, offset 4): in[2 * lane + 1]
    s_mov_b32 s24, s22
    s_and_b32 s25, s23, 0xffff
    s_or_b32 s25, s25, 0x80000                    // stride 8
    s_mov_b32 s26, 40
    s_mov_b32 s27, 0x00027fac
    buffer_load_dword v10, v0, s[24:27], 0 idxen offset:4
    s_waitcnt vmcnt(0)
    STORE
    // 19: raw buffer load with offen, range 100 bytes: lanes past it read 0
    s_mov_b32 s25, s23
    s_and_b32 s25, s25, 0xffff
    s_mov_b32 s26, 100
    buffer_load_dword v10, v1, s[24:27], 0 offen
    s_waitcnt vmcnt(0)
    STORE
    // 20: returning global atomic: every lane adds lane + 1 to out[4095 * 4 / 4]; old values
    v_add_u32 v16, 1, v0
    v_mov_b32 v17, 0
    s_add_u32 s34, s20, 0x1000
    s_addc_u32 s35, s21, 0
    global_atomic_add v10, v17, v16, s[34:35] RETURN_PRE_OP
    s_waitcnt vmcnt(0)
    STORE
    // 21, 22: 64-bit shifts and mad_u64_u32
    v_mov_b32 v18, v3
    v_mov_b32 v19, v2
    v_lshrrev_b64 v[20:21], v0, v[18:19]
    v_xor_b32 v10, v20, v21
    STORE
    v_mad_u64_u32 v[20:21], s[36:37], v3, v2, v[18:19]
    v_xor_b32 v10, v20, v21
    STORE
    // 23: compare class + cndmask with an SGPR mask
    v_sub_f32 v22, 20.0, v5                       // positive, zero or negative
    v_mov_b32 v25, 0x3c0                          // +0, +denorm, +normal, +inf
    v_cmp_class_f32 s[38:39], v22, v25
    v_cndmask_b32_e64 v10, v2, v0, s[38:39]
    STORE
    // 24: perm, alignbit, bfe, bfi, med3
    v_mov_b32 v25, 0x0c050403
    v_perm_b32 v10, v3, v2, v25
    v_alignbit_b32 v23, v3, v2, v0
    v_xor_b32 v10, v10, v23
    v_bfe_i32 v23, v4, 3, 9
    v_add_u32 v10, v10, v23
    v_med3_i32 v23, v4, v2, v0
    v_bfi_b32 v23, v3, v23, v10
    v_xor_b32 v10, v10, v23
    STORE
    // 25: scalar bit ops
    s_ff1_i32_b32 s40, 0x50
    s_bcnt1_i32_b64 s41, s[20:21]
    s_flbit_i32_b32 s42, 0x00f00000
    s_mov_b32 s43, 0x12345678
    s_bfe_u32 s43, s43, 0x80008                   // 8 bits at 8
    s_add_u32 s40, s40, s42
    s_mul_i32 s40, s40, s43
    v_mov_b32 v10, s40
    STORE
    // 26: half conversion through SDWA word select
    v_cvt_pkrtz_f16_f32 v24, v5, v6
    v_cvt_f32_f16_sdwa v10, v24 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_1
    STORE
    // 27: integer adds and subtracts with the clamp bit saturate
    v_mov_b32 v23, 0xf0000000
    v_add_u32_e64 v10, v3, v23 clamp               // overflows: 0xffffffff
    v_subrev_u32_e64 v23, 32, v0 clamp             // lane - 32, at least 0
    v_xor_b32 v10, v10, v23
    v_mov_b32 v23, 0x7ffffff0
    v_add_i32 v23, v23, v0 clamp                   // at most 0x7fffffff
    v_xor_b32 v10, v10, v23
    STORE
    s_endpgm

.rodata
.p2align 6
.amdhsa_kernel ops
    .amdhsa_user_sgpr_kernarg_segment_ptr 1
    .amdhsa_system_sgpr_workgroup_id_x 1
    .amdhsa_system_vgpr_workitem_id 0
    .amdhsa_group_segment_fixed_size 1024
    .amdhsa_kernarg_size 16
    .amdhsa_next_free_vgpr 32
    .amdhsa_next_free_sgpr 48
    .amdhsa_accum_offset 28
.end_amdhsa_kernel
