//! Opening a KFD (hardware or emulated) and its handles: [`Kfd`] and [`Gpu`].
//!
//! Layering: [`DeviceContext`] is what bring-up found (driver, GPUs, topology) and never
//! changes; the process-wide pools (signals, suballocator, events, doorbells, HDP) are separate
//! parts of [`KfdShared`] that each take the context as an argument, so none needs the others or
//! a whole `Kfd`.

mod builder;
pub(crate) mod clock;
pub(crate) mod context;
pub(crate) mod fork;
mod health;
mod slots;
mod sync;

pub use builder::KfdBuilder;
pub(crate) use clock::host_ns;
pub use clock::ClockCounters;
#[cfg(all(test, feature = "emu"))]
pub(crate) use context::emulated_context;
pub(crate) use context::{DeviceContext, GpuContext};
use slots::Slots;

use crate::debug::options::DebugOptions;
use crate::error::{Error, Result};
use crate::event::table::EventTable;
use crate::exception::ExceptionWatch;
use crate::memory::hdp::HdpFlusher;
use crate::memory::shards::ShardedSubAllocator;
use crate::memory::suballoc::{BLOCK_SIZE, DISABLE_ENV};
use crate::queue::doorbell::DoorbellTable;
use crate::signal::pool::SignalPool;
use crate::topology::{GpuInfo, PeerAccess, Topology};
use kfd_sys::bindings::*;
use kfd_sys::{Driver, DriverExt, DriverKind, Feature, KfdVersion};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The environment variable that selects the device: `auto` (default), `hw` or `emu`.
pub const DEVICE_ENV: &str = "KFDRT_DEVICE";

/// Which device [`Kfd::from_env`] should open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceChoice {
    /// `/dev/kfd` when present, else the emulated device.
    Auto,
    /// `/dev/kfd` only.
    Hardware,
    /// The emulated device only.
    Emulated,
}

impl DeviceChoice {
    /// Reads [`DEVICE_ENV`]; unset or empty means [`DeviceChoice::Auto`].
    pub fn from_env() -> Result<DeviceChoice> {
        let value = std::env::var(DEVICE_ENV).unwrap_or_default();
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(DeviceChoice::Auto),
            "hw" | "hardware" | "kfd" => Ok(DeviceChoice::Hardware),
            "emu" | "emulated" | "emulator" => Ok(DeviceChoice::Emulated),
            _ => Err(Error::Environment {
                var: DEVICE_ENV,
                value,
                reason: "expected auto, hw or emu".into(),
            }),
        }
    }
}

/// What every handle of an open KFD shares: the device and the process-wide state built on it.
/// Dropped after the last buffer, event and queue, releasing that state in an order where
/// nothing is freed before what uses it.
pub(crate) struct KfdShared {
    pub(crate) dev: DeviceContext,
    pub(crate) events: EventTable,
    /// The process's memory- and hardware-exception events, which every wait watches.
    pub(crate) exceptions: ExceptionWatch,
    pub(crate) signals: Mutex<SignalPool>,
    pub(crate) suballoc: ShardedSubAllocator<Kfd>,
    /// Requests below this many bytes are suballocated (0 = never).
    pub(crate) suballoc_threshold: AtomicU64,
    pub(crate) doorbells: DoorbellTable,
    pub(crate) hdp: HdpFlusher,
    /// What the layers above keep per device: per GPU, the code loader's queue, the HDP-flush
    /// queue, the trap handler and the hostcall service while something holds them, kfdrt as
    /// its own debugger, and where kernels' `printf` output goes.
    pub(crate) slots: Slots,
    /// The debugging switches, fixed at open.
    pub(crate) debug: DebugOptions,
    /// The live queues and kernel names, for hang and fault reports.
    pub(crate) reports: crate::debug::registry::Registry<KfdShared>,
    /// The timeline and dependency-graph recorders, when those switches are on.
    pub(crate) recorder: Option<crate::debug::recorder::Recorder>,
    /// Each GPU's clock counters at open (to put GPU timestamps on the host clock).
    pub(crate) clocks_at_open: Vec<(u32, ClockCounters)>,
    /// With `KFDRT_VALIDATE` or `KFDRT_CAPTURE`, where the device's buffers are.
    pub(crate) buffers: Option<crate::debug::address_map::AddressMap>,
}

