//! Hostcalls: the channel through which kernels ask the host for things, HIP's device `printf`
//! above all. A kernel whose metadata asks for the `hidden_hostcall_buffer` argument gets its
//! GPU's buffer ([`HostcallService`]), and a service thread answers it.
//!
//! The protocol is the one the ROCm device library's `ockl` speaks (`hostcall_impl.cl`), so
//! kernels built by hipcc work unchanged:
//! - the buffer starts with a 48-byte descriptor: the header array's address, the payload
//!   array's, the doorbell signal's handle, the free and ready stacks (tagged packet indices,
//!   `index & mask` with an ABA tag above, 0 empty) and the index mask;
//! - a packet is a 24-byte header (`next`, the wave's active lanes, the service, a control word
//!   whose bit 0 says "waiting for the host") and a 4 KiB payload: eight words per lane;
//! - one lane of a wave pops a packet off the free stack, the wave fills it, pushes it on the
//!   ready stack and adds 1 to the doorbell; the host takes the whole ready stack, answers each
//!   lane in its first two words and clears the control bit; the wave then returns the packet.
//!
//! The device never checks the free stack for emptiness, so the buffer has a packet for every
//! wave the GPU can hold at once.

mod printf;

pub use printf::KernelPrint;
pub(crate) use printf::PrintfHandler;

use crate::device::{Gpu, Kfd};
use crate::error::{Error, Result};
use crate::memory::{AllocOptions, Buffer, MemoryKind};
use crate::signal::{Condition, Signal};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Bytes of one packet's header and payload.
const HEADER_BYTES: u64 = 24;
const PAYLOAD_BYTES: u64 = 64 * 8 * 8;
/// Where the header array starts (after the 48-byte descriptor, cache-line aligned).
const HEADERS_AT: u64 = 64;
/// Control bit 0: the packet waits for the host.
const CONTROL_READY: u32 = 1;
/// The doorbell value the service stops on (what ROCclr stores to end its listener).
const DOORBELL_DONE: i64 = 0;

/// Service ids the device library sends (`services.cl`).
const SERVICE_FUNCTION_CALL: u32 = 1;
const SERVICE_PRINTF: u32 = 2;
const SERVICE_DEVMEM: u32 = 3;

/// One GPU's hostcall buffer and the thread that answers it. Held by every kernel that takes
/// the buffer and by every dispatch of such a kernel until it completes; the thread stops with
/// the last holder.
pub struct HostcallService {
    buffer: Arc<HostcallBuffer>,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for HostcallService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostcallService")
            .field("address", &format_args!("{:#x}", self.address()))
            .field("packets", &self.buffer.packets)
            .finish()
    }
}

/// The buffer's memory, laid out as the device library reads it.
struct HostcallBuffer {
    memory: Buffer,
    /// Host address of the buffer.
    base: *mut u8,
    packets: u64,
    mask: u64,
    payloads_at: u64,
    doorbell: Signal,
    gpu_id: u32,
}

// SAFETY: `base` points into `memory`, which lives as long as the struct; every access through
// it is an atomic or happens while the device waits for the host (see `HostcallBuffer::serve`).
unsafe impl Send for HostcallBuffer {}
// SAFETY: as for `Send`: shared accesses are atomics, or to packets only the service thread
// handles.
unsafe impl Sync for HostcallBuffer {}

/// The GPU's hostcall service, started if no loaded code object holds it.
pub(crate) fn service_for(gpu: &Gpu) -> Result<Arc<HostcallService>> {
    let shared = &gpu.kfd().shared;
    shared
        .slots
        .get_or_make(gpu.index, || HostcallService::start(gpu).map(Arc::new))
}

