//! Typed view of the KFD topology tree (`/sys/devices/virtual/kfd/kfd/topology`).
//!
//! The tree is read once, through the [`Driver`] seam, when a [`crate::Kfd`] opens. Each node's
//! `properties` file is `key value` lines; kfdrt keeps every key (see [`NodeProperties`]) and lifts
//! the ones a runtime needs into typed fields.

mod queue_areas;

use crate::error::{Error, Result};
use kfd_sys::{Driver, Errno};
use std::collections::BTreeMap;

pub use queue_areas::CwsrSizes;

/// The raw `key value` pairs of one `properties` file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeProperties(BTreeMap<String, u64>);

impl NodeProperties {
    /// Parses sysfs's `key value` lines. Lines that do not parse are an error naming the file.
    pub fn parse(text: &str, file: &str) -> Result<Self> {
        let mut map = BTreeMap::new();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let mut parts = line.split_whitespace();
            let (Some(key), Some(value), None) = (parts.next(), parts.next(), parts.next()) else {
                return Err(Error::Topology(format!("{file}: malformed line {line:?}")));
            };
            let value = value.parse::<u64>().map_err(|_| {
                Error::Topology(format!("{file}: {key} has non-numeric value {value:?}"))
            })?;
            map.insert(key.to_owned(), value);
        }
        Ok(NodeProperties(map))
    }

    /// A property, or `None` when the kernel does not report it.
    pub fn get(&self, key: &str) -> Option<u64> {
        self.0.get(key).copied()
    }

    /// A property, or 0 when absent (KFD omits some keys on some generations).
    pub fn get_or_zero(&self, key: &str) -> u64 {
        self.get(key).unwrap_or(0)
    }

    /// Iterates over every key and value, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }

    fn u32(&self, key: &str) -> u32 {
        u32::try_from(self.get_or_zero(key)).unwrap_or(u32::MAX)
    }
}

/// A memory bank (`mem_banks/N`) of a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemBank {
    /// What kind of memory this is.
    pub heap: HeapType,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Bus width in bits.
    pub width: u32,
    /// Maximum memory clock in MHz.
    pub mem_clk_max_mhz: u32,
}

/// `heap_type` of a memory bank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapType {
    /// System memory (0).
    System,
    /// Frame buffer the host can map entirely (large BAR) (1).
    FrameBufferPublic,
    /// Frame buffer only partly or not host-visible (2).
    FrameBufferPrivate,
    /// Another value (GPU-private heaps such as LDS or scratch on some kernels).
    Other(u32),
}

impl HeapType {
    fn from_raw(v: u64) -> HeapType {
        match v {
            0 => HeapType::System,
            1 => HeapType::FrameBufferPublic,
            2 => HeapType::FrameBufferPrivate,
            v => HeapType::Other(u32::try_from(v).unwrap_or(u32::MAX)),
        }
    }

    /// Whether this is device memory (VRAM).
    pub fn is_vram(self) -> bool {
        matches!(
            self,
            HeapType::FrameBufferPublic | HeapType::FrameBufferPrivate
        )
    }
}

/// `type` of an XGMI link.
const LINK_TYPE_XGMI: u32 = 11;

/// A link (`io_links/N`, or `p2p_links/N` for a PCIe peer KFD added) from a node to another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoLink {
    /// Link type: 2 PCIe, 11 XGMI, others as KFD defines them.
    pub link_type: u32,
    /// The node this link starts at (always the node that lists it).
    pub node_from: u32,
    /// The node it leads to.
    pub node_to: u32,
    /// Relative cost: lower is closer.
    pub weight: u32,
    /// Minimum and maximum bandwidth in MB/s as reported.
    pub bandwidth_mbps: (u32, u32),
    /// What the link lacks, as KFD flags it.
    pub flags: IoLinkFlags,
}

bitflags::bitflags! {
    /// An io-link's `flags` (`CRAT_IOLINK_FLAGS_*`). KFD sets them in
    /// `kfd_fill_iolink_non_crat_info`; the `NO_*` bits count only on an enabled link, as
    /// libhsakmt and ROCr read them (`Override` in `HSA_LINKPROPERTY`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct IoLinkFlags: u32 {
        /// The properties below were set by the driver.
        const ENABLED = 1;
        /// Accesses over the link are not cache-coherent.
        const NON_COHERENT = 1 << 1;
        /// 32-bit atomics over the link do not happen (a host without PCIe AtomicOps).
        const NO_ATOMICS_32_BIT = 1 << 2;
        /// 64-bit atomics over the link do not happen.
        const NO_ATOMICS_64_BIT = 1 << 3;
        /// No DMA between the two peers over the link.
        const NO_PEER_TO_PEER_DMA = 1 << 4;
        /// The link goes both ways.
        const BI_DIRECTIONAL = 1 << 31;
        const _ = !0;
    }
}

