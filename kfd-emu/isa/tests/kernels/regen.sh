#!/usr/bin/env bash
# Regenerates the checked-in test code objects (*.co) and the disassembly golden (*.dis) from
# the sources in this directory. The build and the tests never run this: they use the checked-in
# files, so CI needs no LLVM. Needs Debian 12's hipcc 5.2.3 (clang-15 + HIP device libraries),
# llvm-16 (llvm-objdump-16) and python3; installs them when missing (run as root).
#
# clang-15/16 know gfx940 but not gfx942. gfx942 runs gfx940 code unchanged (same ISA), so the
# gfx942 objects are gfx940 builds whose ELF machine (EF_AMDGPU_MACH, low byte of e_flags) is
# rewritten from gfx940 (0x40) to gfx942 (0x4c), as blit/build.sh does; their golden is
# disassembled with --mcpu=gfx940 (llvm-objdump-16 does not know gfx942 either).
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v hipcc >/dev/null || ! command -v llvm-objdump-16 >/dev/null \
  || ! command -v clang-16 >/dev/null; then
  apt-get update -qq && apt-get install -y -qq hipcc clang-16 llvm-16 lld-16 python3
fi
DEVLIB=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

hip() { # source arch output [extra flags]
  /usr/bin/clang++-15 -std=c++17 --rocm-path=/usr --hip-device-lib-path="$DEVLIB" \
    --offload-arch="$2" --cuda-device-only --no-gpu-bundle-output -O2 ${4:-} \
    -mllvm -amdgpu-early-inline-all=true -mllvm -amdgpu-function-calls=false \
    -x hip "$1" -o "$3"
}

relabel_gfx942() { # in out
  python3 - "$1" "$2" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
assert data[0x30] == 0x40, hex(data[0x30])
data[0x30] = 0x4C
open(sys.argv[2], "wb").write(bytes(data))
PY
}

golden() { # object mcpu output
  # One line per instruction: its address (hex) and the text before llvm-objdump's "//"
  # comment, whitespace squeezed.
  llvm-objdump-16 -d --triple=amdgcn-amd-amdhsa --mcpu="$2" "$1" |
    awk -F'//' '/^\t/ {
      text = $1; gsub(/[ \t]+/, " ", text); sub(/^ /, "", text); sub(/ $/, "", text)
      split($2, a, ":"); addr = a[1]; gsub(/ /, "", addr); sub(/^0+/, "", addr)
      print addr " " text
    }' > "$3"
}

