#!/usr/bin/env python3
"""Lists every opcode llvm-mc-16 disassembles for a target, one line per opcode:

    FORMAT OPCODE WORDS... | TEXT

FORMAT is the encoding (SOP2, VOP3, GLOBAL, ...), OPCODE its opcode field, WORDS the
instruction words tried (hex) and TEXT llvm-mc's disassembly of them. For each opcode a few
operand patterns are tried (the disassembler rejects encodings whose unused fields are not
zero), and the first one that decodes is kept. The output is the source of the decoder's
opcode tables (gen_tables.py) and a golden for the disassembler (tests/disasm_golden.rs).

Usage: enum_opcodes.py MCPU [FORMATS] > opcodes-MCPU.txt   (needs llvm-mc-16; minutes)

GFX11 targets (gfx11xx) use their own encodings (gfx11_* below); VOPD dual-issue halves are
listed as VOPDX/VOPDY, each tried beside a fixed partner (v_dual_mov_b32).
"""
import struct
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

MCPU = sys.argv[1]
# Optional second argument: a comma-separated list of formats to enumerate (default: all).
ONLY = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None
LIT = 0x12345678


def disassemble(words):
    data = b"".join(struct.pack("<I", w) for w in words)
    line = " ".join("0x%02x" % x for x in data)
    r = subprocess.run(
        ["llvm-mc-16", "--disassemble", "-triple=amdgcn-amd-amdhsa", "-mcpu=" + MCPU],
        input=line + "\n", capture_output=True, text=True)
    out = [l.strip() for l in r.stdout.splitlines()
           if l.strip() and not l.strip().startswith(".text")]
    if ":1:1: warning" in r.stderr or not out or "Invalid" in out[0]:
        return None
    return out[0]


def first(candidates):
    for words in candidates:
        text = disassemble(words)
        if text:
            return words, text
    return None


def run(name, gen, count):
    if ONLY is not None and name not in ONLY:
        return
    with ThreadPoolExecutor(4) as ex:
        found = list(ex.map(lambda op: first(gen(op)), range(count)))
    for op, hit in enumerate(found):
        if hit:
            words, text = hit
            print(f"{name} {op:#x} {' '.join('%08x' % w for w in words)} | {text}", flush=True)


def sop2(op):
    return [[0x80000000 | (op << 23) | (2 << 16) | (1 << 8), LIT],
            [0x80000000 | (op << 23) | (2 << 16) | (4 << 8) | 2, LIT]]


def sopk(op):
    return [[0xB0000000 | (op << 23) | (2 << 16) | 0x10, LIT], [0xB0000000 | (op << 23) | 0x10, LIT]]


def sop1(op):
    b = 0xBE800000 | (op << 8)
    return [[b | (2 << 16) | 4, LIT], [b | (4 << 16) | 4, LIT], [b, LIT], [b | 4, LIT], [b | (4 << 16), LIT]]


def sopc(op):
    return [[0xBF000000 | (op << 16) | (1 << 8), LIT], [0xBF000000 | (op << 16) | (4 << 8) | 2, LIT]]


def sopp(op):
    return [[0xBF800000 | (op << 16) | 1, LIT], [0xBF800000 | (op << 16), LIT]]


def smem(op):
    b = 0xC0000000 | (op << 18)
    return [[b | (1 << 17) | (2 << 6) | 2, 0x10], [b | (1 << 17) | (4 << 6) | 2, 0x10],
            [b | (1 << 17) | 2, 0x10], [b | (1 << 17) | (1 << 16) | (4 << 6) | 2, 0x10],
            [b | (4 << 6), 0], [b, 0]]


def vop2(op):
    w = (op << 25) | (8 << 17) | (4 << 9) | 0x102
    return [[w], [w, LIT]]


def vop1(op):
    return [[0x7E000000 | (8 << 17) | (op << 9) | 0x102], [0x7E000000 | (op << 9)]]


def vopc(op):
    return [[0x7C000000 | (op << 17) | (4 << 9) | 0x102]]


def vop3_at(prefix, op):
    """VOP3 candidates under the encoding bits `prefix` (GFX9 0xD0000000, GFX11 0xD4000000)."""
    base = prefix | (op << 16) | 8
    out = []
    for s2 in (0, 0x106):
        for s1 in (0, 0x104):
            out.append([base, 0x102 | (s1 << 9) | (s2 << 18)])
            if s2 == 0:
                out.append([base, 0x102 | (s1 << 9) | (0x6A << 18)])
    out.append([prefix | (op << 16) | (0x6A << 8) | 8, 0x102 | (0x104 << 9) | (0x6A << 18)])
    out.append([prefix | (op << 16) | 0x6A, 0x102 | (0x104 << 9)])
    # Scalar sources (v_writelane_b32 takes an SGPR value and lane select).
    out.append([base, 0x02 | (0x04 << 9)])
    return out