impl IoLink {
    /// Whether 64-bit atomics over the link happen: ROCr's `atomic_support_64bit`
    /// (`BuildTopology`), which believes the `NO_ATOMICS_64_BIT` bit only on an enabled link.
    pub fn atomics_64bit(&self) -> bool {
        !self
            .flags
            .contains(IoLinkFlags::ENABLED | IoLinkFlags::NO_ATOMICS_64_BIT)
    }

    /// A human name for the link type.
    pub fn type_name(&self) -> &'static str {
        match self.link_type {
            1 => "HyperTransport",
            2 => "PCIe",
            5 => "QPI",
            11 => "XGMI",
            _ => "other",
        }
    }
}

/// How one GPU reaches another's VRAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeerAccess {
    /// The same GPU.
    Local,
    /// Over XGMI (one hive).
    Xgmi,
    /// PCIe peer-to-peer.
    Pcie,
    /// No path: mapping the VRAM would make the driver move it to system memory, so kfdrt
    /// refuses ([`crate::Error::NoPeerAccess`]).
    None,
}

/// A CPU node of the topology.
#[derive(Clone, Debug)]
pub struct CpuNode {
    /// Topology node index.
    pub node: u32,
    /// CPU cores in the node.
    pub cores: u32,
    /// System memory banks.
    pub mem_banks: Vec<MemBank>,
    /// Links to other nodes.
    pub links: Vec<IoLink>,
}

/// What kfdrt knows about one GPU, from its topology node.
#[derive(Clone, Debug)]
pub struct GpuInfo {
    /// Topology node index.
    pub node: u32,
    /// KFD's id for this GPU (used in every ioctl that names a GPU).
    pub gpu_id: u32,
    /// The node's `name` file.
    pub name: String,
    /// `gfx_target_version`, e.g. 90010 for gfx90a.
    pub gfx_target_version: u32,
    /// The LLVM target name, e.g. `"gfx90a"`.
    pub gfx_target: String,
    /// Compute units (all XCCs).
    pub compute_units: u32,
    /// SIMDs per compute unit.
    pub simd_per_cu: u32,
    /// Wavefront size (32 or 64).
    pub wave_size: u32,
    /// LDS per work-group in bytes.
    pub lds_bytes: u32,
    /// Number of accelerator complexes (XCCs); 1 except on partitioned parts like gfx942.
    pub num_xcc: u32,
    /// Shader engines (all XCCs): `array_count / simd_arrays_per_engine`.
    pub shader_engines: u32,
    /// Waves per compute unit that may hold scratch at once (`max_slots_scratch_cu`).
    pub max_slots_scratch_cu: u32,
    /// Total VRAM in bytes.
    pub vram_bytes: u64,
    /// VRAM the host can map (equals `vram_bytes` with large BAR).
    pub host_visible_vram_bytes: u64,
    /// SDMA engines for PCIe copies.
    pub sdma_engines: u32,
    /// SDMA engines dedicated to XGMI (peer) copies.
    pub sdma_xgmi_engines: u32,
    /// Queue slots per SDMA engine.
    pub sdma_queues_per_engine: u32,
    /// Hardware compute queues KFD maps user queues to (`num_cp_queues`). A process may have
    /// more: the hardware scheduler maps them in turn.
    pub cp_queues: u32,
    /// Global wave sync resources (`num_gws`): one queue of the process may hold them, for
    /// cooperative (grid-wide synchronising) dispatches.
    pub gws: u32,
    /// DRM render node minor (`/dev/dri/renderD<minor>`).
    pub drm_render_minor: u32,
    /// PCI device id.
    pub device_id: u32,
    /// PCI location (bus/device/function).
    pub location_id: u32,
    /// Micro-engine firmware version.
    pub fw_version: u32,
    /// SDMA firmware version.
    pub sdma_fw_version: u32,
    /// Maximum compute engine clock in MHz.
    pub max_engine_clk_mhz: u32,
    /// Memory banks.
    pub mem_banks: Vec<MemBank>,
    /// Number of cache entries listed under `caches/`.
    pub caches: u32,
    /// Links to other nodes.
    pub links: Vec<IoLink>,
    /// The GPU's 64-bit atomics on system memory happen: its link to the first CPU node does
    /// not lack them (ROCr's `atomic_support_64bit` of that link, read in `BlitSdmaBase`). On a
    /// host whose PCIe root ports do not route AtomicOps they do not, and kfdrt completes work
    /// with plain writes instead.
    pub system_atomics: bool,
    /// Every raw property, for anything not lifted into a field.
    pub properties: NodeProperties,
}

/// `HSA_CAP_SVMAPI_SUPPORTED` in a node's `capability`.
const HSA_CAP_SVMAPI_SUPPORTED: u64 = 0x0800_0000;

