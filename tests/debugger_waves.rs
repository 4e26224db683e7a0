//! What a debugger makes the waves do (KFD 1.13): the trap-mask override, the launch mode,
//! address watches and the precise-memory flag, with the errnos of `kfd_debug.c`; and how
//! the exceptions they raise reach the debugger (`kfd_dbg_ev_raise`, then
//! `QUERY_DEBUG_EVENT` and the snapshots). Found by AMD's kfdtest (`KFDDBGTest`), which
//! skipped all of this while kfd-emu reported no debugger firmware support.

use crate::common;
use crate::debugger::{attach, dbg_trap, dbg_trap_out, pending_bytes};

use kfd_sys::bindings::*;
use kfd_sys::Errno;
use kfdrt::emu::Preset;
use kfdrt::{AqlQueueOptions, Dispatch, Error, Gpu, KernelArgs, MemoryKind};
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(20));
/// Long enough for a 256-item dispatch to finish many times over on the emulator.
const NEVER: Option<Duration> = Some(Duration::from_millis(700));

const fn ec(code: u32) -> u64 {
    1 << (code - 1)
}

fn set_exceptions(kfd: &kfdrt::Kfd, mask: u64) {
    dbg_trap(kfd, KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED, |a| {
        a.__bindgen_anon_1.set_exceptions_enabled.exception_mask = mask;
    })
    .unwrap();
}

/// `SET_WAVE_LAUNCH_OVERRIDE`: the result, the previous mask and the supported mask.
fn launch_override(
    kfd: &kfdrt::Kfd,
    mode: u32,
    bits: u32,
    request: u32,
) -> (Result<i32, Errno>, u32, u32) {
    let (r, a) = dbg_trap_out(kfd, KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE, |a| {
        a.__bindgen_anon_1.launch_override = kfd_ioctl_dbg_trap_set_wave_launch_override_args {
            override_mode: mode,
            enable_mask: bits,
            support_request_mask: request,
            pad: 0,
        }
    });
    // SAFETY: the member the operation fills.
    let o = unsafe { a.__bindgen_anon_1.launch_override };
    (r, o.enable_mask, o.support_request_mask)
}

/// `SET_NODE_ADDRESS_WATCH`: the result and the id the driver wrote back.
fn set_watch(kfd: &kfdrt::Kfd, gpu_id: u32, address: u64, mode: u32) -> (Result<i32, Errno>, u32) {
    let (r, a) = dbg_trap_out(kfd, KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH, |a| {
        a.__bindgen_anon_1.set_node_address_watch = kfd_ioctl_dbg_trap_set_node_address_watch_args {
            address,
            mode,
            mask: u32::MAX,
            gpu_id,
            id: 0,
        }
    });
    // SAFETY: the member the operation fills.
    (r, unsafe { a.__bindgen_anon_1.set_node_address_watch.id })
}

fn clear_watch(kfd: &kfdrt::Kfd, gpu_id: u32, id: u32) -> Result<i32, Errno> {
    dbg_trap(kfd, KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH, |a| {
        a.__bindgen_anon_1.clear_node_address_watch =
            kfd_ioctl_dbg_trap_clear_node_address_watch_args { gpu_id, id };
    })
}

/// `QUERY_DEBUG_EVENT` clearing `clear`: (raised exceptions, gpu id, queue id).
fn query(kfd: &kfdrt::Kfd, clear: u64) -> Result<(u64, u32, u32), Errno> {
    let (r, a) = dbg_trap_out(kfd, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, |a| {
        a.__bindgen_anon_1.query_debug_event.exception_mask = clear;
    });
    r?;
    // SAFETY: the member the operation fills.
    let q = unsafe { a.__bindgen_anon_1.query_debug_event };
    Ok((q.exception_mask, q.gpu_id, q.queue_id))
}

