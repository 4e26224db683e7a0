#!/usr/bin/env python3
"""Writes tools/corpus-mimg-gfx90a.txt: every MIMG opcode of gfx90a with its modifier bits and
register fields varied, as llvm-mc-16 disassembles them (the corpus format of
operand_corpus.py: `WORDS | DWORDS | TEXT`). operand_corpus.py predates the MIMG tables; this
covers them until it is regenerated with MIMG in it.

Usage: mimg_corpus.py > corpus-mimg-gfx90a.txt   (needs llvm-mc-16; seconds)
"""
import os
import random
import struct
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = sorted({int(l.split()[1], 16) for l in open(os.path.join(HERE, "opcodes-gfx90a.txt"))
              if l.startswith("MIMG ")})
rng = random.Random(90)
lines = []
for op in OPS:
    tried = set()
    kept = 0
    for _ in range(300):
        if kept == 12:
            break
        w0 = 0xF0000000 | (op << 18) | (rng.choice([0, 1, 3, 5, 7, 8, 0xF]) << 8)
        for bit in (12, 13, 14, 15, 16, 17, 25):
            if rng.random() < 0.3:
                w0 |= 1 << bit
        # The sampler field only for samples (others refuse a non-zero one).
        ssamp = rng.randrange(0, 24) if rng.random() < 0.3 else 0
        w1 = (rng.randrange(256) | (rng.randrange(0, 250) << 8) | (rng.randrange(0, 24) << 16)
              | (ssamp << 21) | (rng.choice([0, 1 << 31])))
        if (w0, w1) in tried:
            continue
        tried.add((w0, w1))
        data = " ".join("0x%02x" % b for b in struct.pack("<II", w0, w1))
        r = subprocess.run(["llvm-mc-16", "--disassemble", "-triple=amdgcn-amd-amdhsa",
                            "-mcpu=gfx90a"], input=data + "\n", capture_output=True, text=True)
        out = [l.strip() for l in r.stdout.splitlines() if l.strip() and ".text" not in l]
        if "warning" in r.stderr or not out:
            continue
        lines.append(f"{w0:08x} {w1:08x} | 2 | {out[0]}")
        kept += 1
print("\n".join(lines))