impl GpuInfo {
    /// How GPU `accessor` reaches this GPU's VRAM: KFD lists a link from the owner to each GPU
    /// that can reach its VRAM (XGMI hive links in `io_links`; PCIe peers, only when
    /// `amdgpu_device_is_peer_accessible`, in `p2p_links`), which is the link ROCr reads for a
    /// memory pool's access (`GetLinkInfo(owner, agent)`). A link flagged
    /// `NO_PEER_TO_PEER_DMA` does not count.
    pub fn vram_access_from(&self, accessor: &GpuInfo) -> PeerAccess {
        if accessor.node == self.node {
            return PeerAccess::Local;
        }
        let usable = |l: &&IoLink| {
            l.node_to == accessor.node
                && !l
                    .flags
                    .contains(IoLinkFlags::ENABLED | IoLinkFlags::NO_PEER_TO_PEER_DMA)
        };
        match self.links.iter().find(usable).map(|l| l.link_type) {
            Some(LINK_TYPE_XGMI) => PeerAccess::Xgmi,
            Some(_) => PeerAccess::Pcie,
            None => PeerAccess::None,
        }
    }

    /// Whether the node takes shared virtual memory (`AMDKFD_IOC_SVM`; the kernel was built with
    /// `CONFIG_HSA_AMD_SVM` and the GPU supports it).
    pub fn supports_svm(&self) -> bool {
        self.properties.get_or_zero("capability") & HSA_CAP_SVMAPI_SUPPORTED != 0
    }
}

/// Formats a `gfx_target_version` as the LLVM target name (`90010` -> `"gfx90a"`).
pub fn gfx_target_name(gfx_target_version: u32) -> String {
    let major = gfx_target_version / 10000;
    let minor = (gfx_target_version / 100) % 100;
    let stepping = gfx_target_version % 100;
    format!("gfx{major}{minor:x}{stepping:x}")
}

/// The whole topology: CPU nodes and GPU nodes.
#[derive(Clone, Debug)]
pub struct Topology {
    /// `generation_id`: changes when the tree changes (hot-plug).
    pub generation_id: u64,
    /// CPU nodes.
    pub cpus: Vec<CpuNode>,
    /// GPU nodes, in node order.
    pub gpus: Vec<GpuInfo>,
    /// Nodes this process may not see: their files answer EPERM, as amdkfd answers for a GPU
    /// the process's device cgroup does not allow (a container given some of the host's GPUs).
    /// They are skipped, as libhsakmt skips them (`topology_sysfs_get_gpu_id`: EPERM is "not
    /// supported"), and listed here so that a tool can say why a GPU is missing.
    pub hidden_nodes: Vec<u32>,
}

fn read_props(driver: &dyn Driver, path: &str) -> Result<NodeProperties> {
    let text = driver
        .read_topology(path)
        .map_err(|e| Error::Topology(format!("reading {path}: {e}")))?;
    NodeProperties::parse(&text, path)
}

fn list_or_empty(driver: &dyn Driver, path: &str) -> Vec<String> {
    // A node without caches or links has no such directory on some kernels.
    driver.list_topology(path).unwrap_or_default()
}

fn read_mem_banks(driver: &dyn Driver, node: &str) -> Result<Vec<MemBank>> {
    let mut banks = Vec::new();
    for b in list_or_empty(driver, &format!("{node}/mem_banks")) {
        let p = read_props(driver, &format!("{node}/mem_banks/{b}/properties"))?;
        banks.push(MemBank {
            heap: HeapType::from_raw(p.get_or_zero("heap_type")),
            size_bytes: p.get_or_zero("size_in_bytes"),
            width: p.u32("width"),
            mem_clk_max_mhz: p.u32("mem_clk_max"),
        });
    }
    Ok(banks)
}

fn read_links(driver: &dyn Driver, node: &str) -> Result<Vec<IoLink>> {
    let mut links = Vec::new();
    // Direct links, then the peer links KFD adds (kfd_dev_create_p2p_links), as libhsakmt
    // reads both.
    let dirs = ["io_links", "p2p_links"];
    let all = dirs.iter().flat_map(|d| {
        list_or_empty(driver, &format!("{node}/{d}"))
            .into_iter()
            .map(move |l| format!("{node}/{d}/{l}/properties"))
    });
    for path in all {
        let p = read_props(driver, &path)?;
        links.push(IoLink {
            link_type: p.u32("type"),
            node_from: p.u32("node_from"),
            node_to: p.u32("node_to"),
            weight: p.u32("weight"),
            bandwidth_mbps: (p.u32("min_bandwidth"), p.u32("max_bandwidth")),
            flags: IoLinkFlags::from_bits_retain(p.u32("flags")),
        });
    }
    Ok(links)
}

