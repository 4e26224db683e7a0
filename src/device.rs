//! Opening a KFD (hardware or emulated), bring-up, and per-GPU handles.

use crate::error::{Error, Result};
use crate::event::EventsPage;
use crate::exception::ExceptionWatch;
use crate::memory::suballoc::{SubAllocator, BLOCK_SIZE, DISABLE_ENV};
use crate::queue::doorbell::{DoorbellPages, DOORBELL_PAGES_SIZE};
use crate::signal::SignalPool;
use crate::topology::{GpuInfo, Topology};
use kfd_sys::bindings::*;
use kfd_sys::{DevKfd, Driver, DriverExt, DriverKind, MIN_MINOR_VERSION, SUPPORTED_MAJOR_VERSION};
use std::fmt;
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

/// One GPU's state inside a process.
pub(crate) struct GpuState {
    pub(crate) info: GpuInfo,
    /// Render-node descriptor passed to `ACQUIRE_VM` (kept open by the driver).
    pub(crate) render_fd: i32,
    pub(crate) apertures: kfd_process_device_apertures,
    pub(crate) doorbells: Mutex<Option<DoorbellPages>>,
    /// The MMIO-remap page, for HDP flushes: mapped at the first flush (`None` where the driver
    /// gives none).
    pub(crate) mmio: std::sync::OnceLock<Option<crate::memory::hdp::MmioPage>>,
    /// The queue the code loader invalidates the instruction cache on, while code objects
    /// hold it (a weak handle: the queue owns a `Gpu`, which owns this).
    pub(crate) loader_queue: Mutex<crate::queue::WeakAqlQueue>,
}

/// What every handle of an open KFD shares. Dropped after the last buffer, event and queue.
pub(crate) struct KfdShared {
    pub(crate) driver: Arc<dyn Driver>,
    #[cfg(feature = "emu")]
    pub(crate) emulator: Option<Arc<kfd_emu::Emulator>>,
    pub(crate) version: (u32, u32),
    pub(crate) topology: Topology,
    pub(crate) gpus: Vec<GpuState>,
    pub(crate) events_page: Mutex<Option<EventsPage>>,
    /// The process's memory- and hardware-exception events, which every wait watches.
    pub(crate) exceptions: ExceptionWatch,
    pub(crate) signals: Mutex<SignalPool>,
    /// GPUs (bit per index) whose VRAM the CPU may have written since their last HDP flush.
    pub(crate) hdp_dirty: std::sync::atomic::AtomicU32,
    pub(crate) suballoc: Mutex<SubAllocator>,
    /// Requests below this many bytes are suballocated (0 = never).
    pub(crate) suballoc_threshold: std::sync::atomic::AtomicU64,
}

impl KfdShared {
    pub(crate) fn gpu_index(&self, gpu_id: u32) -> Option<usize> {
        self.gpus.iter().position(|g| g.info.gpu_id == gpu_id)
    }
}

impl Drop for KfdShared {
    fn drop(&mut self) {
        let signals = std::mem::take(self.signals.get_mut().unwrap_or_else(|p| p.into_inner()));
        signals.release(&*self.driver);
        let mut sub = std::mem::take(self.suballoc.get_mut().unwrap_or_else(|p| p.into_inner()));
        sub.release_all(self);
        for gpu in &mut self.gpus {
            if let Some(page) = gpu.mmio.take().flatten() {
                page.release(&*self.driver);
            }
            if let Some(pages) = gpu
                .doorbells
                .get_mut()
                .unwrap_or_else(|p| p.into_inner())
                .take()
            {
                // SAFETY: the doorbell pages were mapped by kfdrt and every queue using them is
                // gone (queues keep the KfdShared alive).
                if let Err(e) = unsafe {
                    self.driver
                        .munmap(pages.addr as *mut _, DOORBELL_PAGES_SIZE as usize)
                } {
                    log::warn!("kfdrt: unmapping doorbells: {e}");
                }
            }
        }
        self.exceptions.release(&*self.driver);
        let page = self
            .events_page
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(page) = page {
            page.release(&*self.driver);
        }
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
            .field("driver", &self.shared.driver.describe())
            .field("version", &self.shared.version)
            .field("gpus", &self.shared.gpus.len())
            .finish()
    }
}

