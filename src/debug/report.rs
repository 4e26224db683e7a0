//! Hang and fault reports: what every queue of the device is doing when a wait gives up or a
//! queue dies. A wait that times out (given a timeout, or bounded by `KFDRT_WAIT_TIMEOUT_MS`)
//! and a wait that ends on a queue error, a GPU fault or a reset carry a [`DeviceReport`] in
//! their error: for each queue its read and write indices, the packet at the read index
//! decoded (a dispatch with its kernel's name, a barrier with the current value of each signal
//! it waits on), how long the read index has not moved; for a fault, the address, the kernel
//! and, on kfd-emu, the instructions around the faulting PC.

use crate::device::KfdShared;
pub use crate::error::report::{DeviceReport, FaultReport, QueueKind, QueueReport};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Something that can describe one queue (registered by each queue while it lives).
pub(crate) trait QueueProbe: Send + Sync {
    /// The queue's id.
    fn queue_id(&self) -> u32;
    /// The queue as it is now; `names` maps kernel objects to kernel names.
    fn report(&self, shared: &KfdShared, kernels: &Kernels) -> QueueReport;
    /// The queue's GPU.
    fn gpu_id(&self) -> u32;
    /// Waits until everything submitted to the queue so far has completed (`None`: no limit);
    /// an error of the queue or its GPU ends the wait.
    fn drain(&self, shared: &KfdShared, timeout: Option<Duration>) -> crate::Result<()>;
}

/// When a queue's read index last moved, as kfdrt saw it.
#[derive(Default)]
pub(crate) struct Progress(Mutex<Option<Seen>>);

#[derive(Clone, Copy)]
struct Seen {
    read: u64,
    /// When the current value was first seen, or the look before if it changed between two.
    since: Instant,
    last_look: Instant,
}

impl Progress {
    /// Notes the read index now; returns for how long it has not moved.
    pub(crate) fn observe(&self, read: u64) -> Duration {
        let mut p = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let since = match *p {
            Some(s) if s.read == read => s.since,
            Some(s) => s.last_look,
            None => now,
        };
        *p = Some(Seen {
            read,
            since,
            last_look: now,
        });
        now - since
    }
}

/// The device's live queues and the names of its kernels, for reports.
#[derive(Default)]
pub(crate) struct Registry {
    probes: Mutex<Vec<Arc<dyn QueueProbe>>>,
    kernels: Mutex<Kernels>,
    /// Line tables of the loaded code objects that have them.
    pub(crate) sources: super::source_lines::SourceMap,
}

/// What is known of each kernel object kfdrt handed out.
pub(crate) type Kernels = HashMap<u64, KernelInfo>;

/// What a capture needs to know of a kernel besides its packet.
#[derive(Clone, Debug)]
pub(crate) struct KernelInfo {
    pub(crate) name: String,
    /// Bytes of kernel arguments it reads.
    pub(crate) kernarg_size: u32,
    /// Offsets of its global-buffer pointer arguments (from its metadata).
    pub(crate) pointer_args: Vec<u32>,
    /// Whether metadata said which arguments are pointers.
    pub(crate) has_metadata: bool,
    /// Where the kernel is in the source (`file:line` of its own frame at its entry), when
    /// its code object has line tables.
    pub(crate) source: Option<String>,
}

impl Registry {
    /// Adds a queue (at creation).
    pub(crate) fn register(&self, probe: Arc<dyn QueueProbe>) {
        self.probes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(probe);
    }

    /// Removes a queue (at destruction).
    pub(crate) fn unregister(&self, queue_id: u32) {
        self.probes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|p| p.queue_id() != queue_id);
    }

    fn lock_kernels(&self) -> std::sync::MutexGuard<'_, Kernels> {
        self.kernels.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Remembers that `kernel_object` is kernel `name`, which reads `kernarg_size` bytes of
    /// arguments with global-buffer pointers at `pointer_args`.
    pub(crate) fn name_kernel(
        &self,
        kernel_object: u64,
        name: &str,
        kernarg_size: u32,
        pointer_args: Option<Vec<u32>>,
        entry: Option<u64>,
    ) {
        // The kernel's own frame at its entry: the line in the kernel function (innermost
        // frames there are often inlined runtime helpers).
        let source = entry
            .and_then(|pc| self.sources.locate(pc))
            .and_then(|frames| frames.last().cloned())
            .map(|f| f.split(" in ").next().unwrap_or_default().to_owned());
        self.lock_kernels().insert(
            kernel_object,
            KernelInfo {
                name: name.to_string(),
                kernarg_size,
                has_metadata: pointer_args.is_some(),
                pointer_args: pointer_args.unwrap_or_default(),
                source,
            },
        );
    }

    /// The kernel's name, with where it is in the source when known (for timelines).
    pub(crate) fn kernel_label_with_source(&self, kernel_object: u64) -> String {
        match self.lock_kernels().get(&kernel_object) {
            Some(KernelInfo {
                name,
                source: Some(s),
                ..
            }) => format!("{name} ({s})"),
            Some(k) => k.name.clone(),
            None => format!("kernel {kernel_object:#x}"),
        }
    }

    /// What is known of `kernel_object`.
    pub(crate) fn kernel_info(&self, kernel_object: u64) -> Option<KernelInfo> {
        self.lock_kernels().get(&kernel_object).cloned()
    }

    /// The live queues (of GPU `gpu_id`, or all).
    pub(crate) fn queues_of(&self, gpu_id: Option<u32>) -> Vec<Arc<dyn QueueProbe>> {
        let mut p = self.probes();
        p.retain(|q| gpu_id.is_none_or(|g| q.gpu_id() == g));
        p
    }

    fn probes(&self) -> Vec<Arc<dyn QueueProbe>> {
        self.probes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// `name (0x...)` for a known kernel object, else the address.
pub(crate) fn kernel_label(kernels: &Kernels, kernel_object: u64) -> String {
    match kernels.get(&kernel_object) {
        Some(k) => format!("{} ({kernel_object:#x})", k.name),
        None => format!("at kernel object {kernel_object:#x}"),
    }
}

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
                    kernel_label(names, w.kernel_object),
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
            r.kernel = Some(kernel_label(names, m.kernel_object));
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
