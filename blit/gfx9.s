// kfdrt blit kernels, gfx9 family (assembled for gfx90a and gfx940; the gfx942 object is the
// gfx940 one with its ELF machine set to gfx942: these kernels use no instruction that differs).
//
// Contract shared by every blit kernel (and by the emulator's stand-ins bound to them):
//   kernargs: dst u64 @0, src-or-pattern u64 @8, count u64 @16 (bytes, below 4 GiB), stride
//   u32 @24 (work-items in the grid); work-groups of 64; work-item t handles elements t,
//   t+stride, ... (16-byte quads for the aligned copy and the fill, whose last count % 16
//   bytes, whole dwords, the first lanes of group 0 then handle; bytes for the unaligned copy).
//   Quads move with one load and one store each, addressed from the scalar base: a fourth of
//   the instructions per byte of dword copies, on the GPU and in the emulator.

.text

.macro PROLOGUE
    s_load_dwordx4 s[4:7], s[0:1], 0x0        // dst, src/pattern
    s_load_dwordx2 s[8:9], s[0:1], 0x10       // count in bytes
    s_load_dword s10, s[0:1], 0x18            // stride in work-items
    s_waitcnt lgkmcnt(0)
    v_lshl_add_u32 v1, s2, 6, v0              // t = group * 64 + local id
.endm

// The last count % 16 bytes (0, 4, 8 or 12) of an aligned copy or fill, by lanes 0-2 of group
// 0, after the quads; s[14:15] holds the launch's EXEC, s8 the count, and \op the per-lane
// dword move at byte offset v2.
.macro TAIL op
    s_mov_b64 exec, s[14:15]
    s_and_b32 s9, s8, 15                      // tail bytes
    s_cmp_eq_u32 s9, 0
    s_cbranch_scc1 3f
    s_cmp_lg_u32 s2, 0                        // group 0 only
    s_cbranch_scc1 3f
    v_lshlrev_b32 v2, 2, v0                   // lane * 4
    v_cmp_gt_u32 vcc, s9, v2
    s_and_b64 exec, exec, vcc
    s_cbranch_execz 3f
    s_and_b32 s8, s8, 0xfffffff0              // where the tail starts
    v_add_u32 v2, s8, v2
    \op
3:
    s_endpgm
.endm

.macro COPY_DWORD
    global_load_dword v4, v2, s[6:7]
    s_waitcnt vmcnt(0)
    global_store_dword v2, v4, s[4:5]
.endm

.globl kfdrt_blit_copy_aligned
.p2align 8
.type kfdrt_blit_copy_aligned,@function
kfdrt_blit_copy_aligned:
    PROLOGUE
    s_mov_b64 s[14:15], exec
    s_lshr_b32 s12, s8, 4                     // quads
    s_lshl_b32 s11, s10, 4                    // stride in bytes
    v_lshlrev_b32 v2, 4, v1                   // byte offset of quad t
1:
    v_cmp_gt_u32 vcc, s12, v1                 // lanes with t < quads continue
    s_and_b64 exec, exec, vcc
    s_cbranch_execz 2f
    global_load_dwordx4 v[4:7], v2, s[6:7]
    s_waitcnt vmcnt(0)
    global_store_dwordx4 v2, v[4:7], s[4:5]
    v_add_u32 v1, s10, v1
    v_add_u32 v2, s11, v2
    s_branch 1b
2:
    TAIL COPY_DWORD

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

.macro FILL_DWORD
    global_store_dword v2, v6, s[4:5]
.endm

.globl kfdrt_blit_fill
.p2align 8
.type kfdrt_blit_fill,@function
kfdrt_blit_fill:
    PROLOGUE
    s_mov_b64 s[14:15], exec
    s_lshr_b32 s12, s8, 4                     // quads
    s_lshl_b32 s11, s10, 4                    // stride in bytes
    v_lshlrev_b32 v2, 4, v1                   // byte offset of quad t
    v_mov_b32 v6, s6                          // the pattern, four times
    v_mov_b32 v7, s6
    v_mov_b32 v8, s6
    v_mov_b32 v9, s6
1:
    v_cmp_gt_u32 vcc, s12, v1
    s_and_b64 exec, exec, vcc
    s_cbranch_execz 2f
    global_store_dwordx4 v2, v[6:9], s[4:5]
    v_add_u32 v1, s10, v1
    v_add_u32 v2, s11, v2
    s_branch 1b
2:
    TAIL FILL_DWORD

// Kernel descriptors are emitted by build.sh (they differ per target).
