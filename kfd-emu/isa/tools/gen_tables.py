#!/usr/bin/env python3
"""Generates src/decode/tables.rs (the opcode tables) and src/decode/op.rs (the Op enum) from
opcodes-gfx90a.txt, opcodes-gfx940.txt and opcodes-gfx1100.txt (written by enum_opcodes.py from
llvm-mc-16).

GFX11 renamed many operations without changing what they do (`global_load_b32` is GFX9's
`global_load_dword`, `s_and_not1_b32` is `s_andn2_b32`, `ds_load_b32` is `ds_read_b32`). A GFX11
entry keeps its own mnemonic for printing but names the GFX9 operation when `gfx9_name` finds one
the GFX9 tables have, so the interpreter's semantics serve both; operations GFX9 lacks get Op
variants of their own. VOPD halves (`v_dual_add_f32`) name their VOP2 operation.

Each table entry says, for one (encoding, opcode) of one target: the operation, its mnemonic as
the disassembler prints it, and the widths in dwords of its register operands in printed order
(taken from the registers llvm-mc printed, e.g. `v[8:9]` is 2). The Op variant is the mnemonic
without its `_e32`/`_e64` encoding suffix, in CamelCase.

Usage: gen_tables.py   (run from anywhere; rewrites the two files)
"""
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src", "decode")
FORMATS = ["SOP2", "SOPK", "SOP1", "SOPC", "SOPP", "SMEM", "VOP2", "VOP1", "VOPC", "VOP3",
           "VOP3P", "DS", "FLAT", "SCRATCH", "GLOBAL", "MUBUF", "MTBUF", "MIMG", "VOPDX", "VOPDY"]
FMT_RUST = {"SOP2": "Sop2", "SOPK": "Sopk", "SOP1": "Sop1", "SOPC": "Sopc", "SOPP": "Sopp",
            "SMEM": "Smem", "VOP2": "Vop2", "VOP1": "Vop1", "VOPC": "Vopc", "VOP3": "Vop3",
            "VOP3P": "Vop3p", "DS": "Ds", "FLAT": "Flat", "SCRATCH": "Scratch",
            "GLOBAL": "Global", "MUBUF": "Mubuf", "MTBUF": "Mtbuf",
            "MIMG": "Mimg", "VOPDX": "VopdX", "VOPDY": "VopdY"}
REG = re.compile(r"^(?:\[?)(v|s|a|ttmp)(?:(\d+)|\[(\d+):(\d+)\])$")


def widths(operands):
    out = []
    for tok in operands:
        tok = tok.strip()
        m = REG.match(tok)
        if m:
            if m.group(2) is not None:
                out.append(1)
            else:
                out.append(int(m.group(4)) - int(m.group(3)) + 1)
        elif tok in ("vcc", "exec", "flat_scratch"):
            out.append(2)
        elif tok in ("vcc_lo", "vcc_hi", "m0", "exec_lo", "exec_hi"):
            out.append(1)
    return (out + [0] * 6)[:6]


