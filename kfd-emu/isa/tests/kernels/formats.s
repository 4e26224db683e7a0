// Formatted buffer access cases (tests/buffer_formats.rs): buffer_{load,store}_format_* with
// the format in the buffer resource, tbuffer_* with it in the instruction. One wave of 64.
// Kernargs: out @0, in @8 (64 lanes x 16 bytes). Load cases read element `lane` of `in` and
// store v[12:15] at out + case * 1024 + lane * 16; store cases write their elements into
// out + case * 1024. The test computes every expected value on the CPU.
.text
.globl formats
.p2align 8
.type formats,@function

// s[24:27] = a raw buffer at s[BASE_LO:BASE_HI] (+ CASE * 1024 when OUT), RECORDS bytes, word 3.
.macro RSRC base_lo, base_hi, case, records, word3
    s_add_u32 s24, \base_lo, \case * 1024
    s_addc_u32 s25, \base_hi, 0
    s_and_b32 s25, s25, 0xffff
    s_mov_b32 s26, \records
    s_mov_b32 s27, \word3
.endm

// word 3: DST_SEL x,y,z,w (0, 1, or 4..7 for X..W), NUM_FORMAT, DATA_FORMAT.
.set IDENT, 4 | 5 << 3 | 6 << 6 | 7 << 9

.macro OUT case
    s_add_u32 s28, s20, \case * 1024
    s_addc_u32 s29, s21, 0
    global_store_dwordx4 v2, v[12:15], s[28:29]
.endm

.macro SENTINEL
    v_mov_b32 v12, 0xdead
    v_mov_b32 v13, 0xdead
    v_mov_b32 v14, 0xdead
    v_mov_b32 v15, 0xdead
.endm

