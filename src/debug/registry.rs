//! The device's live queues and what is known of its kernels, for hang and fault reports and
//! for draining every queue: each queue registers a probe while it lives. A debugging
//! instrument the lower layers feed, so it sits below the device (which keeps it, `S` being the
//! device's shared state the probes look at); `super::report` gathers the reports from it.

use super::source_lines::SourceMap;
use crate::error::report::QueueReport;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Something that can describe one queue (registered by each queue while it lives).
pub(crate) trait QueueProbe<S>: Send + Sync {
    /// The queue's id.
    fn queue_id(&self) -> u32;
    /// The queue as it is now; `names` maps kernel objects to kernel names.
    fn report(&self, shared: &S, kernels: &Kernels) -> QueueReport;
    /// The queue's GPU.
    fn gpu_id(&self) -> u32;
    /// Waits until everything submitted to the queue so far has completed (`None`: no limit);
    /// an error of the queue or its GPU ends the wait.
    fn drain(&self, shared: &S, timeout: Option<Duration>) -> crate::error::Result<()>;
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
pub(crate) struct Registry<S> {
    probes: Mutex<Vec<Arc<dyn QueueProbe<S>>>>,
    kernels: Mutex<Kernels>,
    /// Line tables of the loaded code objects that have them.
    pub(crate) sources: SourceMap,
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

impl<S> Default for Registry<S> {
    fn default() -> Self {
        Registry {
            probes: Mutex::default(),
            kernels: Mutex::default(),
            sources: SourceMap::default(),
        }
    }
}

impl<S> Registry<S> {
    /// Adds a queue (at creation).
    pub(crate) fn register(&self, probe: Arc<dyn QueueProbe<S>>) {
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

    pub(crate) fn lock_kernels(&self) -> std::sync::MutexGuard<'_, Kernels> {
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
    pub(crate) fn queues_of(&self, gpu_id: Option<u32>) -> Vec<Arc<dyn QueueProbe<S>>> {
        let mut p = self.probes();
        p.retain(|q| gpu_id.is_none_or(|g| q.gpu_id() == g));
        p
    }

    pub(crate) fn probes(&self) -> Vec<Arc<dyn QueueProbe<S>>> {
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