def base_name(name):
    for suffix in ("_e32", "_e64"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


# GFX11 mnemonic pieces and their GFX9 spelling, tried in order (whole-name renames first).
GFX11_NAMES = {
    "s_ctz_i32_b32": "s_ff1_i32_b32", "s_ctz_i32_b64": "s_ff1_i32_b64",
    "s_clz_i32_u32": "s_flbit_i32_b32", "s_clz_i32_u64": "s_flbit_i32_b64",
    "s_cls_i32": "s_flbit_i32", "s_cls_i32_i64": "s_flbit_i32_i64",
    "v_clz_i32_u32": "v_ffbh_u32", "v_ctz_i32_b32": "v_ffbl_b32", "v_cls_i32": "v_ffbh_i32",
    "v_add_nc_u32": "v_add_u32", "v_sub_nc_u32": "v_sub_u32", "v_subrev_nc_u32": "v_subrev_u32",
    "v_add_nc_u16": "v_add_u16", "v_sub_nc_u16": "v_sub_u16",
    "v_add_nc_i16": "v_add_i16", "v_sub_nc_i16": "v_sub_i16",
    "v_add_nc_i32": "v_add_i32", "v_sub_nc_i32": "v_sub_i32",
    "v_add_co_ci_u32": "v_addc_co_u32", "v_sub_co_ci_u32": "v_subb_co_u32",
    "v_subrev_co_ci_u32": "v_subbrev_co_u32",
    "v_cvt_floor_i32_f32": "v_cvt_flr_i32_f32", "v_cvt_nearest_i32_f32": "v_cvt_rpi_i32_f32",
    "v_dot2acc_f32_f16": "v_dot2c_f32_f16", "v_cvt_pk_rtz_f16_f32": "v_cvt_pkrtz_f16_f32",
    "v_cvt_pk_norm_i16_f32": "v_cvt_pknorm_i16_f32",
    "v_cvt_pk_norm_u16_f32": "v_cvt_pknorm_u16_f32",
    "v_mul_dx9_zero_f32": "v_mul_legacy_f32",
    "v_lshlrev_b64": "v_lshlrev_b64", "v_lshrrev_b64": "v_lshrrev_b64",
    "v_ashrrev_i64": "v_ashrrev_i64",
    "ds_cmpstore_b32": "ds_cmpst_b32", "ds_cmpstore_rtn_b32": "ds_cmpst_rtn_b32",
    "ds_cmpstore_f32": "ds_cmpst_f32", "ds_cmpstore_rtn_f32": "ds_cmpst_rtn_f32",
    "ds_cmpstore_b64": "ds_cmpst_b64", "ds_cmpstore_rtn_b64": "ds_cmpst_rtn_b64",
    "ds_cmpstore_f64": "ds_cmpst_f64", "ds_cmpstore_rtn_f64": "ds_cmpst_rtn_f64",
}
PREFIXES = [("s_and_not1_", "s_andn2_"), ("s_or_not1_", "s_orn2_"),
            ("s_and_not0_", "s_andn1_"), ("s_or_not0_", "s_orn1_"),
            ("ds_load_2addr_stride64_", "ds_read2st64_"), ("ds_load_2addr_", "ds_read2_"),
            ("ds_store_2addr_stride64_", "ds_write2st64_"), ("ds_store_2addr_", "ds_write2_"),
            ("ds_storexchg_2addr_stride64_rtn_", "ds_wrxchg2st64_rtn_"),
            ("ds_storexchg_2addr_rtn_", "ds_wrxchg2_rtn_"), ("ds_storexchg_rtn_", "ds_wrxchg_rtn_"),
            ("ds_load_", "ds_read_"), ("ds_store_", "ds_write_")]
MEM_TYPES = {"b32": "dword", "b64": "dwordx2", "b96": "dwordx3", "b128": "dwordx4",
             "b256": "dwordx8", "b512": "dwordx16", "u8": "ubyte", "i8": "sbyte",
             "u16": "ushort", "i16": "sshort", "b8": "byte", "b16": "short"}
D16 = {"d16_u8": "ubyte_d16", "d16_i8": "sbyte_d16", "d16_b16": "short_d16",
       "d16_hi_u8": "ubyte_d16_hi", "d16_hi_i8": "sbyte_d16_hi", "d16_hi_b16": "short_d16_hi",
       "d16_hi_b8": "byte_d16_hi"}
ATOMICS = {"swap_b32": "swap", "cmpswap_b32": "cmpswap", "add_u32": "add", "sub_u32": "sub",
           "min_i32": "smin", "min_u32": "umin", "max_i32": "smax", "max_u32": "umax",
           "and_b32": "and", "or_b32": "or", "xor_b32": "xor", "inc_u32": "inc",
           "dec_u32": "dec", "swap_b64": "swap_x2", "cmpswap_b64": "cmpswap_x2",
           "add_u64": "add_x2", "sub_u64": "sub_x2", "min_i64": "smin_x2", "min_u64": "umin_x2",
           "max_i64": "smax_x2", "max_u64": "umax_x2", "and_b64": "and_x2", "or_b64": "or_x2",
           "xor_b64": "xor_x2", "inc_u64": "inc_x2", "dec_u64": "dec_x2"}


def gfx9_name(name, known):
    """The GFX9 operation a GFX11 mnemonic (encoding suffix removed) performs, if GFX9 has it."""
    if name.startswith("v_dual_"):
        name = "v_" + name[len("v_dual_"):]
    cands = [GFX11_NAMES.get(name, name)]
    # GFX9 spells the always-true compares `tru` and puts d16 after `format`.
    cands.append(re.sub(r"^(v_cmpx?)_t_", r"\1_tru_", name))
    cands.append(re.sub(r"_d16_(hi_)?format_(\w+)$", r"_format_d16_\1\2", name))
    for old, new in PREFIXES:
        if name.startswith(old):
            cands.append(new + name[len(old):])
            break
    m = re.match(r"^(s_load|s_buffer_load|global_load|global_store|flat_load|flat_store|"
                 r"scratch_load|scratch_store|buffer_load|buffer_store)_(.*)$", name)
    if m:
        kind, rest = m.groups()
        if rest in MEM_TYPES:
            cands.append(f"{kind}_{MEM_TYPES[rest]}")
        if rest in D16:
            cands.append(f"{kind}_{D16[rest]}")
    m = re.match(r"^(global|flat|buffer)_atomic_(.*?)(_rtn)?$", name)
    if m and m.group(2) in ATOMICS:
        cands.append(f"{m.group(1)}_atomic_{ATOMICS[m.group(2)]}{m.group(3) or ''}")
    for c in cands:
        if c in known:
            return c
    return name


def camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def split_operands(rest):
    # Split on commas outside parentheses/brackets.
    out, depth, cur = [], 0, ""
    for ch in rest:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def load(path):
    entries = []
    for line in open(path):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        head, text = line.split(" | ", 1)
        fmt, opc = head.split()[:2]
        if fmt in ("VOPDX", "VOPDY"):
            # A VOPD line prints both halves: `X :: Y`; the entry is one of them.
            text = text.split(" :: ")[0 if fmt == "VOPDX" else 1]
        name, _, rest = text.partition(" ")
        # Operands end where the modifiers start (words without commas after the last comma
        # group are modifiers such as `offset:16`, `glc`); the widths only look at registers.
        ops = split_operands(rest)
        if ops:
            last = ops[-1].strip().split(" ")
            ops[-1] = last[0]
        entries.append((fmt, int(opc, 16), name, widths(ops)))
    return entries


def main():
    targets = {"GFX90A": load(os.path.join(HERE, "opcodes-gfx90a.txt")),
               "GFX940": load(os.path.join(HERE, "opcodes-gfx940.txt"))}
    known = {base_name(e[2]) for t in targets.values() for e in t}
    gfx11 = load(os.path.join(HERE, "opcodes-gfx1100.txt"))
    # A GFX11 entry: (format, opcode, printed name, widths, operation name).
    targets = {k: [(*e, base_name(e[2])) for e in v] for k, v in targets.items()}
    targets["GFX1100"] = [(*e, gfx9_name(base_name(e[2]), known)) for e in gfx11]
    ops = sorted({e[4] for t in targets.values() for e in t})
    with open(os.path.join(SRC, "op.rs"), "w") as f:
        f.write("// Generated by tools/gen_tables.py from llvm-mc-16's disassembly of every opcode.\n")
        f.write("// Do not edit: rerun the script.\n\n")
        f.write("/// An operation, named after its GFX9 mnemonic without the `_e32`/`_e64` encoding\n")
        f.write("/// suffix (`v_add_f32` is [`Op::VAddF32`] whether encoded as VOP2 or VOP3).\n")
        f.write("#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]\n#[repr(u16)]\npub enum Op {\n")
        f.write("    /// Words that decode to no operation of the target.\n    Invalid,\n")
        for o in ops:
            f.write(f"    /// `{o}`\n    {camel(o)},\n")
        f.write("}\n\n")
        f.write("/// Each operation's mnemonic (GFX9's where GFX9 has it), in declaration order.\n")
        f.write("static NAMES: [&str; %d] = [\n    \"<invalid>\",\n" % (len(ops) + 1))
        for o in ops:
            f.write(f"    \"{o}\",\n")
        f.write("];\n\n")
        f.write("impl Op {\n")
        f.write("    /// The operation's mnemonic without an encoding suffix, as GFX9 spells it where\n")
        f.write("    /// GFX9 has the operation (`global_load_dword` for GFX11's `global_load_b32`).\n")
        f.write("    pub fn name(self) -> &'static str {\n")
        f.write("        NAMES[self as usize]\n    }\n}\n")
    # One table for every target: an entry the targets share (same encoding, opcode,
    # operation, mnemonic and operand widths) is written once with the set of its targets.
    bits = {"GFX90A": 1, "GFX940": 2, "GFX1100": 4}
    merged = {}
    for tname, entries in targets.items():
        for fmt, opc, name, w, op in entries:
            key = (FORMATS.index(fmt), opc, fmt, name, tuple(w), op)
            merged[key] = merged.get(key, 0) | bits[tname]
    with open(os.path.join(SRC, "tables.rs"), "w") as f:
        f.write("// Generated by tools/gen_tables.py from llvm-mc-16's disassembly of every opcode.\n")
        f.write("// Do not edit: rerun the script.\n\n")
        f.write("use super::op::Op;\nuse super::table::{Entry, Format::*};\n\n")
        f.write("/// Every opcode of every target, sorted by encoding, opcode and target set; the last\n")
        f.write("/// field is the targets (`table::target_bit`) the entry is for.\n")
        f.write("#[rustfmt::skip]\n")
        f.write("pub(crate) static ENTRIES: &[Entry] = &[\n")
        for key in sorted(merged, key=lambda k: (k[0], k[1], merged[k], k[3])):
            _, opc, fmt, name, w, op = key
            f.write(f"    Entry::new({FMT_RUST[fmt]}, {opc:#x}, Op::{camel(op)}, "
                    f"\"{name}\", {list(w)}, {merged[key]:#05b}),\n")
        f.write("];\n")

main()
