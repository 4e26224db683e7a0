//! Topology checks in the spirit of kfdtest's KFDTopologyTest.

use crate::common;

use kfdrt::emu::Preset;
use kfdrt::topology::HeapType;
use kfdrt::Kfd;

fn check_topology(kfd: &Kfd) {
    let topo = kfd.topology();
    assert!(!topo.cpus.is_empty(), "no CPU node");
    for cpu in &topo.cpus {
        assert!(cpu.cores > 0, "CPU node {} reports no cores", cpu.node);
        for l in &cpu.links {
            assert_eq!(
                l.node_from, cpu.node,
                "io link of node {} starts elsewhere",
                cpu.node
            );
        }
    }
    let mut ids = std::collections::HashSet::new();
    for gpu in kfd.gpus() {
        let i = gpu.info();
        assert!(ids.insert(i.gpu_id), "duplicate gpu_id {:#x}", i.gpu_id);
        assert_ne!(i.gpu_id, 0);
        assert!(i.compute_units > 0, "{}: no compute units", i.gfx_target);
        assert!(
            i.wave_size == 32 || i.wave_size == 64,
            "wave size {}",
            i.wave_size
        );
        assert!(i.lds_bytes >= 32 * 1024, "LDS {}", i.lds_bytes);
        assert!(i.fw_version > 0, "no ME firmware version");
        assert!(i.sdma_fw_version > 0, "no SDMA firmware version");
        assert!(!i.mem_banks.is_empty(), "no memory bank");
        assert!(i.vram_bytes > 0);
        assert!(i.mem_banks.iter().any(|b| b.heap.is_vram()));
        assert!(i.sdma_engines > 0 && i.sdma_queues_per_engine > 0);
        assert!(i.gfx_target.starts_with("gfx"));
        for l in &i.links {
            assert_eq!(
                l.node_from, i.node,
                "io link of node {} starts elsewhere",
                i.node
            );
            assert!(l.node_to != i.node);
        }
        // Every GPU links to a CPU node.
        let cpu_nodes: Vec<u32> = topo.cpus.iter().map(|c| c.node).collect();
        assert!(i.links.iter().any(|l| cpu_nodes.contains(&l.node_to)));
    }
}

#[test]
fn device_under_test_topology_is_sane() {
    let kfd = common::device();
    println!("testing on {}", kfd.describe());
    check_topology(&kfd);
}

#[test]
fn every_preset_with_one_and_eight_gpus() {
    for preset in [
        Preset::Gfx90a,
        Preset::Gfx942,
        Preset::Gfx942Dpx,
        Preset::Gfx942Qpx,
        Preset::Gfx942Cpx,
        Preset::Gfx942QpxNps4,
        Preset::Gfx942CpxNps4,
        Preset::Gfx1100,
    ] {
        for n in [1, 8] {
            let kfd = common::emulated(preset, n);
            assert_eq!(kfd.gpus().len(), n);
            check_topology(&kfd);
            let i = kfd.gpus()[0].info().clone();
            match preset {
                Preset::Gfx90a => {
                    assert_eq!((i.gfx_target.as_str(), i.wave_size), ("gfx90a", 64));
                    assert_eq!(i.gfx_target_version, 90010);
                }
                Preset::Gfx942 => {
                    assert_eq!(i.gfx_target, "gfx942");
                    assert!(i.num_xcc > 1, "gfx942 is a multi-XCC part");
                }
                Preset::Gfx942Dpx
                | Preset::Gfx942Qpx
                | Preset::Gfx942Cpx
                | Preset::Gfx942QpxNps4
                | Preset::Gfx942CpxNps4 => {
                    // 8 XCCs of 38 CUs, 192 GiB and 16 SDMA engines, shared out; in NPS4 the
                    // same shares (a quarter of the memory over the nodes sharing it).
                    let parts = match preset {
                        Preset::Gfx942Dpx => 2,
                        Preset::Gfx942Qpx | Preset::Gfx942QpxNps4 => 4,
                        _ => 8,
                    };
                    assert_eq!(i.gfx_target, "gfx942");
                    assert_eq!((i.num_xcc, i.compute_units), (8 / parts, 304 / parts));
                    assert_eq!(i.vram_bytes, (192u64 << 30) / u64::from(parts));
                    assert_eq!(i.sdma_engines + i.sdma_xgmi_engines, 16 / parts);
                }
                Preset::Gfx1100 => {
                    assert_eq!((i.gfx_target.as_str(), i.wave_size), ("gfx1100", 32))
                }
            }
            if n == 8 {
                // The MI210s and MI300Xs form an XGMI hive: links for every pair (PCIe peer
                // links between CPX partitions, which have no XGMI engines). The RX 7900 XTX's
                // VRAM is not all in its BAR, so no GPU reaches it (no p2p_links).
                let expect = if preset == Preset::Gfx1100 { 0 } else { 7 };
                for g in kfd.gpus() {
                    let peers = g
                        .info()
                        .links
                        .iter()
                        .filter(|l| kfd.gpus().iter().any(|o| o.info().node == l.node_to));
                    assert_eq!(
                        peers.count(),
                        expect,
                        "{:?} should link to {expect} peers",
                        g
                    );
                }
            }
        }
    }
}

