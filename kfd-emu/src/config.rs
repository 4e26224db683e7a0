//! Emulated device configuration: GPU presets modelled on real parts, and the knobs of the
//! packet processors.

use kfd_sys::Errno;
use std::fmt;
use std::str::FromStr;

/// Why an emulator could not be created.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// The configuration is invalid.
    #[error("invalid emulator configuration: {0}")]
    Config(String),
    /// The host refused a resource (memory, threads).
    #[error("host resource: {0}")]
    Host(Errno),
}

/// A GPU the emulator can model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Preset {
    /// AMD Instinct MI210 (gfx90a, CDNA2).
    Gfx90a,
    /// AMD Instinct MI300X (gfx942, CDNA3, 8 XCCs), in SPX mode (one partition of all XCCs)
    /// and NPS1 memory.
    Gfx942,
    /// One compute partition of an MI300X in DPX mode (NPS1 memory): 4 XCCs per KFD node, half
    /// the CUs and VRAM (`KFD_XCP_MEMORY_SIZE`), and of the 16 SDMA engines 2 for PCIe and 6
    /// for XGMI (`kfd_get_num_sdma_engines`). `KFDRT_EMU_GPUS=2` is a whole MI300X.
    Gfx942Dpx,
    /// One compute partition of an MI300X in QPX mode: 2 XCCs per node, a quarter of the CUs,
    /// VRAM and SDMA engines (2 PCIe, 2 XGMI). `KFDRT_EMU_GPUS=4` is a whole MI300X.
    Gfx942Qpx,
    /// One compute partition of an MI300X in CPX mode (NPS1 memory): each XCC is a KFD node of
    /// its own, with 38 CUs, an eighth of the VRAM (`KFD_XCP_MEMORY_SIZE`) and of the SDMA
    /// engines (`kfd_get_num_sdma_engines`: 2, none left for XGMI). `KFDRT_EMU_GPUS=8` is a
    /// whole MI300X so partitioned.
    Gfx942Cpx,
    /// A QPX partition of an MI300X in NPS4 memory mode (`gfx942-qpx-nps4`). KFD reports what
    /// it reports in NPS1 (`amdgpu_amdkfd_xcp_memory_size`: the memory partition's size over
    /// the compute partitions sharing it, 48 GiB / 1 = 192 GiB / 4; `num_xcc`, io-links and
    /// proximity unchanged): only where the VRAM is placed differs (the node's own quarter,
    /// `amdgpu_bo_placement_from_domain`), which the node's cap keeps from mattering.
    Gfx942QpxNps4,
    /// A CPX partition of an MI300X in NPS4 memory mode (`gfx942-cpx-nps4`): two nodes share
    /// each quarter of the VRAM, 24 GiB each, as in NPS1 (see [`Preset::Gfx942QpxNps4`]).
    Gfx942CpxNps4,
    /// AMD Radeon RX 7900 XTX (gfx1100, RDNA3, wave32, small BAR).
    Gfx1100,
}

impl FromStr for Preset {
    type Err = EmuError;
    fn from_str(s: &str) -> Result<Self, EmuError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "gfx90a" | "mi210" => Ok(Preset::Gfx90a),
            "gfx942" | "mi300x" => Ok(Preset::Gfx942),
            "gfx942-dpx" | "mi300x-dpx" => Ok(Preset::Gfx942Dpx),
            "gfx942-qpx" | "mi300x-qpx" => Ok(Preset::Gfx942Qpx),
            "gfx942-cpx" | "mi300x-cpx" => Ok(Preset::Gfx942Cpx),
            "gfx942-qpx-nps4" | "mi300x-qpx-nps4" => Ok(Preset::Gfx942QpxNps4),
            "gfx942-cpx-nps4" | "mi300x-cpx-nps4" => Ok(Preset::Gfx942CpxNps4),
            "gfx1100" | "rx7900xtx" => Ok(Preset::Gfx1100),
            other => Err(EmuError::Config(format!(
                "unknown preset {other:?} (gfx90a, gfx942, gfx942-dpx, gfx942-qpx, gfx942-cpx, \
                 gfx942-qpx-nps4, gfx942-cpx-nps4, gfx1100)"
            ))),
        }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Preset::Gfx90a => "gfx90a",
            Preset::Gfx942 => "gfx942",
            Preset::Gfx942Dpx => "gfx942-dpx",
            Preset::Gfx942Qpx => "gfx942-qpx",
            Preset::Gfx942Cpx => "gfx942-cpx",
            Preset::Gfx942QpxNps4 => "gfx942-qpx-nps4",
            Preset::Gfx942CpxNps4 => "gfx942-cpx-nps4",
            Preset::Gfx1100 => "gfx1100",
        })
    }
}