impl Kfd {
    /// Opens the real `/dev/kfd`. Fails with [`Error::NoDevice`] when the machine has none, and
    /// with [`Error::UnsupportedVersion`] when the driver's ABI is too old.
    ///
    /// amdkfd keeps one context per process, for the life of the process: one events page, one
    /// VM per GPU bound to one render-node file. A second, independent bring-up in the same
    /// process would be refused (EINVAL for a second events page, EBUSY for `ACQUIRE_VM` with
    /// another render node file), so every call returns a handle to the same process-wide
    /// device, which stays open until the process exits, as libhsakmt's `hsaKmtOpenKFD` does.
    pub fn open() -> Result<Kfd> {
        static HARDWARE: std::sync::Mutex<Option<Kfd>> = std::sync::Mutex::new(None);
        let mut slot = HARDWARE.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(kfd) = slot.as_ref() {
            return Ok(kfd.clone());
        }
        let dev = DevKfd::open().map_err(|e| {
            Error::NoDevice(format!(
                "cannot open {}: {e} (no AMD GPU with the amdgpu driver? set {DEVICE_ENV}=emu \
                 to use the emulated device)",
                kfd_sys::DEV_KFD_PATH
            ))
        })?;
        let kfd = Kfd::with_driver(Arc::new(dev))?;
        *slot = Some(kfd.clone());
        Ok(kfd)
    }

    /// Opens a new emulated device with `config` (see the `kfd-emu` crate).
    #[cfg(feature = "emu")]
    pub fn emulated(config: kfd_emu::EmuConfig) -> Result<Kfd> {
        let emu = kfd_emu::Emulator::new(config)?;
        let driver: Arc<dyn Driver> = emu.clone();
        Kfd::bring_up(driver, Some(emu))
    }

    /// Opens the device [`DeviceChoice::from_env`] selects. With `auto`, the emulated device is
    /// configured from `KFDRT_EMU_PRESET` / `KFDRT_EMU_GPUS`.
    pub fn from_env() -> Result<Kfd> {
        let choice = DeviceChoice::from_env()?;
        match choice {
            DeviceChoice::Hardware => Kfd::open(),
            DeviceChoice::Auto if DevKfd::present() => Kfd::open(),
            DeviceChoice::Auto | DeviceChoice::Emulated => Kfd::open_emulated_from_env(),
        }
    }

    #[cfg(feature = "emu")]
    fn open_emulated_from_env() -> Result<Kfd> {
        Kfd::emulated(kfd_emu::EmuConfig::from_env()?)
    }

    #[cfg(not(feature = "emu"))]
    fn open_emulated_from_env() -> Result<Kfd> {
        Err(Error::NoDevice(
            "no /dev/kfd and kfdrt was built without the `emu` feature".into(),
        ))
    }

    /// Brings up a KFD over any [`Driver`] implementation.
    pub fn with_driver(driver: Arc<dyn Driver>) -> Result<Kfd> {
        #[cfg(feature = "emu")]
        return Kfd::bring_up(driver, None);
        #[cfg(not(feature = "emu"))]
        return Kfd::bring_up(driver);
    }

