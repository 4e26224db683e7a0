#!/usr/bin/env python3
"""Writes a corpus of operand forms for every opcode llvm-mc-16 knows on a target, with
llvm-mc's disassembly and length of each, for tests/disasm_golden.rs
(operand_forms_match_llvm_mc):

    WORDS... | DWORDS | TEXT

Each opcode of opcodes-MCPU.txt (one known encoding per opcode) is varied: the bits outside
its format and opcode fields (registers, modifiers, offsets, cache bits, literals) are set at
random, a few times, with a fixed seed. On GFX9 (gfx90a, gfx940) VOP1/VOP2/VOPC opcodes are
also tried in their DPP and SDWA forms. GFX11 (gfx1100) moves most fields (FIXED_GFX11) and
has no SDWA, but DPP16 and DPP8 for VOP1/VOP2/VOPC and for VOP3/VOP3P (the DPP word is the
third dword there) and literals in VOP3/VOP3P/VOPD: those forms are drawn on purpose, a
literal in each source field in turn; fields an operation does not use are left as its known
encoding has them (llvm-mc refuses them otherwise). llvm-mc disassembles each candidate (three
words, so a literal, a second word or a VOP3 DPP word is there to read); the ones it takes are
kept with the length of the instruction it decoded (from --show-encoding). llvm-mc-16 decodes
gfx1100 as wave32 (lane masks are vcc_lo and single SGPRs), so the gfx1100 corpus is wave32
text. The corpus is checked in: the tests need no LLVM.

Usage: operand_corpus.py gfx90a|gfx940|gfx1100 > corpus-MCPU.txt   (needs llvm-mc-16; minutes)
"""
import random
import re
import struct
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

MCPU = sys.argv[1]
LISTING = {"gfx90a": "opcodes-gfx90a.txt", "gfx940": "opcodes-gfx940.txt",
           "gfx1100": "opcodes-gfx1100.txt"}[MCPU]
GFX11 = MCPU.startswith("gfx11")
VARIANTS = 6
# Bits that name the format and the opcode, per format (word 0): never varied.
FIXED = {
    "SOP2": 0xFF800000, "SOPK": 0xFF800000, "SOP1": 0xFF80FF00, "SOPC": 0xFFFF0000,
    "SOPP": 0xFFFF0000, "SMEM": 0xFFFC0000, "VOP2": 0xFE000000, "VOP1": 0xFE01FE00,
    "VOPC": 0xFFFE0000, "VOP3": 0xFFFF0000, "VOP3P": 0xFFFF0000, "DS": 0xFFFE0000,
    "FLAT": 0xFFFCC000, "SCRATCH": 0xFFFCC000, "GLOBAL": 0xFFFCC000, "MUBUF": 0xFFFC0000,
    "MTBUF": 0xFC078000,
}
# GFX11's layouts. VOP3P keeps bit 23 (the encoding's, not an operand's); VOPD its opx and
# opy; MIMG its NSA bit 0 (the decoder does not decode NSA forms); FLAT its bit 25 (unused).
FIXED_GFX11 = {
    "SOP2": 0xFF800000, "SOPK": 0xFF800000, "SOP1": 0xFF80FF00, "SOPC": 0xFFFF0000,
    "SOPP": 0xFFFF0000, "SMEM": 0xFFFC0000, "VOP2": 0xFE000000, "VOP1": 0xFE01FE00,
    "VOPC": 0xFFFE0000, "VOP3": 0xFFFF0000, "VOP3P": 0xFFFF0000, "VOPDX": 0xFFFE0000,
    "VOPDY": 0xFFFE0000, "DS": 0xFFFC0000, "FLAT": 0xFFFF0000, "SCRATCH": 0xFFFF0000,
    "GLOBAL": 0xFFFF0000, "MUBUF": 0xFFFC0000, "MTBUF": 0xFC078000, "MIMG": 0xFFFC0001,
}
# GFX11 src0 codes that announce an extension word: DPP16, DPP8, DPP8 with FI.
DPP16, DPP8, DPP8_FI = 250, 233, 234
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


def dpp16_word(rng):
    """A DPP16 word with a control GFX11 knows (a random one is mostly quad_perm)."""
    ctrl = rng.choice([rng.randrange(0x100), 0x101 + rng.randrange(15),
                       0x111 + rng.randrange(15), 0x121 + rng.randrange(15), 0x140, 0x141,
                       0x150 + rng.randrange(16), 0x160 + rng.randrange(16)])
    # src0 VGPR, ctrl, FI/bound_ctrl/neg/abs (23:18), bank and row masks; bit 17 is reserved.
    return rng.randrange(256) | ctrl << 8 | rng.getrandbits(6) << 18 | rng.getrandbits(8) << 24


def vop3_sources(text):
    """How many source fields a VOP3/VOP3P operation reads, from its listed text."""
    mnemonic, _, rest = text.strip().partition(" ")
    operands = rest.split(", ") if rest else []
    if operands:
        # Modifiers (op_sel_hi:[...]) follow the last operand.
        operands[-1] = operands[-1].split(" ")[0]
    if mnemonic.startswith("v_cmpx"):
        dsts = 0
    elif "_co_" in mnemonic or mnemonic.startswith(("v_div_scale", "v_mad_u64", "v_mad_i64")):
        dsts = 2  # VOP3b: a vector and a scalar destination
    else:
        dsts = 1
    return max(0, min(3, len(operands) - dsts))