/// hipcc's `vector_add(a, b, c, n)` over 256 work-items (64 per group) on a new queue:
/// the wait's result and `c`.
pub(crate) fn vector_add(
    gpu: &Gpu,
    c_out: &kfdrt::Buffer,
    timeout: Option<Duration>,
) -> kfdrt::Result<()> {
    let co = common::load_for(gpu, "kernels");
    let k = co.kernel("vector_add").unwrap();
    let ab = gpu.alloc(256 * 4, MemoryKind::GttCoherent).unwrap();
    let ones: Vec<u8> = (0..256).flat_map(|_| 1.0f32.to_le_bytes()).collect();
    ab.write(0, &ones).unwrap();
    let mut args = KernelArgs::new(&k).unwrap();
    args.set_buffer(0, &ab)
        .unwrap()
        .set_buffer(1, &ab)
        .unwrap()
        .set_buffer(2, c_out)
        .unwrap()
        .set_u32(3, 256)
        .unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    q.dispatch(&Dispatch::linear(&k, 256, 64).with_args(&args))
        .unwrap()
        .wait(timeout)
}

/// The device under test for `test` if a debugger can attach to it (KFD 1.13+ and debugger
/// firmware on its GPUs); `None`, after saying why, otherwise.
fn debuggable(test: &str, stems: &[&str]) -> Option<common::Checked> {
    debuggable_on(test, Preset::Gfx90a, stems)
}

/// As [`debuggable`], falling back to an emulated `preset`.
fn debuggable_on(test: &str, preset: Preset, stems: &[&str]) -> Option<common::Checked> {
    const FIRMWARE: u64 = 0x2000_0000;
    let kfd = common::under_test(test, preset, 1, stems)?;
    let firmware = kfd
        .gpus()
        .iter()
        .all(|g| g.info().properties.get_or_zero("capability") & FIRMWARE != 0);
    if !kfd.supports(kfdrt::Feature::Debugger) || !firmware {
        eprintln!("{test}: skipped: the device has no debugger support");
        return None;
    }
    Some(kfd)
}

/// Emulated: each preset's exact topology.
#[test]
fn the_topology_offers_the_debugger_as_the_driver_does_per_gpu() {
    const FIRMWARE: u64 = 0x2000_0000;
    const PRECISE_MEMORY: u64 = 0x4_0000;
    const TRAP_DEBUG: u64 = 0x3_8000;
    // (preset, precise memory, debug_prop: the watch mask's low and high bits).
    for (preset, precise, prop) in [
        (Preset::Gfx90a, true, 0x1d6),
        (Preset::Gfx942, true, 0x1e7),
        (Preset::Gfx1100, false, 0x1d7),
    ] {
        let kfd = common::emulated(preset, 1);
        let info = kfd.gpu(0).unwrap().info().clone();
        let cap = info.properties.get_or_zero("capability");
        assert_eq!(
            cap & (FIRMWARE | TRAP_DEBUG),
            FIRMWARE | TRAP_DEBUG,
            "{preset:?}"
        );
        assert_eq!(cap & PRECISE_MEMORY != 0, precise, "{preset:?}");
        assert_eq!(cap & 0xF80, 0x280, "{preset:?}: four watch points");
        assert_eq!(
            info.properties.get_or_zero("debug_prop"),
            prop,
            "{preset:?}"
        );
    }
}