impl KfdShared {
    fn new(dev: DeviceContext, debug: DebugOptions) -> Result<KfdShared> {
        let events = EventTable::default();
        let exceptions = ExceptionWatch::new(&dev, &events)?;
        let gpus = dev.gpus.len();
        Ok(KfdShared {
            events,
            exceptions,
            signals: Mutex::new(SignalPool::default()),
            suballoc: ShardedSubAllocator::default(),
            suballoc_threshold: AtomicU64::new(default_threshold()),
            doorbells: DoorbellTable::new(gpus),
            hdp: HdpFlusher::new(gpus),
            slots: Slots::default(),
            recorder: crate::debug::recorder::Recorder::new(&debug),
            clocks_at_open: Vec::new(),
            buffers: (debug.validate || debug.capture.is_some()).then(Default::default),
            debug,
            reports: Default::default(),
            dev,
        })
    }

    /// Each GPU's clock counters now.
    fn sample_clocks(&self) -> Vec<(u32, ClockCounters)> {
        self.dev
            .gpus
            .iter()
            .filter_map(|g| {
                let mut args = kfd_ioctl_get_clock_counters_args {
                    gpu_id: g.info.gpu_id,
                    ..Default::default()
                };
                self.dev.driver.kfd_ioctl(&mut args).ok()?;
                Some((
                    g.info.gpu_id,
                    ClockCounters {
                        gpu: args.gpu_clock_counter,
                        cpu: args.cpu_clock_counter,
                        system: args.system_clock_counter,
                        system_freq_hz: args.system_clock_freq,
                    },
                ))
            })
            .collect()
    }

    /// Writes the timeline and dependency graph, if recording.
    pub(crate) fn flush_recordings(&self) {
        let Some(r) = &self.recorder else { return };
        let now = self.sample_clocks();
        let clocks: Vec<_> = self
            .clocks_at_open
            .iter()
            .filter_map(|(g, a)| now.iter().find(|(h, _)| h == g).map(|(_, b)| (*g, *a, *b)))
            .collect();
        r.flush(&clocks);
    }

    /// Notes that the CPU may have written VRAM of the GPU with KFD id `gpu_id`.
    pub(crate) fn cpu_wrote_vram(&self, gpu_id: u32) {
        if let Some(i) = self.dev.gpu_index(gpu_id) {
            self.hdp.cpu_wrote_vram(i);
        }
    }

    /// Flushes the HDP of the GPUs whose VRAM the CPU may have written: before each submission.
    /// Returns those (a bit per index) with no MMIO-remap page, to flush through a queue.
    #[inline]
    pub(crate) fn flush_hdp_if_written(&self) -> u32 {
        self.hdp.flush_if_written(&self.dev)
    }

    /// Marks the GPUs in `gpus` (a bit per index) written again: their flush did not happen.
    pub(crate) fn hdp_still_written(&self, gpus: u32) {
        for i in 0..self.dev.gpus.len().min(32) {
            if gpus & (1 << i) != 0 {
                self.hdp.cpu_wrote_vram(i);
            }
        }
    }
}

impl Drop for KfdShared {
    fn drop(&mut self) {
        self.flush_recordings();
        // Every buffer, signal and queue is gone (each keeps this alive): give the pools back,
        // then the mappings, then the events and the events page they may point into.
        let driver = &*self.dev.driver;
        let signals = std::mem::take(self.signals.get_mut().unwrap_or_else(|p| p.into_inner()));
        signals.release(driver);
        self.suballoc.release_all(&self.dev);
        self.hdp.release(driver);
        self.doorbells.release(driver);
        self.exceptions.release(driver);
        self.events.release(driver);
        self.dev.runtime_disable();
    }
}

/// An open KFD: the process's connection to the driver (real or emulated) and its GPUs.
///
/// Cheap to clone; buffers, events and queues keep it alive.
#[derive(Clone)]
pub struct Kfd {
    pub(crate) shared: Arc<KfdShared>,
}

impl fmt::Debug for Kfd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kfd")
            .field("driver", &self.shared.dev.driver.describe())
            .field("version", &self.shared.dev.version)
            .field("gpus", &self.shared.dev.gpus.len())
            .finish()
    }
}

impl Kfd {
    /// A new emulated device with `config` (see [`KfdBuilder::emulated`]).
    #[cfg(feature = "emu")]
    pub(super) fn bring_up_emulated(
        config: kfd_emu::EmuConfig,
        debug: DebugOptions,
    ) -> Result<Kfd> {
        let emu = kfd_emu::Emulator::new(config)?;
        let driver: Arc<dyn Driver> = emu.clone();
        Kfd::bring_up(driver, Some(emu), debug)
    }

