#!/usr/bin/env python3
"""Writes the register layouts of every dense MFMA instruction of CDNA2 (gfx90a) and CDNA3
(gfx940..gfx942), as AMD's matrix instruction calculator gives them, for tests/mfma.rs:

    ARCH INSTRUCTION MATRIX BLOCK : REG.LANE.BIT ...

one entry per matrix element in row-major order ([M][K] for A, [K][N] for B, [M][N] for D;
C is laid out as D), REG the register (of a pair, the low one) within the operand, LANE the
lane, BIT the element's lowest bit in the register.

Usage: mfma_layouts.py PATH/TO/matrix_calculator.py > mfma-layouts.txt
(the calculator: github.com/ROCm/amd_matrix_instruction_calculator; needs `tabulate`.)
The sparse (SMFMAC) and xf32 instructions are left out: kfd-emu does not run them.
"""
import csv
import io
import re
import subprocess
import sys

CALC = sys.argv[1]
CELL = re.compile(r"^v(?:(\d+)|\[(\d+):(\d+)\])\{(\d+)\}(?:\.\[(\d+):(\d+)\])?$")


def run(*args):
    r = subprocess.run([sys.executable, CALC] + list(args), capture_output=True, text=True,
                       check=True)
    return r.stdout


def instructions(arch):
    out = run("--architecture", arch, "--list-instructions")
    names = [l.strip() for l in out.splitlines() if l.startswith("    v_mfma")]
    return [n for n in names if "xf32" not in n]


def layout(arch, inst, matrix, controls=()):
    """{block: [cell, ...]} in row-major order."""
    out = run("--architecture", arch, "--instruction", inst, "--register-layout",
              f"--{matrix}-matrix", "--csv", *controls)
    blocks, group, rows = {}, None, []

    def close():
        if group is not None:
            for b in group:
                blocks[b] = rows

    for line in out.splitlines():
        if line.startswith("Block"):
            close()
            group, rows = [int(x) for x in line.split(None, 1)[1].split(",")], []
        elif group is not None and line and line[0].isdigit():
            for cell in next(csv.reader(io.StringIO(line)))[1:]:
                m = CELL.match(cell.strip())
                if not m:
                    raise SystemExit(f"{inst} {matrix}: cell {cell!r}")
                reg = int(m.group(1)) if m.group(1) else int(m.group(3))
                bit = int(m.group(6)) if m.group(6) else 0
                rows.append(f"{reg}.{m.group(4)}.{bit}")
    close()
    return blocks


# Broadcast controls, tried on a few instructions: A from another block (cbsz, abid), B from
# other lanes (blgp). Lines for them name the controls after the block.
CONTROLS = [("A", "cbsz=1,abid=1", ("--cbsz", "1", "--abid", "1")),
            ("A", "cbsz=2,abid=3", ("--cbsz", "2", "--abid", "3")),
            ("A", "cbsz=4,abid=9", ("--cbsz", "4", "--abid", "9"))] + [
    ("B", f"blgp={g}", ("--blgp", str(g))) for g in range(1, 8)]
WITH_CONTROLS = ("v_mfma_f32_32x32x1f32", "v_mfma_f32_4x4x4f16", "v_mfma_f32_16x16x1f32",
                 "v_mfma_f32_32x32x8f16", "v_mfma_f32_4x4x1_16b_f32", "v_mfma_i32_4x4x4_16b_i8")


def main():
    for arch, label in (("cdna2", "gfx90a"), ("cdna3", "gfx940")):
        for inst in instructions(arch):
            for matrix in ("A", "B", "D"):
                for b, cells in sorted(layout(arch, inst, matrix).items()):
                    print(f"{label} {inst} {matrix} {b} : {' '.join(cells)}", flush=True)
            if inst not in WITH_CONTROLS:
                continue
            for matrix, name, args in CONTROLS:
                try:
                    blocks = layout(arch, inst, matrix, args)
                except subprocess.CalledProcessError:
                    continue  # a control the instruction does not take
                for b, cells in sorted(blocks.items()):
                    print(f"{label} {inst} {matrix} {b},{name} : {' '.join(cells)}", flush=True)


main()
