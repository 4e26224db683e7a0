// GFX11 instruction-level cases the compiled kernels do not cover: VOPD pairs whose halves
// depend on each other's registers, DPP8 and the GFX10+ DPP16 row controls, fetch-inactive,
// the cross-row permutes, v_cmpx writing EXEC alone, wave32 lane masks, null destinations and
// the b32 save-exec forms. One wave32; each case leaves its result in v10 and STORE writes it
// at out + case * 128 + lane * 4. Kernargs: out @0. The test (tests/ops11.rs) computes every
// expected value on the CPU.
.amdgcn_target "amdgcn-amd-amdhsa--gfx1100"
.text
.globl ops11
.p2align 8
.type ops11,@function

.macro STORE
    global_store_b32 v1, v10, s[20:21]
    s_add_u32 s20, s20, 128
    s_addc_u32 s21, s21, 0
.endm

ops11:
    s_load_b64 s[20:21], s[0:1], 0x0              // out
    s_waitcnt lgkmcnt(0)
    v_lshlrev_b32 v1, 2, v0                       // lane * 4
    v_mad_u32_u24 v2, v0, 3, 1                    // v2 = 3 * lane + 1
    v_mov_b32 v3, 0x1000
    v_lshlrev_b32 v4, 8, v0                       // v4 = lane << 8

    // 0: VOPD, Y reads X's destination: both read before either writes, so Y sees the old v10
    v_mov_b32 v10, 7
    v_mov_b32 v11, 0
    v_mov_b32 v5, v2
    v_dual_mov_b32 v10, v5 :: v_dual_add_nc_u32 v11, v10, v3
    v_add_nc_u32 v10, v10, v11                    // (3l + 1) + (7 + 0x1000)
    STORE
    // 1: DPP8 reversing each group of eight lanes
    v_mov_b32_dpp v10, v0 dpp8:[7,6,5,4,3,2,1,0]
    STORE
    // 2: DPP16 row_xmask:5 (lane reads lane ^ 5 within its row)
    v_mov_b32_dpp v10, v2 row_xmask:5 row_mask:0xf bank_mask:0xf
    STORE
    // 3: DPP16 row_share:3 (every lane of a row reads the row's lane 3)
    v_mov_b32_dpp v10, v2 row_share:3 row_mask:0xf bank_mask:0xf
    STORE
    // 4: v_permlane16_b32: lane i of a row reads lane sel(i), selects 0x76543210/0xfedcba98 reversed
    s_mov_b32 s2, 0x89abcdef
    s_mov_b32 s3, 0x01234567
    v_permlane16_b32 v10, v2, s2, s3
    STORE
    // 5: v_permlanex16_b32: the other row's lanes, identity selects
    s_mov_b32 s2, 0x76543210
    s_mov_b32 s3, 0xfedcba98
    v_mov_b32 v10, 0
    v_permlanex16_b32 v10, v2, s2, s3
    STORE
    // 6: v_cmpx writes EXEC only: VCC keeps its value; lanes 10+ are disabled for one write
    s_mov_b32 vcc_lo, 0x0000abcd
    s_mov_b32 s6, exec_lo
    v_mov_b32 v10, 1
    v_cmpx_gt_u32_e32 10, v0
    v_mov_b32 v10, 2
    s_mov_b32 exec_lo, s6
    v_cndmask_b32_e64 v11, 0, 0x100, vcc_lo
    v_add_nc_u32 v10, v10, v11
    STORE
    // 7: wave32 carry into VCC_LO alone: VCC_HI (an ordinary register here) keeps its value
    s_mov_b32 vcc_hi, 0x5151
    v_mov_b32 v5, 0xfffffff0
    v_add_co_u32 v10, vcc_lo, v5, v0              // carries for lanes >= 16
    v_cndmask_b32_e64 v11, 0, 1, vcc_lo
    v_lshlrev_b32 v11, 16, v11
    v_add_nc_u32 v10, v10, v11
    v_add_nc_u32 v10, vcc_hi, v10
    STORE
    // 8: null destinations: the carry and a scalar write to null go nowhere, null reads 0
    s_mov_b32 null, 0x1234
    v_add_co_u32 v10, null, v5, v0
    v_add_nc_u32 v10, null, v10
    s_add_u32 s7, null, 3
    v_add_nc_u32 v10, s7, v10
    STORE
    // 9: s_and_saveexec_b32: lanes where lane & 1, then EXEC back
    v_mov_b32 v10, 0
    v_and_b32 v6, 1, v0
    v_cmp_ne_u32_e32 vcc_lo, 0, v6
    s_and_saveexec_b32 s8, vcc_lo
    v_mov_b32 v10, s8
    s_mov_b32 exec_lo, s8
    STORE
    // 10: three-way XOR, max-min, min-max
    v_xor3_b32 v10, v2, v4, 0x55
    v_maxmin_u32 v11, v0, 7, 20
    v_minmax_i32 v12, v0, 12, 5
    v_lshlrev_b32 v11, 16, v11
    v_lshlrev_b32 v12, 24, v12
    v_add3_u32 v10, v10, v11, v12
    STORE
    // 11: DPP16 fetch-inactive: lane i reads lane i ^ 1 (quad_perm 1,0,3,2) while only even lanes run
    s_mov_b32 exec_lo, 0x55555555
    v_mov_b32 v10, 0
    v_mov_b32_dpp v10, v2 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf fi:1
    s_mov_b32 exec_lo, -1
    STORE
    // 12: v_dot4_i32_iu8, A signed, B unsigned: bytes of 3l + 1 times bytes of l << 8, plus 5
    v_dot4_i32_iu8 v10, v2, v4, 5 neg_lo:[1,0,0]
    STORE
    // 13: v_dot8_i32_iu4, A unsigned, B signed, plus the lane
    v_dot8_i32_iu4 v10, v2, v3, v0 neg_lo:[0,1,0]
    STORE
    // 14: v_dot2_f32_bf16: {1.0, 2.0} . {l, l} + 0.5
    v_mov_b32 v12, 0x40003f80
    v_cvt_f32_u32 v14, v0
    v_lshrrev_b32 v13, 16, v14
    v_and_or_b32 v13, v14, 0xffff0000, v13
    v_dot2_f32_bf16 v10, v12, v13, 0.5
    STORE
    // 15: v_cvt_pk_i16_f32 saturating: {2000 l - 40000, 40000 - 3000 l}
    v_mul_f32 v7, 0x44fa0000, v14
    v_sub_f32 v7, v7, 0x471c4000
    v_mul_f32 v8, 0x453b8000, v14
    v_sub_f32 v8, 0x471c4000, v8
    v_cvt_pk_i16_f32 v10, v7, v8
    STORE
    // 16: s_pack_hl_b32_b16: {s11[15:0], s10[31:16]}
    s_mov_b32 s10, 0x12345678
    s_mov_b32 s11, 0x9abcdef0
    s_pack_hl_b32_b16 s9, s10, s11
    v_mov_b32 v10, s9
    STORE
    // 17-19: buffer loads of 3l + 1 (stored first where the case's result goes) through a
    // GFX11 resource, by its OOB_SELECT. 17: raw (3), 64 bytes: lanes 16 and up read 0.
    global_store_b32 v1, v2, s[20:21]
    s_waitcnt_vscnt null, 0x0
    s_mov_b32 s12, s20
    s_and_b32 s13, s21, 0xffff
    s_mov_b32 s14, 64
    s_mov_b32 s15, 0x30000000
    buffer_load_b32 v10, v1, s[12:15], 0 offen
    s_waitcnt vmcnt(0)
    STORE
    // 18: raw with a stride of 4 and 8 bytes of records, indexed by lane: the offset (0) is
    // what is checked, not the index, so every lane reads
    global_store_b32 v1, v2, s[20:21]
    s_waitcnt_vscnt null, 0x0
    s_mov_b32 s12, s20
    s_and_b32 s13, s21, 0xffff
    s_or_b32 s13, s13, 0x40000
    s_mov_b32 s14, 8
    buffer_load_b32 v10, v0, s[12:15], 0 idxen
    s_waitcnt vmcnt(0)
    STORE
    // 19: checks disabled (2) with no records: every lane reads
    global_store_b32 v1, v2, s[20:21]
    s_waitcnt_vscnt null, 0x0
    s_mov_b32 s12, s20
    s_and_b32 s13, s21, 0xffff
    s_mov_b32 s14, 0
    s_mov_b32 s15, 0x20000000
    buffer_load_b32 v10, v1, s[12:15], 0 offen
    s_waitcnt vmcnt(0)
    STORE
    // 20: VOPD halves reading each other's destinations: a swap
    v_mov_b32 v10, v2
    v_mov_b32 v11, v4
    v_dual_mov_b32 v10, v11 :: v_dual_mov_b32 v11, v10
    v_lshl_add_u32 v10, v11, 16, v10
    STORE
    s_endpgm

.rodata
.p2align 6
.amdhsa_kernel ops11
    .amdhsa_user_sgpr_kernarg_segment_ptr 1
    .amdhsa_next_free_vgpr 16
    .amdhsa_next_free_sgpr 24
    .amdhsa_wavefront_size32 1
.end_amdhsa_kernel