# GFX11 (RDNA3, wave32): Debian's device libraries (ROCm 5.2) have no ISA-version library for
# gfx1100, which clang-15 links for every target. The one it needs only defines
# __oclc_ISA_version; a copy of the library directory gets one for 11.0.0, the others are
# target-independent bitcode.
gfx11_devlib() {
  mkdir -p "$tmp/devlib"
  cp "$DEVLIB"/*.bc "$tmp/devlib/"
  cat > "$tmp/isa1100.ll" <<'LL'
target triple = "amdgcn-amd-amdhsa"
@__oclc_ISA_version = linkonce_odr hidden local_unnamed_addr addrspace(4) constant i32 11000, align 4
LL
  /usr/lib/llvm-15/bin/llvm-as "$tmp/isa1100.ll" -o "$tmp/devlib/oclc_isa_version_1100.bc"
}
gfx11_devlib
hip_gfx11() { # source output [extra flags]
  /usr/bin/clang++-15 -std=c++17 --rocm-path=/usr --hip-device-lib-path="$tmp/devlib" \
    --offload-arch=gfx1100 --cuda-device-only --no-gpu-bundle-output -O2 ${3:-} \
    -mllvm -amdgpu-early-inline-all=true -mllvm -amdgpu-function-calls=false \
    -x hip "$1" -o "$2"
}
hip_gfx11 kernels.hip kernels-gfx1100.co
golden kernels-gfx1100.co gfx1100 kernels-gfx1100.dis
# GFX11 instruction-level cases (tests/ops11.rs).
llvm-mc-16 -triple amdgcn-amd-amdhsa -mcpu=gfx1100 -filetype=obj -o "$tmp/ops11.o" ops11.s
ld.lld-16 -shared --no-undefined -o ops11-gfx1100.co "$tmp/ops11.o"
golden ops11-gfx1100.co gfx1100 ops11-gfx1100.dis
# The same kernels as wave64 code (GFX11 runs both; the disassembler prints wave32 forms, as
# llvm-objdump does without -mattr=+wavefrontsize64, so this build has no golden).
hip_gfx11 kernels.hip kernels_w64-gfx1100.co -mwavefrontsize64
hip_gfx11 wmma.hip wmma-gfx1100.co
# The device math library (ocml) element-wise, for gfx90a and gfx1100 (tests/math.rs).
hip math.hip gfx90a math-gfx90a.co
golden math-gfx90a.co gfx90a math-gfx90a.dis
hip_gfx11 math.hip math-gfx1100.co
golden math-gfx1100.co gfx1100 math-gfx1100.dis
golden wmma-gfx1100.co gfx1100 wmma-gfx1100.dis

for src in kernels.hip mfma.hip; do
  base=${src%.hip}
  hip "$src" gfx90a "$base-gfx90a.co"
  hip "$src" gfx940 "$tmp/$base-gfx940.co"
  relabel_gfx942 "$tmp/$base-gfx940.co" "$base-gfx942.co"
  golden "$base-gfx90a.co" gfx90a "$base-gfx90a.dis"
  golden "$base-gfx942.co" gfx940 "$base-gfx942.dis"
done
# gfx94x FP8/BF8 MFMA GEMMs: clang-16 (clang-15 has no FP8 builtins), gfx940 relabelled.
clang-16 -x hip --offload-arch=gfx940 --cuda-device-only --no-gpu-bundle-output -nogpulib \
  -nogpuinc -O2 mfma_fp8.hip -o "$tmp/mfma_fp8-gfx940.co"
relabel_gfx942 "$tmp/mfma_fp8-gfx940.co" mfma_fp8-gfx942.co
golden mfma_fp8-gfx942.co gfx940 mfma_fp8-gfx942.dis
# gfx94x sparse (SMFMAC) and xf32 GEMMs, clang-16 likewise.
clang-16 -x hip --offload-arch=gfx940 --cuda-device-only --no-gpu-bundle-output -nogpulib \
  -nogpuinc -O2 mfma_sparse.hip -o "$tmp/mfma_sparse-gfx940.co"
relabel_gfx942 "$tmp/mfma_sparse-gfx940.co" mfma_sparse-gfx942.co
golden mfma_sparse-gfx942.co gfx940 mfma_sparse-gfx942.dis
# Kernel-argument layout from the metadata note: "kernel offset size value_kind" per argument.
kernarg_layout() { # object output
  llvm-readelf-16 --notes "$1" | python3 -c '
import sys
args, kernel = [], None
cur = {}
for line in sys.stdin:
    t = line.strip().lstrip("- ").strip()
    if ":" not in t:
        continue
    k, _, v = t.partition(":")
    v = v.strip()
    if k in (".offset", ".size", ".value_kind"):
        cur[k] = v
        if len(cur) == 3:
            args.append(cur)
            cur = {}
    elif k == ".name":
        for a in args:
            print(v, a[".offset"], a[".size"], a[".value_kind"])
        args = []
' > "$2"
}

hip kernels_v5.hip gfx90a kernels_v5-gfx90a.co -mcode-object-version=5
hip kernels_v5.hip gfx940 "$tmp/kernels_v5-gfx940.co" -mcode-object-version=5
relabel_gfx942 "$tmp/kernels_v5-gfx940.co" kernels_v5-gfx942.co
hip_gfx11 kernels_v5.hip kernels_v5-gfx1100.co -mcode-object-version=5
for t in gfx90a gfx942 gfx1100; do kernarg_layout kernels_v5-$t.co kernels_v5-$t.args; done
golden kernels_v5-gfx90a.co gfx90a kernels_v5-gfx90a.dis
golden kernels_v5-gfx942.co gfx940 kernels_v5-gfx942.dis
golden kernels_v5-gfx1100.co gfx1100 kernels_v5-gfx1100.dis

# The start-state dump kernel, assembled per target (gfx940 has architected flat scratch:
# no private-segment-buffer or flat-scratch-init SGPRs).
abi() { # mcpu out kernarg user_sgprs private
  sed -e "s/KERNARG/$3/" -e "s/USER_SGPRS/$4/" -e "s/PRIVATE/$5/" abi.s |
    { echo ".amdgcn_target \"amdgcn-amd-amdhsa--$1\""; cat; } > "$tmp/abi-$1.s"
  llvm-mc-16 -triple amdgcn-amd-amdhsa -mcpu="$1" -filetype=obj -o "$tmp/abi-$1.o" "$tmp/abi-$1.s"
  ld.lld-16 -shared --no-undefined -o "$2" "$tmp/abi-$1.o"
}
abi gfx90a abi-gfx90a.co "s[8:9]" \
  ".amdhsa_user_sgpr_private_segment_buffer 1\n    .amdhsa_user_sgpr_flat_scratch_init 1" \
  ".amdhsa_system_sgpr_private_segment_wavefront_offset 1"
abi gfx940 "$tmp/abi-gfx940.co" "s[4:5]" "" ".amdhsa_enable_private_segment 1"
relabel_gfx942 "$tmp/abi-gfx940.co" abi-gfx942.co
golden abi-gfx90a.co gfx90a abi-gfx90a.dis
golden abi-gfx942.co gfx940 abi-gfx942.dis

# Instruction-level cases (tests/ops.rs).
ops() { # mcpu out return-bit
  { echo ".amdgcn_target \"amdgcn-amd-amdhsa--$1\""; sed "s/RETURN_PRE_OP/$3/" ops.s; } > "$tmp/ops-$1.s"
  llvm-mc-16 -triple amdgcn-amd-amdhsa -mcpu="$1" -filetype=obj -o "$tmp/ops-$1.o" "$tmp/ops-$1.s"
  ld.lld-16 -shared --no-undefined -o "$2" "$tmp/ops-$1.o"
}
ops gfx90a ops-gfx90a.co glc
ops gfx940 "$tmp/ops-gfx940.co" sc0
relabel_gfx942 "$tmp/ops-gfx940.co" ops-gfx942.co
golden ops-gfx90a.co gfx90a ops-gfx90a.dis
golden ops-gfx942.co gfx940 ops-gfx942.dis

# Formatted buffer access cases (tests/buffer_formats.rs).
formats() { # mcpu out
  { echo ".amdgcn_target \"amdgcn-amd-amdhsa--$1\""; cat formats.s; } > "$tmp/formats-$1.s"
  llvm-mc-16 -triple amdgcn-amd-amdhsa -mcpu="$1" -filetype=obj -o "$tmp/formats-$1.o" "$tmp/formats-$1.s"
  ld.lld-16 -shared --no-undefined -o "$2" "$tmp/formats-$1.o"
}
formats gfx90a formats-gfx90a.co
formats gfx940 "$tmp/formats-gfx940.co"
relabel_gfx942 "$tmp/formats-gfx940.co" formats-gfx942.co
golden formats-gfx90a.co gfx90a formats-gfx90a.dis
golden formats-gfx942.co gfx940 formats-gfx942.dis

# Loads into LDS (tests/lds_dma.rs).
lds_dma() { # mcpu out defines scratch-descriptor-lines
  sed -e "s/^    KD_SCRATCH$/    $4/" lds_dma.s |
    { echo ".amdgcn_target \"amdgcn-amd-amdhsa--$1\""; echo "$3"; cat; } > "$tmp/lds_dma-$1.s"
  llvm-mc-16 -triple amdgcn-amd-amdhsa -mcpu="$1" -filetype=obj -o "$tmp/lds_dma-$1.o" "$tmp/lds_dma-$1.s"
  ld.lld-16 -shared --no-undefined -o "$2" "$tmp/lds_dma-$1.o"
}
lds_dma gfx90a lds_dma-gfx90a.co "" ""
lds_dma gfx940 "$tmp/lds_dma-gfx940.co" ".set GFX940, 1" \
  ".amdhsa_enable_private_segment 1\n    .amdhsa_private_segment_fixed_size 16"
relabel_gfx942 "$tmp/lds_dma-gfx940.co" lds_dma-gfx942.co
llvm-mc-16 -triple amdgcn-amd-amdhsa -mcpu=gfx1100 -filetype=obj -o "$tmp/lds_dma11.o" lds_dma11.s
ld.lld-16 -shared --no-undefined -o lds_dma-gfx1100.co "$tmp/lds_dma11.o"
golden lds_dma-gfx90a.co gfx90a lds_dma-gfx90a.dis
golden lds_dma-gfx942.co gfx940 lds_dma-gfx942.dis
golden lds_dma-gfx1100.co gfx1100 lds_dma-gfx1100.dis

# Image load and store cases (tests/images.rs), gfx90a only: gfx94x has no image instructions.
{ echo ".amdgcn_target \"amdgcn-amd-amdhsa--gfx90a\""; cat images.s; } > "$tmp/images-gfx90a.s"
llvm-mc-16 -triple amdgcn-amd-amdhsa -mcpu=gfx90a -filetype=obj -o "$tmp/images.o" "$tmp/images-gfx90a.s"
ld.lld-16 -shared --no-undefined -o images-gfx90a.co "$tmp/images.o"
golden images-gfx90a.co gfx90a images-gfx90a.dis

# kfdrt's own blit kernels (read only; built by blit/build.sh).
golden ../../../../blit/gfx90a.co gfx90a blit-gfx90a.dis
golden ../../../../blit/gfx942.co gfx940 blit-gfx942.dis
golden ../../../../blit/gfx1100.co gfx1100 blit-gfx1100.dis
ls -l ./*.co ./*.dis
