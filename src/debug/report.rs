//! Hang and fault reports: what every queue of the device is doing when a wait gives up or a
//! queue dies. A wait that times out (given a timeout, or bounded by `KFDRT_WAIT_TIMEOUT_MS`)
//! and a wait that ends on a queue error, a GPU fault or a reset carry a [`DeviceReport`] in
//! their error: for each queue its read and write indices, the packet at the read index
//! decoded (a dispatch with its kernel's name, a barrier with the current value of each signal
//! it waits on), how long the read index has not moved; for a fault, the address, the kernel
//! and, on kfd-emu, the instructions around the faulting PC.

pub(crate) use super::registry::Kernels;
use crate::device::KfdShared;
pub use crate::error::report::{DeviceReport, FaultReport, QueueKind, QueueReport};

/// The report of every queue of `shared`'s device, with `fault` (a GPU fault the error
/// reports) described as far as the device can.
pub(crate) fn gather(
    shared: &KfdShared,
    fault: Option<&crate::event::MemoryException>,
) -> DeviceReport {
    let names = shared.reports.lock_kernels();
    let queues: Vec<QueueReport> = shared
        .reports
        .probes()
        .iter()
        .map(|p| p.report(shared, &names))
        .collect();
    let faults = fault
        .map(|f| fault_report(shared, f, &names))
        .into_iter()
        .collect();
    let waves = running_waves(shared, &queues, &names);
    DeviceReport {
        queues,
        faults,
        waves,
    }
}

/// On kfd-emu, the waves running on the GPUs whose queues have work pending (a hang report's
/// view of what the stuck work does).
fn running_waves(shared: &KfdShared, queues: &[QueueReport], names: &Kernels) -> Vec<String> {
    #[cfg(feature = "emu")]
    if let Some(emu) = &shared.dev.emulator {
        let mut gpus: Vec<u32> = queues
            .iter()
            .filter(|q| q.read < q.write)
            .map(|q| q.gpu_id)
            .collect();
        gpus.sort_unstable();
        gpus.dedup();
        let mut out = Vec::new();
        for gpu in gpus {
            for w in emu.running_waves(gpu, std::time::Duration::from_millis(10)) {
                let mut text = format!(
                    "kernel {}: {}, at {:#x}: {}",
                    super::registry::kernel_label(names, w.kernel_object),
                    w.doing,
                    w.state.pc,
                    w.instruction
                );
                for place in shared
                    .reports
                    .sources
                    .locate(w.state.pc)
                    .unwrap_or_default()
                {
                    text.push_str(&format!("\n  in {place}"));
                }
                text.push_str(&format!("\n{}", w.state));
                out.push(text);
            }
        }
        return out;
    }
    let _ = (shared, queues, names);
    Vec::new()
}

fn fault_report(
    shared: &KfdShared,
    f: &crate::event::MemoryException,
    names: &Kernels,
) -> FaultReport {
    #[cfg_attr(not(feature = "emu"), allow(unused_mut))]
    let mut r = FaultReport {
        gpu_id: f.gpu_id,
        address: (!f.imprecise).then_some(f.va),
        what: f.to_string(),
        queue_id: None,
        kernel: None,
        pc: None,
        around_pc: Vec::new(),
        source: Vec::new(),
        wave: None,
    };
    #[cfg(feature = "emu")]
    if let Some(emu) = &shared.dev.emulator {
        // The interpreter's record of the wave that faulted: the latest on the GPU at the
        // reported page (the page is all KFD reports).
        let page = f.va & !0xFFF;
        let faults = emu.machine_faults(f.gpu_id);
        let hit = faults
            .iter()
            .rev()
            .find(|m| m.address.is_some_and(|a| a & !0xFFF == page))
            .or(faults.last());
        if let Some(m) = hit {
            r.queue_id = Some(m.queue_id);
            r.kernel = Some(super::registry::kernel_label(names, m.kernel_object));
            r.pc = Some(m.pc);
            r.around_pc = m.around_pc.clone();
            r.source = shared.reports.sources.locate(m.pc).unwrap_or_default();
            r.wave = m.wave.as_ref().map(|w| w.to_string());
        }
    }
    #[cfg(not(feature = "emu"))]
    let _ = (shared, names);
    r
}

impl crate::error::Error {
    /// The error with a report of `shared`'s device attached, if it is a kind that carries one
    /// and has none yet.
    pub(crate) fn with_report(mut self, shared: &crate::device::KfdShared) -> Self {
        use crate::error::Error;
        let fault = match &self {
            Error::DeviceFault { fault, .. } => Some(*fault),
            _ => None,
        };
        if let Error::Timeout { report, .. }
        | Error::QueueError { report, .. }
        | Error::DeviceFault { report, .. }
        | Error::DeviceReset { report, .. } = &mut self
        {
            if report.is_none() {
                *report = Some(Box::new(gather(shared, fault.as_ref())));
            }
        }
        self
    }
}