    fn bring_up(
        driver: Arc<dyn Driver>,
        #[cfg(feature = "emu")] emulator: Option<Arc<kfd_emu::Emulator>>,
    ) -> Result<Kfd> {
        let mut version = kfd_ioctl_get_version_args::default();
        driver
            .kfd_ioctl(&mut version)
            .map_err(Error::ioctl(&version))?;
        if version.major_version != SUPPORTED_MAJOR_VERSION
            || version.minor_version < MIN_MINOR_VERSION
        {
            return Err(Error::UnsupportedVersion {
                major: version.major_version,
                minor: version.minor_version,
                min_minor: MIN_MINOR_VERSION,
            });
        }
        let mut topology = Topology::read(&*driver)?;
        let apertures = read_apertures(&*driver)?;
        let mut gpus = Vec::with_capacity(topology.gpus.len());
        for info in &mut topology.gpus {
            let render_fd = driver
                .open_render_node(info.drm_render_minor)
                .map_err(|e| {
                    Error::NoDevice(format!(
                        "cannot open render node renderD{} of GPU {:#x}: {e}",
                        info.drm_render_minor, info.gpu_id
                    ))
                })?;
            let mut acquire = kfd_ioctl_acquire_vm_args {
                drm_fd: u32::try_from(render_fd).map_err(|_| {
                    Error::Internal(format!("render node descriptor {render_fd} is negative"))
                })?,
                gpu_id: info.gpu_id,
            };
            driver
                .kfd_ioctl(&mut acquire)
                .map_err(Error::ioctl(&acquire))?;
            if info.vram_bytes > 0 && info.host_visible_vram_bytes == 0 {
                // A small-BAR part: the topology only says its VRAM is "private"; the render
                // node says how much of it the CPU can map.
                info.host_visible_vram_bytes = cpu_visible_vram(&*driver, info.drm_render_minor)?;
            }
            let ap = apertures
                .iter()
                .find(|a| a.gpu_id == info.gpu_id)
                .copied()
                .unwrap_or_default();
            gpus.push(GpuState {
                info: info.clone(),
                render_fd,
                apertures: ap,
                doorbells: Mutex::new(None),
                mmio: std::sync::OnceLock::new(),
                loader_queue: Mutex::default(),
            });
        }
        let exceptions = ExceptionWatch::new(&*driver)?;
        log::info!(
            "kfdrt: {} (KFD {}.{}), {} GPU(s)",
            driver.describe(),
            version.major_version,
            version.minor_version,
            gpus.len()
        );
        Ok(Kfd {
            shared: Arc::new(KfdShared {
                driver,
                #[cfg(feature = "emu")]
                emulator,
                version: (version.major_version, version.minor_version),
                topology,
                gpus,
                events_page: Mutex::new(None),
                exceptions,
                signals: Mutex::new(SignalPool::default()),
                hdp_dirty: std::sync::atomic::AtomicU32::new(0),
                suballoc: Mutex::new(SubAllocator::default()),
                suballoc_threshold: std::sync::atomic::AtomicU64::new(default_threshold()),
            }),
        })
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
        self.shared.driver.kind()
    }

    /// One line saying which device this is, for programs to print.
    pub fn describe(&self) -> String {
        self.shared.driver.describe()
    }

    /// The KFD ABI version `(major, minor)` the driver reported.
    pub fn version(&self) -> (u32, u32) {
        self.shared.version
    }

    /// The topology read at open.
    pub fn topology(&self) -> &Topology {
        &self.shared.topology
    }

    /// The driver behind this KFD (for code that issues its own ioctls).
    pub fn driver(&self) -> &Arc<dyn Driver> {
        &self.shared.driver
    }

    /// The emulated device, when this KFD is one (tests read its counters).
    #[cfg(feature = "emu")]
    pub fn emulator(&self) -> Option<&Arc<kfd_emu::Emulator>> {
        self.shared.emulator.as_ref()
    }

    /// The GPUs, in topology order.
    pub fn gpus(&self) -> Vec<Gpu> {
        (0..self.shared.gpus.len())
            .map(|index| Gpu {
                kfd: self.clone(),
                index,
            })
            .collect()
    }

    /// The `index`-th GPU, or `None`.
    pub fn gpu(&self, index: usize) -> Option<Gpu> {
        (index < self.shared.gpus.len()).then(|| Gpu {
            kfd: self.clone(),
            index,
        })
    }