impl Topology {
    /// Reads the whole tree through `driver`.
    pub fn read(driver: &dyn Driver) -> Result<Topology> {
        let generation_id = driver
            .read_topology("generation_id")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        let nodes = driver
            .list_topology("nodes")
            .map_err(|e| Error::Topology(format!("listing nodes: {e}")))?;
        let mut cpus = Vec::new();
        let mut gpus = Vec::new();
        let mut hidden_nodes = Vec::new();
        for n in nodes {
            let Ok(index) = n.parse::<u32>() else {
                continue;
            };
            let node = format!("nodes/{index}");
            let gpu_id = match driver.read_topology(&format!("{node}/gpu_id")) {
                Ok(text) => text,
                Err(e) if e == Errno::EPERM => {
                    log::info!("kfdrt: topology node {index} is not allowed to this process (device cgroup): skipped");
                    hidden_nodes.push(index);
                    continue;
                }
                Err(e) => return Err(Error::Topology(format!("reading {node}/gpu_id: {e}"))),
            };
            let gpu_id: u32 = gpu_id
                .trim()
                .parse()
                .map_err(|_| Error::Topology(format!("{node}/gpu_id is not a number")))?;
            let props = read_props(driver, &format!("{node}/properties"))?;
            let mem_banks = read_mem_banks(driver, &node)?;
            let links = read_links(driver, &node)?;
            if gpu_id == 0 {
                cpus.push(CpuNode {
                    node: index,
                    cores: props.u32("cpu_cores_count"),
                    mem_banks,
                    links,
                });
                continue;
            }
            let name = driver
                .read_topology(&format!("{node}/name"))
                .map(|s| s.trim().to_owned())
                .unwrap_or_default();
            let simd_per_cu = props.u32("simd_per_cu").max(1);
            let gfx_target_version = props.u32("gfx_target_version");
            let vram_bytes = mem_banks
                .iter()
                .filter(|b| b.heap.is_vram())
                .map(|b| b.size_bytes)
                .sum::<u64>();
            let host_visible_vram_bytes = mem_banks
                .iter()
                .filter(|b| b.heap == HeapType::FrameBufferPublic)
                .map(|b| b.size_bytes)
                .sum::<u64>();
            gpus.push(GpuInfo {
                node: index,
                gpu_id,
                name,
                gfx_target_version,
                gfx_target: gfx_target_name(gfx_target_version),
                compute_units: props.u32("simd_count") / simd_per_cu,
                simd_per_cu,
                wave_size: props.u32("wave_front_size"),
                lds_bytes: props.u32("lds_size_in_kb").saturating_mul(1024),
                num_xcc: props.u32("num_xcc").max(1),
                shader_engines: (props.u32("array_count")
                    / props.u32("simd_arrays_per_engine").max(1))
                .max(1),
                max_slots_scratch_cu: props.u32("max_slots_scratch_cu"),
                vram_bytes,
                host_visible_vram_bytes,
                sdma_engines: props.u32("num_sdma_engines"),
                sdma_xgmi_engines: props.u32("num_sdma_xgmi_engines"),
                sdma_queues_per_engine: props.u32("num_sdma_queues_per_engine"),
                cp_queues: props.u32("num_cp_queues"),
                gws: props.u32("num_gws"),
                drm_render_minor: props.u32("drm_render_minor"),
                device_id: props.u32("device_id"),
                location_id: props.u32("location_id"),
                fw_version: props.u32("fw_version"),
                sdma_fw_version: props.u32("sdma_fw_version"),
                max_engine_clk_mhz: props.u32("max_engine_clk_fcompute"),
                caches: u32::try_from(list_or_empty(driver, &format!("{node}/caches")).len())
                    .unwrap_or(u32::MAX),
                mem_banks,
                links,
                system_atomics: true,
                properties: props,
            });
        }
        if let Some(cpu) = cpus.first() {
            for g in &mut gpus {
                g.system_atomics = g
                    .links
                    .iter()
                    .filter(|l| l.node_to == cpu.node)
                    .all(IoLink::atomics_64bit);
            }
        }
        Ok(Topology {
            generation_id,
            cpus,
            gpus,
            hidden_nodes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gfx_names() {
        assert_eq!(gfx_target_name(90010), "gfx90a");
        assert_eq!(gfx_target_name(90402), "gfx942");
        assert_eq!(gfx_target_name(110000), "gfx1100");
        assert_eq!(gfx_target_name(90008), "gfx908");
        assert_eq!(gfx_target_name(100300), "gfx1030");
    }

    #[test]
    fn properties_parse_and_reject() {
        let p = NodeProperties::parse("simd_count 416\nwave_front_size 64\n\n", "t").unwrap();
        assert_eq!(p.get("simd_count"), Some(416));
        assert_eq!(p.get("missing"), None);
        assert!(NodeProperties::parse("simd_count lots\n", "t").is_err());
        assert!(NodeProperties::parse("a 1 2\n", "t").is_err());
    }
}