def vop3(op):
    return vop3_at(0xD0000000, op)


def vop3p_at(prefix, op, extra=()):
    """VOP3P candidates under `prefix` (GFX9 0xD3800000, GFX11 0xCC000000), `extra` tried
    before the single-source form."""
    out = []
    for hi in (3 << 27, 0, 1 << 27):
        for h2 in (1 << 14, 0):
            for s2 in (0x106, 0):
                out.append([prefix | (op << 16) | 8 | h2, 0x102 | (0x104 << 9) | (s2 << 18) | hi])
    out.extend(extra)
    # Single-source forms (v_accvgpr_read/write) need src1 and src2 zero.
    out.append([prefix | (op << 16) | 8, 0x102])
    return out


def vop3p(op):
    return vop3p_at(0xD3800000, op)


def ds(op):
    base = 0xD8000000 | (op << 17) | 0x10
    out = []
    for vdst in (0, 8):
        for d1 in (0, 6):
            for d0 in (0, 4):
                out.append([base, 2 | (d0 << 8) | (d1 << 16) | (vdst << 24)])
    out.append([base | (1 << 16), 2 | (4 << 8)])
    out.append([0xD8000000 | (op << 17), 0])
    # GWS operations exist only with the gds bit, and take no address or offset.
    out.append([0xD8000000 | (op << 17) | (1 << 16), 0])
    return out


def flat_seg(seg):
    def gen(op):
        base = 0xDC000000 | (op << 18) | (seg << 14)
        out = []
        for glc in (0, 1 << 16):
            for saddr in ((0,) if seg == 0 else (0x7F, 4)):
                for vdst in (0, 8):
                    for data in (0, 4):
                        for addr in (2, 0):
                            out.append([base | glc, addr | (data << 8) | (saddr << 16) | (vdst << 24)])
        return out
    return gen


def mubuf(op):
    out = []
    for glc in (0, 1 << 14):
        for off in (1 << 12, 0):
            for vaddr in (2, 0):
                out.append([0xE0000000 | (op << 18) | off | glc | 0x10, 0x80040400 | vaddr])
    return out


def mtbuf(op):
    return [[0xE8000000 | (op << 15) | (1 << 12) | (4 << 19) | 0x10, 0x80040402]]


def mimg(op):
    # dmask 0xf (or 0x1), unorm; vaddr v2, vdata v8, the resource at s[4:11], the sampler at s[8:11].
    out = []
    for ssamp in (0, 2 << 21):
        for dmask in (0xF, 0x1):
            for unorm in (1 << 12, 0):
                out.append([0xF0000000 | (op << 18) | (dmask << 8) | unorm, 2 | (8 << 8) | (1 << 16) | ssamp])
    return out



# GFX11 (RDNA3) encodings. Scalar ALU and the short vector forms keep GFX9's layout; the rest
# move (SMEM 0xF4, VOP3 0xD4, VOP3P 0xCC, VOPD 0xC8, FLAT/GLOBAL/SCRATCH share 0xDC with a
# segment field, MUBUF 0xE0, MTBUF 0xE8, MIMG 0xF0).


def gfx11_smem(op):
    b = 0xF4000000 | (op << 18)
    out = []
    for sdata in (2, 4, 8):
        for sbase in (0, 2):
            out.append([b | (sdata << 6) | sbase, 0xF8000010])
    out.append([b, 0xF8000000])
    out.append([b | (2 << 6), 0xF8000010])
    return out


def gfx11_vop3(op):
    # And a three-source VOP3b form (v_div_scale, v_mad_u64_u32 with an SGPR carry).
    return vop3_at(0xD4000000, op) + [
        [0xD4000000 | (op << 16) | 0x6A, 0x102 | (0x104 << 9) | (0x106 << 18)]]


def gfx11_vop3p(op):
    # WMMA takes register tuples at 8-aligned VGPRs.
    wmma = [0xCC000000 | (op << 16) | 8 | (1 << 14), 0x110 | (0x118 << 9) | (0x108 << 18) | (3 << 27)]
    return vop3p_at(0xCC000000, op, [wmma])