    /// The device over `driver` (see [`KfdBuilder::driver`]).
    pub(super) fn bring_up_driver(driver: Arc<dyn Driver>, debug: DebugOptions) -> Result<Kfd> {
        #[cfg(feature = "emu")]
        return Kfd::bring_up(driver, None, debug);
        #[cfg(not(feature = "emu"))]
        return Kfd::bring_up(driver, debug);
    }

    fn bring_up(
        driver: Arc<dyn Driver>,
        #[cfg(feature = "emu")] emulator: Option<Arc<kfd_emu::Emulator>>,
        debug: DebugOptions,
    ) -> Result<Kfd> {
        debug.apply_at_open()?;
        #[cfg(feature = "emu")]
        let dev = DeviceContext::open(driver, emulator)?;
        #[cfg(not(feature = "emu"))]
        let dev = DeviceContext::open(driver)?;
        let mut shared = KfdShared::new(dev, debug)?;
        if shared.recorder.is_some() {
            shared.clocks_at_open = shared.sample_clocks();
        }
        let shared = Arc::new(shared);
        #[cfg(feature = "emu")]
        if let Some(emu) = shared.dev.emulator.as_ref().filter(|e| e.sanitizing()) {
            // The sanitizer's findings name source lines from the code objects loaded here
            // (weak: the emulator must not keep the device open).
            let weak = Arc::downgrade(&shared);
            emu.set_symbolizer(Some(Arc::new(move |pc| {
                weak.upgrade()
                    .and_then(|s| s.reports.sources.locate(pc))
                    .unwrap_or_default()
            })));
        }
        Ok(Kfd { shared })
    }

    /// The emulator when its sanitizer runs (kfdrt then registers every buffer with it).
    #[cfg(feature = "emu")]
    pub(crate) fn sanitizing_emulator(&self) -> Option<&Arc<kfd_emu::Emulator>> {
        self.shared.dev.emulator.as_ref().filter(|e| e.sanitizing())
    }

    /// The debugging switches this device was opened with.
    pub fn debug_options(&self) -> &DebugOptions {
        &self.shared.debug
    }

    /// Writes the `KFDRT_TRACE` timeline and the `KFDRT_DEPGRAPH` graph now (they are also
    /// written when the device drops; a program that exits without dropping it calls this).
    pub fn flush_debug_output(&self) {
        self.shared.flush_recordings();
    }

    /// Refuses an object of another device: `Err(ForeignObject { what })` unless `other` is
    /// this device.
    pub(crate) fn same_device(&self, other: &Kfd, what: &'static str) -> Result<()> {
        if Arc::ptr_eq(&self.shared, &other.shared) {
            Ok(())
        } else {
            Err(Error::ForeignObject { what })
        }
    }

    /// Hardware or emulated.
    pub fn kind(&self) -> DriverKind {
        self.shared.dev.driver.kind()
    }

    /// One line saying which device this is, for programs to print.
    pub fn describe(&self) -> String {
        self.shared.dev.driver.describe()
    }

    /// The KFD ABI version the driver reported, which says what it can do
    /// ([`KfdVersion::supports`]). kfdrt checks it before a newer request and fails with
    /// [`Error::NeedsKfd`] rather than pass on the driver's errno.
    pub fn kfd_version(&self) -> KfdVersion {
        self.shared.dev.version
    }

    /// Whether the driver has `feature`.
    pub fn supports(&self, feature: Feature) -> bool {
        self.shared.dev.version.supports(feature)
    }

    /// The topology read at open.
    pub fn topology(&self) -> &Topology {
        &self.shared.dev.topology
    }

    /// The driver behind this KFD (for code that issues its own ioctls).
    pub fn driver(&self) -> &Arc<dyn Driver> {
        &self.shared.dev.driver
    }

    /// The emulated device, when this KFD is one (tests read its counters).
    #[cfg(feature = "emu")]
    pub fn emulator(&self) -> Option<&Arc<kfd_emu::Emulator>> {
        self.shared.dev.emulator.as_ref()
    }

    /// The GPUs, in topology order.
    pub fn gpus(&self) -> Vec<Gpu> {
        (0..self.shared.dev.gpus.len())
            .map(|index| Gpu {
                kfd: self.clone(),
                index,
            })
            .collect()
    }

    /// The `index`-th GPU, or `None`.
    pub fn gpu(&self, index: usize) -> Option<Gpu> {
        (index < self.shared.dev.gpus.len()).then(|| Gpu {
            kfd: self.clone(),
            index,
        })
    }

