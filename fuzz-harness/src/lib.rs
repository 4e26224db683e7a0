//! What each fuzz target does with its input. The cargo-fuzz targets in `fuzz/` (nightly) call
//! these, and `tests/corpus.rs` replays every file of `fuzz/corpus/<target>/` through them on
//! stable, so CI checks the corpora without a fuzzer. Each function may return an error of
//! any kind for any input; a panic or a hang is a bug in what it drives.

use kfd_sys::bindings::*;
use kfd_sys::{Driver, DriverExt, KfdIoctl, Node};
use std::sync::{Arc, OnceLock};

/// What a target does with one input.
pub type Target = fn(&[u8]);

/// The targets, by name (the corpus directory of each).
pub const TARGETS: &[(&str, Target)] = &[
    ("aql_packet", aql_packet),
    ("pm4_stream", pm4_stream),
    ("sdma_stream", sdma_stream),
    ("code_object", code_object),
    ("topology_properties", topology_properties),
    ("emu_ioctls", emu_ioctls),
    ("aql_processor", aql_processor),
    ("topology_tree", topology_tree),
];

fn dwords(data: &[u8]) -> Vec<u32> {
    data.chunks(4)
        .map(|c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(w)
        })
        .collect()
}

/// An AQL packet: decoding never panics, and what decodes encodes back to a packet that
/// decodes the same.
pub fn aql_packet(data: &[u8]) {
    let mut d = [0u32; 16];
    for (w, v) in d.iter_mut().zip(dwords(data)) {
        *w = v;
    }
    if let Ok(p) = aql::Packet::decode(&d) {
        let again = aql::Packet::decode(&p.encode());
        assert_eq!(
            again,
            Ok(p),
            "AQL packet does not survive encode/decode: {d:08x?}"
        );
    }
}

/// A PM4 stream for the family the first byte picks, decoded packet by packet.
pub fn pm4_stream(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let family = [
        pm4::GfxFamily::Gfx9,
        pm4::GfxFamily::Gfx90a,
        pm4::GfxFamily::Gfx94x,
        pm4::GfxFamily::Gfx103,
    ][usize::from(pick) % 4];
    let d = dwords(rest);
    let mut at = 0;
    while at < d.len() {
        match pm4::Pm4Packet::decode(family, &d[at..]) {
            Ok((_, n)) => {
                assert!(n > 0 && n <= d.len() - at, "PM4 packet of {n} dwords");
                at += n;
            }
            Err(_) => break,
        }
    }
}

/// An SDMA stream for the engine version the first byte picks, decoded packet by packet.
pub fn sdma_stream(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let version = [
        sdma::SdmaVersion::V4,
        sdma::SdmaVersion::V5,
        sdma::SdmaVersion::V6,
    ][usize::from(pick) % 3];
    let d = dwords(rest);
    let mut at = 0;
    while at < d.len() {
        match sdma::SdmaPacket::decode(version, &d[at..]) {
            Ok((_, n)) => {
                assert!(n > 0 && n <= d.len() - at, "SDMA packet of {n} dwords");
                at += n;
            }
            Err(_) => break,
        }
    }
}

/// A code object (an ELF or an offload bundle) through everything loading does without a device.
pub fn code_object(data: &[u8]) {
    let _ = kfdrt::code_object::parse_without_device(data, "gfx90a");
    let _ = kfdrt::code_object::parse_without_device(data, "gfx942:sramecc+:xnack-");
}

/// A node's `properties` file.
pub fn topology_properties(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = kfdrt::topology::NodeProperties::parse(text, "nodes/1/properties");
    }
}

/// One emulated device shared by every input (making one per input would dominate the run);
/// inputs change its state, as a client's calls do.
fn emulator() -> &'static Arc<kfd_emu::Emulator> {
    static EMU: OnceLock<Arc<kfd_emu::Emulator>> = OnceLock::new();
    EMU.get_or_init(|| {
        kfd_emu::Emulator::new(kfd_emu::EmuConfig::new(kfd_emu::Preset::Gfx90a, 2))
            .unwrap_or_else(|e| panic!("cannot create the emulated device: {e}"))
    })
}