#[test]
fn heap_types_are_consistent() {
    let kfd = common::emulated(Preset::Gfx1100, 1);
    let i = kfd.gpus()[0].info().clone();
    let visible: u64 = i
        .mem_banks
        .iter()
        .filter(|b| b.heap == HeapType::FrameBufferPublic)
        .map(|b| b.size_bytes)
        .sum();
    // A small-BAR part: no public bank (the visible size comes from the render node).
    assert_eq!(visible, 0);
    assert!(i
        .mem_banks
        .iter()
        .any(|b| b.heap == HeapType::FrameBufferPrivate));
    assert!(i.host_visible_vram_bytes > 0 && i.host_visible_vram_bytes <= i.vram_bytes);
}

#[test]
fn invalid_node_is_an_error() {
    let kfd = common::device();
    assert!(kfd.gpu(kfd.gpus().len()).is_none());
    assert!(
        kfd.gpu_by_id(0).is_none(),
        "gpu_id 0 is a CPU node, not a GPU"
    );
    let err = kfd
        .driver()
        .read_topology("nodes/999/properties")
        .unwrap_err();
    assert_eq!(err, kfdrt::Errno::ENOENT);
}

#[test]
fn clock_counters_advance() {
    let kfd = common::device();
    let gpu = kfd.gpu(0).expect("a GPU");
    let a = kfd.clock_counters(&gpu).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2));
    let b = kfd.clock_counters(&gpu).unwrap();
    assert!(b.gpu > a.gpu && b.cpu > a.cpu && b.system > a.system);
    assert!(a.system_freq_hz > 0);
}

#[test]
fn real_gpu_opens_and_reports_its_topology() {
    let Some(kfd) = common::hardware_or_skip("real_gpu_opens_and_reports_its_topology") else {
        return;
    };
    assert_eq!(kfd.kind(), kfdrt::DriverKind::Hardware);
    check_topology(&kfd);
    for gpu in kfd.gpus() {
        assert!(gpu.available_memory().unwrap() > 0);
    }
}

#[test]
fn host_visible_vram_of_a_small_bar_part_comes_from_the_render_node() {
    // The RX 7900 XTX preset has 24 GiB of VRAM and a 256 MiB BAR: the topology marks its VRAM
    // private and says no more; amdgpu's AMDGPU_INFO_VRAM_GTT gives the visible size.
    let kfd = common::emulated(kfdrt::emu::Preset::Gfx1100, 1);
    let info = kfd.gpu(0).unwrap().info().clone();
    assert_eq!(info.vram_bytes, 24 << 30);
    assert_eq!(info.host_visible_vram_bytes, 256 << 20);
    assert_eq!(kfd.topology().gpus[0].host_visible_vram_bytes, 256 << 20);
    // Large-BAR parts see all of it through the topology.
    let kfd = common::emulated(kfdrt::emu::Preset::Gfx90a, 1);
    let info = kfd.gpu(0).unwrap().info().clone();
    assert_eq!(info.host_visible_vram_bytes, info.vram_bytes);
}

