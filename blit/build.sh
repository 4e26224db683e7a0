#!/usr/bin/env bash
# Assembles the blit kernels into the code objects kfdrt embeds (blit/*.co, checked in).
# Needs Debian's llvm-16 and lld-16; installs them when missing (run as root on Debian/Ubuntu).
# The build and the tests never run this: they use the checked-in objects.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v llvm-mc-16 >/dev/null || ! command -v ld.lld-16 >/dev/null; then
  apt-get update -qq && apt-get install -y -qq llvm-16 lld-16
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
build() { # source mcpu output extra-descriptor-lines
  local src=$1 mcpu=$2 out=$3 extra=$4
  {
    echo ".amdgcn_target \"amdgcn-amd-amdhsa--$mcpu\""
    cat "$src"
    echo ".rodata"
    for k in kfdrt_blit_copy_aligned kfdrt_blit_copy_unaligned kfdrt_blit_fill; do
      cat <<DESC
.p2align 6
.amdhsa_kernel $k
    .amdhsa_user_sgpr_kernarg_segment_ptr 1
    .amdhsa_system_sgpr_workgroup_id_x 1
    .amdhsa_system_vgpr_workitem_id 0
    .amdhsa_kernarg_size 32
    .amdhsa_next_free_vgpr 10
    .amdhsa_next_free_sgpr 16
    .amdhsa_reserve_vcc 1
$extra
.end_amdhsa_kernel
DESC
    done
  } > "$tmp/$out.s"
  llvm-mc-16 -triple amdgcn-amd-amdhsa -mcpu="$mcpu" -filetype=obj -o "$tmp/$out.o" "$tmp/$out.s"
  ld.lld-16 -shared --no-undefined -o "$out.co" "$tmp/$out.o"
}
# gfx90a needs an accumulation-register offset (no AGPRs used: the first granule).
build gfx9.s gfx90a gfx90a "    .amdhsa_accum_offset 4"
build gfx9.s gfx940 gfx940 "    .amdhsa_accum_offset 4"
build gfx11.s gfx1100 gfx1100 "    .amdhsa_wavefront_size32 1"
# gfx942 runs the gfx940 code unchanged: rewrite EF_AMDGPU_MACH (low byte of e_flags at 0x30)
# from gfx940 (0x40) to gfx942 (0x4c).
python3 - <<'PY'
data = bytearray(open("gfx940.co", "rb").read())
assert data[0x30] == 0x40, hex(data[0x30])
data[0x30] = 0x4C
open("gfx942.co", "wb").write(bytes(data))
PY
rm gfx940.co
ls -l ./*.co
