//! The KFD topology tree of the emulated system, in sysfs's text format.
//!
//! Node 0 is the CPU; nodes 1..=N are the GPUs. Every GPU links to the CPU and, in multi-GPU
//! systems, to its peers: XGMI links within a gfx90a/gfx942 hive (`io_links`), PCIe peers the
//! platform allows as `p2p_links` ([`EmuConfig::peer_path`]).

use crate::config::{EmuConfig, PeerPath};
use crate::device::GpuState;
use kfd_sys::Errno;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;

/// Link types of `io_links/*/properties`.
const LINK_PCIE: u32 = 2;
const LINK_XGMI: u32 = 11;
/// `CRAT_IOLINK_FLAGS_*` of `io_links/*/properties`' `flags`.
const LINK_ENABLED: u64 = 1;
const LINK_NON_COHERENT: u64 = 1 << 1;
const LINK_NO_ATOMICS_32_BIT: u64 = 1 << 2;
const LINK_NO_ATOMICS_64_BIT: u64 = 1 << 3;
/// CPU caches of node 0: (level, KiB, HSA cache type, shared by all cores). Types: DATA 1,
/// INSTRUCTION 2, CPU 4.
const CPU_CACHES: [(u64, u64, u64, bool); 4] = [
    (1, 32, 1 | 4, false),
    (1, 32, 2 | 4, false),
    (2, 512, 1 | 2 | 4, false),
    (3, 32768, 1 | 2 | 4, true),
];
/// HSA capability bits the emulator reports for every GPU. Bit 19 is the old place of SRAM ECC
/// (`HSA_CAP_RESERVED_WAS_SRAM_EDCSUPPORTED`, which current KFD leaves clear); kfdrt still reads
/// it there, so it stays set until kfdrt reads bit 26.
const CAPABILITY: u64 = 0x0028_4200 | CAP_SVMAPI;
/// `HSA_CAP_SVMAPI_SUPPORTED`: the node takes `AMDKFD_IOC_SVM`.
const CAP_SVMAPI: u64 = 0x0800_0000;
/// `HSA_CAP_SRAM_EDCSUPPORTED`: KFD sets it when the GFX RAS block is enabled, as on the
/// data-centre parts (ROCr then reports their ISA as `sramecc+`).
const CAP_SRAM_EDC: u64 = 0x0400_0000;

pub(crate) struct TopologyTree {
    files: BTreeMap<String, String>,
    /// `nodes/<n>/` of the GPUs the device cgroup hides.
    hidden: Vec<String>,
}

fn props(pairs: &[(&str, u64)]) -> String {
    let mut s = String::new();
    for (k, v) in pairs {
        let _ = writeln!(s, "{k} {v}");
    }
    s
}