/// What the topology reports for one emulated GPU. Values follow the real parts' KFD topology
/// where public sources give them; counts that vary by board are representative.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuParams {
    /// Marketing name, for logs.
    pub name: String,
    /// `gfx_target_version` (major*10000 + minor*100 + stepping).
    pub gfx_target_version: u32,
    /// PCI device id.
    pub device_id: u32,
    /// PCI revision (with the device id, names the product in libdrm's `amdgpu.ids`).
    pub pci_revision: u32,
    /// Compute units (all XCCs).
    pub compute_units: u32,
    /// SIMDs per CU.
    pub simd_per_cu: u32,
    /// Wavefront size.
    pub wave_size: u32,
    /// LDS per work-group in KiB.
    pub lds_size_kb: u32,
    /// VRAM bytes.
    pub vram_bytes: u64,
    /// VRAM the host can map (equal to `vram_bytes` with large BAR).
    pub host_visible_vram_bytes: u64,
    /// SDMA engines for PCIe.
    pub sdma_engines: u32,
    /// SDMA engines for XGMI.
    pub sdma_xgmi_engines: u32,
    /// Queue slots per SDMA engine.
    pub sdma_queues_per_engine: u32,
    /// Accelerator complexes.
    pub num_xcc: u32,
    /// Waves per SIMD.
    pub max_waves_per_simd: u32,
    /// Shader arrays (all XCCs).
    pub array_count: u32,
    /// Shader arrays per shader engine.
    pub simd_arrays_per_engine: u32,
    /// CUs per shader array.
    pub cu_per_simd_array: u32,
    /// ME firmware version.
    pub fw_version: u32,
    /// SDMA firmware version.
    pub sdma_fw_version: u32,
    /// Maximum engine clock, MHz.
    pub max_engine_clk_mhz: u32,
    /// Frequency of the GPU timestamp counter.
    pub gpu_clock_hz: u64,
    /// Hardware compute queues KFD may use.
    pub num_cp_queues: u32,
}

const GIB: u64 = 1 << 30;

/// One of `partitions` compute partitions of an MI300X: its share of the XCCs, CUs and shader
/// arrays, of the VRAM (`KFD_XCP_MEMORY_SIZE`: the memory partition's size over the partitions
/// sharing it, the same share in NPS1 and NPS4), and of the 16 SDMA engines (`kfd_get_num_sdma_engines`: at most
/// 2 for PCIe, the rest of the share for XGMI).
fn mi300x_partition(partitions: u32, mode: &str) -> GpuParams {
    let spx = Preset::Gfx942.params();
    let engines = (spx.sdma_engines + spx.sdma_xgmi_engines) / partitions;
    GpuParams {
        name: format!("AMD Instinct MI300X, {mode} partition (emulated)"),
        compute_units: spx.compute_units / partitions,
        vram_bytes: spx.vram_bytes / u64::from(partitions),
        host_visible_vram_bytes: spx.host_visible_vram_bytes / u64::from(partitions),
        sdma_engines: engines.min(2),
        sdma_xgmi_engines: engines - engines.min(2),
        num_xcc: spx.num_xcc / partitions,
        array_count: spx.array_count / partitions,
        ..spx
    }
}

impl GpuParams {
    /// Shader engines of one XCC (what GFX11's `COMPUTE_TMPRING_SIZE.WAVES` counts per).
    pub fn shader_engines_per_xcc(&self) -> u32 {
        self.array_count / self.simd_arrays_per_engine.max(1) / self.num_xcc.max(1)
    }

    /// The EOP and CWSR sizes KFD derives from this node's topology on a kernel of
    /// `page_size` pages, which `CREATE_QUEUE` checks.
    pub fn queue_area_sizes(&self, page_size: u64) -> Option<kfd_sys::queue_sizes::QueueAreaSizes> {
        kfd_sys::queue_sizes::QueueAreaSizes::for_node_with_pages(
            &kfd_sys::queue_sizes::NodeShape {
                gfx_target_version: self.gfx_target_version,
                simd_count: self.compute_units * self.simd_per_cu,
                simd_per_cu: self.simd_per_cu,
                array_count: self.array_count,
                simd_arrays_per_engine: self.simd_arrays_per_engine,
                lds_size_in_kb: self.lds_size_kb,
                num_xcc: self.num_xcc,
            },
            page_size,
        )
    }
}

