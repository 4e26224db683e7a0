// GFX11's loads into LDS, `buffer_load_lds_*` (tests/lds_dma.rs), in one wave32; the gfx1100
// counterpart of lds_dma.s. Kernargs: out @0, in @8 (512 bytes). LDS (2560 bytes) is first
// filled with 0xdeadbeef; case c sets M0 = c * 512 and loads into LDS from there; at the end
// the whole LDS is copied to out.
.amdgcn_target "amdgcn-amd-amdhsa--gfx1100"
.text
.globl lds_dma11
.p2align 8
.type lds_dma11,@function

.set LDS_DWORDS, 640

lds_dma11:
    s_load_b128 s[20:23], s[0:1], 0x0             // out, in
    v_lshlrev_b32 v1, 2, v0                       // lane * 4
    v_lshlrev_b32 v4, 1, v0                       // lane * 2
    v_mov_b32 v5, 0xdeadbeef
.rept LDS_DWORDS / 32
    ds_store_b32 v1, v5
    v_add_nc_u32 v1, 128, v1
.endr
    v_lshlrev_b32 v1, 2, v0
    s_waitcnt lgkmcnt(0)
    // s[24:27]: a raw buffer over `in` (OOB_SELECT 3, raw), 256 bytes.
    s_mov_b32 s24, s22
    s_and_b32 s25, s23, 0xffff
    s_mov_b32 s26, 256
    s_mov_b32 s27, 0x30000000

    // 0: dwords
    s_mov_b32 m0, 0
    buffer_load_lds_b32 v1, s[24:27], 0 offen
    // 1: unsigned bytes
    s_mov_b32 m0, 512
    buffer_load_lds_u8 v0, s[24:27], 0 offen
    // 2: signed bytes; the instruction offset moves both the memory and the LDS address
    s_mov_b32 m0, 1024
    buffer_load_lds_i8 v0, s[24:27], 0 offen offset:12
    // 3: signed shorts from a 32-byte buffer: lanes 16 and up are out of range and load 0
    s_mov_b32 m0, 1536
    s_mov_b32 s26, 32
    buffer_load_lds_i16 v4, s[24:27], 0 offen
    s_mov_b32 s26, 256
    // 4: unsigned shorts, even lanes only, and SOFFSET 8 (the memory address only)
    s_mov_b32 m0, 2048
    s_mov_b32 exec_lo, 0x55555555
    s_mov_b32 s30, 8
    buffer_load_lds_u16 v4, s[24:27], s30 offen
    s_mov_b32 exec_lo, -1
    s_waitcnt vmcnt(0)

    // Copy the LDS out: dword lane + 32 k.
    v_lshlrev_b32 v1, 2, v0
.rept LDS_DWORDS / 32
    ds_load_b32 v5, v1
    s_waitcnt lgkmcnt(0)
    global_store_b32 v1, v5, s[20:21]
    v_add_nc_u32 v1, 128, v1
.endr
    s_endpgm

.rodata
.p2align 6
.amdhsa_kernel lds_dma11
    .amdhsa_user_sgpr_kernarg_segment_ptr 1
    .amdhsa_system_sgpr_workgroup_id_x 1
    .amdhsa_system_vgpr_workitem_id 0
    .amdhsa_kernarg_size 16
    .amdhsa_group_segment_fixed_size 2560
    .amdhsa_next_free_vgpr 16
    .amdhsa_next_free_sgpr 40
    .amdhsa_wavefront_size32 1
.end_amdhsa_kernel