impl TopologyTree {
    pub(crate) fn build(config: &EmuConfig, gpus: &[Arc<GpuState>]) -> TopologyTree {
        let mut files = BTreeMap::new();
        files.insert("generation_id".into(), "1\n".into());
        files.insert(
            "system_properties".into(),
            props(&[
                ("platform_oem", 0x414D44),
                ("platform_id", 0x454D55),
                ("platform_rev", 1),
            ]),
        );
        // CPU node.
        files.insert("nodes/0/gpu_id".into(), "0\n".into());
        files.insert("nodes/0/name".into(), "\n".into());
        files.insert(
            "nodes/0/properties".into(),
            props(&[
                ("cpu_cores_count", u64::from(config.cpu_cores)),
                ("simd_count", 0),
                ("mem_banks_count", 1),
                ("caches_count", CPU_CACHES.len() as u64),
                ("io_links_count", gpus.len() as u64),
                ("cpu_core_id_base", 0),
                ("simd_id_base", 0),
                ("max_waves_per_simd", 0),
                ("lds_size_in_kb", 0),
                ("gds_size_in_kb", 0),
                ("wave_front_size", 0),
                ("array_count", 0),
                ("vendor_id", 0),
                ("device_id", 0),
                ("location_id", 0),
                ("drm_render_minor", 0),
                ("hive_id", 0),
                ("num_sdma_engines", 0),
                ("num_cp_queues", 0),
            ]),
        );
        files.insert(
            "nodes/0/mem_banks/0/properties".into(),
            props(&[
                ("heap_type", 0),
                ("size_in_bytes", config.system_memory_bytes),
                ("flags", 0),
                ("width", 64),
                ("mem_clk_max", 3200),
            ]),
        );
        // CPU caches as a CRAT lists them: per-core L1 data and instruction and L2, and one L3
        // shared by every core (sibling maps name the cores sharing each).
        let all_cores = (0..config.cpu_cores)
            .map(|_| "1")
            .collect::<Vec<_>>()
            .join(",");
        for (c, &(level, kb, ty, shared)) in CPU_CACHES.iter().enumerate() {
            let mut text = props(&[
                ("processor_id_low", 0),
                ("level", level),
                ("size", kb),
                ("cache_line_size", 64),
                ("cache_lines_per_tag", 1),
                ("association", if level == 3 { 16 } else { 8 }),
                ("latency", level * 4),
                ("type", ty),
            ]);
            let siblings = if shared {
                all_cores.clone()
            } else {
                let mut v = vec!["0"; config.cpu_cores.max(1) as usize];
                v[0] = "1";
                v.join(",")
            };
            let _ = writeln!(text, "sibling_map {siblings}");
            files.insert(format!("nodes/0/caches/{c}/properties"), text);
        }
        for (i, g) in gpus.iter().enumerate() {
            let node = i as u64 + 1;
            let link = |from: u64, to: u64, ty: u32, weight: u64| {
                // kfd_fill_iolink_non_crat_info: every link is enabled. A GPU's own links other
                // than XGMI lack atomics when the root port refused them
                // (kfd_set_iolink_no_atomics: !pci_atomic_requested); a CPU's link to a GPU
                // only when the GPU cannot complete them, which these parts can. The CPU's
                // PCIe link to a GPU, and PCIe links between GPUs both ways, are not coherent
                // (kfd_set_iolink_non_coherent).
                let mut flags = LINK_ENABLED;
                let from_gpu = from != 0;
                if from_gpu && ty != LINK_XGMI && !config.platform.pcie_atomics {
                    flags |= LINK_NO_ATOMICS_32_BIT | LINK_NO_ATOMICS_64_BIT;
                }
                if ty == LINK_PCIE && (!from_gpu || to != 0) {
                    flags |= LINK_NON_COHERENT;
                }
                props(&[
                    ("type", u64::from(ty)),
                    ("version_major", 0),
                    ("version_minor", 0),
                    ("node_from", from),
                    ("node_to", to),
                    ("weight", weight),
                    ("min_latency", 0),
                    ("max_latency", 0),
                    ("min_bandwidth", if ty == LINK_XGMI { 50_000 } else { 312 }),
                    (
                        "max_bandwidth",
                        if ty == LINK_XGMI { 50_000 } else { 64_000 },
                    ),
                    ("recommended_transfer_size", 0),
                    ("flags", flags),
                ])
            };
            files.insert(
                format!("nodes/0/io_links/{i}/properties"),
                link(0, node, LINK_PCIE, 20),
            );
            let p = &g.params;
            let (debug_caps, debug_prop) = crate::debugger::topology_bits(p);
            let base = format!("nodes/{node}");
            files.insert(format!("{base}/gpu_id"), format!("{}\n", g.gpu_id));
            files.insert(
                format!("{base}/name"),
                format!("{}\n", node_name(p.gfx_target_version)),
            );
            let visible = p.host_visible_vram_bytes >= p.vram_bytes;
            let peers = |path| {
                (0..gpus.len())
                    .filter(|&j| config.peer_path(j, i) == Some(path))
                    .collect::<Vec<_>>()
            };
            let (xgmi_peers, pcie_peers) = (peers(PeerPath::Xgmi), peers(PeerPath::Pcie));
            files.insert(
                format!("{base}/properties"),
                props(&[
                    ("cpu_cores_count", 0),
                    ("simd_count", u64::from(p.compute_units * p.simd_per_cu)),
                    ("mem_banks_count", 1),
                    ("caches_count", 2),
                    ("io_links_count", 1 + xgmi_peers.len() as u64),
                    ("p2p_links_count", pcie_peers.len() as u64),
                    ("cpu_core_id_base", 0),
                    ("simd_id_base", 0x8000_0000 + u64::from(g.gpu_id)),
                    ("max_waves_per_simd", u64::from(p.max_waves_per_simd)),
                    ("lds_size_in_kb", u64::from(p.lds_size_kb)),
                    ("gds_size_in_kb", 0),
                    ("num_gws", u64::from(crate::queue::GWS_PER_GPU)),
                    ("wave_front_size", u64::from(p.wave_size)),
                    ("array_count", u64::from(p.array_count)),
                    (
                        "simd_arrays_per_engine",
                        u64::from(p.simd_arrays_per_engine),
                    ),
                    ("cu_per_simd_array", u64::from(p.cu_per_simd_array)),
                    ("simd_per_cu", u64::from(p.simd_per_cu)),
                    ("max_slots_scratch_cu", 32),
                    ("gfx_target_version", u64::from(p.gfx_target_version)),
                    ("vendor_id", 0x1002),
                    ("device_id", u64::from(p.device_id)),
                    ("location_id", 0x0300 + 0x100 * i as u64),
                    ("domain", 0),
                    ("drm_render_minor", u64::from(g.render_minor)),
                    (
                        "hive_id",
                        if xgmi_peers.is_empty() {
                            0
                        } else {
                            0x5EED_0000_0001
                        },
                    ),
                    ("num_sdma_engines", u64::from(p.sdma_engines)),
                    ("num_sdma_xgmi_engines", u64::from(p.sdma_xgmi_engines)),
                    (
                        "num_sdma_queues_per_engine",
                        u64::from(p.sdma_queues_per_engine),
                    ),
                    ("num_cp_queues", u64::from(p.num_cp_queues)),
                    ("max_engine_clk_fcompute", u64::from(p.max_engine_clk_mhz)),
                    ("local_mem_size", p.vram_bytes),
                    ("fw_version", u64::from(p.fw_version)),
                    (
                        "capability",
                        // gfx9 data-centre parts (MI210, MI300X) run with SRAM ECC on.
                        if p.gfx_target_version / 10000 == 9 {
                            CAPABILITY | CAP_SRAM_EDC | debug_caps
                        } else {
                            CAPABILITY | debug_caps
                        },
                    ),
                    ("debug_prop", debug_prop),
                    ("sdma_fw_version", u64::from(p.sdma_fw_version)),
                    ("unique_id", 0xC0FF_EE00_0000 + u64::from(g.gpu_id)),
                    ("num_xcc", u64::from(p.num_xcc)),
                    ("max_engine_clk_ccompute", 3000),
                ]),
            );
            files.insert(
                format!("{base}/mem_banks/0/properties"),
                props(&[
                    ("heap_type", if visible { 1 } else { 2 }),
                    ("size_in_bytes", p.vram_bytes),
                    ("flags", 0),
                    ("width", 4096),
                    ("mem_clk_max", 1600),
                ]),
            );
            for (c, (level, kb)) in [(1u64, 16u64), (2, 8192)].iter().enumerate() {
                files.insert(
                    format!("{base}/caches/{c}/properties"),
                    props(&[
                        ("processor_id_low", 0x8000_0000),
                        ("level", *level),
                        ("size", *kb),
                        ("cache_line_size", 128),
                        ("cache_lines_per_tag", 1),
                        ("association", 16),
                        ("latency", 1),
                        // HSA_CACHE_TYPE_DATA | HSA_CACHE_TYPE_HSACU, as KFD reports GPU caches.
                        ("type", 9),
                    ]),
                );
            }
            files.insert(
                format!("{base}/io_links/0/properties"),
                link(node, 0, LINK_PCIE, 20),
            );
            // A hive's XGMI links come with the GPU's CRAT (io_links); PCIe peers are added
            // as p2p_links, from this GPU to each peer that can reach its VRAM
            // (kfd_dev_create_p2p_links, kfd_add_peer_prop: weight of both GPUs' links).
            for (l, j) in xgmi_peers.iter().enumerate() {
                files.insert(
                    format!("{base}/io_links/{}/properties", l + 1),
                    link(node, *j as u64 + 1, LINK_XGMI, 15),
                );
            }
            for (l, j) in pcie_peers.iter().enumerate() {
                files.insert(
                    format!("{base}/p2p_links/{l}/properties"),
                    link(node, *j as u64 + 1, LINK_PCIE, 40),
                );
            }
        }
        let hidden = config
            .cgroup_hidden_gpus
            .iter()
            .map(|i| format!("nodes/{}/", i + 1))
            .collect();
        TopologyTree { files, hidden }
    }

