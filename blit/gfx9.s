// kfdrt blit kernels, gfx9 family (assembled for gfx90a and gfx940; the gfx942 object is the
// gfx940 one with its ELF machine set to gfx942: these kernels use no instruction that differs).
//
// Contract shared by every blit kernel (and by the emulator's stand-ins bound to them):
//   kernargs: dst u64 @0, src-or-pattern u64 @8, count u64 @16 (bytes), stride u32 @24
//   (work-items in the grid); work-groups of 64; work-item t handles elements t, t+stride, ...
//   (dwords for the aligned copy and the fill, bytes for the unaligned copy).

.text

.macro PROLOGUE
    s_load_dwordx4 s[4:7], s[0:1], 0x0        // dst, src/pattern
    s_load_dwordx2 s[8:9], s[0:1], 0x10       // count in bytes
    s_load_dword s10, s[0:1], 0x18            // stride in work-items
    s_waitcnt lgkmcnt(0)
    v_lshl_add_u32 v1, s2, 6, v0              // t = group * 64 + local id
.endm

.globl kfdrt_blit_copy_aligned
.p2align 8
.type kfdrt_blit_copy_aligned,@function
kfdrt_blit_copy_aligned:
    PROLOGUE
    s_lshr_b64 s[8:9], s[8:9], 2              // dwords
1:
    v_cmp_gt_u32 vcc, s8, v1                  // lanes with t < dwords continue
    s_and_b64 exec, exec, vcc
    s_cbranch_execz 2f
    v_lshlrev_b32 v2, 2, v1                   // byte offset
    v_mov_b32 v5, s7
    v_add_co_u32 v4, vcc, s6, v2
    v_addc_co_u32 v5, vcc, 0, v5, vcc
    global_load_dword v6, v[4:5], off
    v_mov_b32 v9, s5
    v_add_co_u32 v8, vcc, s4, v2
    v_addc_co_u32 v9, vcc, 0, v9, vcc
    s_waitcnt vmcnt(0)
    global_store_dword v[8:9], v6, off
    v_add_u32 v1, s10, v1
    s_branch 1b
2:
    s_endpgm

.globl kfdrt_blit_copy_unaligned
.p2align 8
.type kfdrt_blit_copy_unaligned,@function
kfdrt_blit_copy_unaligned:
    PROLOGUE
1:
    v_cmp_gt_u32 vcc, s8, v1                  // lanes with t < bytes continue
    s_and_b64 exec, exec, vcc
    s_cbranch_execz 2f
    v_mov_b32 v5, s7
    v_add_co_u32 v4, vcc, s6, v1
    v_addc_co_u32 v5, vcc, 0, v5, vcc
    global_load_ubyte v6, v[4:5], off
    v_mov_b32 v9, s5
    v_add_co_u32 v8, vcc, s4, v1
    v_addc_co_u32 v9, vcc, 0, v9, vcc
    s_waitcnt vmcnt(0)
    global_store_byte v[8:9], v6, off
    v_add_u32 v1, s10, v1
    s_branch 1b
2:
    s_endpgm

.globl kfdrt_blit_fill
.p2align 8
.type kfdrt_blit_fill,@function
kfdrt_blit_fill:
    PROLOGUE
    s_lshr_b64 s[8:9], s[8:9], 2              // dwords
    v_mov_b32 v6, s6                          // the pattern
1:
    v_cmp_gt_u32 vcc, s8, v1
    s_and_b64 exec, exec, vcc
    s_cbranch_execz 2f
    v_lshlrev_b32 v2, 2, v1
    v_mov_b32 v9, s5
    v_add_co_u32 v8, vcc, s4, v2
    v_addc_co_u32 v9, vcc, 0, v9, vcc
    global_store_dword v[8:9], v6, off
    v_add_u32 v1, s10, v1
    s_branch 1b
2:
    s_endpgm

// Kernel descriptors are emitted by build.sh (they differ per target).