    /// The GPU with KFD id `gpu_id`, or `None`.
    pub fn gpu_by_id(&self, gpu_id: u32) -> Option<Gpu> {
        self.shared.gpu_index(gpu_id).map(|index| Gpu {
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
            .store(bytes.min(BLOCK_SIZE), std::sync::atomic::Ordering::Relaxed);
    }

    /// The current suballocation threshold.
    pub fn suballocation_threshold(&self) -> u64 {
        self.shared
            .suballoc_threshold
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Returns every empty suballocator block to the driver.
    pub fn trim_memory(&self) {
        let mut sub = self
            .shared
            .suballoc
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        sub.trim(&self.shared);
    }

    /// KFD allocations the suballocator holds.
    pub fn suballocator_blocks(&self) -> usize {
        self.shared
            .suballoc
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .blocks()
    }
}

/// Clock counters sampled together by the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockCounters {
    /// The GPU's free-running counter.
    pub gpu: u64,
    /// CPU clock (CLOCK_MONOTONIC_RAW, ns).
    pub cpu: u64,
    /// System clock (CLOCK_BOOTTIME, ns).
    pub system: u64,
    /// Frequency of the system counter in Hz.
    pub system_freq_hz: u64,
}

/// VRAM bytes the CPU can map on the GPU with render node `minor` (`AMDGPU_INFO_VRAM_GTT`).
fn cpu_visible_vram(driver: &dyn Driver, minor: u32) -> Result<u64> {
    use kfd_sys::drm::*;
    let mut answer = DrmAmdgpuInfoVramGtt::default();
    let mut q = DrmAmdgpuInfo {
        return_pointer: &mut answer as *mut DrmAmdgpuInfoVramGtt as u64,
        return_size: std::mem::size_of::<DrmAmdgpuInfoVramGtt>() as u32,
        query: AMDGPU_INFO_VRAM_GTT,
        args: [0; 4],
    };
    // SAFETY: `q` is a `drm_amdgpu_info` whose return pointer is `answer`, valid for the size
    // given and alive across the call.
    unsafe {
        driver.ioctl(
            kfd_sys::Node::Render(minor),
            DRM_IOCTL_AMDGPU_INFO,
            (&mut q as *mut DrmAmdgpuInfo).cast(),
        )
    }
    .map_err(Error::driver("DRM_IOCTL_AMDGPU_INFO (VRAM_GTT)"))?;
    Ok(answer.vram_cpu_accessible_size)
}

fn read_apertures(driver: &dyn Driver) -> Result<Vec<kfd_process_device_apertures>> {
    let mut query = kfd_ioctl_get_process_apertures_new_args::default();
    // SAFETY: with num_of_nodes 0 the driver only reports the count and writes through no pointer.
    unsafe { driver.kfd_ioctl_unchecked(&mut query) }.map_err(Error::ioctl(&query))?;
    let mut list = vec![kfd_process_device_apertures::default(); query.num_of_nodes as usize];
    if list.is_empty() {
        return Ok(list);
    }
    let mut fill = kfd_ioctl_get_process_apertures_new_args {
        kfd_process_device_apertures_ptr: list.as_mut_ptr() as u64,
        num_of_nodes: query.num_of_nodes,
        pad: 0,
    };
    // SAFETY: the pointer refers to `list`, which has room for `num_of_nodes` entries and lives
    // across the call.
    unsafe { driver.kfd_ioctl_unchecked(&mut fill) }.map_err(Error::ioctl(&fill))?;
    list.truncate(fill.num_of_nodes as usize);
    Ok(list)
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
    pub(crate) fn state(&self) -> &GpuState {
        &self.kfd.shared.gpus[self.index]
    }

    /// Typed topology information.
    pub fn info(&self) -> &GpuInfo {
        &self.state().info
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

    /// Free VRAM the driver reports for this process (`AVAILABLE_MEMORY`).
    pub fn available_memory(&self) -> Result<u64> {
        let mut args = kfd_ioctl_get_available_memory_args {
            gpu_id: self.id(),
            ..Default::default()
        };
        self.kfd
            .shared
            .driver
            .kfd_ioctl(&mut args)
            .map_err(Error::ioctl(&args))?;
        Ok(args.available)
    }
}