impl Preset {
    /// The preset's parameters.
    pub fn params(self) -> GpuParams {
        match self {
            Preset::Gfx90a => GpuParams {
                name: "AMD Instinct MI210 (emulated)".into(),
                gfx_target_version: 90010,
                device_id: 0x740F,
                pci_revision: 0x02,
                compute_units: 104,
                simd_per_cu: 4,
                wave_size: 64,
                lds_size_kb: 64,
                vram_bytes: 64 * GIB,
                host_visible_vram_bytes: 64 * GIB,
                sdma_engines: 2,
                sdma_xgmi_engines: 3,
                sdma_queues_per_engine: 8,
                num_xcc: 1,
                max_waves_per_simd: 8,
                array_count: 8,
                simd_arrays_per_engine: 1,
                cu_per_simd_array: 13,
                fw_version: 78,
                sdma_fw_version: 8,
                max_engine_clk_mhz: 1700,
                gpu_clock_hz: 100_000_000,
                num_cp_queues: 24,
            },
            Preset::Gfx942 => GpuParams {
                name: "AMD Instinct MI300X (emulated)".into(),
                gfx_target_version: 90402,
                device_id: 0x74A1,
                pci_revision: 0x00,
                compute_units: 304,
                simd_per_cu: 4,
                wave_size: 64,
                lds_size_kb: 64,
                vram_bytes: 192 * GIB,
                host_visible_vram_bytes: 192 * GIB,
                sdma_engines: 2,
                sdma_xgmi_engines: 14,
                sdma_queues_per_engine: 8,
                num_xcc: 8,
                max_waves_per_simd: 8,
                array_count: 32,
                simd_arrays_per_engine: 1,
                cu_per_simd_array: 10,
                fw_version: 177,
                sdma_fw_version: 19,
                max_engine_clk_mhz: 2100,
                gpu_clock_hz: 100_000_000,
                num_cp_queues: 24,
            },
            Preset::Gfx942Dpx => mi300x_partition(2, "DPX"),
            Preset::Gfx942Qpx => mi300x_partition(4, "QPX"),
            Preset::Gfx942Cpx => mi300x_partition(8, "CPX"),
            Preset::Gfx942QpxNps4 => mi300x_partition(4, "QPX+NPS4"),
            Preset::Gfx942CpxNps4 => mi300x_partition(8, "CPX+NPS4"),
            Preset::Gfx1100 => GpuParams {
                name: "AMD Radeon RX 7900 XTX (emulated)".into(),
                gfx_target_version: 110000,
                device_id: 0x744C,
                pci_revision: 0xC8,
                compute_units: 96,
                simd_per_cu: 2,
                wave_size: 32,
                lds_size_kb: 64,
                vram_bytes: 24 * GIB,
                host_visible_vram_bytes: 256 << 20,
                sdma_engines: 2,
                sdma_xgmi_engines: 0,
                sdma_queues_per_engine: 6,
                num_xcc: 1,
                max_waves_per_simd: 16,
                array_count: 12,
                simd_arrays_per_engine: 2,
                cu_per_simd_array: 8,
                fw_version: 2200,
                sdma_fw_version: 21,
                max_engine_clk_mhz: 2500,
                gpu_clock_hz: 100_000_000,
                num_cp_queues: 24,
            },
        }
    }
}

