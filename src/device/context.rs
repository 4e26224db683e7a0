//! [`DeviceContext`]: what an open KFD is and never stops being — the driver, the GPUs (their
//! topology, render nodes and apertures), the ABI version. Everything else (signals, memory
//! pools, doorbells) is built on it and takes it as an argument, so it can be used, and tested,
//! without a whole [`crate::Kfd`].

use crate::error::{Error, Result};
use crate::memory::kind::MemoryKind;
use crate::memory::raw::{GpuAccess, RawAllocation};
use crate::topology::{GpuInfo, Topology};
use kfd_sys::bindings::*;
use kfd_sys::{
    Driver, DriverExt, Errno, Feature, KfdVersion, MIN_MINOR_VERSION, SUPPORTED_MAJOR_VERSION,
};
use std::sync::Arc;

/// One GPU of an open KFD, as bring-up found it.
pub(crate) struct GpuContext {
    pub(crate) info: GpuInfo,
    /// Render-node descriptor passed to `ACQUIRE_VM` (kept open by the driver).
    pub(crate) render_fd: i32,
    pub(crate) apertures: kfd_process_device_apertures,
    /// The GPU timestamp counter's rate, once measured ([`Gpu::timestamp_frequency`]).
    ///
    /// [`Gpu::timestamp_frequency`]: crate::Gpu::timestamp_frequency
    pub(crate) timestamp_hz: std::sync::OnceLock<u64>,
}

/// The driver and the GPUs: immutable after [`DeviceContext::open`].
pub(crate) struct DeviceContext {
    pub(crate) driver: Arc<dyn Driver>,
    #[cfg(feature = "emu")]
    pub(crate) emulator: Option<Arc<kfd_emu::Emulator>>,
    pub(crate) version: KfdVersion,
    pub(crate) topology: Topology,
    pub(crate) gpus: Vec<GpuContext>,
    /// `RUNTIME_ENABLE` succeeded at open: a debugger can attach, and drop disables it.
    pub(crate) runtime_enabled: bool,
    /// The process that opened the device, and its fork generation (see [`super::fork`]).
    pub(crate) owner_pid: u32,
    pub(crate) fork_generation: u64,
}

impl DeviceContext {
    /// Brings a KFD up over `driver`: checks the ABI version, reads the topology and the
    /// apertures, opens each GPU's render node and acquires its VM.
    pub(crate) fn open(
        driver: Arc<dyn Driver>,
        #[cfg(feature = "emu")] emulator: Option<Arc<kfd_emu::Emulator>>,
    ) -> Result<DeviceContext> {
        let fork_generation = super::fork::generation();
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
                drm_fd: u32::try_from(render_fd)
                    .expect("an open file's descriptor is not negative"),
                gpu_id: info.gpu_id,
            };
            // A process has one `kfd_process` however often it opens /dev/kfd, and its VM on
            // a GPU is bound to one render-node file: `kfd_process_device_init_vm` answers
            // EBUSY to an ACQUIRE_VM with any other (`if (pdd->drm_file) return pdd->drm_file
            // == drm_file ? 0 : -EBUSY;`). That is a second runtime in this process.
            match driver.kfd_ioctl(&mut acquire) {
                Ok(_) => {}
                Err(e) if e == Errno::EBUSY => {
                    return Err(Error::DeviceInUse {
                        gpu_id: info.gpu_id,
                    })
                }
                Err(e) => return Err(Error::ioctl(&acquire)(e)),
            }
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
            gpus.push(GpuContext {
                info: info.clone(),
                render_fd,
                apertures: ap,
                timestamp_hz: std::sync::OnceLock::new(),
            });
        }
        log::info!(
            "kfdrt: {} (KFD {}.{}), {} GPU(s)",
            driver.describe(),
            version.major_version,
            version.minor_version,
            gpus.len()
        );
        let version = KfdVersion::new(version.major_version, version.minor_version);
        let runtime_enabled = version.supports(Feature::Debugger) && runtime_enable(&*driver);
        Ok(DeviceContext {
            driver,
            #[cfg(feature = "emu")]
            emulator,
            version,
            topology,
            gpus,
            runtime_enabled,
            owner_pid: std::process::id(),
            fork_generation,
        })
    }

    /// [`Error::ForkedChild`] in a forked child of the process that opened the device.
    /// One atomic load: cheap enough for every submission.
    #[inline]
    pub(crate) fn check_process(&self) -> Result<()> {
        if super::fork::current_generation() != self.fork_generation {
            return Err(Error::ForkedChild {
                parent: self.owner_pid,
                child: std::process::id(),
            });
        }
        Ok(())
    }

    /// Ends what [`runtime_enable`] began (the device is closing).
    pub(crate) fn runtime_disable(&self) {
        if self.runtime_enabled {
            let mut args = kfd_ioctl_runtime_enable_args::default();
            // SAFETY: with the enable bit clear the driver reads no pointer.
            if let Err(e) = unsafe { self.driver.kfd_ioctl_unchecked(&mut args) } {
                log::debug!("kfdrt: AMDKFD_IOC_RUNTIME_ENABLE (disable): {e}");
            }
        }
    }

    /// `Ok` when the driver has `feature`, else [`Error::NeedsKfd`] naming the version it needs.
    pub(crate) fn require(&self, feature: Feature) -> Result<()> {
        if self.version.supports(feature) {
            Ok(())
        } else {
            Err(Error::NeedsKfd {
                feature,
                have: self.version,
            })
        }
    }

    /// Position of the GPU with KFD id `gpu_id`.
    pub(crate) fn gpu_index(&self, gpu_id: u32) -> Option<usize> {
        self.gpus.iter().position(|g| g.info.gpu_id == gpu_id)
    }

    /// The driver.
    pub(crate) fn driver(&self) -> &dyn Driver {
        &*self.driver
    }

    /// Allocates `size` bytes of uncached GTT on the first GPU, writable by the GPUs, and maps it
    /// to every GPU: memory the CPU and all GPUs share (signals, the events page). Returns it
    /// with the ids of the GPUs it is mapped to, which its release needs.
    pub(crate) fn alloc_shared_uncached(&self, size: u64) -> Result<(RawAllocation, Vec<u32>)> {
        let Some(first) = self.gpus.first() else {
            return Err(Error::NoDevice(
                "no GPU to allocate shared memory on".into(),
            ));
        };
        let driver = self.driver();
        let alloc = RawAllocation::new(
            driver,
            first.info.gpu_id,
            first.info.drm_render_minor,
            size,
            MemoryKind::GttUncached,
            GpuAccess::WRITE,
        )?;
        let others: Vec<u32> = self.gpus[1..].iter().map(|g| g.info.gpu_id).collect();
        if !others.is_empty() {
            if let Err(e) = alloc.map_to_gpus(driver, &others) {
                alloc.release(driver, &[first.info.gpu_id]);
                return Err(e);
            }
        }
        let mut mapped = Vec::with_capacity(self.gpus.len());
        mapped.push(first.info.gpu_id);
        mapped.extend(others);
        Ok((alloc, mapped))
    }
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