formats:
    s_load_dwordx4 s[20:23], s[0:1], 0x0          // out, in
    s_waitcnt lgkmcnt(0)
    v_lshlrev_b32 v1, 2, v0                       // lane * 4
    v_lshlrev_b32 v2, 4, v0                       // lane * 16
    v_lshlrev_b32 v3, 3, v0                       // lane * 8
    v_cvt_f32_u32 v5, v0                          // float(lane)

    // 0: 8_8_8_8 UNORM
    RSRC s22, s23, 0, 1024, IDENT | 0 << 12 | 10 << 15
    SENTINEL
    buffer_load_format_xyzw v[12:15], v1, s[24:27], 0 offen
    s_waitcnt vmcnt(0)
    OUT 0
    // 1: 8_8_8_8 SNORM, channels reversed by DST_SEL
    RSRC s22, s23, 0, 1024, (7 | 6 << 3 | 5 << 6 | 4 << 9) | 1 << 12 | 10 << 15
    buffer_load_format_xyzw v[12:15], v1, s[24:27], 0 offen
    s_waitcnt vmcnt(0)
    OUT 1
    // 2: 16_16 SINT: Z reads 0, W 1
    RSRC s22, s23, 0, 1024, IDENT | 5 << 12 | 5 << 15
    buffer_load_format_xyzw v[12:15], v1, s[24:27], 0 offen
    s_waitcnt vmcnt(0)
    OUT 2
    // 3: 16_16_16_16 FLOAT, 8-byte elements
    RSRC s22, s23, 0, 1024, IDENT | 7 << 12 | 12 << 15
    buffer_load_format_xyzw v[12:15], v3, s[24:27], 0 offen
    s_waitcnt vmcnt(0)
    OUT 3
    // 4: 2_10_10_10 UINT
    RSRC s22, s23, 0, 1024, IDENT | 4 << 12 | 9 << 15
    buffer_load_format_xyzw v[12:15], v1, s[24:27], 0 offen
    s_waitcnt vmcnt(0)
    OUT 4
    // 5: 10_11_11 FLOAT
    RSRC s22, s23, 0, 1024, IDENT | 7 << 12 | 6 << 15
    buffer_load_format_xyzw v[12:15], v1, s[24:27], 0 offen
    s_waitcnt vmcnt(0)
    OUT 5
    // 6: 8_8 USCALED, DST_SEL y, x, 0, 1
    RSRC s22, s23, 0, 1024, (5 | 4 << 3 | 0 << 6 | 1 << 9) | 2 << 12 | 3 << 15
    buffer_load_format_xyzw v[12:15], v1, s[24:27], 0 offen
    s_waitcnt vmcnt(0)
    OUT 6
    // 7: tbuffer 16_16 SSCALED (the resource's formats say 8 UNORM and are not used)
    RSRC s22, s23, 0, 1024, IDENT | 0 << 12 | 1 << 15
    SENTINEL
    tbuffer_load_format_xy v[12:13], v1, s[24:27], 0 format:[BUF_DATA_FORMAT_16_16,BUF_NUM_FORMAT_SSCALED] offen
    s_waitcnt vmcnt(0)
    OUT 7
    // 8: d16, 8_8_8_8 UNORM: four halves in v[12:13]
    RSRC s22, s23, 0, 1024, IDENT | 0 << 12 | 10 << 15
    SENTINEL
    buffer_load_format_d16_xyzw v[12:13], v1, s[24:27], 0 offen
    s_waitcnt vmcnt(0)
    OUT 8
    // 9: d16_hi, 16 UNORM into the high half; the low half stays
    RSRC s22, s23, 0, 1024, IDENT | 0 << 12 | 2 << 15
    SENTINEL
    buffer_load_format_d16_hi_x v12, v1, s[24:27], 0 offen
    s_waitcnt vmcnt(0)
    OUT 9
    // 10: out of range: a 128-byte buffer, so lanes 32 and up read 0
    RSRC s22, s23, 0, 128, IDENT | 4 << 12 | 4 << 15
    SENTINEL
    buffer_load_format_x v12, v1, s[24:27], 0 offen
    s_waitcnt vmcnt(0)
    OUT 10

    // 11: store 8_8_8_8 UNORM: lane / 64, -0.5, 2.0, 0.25 (clamped and rounded)
    RSRC s20, s21, 11, 1024, IDENT | 0 << 12 | 10 << 15
    v_mul_f32 v12, 0x3c800000, v5                // lane / 64
    v_mov_b32 v13, -0.5
    v_mov_b32 v14, 2.0
    v_mov_b32 v15, 0.25
    buffer_store_format_xyzw v[12:15], v1, s[24:27], 0 offen
    // 12: tbuffer store 16_16 SINT: lane - 32 and 0x12345 (truncated)
    RSRC s20, s21, 12, 1024, IDENT
    v_subrev_u32 v12, 32, v0
    v_mov_b32 v13, 0x12345
    tbuffer_store_format_xy v[12:13], v1, s[24:27], 0 format:[BUF_DATA_FORMAT_16_16,BUF_NUM_FORMAT_SINT] offen
    // 13: d16 store 16_16 FLOAT from the halves of v12: lane and 0.5
    RSRC s20, s21, 13, 1024, IDENT | 7 << 12 | 5 << 15
    v_cvt_f16_f32 v12, v5
    v_mov_b32 v13, 0x3800
    v_lshl_or_b32 v12, v13, 16, v12
    buffer_store_format_d16_xy v12, v1, s[24:27], 0 offen
    // 14: store X only of 8_8_8_8 UINT over 0xffffffff: the other bytes stay
    RSRC s20, s21, 14, 1024, IDENT | 4 << 12 | 10 << 15
    v_mov_b32 v12, -1
    buffer_store_dword v12, v1, s[24:27], 0 offen
    s_waitcnt vmcnt(0)
    v_add_u32 v12, 0x100, v0
    buffer_store_format_x v12, v1, s[24:27], 0 offen
    // 15: store 2_10_10_10 UINT: lane, 2 lane, 3 lane, lane % 4
    RSRC s20, s21, 15, 1024, IDENT | 4 << 12 | 9 << 15
    v_mov_b32 v12, v0
    v_lshlrev_b32 v13, 1, v0
    v_mul_u32_u24 v14, 3, v0
    v_and_b32 v15, 3, v0
    buffer_store_format_xyzw v[12:15], v1, s[24:27], 0 offen
    s_waitcnt vmcnt(0)
    s_endpgm

.rodata
.p2align 6
.amdhsa_kernel formats
    .amdhsa_user_sgpr_kernarg_segment_ptr 1
    .amdhsa_system_sgpr_workgroup_id_x 1
    .amdhsa_system_vgpr_workitem_id 0
    .amdhsa_kernarg_size 16
    .amdhsa_next_free_vgpr 32
    .amdhsa_next_free_sgpr 48
    .amdhsa_accum_offset 28
.end_amdhsa_kernel