impl HostcallService {
    fn start(gpu: &Gpu) -> Result<HostcallService> {
        let packets = packets_for(gpu);
        let buffer = Arc::new(HostcallBuffer::new(gpu, packets)?);
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name(format!("kfdrt-hostcall-{}", gpu.id()))
            .spawn({
                let (buffer, stop) = (buffer.clone(), stop.clone());
                move || buffer.serve(&stop)
            })
            .map_err(|source| Error::Os {
                what: "hostcall thread",
                source,
            })?;
        log::debug!(
            "kfdrt: hostcall buffer of {packets} packets for GPU {} at {:#x}",
            gpu.id(),
            buffer.memory.gpu_address()
        );
        Ok(HostcallService {
            buffer,
            stop,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// The buffer's GPU address: the value of a kernel's `hidden_hostcall_buffer` argument.
    pub fn address(&self) -> u64 {
        self.buffer.memory.gpu_address()
    }
}

impl Drop for HostcallService {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Err(e) = self.buffer.doorbell.store(DOORBELL_DONE) {
            log::warn!("kfdrt: waking the hostcall thread to stop: {e}");
        }
        let thread = self
            .thread
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        // The last holder may be a printf handler on the service thread itself, which cannot
        // wait for its own end: it ends by itself once the handler returns.
        if let Some(t) = thread.filter(|t| t.thread().id() != std::thread::current().id()) {
            let _ = t.join();
        }
    }
}

impl Kfd {
    /// Sends every `printf` of the kernels this process runs (one call per finished `printf`
    /// of a work-item, from kfdrt's hostcall thread, in the order they finish) to `handler`
    /// instead of stdout and stderr. The handler should return quickly: the printing waves wait
    /// for it.
    ///
    /// ```
    /// # fn main() -> kfdrt::Result<()> {
    /// let kfd = kfdrt::Kfd::from_env()?;
    /// let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    /// let sink = lines.clone();
    /// kfd.set_printf_handler(move |p| sink.lock().unwrap().push(p.text.clone()));
    /// # Ok(()) }
    /// ```
    pub fn set_printf_handler(&self, handler: impl Fn(&KernelPrint) + Send + Sync + 'static) {
        self.shared
            .slots
            .set(Some(PrintfHandler(Box::new(handler))));
    }

    /// Sends kernels' `printf` output to stdout and stderr again.
    pub fn clear_printf_handler(&self) {
        self.shared.slots.set::<PrintfHandler>(None);
    }
}

/// A packet for every wave the GPU can run at once (ROCclr sizes its buffers the same way).
fn packets_for(gpu: &Gpu) -> u64 {
    let info = gpu.info();
    let waves_per_simd = match info.properties.get_or_zero("max_waves_per_simd") {
        0 => 10,
        w => w,
    };
    // `compute_units` already counts every XCC's.
    let cus = u64::from(info.compute_units.max(1));
    (cus * u64::from(info.simd_per_cu.max(1)) * waves_per_simd).max(64)
}

impl HostcallBuffer {
    fn new(gpu: &Gpu, packets: u64) -> Result<HostcallBuffer> {
        let mask = packets.next_power_of_two() - 1;
        let payloads_at = (HEADERS_AT + packets * HEADER_BYTES).next_multiple_of(64);
        let size = payloads_at + packets * PAYLOAD_BYTES;
        // Host memory the GPU reaches with system-scope atomics, as the device library needs.
        let memory = gpu.alloc_with(size, AllocOptions::new(MemoryKind::GttCoherent))?;
        let base = memory
            .as_ptr()
            .expect("the hostcall buffer is GTT, which the CPU maps");
        let doorbell = gpu.kfd().create_signal(1)?;
        let b = HostcallBuffer {
            memory,
            base,
            packets,
            mask,
            payloads_at,
            doorbell,
            gpu_id: gpu.id(),
        };
        let headers = b.memory.gpu_address() + HEADERS_AT;
        let payloads = b.memory.gpu_address() + payloads_at;
        for (i, value) in [headers, payloads, b.doorbell.handle(), packets - 1, 0, mask]
            .into_iter()
            .enumerate()
        {
            b.word(8 * i as u64).store(value, Ordering::Relaxed);
        }
        // Every packet starts free, each linked to the one below it; packet 0 is reached
        // through index 0 with tag 1, as 0 itself means "empty".
        for i in 0..packets {
            let next = match i {
                0 => 0,
                1 => mask + 1,
                i => i - 1,
            };
            b.next(i).store(next, Ordering::Relaxed);
            b.control(i).store(0, Ordering::Relaxed);
        }
        std::sync::atomic::fence(Ordering::Release);
        Ok(b)
    }

    /// The word at `offset` of the buffer.
    fn word(&self, offset: u64) -> &AtomicU64 {
        debug_assert!(offset % 8 == 0 && offset + 8 <= self.memory.size());
        // SAFETY: callers pass 8-aligned offsets inside the buffer (descriptor, headers and
        // payloads as laid out in `new`), whose mapping lives as long as `self`.
        unsafe { &*self.base.add(offset as usize).cast::<AtomicU64>() }
    }

    fn header(&self, packet: u64) -> u64 {
        HEADERS_AT + packet * HEADER_BYTES
    }

    fn next(&self, packet: u64) -> &AtomicU64 {
        self.word(self.header(packet))
    }

    fn control(&self, packet: u64) -> &AtomicU32 {
        let at = self.header(packet) + 20;
        // SAFETY: the control word of a packet's header: 4-aligned, inside the buffer.
        unsafe { &*self.base.add(at as usize).cast::<AtomicU32>() }
    }

    /// Word `i` of `lane`'s slot in `packet`'s payload.
    fn slot(&self, packet: u64, lane: u64, i: u64) -> &AtomicU64 {
        self.word(self.payloads_at + packet * PAYLOAD_BYTES + lane * 64 + i * 8)
    }

    /// The service thread: sleeps until the doorbell moves, answers every ready packet, and
    /// ends when the service is dropped.
    fn serve(&self, stop: &AtomicBool) {
        let stopping = || {
            if stop.load(Ordering::Acquire) {
                Err(Error::ServiceStopped {
                    what: "hostcall service",
                })
            } else {
                Ok(())
            }
        };
        let mut printf = printf::Messages::default();
        let mut seen = 1;
        let mut warned = false;
        loop {
            // Read the doorbell before taking the stack: a packet pushed after the take moves
            // it past this value, so its ring is not lost.
            match self.doorbell.wait_with(
                Condition::Ne(seen),
                Some(Duration::from_secs(1)),
                Duration::ZERO,
                &[],
                &stopping,
            ) {
                Ok(v) => seen = v,
                Err(Error::Timeout { .. }) => {}
                Err(_) if stop.load(Ordering::Acquire) => {}
                // The wait itself failed (the device went away): look at the buffer every
                // 10 ms rather than spin on the failing wait.
                Err(e) => {
                    if !std::mem::replace(&mut warned, true) {
                        log::warn!("kfdrt: hostcall thread: waiting on the doorbell: {e}; polling");
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            self.answer_ready(&mut printf);
            if stop.load(Ordering::Acquire) {
                return;
            }
        }
    }

    /// Takes the ready stack and answers its packets, oldest first.
    fn answer_ready(&self, printf: &mut printf::Messages) {
        let top = self.word(32).swap(0, Ordering::Acquire);
        let mut ready = Vec::new();
        let mut at = top;
        while at != 0 && (ready.len() as u64) < self.packets {
            let packet = at & self.mask;
            if packet >= self.packets {
                log::error!(
                    "kfdrt: hostcall: the ready stack names packet {packet} of {}",
                    self.packets
                );
                break;
            }
            ready.push(packet);
            at = self.next(packet).load(Ordering::Relaxed);
        }
        for &packet in ready.iter().rev() {
            self.answer(packet, printf);
        }
    }

    /// Answers each active lane of `packet`, then hands it back to its wave.
    fn answer(&self, packet: u64, printf: &mut printf::Messages) {
        let header = self.header(packet);
        let lanes = self.word(header + 8).load(Ordering::Relaxed);
        let service = self.word(header + 16).load(Ordering::Relaxed) as u32;
        for lane in (0..64).filter(|l| lanes >> l & 1 == 1) {
            let mut words = [0u64; 8];
            for (i, w) in words.iter_mut().enumerate() {
                *w = self.slot(packet, lane, i as u64).load(Ordering::Relaxed);
            }
            let answer = match service {
                SERVICE_PRINTF => {
                    printf.handle(&words, &|text, to_stderr| self.emit(text, to_stderr))
                }
                other => {
                    refuse_service(other);
                    [0, 0]
                }
            };
            self.slot(packet, lane, 0)
                .store(answer[0], Ordering::Relaxed);
            self.slot(packet, lane, 1)
                .store(answer[1], Ordering::Relaxed);
        }
        self.control(packet)
            .fetch_and(!CONTROL_READY, Ordering::Release);
    }

    /// Passes a finished message to the process's printf handler, or to stdout / stderr.
    fn emit(&self, text: String, to_stderr: bool) {
        let print = KernelPrint {
            gpu_id: self.gpu_id,
            text,
            to_stderr,
        };
        printf::emit(
            self.doorbell.kfd().shared.slots.setting::<PrintfHandler>(),
            print,
        );
    }
}

/// Services kfdrt does not offer get zeros back (the device library then sees a null result),
/// and one warning per kind.
fn refuse_service(service: u32) {
    static WARNED: AtomicU32 = AtomicU32::new(0);
    let bit = 1u32 << service.min(31);
    if WARNED.fetch_or(bit, Ordering::Relaxed) & bit == 0 {
        let what = match service {
            SERVICE_FUNCTION_CALL => "a host function call",
            SERVICE_DEVMEM => "device memory",
            _ => "an unknown service",
        };
        log::warn!(
            "kfdrt: a kernel asked for {what} (hostcall service {service}), which kfdrt does not \
             offer; it gets a null answer"
        );
    }
}
