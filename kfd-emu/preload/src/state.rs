//! The emulated system behind the interposer: one [`Emulator`] per process, created on the first
//! touch of an emulated path, and its sysfs files laid out under a private directory.
//!
//! Rather than imitate directory streams and `stat` results, the interposer writes the files
//! user space reads (the KFD topology tree, the render nodes' `/sys/dev/char` entries, amdgpu's
//! module directory) into a temporary directory once, and rewrites paths under the emulated
//! prefixes to point into it. `fopen`, `opendir`/`readdir`, `stat` and `realpath` then behave
//! exactly as on sysfs, through the C library's own code.

use kfd_emu::{EmuConfig, Emulator};
use kfd_sys::{Node, KFD_TOPOLOGY_ROOT};
use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex};

/// DRM's character-device major.
pub(crate) const DRM_MAJOR: u32 = 226;
/// The character-device major the emulated `/dev/kfd` reports (KFD's is dynamic; this is a
/// value from the dynamic range).
pub(crate) const KFD_MAJOR: u32 = 238;

/// The emulated system.
pub(crate) struct System {
    pub(crate) emu: Arc<Emulator>,
    /// The directory holding the emulated sysfs files (`<root>/sys/...`).
    root: PathBuf,
    /// Render-node minors of the emulated GPUs.
    minors: Vec<u32>,
    /// Absolute path prefixes served from `root`.
    prefixes: Vec<String>,
    /// The process that created `root` (only it removes it at exit).
    owner_pid: u32,
}

/// The current process's system (leaked: it lives until the process ends). A forked child
/// creates its own on first use, as KFD gives a child process its own context.
static CURRENT: AtomicPtr<System> = AtomicPtr::new(std::ptr::null_mut());
/// Serialises creation; holds the pid whose creation failed, so it is not retried (and
/// reported) on every call.
static CREATE: Mutex<u32> = Mutex::new(0);

/// Where a path goes.
pub(crate) enum Target {
    /// Not emulated: the real file.
    Real,
    /// An emulated device file.
    Device(Node),
    /// An emulated sysfs file, at this path in the private tree.
    Rewritten(CString),
}

/// This process's system, if one was created (never creates one).
pub(crate) fn current() -> Option<&'static System> {
    let p = CURRENT.load(Ordering::Acquire);
    // SAFETY: a non-null pointer comes from `Box::leak` below and is never freed.
    let sys = unsafe { p.as_ref() }?;
    sys.in_owner_process().then_some(sys)
}

/// The emulated system, created on first use (in each process); `None` if it cannot be (the
/// reason is logged once).
pub(crate) fn system() -> Option<&'static System> {
    if let Some(sys) = current() {
        return Some(sys);
    }
    let mut failed_pid = CREATE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(sys) = current() {
        return Some(sys);
    }
    let pid = std::process::id();
    if *failed_pid == pid {
        return None;
    }
    CREATING.with(|c| c.set(true));
    let created = System::create();
    CREATING.with(|c| c.set(false));
    match created {
        Ok(sys) => {
            let sys: &'static System = Box::leak(Box::new(sys));
            CURRENT.store(sys as *const System as *mut System, Ordering::Release);
            Some(sys)
        }
        Err(e) => {
            log::error!("kfd-emu-preload: no emulated device: {e}");
            *failed_pid = pid;
            None
        }
    }
}

/// Whether the path could name something emulated (checked before creating the system, so that
/// programs that never look at GPU paths never start an emulator).
fn may_be_emulated(path: &[u8]) -> bool {
    const PREFIXES: [&[u8]; 7] = [
        b"/dev/kfd",
        b"/dev/dri/renderD",
        b"/sys/devices/virtual/kfd",
        b"/sys/class/kfd",
        b"/sys/module/amdgpu",
        b"/sys/dev/char/226:",
        b"/sys/class/drm/renderD",
    ];
    PREFIXES.iter().any(|p| path.starts_with(p))
}

