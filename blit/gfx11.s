// kfdrt blit kernels, gfx11 (wave32). Same contract as gfx9.s.

.text

.macro PROLOGUE
    s_load_b128 s[4:7], s[0:1], 0x0           // dst, src/pattern
    s_load_b64 s[8:9], s[0:1], 0x10           // count in bytes
    s_load_b32 s10, s[0:1], 0x18              // stride in work-items
    s_waitcnt lgkmcnt(0)
    v_lshl_add_u32 v1, s2, 6, v0              // t = group * 64 + local id
.endm

// The tail of an aligned copy or fill, as in gfx9.s (s14 holds the wave's EXEC).
.macro TAIL op
    s_mov_b32 exec_lo, s14
    s_and_b32 s9, s8, 15
    s_cmp_eq_u32 s9, 0
    s_cbranch_scc1 3f
    s_cmp_lg_u32 s2, 0
    s_cbranch_scc1 3f
    v_lshlrev_b32 v2, 2, v0
    v_cmp_gt_u32 vcc_lo, s9, v2
    s_and_b32 exec_lo, exec_lo, vcc_lo
    s_cbranch_execz 3f
    s_and_b32 s8, s8, 0xfffffff0
    v_add_nc_u32 v2, s8, v2
    \op
3:
    s_endpgm
.endm

.macro COPY_DWORD
    global_load_b32 v4, v2, s[6:7]
    s_waitcnt vmcnt(0)
    global_store_b32 v2, v4, s[4:5]
.endm

.globl kfdrt_blit_copy_aligned
.p2align 8
.type kfdrt_blit_copy_aligned,@function
kfdrt_blit_copy_aligned:
    PROLOGUE
    s_mov_b32 s14, exec_lo
    s_lshr_b32 s12, s8, 4
    s_lshl_b32 s11, s10, 4
    v_lshlrev_b32 v2, 4, v1
1:
    v_cmp_gt_u32 vcc_lo, s12, v1
    s_and_b32 exec_lo, exec_lo, vcc_lo
    s_cbranch_execz 2f
    global_load_b128 v[4:7], v2, s[6:7]
    s_waitcnt vmcnt(0)
    global_store_b128 v2, v[4:7], s[4:5]
    v_add_nc_u32 v1, s10, v1
    v_add_nc_u32 v2, s11, v2
    s_branch 1b
2:
    TAIL COPY_DWORD

.globl kfdrt_blit_copy_unaligned
.p2align 8
.type kfdrt_blit_copy_unaligned,@function
kfdrt_blit_copy_unaligned:
    PROLOGUE
1:
    v_cmp_gt_u32 vcc_lo, s8, v1
    s_and_b32 exec_lo, exec_lo, vcc_lo
    s_cbranch_execz 2f
    v_mov_b32 v5, s7
    v_add_co_u32 v4, vcc_lo, s6, v1
    v_add_co_ci_u32 v5, vcc_lo, 0, v5, vcc_lo
    global_load_u8 v6, v[4:5], off
    v_mov_b32 v9, s5
    v_add_co_u32 v8, vcc_lo, s4, v1
    v_add_co_ci_u32 v9, vcc_lo, 0, v9, vcc_lo
    s_waitcnt vmcnt(0)
    global_store_b8 v[8:9], v6, off
    v_add_nc_u32 v1, s10, v1
    s_branch 1b
2:
    s_endpgm

.macro FILL_DWORD
    global_store_b32 v2, v6, s[4:5]
.endm

.globl kfdrt_blit_fill
.p2align 8
.type kfdrt_blit_fill,@function
kfdrt_blit_fill:
    PROLOGUE
    s_mov_b32 s14, exec_lo
    s_lshr_b32 s12, s8, 4
    s_lshl_b32 s11, s10, 4
    v_lshlrev_b32 v2, 4, v1
    v_mov_b32 v6, s6
    v_mov_b32 v7, s6
    v_mov_b32 v8, s6
    v_mov_b32 v9, s6
1:
    v_cmp_gt_u32 vcc_lo, s12, v1
    s_and_b32 exec_lo, exec_lo, vcc_lo
    s_cbranch_execz 2f
    global_store_b128 v2, v[6:9], s[4:5]
    v_add_nc_u32 v1, s10, v1
    v_add_nc_u32 v2, s11, v2
    s_branch 1b
2:
    TAIL FILL_DWORD

// Kernel descriptors are emitted by build.sh (they differ per target).