/// Issues request `T` with its argument's bytes taken from `bytes` (zero-padded).
fn issue<T: KfdIoctl + Default>(emu: &kfd_emu::Emulator, bytes: &[u8]) {
    let mut arg = T::default();
    let size = std::mem::size_of::<T>();
    let n = bytes.len().min(size);
    // SAFETY: `arg` is plain old data of `size` bytes (a bindgen struct of integers); any bytes
    // are a valid value of it.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), (&mut arg as *mut T).cast(), n) };
    // SAFETY: `T` is a request whose argument holds no user pointer (the list in
    // `emu_ioctls`), so the driver touches nothing but `arg`.
    let _ = unsafe { emu.ioctl(Node::Kfd, T::REQUEST, (&mut arg as *mut T).cast()) };
}

/// `AMDKFD_IOC_SVM` with the input's range, op and up to three attributes, carried after the
/// struct inside the request's size as libhsakmt passes them. Ranges are confined to a mapping
/// of this harness's own (addresses elsewhere would only probe the fuzzer's memory).
fn svm(emu: &kfd_emu::Emulator, arg: &[u8]) {
    static AREA: OnceLock<usize> = OnceLock::new();
    const AREA_LEN: usize = 64 << 12;
    let area = *AREA.get_or_init(|| {
        // SAFETY: a fresh private anonymous mapping, kept for the process's life.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                AREA_LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        p as usize
    });
    let word = |i: usize| {
        arg.get(i * 4..i * 4 + 4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let nattr = (word(2) % 4) as usize;
    let mut buf = [0u64; 3 + 3];
    let head = kfd_ioctl_svm_args {
        // Page-aligned inside the area most of the time; any value otherwise.
        start_addr: if word(0) & 0x8000_0000 == 0 {
            (area + (word(0) as usize % 64) * 4096) as u64
        } else {
            u64::from(word(0))
        },
        size: u64::from(word(1) % 0x10_0000),
        op: word(2) >> 30,
        nattr: nattr as u32,
        ..Default::default()
    };
    // SAFETY: `buf` is 48 bytes, 8-aligned: the 24-byte struct and three 8-byte attributes.
    unsafe { std::ptr::write(buf.as_mut_ptr().cast::<kfd_ioctl_svm_args>(), head) };
    for i in 0..nattr {
        buf[3 + i] = u64::from(word(3 + 2 * i) % 9) | u64::from(word(4 + 2 * i)) << 32;
    }
    let request = kfd_sys::IoctlRequest::iowr(b'K', 0x20, 24 + 8 * nattr);
    // SAFETY: the argument is the request's size; its range is the harness's own mapping (or
    // refused before any access).
    let _ = unsafe { emu.ioctl(Node::Kfd, request, buf.as_mut_ptr().cast()) };
}

/// A stream of (request, argument bytes) pairs against a live emulated device: the requests
/// whose arguments carry no user pointer (the emulator must treat every field as untrusted;
/// pointers would only test the fuzzer's own memory).
pub fn emu_ioctls(data: &[u8]) {
    let emu = emulator();
    let mut rest = data;
    while let Some((&pick, tail)) = rest.split_first() {
        let take = tail.len().min(32);
        let (arg, next) = tail.split_at(take);
        rest = next;
        match pick % 17 {
            0 => issue::<kfd_ioctl_get_version_args>(emu, arg),
            1 => issue::<kfd_ioctl_destroy_queue_args>(emu, arg),
            2 => issue::<kfd_ioctl_set_memory_policy_args>(emu, arg),
            3 => issue::<kfd_ioctl_get_clock_counters_args>(emu, arg),
            4 => issue::<kfd_ioctl_create_event_args>(emu, arg),
            5 => issue::<kfd_ioctl_destroy_event_args>(emu, arg),
            6 => issue::<kfd_ioctl_set_event_args>(emu, arg),
            7 => issue::<kfd_ioctl_reset_event_args>(emu, arg),
            8 => issue::<kfd_ioctl_acquire_vm_args>(emu, arg),
            9 => issue::<kfd_ioctl_free_memory_of_gpu_args>(emu, arg),
            10 => issue::<kfd_ioctl_set_xnack_mode_args>(emu, arg),
            11 => issue::<kfd_ioctl_get_available_memory_args>(emu, arg),
            12 => issue::<kfd_ioctl_alloc_queue_gws_args>(emu, arg),
            // The runtime-enable address is only recorded, never followed, by KFD and the
            // emulator alike.
            13 => issue::<kfd_ioctl_runtime_enable_args>(emu, arg),
            14 => {
                // A new event stream: close the descriptor it returns.
                let mut a = kfd_ioctl_smi_events_args::default();
                if let Some(b) = arg.get(..4) {
                    a.gpuid = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
                if emu.kfd_ioctl(&mut a).is_ok() {
                    // SAFETY: the driver just created this descriptor for us.
                    unsafe { libc::close(a.anon_fd as i32) };
                }
            }
            15 => svm(emu, arg),
            _ => {
                // Debug-trap operations that follow no pointer, on this process or another.
                let mut a = kfd_ioctl_dbg_trap_args::default();
                let word = |i: usize| {
                    arg.get(i * 4..i * 4 + 4)
                        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                };
                a.pid = if word(0) & 1 == 0 {
                    std::process::id()
                } else {
                    word(0)
                };
                a.op = [
                    KFD_IOC_DBG_TRAP_DISABLE,
                    KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT,
                    KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED,
                    KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE,
                    KFD_IOC_DBG_TRAP_SET_FLAGS,
                    KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT,
                ][word(1) as usize % 6];
                // SAFETY: these operations read and write the argument struct only.
                let _ = unsafe { emu.kfd_ioctl_unchecked(&mut a) };
            }
        }
    }
}

/// An emulated GPU with one AQL queue whose packet processor spins (so each input is noticed at
/// once), shared by every input of `aql_processor`; a queue the input killed is replaced.
struct ProcessorRig {
    kfd: kfdrt::Kfd,
    queue: std::sync::Mutex<Option<kfdrt::AqlQueue>>,
}

fn processor_rig() -> &'static ProcessorRig {
    static RIG: OnceLock<ProcessorRig> = OnceLock::new();
    RIG.get_or_init(|| {
        let mut config = kfd_emu::EmuConfig::new(kfd_emu::Preset::Gfx90a, 1);
        config.spin_poll = true;
        let kfd = kfdrt::Kfd::builder()
            .emulated(config)
            .debug(kfdrt::DebugOptions::default())
            .open()
            .unwrap_or_else(|e| panic!("cannot create the emulated device: {e}"));
        ProcessorRig {
            kfd,
            queue: std::sync::Mutex::new(None),
        }
    })
}

/// Arbitrary ring contents for the AQL packet processor: up to four 64-byte packets from the
/// input are published (body, then header) at the queue's write index; the processor must run
/// them, stop the queue with an error, or wait (then the queue is destroyed): never panic, and
/// never touch memory outside the client's mappings (the emulator's page table decides).
pub fn aql_processor(data: &[u8]) {
    use std::sync::atomic::Ordering;
    let rig = processor_rig();
    let mut slot = rig.queue.lock().unwrap_or_else(|p| p.into_inner());
    let gpu = rig
        .kfd
        .gpu(0)
        .unwrap_or_else(|| unreachable!("the rig has a GPU"));
    let queue = match slot.take() {
        Some(q) if q.fault().is_none() => q,
        _ => match gpu.create_aql_queue(kfdrt::AqlQueueOptions::default().with_size_packets(64)) {
            Ok(q) => q,
            Err(_) => return,
        },
    };
    // SAFETY: the queue's amd_queue_t lives as long as `queue`; its indices are atomics.
    let amd = unsafe { &*(queue.amd_queue_address() as *const aql::AmdQueue) };
    let packets: Vec<[u32; 16]> = data
        .chunks(64)
        .take(4)
        .map(|c| {
            let mut d = [0u32; 16];
            for (w, v) in d.iter_mut().zip(dwords(c)) {
                *w = v;
            }
            d
        })
        .collect();
    let w = amd.write_dispatch_id.load(Ordering::Acquire);
    let size = u64::from(queue.size());
    if packets.is_empty()
        || w + packets.len() as u64 > amd.read_dispatch_id.load(Ordering::Acquire) + size
    {
        *slot = Some(queue);
        return;
    }
    for (i, p) in packets.iter().enumerate() {
        let at = queue.ring_address() + ((w + i as u64) % size) * 64;
        let words = at as *const std::sync::atomic::AtomicU32;
        for (k, v) in p.iter().enumerate().skip(1) {
            // SAFETY: slot `w + i` of the queue's ring (host-mapped GTT it owns), free because
            // the read index is within a ring's length of it.
            unsafe { &*words.add(k) }.store(*v, Ordering::Relaxed);
        }
        // SAFETY: as above; the header word last, with release.
        unsafe { &*words }.store(p[0], Ordering::Release);
    }
    amd.write_dispatch_id
        .store(w + packets.len() as u64, Ordering::Release);
    rig.kfd.driver().doorbell_hint(gpu.id());
    let end = w + packets.len() as u64;
    let start = std::time::Instant::now();
    while amd.read_dispatch_id.load(Ordering::Acquire) < end {
        if queue.fault().is_some() || start.elapsed() > std::time::Duration::from_millis(50) {
            // Stopped, or waiting on something that will not come: a new queue next time.
            return;
        }
        std::thread::yield_now();
    }
    *slot = Some(queue);
}

/// A file tree as the topology reader sees it, built from the input: `path\0contents\0...`.
struct FakeTopology(std::collections::BTreeMap<String, String>);

impl kfd_sys::Driver for FakeTopology {
    fn kind(&self) -> kfd_sys::DriverKind {
        kfd_sys::DriverKind::Emulated
    }
    fn describe(&self) -> String {
        "fuzzed topology".into()
    }
    unsafe fn ioctl(
        &self,
        _: Node,
        _: kfd_sys::IoctlRequest,
        _: *mut std::ffi::c_void,
    ) -> Result<i32, kfd_sys::Errno> {
        Err(kfd_sys::Errno::EINVAL)
    }
    fn open_render_node(&self, _: u32) -> Result<i32, kfd_sys::Errno> {
        Err(kfd_sys::Errno::ENOENT)
    }
    unsafe fn mmap(
        &self,
        _: kfd_sys::MapSource,
        _: *mut std::ffi::c_void,
        _: usize,
        _: i32,
        _: i32,
        _: u64,
    ) -> Result<*mut std::ffi::c_void, kfd_sys::Errno> {
        Err(kfd_sys::Errno::EINVAL)
    }
    unsafe fn munmap(&self, _: *mut std::ffi::c_void, _: usize) -> Result<(), kfd_sys::Errno> {
        Err(kfd_sys::Errno::EINVAL)
    }
    fn read_topology(&self, path: &str) -> Result<String, kfd_sys::Errno> {
        self.0.get(path).cloned().ok_or(kfd_sys::Errno::ENOENT)
    }
    fn list_topology(&self, path: &str) -> Result<Vec<String>, kfd_sys::Errno> {
        let prefix = format!("{path}/");
        let mut names: Vec<String> = self
            .0
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix))
            .map(|rest| rest.split('/').next().unwrap_or(rest).to_string())
            .collect();
        names.dedup();
        if names.is_empty() {
            return Err(kfd_sys::Errno::ENOENT);
        }
        kfd_sys::sort_topology_entries(&mut names);
        Ok(names)
    }
}

/// A whole topology tree generated from the input (file paths and contents), read as kfdrt
/// reads the real one at open.
pub fn topology_tree(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.split('\0');
    let mut files = std::collections::BTreeMap::new();
    while let (Some(path), Some(contents)) = (parts.next(), parts.next()) {
        files.insert(path.to_string(), contents.to_string());
    }
    let _ = kfdrt::Topology::read(&FakeTopology(files));
}
