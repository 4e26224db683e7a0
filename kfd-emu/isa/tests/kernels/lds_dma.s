// Loads into LDS (tests/lds_dma.rs): MUBUF's `lds` bit, and on gfx940 `global_load_lds_*` and
// `scratch_load_lds_*`. One wave of 64; kernargs: out @0, in @8 (512 bytes). LDS (4608 bytes)
// is first filled with 0xdeadbeef; case c sets M0 = c * 512 and loads into LDS from there;
// at the end the whole LDS is copied to out. Cases 6-8 are gfx940's (regen.sh defines GFX940
// and fills in KD_SCRATCH); on gfx90a their LDS keeps the fill. The test works out every
// dword on the CPU. lds_dma11.s is the gfx1100 counterpart.
.text
.globl lds_dma
.p2align 8
.type lds_dma,@function

.set LDS_DWORDS, 1152

lds_dma:
    s_load_dwordx4 s[20:23], s[0:1], 0x0          // out, in
    v_lshlrev_b32 v1, 2, v0                       // lane * 4
    v_lshlrev_b32 v4, 1, v0                       // lane * 2
    v_mov_b32 v5, 0xdeadbeef
.rept LDS_DWORDS / 64
    ds_write_b32 v1, v5
    v_add_u32 v1, 256, v1
.endr
    v_lshlrev_b32 v1, 2, v0
    s_waitcnt lgkmcnt(0)
    // s[24:27]: a raw buffer over `in`, 256 bytes.
    s_mov_b32 s24, s22
    s_and_b32 s25, s23, 0xffff
    s_mov_b32 s26, 256
    s_mov_b32 s27, 0x27000

    // 0: dwords
    s_mov_b32 m0, 0
    buffer_load_dword v1, s[24:27], 0 offen lds
    // 1: unsigned bytes
    s_mov_b32 m0, 512
    buffer_load_ubyte v0, s[24:27], 0 offen lds
    // 2: signed bytes; the instruction offset moves both the memory and the LDS address
    s_mov_b32 m0, 1024
    buffer_load_sbyte v0, s[24:27], 0 offen offset:12 lds
    // 3: signed shorts from a 64-byte buffer: lanes 32 and up are out of range and load 0
    s_mov_b32 m0, 1536
    s_mov_b32 s26, 64
    buffer_load_sshort v4, s[24:27], 0 offen lds
    s_mov_b32 s26, 256
    // 4: unsigned shorts, even lanes only: the odd lanes' LDS keeps the fill
    s_mov_b32 m0, 2048
    s_mov_b32 exec_lo, 0x55555555
    s_mov_b32 exec_hi, 0x55555555
    buffer_load_ushort v4, s[24:27], 0 offen lds
    s_mov_b64 exec, -1
    // 5: SOFFSET moves the memory address only
    s_mov_b32 m0, 2560
    s_mov_b32 s30, 8
    buffer_load_dword v1, s[24:27], s30 offen lds
.ifdef GFX940
    // 6: global_load_lds_dword with a 64-bit address and offset:16 (both addresses)
    s_mov_b32 m0, 3072
    v_mov_b32 v7, s23
    v_add_co_u32 v6, vcc, s22, v1
    v_addc_co_u32 v7, vcc, 0, v7, vcc
    global_load_lds_dword v[6:7], off offset:16
    // 7: global_load_lds_sshort with a scalar base and offset:4
    s_mov_b32 m0, 3584
    global_load_lds_sshort v4, s[22:23] offset:4
    // 8: scratch_load_lds_dword: each lane's own private dword at offset 4
    v_mad_u32_u24 v9, v0, 3, 1                    // 3 * lane + 1
    scratch_store_dword off, v9, off offset:4
    s_waitcnt vmcnt(0)
    s_mov_b32 m0, 4096
    v_mov_b32 v2, 0
    scratch_load_lds_dword v2, off offset:4
.endif
    s_waitcnt vmcnt(0)

    // Copy the LDS out: dword lane + 64 k.
    v_lshlrev_b32 v1, 2, v0
.rept LDS_DWORDS / 64
    ds_read_b32 v5, v1
    s_waitcnt lgkmcnt(0)
    global_store_dword v1, v5, s[20:21]
    v_add_u32 v1, 256, v1
.endr
    s_endpgm

.rodata
.p2align 6
.amdhsa_kernel lds_dma
    .amdhsa_user_sgpr_kernarg_segment_ptr 1
    .amdhsa_system_sgpr_workgroup_id_x 1
    .amdhsa_system_vgpr_workitem_id 0
    .amdhsa_kernarg_size 16
    .amdhsa_group_segment_fixed_size 4608
    KD_SCRATCH
    .amdhsa_next_free_vgpr 16
    .amdhsa_next_free_sgpr 40
    .amdhsa_accum_offset 16
.end_amdhsa_kernel
