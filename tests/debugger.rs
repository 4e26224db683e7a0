//! The debugger's ABI (KFD 1.13), tested as a debugger uses it: kfdrt enables the runtime at
//! open with the address of its list of loaded code objects; a debugger attaches with
//! `DBG_TRAP_ENABLE`, reads that list through the `r_debug` the driver hands back, takes queue
//! and device snapshots, hears of new queues through its descriptor, suspends and resumes a
//! queue, and detaches. rocgdb is not packaged for Debian 12, so the test speaks the ABI
//! itself. On a KFD older than 1.13 none of this exists, and kfdrt neither asks nor fails.

use crate::common;

use kfd_sys::bindings::*;
use kfd_sys::{DriverExt, Errno};
use kfdrt::emu::{EmuConfig, Preset};
use kfdrt::{AqlQueueOptions, Error, Feature, KfdVersion};
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(20));
const SHORT: Option<Duration> = Some(Duration::from_millis(100));

pub(crate) fn dbg_trap(
    kfd: &kfdrt::Kfd,
    op: u32,
    fill: impl FnOnce(&mut kfd_ioctl_dbg_trap_args),
) -> Result<i32, Errno> {
    dbg_trap_out(kfd, op, fill).0
}

/// [`dbg_trap`], also returning the arguments as the driver left them.
pub(crate) fn dbg_trap_out(
    kfd: &kfdrt::Kfd,
    op: u32,
    fill: impl FnOnce(&mut kfd_ioctl_dbg_trap_args),
) -> (Result<i32, Errno>, kfd_ioctl_dbg_trap_args) {
    let mut a = kfd_ioctl_dbg_trap_args {
        pid: std::process::id(),
        op,
        ..Default::default()
    };
    fill(&mut a);
    // SAFETY: every pointer the operations below pass points into a live local of the caller.
    let r = unsafe { kfd.driver().kfd_ioctl_unchecked(&mut a) };
    (r, a)
}

pub(crate) fn pipe() -> (std::fs::File, i32) {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid out-array of two descriptors.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
    assert_eq!(r, 0);
    use std::os::fd::FromRawFd;
    // SAFETY: the read end was just created and is owned by nobody else.
    (unsafe { std::fs::File::from_raw_fd(fds[0]) }, fds[1])
}

pub(crate) fn pending_bytes(reader: &mut std::fs::File) -> usize {
    use std::io::Read;
    let mut buf = [0u8; 64];
    reader.read(&mut buf).unwrap_or(0)
}

/// Attaches as a debugger (`DBG_TRAP_ENABLE` with every exception): the runtime information
/// the driver hands back, and the read end of the notification descriptor.
pub(crate) fn attach(kfd: &kfdrt::Kfd) -> Result<(kfd_runtime_info, std::fs::File), Errno> {
    let (notify, write_end) = pipe();
    let mut info = kfd_runtime_info::default();
    let r = dbg_trap(kfd, KFD_IOC_DBG_TRAP_ENABLE, |a| {
        a.__bindgen_anon_1.enable = kfd_ioctl_dbg_trap_enable_args {
            exception_mask: u64::MAX,
            rinfo_ptr: &mut info as *mut _ as u64,
            rinfo_size: std::mem::size_of::<kfd_runtime_info>() as u32,
            dbg_fd: write_end as u32,
        }
    });
    // SAFETY: closes the caller's copy; the driver holds its own reference.
    unsafe { libc::close(write_end) };
    r.map(|_| (info, notify))
}

/// The debugger's queue snapshot (up to 8 queues).
pub(crate) fn queue_snapshot(kfd: &kfdrt::Kfd) -> Vec<kfd_queue_snapshot_entry> {
    let mut entries = vec![kfd_queue_snapshot_entry::default(); 8];
    let (r, out) = dbg_trap_out(kfd, KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, |a| {
        a.__bindgen_anon_1.queue_snapshot = kfd_ioctl_dbg_trap_queue_snapshot_args {
            snapshot_buf_ptr: entries.as_mut_ptr() as u64,
            num_queues: entries.len() as u32,
            entry_size: std::mem::size_of::<kfd_queue_snapshot_entry>() as u32,
            ..Default::default()
        }
    });
    r.unwrap();
    // SAFETY: the member the operation fills.
    let count = unsafe { out.__bindgen_anon_1.queue_snapshot.num_queues } as usize;
    entries.truncate(count.min(8));
    entries
}

