// A kernel that dumps the registers it starts with, to check the wave start state against
// the AMDGPU ABI: every user SGPR and system SGPR enabled. The kernarg pointer sits at
// KERNARG (s[8:9] on gfx90a, s[4:5] on gfx940, which has no private-segment-buffer or
// flat-scratch-init SGPRs); the first kernarg is the output buffer:
//   out[0..20]  = s0..s19 (dwords), out[20..22] = FLAT_SCRATCH lo/hi,
//   out[64 + lane] = v0 of each lane (packed work-item ids).
.text
.globl abi_dump
.p2align 8
.type abi_dump,@function
abi_dump:
    s_load_dwordx2 s[40:41], KERNARG, 0x0
    s_waitcnt lgkmcnt(0)
    v_mbcnt_lo_u32_b32 v3, -1, 0
    v_mbcnt_hi_u32_b32 v3, -1, v3
    v_lshlrev_b32 v3, 2, v3
    v_mov_b32 v1, 0
.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19
    v_mov_b32 v2, s\n
    global_store_dword v1, v2, s[40:41] offset:\n*4
.endr
    v_mov_b32 v2, flat_scratch_lo
    global_store_dword v1, v2, s[40:41] offset:80
    v_mov_b32 v2, flat_scratch_hi
    global_store_dword v1, v2, s[40:41] offset:84
    global_store_dword v3, v0, s[40:41] offset:256
    s_endpgm

.rodata
.p2align 6
.amdhsa_kernel abi_dump
    USER_SGPRS
    .amdhsa_user_sgpr_dispatch_ptr 1
    .amdhsa_user_sgpr_queue_ptr 1
    .amdhsa_user_sgpr_kernarg_segment_ptr 1
    .amdhsa_user_sgpr_dispatch_id 1
    .amdhsa_user_sgpr_private_segment_size 1
    PRIVATE
    .amdhsa_system_sgpr_workgroup_id_x 1
    .amdhsa_system_sgpr_workgroup_id_y 1
    .amdhsa_system_sgpr_workgroup_id_z 1
    .amdhsa_system_sgpr_workgroup_info 1
    .amdhsa_system_vgpr_workitem_id 2
    .amdhsa_private_segment_fixed_size 16
    .amdhsa_kernarg_size 8
    .amdhsa_next_free_vgpr 8
    .amdhsa_next_free_sgpr 48
    .amdhsa_accum_offset 8
.end_amdhsa_kernel