/// Emulated: the MI200 and RDNA3 presets' exact trap masks and flags.
#[test]
fn the_trap_override_launch_mode_and_flags_follow_kfds_rules() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let _session = attach(&kfd).unwrap();
    // MI200 traps on every exception but not on wave start or end.
    let start = KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_START as u32;
    let (r, _, supported) = launch_override(&kfd, KFD_DBG_TRAP_OVERRIDE_OR, start, start);
    assert_eq!((r, supported), (Err(Errno::EACCES), 0x1FF));
    let watch = KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH as u32;
    let (r, prev, supported) = launch_override(&kfd, KFD_DBG_TRAP_OVERRIDE_OR, watch, watch);
    assert_eq!((r, prev, supported), (Ok(0), 0, 0x1FF));
    // The request is a write mask: bits outside it keep their value.
    let (r, prev, _) = launch_override(&kfd, KFD_DBG_TRAP_OVERRIDE_REPLACE, 0x1, 0x1);
    assert_eq!((r, prev), (Ok(0), watch));
    let (_, prev, _) = launch_override(&kfd, KFD_DBG_TRAP_OVERRIDE_OR, 0, 0);
    assert_eq!(prev, watch | 0x1);
    assert_eq!(launch_override(&kfd, 2, 0, 0).0, Err(Errno::EPERM));

    let mode = |m: u32| {
        dbg_trap(&kfd, KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE, |a| {
            a.__bindgen_anon_1.launch_mode.launch_mode = m;
        })
    };
    assert_eq!(mode(2), Err(Errno::EINVAL));
    assert_eq!(mode(KFD_DBG_TRAP_WAVE_LAUNCH_MODE_NORMAL), Ok(0));

    let flags = |kfd: &kfdrt::Kfd, f: u32| {
        let (r, a) = dbg_trap_out(kfd, KFD_IOC_DBG_TRAP_SET_FLAGS, |a| {
            a.__bindgen_anon_1.set_flags.flags = f;
        });
        // SAFETY: the member the operation fills.
        (r, unsafe { a.__bindgen_anon_1.set_flags.flags })
    };
    let single = KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP;
    assert_eq!(flags(&kfd, single), (Ok(0), 0));
    // Precise ALU operations are GFX12's: refused, the previous flags returned.
    assert_eq!(flags(&kfd, 2), (Err(Errno::EACCES), single));
    assert_eq!(flags(&kfd, 0), (Ok(0), single));

    // RDNA3 offers no precise memory operations since the 2025 fix.
    let rdna3 = common::emulated(Preset::Gfx1100, 1);
    let _s = attach(&rdna3).unwrap();
    assert_eq!(flags(&rdna3, single), (Err(Errno::EACCES), 0));
}

#[test]
fn address_watch_ids_are_four_per_gpu_and_owned() {
    let Some(kfd) = debuggable(
        "debugger_waves::address_watch_ids_are_four_per_gpu_and_owned",
        &[],
    ) else {
        return;
    };
    let gpu_id = kfd.gpu(0).unwrap().id();
    let _session = attach(&kfd).unwrap();
    let mode = KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ALL;
    for want in 0..4 {
        assert_eq!(set_watch(&kfd, gpu_id, 0x10_0000, mode), (Ok(0), want));
    }
    assert_eq!(
        set_watch(&kfd, gpu_id, 0x10_0000, mode),
        (Err(Errno::ENOMEM), u32::MAX)
    );
    assert_eq!(
        set_watch(&kfd, 0xBAD, 0x10_0000, mode).0,
        Err(Errno::ENODEV)
    );
    assert_eq!(clear_watch(&kfd, gpu_id, 2), Ok(0));
    assert_eq!(clear_watch(&kfd, gpu_id, 2), Err(Errno::EINVAL));
    assert_eq!(clear_watch(&kfd, gpu_id, 7), Err(Errno::EINVAL));
    // The lowest free id is taken first.
    assert_eq!(set_watch(&kfd, gpu_id, 0x20_0000, mode), (Ok(0), 2));
    // Detaching clears them (kfd_dbg_trap_deactivate).
    dbg_trap(&kfd, KFD_IOC_DBG_TRAP_DISABLE, |_| {}).unwrap();
    let _again = attach(&kfd).unwrap();
    assert_eq!(set_watch(&kfd, gpu_id, 0x10_0000, mode), (Ok(0), 0));
}

