//! What a hang or fault report says (the data; `debug::report` gathers it): every queue of the
//! device as it was, and the fault if there was one. Errors carry it, so it sits with them.

use std::fmt;
use std::time::Duration;

/// The kind of a queue in a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueKind {
    /// An AQL (HSA) compute queue.
    Aql,
    /// A PM4 compute queue.
    Pm4,
    /// An SDMA queue.
    Sdma,
}

impl fmt::Display for QueueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QueueKind::Aql => "AQL",
            QueueKind::Pm4 => "PM4",
            QueueKind::Sdma => "SDMA",
        })
    }
}

/// One queue, as the report found it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueReport {
    /// Its kind.
    pub kind: QueueKind,
    /// KFD's queue id.
    pub queue_id: u32,
    /// The GPU it runs on.
    pub gpu_id: u32,
    /// Read index (packets for AQL; bytes for SDMA; dwords for PM4).
    pub read: u64,
    /// Write index, in the same unit.
    pub write: u64,
    /// How long the read index has not moved while work was pending. kfdrt looks at it in
    /// waits and reports; when it moved between two looks, the move is dated at the first of
    /// them (a packet processor moves it within microseconds of the work it finishes, which the
    /// waiting thread was there to see).
    pub stuck_for: Option<Duration>,
    /// The queue's error, if it stopped.
    pub error: Option<String>,
    /// The packet at the read index, decoded (one line per fact), when work is pending.
    pub head: Vec<String>,
}

/// A GPU fault, with what is known of where it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FaultReport {
    /// The GPU.
    pub gpu_id: u32,
    /// The faulting address, when the fault has one.
    pub address: Option<u64>,
    /// What the device reported.
    pub what: String,
    /// The queue whose dispatch faulted, when known.
    pub queue_id: Option<u32>,
    /// The kernel, by name when kfdrt loaded it (else its kernel object).
    pub kernel: Option<String>,
    /// The faulting instruction's address, when the device says (kfd-emu does; KFD does not).
    pub pc: Option<u64>,
    /// Instructions around `pc`, disassembled, with their addresses.
    pub around_pc: Vec<(u64, String)>,
    /// Where `pc` is in the source, when its code object has line tables (`hipcc -g` or
    /// `-gline-tables-only`): `file:line in function`, innermost first, then each place an
    /// inlined function was inlined at.
    pub source: Vec<String>,
    /// The failed wave's registers, on kfd-emu: its work-group and index, PC, EXEC, VCC, SCC,
    /// M0, the SGPRs its kernel allocates and its VGPRs in the first active lanes (one text
    /// block; hardware reports none of it through KFD).
    pub wave: Option<String>,
}

/// Every queue of a device and the faults it reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceReport {
    /// The queues, in creation order.
    pub queues: Vec<QueueReport>,
    /// The faults behind the error, if it is one.
    pub faults: Vec<FaultReport>,
    /// On kfd-emu, when work is pending: every wave of machine code still running, with what
    /// it does (at a barrier, sleeping, waiting for memory, running), its instruction and
    /// source line, and its registers (one text block per wave).
    pub waves: Vec<String>,
}

impl DeviceReport {
    /// The report of queue `queue_id`, if it is in the report.
    pub fn queue(&self, queue_id: u32) -> Option<&QueueReport> {
        self.queues.iter().find(|q| q.queue_id == queue_id)
    }
}

impl fmt::Display for QueueReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.kind {
            QueueKind::Aql => "",
            QueueKind::Pm4 => " (dwords)",
            QueueKind::Sdma => " (bytes)",
        };
        write!(
            f,
            "queue {} ({}, GPU {:#x})",
            self.queue_id, self.kind, self.gpu_id
        )?;
        if self.read >= self.write {
            write!(f, " idle at {}{unit}", self.read)?;
        } else {
            if let Some(d) = self.stuck_for {
                write!(f, " stuck for {:.2} s:", d.as_secs_f64())?;
            }
            write!(f, " read {}, write {}{unit}", self.read, self.write)?;
        }
        if let Some(e) = &self.error {
            write!(f, ", stopped: {e}")?;
        }
        for line in &self.head {
            write!(f, "\n    {line}")?;
        }
        Ok(())
    }
}

impl fmt::Display for FaultReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)?;
        if let Some(k) = &self.kernel {
            write!(f, "\n    kernel {k}")?;
        }
        if let Some(q) = self.queue_id {
            write!(f, " on queue {q}")?;
        }
        match self.pc {
            Some(pc) => {
                write!(f, "\n    pc {pc:#x}:")?;
                for (i, place) in self.source.iter().enumerate() {
                    let how = if i == 0 { "at" } else { "inlined into" };
                    write!(f, "\n      {how} {place}")?;
                }
                for (addr, text) in &self.around_pc {
                    let mark = if *addr == pc { "=>" } else { "  " };
                    write!(f, "\n    {mark} {addr:#x}: {text}")?;
                }
            }
            None => write!(f, "\n    (the PC is not known on this device)")?,
        }
        if let Some(w) = &self.wave {
            for line in w.lines() {
                write!(f, "\n    {line}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for DeviceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for fault in &self.faults {
            writeln!(f, "  {fault}")?;
        }
        for q in &self.queues {
            writeln!(f, "  {q}")?;
        }
        for w in &self.waves {
            for (i, line) in w.lines().enumerate() {
                let indent = if i == 0 { "  " } else { "    " };
                writeln!(f, "{indent}{line}")?;
            }
        }
        Ok(())
    }
}
