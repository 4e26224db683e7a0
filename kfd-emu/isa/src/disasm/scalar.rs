//! Scalar instruction text: SOP1, SOP2, SOPC, SOPK, SOPP.

use super::operand::operand;
use super::sep;
use crate::decode::{Format, Inst, Operand};
use std::fmt::Write;

/// GFX9 hardware register names for `hwreg(...)`.
fn hwreg_name(id: u16) -> Option<&'static str> {
    Some(match id {
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

fn hwreg(out: &mut String, simm: u16) {
    let id = simm & 0x3F;
    let offset = (simm >> 6) & 0x1F;
    let size = ((simm >> 11) & 0x1F) + 1;
    out.push_str("hwreg(");
    match hwreg_name(id) {
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

pub(super) fn print(out: &mut String, i: &Inst) {
    out.push_str(i.name);
    let mut first = true;
    let simm = i.offset as u16;
    match i.format {
        Format::Sopp => match i.name {
            "s_waitcnt" => waitcnt(out, simm),
            "s_endpgm" if simm == 0 => {}
            n if sopp_bare(n) => {}
            "s_sendmsg" | "s_sendmsghalt" => {
                let _ = write!(out, " {}", sendmsg(simm));
            }
            "s_set_gpr_idx_mode" => {
                let _ = write!(out, " {}", gpr_idx(simm));
            }
            _ => {
                let _ = write!(out, " {simm}");
            }
        },
        Format::Sopk => match i.name {
            "s_getreg_b32" => {
                sep(out, &mut first);
                operand(out, i.dst);
                sep(out, &mut first);
                hwreg(out, simm);
            }
            "s_setreg_b32" => {
                sep(out, &mut first);
                hwreg(out, simm);
                sep(out, &mut first);
                operand(out, i.dst);
            }
            "s_setreg_imm32_b32" => {
                sep(out, &mut first);
                hwreg(out, simm);
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
                    operand(out, op);
                }
            }
            if i.name == "s_set_gpr_idx_on" {
                let _ = write!(out, ", {}", gpr_idx(simm));
            }
        }
    }
}

fn gpr_idx(mode: u16) -> String {
    let names = ["SRC0", "SRC1", "SRC2", "DST"];
    let on: Vec<&str> = (0..4)
        .filter(|b| mode >> b & 1 != 0)
        .filter_map(|b| names.get(b).copied())
        .collect();
    format!("gpr_idx({})", on.join(","))
}

fn sendmsg(simm: u16) -> String {
    let id = simm & 0xF;
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
    if simm >> 4 == 0 && !name.is_empty() {
        format!("sendmsg({name})")
    } else {
        format!("sendmsg({id}, {}, {})", (simm >> 4) & 7, (simm >> 8) & 3)
    }
}
