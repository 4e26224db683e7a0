//! [`WaveSnapshot`]: the architectural state of a wave that failed, for fault reports: where it
//! was, which lanes ran, and its registers.

use super::wave::Wave;
use crate::decode::operand::sreg;
use std::fmt;

/// A failed wave's state when it failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaveSnapshot {
    /// Its work-group.
    pub work_group: [u32; 3],
    /// Its index within the work-group.
    pub wave: u32,
    /// The PC of the instruction that failed.
    pub pc: u64,
    /// EXEC: the lanes that ran it.
    pub exec: u64,
    /// VCC.
    pub vcc: u64,
    /// SCC.
    pub scc: bool,
    /// M0.
    pub m0: u32,
    /// The SGPRs the kernel uses (s0 up to its descriptor's count).
    pub sgprs: Vec<u32>,
    /// The VGPRs the kernel uses, each with its 64 lanes' values (a wave32 uses the first 32).
    pub vgprs: Vec<[u32; 64]>,
}

impl WaveSnapshot {
    pub(crate) fn of(w: &Wave, work_group: [u32; 3], sgprs: usize, vgprs: usize) -> WaveSnapshot {
        let pair =
            |lo: u8| u64::from(w.s[usize::from(lo)]) | u64::from(w.s[usize::from(lo) + 1]) << 32;
        WaveSnapshot {
            work_group,
            wave: w.index,
            pc: w.pc,
            exec: w.exec(),
            vcc: pair(sreg::VCC_LO),
            scc: w.scc,
            m0: w.s[sreg::M0 as usize],
            sgprs: w.s[..sgprs.min(102)].to_vec(),
            vgprs: w.v.iter().take(vgprs).copied().collect(),
        }
    }

    /// The lanes EXEC has on, in order.
    pub fn active_lanes(&self) -> impl Iterator<Item = usize> + '_ {
        (0..64).filter(|l| self.exec >> l & 1 == 1)
    }
}

/// Lanes shown per VGPR: the first active ones (a report stays a screenful).
const LANES_SHOWN: usize = 4;

impl fmt::Display for WaveSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "wave {} of work-group {:?}: pc {:#x}, exec {:#018x}, vcc {:#018x}, scc {}, m0 {:#x}",
            self.wave, self.work_group, self.pc, self.exec, self.vcc, self.scc as u8, self.m0
        )?;
        for (i, chunk) in self.sgprs.chunks(8).enumerate() {
            let words: Vec<String> = chunk.iter().map(|v| format!("{v:08x}")).collect();
            writeln!(f, "  s{:<3} {}", i * 8, words.join(" "))?;
        }
        let lanes: Vec<usize> = self.active_lanes().take(LANES_SHOWN).collect();
        let more = self.active_lanes().count().saturating_sub(lanes.len());
        let heading: Vec<String> = lanes.iter().map(|l| format!("lane {l:<3}")).collect();
        write!(f, "  VGPRs, {}", heading.join(" "))?;
        if more > 0 {
            write!(f, " (and {more} more active lanes)")?;
        }
        for (r, values) in self.vgprs.iter().enumerate() {
            let words: Vec<String> = lanes
                .iter()
                .map(|&l| format!("{:08x}", values[l]))
                .collect();
            write!(f, "\n  v{r:<3}  {}", words.join(" "))?;
        }
        Ok(())
    }
}