#[test]
fn a_watched_store_traps_its_wave_and_the_debugger_hears_a_wave_trap() {
    let Some(kfd) = debuggable(
        "debugger_waves::a_watched_store_traps_its_wave_and_the_debugger_hears_a_wave_trap",
        &["kernels"],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let c = gpu.alloc(256 * 4, MemoryKind::GttCoherent).unwrap();
    let (_info, mut notify) = attach(&kfd).unwrap();
    set_exceptions(&kfd, ec(EC_QUEUE_WAVE_TRAP));
    let watch = KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH as u32;
    launch_override(&kfd, KFD_DBG_TRAP_OVERRIDE_OR, watch, watch)
        .0
        .unwrap();
    // Element 100: the second wave's (work-items 64-127) 64-byte block.
    let target = c.gpu_address() + 400;
    // A read watch does not see stores.
    let (r, read_id) = set_watch(&kfd, gpu.id(), target, KFD_DBG_TRAP_ADDRESS_WATCH_MODE_READ);
    r.unwrap();
    vector_add(&gpu, &c, T).unwrap();
    assert_eq!(query(&kfd, 0), Err(Errno::EAGAIN));
    clear_watch(&kfd, gpu.id(), read_id).unwrap();

    let (r, _) = set_watch(
        &kfd,
        gpu.id(),
        target,
        KFD_DBG_TRAP_ADDRESS_WATCH_MODE_NONREAD,
    );
    r.unwrap();
    c.write(0, &[0; 256 * 4]).unwrap();
    // kfdrt's trap handler reports the trap and halts the wave: the dispatch never ends.
    let r = vector_add(&gpu, &c, NEVER);
    assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
    assert!(pending_bytes(&mut notify) > 0, "the debugger was not told");
    let (status, gpu_id, queue_id) = query(&kfd, ec(EC_QUEUE_WAVE_TRAP)).unwrap();
    assert_ne!(status & ec(EC_QUEUE_WAVE_TRAP), 0, "{status:#x}");
    assert_eq!(gpu_id, gpu.id());
    assert_ne!(queue_id, KFD_INVALID_QUEUEID);
    // The watched store itself completed; the wave stopped after it.
    let out = c.to_vec().unwrap();
    let at =
        |i: usize| f32::from_le_bytes([out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3]]);
    assert_eq!(at(100), 2.0);

    // Without the override the watch only marks TRAPSTS: the dispatch completes.
    launch_override(&kfd, KFD_DBG_TRAP_OVERRIDE_REPLACE, 0, watch)
        .0
        .unwrap();
    vector_add(&gpu, &c, T).unwrap();
}

/// Emulated: a planted page fault (an emulated kernel).
#[test]
fn a_page_fault_goes_to_a_subscribed_debugger_as_a_device_exception() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let gpu = kfd.gpu(0).unwrap();
    let (_info, mut notify) = attach(&kfd).unwrap();
    let violation = ec(EC_DEVICE_MEMORY_VIOLATION);
    set_exceptions(&kfd, violation);
    let k = common::page_faulting_kernel(&gpu);
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let r = q.dispatch(&Dispatch::linear(&k, 1, 1)).unwrap().wait(NEVER);
    assert!(r.is_err(), "{r:?}");
    assert!(pending_bytes(&mut notify) > 0);
    // Queues first, then devices: the queue's own status names nothing subscribed.
    let (status, gpu_id, queue_id) = query(&kfd, 0).unwrap();
    assert_eq!(
        (status & violation, gpu_id, queue_id),
        (violation, gpu.id(), KFD_INVALID_QUEUEID)
    );
    // The device snapshot shows it until a mask clears it.
    let snapshot = |clear: u64| {
        let mut e = [kfd_dbg_device_info_entry::default(); 1];
        dbg_trap(&kfd, KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, |a| {
            a.__bindgen_anon_1.device_snapshot = kfd_ioctl_dbg_trap_device_snapshot_args {
                exception_mask: clear,
                snapshot_buf_ptr: e.as_mut_ptr() as u64,
                num_devices: 1,
                entry_size: std::mem::size_of::<kfd_dbg_device_info_entry>() as u32,
            }
        })
        .unwrap();
        e[0].exception_status
    };
    assert_eq!(snapshot(violation) & violation, violation);
    assert_eq!(snapshot(0) & violation, 0);
    assert_eq!(query(&kfd, 0), Err(Errno::EAGAIN));
}