/// The host around the GPUs: what its PCIe fabric and the GPUs' virtualisation give. The
/// default is the idealised server (atomics, peer-to-peer, physical functions); real ones lack
/// some of it. Set from `KFDRT_EMU_PLATFORM` (see [`PLATFORM_ENV`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Platform {
    /// The root ports route PCIe AtomicOps, so the GPUs' atomics to system memory happen
    /// (`pci_enable_atomic_ops_to_root` succeeded: amdgpu's `pci_atomic_requested`). Without
    /// them KFD flags the GPUs' links `NO_ATOMICS_32_BIT | NO_ATOMICS_64_BIT`
    /// (`kfd_set_iolink_no_atomics`) and an atomic a GPU engine or wave sends to system
    /// memory does not happen: the memory keeps its value (a wave reads it back as the old
    /// value). The command processor's own signal decrements still land (its firmware has a
    /// path without atomics, which is why KFD runs gfx9 GPUs on such hosts).
    pub pcie_atomics: bool,
    /// The GPUs are SR-IOV virtual functions: the driver has no MMIO-remap page to give
    /// (`amdgpu_device_init` sets `rmmio_remap.bus_addr` only on a physical function, and
    /// `kfd_ioctl_alloc_memory_of_gpu` answers ENOMEM for `MMIO_REMAP` without one), so the
    /// CPU cannot flush the HDP itself: queues must (an SDMA HDP flush).
    pub sriov_vf: bool,
    /// The PCIe fabric carries peer-to-peer DMA between GPUs that are not in one XGMI hive
    /// (the kernel's `CONFIG_HSA_AMD_P2P`, with a P2PDMA distance the PCI core accepts). A GPU
    /// reaches a peer's VRAM over PCIe only with it and only when the peer's whole VRAM is in
    /// its BAR (`amdgpu_device_is_peer_accessible`); otherwise mapping the peer's VRAM moves it
    /// to system memory (a DMA-buf attachment pins it in GTT), and KFD lists no link. A hive's
    /// XGMI links are in `io_links`, PCIe peers in `p2p_links`.
    pub peer_to_peer: bool,
    /// The kernel's page size (`PAGE_SIZE`): 4 KiB, or 16 or 64 KiB as AArch64 kernels are
    /// often built. The driver rounds buffers to it and wants it for the doorbell slice
    /// (`roundup(8 KiB, PAGE_SIZE)`), queue pointer pages and CWSR sizes, and has no MMIO-remap
    /// page above 4 KiB. The emulator checks with it: GPU mappings need addresses and offsets
    /// aligned to it, and the ring, EOP and CWSR mappings of a queue are page aligned
    /// (`kfd_queue_acquire_buffers`). Its host mappings stay the host's (a larger page is a
    /// multiple of the host's). Default: the host's.
    pub page_size: u64,
}

impl Default for Platform {
    fn default() -> Platform {
        Platform {
            pcie_atomics: true,
            sriov_vf: false,
            peer_to_peer: true,
            page_size: kfd_sys::host_page_size(),
        }
    }
}

impl FromStr for Platform {
    type Err = EmuError;
    /// A comma-separated list of what the host lacks or is: `no-pcie-atomics`, `vf`,
    /// `no-p2p`, `pages-16k`, `pages-64k`; empty is the default.
    fn from_str(s: &str) -> Result<Platform, EmuError> {
        let mut p = Platform::default();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            match item.to_ascii_lowercase().as_str() {
                "no-pcie-atomics" => p.pcie_atomics = false,
                "vf" => p.sriov_vf = true,
                "no-p2p" => p.peer_to_peer = false,
                "pages-16k" => p.page_size = 16 << 10,
                "pages-64k" => p.page_size = 64 << 10,
                other => {
                    return Err(EmuError::Config(format!(
                        "{PLATFORM_ENV}: unknown platform trait {other:?} (no-pcie-atomics, vf, no-p2p, pages-16k, pages-64k)"
                    )))
                }
            }
        }
        Ok(p)
    }
}

