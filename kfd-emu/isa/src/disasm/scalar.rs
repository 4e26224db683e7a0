//! Scalar instruction text: SOP1, SOP2, SOPC, SOPK, SOPP.

use super::operand::{operand, source, LitSize};
use super::sep;
use crate::decode::{Format, Inst, Operand};
use crate::target::Target;
use std::fmt::Write;

/// GFX9 hardware register names for `hwreg(...)`.
fn hwreg_name(id: u16, t: Target) -> Option<&'static str> {
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

fn waitcnt(out: &mut String, simm: u16) {
    let vm = (simm & 0xF) | ((simm >> 14) & 3) << 4;
    let exp = (simm >> 4) & 7;
    let lgkm = (simm >> 8) & 0xF;
    let all_max = vm == 63 && exp == 7 && lgkm == 15;
    let mut parts = Vec::new();
    if vm != 63 || all_max {
        parts.push(format!("vmcnt({vm})"));
    }
    if exp != 7 || all_max {
        parts.push(format!("expcnt({exp})"));
    }
    if lgkm != 15 || all_max {
        parts.push(format!("lgkmcnt({lgkm})"));
    }
    out.push(' ');
    out.push_str(&parts.join(" "));
}

/// SOPP instructions printed without their immediate.
fn sopp_bare(name: &str) -> bool {
    matches!(
        name,
        "s_barrier"
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
            "s_waitcnt" => waitcnt(out, simm),
            "s_endpgm" if simm == 0 => {}
            "s_endpgm" => {
                let _ = write!(out, " {simm}");
            }
            n if sopp_bare(n) => {}
            "s_sendmsg" | "s_sendmsghalt" => {
                let _ = write!(out, " {}", sendmsg(simm));
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
                operand(out, i.dst);
                sep(out, &mut first);
                hwreg(out, simm, t);
            }
            "s_setreg_b32" => {
                sep(out, &mut first);
                hwreg(out, simm, t);
                sep(out, &mut first);
                operand(out, i.dst);
            }
            "s_setreg_imm32_b32" => {
                sep(out, &mut first);
                hwreg(out, simm, t);
                sep(out, &mut first);
                let _ = write!(out, "{:#x}", i.imm[0]);
            }
            "s_call_b64" | "s_cbranch_i_fork" => {
                sep(out, &mut first);
                operand(out, i.dst);
                let _ = write!(out, ", {simm}");
            }
            _ => {
                sep(out, &mut first);
                operand(out, i.dst);
                let _ = write!(out, ", {simm:#x}");
            }
        },
        _ => {
            for op in [i.dst, i.src[0], i.src[1]] {
                if op != Operand::None {
                    sep(out, &mut first);
                    source(out, op, LitSize::of(i.name));
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
fn sendmsg(simm: u16) -> String {
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