#[test]
fn a_queue_is_not_suspended_before_the_debugger_has_seen_it_created() {
    let Some(kfd) = debuggable(
        "debugger_waves::a_queue_is_not_suspended_before_the_debugger_has_seen_it_created",
        &[],
    ) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let _session = attach(&kfd).unwrap();
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let suspend = |op: u32| {
        let mut ids = [q.id()];
        let ptr = ids.as_mut_ptr() as u64;
        let n = dbg_trap(&kfd, op, |a| {
            if op == KFD_IOC_DBG_TRAP_SUSPEND_QUEUES {
                a.__bindgen_anon_1.suspend_queues = kfd_ioctl_dbg_trap_suspend_queues_args {
                    queue_array_ptr: ptr,
                    num_queues: 1,
                    ..Default::default()
                }
            } else {
                a.__bindgen_anon_1.resume_queues = kfd_ioctl_dbg_trap_resume_queues_args {
                    queue_array_ptr: ptr,
                    num_queues: 1,
                    ..Default::default()
                }
            }
        });
        (n, ids[0])
    };
    let (n, id) = suspend(KFD_IOC_DBG_TRAP_SUSPEND_QUEUES);
    assert_eq!(
        (n, id & KFD_DBG_QUEUE_INVALID_MASK),
        (Ok(0), KFD_DBG_QUEUE_INVALID_MASK)
    );
    // A snapshot clearing EC_QUEUE_NEW shows it raised, then clears it.
    let mut e = [kfd_queue_snapshot_entry::default(); 1];
    let snapshot = |e: &mut [kfd_queue_snapshot_entry; 1]| {
        dbg_trap(&kfd, KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, |a| {
            a.__bindgen_anon_1.queue_snapshot = kfd_ioctl_dbg_trap_queue_snapshot_args {
                exception_mask: ec(EC_QUEUE_NEW),
                snapshot_buf_ptr: e.as_mut_ptr() as u64,
                num_queues: 1,
                entry_size: std::mem::size_of::<kfd_queue_snapshot_entry>() as u32,
            }
        })
        .unwrap();
    };
    snapshot(&mut e);
    assert_eq!(e[0].exception_status & ec(EC_QUEUE_NEW), ec(EC_QUEUE_NEW));
    snapshot(&mut e);
    assert_eq!(e[0].exception_status & ec(EC_QUEUE_NEW), 0);
    assert_eq!(suspend(KFD_IOC_DBG_TRAP_SUSPEND_QUEUES), (Ok(1), q.id()));
    assert_eq!(suspend(KFD_IOC_DBG_TRAP_RESUME_QUEUES), (Ok(1), q.id()));
}

#[test]
fn on_mi300_a_wave_start_trap_stops_every_wave_before_its_first_instruction() {
    let test =
        "debugger_waves::on_mi300_a_wave_start_trap_stops_every_wave_before_its_first_instruction";
    let Some(kfd) = debuggable_on(test, Preset::Gfx942, &["trap"]) else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let target = gpu.info().gfx_target.clone();
    if !target.starts_with("gfx94") {
        eprintln!(
            "{test}: skipped: traps on wave start are MI300's (gfx94x), this GPU is {target}"
        );
        return;
    }
    let co = gpu
        .load_code_object(&common::code_object_for("trap", &target).unwrap())
        .unwrap();
    let k = co.kernel("debugtrap_then_store").unwrap();
    let out = gpu.alloc(64 * 4, MemoryKind::GttCoherent).unwrap();
    out.write(0, &[0xFF; 64 * 4]).unwrap();
    let mut args = KernelArgs::new(&k).unwrap();
    args.set_buffer(0, &out).unwrap();
    let (_info, mut notify) = attach(&kfd).unwrap();
    set_exceptions(&kfd, ec(EC_QUEUE_WAVE_TRAP));
    let start = KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_START as u32;
    let (r, _, supported) = launch_override(&kfd, KFD_DBG_TRAP_OVERRIDE_OR, start, start);
    assert_eq!(r, Ok(0));
    assert_eq!(supported & start, start);
    let q = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
    let r = q
        .dispatch(&Dispatch::linear(&k, 64, 64).with_args(&args))
        .unwrap()
        .wait(NEVER);
    // kfdrt's handler reports the trap and halts the wave where it trapped: nothing stored.
    assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
    assert!(pending_bytes(&mut notify) > 0);
    let (status, _, queue_id) = query(&kfd, ec(EC_QUEUE_WAVE_TRAP)).unwrap();
    assert_ne!(status & ec(EC_QUEUE_WAVE_TRAP), 0);
    assert_eq!(queue_id, q.id());
    assert!(out.to_vec().unwrap().iter().all(|&b| b == 0xFF));
}
