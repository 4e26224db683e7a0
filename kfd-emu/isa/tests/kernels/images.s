// Image load and store cases (tests/images.rs), gfx90a (gfx94x has no image instructions).
// One wave of 64. Kernargs: out @0, in @8. Lane l has x = l % 8 in v2 and y = l / 8 in v3. Load
// cases store v[12:15] at out + case * 1024 + lane * 16; store cases write an image at
// out + case * 1024. Images are linear (SW_MODE 0), so their bytes are where the test looks.
.text
.globl images
.p2align 8
.type images,@function

.set IDENT, 4 | 5 << 3 | 6 << 6 | 7 << 9
.set T1D, 8 << 28
.set T2D, 9 << 28
.set T2DARRAY, 13 << 28

// s[24:31] = an image at s[BASE_LO:BASE_HI] + OFFSET: formats, size, type and select, pitch.
.macro TSHARP base_lo, base_hi, offset, fmt, size, word3, word4
    s_add_u32 s28, \base_lo, \offset
    s_addc_u32 s29, \base_hi, 0
    s_lshr_b64 s[24:25], s[28:29], 8
    s_and_b32 s25, s25, 0xff
    s_or_b32 s25, s25, \fmt
    s_mov_b32 s26, \size
    s_mov_b32 s27, \word3
    s_mov_b32 s28, \word4
    s_mov_b32 s29, 0
    s_mov_b32 s30, 0
    s_mov_b32 s31, 0
.endm

.macro OUT case
    s_add_u32 s34, s20, \case * 1024
    s_addc_u32 s35, s21, 0
    global_store_dwordx4 v1, v[12:15], s[34:35]
.endm

.macro SENTINEL
    v_mov_b32 v12, 0xdead
    v_mov_b32 v13, 0xdead
    v_mov_b32 v14, 0xdead
    v_mov_b32 v15, 0xdead
.endm

images:
    s_load_dwordx4 s[20:23], s[0:1], 0x0          // out, in
    s_waitcnt lgkmcnt(0)
    v_lshlrev_b32 v1, 4, v0                       // lane * 16
    v_and_b32 v2, 7, v0                           // x
    v_lshrrev_b32 v3, 3, v0                       // y
    v_cvt_f32_u32 v5, v2
    v_cvt_f32_u32 v6, v3

    // 0: 2D 8x8 RGBA8 UNORM, pitch 8
    TSHARP s22, s23, 0, 10 << 20 | 0 << 26, 7 | 7 << 14, IDENT | T2D, 0 | 7 << 13
    SENTINEL
    image_load v[12:15], v[2:3], s[24:31] dmask:0xf unorm
    s_waitcnt vmcnt(0)
    OUT 0
    // 1: the same texels at pitch 16, channels X and Z through a reversed select
    TSHARP s22, s23, 0, 10 << 20 | 0 << 26, 7 | 7 << 14, (7 | 6 << 3 | 5 << 6 | 4 << 9) | T2D, 0 | 15 << 13
    SENTINEL
    image_load v[12:13], v[2:3], s[24:31] dmask:0x5 unorm
    s_waitcnt vmcnt(0)
    OUT 1
    // 2: a 4x4 image: lanes outside it read 0
    TSHARP s22, s23, 0, 10 << 20 | 4 << 26, 3 | 3 << 14, IDENT | T2D, 0 | 3 << 13
    SENTINEL
    image_load v[12:15], v[2:3], s[24:31] dmask:0xf unorm
    s_waitcnt vmcnt(0)
    OUT 2
    // 3: a 2D array of 4 slices of 4x4 R32 UINT: x = l % 4, y = l / 4 % 4, slice = l / 16
    v_and_b32 v8, 3, v0
    v_bfe_u32 v9, v0, 2, 2
    v_lshrrev_b32 v10, 4, v0
    TSHARP s22, s23, 0, 4 << 20 | 4 << 26, 3 | 3 << 14, IDENT | T2DARRAY, 3 | 3 << 13
    SENTINEL
    image_load v12, v[8:10], s[24:31] dmask:0x1 unorm da
    s_waitcnt vmcnt(0)
    OUT 3
    // 4: d16: RGBA8 UNORM as four halves
    TSHARP s22, s23, 0, 10 << 20 | 0 << 26, 7 | 7 << 14, IDENT | T2D, 0 | 7 << 13
    SENTINEL
    image_load v[12:13], v[2:3], s[24:31] dmask:0xf unorm d16
    s_waitcnt vmcnt(0)
    OUT 4
    // 5: 1D R32 FLOAT, 64 wide: x = lane
    TSHARP s22, s23, 0, 4 << 20 | 7 << 26, 63, IDENT | T1D, 0 | 63 << 13
    SENTINEL
    image_load v12, v0, s[24:31] dmask:0x1 unorm
    s_waitcnt vmcnt(0)
    OUT 5

    // 6: store a 2D 8x8 RGBA8 UNORM image: x / 8, y / 8, 0.5, 1.0
    TSHARP s20, s21, 6 * 1024, 10 << 20 | 0 << 26, 7 | 7 << 14, IDENT | T2D, 0 | 7 << 13
    v_mul_f32 v12, 0x3e000000, v5                 // x / 8
    v_mul_f32 v13, 0x3e000000, v6                 // y / 8
    v_mov_b32 v14, 0.5
    v_mov_b32 v15, 1.0
    image_store v[12:15], v[2:3], s[24:31] dmask:0xf unorm
    // 7: store R32 UINT into a 4x4 image: lanes outside it write nothing
    TSHARP s20, s21, 7 * 1024, 4 << 20 | 4 << 26, 3 | 3 << 14, IDENT | T2D, 0 | 3 << 13
    v_add_u32 v12, 0x100, v0
    image_store v12, v[2:3], s[24:31] dmask:0x1 unorm
    // 8: store through a reversed select (BGRA): register X lands in memory channel W
    TSHARP s20, s21, 8 * 1024, 10 << 20 | 4 << 26, 7 | 7 << 14, (7 | 6 << 3 | 5 << 6 | 4 << 9) | T2D, 0 | 7 << 13
    v_mov_b32 v12, 1
    v_mov_b32 v13, 2
    v_mov_b32 v14, 3
    v_mov_b32 v15, 4
    image_store v[12:15], v[2:3], s[24:31] dmask:0xf unorm
    s_waitcnt vmcnt(0)
    s_endpgm

.rodata
.p2align 6
.amdhsa_kernel images
    .amdhsa_user_sgpr_kernarg_segment_ptr 1
    .amdhsa_system_sgpr_workgroup_id_x 1
    .amdhsa_system_vgpr_workitem_id 0
    .amdhsa_kernarg_size 16
    .amdhsa_next_free_vgpr 32
    .amdhsa_next_free_sgpr 48
    .amdhsa_accum_offset 28
.end_amdhsa_kernel