thread_local! {
    /// Set while this thread creates the system: files it opens then are real files.
    static CREATING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `path` with repeated slashes and `.` components removed (`//dev/./kfd` is `/dev/kfd`), as
/// the kernel's lookup sees it; `..` is left alone (it depends on symlinks).
fn normalize(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    for part in path.split(|&b| b == b'/') {
        if part.is_empty() || part == b"." {
            continue;
        }
        out.push(b'/');
        out.extend_from_slice(part);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    out
}

/// Classifies an absolute path.
pub(crate) fn classify(path: &CStr) -> Target {
    let raw = path.to_bytes();
    // Cheap test first: most paths a program opens have nothing to do with the GPU.
    let tidy = raw.windows(2).any(|w| w == b"//")
        || raw.windows(3).any(|w| w == b"/./")
        || raw.ends_with(b"/.");
    let normalized;
    let bytes = if tidy {
        normalized = normalize(raw);
        &normalized[..]
    } else {
        raw
    };
    if CREATING.with(|c| c.get()) {
        return Target::Real;
    }
    if !may_be_emulated(bytes) {
        // The emulated GPUs' PCI devices are there from the start, as a real GPU's are from
        // boot: a program that lists PCI devices before any GPU path (hwloc at start-up) finds
        // them too.
        if !under(bytes, PCI_DEVICES.as_bytes()) {
            return Target::Real;
        }
    }
    let Some(sys) = system() else {
        return Target::Real;
    };
    sys.classify(bytes)
}

/// A render-node minor written as the kernel names it: decimal digits, no sign or leading zero.
fn parse_minor(digits: &[u8]) -> Option<u32> {
    let plain = !digits.is_empty()
        && digits.iter().all(u8::is_ascii_digit)
        && (digits[0] != b'0' || digits.len() == 1);
    if !plain {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn under(path: &[u8], prefix: &[u8]) -> bool {
    path.starts_with(prefix) && matches!(path.get(prefix.len()), None | Some(b'/'))
}

/// Number of processors `/proc/cpuinfo` lists, so the CPU node agrees with what libhsakmt
/// parses there.
fn cpuinfo_processors() -> Option<u32> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let n = text
        .lines()
        .filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor"))
        .count();
    u32::try_from(n).ok().filter(|&n| n > 0)
}

impl System {
    /// Whether this is the process that created the emulator. A forked child inherits the
    /// descriptors and a copy of the emulator's memory but none of its threads; KFD likewise
    /// refuses a device file used from another process (EBADF in `kfd_ioctl`).
    pub(crate) fn in_owner_process(&self) -> bool {
        std::process::id() == self.owner_pid
    }

    fn create() -> Result<System, String> {
        crate::logger::init();
        let mut config = EmuConfig::from_env().map_err(|e| e.to_string())?;
        if !config.cgroup_hidden_gpus.is_empty() {
            // The sysfs tree below is plain files: a read cannot answer EPERM as amdkfd's does.
            return Err(format!(
                "{} is not modelled under the preload (only through the driver seam)",
                kfd_emu::HIDDEN_GPUS_ENV
            ));
        }
        if config.platform.page_size != kfd_sys::host_page_size() {
            // The program asks the system for its page size, which the preload cannot change
            // for it alone: a kernel of other pages is modelled only through the driver seam.
            return Err(format!(
                "a page size of {:#x} (not the host's) is not modelled under the preload",
                config.platform.page_size
            ));
        }
        // The runtimes the preload serves ring doorbells without telling the emulator: trap
        // the first store after an idle spell (KFDRT_EMU_TRAP_DOORBELLS=0: poll only).
        config.trap_doorbell_writes =
            std::env::var(kfd_emu::TRAP_DOORBELLS_ENV).map_or(true, |v| v.trim() != "0");
        if let Some(n) = cpuinfo_processors() {
            config.cpu_cores = n;
        }
        let emu = Emulator::new(config).map_err(|e| e.to_string())?;
        let minors: Vec<u32> = (0..emu.gpu_ids().len() as u32)
            .map(|i| kfd_emu::FIRST_RENDER_MINOR + i)
            .collect();
        let root = std::env::temp_dir().join(format!(
            "kfd-emu-preload.{}.{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        ));
        remove_stale_trees();
        let sys = System {
            emu,
            prefixes: Self::prefixes(&minors),
            minors,
            root,
            owner_pid: std::process::id(),
        };
        sys.write_tree()
            .map_err(|e| format!("writing the sysfs tree under {}: {e}", sys.root.display()))?;
        // SAFETY: registers a plain function; atexit has no other requirement.
        unsafe { libc::atexit(remove_tree_at_exit) };
        log::info!(
            "kfd-emu-preload: {} (sysfs under {})",
            kfd_sys::Driver::describe(&*sys.emu),
            sys.root.display()
        );
        Ok(sys)
    }

    fn prefixes(minors: &[u32]) -> Vec<String> {
        let mut p = vec![
            "/sys/devices/virtual/kfd".to_owned(),
            "/sys/class/kfd".to_owned(),
            "/sys/module/amdgpu".to_owned(),
        ];
        for (i, m) in minors.iter().enumerate() {
            p.push(format!("/sys/dev/char/{DRM_MAJOR}:{m}"));
            p.push(format!("/sys/class/drm/renderD{m}"));
            p.push(format!("/sys/bus/pci/devices/{}", pci_slot(i)));
        }
        p
    }

    fn classify(&self, path: &[u8]) -> Target {
        if path == b"/dev/kfd" {
            return Target::Device(Node::Kfd);
        }
        if let Some(rest) = path.strip_prefix(b"/dev/dri/renderD") {
            return match parse_minor(rest) {
                Some(m) if self.minors.contains(&m) => Target::Device(Node::Render(m)),
                _ => Target::Real,
            };
        }
        // The listing of PCI devices: the private tree holds the real ones beside the
        // emulated ones.
        if path.strip_suffix(b"/").unwrap_or(path) == PCI_DEVICES.as_bytes()
            || self.prefixes.iter().any(|p| under(path, p.as_bytes()))
        {
            let mut full = self.root.as_os_str().as_bytes().to_vec();
            full.extend_from_slice(path);
            if let Ok(c) = CString::new(full) {
                return Target::Rewritten(c);
            }
        }
        Target::Real
    }

    fn write_tree(&self) -> std::io::Result<()> {
        let put = |rel: &str, text: &str| -> std::io::Result<()> {
            let p = self.root.join(rel.trim_start_matches('/'));
            if let Some(dir) = p.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(p, text)
        };
        for (path, text) in self.emu.topology_files() {
            put(&format!("{KFD_TOPOLOGY_ROOT}/{path}"), &text)?;
        }
        // sysfs's class link, made relative so the tree can be read from anywhere.
        std::fs::create_dir_all(self.root.join("sys/class/kfd"))?;
        std::os::unix::fs::symlink(
            "../../devices/virtual/kfd/kfd",
            self.root.join("sys/class/kfd/kfd"),
        )?;
        put("/sys/module/amdgpu/initstate", "live\n")?;
        for (name, value) in self.emu.module_parameters() {
            put(&format!("/sys/module/amdgpu/parameters/{name}"), &value)?;
        }
        std::fs::create_dir_all(self.root.join("sys/bus/pci/drivers/amdgpu"))?;
        self.mirror_real_pci_devices()?;
        let config = self.emu.config();
        for (i, &minor) in self.minors.iter().enumerate() {
            let gpu = &config.gpus[i];
            let dev = format!("/sys/dev/char/{DRM_MAJOR}:{minor}/device");
            let slot = pci_slot(i);
            put(&format!("{dev}/vendor"), "0x1002\n")?;
            put(
                &format!("{dev}/device"),
                &format!("{:#06x}\n", gpu.device_id),
            )?;
            put(&format!("{dev}/subsystem_vendor"), "0x1002\n")?;
            put(&format!("{dev}/subsystem_device"), "0x0c34\n")?;
            put(
                &format!("{dev}/revision"),
                &format!("{:#04x}\n", gpu.pci_revision),
            )?;
            put(
                &format!("{dev}/uevent"),
                &format!(
                    "DRIVER=amdgpu\nPCI_CLASS=38000\nPCI_ID=1002:{:04X}\nPCI_SUBSYS_ID=1002:0C34\n\
                     PCI_SLOT_NAME={slot}\n",
                    gpu.device_id
                ),
            )?;
            std::fs::create_dir_all(self.root.join(format!("{}/drm/card{i}", &dev[1..])))?;
            std::fs::create_dir_all(self.root.join(format!("{}/drm/renderD{minor}", &dev[1..])))?;
            // libdrm tells a PCI device by where `subsystem` leads.
            std::os::unix::fs::symlink(
                self.root.join("sys/bus/pci"),
                self.root.join(format!("{}/subsystem", &dev[1..])),
            )?;
            std::os::unix::fs::symlink(
                self.root.join("sys/bus/pci/drivers/amdgpu"),
                self.root.join(format!("{}/driver", &dev[1..])),
            )?;
            write_pci_identity(&self.root, &dev, gpu)?;
            // Where tools that know the bus address look (hwloc, RCCL, libnuma users).
            std::os::unix::fs::symlink(
                self.root.join(&dev[1..]),
                self.root.join(format!("sys/bus/pci/devices/{slot}")),
            )?;
            put(
                &format!("/sys/dev/char/{DRM_MAJOR}:{minor}/dev"),
                &format!("{DRM_MAJOR}:{minor}\n"),
            )?;
            std::fs::create_dir_all(self.root.join(format!("sys/class/drm/renderD{minor}")))?;
            std::os::unix::fs::symlink(
                self.root.join(&dev[1..]),
                self.root
                    .join(format!("sys/class/drm/renderD{minor}/device")),
            )?;
        }
        Ok(())
    }
}

/// The PCI address of GPU `i`: bus 3 + i, as the topology's `location_id` has it.
/// Where the PCI core lists devices by bus address.
const PCI_DEVICES: &str = "/sys/bus/pci/devices";

impl System {
    /// Links the host's own PCI devices into the private `/sys/bus/pci/devices`, so a listing
    /// of it shows them beside the emulated GPUs (a real slot an emulated GPU takes is left
    /// out). Each link leads to the device's real sysfs directory.
    fn mirror_real_pci_devices(&self) -> std::io::Result<()> {
        let dir = self.root.join(&PCI_DEVICES[1..]);
        std::fs::create_dir_all(&dir)?;
        let emulated: Vec<String> = (0..self.minors.len()).map(pci_slot).collect();
        // A host without PCI (some containers) lists nothing but the emulated GPUs.
        let Ok(entries) = std::fs::read_dir(PCI_DEVICES) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if emulated.iter().any(|s| name == s.as_str()) {
                continue;
            }
            if let Ok(target) = std::fs::canonicalize(entry.path()) {
                std::os::unix::fs::symlink(target, dir.join(&name))?;
            }
        }
        Ok(())
    }
}

fn pci_slot(i: usize) -> String {
    format!("0000:{:02x}:00.0", 3 + i)
}

/// What the PCI core shows of the device in sysfs beyond its ids: its class (MI200 and RDNA
/// parts are display controllers, MI300 a processing accelerator), NUMA node and local CPUs
/// (this host's: node 0, or none without NUMA), PCIe link, and the first 64 bytes of its
/// configuration space (ids, revision, class, subsystem), which hwloc reads.
fn write_pci_identity(
    root: &std::path::Path,
    dev: &str,
    gpu: &kfd_emu::GpuParams,
) -> std::io::Result<()> {
    let at = root.join(dev.trim_start_matches('/'));
    std::fs::create_dir_all(&at)?;
    let put = |name: &str, data: &[u8]| std::fs::write(at.join(name), data);
    let class: u32 = match gpu.gfx_target_version {
        v if v >= 110000 => 0x03_0000,
        v if v >= 90400 => 0x12_0000,
        _ => 0x03_8000,
    };
    put("class", format!("{class:#08x}\n").as_bytes())?;
    let node0 = std::path::Path::new("/sys/devices/system/node/node0").exists();
    put("numa_node", if node0 { b"0\n" } else { b"-1\n" })?;
    let cpus = std::fs::read("/sys/devices/system/cpu/online").unwrap_or_else(|_| b"0\n".to_vec());
    put("local_cpulist", &cpus)?;
    for (name, value) in [
        ("current_link_speed", "16.0 GT/s PCIe\n"),
        ("current_link_width", "16\n"),
        ("max_link_speed", "16.0 GT/s PCIe\n"),
        ("max_link_width", "16\n"),
    ] {
        put(name, value.as_bytes())?;
    }
    let mut config = [0u8; 64];
    config[0..2].copy_from_slice(&0x1002u16.to_le_bytes());
    config[2..4].copy_from_slice(&(gpu.device_id as u16).to_le_bytes());
    config[8] = gpu.pci_revision as u8;
    config[9..12].copy_from_slice(&class.to_le_bytes()[..3]);
    config[0x2C..0x2E].copy_from_slice(&0x1002u16.to_le_bytes());
    config[0x2E..0x30].copy_from_slice(&0x0C34u16.to_le_bytes());
    put("config", &config)
}

/// Removes trees left by processes that died without running exit handlers (killed, aborted).
fn remove_stale_trees() {
    // Without a /proc of this PID namespace, liveness cannot be told: leave everything.
    if !std::path::Path::new("/proc/self").exists() {
        return;
    }
    let Ok(dir) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(rest) = name
            .to_str()
            .and_then(|n| n.strip_prefix("kfd-emu-preload."))
        else {
            continue;
        };
        let Some(pid) = rest.split('.').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

extern "C" fn remove_tree_at_exit() {
    // `current` is only this process's own system: a forked child that calls exit() leaves its
    // parent's tree alone (the handler registered by the parent runs in the child too).
    if let Some(sys) = current() {
        let _ = std::fs::remove_dir_all(&sys.root);
    }
}
