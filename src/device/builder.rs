//! [`KfdBuilder`]: which device to open ([`DEVICE_ENV`]'s choice, `/dev/kfd`, an emulated device or
//! any [`Driver`]) and with which debugging switches.

use super::{DeviceChoice, Kfd, DEVICE_ENV};
use crate::debug::options::DebugOptions;
use crate::error::{Error, Result};
use kfd_sys::{DevKfd, Driver};
use std::sync::Arc;

/// What a [`KfdBuilder`] opens.
#[derive(Clone)]
enum Device {
    /// What [`DEVICE_ENV`] says (`auto`: `/dev/kfd` when present, else the emulated device).
    FromEnv,
    /// `/dev/kfd`.
    Hardware,
    /// Any driver.
    Driver(Arc<dyn Driver>),
    /// A new emulated device.
    #[cfg(feature = "emu")]
    Emulated(kfd_emu::EmuConfig),
}

/// How to open a KFD device: start from [`Kfd::builder`], say which device (by default the one
/// [`DEVICE_ENV`] selects) and which debugging switches (by default the environment's, see
/// [`DebugOptions::from_env`]), then [`open`](KfdBuilder::open).
///
/// ```
/// # fn main() -> kfdrt::Result<()> {
/// use kfdrt::{DebugOptions, Kfd};
/// // The device KFDRT_DEVICE selects, with no debugging switches whatever the environment says.
/// let kfd = Kfd::builder().debug(DebugOptions::default()).open()?;
/// println!("{}", kfd.describe());
/// # Ok(())
/// # }
/// ```
///
/// amdkfd keeps one context per process, for the life of the process: one events page, one VM
/// per GPU bound to one render-node file. A second, independent bring-up of `/dev/kfd` in the
/// same process would be refused, so every open of the hardware returns a handle to the same
/// process-wide device, which stays open until the process exits (as libhsakmt's
/// `hsaKmtOpenKFD` does), with the debugging switches of its first open. Each emulated device
/// is new.
#[derive(Clone)]
#[must_use]
pub struct KfdBuilder {
    device: Device,
    debug: Option<DebugOptions>,
}

impl std::fmt::Debug for KfdBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let device = match &self.device {
            Device::FromEnv => "from the environment",
            Device::Hardware => "/dev/kfd",
            Device::Driver(_) => "a driver",
            #[cfg(feature = "emu")]
            Device::Emulated(_) => "emulated",
        };
        f.debug_struct("KfdBuilder")
            .field("device", &device)
            .field("debug", &self.debug)
            .finish()
    }
}

impl Kfd {
    /// A builder that opens the device [`DEVICE_ENV`] selects with the environment's debugging
    /// switches, until told otherwise.
    pub fn builder() -> KfdBuilder {
        KfdBuilder {
            device: Device::FromEnv,
            debug: None,
        }
    }

    /// Opens the device [`DeviceChoice::from_env`] selects, with the debugging switches of the
    /// environment: `Kfd::builder().open()`. With `auto` and no `/dev/kfd`, the emulated device
    /// is configured from `KFDRT_EMU_PRESET` / `KFDRT_EMU_GPUS` (with the `emu` feature;
    /// without it that is [`Error::NoDevice`]).
    pub fn from_env() -> Result<Kfd> {
        Kfd::builder().open()
    }
}

impl KfdBuilder {
    /// Opens the real `/dev/kfd`, whatever the environment says. [`open`](KfdBuilder::open) then
    /// fails with [`Error::NoDevice`] when the machine has none, and with
    /// [`Error::UnsupportedVersion`] when the driver's ABI is too old.
    pub fn hardware(mut self) -> Self {
        self.device = Device::Hardware;
        self
    }

    /// Opens a new emulated device with `config` (see the `kfd-emu` crate).
    #[cfg(feature = "emu")]
    pub fn emulated(mut self, config: kfd_emu::EmuConfig) -> Self {
        self.device = Device::Emulated(config);
        self
    }

    /// Brings the device up over `driver`, any [`Driver`] implementation.
    pub fn driver(mut self, driver: Arc<dyn Driver>) -> Self {
        self.device = Device::Driver(driver);
        self
    }

    /// Uses the debugging switches `debug` (the environment's are then not read).
    pub fn debug(mut self, debug: DebugOptions) -> Self {
        self.debug = Some(debug);
        self
    }

    /// Opens the device.
    pub fn open(self) -> Result<Kfd> {
        let debug = match self.debug {
            Some(d) => d,
            None => DebugOptions::from_env()?,
        };
        match self.device {
            Device::FromEnv => match DeviceChoice::from_env()? {
                DeviceChoice::Hardware => open_hardware(debug),
                DeviceChoice::Auto if DevKfd::present() => open_hardware(debug),
                DeviceChoice::Auto | DeviceChoice::Emulated => open_emulated_from_env(debug),
            },
            Device::Hardware => open_hardware(debug),
            Device::Driver(driver) => Kfd::bring_up_driver(driver, debug),
            #[cfg(feature = "emu")]
            Device::Emulated(config) => Kfd::bring_up_emulated(config, debug),
        }
    }
}

/// The process's one `/dev/kfd` device, opened with `debug` the first time.
fn open_hardware(debug: DebugOptions) -> Result<Kfd> {
    static HARDWARE: std::sync::Mutex<Option<Kfd>> = std::sync::Mutex::new(None);
    let mut slot = HARDWARE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(kfd) = slot.as_ref() {
        return Ok(kfd.clone());
    }
    let dev = DevKfd::open().map_err(|e| {
        Error::NoDevice(format!(
            "cannot open {}: {e} (no AMD GPU with the amdgpu driver? set {DEVICE_ENV}=emu to \
             use the emulated device)",
            kfd_sys::DEV_KFD_PATH
        ))
    })?;
    let kfd = Kfd::bring_up_driver(Arc::new(dev), debug)?;
    *slot = Some(kfd.clone());
    Ok(kfd)
}

#[cfg(feature = "emu")]
fn open_emulated_from_env(debug: DebugOptions) -> Result<Kfd> {
    Kfd::bring_up_emulated(kfd_emu::EmuConfig::from_env()?, debug)
}

#[cfg(not(feature = "emu"))]
fn open_emulated_from_env(_debug: DebugOptions) -> Result<Kfd> {
    Err(Error::NoDevice(format!(
        "no {} and kfdrt was built without the `emu` feature",
        kfd_sys::DEV_KFD_PATH
    )))
}
