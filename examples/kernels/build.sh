#!/usr/bin/env bash
# Rebuilds mlp-gfx90a.co and mlp-gfx942.co from mlp.hip with Debian 12's hipcc 5.2.3
# (clang-15 and the HIP device libraries; installed when missing, as root). The example and the
# tests use the checked-in outputs: neither the build nor CI runs this.
#
# clang-15 does not know gfx942; gfx942 runs gfx940 code unchanged (one ISA, one code-object
# ABI), so the gfx942 object is the gfx940 build with the ELF machine (EF_AMDGPU_MACH, the low
# byte of e_flags at offset 0x30) set to gfx942 (0x4c) and the metadata's target renamed.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v hipcc >/dev/null; then
  apt-get update -qq && apt-get install -y -qq hipcc
fi
DEVLIB=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode
build() { # arch output
  /usr/bin/clang++-15 -std=c++17 --rocm-path=/usr --hip-device-lib-path="$DEVLIB" \
    --offload-arch="$1" --cuda-device-only --no-gpu-bundle-output -O3 -x hip mlp.hip -o "$2"
}
build gfx90a mlp-gfx90a.co
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
build gfx940 "$tmp"
python3 - "$tmp" mlp-gfx942.co <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
assert data[0x30] == 0x40, hex(data[0x30])
data[0x30] = 0x4C
data = data.replace(b"amdgcn-amd-amdhsa--gfx940", b"amdgcn-amd-amdhsa--gfx942")
open(sys.argv[2], "wb").write(bytes(data))
PY