#[test]
fn node_names_are_amdgpus_asic_names() {
    // amdkfd names a node after amdgpu's ASIC, lowercased: scripts select the platform by it.
    for (preset, name) in [
        (Preset::Gfx90a, "aldebaran"),
        (Preset::Gfx942, "ip discovery"),
        (Preset::Gfx1100, "ip discovery"),
    ] {
        let kfd = common::emulated(preset, 1);
        assert_eq!(kfd.gpu(0).unwrap().info().name, name, "{preset:?}");
    }
}

/// The CPU node's memory bank reports the host's memory, as `kfd_fill_mem_info_for_cpu` adds
/// up the node's managed pages (what `/proc/meminfo` calls MemTotal), not a made-up figure.
#[test]
fn the_cpu_node_reports_the_hosts_memory() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let emu = kfd.emulator().unwrap();
    let files = emu.topology_files();
    let props = &files
        .iter()
        .find(|(p, _)| p == "nodes/0/mem_banks/0/properties")
        .expect("the CPU node has a memory bank")
        .1;
    let reported: u64 = props
        .lines()
        .find_map(|l| l.strip_prefix("size_in_bytes "))
        .and_then(|v| v.trim().parse().ok())
        .expect("size_in_bytes");
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let total_kb: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("MemTotal");
    assert_eq!(reported, total_kb * 1024);
}

/// A container given some of the host's GPUs: amdkfd answers EPERM for every file of a node
/// the device cgroup does not allow, and its render node cannot be opened. kfdrt skips such
/// nodes as libhsakmt does, lists them in `Topology::hidden_nodes`, and the GPUs it may use
/// work (their copies land in their own memory).
#[test]
fn gpus_the_device_cgroup_hides_are_skipped_and_the_rest_work() {
    for hidden in [0usize, 1] {
        let mut config = kfdrt::emu::EmuConfig::new(Preset::Gfx90a, 3);
        config.cgroup_hidden_gpus = vec![hidden];
        let kfd = common::emulated_with(config);
        let emu = kfd.emulator().unwrap().clone();
        assert_eq!(kfd.topology().hidden_nodes, vec![hidden as u32 + 1]);
        assert_eq!(kfd.gpus().len(), 2, "hiding GPU {hidden}");
        let all = emu.gpu_ids();
        let seen: Vec<u32> = kfd.gpus().iter().map(|g| g.id()).collect();
        let expected: Vec<u32> = all
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != hidden)
            .map(|(_, &id)| id)
            .collect();
        assert_eq!(seen, expected, "hiding GPU {hidden}");
        // The process has no device data for the hidden GPU: requests naming it are refused.
        let mut acquire = kfd_sys::bindings::kfd_ioctl_acquire_vm_args {
            drm_fd: 0,
            gpu_id: all[hidden],
        };
        assert!(kfd_sys::DriverExt::kfd_ioctl(&**kfd.driver(), &mut acquire).is_err());
        check_topology(&kfd);
        for gpu in kfd.gpus() {
            let buf = gpu.alloc(4096, kfdrt::MemoryKind::DeviceLocal).unwrap();
            let host = gpu.alloc(4096, kfdrt::MemoryKind::GttCoherent).unwrap();
            let engine = gpu.copy_engine().unwrap();
            engine
                .fill(&buf, 0, 0x600d_0000 | gpu.id(), 4096, &[])
                .unwrap()
                .wait(Some(std::time::Duration::from_secs(30)))
                .unwrap();
            engine
                .copy(&host, 0, &buf, 0, 4096, &[])
                .unwrap()
                .wait(Some(std::time::Duration::from_secs(30)))
                .unwrap();
            let v = host.to_vec().unwrap();
            assert_eq!(v[..4], (0x600d_0000 | gpu.id()).to_le_bytes());
        }
    }
}