#[test]
fn a_debugger_attaches_lists_code_objects_and_queues_suspends_and_detaches() {
    const TEST: &str =
        "debugger::a_debugger_attaches_lists_code_objects_and_queues_suspends_and_detaches";
    let Some(kfd) = common::under_test(TEST, Preset::Gfx90a, 2, &["args"]) else {
        return;
    };
    if kfd.emulator().is_some() {
        assert!(kfd.supports(Feature::Debugger));
    } else if !kfd.supports(Feature::Debugger) {
        eprintln!(
            "{TEST}: skipped: KFD {} has no debugger ABI",
            kfd.kfd_version()
        );
        return;
    }
    let gpu = kfd.gpu(0).unwrap();
    let elf = common::code_object_for("args", &gpu.info().gfx_target).unwrap();
    let co = gpu.load_code_object(&elf).unwrap();
    let q0 = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();

    // Attach: the driver hands back what the runtime enabled with.
    let (info, mut notify) = attach(&kfd).unwrap();
    assert_eq!(info.runtime_state, DEBUG_RUNTIME_STATE_ENABLED);
    assert_eq!(info.r_debug, kfdrt::debug::r_debug_address());
    // Attaching twice is refused.
    assert_eq!(
        dbg_trap(&kfd, KFD_IOC_DBG_TRAP_ENABLE, |_| {}),
        Err(Errno::EALREADY)
    );

    // The code-object list at that address (walked through its `<link.h>` pointers, as a
    // debugger does, under kfdrt's lock: other tests of this process load code objects).
    let listed = kfdrt::debug::loaded_code_objects();
    let ours = listed
        .iter()
        .find(|e| e.load_delta == co.base_address())
        .expect("the loaded code object is listed");
    let (offset, size) = parse_memory_uri(&ours.uri);
    // SAFETY: the URI names bytes kfdrt keeps while the code object is loaded.
    let bytes = unsafe { std::slice::from_raw_parts(offset as *const u8, size) };
    assert_eq!(bytes, &elf[..], "the URI names the code object's ELF");

    // Queue and device snapshots.
    let q1 = kfd
        .gpu(1)
        .unwrap()
        .create_aql_queue(AqlQueueOptions::default())
        .unwrap();
    let listed = &queue_snapshot(&kfd)[..];
    // kfdrt's own queues (the loader's) are listed too.
    assert!(listed.len() >= 2, "{} queues", listed.len());
    for q in [&q0, &q1] {
        let e = listed
            .iter()
            .find(|e| e.queue_id == q.id())
            .unwrap_or_else(|| panic!("queue {} missing from {listed:?}", q.id()));
        assert_eq!(e.ring_base_address, q.ring_address());
        assert_eq!(e.gpu_id, q.gpu().id());
        assert_eq!(e.queue_type, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
    }
    let gpus = kfd.gpus();
    let mut devices = vec![kfd_dbg_device_info_entry::default(); gpus.len() + 1];
    dbg_trap(&kfd, KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, |a| {
        a.__bindgen_anon_1.device_snapshot = kfd_ioctl_dbg_trap_device_snapshot_args {
            snapshot_buf_ptr: devices.as_mut_ptr() as u64,
            num_devices: devices.len() as u32,
            entry_size: std::mem::size_of::<kfd_dbg_device_info_entry>() as u32,
            ..Default::default()
        }
    })
    .unwrap();
    for (d, g) in devices.iter().zip(&gpus) {
        assert_eq!(d.gpu_id, g.id());
        assert_eq!(d.gfx_target_version, g.info().gfx_target_version);
        assert_eq!(d.vendor_id, 0x1002);
    }
    if kfd.emulator().is_some() {
        assert_eq!(devices[0].gfx_target_version, 90010, "the preset's");
    }
    assert_eq!(devices[gpus.len()].gpu_id, 0, "only {} GPUs", gpus.len());

    // A queue created while attached raises EC_QUEUE_NEW: a byte on the descriptor, then the
    // event by query (cleared as it is read).
    assert!(
        pending_bytes(&mut notify) >= 1,
        "q1's creation was notified"
    );
    let mut seen = Vec::new();
    loop {
        let (r, out) = dbg_trap_out(&kfd, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, |a| {
            a.__bindgen_anon_1.query_debug_event.exception_mask = u64::MAX;
        });
        match r {
            Ok(_) => {}
            Err(e) => {
                assert_eq!(e, Errno::EAGAIN);
                break;
            }
        }
        // SAFETY: the member the operation fills.
        let ev = unsafe { out.__bindgen_anon_1.query_debug_event };
        seen.push((ev.exception_mask, ev.gpu_id, ev.queue_id));
        assert!(seen.len() < 16, "events are cleared when read");
    }
    let queue_new = 1u64 << (EC_QUEUE_NEW - 1);
    assert!(
        seen.contains(&(queue_new, q1.gpu().id(), q1.id())),
        "q1's EC_QUEUE_NEW was raised: {seen:x?}"
    );

    // Suspend q0: its work (a barrier packet) waits; resume: it runs.
    let mut ids = [q0.id(), 0xFFFF];
    let n = dbg_trap(&kfd, KFD_IOC_DBG_TRAP_SUSPEND_QUEUES, |a| {
        a.__bindgen_anon_1.suspend_queues = kfd_ioctl_dbg_trap_suspend_queues_args {
            queue_array_ptr: ids.as_mut_ptr() as u64,
            num_queues: 2,
            ..Default::default()
        }
    })
    .unwrap();
    assert_eq!(n, 1);
    assert_eq!(
        ids[1],
        0xFFFF | KFD_DBG_QUEUE_INVALID_MASK,
        "an unknown id is marked"
    );
    let pending = q0.barrier_and(&[]).unwrap();
    assert!(matches!(pending.wait(SHORT), Err(Error::Timeout { .. })));
    let mut ids = [q0.id()];
    let n = dbg_trap(&kfd, KFD_IOC_DBG_TRAP_RESUME_QUEUES, |a| {
        a.__bindgen_anon_1.resume_queues = kfd_ioctl_dbg_trap_resume_queues_args {
            queue_array_ptr: ids.as_mut_ptr() as u64,
            num_queues: 1,
            ..Default::default()
        }
    })
    .unwrap();
    assert_eq!(n, 1);
    pending.wait(T).unwrap();

    // The wave-level operations are tested in debugger_waves.rs.
    assert_eq!(
        dbg_trap(&kfd, KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE, |_| {}),
        Ok(0)
    );
    // Another process's pid is not ours to debug here.
    let mut other = kfd_ioctl_dbg_trap_args {
        pid: u32::MAX - 1,
        op: KFD_IOC_DBG_TRAP_DISABLE,
        ..Default::default()
    };
    // SAFETY: DISABLE reads no pointer.
    let r = unsafe { kfd.driver().kfd_ioctl_unchecked(&mut other) };
    assert_eq!(r, Err(Errno::ESRCH));
    dbg_trap(&kfd, KFD_IOC_DBG_TRAP_DISABLE, |_| {}).unwrap();
    assert_eq!(
        dbg_trap(&kfd, KFD_IOC_DBG_TRAP_DISABLE, |_| {}),
        Err(Errno::EINVAL),
        "detached"
    );
    drop(co);
    let after = kfdrt::debug::loaded_code_objects();
    assert!(
        !after.iter().any(|e| e.uri == ours.uri),
        "an unloaded code object leaves the list"
    );
}

fn parse_memory_uri(uri: &str) -> (usize, usize) {
    let rest = uri
        .strip_prefix(&format!("memory://{}#offset=0x", std::process::id()))
        .unwrap_or_else(|| panic!("not a memory URI of this process: {uri}"));
    let (offset, size) = rest.split_once("&size=").unwrap();
    (
        usize::from_str_radix(offset, 16).unwrap(),
        size.parse().unwrap(),
    )
}

/// The runtime enables once per process: a second enable is EBUSY, and with queues alive
/// EEXIST, as amdkfd answers.
#[test]
fn runtime_enable_follows_amdkfds_rules() {
    let Some(kfd) = common::under_test(
        "debugger::runtime_enable_follows_amdkfds_rules",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let mut a = kfd_ioctl_runtime_enable_args {
        r_debug: kfdrt::debug::r_debug_address(),
        mode_mask: KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK,
        capabilities_mask: 0,
    };
    // SAFETY: `r_debug` is kfdrt's list.
    let r = unsafe { kfd.driver().kfd_ioctl_unchecked(&mut a) };
    assert_eq!(r, Err(Errno::EBUSY), "kfdrt enabled it at open");
    let mut off = kfd_ioctl_runtime_enable_args::default();
    // SAFETY: disabling reads no pointer.
    unsafe { kfd.driver().kfd_ioctl_unchecked(&mut off) }.unwrap();
    let _q = kfd
        .gpu(0)
        .unwrap()
        .create_aql_queue(AqlQueueOptions::default())
        .unwrap();
    // SAFETY: as above.
    let r = unsafe { kfd.driver().kfd_ioctl_unchecked(&mut a) };
    assert_eq!(r, Err(Errno::EEXIST), "queues exist");
    // Debug operations on hardware need the runtime enabled.
    let (_r, w) = pipe();
    dbg_trap(&kfd, KFD_IOC_DBG_TRAP_ENABLE, |a| {
        a.__bindgen_anon_1.enable.dbg_fd = w as u32;
    })
    .unwrap();
    let mut ids = [0u32];
    assert_eq!(
        dbg_trap(&kfd, KFD_IOC_DBG_TRAP_SUSPEND_QUEUES, |a| {
            a.__bindgen_anon_1.suspend_queues.queue_array_ptr = ids.as_mut_ptr() as u64;
            a.__bindgen_anon_1.suspend_queues.num_queues = 1;
        }),
        Err(Errno::EACCES)
    );
    dbg_trap(&kfd, KFD_IOC_DBG_TRAP_DISABLE, |_| {}).unwrap();
    // SAFETY: closes the test's write end.
    unsafe { libc::close(w) };
}

/// On KFD 1.11 (Linux 6.1) there is no debugger ABI: kfdrt does not ask for it, works all the
/// same, and says which version a newer feature needs.
#[test]
fn an_older_kfd_has_no_debugger_abi_and_kfdrt_works_without_it() {
    let mut config = EmuConfig::new(Preset::Gfx90a, 1);
    config.kfd_version = KfdVersion::new(1, 11);
    let kfd = common::emulated_with(config);
    assert_eq!(kfd.kfd_version(), KfdVersion::new(1, 11));
    assert!(!kfd.supports(Feature::Debugger));
    assert!(kfd.supports(Feature::AvailableMemory));
    assert_eq!(
        dbg_trap(&kfd, KFD_IOC_DBG_TRAP_ENABLE, |_| {}),
        Err(Errno::ENOTTY)
    );
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    q.barrier_and(&[]).unwrap().wait(T).unwrap();
    let e = Error::NeedsKfd {
        feature: Feature::Debugger,
        have: kfd.kfd_version(),
    };
    assert_eq!(
        e.to_string(),
        "debugger ABI (runtime enable, debug trap) needs KFD 1.13 or newer; the driver speaks \
         KFD 1.11"
    );
}

fn suspend(kfd: &kfdrt::Kfd, queue_id: u32) {
    let mut ids = [queue_id];
    let n = dbg_trap(kfd, KFD_IOC_DBG_TRAP_SUSPEND_QUEUES, |a| {
        a.__bindgen_anon_1.suspend_queues = kfd_ioctl_dbg_trap_suspend_queues_args {
            queue_array_ptr: ids.as_mut_ptr() as u64,
            num_queues: 1,
            ..Default::default()
        }
    })
    .unwrap();
    assert_eq!(n, 1);
}

fn wave_state(
    kfd: &kfdrt::Kfd,
    queue_id: u32,
    ctl_stack: u64,
) -> Result<kfd_ioctl_get_queue_wave_state_args, Errno> {
    let mut a = kfd_ioctl_get_queue_wave_state_args {
        ctl_stack_address: ctl_stack,
        queue_id,
        ..Default::default()
    };
    // SAFETY: the driver writes the headers into `ctl_stack`, which the callers size for every
    // XCC's part (or pass unmapped on purpose).
    unsafe { kfd.driver().kfd_ioctl_unchecked(&mut a) }.map(|_| a)
}

/// The four words of a wave-state header at `at`.
fn header_at(at: u64) -> [u32; 4] {
    // SAFETY: `at` is in memory the caller keeps mapped (a queue's CWSR area or a local buffer).
    std::array::from_fn(|i| unsafe { std::ptr::read_volatile((at as *const u32).add(i)) })
}

/// What a debugger reads once it suspended a queue: the wave-state header KFD copies into each
/// XCC's part of the queue's context-save area (empty control stack and wave state: nothing was
/// resident), kfdrt's error-report fields beside it, and the queue descriptor's CU and wave
/// limits and apertures. `GET_QUEUE_WAVE_STATE` fails as the driver does.
#[test]
fn a_debugger_reads_the_wave_state_headers_and_the_queue_descriptor() {
    let Some(dut) = common::under_test(
        "debugger::a_debugger_reads_the_wave_state_headers_and_the_queue_descriptor",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    // The device under test; when that is emulated, an emulated MI300X too (one XCC, and eight).
    let mi300 = dut
        .emulator()
        .is_some()
        .then(|| common::emulated(Preset::Gfx942, 1));
    for kfd in std::iter::once(&dut).chain(mi300.as_ref()) {
        let gpu = kfd.gpu(0).unwrap();
        let preset = gpu.info().gfx_target.clone();
        let info = gpu.info().clone();
        let sizes = info.cwsr_sizes(kfd.driver().page_size()).unwrap();
        let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
        let (_info, _notify) = attach(kfd).unwrap();
        let entry = queue_snapshot(kfd)
            .into_iter()
            .find(|e| e.queue_id == q.id())
            .unwrap();
        let cwsr = entry.ctx_save_restore_address;
        let xccs = info.num_xcc.max(1);

        // A running queue has no saved state to give.
        let mut mine = vec![0u8; (sizes.ctx_save_restore_size as usize) * xccs as usize];
        assert_eq!(
            wave_state(kfd, q.id(), mine.as_mut_ptr() as u64).err(),
            Some(Errno::EINVAL),
            "{preset:?}"
        );
        suspend(kfd, q.id());
        let ctl = sizes.ctl_stack_size;
        for x in 0..xccs {
            let at = cwsr + u64::from(sizes.ctx_save_restore_size) * u64::from(x);
            assert_eq!(header_at(at), [ctl, 0, ctl, 0], "{preset:?}: XCC {x}");
            // kfdrt's half of the header: where KFD reports wave exceptions, and the
            // debugger's area after all the XCCs' parts.
            // SAFETY: as `header_at`.
            let (debug_offset, payload) = unsafe {
                (
                    std::ptr::read_volatile((at + 16) as *const u32),
                    std::ptr::read_volatile((at + 24) as *const u64),
                )
            };
            assert_eq!(debug_offset, (xccs - x) * sizes.ctx_save_restore_size);
            assert_ne!(payload, 0, "{preset:?}: XCC {x}");
        }
        // Into the debugger's own buffer, once per XCC.
        let a = wave_state(kfd, q.id(), mine.as_mut_ptr() as u64).unwrap();
        assert_eq!((a.ctl_stack_used_size, a.save_area_used_size), (0, 0));
        for x in 0..xccs {
            let at = mine.as_ptr() as u64 + u64::from(sizes.ctx_save_restore_size) * u64::from(x);
            assert_eq!(header_at(at), [ctl, 0, ctl, 0], "{preset:?}: XCC {x}");
        }
        // Memory the process cannot write, and a queue that does not exist.
        assert_eq!(wave_state(kfd, q.id(), 0x1000).err(), Some(Errno::EFAULT));
        assert_eq!(
            wave_state(kfd, 0xFFFF, mine.as_mut_ptr() as u64).err(),
            Some(Errno::EFAULT)
        );

        // The queue descriptor, as ROCr fills it for a debugger.
        // SAFETY: the queue's amd_queue_t, alive with `q`.
        let d = unsafe { &*(q.amd_queue_address() as *const aql::AmdQueue) };
        assert_eq!(d.max_cu_id, info.compute_units - 1, "{preset:?}");
        let waves = info.properties.get_or_zero("max_waves_per_simd") as u32;
        assert!(waves > 0);
        assert_eq!(d.max_wave_id, waves * info.simd_per_cu - 1, "{preset:?}");
        assert_ne!(d.group_segment_aperture_base_hi, 0, "{preset:?}");
        assert_ne!(d.private_segment_aperture_base_hi, 0, "{preset:?}");
        dbg_trap(kfd, KFD_IOC_DBG_TRAP_DISABLE, |_| {}).unwrap();
    }
}