/// Configuration of an [`crate::Emulator`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmuConfig {
    /// The GPUs, 1 to 8.
    pub gpus: Vec<GpuParams>,
    /// System memory reported for the CPU node, and what amdgpu's GTT and pinning limits are
    /// computed from. [`EmuConfig::new`] takes the host's (see [`host_memory_bytes`]).
    pub system_memory_bytes: u64,
    /// CPU cores reported for the CPU node.
    pub cpu_cores: u32,
    /// AQL processors also wait for the doorbell before consuming a packet (hardware may start
    /// as soon as the header is valid, which is the default).
    pub aql_requires_doorbell: bool,
    /// Packet processors spin instead of backing off when idle (for latency benchmarks; costs a
    /// core per busy queue).
    pub spin_poll: bool,
    /// How long the AQL processor waits, after seeing a valid header, before reading the packet
    /// again to catch a writer that publishes the header before the body. Zero (the default)
    /// still compares the packet after it ran; a window makes a header-first writer's race
    /// deterministic to catch in tests.
    pub torn_check_window: std::time::Duration,
    /// The strict personality (on by default; `KFDRT_EMU_STRICT=0` turns it off): detectors for
    /// mistakes a GPU would not report but punish with wrong results. See the crate docs for the
    /// list. The driver's and the page table's own checks (queue buffers, permissions, faults)
    /// do not depend on it.
    pub strict: bool,
    /// Host threads one dispatch of machine code spreads its work-groups over (0, the default:
    /// as many as the host has cores).
    pub wave_threads: usize,
    /// The KFD ABI version the emulated driver reports and answers: requests newer than it
    /// fail with ENOTTY, as on an older kernel. From [`crate::OLDEST_KFD_VERSION`] (1.11,
    /// Linux 6.1) to [`kfd_sys::KFD_ABI`], the default.
    pub kfd_version: kfd_sys::KfdVersion,
    /// Write-protect the client's doorbell mappings while their GPU's processors sleep, so the
    /// first doorbell store after an idle spell faults and wakes them at once (see the
    /// `doorbell_trap` module). Off by default: an in-process runtime (kfdrt) gives a hint with
    /// every doorbell instead; the preload turns it on for runtimes that do not (ROCr).
    pub trap_doorbell_writes: bool,
    /// GPUs (by index) the process's device cgroup does not allow, as in a container given
    /// only some of the host's GPUs: every file of their topology node answers EPERM (amdkfd's
    /// `node_show` and kin check `kfd_devcgroup_check_permission`) and their render node
    /// cannot be opened. Only through the driver seam: the preload refuses it, since its sysfs
    /// tree is plain files.
    pub cgroup_hidden_gpus: Vec<usize>,
    /// The host around the GPUs (PCIe atomics, virtual functions).
    pub platform: Platform,
    /// Address ranges `[start, end)` whose accesses by machine code are reported from the
    /// start (see [`crate::Emulator::watch`]; `KFDRT_EMU_WATCH=addr[:len][,...]`).
    pub watch: Vec<(u64, u64)>,
    /// Loads of watched ranges are reported too, not only stores and atomics
    /// (`KFDRT_EMU_WATCH_READS=1`).
    pub watch_reads: bool,
    /// Every dispatch of machine code runs the sanitizer: global accesses outside the buffer
    /// their pointer came from, reads of LDS never written, LDS races between waves
    /// (`KFDRT_EMU_SANITIZE=1`; see [`crate::Emulator::sanitizer_findings`]). Dispatches run
    /// slower.
    pub sanitize: bool,
}

/// Environment variable naming the preset for [`EmuConfig::from_env`].
pub const PRESET_ENV: &str = "KFDRT_EMU_PRESET";
/// Environment variable giving the GPU count for [`EmuConfig::from_env`].
pub const GPUS_ENV: &str = "KFDRT_EMU_GPUS";
/// Environment variable naming address ranges to watch: `addr[:len][,...]`, hexadecimal
/// (`0x...`) or decimal, `len` 4 bytes when left out (see [`EmuConfig::watch`]).
pub const WATCH_ENV: &str = "KFDRT_EMU_WATCH";
/// Environment variable that, set to `1`, reports loads of watched ranges too.
pub const WATCH_READS_ENV: &str = "KFDRT_EMU_WATCH_READS";
/// Environment variable that, set to `1`, turns the sanitizer on (see [`EmuConfig::sanitize`]).
pub const SANITIZE_ENV: &str = "KFDRT_EMU_SANITIZE";

/// Parses `addr[:len][,...]` into `[start, end)` ranges.
pub(crate) fn parse_watch(v: &str) -> Result<Vec<(u64, u64)>, String> {
    let number = |s: &str| -> Result<u64, String> {
        let s = s.trim();
        match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => s.parse::<u64>(),
        }
        .map_err(|_| format!("{s:?} is not a number"))
    };
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (addr, len) = match item.split_once(':') {
                Some((a, l)) => (number(a)?, number(l)?),
                None => (number(item)?, 4),
            };
            match (len, addr.checked_add(len)) {
                (1.., Some(end)) => Ok((addr, end)),
                _ => Err(format!("{item:?} is not a range")),
            }
        })
        .collect()
}