    /// The GPU with KFD id `gpu_id`, or `None`.
    pub fn gpu_by_id(&self, gpu_id: u32) -> Option<Gpu> {
        self.shared.dev.gpu_index(gpu_id).map(|index| Gpu {
            kfd: self.clone(),
            index,
        })
    }

    /// GPU and CPU timestamps taken together (`GET_CLOCK_COUNTERS`) on `gpu`.
    pub fn clock_counters(&self, gpu: &Gpu) -> Result<ClockCounters> {
        let mut args = kfd_ioctl_get_clock_counters_args {
            gpu_id: gpu.id(),
            ..Default::default()
        };
        self.shared
            .dev
            .driver
            .kfd_ioctl(&mut args)
            .map_err(Error::ioctl(&args))?;
        Ok(ClockCounters {
            gpu: args.gpu_clock_counter,
            cpu: args.cpu_clock_counter,
            system: args.system_clock_counter,
            system_freq_hz: args.system_clock_freq,
        })
    }
}

fn default_threshold() -> u64 {
    match std::env::var(DISABLE_ENV) {
        Ok(v) if v.trim() == "1" => 0,
        _ => BLOCK_SIZE,
    }
}

impl Kfd {
    /// Sets the size below which allocations are carved from shared 2 MiB blocks (at most
    /// 2 MiB; 0 turns suballocation off for later allocations).
    pub fn set_suballocation_threshold(&self, bytes: u64) {
        self.shared
            .suballoc_threshold
            .store(bytes.min(BLOCK_SIZE), Ordering::Relaxed);
    }

    /// The current suballocation threshold.
    pub fn suballocation_threshold(&self) -> u64 {
        self.shared.suballoc_threshold.load(Ordering::Relaxed)
    }

    /// Returns every empty suballocator block to the driver.
    pub fn trim_memory(&self) {
        self.shared.suballoc.trim(&self.shared.dev);
    }

    /// KFD allocations the suballocator holds.
    pub fn suballocator_blocks(&self) -> usize {
        self.shared.suballoc.blocks()
    }
}

/// A GPU of an open [`Kfd`]. Cheap to clone.
#[derive(Clone)]
pub struct Gpu {
    pub(crate) kfd: Kfd,
    pub(crate) index: usize,
}

impl fmt::Debug for Gpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = self.info();
        write!(
            f,
            "Gpu({}, id {:#x}, node {})",
            i.gfx_target, i.gpu_id, i.node
        )
    }
}

impl PartialEq for Gpu {
    fn eq(&self, other: &Gpu) -> bool {
        Arc::ptr_eq(&self.kfd.shared, &other.kfd.shared) && self.index == other.index
    }
}

impl Eq for Gpu {}

impl Gpu {
    pub(crate) fn state(&self) -> &GpuContext {
        &self.kfd.shared.dev.gpus[self.index]
    }

    /// Typed topology information.
    pub fn info(&self) -> &GpuInfo {
        &self.state().info
    }

    /// How this GPU reaches `owner`'s VRAM, as the topology says
    /// ([`GpuInfo::vram_access_from`]): over XGMI, PCIe peer-to-peer, or not at all (then
    /// [`crate::Buffer::map_to`] refuses `owner`'s VRAM here).
    pub fn peer_access(&self, owner: &Gpu) -> PeerAccess {
        owner.info().vram_access_from(self.info())
    }

    /// KFD's id for this GPU.
    pub fn id(&self) -> u32 {
        self.info().gpu_id
    }

    /// Position among the KFD's GPUs.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The KFD this GPU belongs to.
    pub fn kfd(&self) -> &Kfd {
        &self.kfd
    }

    /// The render-node descriptor the VM was acquired with (for DRM ioctls of this GPU).
    pub fn render_fd(&self) -> i32 {
        self.state().render_fd
    }

    /// The GPUVM aperture `(base, limit)` the driver reported for this process.
    pub fn gpuvm_aperture(&self) -> (u64, u64) {
        let a = &self.state().apertures;
        (a.gpuvm_base, a.gpuvm_limit)
    }

    /// Free VRAM the driver reports for this process (`AVAILABLE_MEMORY`, KFD 1.9).
    pub fn available_memory(&self) -> Result<u64> {
        self.kfd.shared.dev.require(Feature::AvailableMemory)?;
        let mut args = kfd_ioctl_get_available_memory_args {
            gpu_id: self.id(),
            ..Default::default()
        };
        self.kfd
            .shared
            .dev
            .driver
            .kfd_ioctl(&mut args)
            .map_err(Error::ioctl(&args))?;
        Ok(args.available)
    }
}