/// A context over a new two-GPU emulated device, for unit tests of the parts built on it.
#[cfg(all(test, feature = "emu"))]
pub(crate) fn emulated_context() -> (DeviceContext, Arc<kfd_emu::Emulator>) {
    let config = kfd_emu::EmuConfig::new(kfd_emu::Preset::Gfx90a, 2);
    let emu = kfd_emu::Emulator::new(config).expect("emulator");
    let dev = DeviceContext::open(emu.clone(), Some(emu.clone())).expect("bring-up");
    (dev, emu)
}

#[cfg(all(test, feature = "emu"))]
mod tests {
    use super::*;

    #[test]
    fn bring_up_finds_every_gpu_with_its_aperture() {
        let (dev, emu) = emulated_context();
        assert_eq!(dev.gpus.len(), 2);
        let ids: Vec<u32> = dev.gpus.iter().map(|g| g.info.gpu_id).collect();
        assert_eq!(ids, emu.gpu_ids());
        for (i, g) in dev.gpus.iter().enumerate() {
            assert_eq!(dev.gpu_index(g.info.gpu_id), Some(i));
            assert_eq!(g.apertures.gpu_id, g.info.gpu_id);
            assert!(g.apertures.gpuvm_limit > g.apertures.gpuvm_base);
        }
        assert_eq!(dev.gpu_index(0xdead), None);
    }

    #[test]
    fn shared_uncached_memory_is_mapped_to_every_gpu_and_released() {
        let (dev, emu) = emulated_context();
        let before = emu.stats().live_allocations;
        let (alloc, mapped) = dev.alloc_shared_uncached(4096).expect("allocation");
        assert_eq!(mapped, emu.gpu_ids());
        for id in &mapped {
            assert!(
                emu.is_mapped(*id, alloc.va.addr, 4096),
                "not mapped to {id:#x}"
            );
        }
        assert_eq!(emu.stats().live_allocations, before + 1);
        alloc.release(dev.driver(), &mapped);
        assert_eq!(emu.stats().live_allocations, before);
    }
}

/// Tells KFD that the runtime is up (`AMDKFD_IOC_RUNTIME_ENABLE`), as ROCr does before its
/// first queue, and where the list of loaded code objects is, so that a debugger attaching later
/// finds it ([`crate::debug::r_debug`]). Returns whether it succeeded. It fails with EBUSY when
/// another runtime of the process (another open device) already did it, and EEXIST when that
/// one has queues; neither stops kfdrt, which then only cannot be debugged through this device.
fn runtime_enable(driver: &dyn Driver) -> bool {
    let mut args = kfd_ioctl_runtime_enable_args {
        r_debug: crate::debug::r_debug::address(),
        mode_mask: KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK,
        capabilities_mask: 0,
    };
    // SAFETY: `r_debug` is the process's list, which lives as long as the process.
    match unsafe { driver.kfd_ioctl_unchecked(&mut args) } {
        Ok(_) => true,
        Err(e) => {
            log::debug!("kfdrt: AMDKFD_IOC_RUNTIME_ENABLE: {e} (a debugger cannot attach)");
            false
        }
    }
}
