//! Scalar instruction text: SOP1, SOP2, SOPC, SOPK, SOPP.

use super::operand::{operand, source, LitSize};
use super::sep;
use crate::decode::{Format, Inst, Operand};
use crate::target::{Generation, Target};
use std::fmt::Write;

/// Hardware register names for `hwreg(...)` (GFX9's, gfx940's additions, GFX11's).
fn hwreg_name(id: u16, t: Target) -> Option<&'static str> {
    if t.generation() == Generation::Gfx11 {
        return Some(match id {
            1 => "HW_REG_MODE",
            2 => "HW_REG_STATUS",
            3 => "HW_REG_TRAPSTS",
            5 => "HW_REG_GPR_ALLOC",
            6 => "HW_REG_LDS_ALLOC",
            7 => "HW_REG_IB_STS",
            15 => "HW_REG_SH_MEM_BASES",
            20 => "HW_REG_FLAT_SCR_LO",
            21 => "HW_REG_FLAT_SCR_HI",
            23 => "HW_REG_HW_ID1",
            24 => "HW_REG_HW_ID2",
            29 => "HW_REG_SHADER_CYCLES",
            _ => return None,
        });
    }
    Some(match id {
        20 if t.gfx940_cache_bits() => "HW_REG_XCC_ID",
        21 if t.gfx940_cache_bits() => "HW_REG_SQ_PERF_SNAPSHOT_DATA",
        22 if t.gfx940_cache_bits() => "HW_REG_SQ_PERF_SNAPSHOT_DATA1",
        23 if t.gfx940_cache_bits() => "HW_REG_SQ_PERF_SNAPSHOT_PC_LO",
        24 if t.gfx940_cache_bits() => "HW_REG_SQ_PERF_SNAPSHOT_PC_HI",
        1 => "HW_REG_MODE",
        2 => "HW_REG_STATUS",
        3 => "HW_REG_TRAPSTS",
        4 => "HW_REG_HW_ID",
        5 => "HW_REG_GPR_ALLOC",
        6 => "HW_REG_LDS_ALLOC",
        7 => "HW_REG_IB_STS",
        15 => "HW_REG_SH_MEM_BASES",
        16 => "HW_REG_TBA_LO",
        17 => "HW_REG_TBA_HI",
        18 => "HW_REG_TMA_LO",
        19 => "HW_REG_TMA_HI",
        _ => return None,
    })
}

fn hwreg(out: &mut String, simm: u16, t: Target) {
    let id = simm & 0x3F;
    let offset = (simm >> 6) & 0x1F;
    let size = ((simm >> 11) & 0x1F) + 1;
    out.push_str("hwreg(");
    match hwreg_name(id, t) {
        Some(n) => out.push_str(n),
        None => {
            let _ = write!(out, "{id}");
        }
    }
    if offset != 0 || size != 32 {
        let _ = write!(out, ", {offset}, {size}");
    }
    out.push(')');
}

fn waitcnt(out: &mut String, simm: u16, t: Target) {
    // GFX9: vmcnt in 3:0 and 15:14, expcnt 6:4, lgkmcnt 11:8; GFX11: vmcnt 15:10, expcnt
    // 2:0, lgkmcnt 9:4.
    let (vm, exp, lgkm, lgkm_max) = if t.generation() == Generation::Gfx11 {
        (simm >> 10, simm & 7, (simm >> 4) & 0x3F, 63)
    } else {
        (
            (simm & 0xF) | ((simm >> 14) & 3) << 4,
            (simm >> 4) & 7,
            (simm >> 8) & 0xF,
            15,
        )
    };
    let all_max = vm == 63 && exp == 7 && lgkm == lgkm_max;
    let mut parts = Vec::new();
    if vm != 63 || all_max {
        parts.push(format!("vmcnt({vm})"));
    }
    if exp != 7 || all_max {
        parts.push(format!("expcnt({exp})"));
    }
    if lgkm != lgkm_max || all_max {
        parts.push(format!("lgkmcnt({lgkm})"));
    }
    out.push(' ');
    out.push_str(&parts.join(" "));
}

/// GFX11 `s_delay_alu`: the dependency of the next instruction(s) as LLVM names it
/// (`printDelayFlag`: the three fields, bits above them ignored).
fn delay_alu(simm: u16) -> String {
    const ID: [&str; 12] = [
        "NO_DEP",
        "VALU_DEP_1",
        "VALU_DEP_2",
        "VALU_DEP_3",
        "VALU_DEP_4",
        "TRANS32_DEP_1",
        "TRANS32_DEP_2",
        "TRANS32_DEP_3",
        "FMA_ACCUM_CYCLE_1",
        "SALU_CYCLE_1",
        "SALU_CYCLE_2",
        "SALU_CYCLE_3",
    ];
    const SKIP: [&str; 6] = ["SAME", "NEXT", "SKIP_1", "SKIP_2", "SKIP_3", "SKIP_4"];
    const BAD_ID: &str = "/* invalid instid value */";
    const BAD_SKIP: &str = "/* invalid instskip value */";
    let id0 = usize::from(simm & 0xF);
    let skip = usize::from((simm >> 4) & 7);
    let id1 = usize::from((simm >> 7) & 0xF);
    let mut parts = Vec::new();
    if id0 != 0 {
        parts.push(format!("instid0({})", ID.get(id0).unwrap_or(&BAD_ID)));
    }
    if skip != 0 {
        parts.push(format!("instskip({})", SKIP.get(skip).unwrap_or(&BAD_SKIP)));
    }
    if id1 != 0 {
        parts.push(format!("instid1({})", ID.get(id1).unwrap_or(&BAD_ID)));
    }
    if parts.is_empty() {
        return "0".to_string();
    }
    parts.join(" | ")
}