    pub(crate) fn files(&self) -> Vec<(String, String)> {
        self.files
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// A value of node `node`'s `properties` file.
    pub(crate) fn node_property(&self, node: usize, key: &str) -> Option<u64> {
        let text = self.files.get(&format!("nodes/{node}/properties"))?;
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == key).then(|| v.trim().parse().ok()).flatten()
        })
    }

    pub(crate) fn read(&self, path: &str) -> Result<String, Errno> {
        let path = path.trim_matches('/');
        if self.hidden.iter().any(|h| path.starts_with(h.as_str())) {
            return Err(Errno::EPERM);
        }
        self.files.get(path).cloned().ok_or(Errno::ENOENT)
    }

    pub(crate) fn list(&self, path: &str) -> Result<Vec<String>, Errno> {
        let dir = path.trim_matches('/');
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut names: Vec<String> = self
            .files
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix))
            .filter_map(|rest| rest.split_once('/').map(|(first, _)| first.to_owned()))
            .collect();
        names.dedup();
        if names.is_empty() {
            return Err(Errno::ENOENT);
        }
        kfd_sys::sort_topology_entries(&mut names);
        names.dedup();
        Ok(names)
    }
}

/// The node's `name` as amdkfd writes it: amdgpu's ASIC name, lowercased
/// (`kfd_topology_add_device`): `aldebaran` for an MI210; parts amdgpu finds through IP
/// discovery (GC 9.4.3 and 11.0, the MI300X and RX 7900 XTX presets) share `ip discovery`.
/// Test scripts pick the platform by it.
fn node_name(gfx_target_version: u32) -> &'static str {
    match gfx_target_version {
        90010 => "aldebaran",
        _ => "ip discovery",
    }
}
