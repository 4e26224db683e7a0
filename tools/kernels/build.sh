#!/usr/bin/env bash
# Assembles kfdrt-bench's empty kernel into the code objects it embeds (checked in).
# Needs Debian's llvm-16 and lld-16; installs them when missing (run as root on Debian/Ubuntu).
# The build never runs this: it uses the checked-in objects.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v llvm-mc-16 >/dev/null || ! command -v ld.lld-16 >/dev/null; then
  apt-get update -qq && apt-get install -y -qq llvm-16 lld-16
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
build() { # mcpu output extra-descriptor-lines
  local mcpu=$1 out=$2 extra=$3
  {
    echo ".amdgcn_target \"amdgcn-amd-amdhsa--$mcpu\""
    cat empty.s
    cat <<DESC
.rodata
.p2align 6
.amdhsa_kernel kfdrt_bench_empty
    .amdhsa_next_free_vgpr 1
    .amdhsa_next_free_sgpr 1
$extra
.end_amdhsa_kernel
DESC
  } > "$tmp/$out.s"
  llvm-mc-16 -triple amdgcn-amd-amdhsa -mcpu="$mcpu" -filetype=obj -o "$tmp/$out.o" "$tmp/$out.s"
  ld.lld-16 -shared --no-undefined -o "empty-$out.co" "$tmp/$out.o"
}
build gfx90a gfx90a "    .amdhsa_accum_offset 4"
build gfx940 gfx940 "    .amdhsa_accum_offset 4"
build gfx1100 gfx1100 "    .amdhsa_wavefront_size32 1"
# gfx942 runs the gfx940 code unchanged: EF_AMDGPU_MACH (low byte of e_flags at 0x30) 0x40 -> 0x4c.
python3 - <<'PY'
data = bytearray(open("empty-gfx940.co", "rb").read())
assert data[0x30] == 0x40, hex(data[0x30])
data[0x30] = 0x4C
open("empty-gfx942.co", "wb").write(bytes(data))
PY
rm empty-gfx940.co
ls -l ./*.co