/// Environment variable that, set to `1`, makes [`EmuConfig::from_env`] spin-poll (see
/// [`EmuConfig::spin_poll`]).
pub const SPIN_ENV: &str = "KFDRT_EMU_SPIN";
/// Environment variable that, set to `0`, turns the strict personality off (see
/// [`EmuConfig::strict`]).
pub const STRICT_ENV: &str = "KFDRT_EMU_STRICT";
/// Environment variable listing [`EmuConfig::cgroup_hidden_gpus`] (GPU indices, comma
/// separated) for [`EmuConfig::from_env`].
pub const HIDDEN_GPUS_ENV: &str = "KFDRT_EMU_HIDDEN_GPUS";
/// Environment variable listing what the host lacks ([`EmuConfig::platform`]): comma-separated
/// `no-pcie-atomics`, `vf`, `no-p2p`, `pages-16k`, `pages-64k`.
pub const PLATFORM_ENV: &str = "KFDRT_EMU_PLATFORM";
/// Environment variable giving [`EmuConfig::wave_threads`] for [`EmuConfig::from_env`].
pub const WAVE_THREADS_ENV: &str = "KFDRT_EMU_WAVE_THREADS";
/// Environment variable that, set to `0`, keeps the preload from trapping doorbell stores (see
/// [`EmuConfig::trap_doorbell_writes`]; the preload's default is on).
pub const TRAP_DOORBELLS_ENV: &str = "KFDRT_EMU_TRAP_DOORBELLS";
/// Environment variable giving [`EmuConfig::kfd_version`] (`1.11`) for [`EmuConfig::from_env`].
pub const KFD_VERSION_ENV: &str = "KFDRT_EMU_KFD_VERSION";

/// The host's memory as the CPU node's memory bank reports it: `kfd_fill_mem_info_for_cpu`
/// adds up the node's managed pages, which is what `sysinfo`'s total RAM counts (the kernel's
/// `totalram_pages`). 64 GiB if the host will not say.
pub fn host_memory_bytes() -> u64 {
    // SAFETY: an all-zero `sysinfo` is a valid value of the plain C struct, and the call only
    // writes it.
    let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid out-parameter.
    if unsafe { libc::sysinfo(&mut info) } != 0 || info.totalram == 0 {
        return 64 * GIB;
    }
    (info.totalram as u64).saturating_mul(u64::from(info.mem_unit.max(1)))
}

/// Parses `major.minor`.
pub(crate) fn parse_kfd_version(v: &str) -> Option<kfd_sys::KfdVersion> {
    let (major, minor) = v.trim().split_once('.')?;
    Some(kfd_sys::KfdVersion::new(
        major.parse().ok()?,
        minor.parse().ok()?,
    ))
}

fn env_flag(var: &str, default: bool) -> Result<bool, EmuError> {
    match std::env::var(var) {
        Ok(v) if v.trim() == "1" => Ok(true),
        Ok(v) if v.trim() == "0" => Ok(false),
        Ok(v) if v.trim().is_empty() => Ok(default),
        Ok(v) => Err(EmuError::Config(format!("{var}={v:?} (expected 0 or 1)"))),
        Err(_) => Ok(default),
    }
}

/// How one GPU reaches another's VRAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PeerPath {
    /// Over XGMI: both are in one hive.
    Xgmi,
    /// PCIe peer-to-peer DMA.
    Pcie,
}

impl EmuConfig {
    /// How GPU `accessor` reaches GPU `owner`'s VRAM, or `None` (the driver then moves it to
    /// system memory to map it). The GPUs of a multi-GPU system whose parts have XGMI SDMA
    /// engines form one hive; others go over PCIe when the platform has peer-to-peer and the
    /// owner has a large BAR (`amdgpu_device_is_peer_accessible`: `visible_vram_size ==
    /// real_vram_size`).
    pub(crate) fn peer_path(&self, accessor: usize, owner: usize) -> Option<PeerPath> {
        let (a, o) = (self.gpus.get(accessor)?, self.gpus.get(owner)?);
        if accessor == owner {
            return None;
        }
        let hive = self.gpus.len() > 1 && a.sdma_xgmi_engines > 0 && o.sdma_xgmi_engines > 0;
        if hive {
            Some(PeerPath::Xgmi)
        } else if self.platform.peer_to_peer && o.host_visible_vram_bytes >= o.vram_bytes {
            Some(PeerPath::Pcie)
        } else {
            None
        }
    }