/// GFX11 `s_waitcnt_depctr`: its fields by name, those not at their no-wait value (all of
/// them when every one is), or the number when bits outside the fields are set.
fn depctr(simm: u16) -> String {
    // (name, offset, width); the no-wait value of each is its all-ones.
    const FIELDS: [(&str, u16, u16); 7] = [
        ("depctr_hold_cnt", 7, 1),
        ("depctr_sa_sdst", 0, 1),
        ("depctr_va_vdst", 12, 4),
        ("depctr_va_sdst", 9, 3),
        ("depctr_va_ssrc", 8, 1),
        ("depctr_va_vcc", 1, 1),
        ("depctr_vm_vsrc", 2, 3),
    ];
    if simm & 0x60 != 0 {
        return format!("{simm:#x}");
    }
    let field = |&(name, off, width): &(&'static str, u16, u16)| {
        let v = (simm >> off) & ((1 << width) - 1);
        (name, v, v == (1 << width) - 1)
    };
    let waits: Vec<String> = FIELDS
        .iter()
        .map(field)
        .filter(|f| !f.2)
        .map(|(n, v, _)| format!("{n}({v})"))
        .collect();
    if waits.is_empty() {
        FIELDS
            .iter()
            .map(field)
            .map(|(n, v, _)| format!("{n}({v})"))
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        waits.join(" ")
    }
}

/// SOPP instructions printed without their immediate.
fn sopp_bare(name: &str) -> bool {
    matches!(
        name,
        "s_wait_idle"
            | "s_code_end"
            | "s_barrier"
            | "s_wakeup"
            | "s_icache_inv"
            | "s_ttracedata"
            | "s_endpgm_saved"
            | "s_set_gpr_idx_off"
            | "s_endpgm_ordered_ps_done"
    )
}

pub(super) fn print(out: &mut String, t: Target, i: &Inst) {
    out.push_str(i.name);
    let mut first = true;
    let simm = i.offset as u16;
    match i.format {
        Format::Sopp => match i.name {
            "s_waitcnt" => waitcnt(out, simm, t),
            "s_delay_alu" => {
                let _ = write!(out, " {}", delay_alu(simm));
            }
            "s_waitcnt_depctr" => {
                let _ = write!(out, " {}", depctr(simm));
            }
            // GFX11's immediates that LLVM prints in hex whatever their value.
            "s_clause"
            | "s_set_inst_prefetch_distance"
            | "s_wait_event"
            | "s_round_mode"
            | "s_ttracedata_imm" => {
                let _ = write!(out, " {simm:#x}");
            }
            "s_endpgm" if simm == 0 => {}
            "s_endpgm" => {
                let _ = write!(out, " {simm}");
            }
            n if sopp_bare(n) => {}
            "s_sendmsg" | "s_sendmsghalt" => {
                let _ = write!(out, " {}", sendmsg(simm, t));
            }
            "s_set_gpr_idx_mode" => {
                let _ = write!(out, " {}", gpr_idx(simm));
            }
            // Branch offsets read as numbers; other immediates too when LLVM could have
            // inlined them, in hex otherwise.
            n if simm <= 64 || n.contains("branch") => {
                let _ = write!(out, " {simm}");
            }
            _ => {
                let _ = write!(out, " {simm:#x}");
            }
        },
        Format::Sopk => match i.name {
            "s_getreg_b32" => {
                sep(out, &mut first);
                operand(out, t, i.dst);
                sep(out, &mut first);
                hwreg(out, simm, t);
            }
            "s_setreg_b32" => {
                sep(out, &mut first);
                hwreg(out, simm, t);
                sep(out, &mut first);
                operand(out, t, i.dst);
            }
            "s_setreg_imm32_b32" => {
                sep(out, &mut first);
                hwreg(out, simm, t);
                sep(out, &mut first);
                let _ = write!(out, "{:#x}", i.imm[0]);
            }
            "s_version" => {
                let _ = write!(out, " {simm:#x}");
            }
            "s_call_b64"
            | "s_cbranch_i_fork"
            | "s_subvector_loop_begin"
            | "s_subvector_loop_end" => {
                sep(out, &mut first);
                operand(out, t, i.dst);
                let _ = write!(out, ", {simm}");
            }
            _ => {
                sep(out, &mut first);
                operand(out, t, i.dst);
                let _ = write!(out, ", {simm:#x}");
            }
        },
        _ if i.name.starts_with("s_sendmsg_rtn") => {
            sep(out, &mut first);
            operand(out, t, i.dst);
            // The message id is the source field's raw value.
            let _ = write!(out, ", {}", sendmsg(u16::from(i.words[0] as u8), t));
        }
        _ => {
            // Scalar sources are 32 or 64 bits (`SSrc_b32`), whatever the operation's
            // suffix: s_pack_*_b16's and s_sext_i32_i16's literals print whole.
            let size = match LitSize::of(i.name) {
                LitSize::B16 | LitSize::B16Int => LitSize::B32,
                size => size,
            };
            for op in [i.dst, i.src[0], i.src[1]] {
                if op != Operand::None {
                    sep(out, &mut first);
                    source(out, t, op, size);
                }
            }
            if i.name == "s_set_gpr_idx_on" {
                let _ = write!(out, ", {}", gpr_idx(simm));
            }
        }
    }
}