def candidates_gfx11(fmt, words, rng, text):
    fixed = FIXED_GFX11[fmt]
    w0 = words[0]
    known1 = words[1] if len(words) > 1 else 0
    # llvm-mc takes a field the operation does not use only as zero (as the known encoding
    # has it): a VOPD half that is v_dual_mov_b32 has no vsrc1, a VOP3 operation on fewer
    # than three sources leaves the last source fields unused.
    keep1 = 0
    sources = 3
    if fmt in ("VOP3", "VOP3P"):
        sources = vop3_sources(text)
        keep1 = sum(0x1FF << 9 * k for k in range(sources, 3))
    if fmt in ("VOPDX", "VOPDY"):
        x, _, y = text.partition("::")
        if x.split()[0] == "v_dual_mov_b32":
            fixed |= 0x1FE00
        if y.split()[0] == "v_dual_mov_b32":
            keep1 = 0x1FE00

    def rand0(mask=0xFFFFFFFF):
        return (w0 & fixed) | (rng.getrandbits(32) & ~fixed & mask)

    def rand1(w=None):
        w = rng.getrandbits(32) if w is None else w
        return (known1 & keep1) | (w & ~keep1)

    out = []
    for _ in range(VARIANTS):
        out.append([rand0(), rand1(), rng.getrandbits(32)])
    if fmt in ("VOP3", "VOP3P"):
        # Register sources (VGPRs or SGPRs), no modifiers: the forms most operations take.
        for _ in range(2):
            w1 = sum((rng.choice([256 + rng.randrange(256), rng.randrange(106)]) << 9 * k)
                     for k in range(3))
            out.append([rand0(0x000000FF), rand1(w1), rng.getrandbits(32)])
        # A literal in each source field in turn (GFX11 VOP3 takes one: the third dword).
        for k in range(sources):
            w1 = (rng.getrandbits(32) & ~(0x1FF << 9 * k)) | 255 << 9 * k
            out.append([rand0(), rand1(w1), rng.getrandbits(32)])
        # DPP16 and DPP8 (src0 names the third dword's form); VGPR src1/src2 as DPP wants.
        for special in (DPP16, DPP16, DPP8, DPP8_FI):
            w1 = (rng.getrandbits(32) & 0xF8000000) | special
            w1 |= (256 + rng.randrange(256)) << 9 | (256 + rng.randrange(256)) << 18
            ext = dpp16_word(rng) if special == DPP16 else rng.getrandbits(32)
            out.append([rand0(), rand1(w1), ext])
    elif fmt in ("VOP1", "VOP2", "VOPC"):
        for _ in range(2):
            v = rand0() & ~0x1FF | 256 + rng.randrange(256)
            out.append([v, rng.getrandbits(32), rng.getrandbits(32)])
        out.append([rand0() & ~0x1FF | 255, rng.getrandbits(32), rng.getrandbits(32)])
        for special, ext in ((DPP16, rng.getrandbits(32)), (DPP16, dpp16_word(rng)),
                             (DPP16, dpp16_word(rng)), (DPP8, rng.getrandbits(32)),
                             (DPP8_FI, rng.getrandbits(32))):
            out.append([rand0() & ~0x1FF | special, ext, rng.getrandbits(32)])
    elif fmt in ("VOPDX", "VOPDY"):
        for _ in range(2):
            out.append([rand0() & ~0x1FF | 256 + rng.randrange(256),
                        rand1() & ~0x1FF | 256 + rng.randrange(256), rng.getrandbits(32)])
        out.append([rand0() & ~0x1FF | 255, rand1(), rng.getrandbits(32)])
        out.append([rand0(), rand1() & ~0x1FF | 255, rng.getrandbits(32)])
    elif fmt in ("SOP1", "SOP2", "SOPC"):
        for _ in range(2):
            out.append([rand0(0x007F7F7F), rng.getrandbits(32), rng.getrandbits(32)])
        out.append([rand0() | 0xFF, rng.getrandbits(32), rng.getrandbits(32)])
    elif fmt in ("DS", "FLAT", "GLOBAL", "SCRATCH"):
        # llvm-mc takes a register field the operation does not use only as the known
        # encoding has it: randomise each subset of the second word's fields in turn.
        for subset in range(16):
            keep = sum(0xFF << 8 * b for b in range(4) if not subset >> b & 1)
            out.append([rand0(), (words[1] & keep) | (rng.getrandbits(32) & ~keep),
                        rng.getrandbits(32)])
    else:
        # Small register numbers and offsets: valid more often.
        for _ in range(2):
            out.append([rand0(0x0000FFFF) if fmt != "SMEM" else rand0(),
                        rng.getrandbits(32) & 0x1F1F3F3F, rng.getrandbits(32)])
    return out


def main():
    rng = random.Random(0x5EED)
    jobs = []
    for line in open(LISTING):
        head, text = line.split(" | ", 1)
        parts = head.split()
        fmt = parts[0]
        words = [int(w, 16) for w in parts[2:]]
        if GFX11:
            cands = candidates_gfx11(fmt, words, rng, text)
        elif fmt in FIXED:
            cands = candidates(fmt, words, rng)
        else:
            # gfx90a's MIMG forms are mimg_corpus.py's (corpus-mimg-gfx90a.txt).
            continue
        for c in cands:
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
