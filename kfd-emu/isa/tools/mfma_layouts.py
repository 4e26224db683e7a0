#!/usr/bin/env python3
"""Writes the register layouts of every MFMA and SMFMAC instruction of CDNA2 (gfx90a) and CDNA3
(gfx940..gfx942), as AMD's matrix instruction calculator gives them, for kfd-emu-isa's
exec/mfma.rs tests:

    ARCH INSTRUCTION MATRIX BLOCK : REG.LANE.BIT ...

one entry per matrix element in row-major order ([M][K] for A, [K][N] for B, [M][N] for D;
C is laid out as D), REG the register (of a pair, the low one) within the operand, LANE the
lane, BIT the element's lowest bit in the register. The sparse (SMFMAC) instructions' A holds
two of every four k values, so the cells of one group of four name the register and lowest bit
of the group's pair; their K matrix is the compression index (the group's four bits).

Usage: mfma_layouts.py PATH/TO/matrix_calculator.py > mfma-layouts.txt
(the calculator: github.com/ROCm/amd_matrix_instruction_calculator; needs `tabulate`.)
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
    return [l.strip() for l in out.splitlines() if l.startswith(("    v_mfma", "    v_smfmac"))]


def layout(arch, inst, matrix, controls=()):
    """{block: [cell, ...]} in row-major order."""
    which = "--compression" if matrix == "K" else f"--{matrix}-matrix"
    out = run("--architecture", arch, "--instruction", inst, "--register-layout", which,
              "--csv", *controls)
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
# The compression index sets ABID chooses (when CBSZ is 0) on the sparse instructions.
SPARSE_CONTROLS = [("K", f"abid={a}", ("--abid", str(a))) for a in (1, 2, 3)] + [
    ("K", "cbsz=1,abid=1", ("--cbsz", "1", "--abid", "1"))]
WITH_CONTROLS = ("v_mfma_f32_32x32x1f32", "v_mfma_f32_4x4x4f16", "v_mfma_f32_16x16x1f32",
                 "v_mfma_f32_32x32x8f16", "v_mfma_f32_4x4x1_16b_f32", "v_mfma_i32_4x4x4_16b_i8")


def main():
    for arch, label in (("cdna2", "gfx90a"), ("cdna3", "gfx940")):
        for inst in instructions(arch):
            sparse = inst.startswith("v_smfmac")
            for matrix in ("A", "B", "K", "D") if sparse else ("A", "B", "D"):
                for b, cells in sorted(layout(arch, inst, matrix).items()):
                    print(f"{label} {inst} {matrix} {b} : {' '.join(cells)}", flush=True)
            if sparse:
                controls = SPARSE_CONTROLS
            elif inst in WITH_CONTROLS:
                controls = CONTROLS
            else:
                continue
            for matrix, name, args in controls:
                try:
                    blocks = layout(arch, inst, matrix, args)
                except subprocess.CalledProcessError:
                    continue  # a control the instruction does not take
                for b, cells in sorted(blocks.items()):
                    print(f"{label} {inst} {matrix} {b},{name} : {' '.join(cells)}", flush=True)


main()
