#!/usr/bin/env python3
"""Disassembles every gfx90a code object inside Debian's ROCm libraries with llvm-objdump-16 and
with kfd-emu-isa, instruction for instruction, and writes the summary to LIBRARIES.md.

    kfd-emu/isa/tools/library_disasm.py [--keep DIR] [--max-objects N] [LIBRARY ...]

Needs Debian 12's librocsparse0, librocrand1, libhipsparse0 and llvm-16 (installs them when
missing; run as root). The libraries are not checked in: the build and the tests never run this.
Each library's `.hip_fatbin` section holds clang offload bundles (one per translation unit);
every entry whose target is gfx90a (any feature suffix) is one code object.
"""
import argparse
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile

LIBS = {
    "librocsparse0": "/usr/lib/x86_64-linux-gnu/librocsparse.so.0",
    "librocrand1": "/usr/lib/x86_64-linux-gnu/librocrand.so.1",
    "libhipsparse0": "/usr/lib/x86_64-linux-gnu/libhipsparse.so.0",
}
MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
HERE = os.path.dirname(os.path.abspath(__file__))
ISA = os.path.dirname(HERE)


def ensure_tools():
    missing = [p for p, f in LIBS.items() if not os.path.exists(f)]
    if missing or not shutil.which("llvm-objdump-16"):
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "llvm-16"]
                       + missing, check=True)


def fatbin(lib, tmp):
    out = os.path.join(tmp, "fatbin")
    r = subprocess.run(["llvm-objcopy-16", "--dump-section", f".hip_fatbin={out}", lib,
                        os.path.join(tmp, "scratch.so")], capture_output=True)
    if r.returncode != 0 or not os.path.exists(out):
        return b""
    with open(out, "rb") as f:
        data = f.read()
    os.unlink(out)
    return data


def gfx90a_objects(data):
    """Yields (triple, bytes) for every gfx90a entry of every bundle in `data`."""
    at = data.find(MAGIC)
    while at >= 0:
        (n,) = struct.unpack_from("<Q", data, at + len(MAGIC))
        p = at + len(MAGIC) + 8
        for _ in range(n):
            off, size, tlen = struct.unpack_from("<QQQ", data, p)
            p += 24
            triple = data[p:p + tlen].decode(errors="replace")
            p += tlen
            if triple.split("--")[-1].split(":")[0] == "gfx90a":
                yield triple, data[at + off:at + off + size]
        at = data.find(MAGIC, p)


def objdump(co, dis):
    """One line per instruction, as tests/kernels/regen.sh writes its golden."""
    r = subprocess.run(["llvm-objdump-16", "-d", "--triple=amdgcn-amd-amdhsa", "--mcpu=gfx90a", co],
                       capture_output=True, text=True, check=True)
    with open(dis, "w") as out:
        for line in r.stdout.splitlines():
            if not line.startswith("\t") or "//" not in line:
                continue
            text, comment = line.split("//", 1)
            text = " ".join(text.split())
            addr = comment.split(":", 1)[0].strip().lstrip("0") or "0"
            out.write(f"{addr} {text}\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("libs", nargs="*", default=list(LIBS))
    ap.add_argument("--keep", help="directory to keep the code objects and listings in")
    ap.add_argument("--max-objects", type=int, default=0, help="per library, 0 for all")
    args = ap.parse_args()
    ensure_tools()
    work = args.keep or tempfile.mkdtemp()
    os.makedirs(work, exist_ok=True)
    subprocess.run(["cargo", "build", "-q", "--release", "-p", "kfd-emu-isa", "--example",
                    "compare_disasm"], check=True, cwd=ISA)
    target_dir = os.environ.get("CARGO_TARGET_DIR", os.path.join(ISA, "..", "..", "target"))
    compare = os.path.join(target_dir, "release", "examples", "compare_disasm")
    rows = []
    for name in args.libs:
        lib = LIBS[name]
        seen = set()
        pairs = []
        for triple, co in gfx90a_objects(fatbin(lib, work)):
            h = hashlib.sha1(co).hexdigest()[:12]
            if h in seen:
                continue
            seen.add(h)
            if args.max_objects and len(pairs) >= args.max_objects:
                break
            path = os.path.join(work, f"{name}-{h}.co")
            with open(path, "wb") as f:
                f.write(co)
            objdump(path, path + ".dis")
            pairs.append(path)
        r = subprocess.run([compare, "gfx90a"] + [x for p in pairs for x in (p, p + ".dis")],
                           capture_output=True, text=True)
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        total = bad = 0
        for line in r.stdout.splitlines():
            if line.startswith("TOTAL "):
                _, total, bad = line.split()
        rows.append((name, os.path.basename(os.path.realpath(lib)), len(pairs), int(total), int(bad)))
    with open(os.path.join(ISA, "LIBRARIES.md"), "w") as f:
        f.write("# kfd-emu-isa against llvm-objdump-16 on Debian's ROCm libraries\n\n")
        f.write("Written by `tools/library_disasm.py`: every gfx90a code object in each library's\n"
                "offload bundles, disassembled by llvm-objdump-16 and by kfd-emu-isa, compared\n"
                "instruction for instruction (text with whitespace squeezed).\n\n")
        f.write("| package | library | gfx90a code objects | instructions | differences |\n")
        f.write("|---|---|---:|---:|---:|\n")
        for name, file, n, total, bad in rows:
            f.write(f"| {name} | {file} | {n} | {total} | {bad} |\n")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
