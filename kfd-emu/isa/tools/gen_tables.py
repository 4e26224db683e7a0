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

Each entry also carries typed attributes (`src/decode/attrs.rs`), worked out here from the
mnemonic once so that the decoder and the interpreter never parse mnemonics: its class (a
load's or store's size, sign and 16-bit half; an atomic's operation and width; a compare's
predicate and type; a DS operation's summary; a formatted access's channels; an MFMA's M, N, K
and input types), its traits (carry-out, load/store/atomic, compare-swap, LDS DMA, scalar
buffer, sampler, DS returns/no address/GS register) and its sources' type. `attributes` is the
one place these rules live; an entry written by several targets is shared only when its
attributes agree too.

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


# ---- Typed attributes: what each operation does, worked out here once so that neither the
# decoder nor the interpreter reads mnemonics. Each function takes the GFX9 operation name
# (`op`) or the printed mnemonic (`name`) as its comment says, and returns a Rust expression.

# Atomic operations of FLAT/GLOBAL/SCRATCH/MUBUF/SMEM mnemonics (`*_atomic_<op>[_x2]`).
MEM_ATOMICS = {"pk_add_f16": "PkAddF16", "pk_add_bf16": "PkAddBf16", "swap": "Swap",
               "cmpswap": "CmpSwap", "add": "Add", "sub": "Sub", "smin": "SMin",
               "umin": "UMin", "smax": "SMax", "umax": "UMax", "and": "And", "or": "Or",
               "xor": "Xor", "inc": "Inc", "dec": "Dec", "add_f32": "FAdd", "add_f64": "FAdd",
               "min_f64": "FMin", "max_f64": "FMax"}
# Load/store data suffixes: (bytes, sign-extends, 16-bit half, the high half).
MEM_DATA = {"ubyte": (1, 0, 0, 0), "byte": (1, 0, 0, 0), "sbyte": (1, 1, 0, 0),
            "ushort": (2, 0, 0, 0), "short": (2, 0, 0, 0), "sshort": (2, 1, 0, 0),
            "dword": (4, 0, 0, 0), "dwordx2": (8, 0, 0, 0), "dwordx3": (12, 0, 0, 0),
            "dwordx4": (16, 0, 0, 0), "ubyte_d16": (1, 0, 1, 0), "ubyte_d16_hi": (1, 0, 1, 1),
            "byte_d16_hi": (1, 0, 1, 1), "sbyte_d16": (1, 1, 1, 0), "sbyte_d16_hi": (1, 1, 1, 1),
            "short_d16": (2, 0, 1, 0), "short_d16_hi": (2, 0, 1, 1)}
LDS_DMA_DATA = {"u8": "ubyte", "i8": "sbyte", "u16": "ushort", "i16": "sshort", "b32": "dword"}


def access(t):
    size, signed, d16, hi = MEM_DATA[t]
    half = "None" if not d16 else ("Some(true)" if hi else "Some(false)")
    return f"Access::new({size}, {'true' if signed else 'false'}, {half})"


def mem_atomic(t):
    """`Atomic` for an atomic suffix (`add`, `cmpswap_x2`), or None."""
    x2 = t.endswith("_x2")
    if x2:
        t = t[:-3]
    if t not in MEM_ATOMICS:
        return None
    wide = x2 or t.endswith("_f64")
    return f"Atomic::new(AtomicOp::{MEM_ATOMICS[t]}, {'true' if wide else 'false'})"


def vmem_class(op):
    """Load, store, atomic or cache control of a FLAT/GLOBAL/SCRATCH/MUBUF operation (GFX9
    name)."""
    rest = next((op[len(p):] for p in ("flat_", "global_", "scratch_", "buffer_")
                 if op.startswith(p)), None)
    if rest is None:
        return None
    if rest.startswith("load_lds_"):
        t = rest[len("load_lds_"):]
        t = LDS_DMA_DATA.get(t, t)
        return f"Class::Load({access(t)})" if t in MEM_DATA else None
    for verb, cls in (("load_", "Load"), ("store_", "Store")):
        if rest.startswith(verb):
            t = rest[len(verb):]
            return f"Class::{cls}({access(t)})" if t in MEM_DATA else None
    if rest.startswith("atomic_"):
        a = mem_atomic(rest[len("atomic_"):])
        return a and f"Class::Atomic({a})"
    if op.startswith("buffer_") and rest.startswith(("wb", "inv", "gl")):
        return "Class::CacheControl"
    return None


