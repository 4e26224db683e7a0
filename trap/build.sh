#!/usr/bin/env bash
# Assembles kfdrt's trap handler into the raw code kfdrt embeds (trap/*.bin, checked in).
# Needs Debian's llvm-16; installs it when missing (run as root on Debian/Ubuntu).
# The build and the tests never run this: they use the checked-in code.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v llvm-mc-16 >/dev/null || ! command -v llvm-objcopy-16 >/dev/null; then
  apt-get update -qq && apt-get install -y -qq llvm-16
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for mcpu in gfx90a gfx940; do
  llvm-mc-16 -triple amdgcn-amd-amdhsa -mcpu="$mcpu" -filetype=obj -o "$tmp/$mcpu.o" gfx9.s
  llvm-objcopy-16 -O binary --only-section=.text "$tmp/$mcpu.o" "$mcpu.bin"
done
ls -l ./*.bin