fn gpr_idx(mode: u16) -> String {
    if mode > 0xF {
        // Bits beyond the four modes: the raw value.
        return format!("{mode:#x}");
    }
    let names = ["SRC0", "SRC1", "SRC2", "DST"];
    let on: Vec<&str> = (0..4)
        .filter(|b| mode >> b & 1 != 0)
        .filter_map(|b| names.get(b).copied())
        .collect();
    format!("gpr_idx({})", on.join(","))
}

/// `s_sendmsg`'s immediate as LLVM prints it (`printSendMsg`): the message by name with its
/// operation and stream where valid, else the three fields as numbers if they are all the
/// immediate holds, else the raw number.
fn sendmsg(simm: u16, t: Target) -> String {
    if t.generation() == Generation::Gfx11 {
        // GFX11: an 8-bit message id and no operations; a known id is named whatever the
        // bits above it, an unknown one is numbered when nothing else is set.
        let id = simm & 0xFF;
        let name = match id {
            1 => "MSG_INTERRUPT",
            2 => "MSG_HS_TESSFACTOR",
            3 => "MSG_DEALLOC_VGPRS",
            5 => "MSG_STALL_WAVE_GEN",
            6 => "MSG_HALT_WAVES",
            7 => "MSG_ORDERED_PS_DONE",
            9 => "MSG_GS_ALLOC_REQ",
            128 => "MSG_RTN_GET_DOORBELL",
            129 => "MSG_RTN_GET_DDID",
            130 => "MSG_RTN_GET_TMA",
            131 => "MSG_RTN_GET_REALTIME",
            132 => "MSG_RTN_SAVE_WAVE",
            133 => "MSG_RTN_GET_TBA",
            _ if simm == id => return format!("sendmsg({id}, 0, 0)"),
            _ => return simm.to_string(),
        };
        return format!("sendmsg({name})");
    }
    let (id, op, stream) = (simm & 0xF, (simm >> 4) & 7, (simm >> 8) & 3);
    let name = match id {
        1 => "MSG_INTERRUPT",
        2 => "MSG_GS",
        3 => "MSG_GS_DONE",
        4 => "MSG_SAVEWAVE",
        5 => "MSG_STALL_WAVE_GEN",
        6 => "MSG_HALT_WAVES",
        7 => "MSG_ORDERED_PS_DONE",
        8 => "MSG_EARLY_PRIM_DEALLOC",
        9 => "MSG_GS_ALLOC_REQ",
        10 => "MSG_GET_DOORBELL",
        15 => "MSG_SYSMSG",
        _ => "",
    };
    let gs = id == 2 || id == 3;
    const GS_OPS: [&str; 4] = ["GS_OP_NOP", "GS_OP_CUT", "GS_OP_EMIT", "GS_OP_EMIT_CUT"];
    const SYS_OPS: [&str; 5] = [
        "",
        "SYSMSG_OP_ECC_ERR_INTERRUPT",
        "SYSMSG_OP_REG_RD",
        "SYSMSG_OP_HOST_TRAP_ACK",
        "SYSMSG_OP_TTRACE_PC",
    ];
    let op_valid = if gs {
        op < 4 && (op != 0 || id == 3)
    } else if id == 15 {
        (1..5).contains(&op)
    } else {
        op == 0
    };
    let with_stream = gs && op != 0;
    if !name.is_empty() && op_valid && (with_stream || stream == 0) {
        let mut s = format!("sendmsg({name}");
        if gs {
            s.push_str(", ");
            s.push_str(GS_OPS[usize::from(op & 3)]);
            if with_stream {
                s.push_str(&format!(", {stream}"));
            }
        } else if id == 15 {
            s.push_str(", ");
            s.push_str(SYS_OPS[usize::from(op)]);
        }
        s.push(')');
        s
    } else if id | op << 4 | stream << 8 == simm {
        format!("sendmsg({id}, {op}, {stream})")
    } else {
        simm.to_string()
    }
}