PREDICATES = ["f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle",
              "neq", "nlt", "tru", "ne", "t"]
CMP_TYPES = {"f16": "F16", "f32": "F32", "f64": "F64", "i16": "I16", "u16": "U16",
             "i32": "I32", "u32": "U32", "i64": "I64", "u64": "U64"}


def compare_class(op):
    """A vector compare's predicate and type (GFX9 name), or None."""
    if op.startswith("v_cmpx_"):
        rest, cmpx = op[len("v_cmpx_"):], True
    elif op.startswith("v_cmp_"):
        rest, cmpx = op[len("v_cmp_"):], False
    else:
        return None
    pred, _, ty = rest.partition("_")
    if ty not in CMP_TYPES:
        return None
    if pred == "class":
        p = "Class"
    elif pred in PREDICATES:
        p = camel(pred)
    else:
        return None
    return (f"Class::Compare(Compare::new(Predicate::{p}, CmpType::{CMP_TYPES[ty]}, "
            f"{'true' if cmpx else 'false'}))")


def ds_size(op):
    for part in reversed(op.split("_")):
        if part[:1] in ("b", "u", "i"):
            return {"8": 1, "16": 2, "32": 4, "64": 8, "96": 12, "128": 16}.get(part[1:])
    return None


def ds_atomic(op):
    """The atomic operation of a DS read-modify-write (GFX9 name), or None."""
    body = op[len("ds_"):]
    if body.startswith("pk_add"):
        return "PkAddBf16" if body.endswith("bf16") else "PkAddF16"
    body = body.replace("_rtn", "")
    if "_" not in body:
        return None
    verb, ty = body.split("_", 1)
    fl = ty.startswith("f")
    signed = ty.startswith("i")
    table = {"add": "FAdd" if fl else "Add", "sub": "Sub", "inc": "Inc", "dec": "Dec",
             "min": "FMin" if fl else ("SMin" if signed else "UMin"),
             "max": "FMax" if fl else ("SMax" if signed else "UMax"),
             "and": "And", "or": "Or", "xor": "Xor", "wrxchg": "Swap", "cmpst": "CmpSwap"}
    return table.get(verb)


GWS = {"init": "Init", "sema_v": "SemaV", "sema_br": "SemaBr", "sema_p": "SemaP",
       "barrier": "Barrier"}


def ds_class(op):
    """A DS operation's summary (GFX9 name)."""
    two = "read2" in op or "write2" in op
    if op.startswith("ds_read") and not op.startswith("ds_read_addtid"):
        cls = "DsClass::Read2" if two else "DsClass::Read"
    elif op.startswith("ds_write") and not op.startswith("ds_write_addtid"):
        cls = "DsClass::Write2" if two else "DsClass::Write"
    elif op.startswith("ds_rsub"):
        cls = "DsClass::RSub"
    elif op.startswith("ds_mskor"):
        cls = "DsClass::MskOr"
    elif op.startswith("ds_wrxchg2"):
        cls = "DsClass::Xchg2"
    elif op in ("ds_append", "ds_consume"):
        cls = f"DsClass::Append({'true' if op == 'ds_consume' else 'false'})"
    elif op.startswith("ds_gws_"):
        cls = f"DsClass::Gws(GwsOp::{GWS.get(op[len('ds_gws_'):], 'SemaReleaseAll')})"
    else:
        a = ds_atomic(op)
        cls = f"DsClass::Atomic(AtomicOp::{a})" if a else "DsClass::Other"
    signed = "_i8" in op or "_i16" in op
    half = "None" if "d16" not in op else ("Some(true)" if op.endswith("_hi") else "Some(false)")
    return (f"Class::Ds(DsOp::new({cls}, {ds_size(op) or 4}, {'true' if signed else 'false'}, "
            f"{half}, {'true' if 'st64' in op else 'false'}))")


def formatted_class(name):
    """A formatted buffer access's channels and 16-bit packing (printed name)."""
    count = {"x": 1, "xy": 2, "xyz": 3}.get(name.rsplit("_", 1)[-1], 4)
    d16 = "_d16" in name
    return (f"Class::Formatted(Formatted::new({count}, {'true' if d16 else 'false'}, "
            f"{'true' if '_d16_hi' in name else 'false'}))")


