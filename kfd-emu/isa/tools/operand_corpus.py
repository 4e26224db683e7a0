#!/usr/bin/env python3
"""Writes a corpus of operand forms for every opcode llvm-mc-16 knows on a target, with
llvm-mc's disassembly and length of each, for tests/decoder_corpus.rs:

    WORDS... | DWORDS | TEXT

Each opcode of opcodes-MCPU.txt (one known encoding per opcode) is varied: the bits outside
its format and opcode fields (registers, modifiers, offsets, cache bits, literals) are set at
random, a few times, with a fixed seed, and VOP1/VOP2/VOPC opcodes are also tried in their
DPP and SDWA forms. llvm-mc disassembles each candidate (three words, so a literal or a second
word is there to read); the ones it takes are kept with the length of the instruction it
decoded (from --show-encoding). The corpus is checked in: the tests need no LLVM.

Usage: operand_corpus.py MCPU > corpus-MCPU.txt   (needs llvm-mc-16; minutes)
"""
import random
import re
import struct
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

MCPU = sys.argv[1]
LISTING = {"gfx90a": "opcodes-gfx90a.txt", "gfx940": "opcodes-gfx940.txt"}[MCPU]
VARIANTS = 6
# Bits that name the format and the opcode, per format (word 0): never varied.
FIXED = {
    "SOP2": 0xFF800000, "SOPK": 0xFF800000, "SOP1": 0xFF80FF00, "SOPC": 0xFFFF0000,
    "SOPP": 0xFFFF0000, "SMEM": 0xFFFC0000, "VOP2": 0xFE000000, "VOP1": 0xFE01FE00,
    "VOPC": 0xFFFE0000, "VOP3": 0xFFFF0000, "VOP3P": 0xFFFF0000, "DS": 0xFFFE0000,
    "FLAT": 0xFFFCC000, "SCRATCH": 0xFFFCC000, "GLOBAL": 0xFFFCC000, "MUBUF": 0xFFFC0000,
    "MTBUF": 0xFC078000,
}
ENC = re.compile(r"encoding: \[([^\]]*)\]")


def disassemble(words):
    data = b"".join(struct.pack("<I", w) for w in words)
    line = " ".join("0x%02x" % x for x in data)
    r = subprocess.run(
        ["llvm-mc-16", "--disassemble", "--show-encoding", "-triple=amdgcn-amd-amdhsa",
         "-mcpu=" + MCPU], input=line + "\n", capture_output=True, text=True)
    out = [l.strip() for l in r.stdout.splitlines()
           if l.strip() and not l.strip().startswith(".text")]
    if ":1:1: warning" in r.stderr or not out:
        return None
    text, _, comment = out[0].partition(";")
    m = ENC.search(comment)
    if not m:
        return None
    length = len(m.group(1).split(",")) // 4
    return length, " ".join(text.split())


def candidates(fmt, words, rng):
    fixed = FIXED[fmt]
    w0 = words[0]
    out = []
    for _ in range(VARIANTS):
        v = [(w0 & fixed) | (rng.getrandbits(32) & ~fixed & 0xFFFFFFFF)]
        v += [rng.getrandbits(32) for _ in range(2)]
        out.append(v)
    # Register-only forms keep the operands small and valid more often.
    for _ in range(2):
        v = [(w0 & fixed) | (rng.getrandbits(32) & ~fixed & 0x00FF00FF & 0xFFFFFFFF)]
        v += [rng.getrandbits(32) & 0x0FFF01FF, rng.getrandbits(32)]
        out.append(v)
    if fmt in ("VOP1", "VOP2", "VOPC"):
        for special in (0xF9, 0xFA):  # SDWA, DPP: src0 names the second word's form
            v = (w0 & ~0x1FF) | special
            out.append([v, rng.getrandbits(32), rng.getrandbits(32)])
            out.append([v, rng.getrandbits(32) & 0x3F3F00FF | 0x00000000, rng.getrandbits(32)])
    return out


def main():
    rng = random.Random(0x5EED)
    jobs = []
    for line in open(LISTING):
        head, _ = line.split(" | ", 1)
        parts = head.split()
        fmt = parts[0]
        words = [int(w, 16) for w in parts[2:]]
        for c in candidates(fmt, words, rng):
            jobs.append(c)
    seen = set()
    with ThreadPoolExecutor(4) as ex:
        for words, hit in zip(jobs, ex.map(disassemble, jobs)):
            if not hit:
                continue
            length, text = hit
            if "/*" in text:
                # An operand LLVM decodes as invalid (a constant where only a register may
                # be): not an instruction, whatever a decoder makes of it.
                continue
            key = tuple(words[:length])
            if key in seen:
                continue
            seen.add(key)
            print(" ".join("%08x" % w for w in words) + f" | {length} | {text}", flush=True)


main()