    /// `gpus` GPUs of `preset` (the count is checked by [`crate::Emulator::new`]).
    pub fn new(preset: Preset, gpus: usize) -> EmuConfig {
        EmuConfig {
            gpus: (0..gpus).map(|_| preset.params()).collect(),
            system_memory_bytes: host_memory_bytes(),
            cpu_cores: std::thread::available_parallelism().map_or(2, |n| n.get() as u32),
            aql_requires_doorbell: false,
            spin_poll: false,
            torn_check_window: std::time::Duration::ZERO,
            strict: true,
            wave_threads: 0,
            kfd_version: kfd_sys::KFD_ABI,
            trap_doorbell_writes: false,
            cgroup_hidden_gpus: Vec::new(),
            platform: Platform::default(),
            watch: Vec::new(),
            watch_reads: false,
            sanitize: false,
        }
    }

    /// From `KFDRT_EMU_PRESET` (default gfx90a), `KFDRT_EMU_GPUS` (default 1),
    /// `KFDRT_EMU_SPIN` (`1`: spin-poll; default off), `KFDRT_EMU_STRICT` (`0`: lenient;
    /// default strict), `KFDRT_EMU_WAVE_THREADS` (default: every core) and
    /// `KFDRT_EMU_KFD_VERSION` (default: the newest modelled), `KFDRT_EMU_HIDDEN_GPUS`
    /// (default: none) and `KFDRT_EMU_PLATFORM` (default: an ideal host).
    pub fn from_env() -> Result<EmuConfig, EmuError> {
        let preset = match std::env::var(PRESET_ENV) {
            Ok(v) if !v.trim().is_empty() => v.parse()?,
            _ => Preset::Gfx90a,
        };
        let gpus = match std::env::var(GPUS_ENV) {
            Ok(v) if !v.trim().is_empty() => v
                .trim()
                .parse::<usize>()
                .map_err(|_| EmuError::Config(format!("{GPUS_ENV}={v:?} is not a number")))?,
            _ => 1,
        };
        let mut config = EmuConfig::new(preset, gpus);
        config.spin_poll = env_flag(SPIN_ENV, false)?;
        config.strict = env_flag(STRICT_ENV, true)?;
        config.wave_threads = match std::env::var(WAVE_THREADS_ENV) {
            Ok(v) if !v.trim().is_empty() => v.trim().parse::<usize>().map_err(|_| {
                EmuError::Config(format!("{WAVE_THREADS_ENV}={v:?} is not a number"))
            })?,
            _ => 0,
        };
        if let Ok(v) = std::env::var(KFD_VERSION_ENV) {
            if !v.trim().is_empty() {
                config.kfd_version = parse_kfd_version(&v).ok_or_else(|| {
                    EmuError::Config(format!("{KFD_VERSION_ENV}={v:?} (expected e.g. 1.11)"))
                })?;
            }
        }
        if let Ok(v) = std::env::var(HIDDEN_GPUS_ENV) {
            for item in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let i = item
                    .parse::<usize>()
                    .ok()
                    .filter(|&i| i < config.gpus.len())
                    .ok_or_else(|| {
                        EmuError::Config(format!(
                            "{HIDDEN_GPUS_ENV}={v:?}: {item:?} is not a GPU index below {}",
                            config.gpus.len()
                        ))
                    })?;
                config.cgroup_hidden_gpus.push(i);
            }
        }
        if let Ok(v) = std::env::var(PLATFORM_ENV) {
            config.platform = v.parse()?;
        }
        if let Ok(v) = std::env::var(WATCH_ENV) {
            config.watch = parse_watch(&v)
                .map_err(|why| EmuError::Config(format!("{WATCH_ENV}={v:?}: {why}")))?;
        }
        config.watch_reads = env_flag(WATCH_READS_ENV, false)?;
        config.sanitize = env_flag(SANITIZE_ENV, false)?;
        Ok(config)
    }
}

#[cfg(test)]
mod watch_tests {
    use super::parse_watch;

    #[test]
    fn watch_ranges_parse_from_addresses_and_lengths() {
        assert_eq!(
            parse_watch("0x1000:16, 8192,0X20"),
            Ok(vec![(0x1000, 0x1010), (8192, 8196), (0x20, 0x24)])
        );
        assert_eq!(parse_watch(""), Ok(vec![]));
        for bad in ["0x1000:0", "zz", "0x10:", "18446744073709551615:2"] {
            assert!(parse_watch(bad).is_err(), "{bad}");
        }
    }
}