EIGHT_BIT = {"fp8": "Fp8", "bf8": "Bf8"}
INPUTS = [("f64", "F64"), ("bf16_1k", "Bf16"), ("bf16", "Bf16"), ("f16", "F16"), ("i8", "I8"),
          ("xf32", "Xf32"), ("f32", "F32")]


def mfma_kind(name):
    """An MFMA's or SMFMAC's M, N, K and input types from its mnemonic
    (`v_mfma_f32_32x32x8f16`, `v_smfmac_f32_16x16x32_f16`, `v_mfma_f32_16x16x32_fp8_bf8`), as
    an `Option<MfmaKind>` expression."""
    rest = name.split("_", 2)[2]
    if "_" not in rest:
        return "None"
    rest = rest.split("_", 1)[1]  # the result type
    parts = rest.rsplit("_", 2)
    last, second = parts[-1], (parts[-2] if len(parts) > 1 else "")
    if second in EIGHT_BIT and last in EIGHT_BIT:
        a, b = EIGHT_BIT[second], EIGHT_BIT[last]
    else:
        a = next((t for suffix, t in INPUTS if rest.endswith(suffix)), None)
        b = a
    dims = rest.split("x")
    if a is None or len(dims) < 3 or not dims[0].isdigit() or not dims[1].isdigit():
        return "None"
    k_digits = len(dims[2]) - len(dims[2].lstrip("0123456789"))
    if k_digits == 0 or k_digits == len(dims[2]):
        return "None"
    m, n, k = int(dims[0]), int(dims[1]), int(dims[2][:k_digits])
    assert max(m, n, k) < 256, name
    return f"Some(MfmaKind::new({m}, {n}, {k}, MatrixInput::{a}, MatrixInput::{b}))"


def image_class(name):
    """An image operation's address and data shape (printed name): the modifiers after its
    base name (`image_sample_c_d_o`: compare, gradients, offset) and the data it moves."""
    op = name[len("image_"):] if name.startswith("image_") else name
    sampler = op.startswith(("sample", "gather4")) or op == "get_lod"
    if op.startswith("sample"):
        base, tail = "sample", op[len("sample"):]
    elif op.startswith("gather4h"):
        base, tail = "gather4", op[len("gather4h"):]
    elif op.startswith("gather4"):
        base, tail = "gather4", op[len("gather4"):]
    else:
        base, tail = op, ""
    parts = [p for p in tail.split("_") if p]
    extra = sum(p in parts for p in ("o", "b", "c"))
    flag = lambda b: "true" if b else "false"
    gradients = "d" in parts or "cd" in parts
    lod_clamp = "l" in parts or "cl" in parts
    mip = not sampler and ("_mip" in op or op == "get_resinfo")
    if op == "atomic_cmpswap":
        data = "CmpSwap"
    elif op.startswith("atomic_"):
        data = "Atomic"
    elif base == "gather4":
        data = "Gather"
    else:
        data = "Plain"
    four = base == "gather4" or op == "msaa_load"
    return (f"Class::Image(ImageArgs::new({extra}, {flag(gradients)}, {flag('g16' in parts)}, "
            f"{flag(lod_clamp)}, {flag(mip)}, {flag(op == 'get_resinfo')}, {flag(four)}, "
            f"ImageData::{data}))"), sampler


def is_vop3b(op):
    return ("_co_u32" in op or op.startswith("v_div_scale_") or op.startswith("v_mad_u64_u32")
            or op.startswith("v_mad_i64_i32"))


def ds_returns(op):
    return ("_rtn_" in op or op.endswith("_gs_reg_rtn")
            or op.startswith(("ds_read", "ds_swizzle", "ds_permute", "ds_bpermute", "ds_append",
                              "ds_consume", "ds_ordered_count", "ds_bvh_stack")))


def source_type(name):
    """The type of the last `_f32`/`_u16`/... suffix: the sources' type (LLVM names
    conversions `v_cvt_DST_SRC`)."""
    for part in reversed(name.split("_")):
        if len(part) >= 2 and part[0] in "fiub" and part[1:].isdigit():
            return part
    return None