def gfx11_vopd(which):
    # A half is tried beside v_dual_mov_b32 (X opcode 8, Y opcode 8); destinations v8 (X) and
    # v9 (Y) sit in different banks, sources v2/v4 (X) and v3/v5 (Y) too.
    def gen(op):
        out = []
        for lit in ((), (LIT,)):
            for s1 in (4, 0):
                for xs0, ys0 in ((0x102, 0x103), (0x102, 0x105), (0x104, 0x107)):
                    if which == "X":
                        opx, opy, xs1, ys1 = op, 8, s1, 0
                    else:
                        opx, opy, xs1, ys1 = 8, op, 0, s1 + 1 if s1 else 0
                    w0 = 0xC8000000 | (opx << 22) | (opy << 17) | (xs1 << 9) | xs0
                    w1 = (8 << 24) | ((9 >> 1) << 17) | (ys1 << 9) | ys0
                    out.append([w0, w1, *lit])
        return out
    return gen


def gfx11_ds(op):
    base = 0xD8000000 | (op << 18) | 0x10
    out = []
    for vdst in (0, 8):
        for d1 in (0, 6):
            for d0 in (0, 4):
                out.append([base, 2 | (d0 << 8) | (d1 << 16) | (vdst << 24)])
    out.append([base | (1 << 17), 2 | (4 << 8)])
    out.append([0xD8000000 | (op << 18), 0])
    out.append([0xD8000000 | (op << 18) | (1 << 17), 0])
    return out


def gfx11_flat_seg(seg):
    def gen(op):
        base = 0xDC000000 | (op << 18) | (seg << 16)
        out = []
        for glc in (0, 1 << 14):
            for saddr in ((0x7C,) if seg == 0 else (0x7C, 4)):
                for vdst in (0, 8):
                    for data in (0, 4):
                        for addr in (2, 0):
                            sve = (1 << 23) if seg == 1 and saddr == 0x7C else 0
                            out.append([base | glc, addr | (data << 8) | (saddr << 16) | (vdst << 24) | sve])
        return out
    return gen


def gfx11_mubuf(op):
    out = []
    for glc in (0, 1 << 14):
        for offen in (1 << 22, 0):
            for vaddr in (2, 0):
                out.append([0xE0000000 | (op << 18) | glc | 0x10, 0x03010800 | offen | vaddr])
    return out


def gfx11_mtbuf(op):
    return [[0xE8000000 | (22 << 19) | (op << 15) | 0x10, 0x03410802]]


def gfx11_mimg(op):
    out = []
    for ssamp in (0, 2 << 23):
        for dmask in (0xF, 0x1):
            for dim in (1 << 2, 0):
                out.append([0xF0000000 | (op << 18) | (dmask << 8) | dim, 2 | (8 << 8) | (1 << 16) | ssamp])
    return out


if MCPU.startswith("gfx11"):
    # SOP2 opcodes from 0x60 on are other encodings (SOPK is 0xB...).
    run("SOP2", sop2, 0x60)
    run("SOPK", sopk, 0x20)
    run("SOP1", sop1, 0x100)
    run("SOPC", sopc, 0x80)
    run("SOPP", sopp, 0x80)
    run("SMEM", gfx11_smem, 0x100)
    run("VOP2", vop2, 0x40)
    run("VOP1", vop1, 0x100)
    run("VOPC", vopc, 0x100)
    run("VOP3", gfx11_vop3, 0x400)
    run("VOP3P", gfx11_vop3p, 0x80)
    run("VOPDX", gfx11_vopd("X"), 0x10)
    run("VOPDY", gfx11_vopd("Y"), 0x20)
    run("DS", gfx11_ds, 0x100)
    run("FLAT", gfx11_flat_seg(0), 0x80)
    run("SCRATCH", gfx11_flat_seg(1), 0x80)
    run("GLOBAL", gfx11_flat_seg(2), 0x80)
    run("MUBUF", gfx11_mubuf, 0x100)
    run("MTBUF", gfx11_mtbuf, 0x10)
    run("MIMG", gfx11_mimg, 0x100)
    sys.exit(0)

run("SOP2", sop2, 0x60)
run("SOPK", sopk, 0x20)
run("SOP1", sop1, 0x100)
run("SOPC", sopc, 0x80)
run("SOPP", sopp, 0x80)
run("SMEM", smem, 0x100)
run("VOP2", vop2, 0x40)
run("VOP1", vop1, 0x100)
run("VOPC", vopc, 0x100)
run("VOP3", vop3, 0x380)
run("VOP3P", vop3p, 0x80)
run("DS", ds, 0x100)
run("FLAT", flat_seg(0), 0x80)
run("SCRATCH", flat_seg(1), 0x80)
run("GLOBAL", flat_seg(2), 0x80)
run("MUBUF", mubuf, 0x80)
run("MTBUF", mtbuf, 0x10)
run("MIMG", mimg, 0x80)