def attributes(fmt, name, op):
    """(class expression or None, trait names, source type or None) of one entry."""
    cls = None
    if fmt in ("FLAT", "GLOBAL", "SCRATCH", "MUBUF"):
        cls = vmem_class(op)
    if fmt == "MTBUF" or (fmt == "MUBUF" and "_format_" in name):
        cls = formatted_class(name)
    if name.startswith("v_cmp"):
        cls = compare_class(op)
    if fmt == "DS":
        cls = ds_class(op)
    if fmt == "SMEM" and "_atomic_" in name:
        a = mem_atomic(name.rsplit("_atomic_", 1)[1])
        cls = a and f"Class::Atomic({a})"
    if fmt == "VOP3P" and (name.startswith("v_mfma") or name.startswith("v_smfmac")):
        kind = "Sparse" if name.startswith("v_smfmac") else "Dense"
        cls = f"Class::Matrix(Matrix::{kind}({mfma_kind(name)}))"
    if fmt == "VOP3P" and name.startswith("v_wmma"):
        cls = "Class::Matrix(Matrix::Wmma)"
    if fmt == "MIMG":
        cls, sampler = image_class(name)
        assert sampler == name.startswith(("image_sample", "image_gather", "image_get_lod")), name
    traits = []
    parts = name.split("_")
    if (fmt == "VOP2" and "_co_" in name) or (fmt == "VOP3" and is_vop3b(op)):
        traits.append("CARRY_OUT")
    if "load" in parts:
        traits.append("LOAD")
    if "store" in parts:
        traits.append("STORE")
    if "atomic" in parts:
        traits.append("ATOMIC")
    if "cmpswap" in name:
        traits.append("CMPSWAP")
    if "_load_lds_" in name:
        traits.append("LDS_DMA")
    if fmt == "SMEM" and name.startswith("s_buffer_"):
        traits.append("SCALAR_BUFFER")
    if fmt == "MIMG" and name.startswith(("image_sample", "image_gather", "image_get_lod")):
        traits.append("SAMPLER")
    if "addtid" in name or op in ("ds_append", "ds_consume"):
        traits.append("NO_ADDRESS")
    if fmt == "DS":
        if ds_returns(op):
            traits.append("RETURNS")
        if op.endswith("_gs_reg_rtn"):
            traits.append("GS_REGISTER")
    ty = source_type(name)
    src = None
    if ty is not None:
        src = ("Float16" if ty == "f16" else "Float") if ty[0] == "f" else \
            ("Int16" if ty[1:] == "16" else None)
    return cls, traits, src


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
            cls, traits, src = attributes(fmt, name, op)
            key = (FORMATS.index(fmt), opc, fmt, name, tuple(w), op, cls, tuple(traits), src)
            merged[key] = merged.get(key, 0) | bits[tname]
    with open(os.path.join(SRC, "tables.rs"), "w") as f:
        f.write("// Generated by tools/gen_tables.py from llvm-mc-16's disassembly of every opcode.\n")
        f.write("// Do not edit: rerun the script.\n\n")
        f.write("use super::attrs::{traits::*, Class, ImageArgs, ImageData, Matrix, MatrixInput};\n")
        f.write("use super::attrs::{MfmaKind, Source};\n")
        f.write("use super::compare::{CmpType, Compare, Predicate};\n")
        f.write("use super::memop::{Access, Atomic, DsClass, DsOp, Formatted, GwsOp};\n")
        f.write("use super::op::Op;\nuse super::table::{Entry, Format::*};\n")
        f.write("use crate::memory::AtomicOp;\n\n")
        f.write("/// Every opcode of every target, sorted by encoding, opcode and target set; the last\n")
        f.write("/// field is the targets (`table::target_bit`) the entry is for. What an operation\n")
        f.write("/// does beyond its `Op` (its class, traits and source type) is worked out by the\n")
        f.write("/// generator from the mnemonic, so nothing reads mnemonics at run time.\n")
        f.write("#[rustfmt::skip]\n")
        f.write("pub(crate) static ENTRIES: &[Entry] = &[\n")
        for key in sorted(merged, key=lambda k: (k[0], k[1], merged[k], k[3])):
            _, opc, fmt, name, w, op, cls, traits, src = key
            line = (f"    Entry::new({FMT_RUST[fmt]}, {opc:#x}, Op::{camel(op)}, "
                    f"\"{name}\", {list(w)}, {merged[key]:#05b})")
            if cls:
                line += f".class({cls})"
            if traits:
                line += f".traits({' | '.join(traits)})"
            if src:
                line += f".source(Source::{src})"
            f.write(line + ",\n")
        f.write("];\n")

main()
