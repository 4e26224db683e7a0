//! fork(): a child of the process that opened the device cannot use it. KFD answers the
//! child's calls on the inherited file with EBADF (`kfd_ioctl`: "Using KFD FD in wrong
//! process"), kfdrt refuses every entry point with `Error::ForkedChild` (before touching queue
//! or signal memory, which is not mapped in the child: `MADV_DONTFORK`), the child can open a
//! device of its own, and the parent carries on untouched. A second handle on the device in one
//! process is refused too.

use crate::common;

use kfd_sys::bindings::kfd_ioctl_get_version_args;
use kfd_sys::{DriverExt, Errno};
use kfdrt::emu::Preset;
use kfdrt::{AqlQueueOptions, CopyPath, Error, Kfd, MemoryKind};
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(30));

fn forked_child(err: Result<impl Sized, Error>, what: &str, parent: u32) -> Result<(), String> {
    match err {
        Err(Error::ForkedChild { parent: p, child })
            if p == parent && child == std::process::id() =>
        {
            Ok(())
        }
        Err(e) => Err(format!("{what}: {e} (expected ForkedChild)")),
        Ok(_) => Err(format!("{what} succeeded in the forked child")),
    }
}

/// Whether `addr` is mapped in this process (`mincore` answers ENOMEM for a hole).
fn mapped(addr: u64) -> bool {
    let page = addr & !4095;
    let mut vec = 0u8;
    // SAFETY: mincore only reads the page tables; `vec` holds the one byte for one page.
    unsafe { libc::mincore(page as *mut _, 4096, &mut vec) == 0 }
}

/// What the child checks; `Err` names the first thing that was wrong.
fn in_child(kfd: &Kfd, parent: u32) -> Result<(), String> {
    let gpu = kfd.gpu(0).ok_or("no GPU 0")?;
    let mut version = kfd_ioctl_get_version_args::default();
    match kfd.driver().kfd_ioctl(&mut version) {
        Err(e) if e == Errno::EBADF => {}
        other => {
            return Err(format!(
                "GET_VERSION on the parent's file: {other:?}, not EBADF"
            ))
        }
    }
    forked_child(kfd.create_signal(0), "create_signal", parent)?;
    forked_child(gpu.alloc(4096, MemoryKind::GttCoherent), "alloc", parent)?;
    forked_child(
        gpu.create_aql_queue(AqlQueueOptions::default()),
        "create_aql_queue",
        parent,
    )?;
    // The child opens its own device, and it works.
    let own = Kfd::builder()
        .emulated(kfd_emu_config())
        .open()
        .map_err(|e| format!("a device of its own: {e}"))?;
    let g = own.gpu(0).ok_or("no GPU 0 of its own")?;
    let buf = g
        .alloc(4096, MemoryKind::GttCoherent)
        .map_err(|e| e.to_string())?;
    let engine = g
        .copy_engine_preferring(CopyPath::Sdma)
        .map_err(|e| e.to_string())?;
    engine
        .fill(&buf, 0, 0x5eed_f00d, 4096, &[])
        .and_then(|c| c.wait(T))
        .map_err(|e| format!("a fill on the child's own device: {e}"))?;
    let v = buf.to_vec().map_err(|e| e.to_string())?;
    if v[..4] != 0x5eed_f00du32.to_le_bytes() {
        return Err("the child's own fill wrote nothing".into());
    }
    Ok(())
}

fn kfd_emu_config() -> kfdrt::emu::EmuConfig {
    kfdrt::emu::EmuConfig::new(Preset::Gfx90a, 1)
}

/// The child's objects inherited from the parent stay alive until `_exit` (never dropped: their
/// memory is not mapped in the child).
fn run_child(kfd: &Kfd, queue_and_more: impl FnOnce() -> Result<(), String>) -> ! {
    let parent = std::os::unix::process::parent_id();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        queue_and_more()?;
        in_child(kfd, parent)
    }));
    let code = match result {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            eprintln!("forked child: {e}");
            1
        }
        Err(_) => 2,
    };
    // SAFETY: ends the child at once, running no destructor of the parent's objects.
    unsafe { libc::_exit(code) }
}

#[test]
fn a_forked_child_is_refused_the_parents_device_and_opens_its_own() {
    common::own_process::in_own_process(
        "fork::a_forked_child_is_refused_the_parents_device_and_opens_its_own",
        || {
            let kfd = common::emulated(Preset::Gfx90a, 1);
            let gpu = kfd.gpu(0).unwrap();
            let queue = gpu.create_aql_queue(AqlQueueOptions::default()).unwrap();
            let engine = gpu.copy_engine_preferring(CopyPath::Sdma).unwrap();
            let buf = gpu.alloc(1 << 16, MemoryKind::GttCoherent).unwrap();
            let signal = kfd.create_signal(1).unwrap();
            let host_view = buf.as_ptr().unwrap() as u64;
            assert!(mapped(host_view));
            let parent = std::process::id();
            // SAFETY: the child only runs `run_child`, which ends in `_exit`.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
            if pid == 0 {
                run_child(&kfd, || {
                    if mapped(host_view) {
                        return Err(
                            "a buffer the GPU uses is mapped in the child (no MADV_DONTFORK)"
                                .into(),
                        );
                    }
                    forked_child(queue.batch(), "a batch on the parent's queue", parent)?;
                    forked_child(
                        engine.fill(&buf, 0, 7, 64, &[]),
                        "a fill on the parent's engine",
                        parent,
                    )?;
                    forked_child(
                        signal.wait(kfdrt::Condition::Lt(1), T),
                        "a signal wait",
                        parent,
                    )?;
                    Ok(())
                });
            }
            let mut status = 0;
            // SAFETY: waits for the child just forked; `status` is writable.
            assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "the forked child failed (status {status:#x}; its message is above)"
            );
            // The parent's device, queue, engine and buffer are untouched.
            engine
                .fill(&buf, 0, 0xabcd_0123, 1 << 16, &[])
                .unwrap()
                .wait(T)
                .unwrap();
            assert_eq!(buf.to_vec().unwrap()[..4], 0xabcd_0123u32.to_le_bytes());
            queue.batch().unwrap().submit().unwrap().wait(T).unwrap();
            signal.store(0).unwrap();
            drop((queue, engine, buf, signal));
        },
    );
}

/// A second open of the device in one process (another `Kfd`, or kfdrt beside ROCr) is refused
/// at ACQUIRE_VM, as KFD refuses a second render-node file for a process's VM, with a typed
/// error; the first device carries on.
#[test]
fn a_second_device_handle_in_one_process_is_refused_with_device_in_use() {
    let kfd = common::emulated(Preset::Gfx90a, 1);
    let emu: std::sync::Arc<dyn kfd_sys::Driver> = kfd.emulator().unwrap().clone();
    match Kfd::builder().driver(emu).open() {
        Err(Error::DeviceInUse { gpu_id }) => assert_eq!(gpu_id, kfd.gpu(0).unwrap().id()),
        Err(e) => panic!("a second handle: {e} (expected DeviceInUse)"),
        Ok(_) => panic!("a second handle on the process's device was opened"),
    }
    let s = kfd.create_signal(1).unwrap();
    s.store(0).unwrap();
    assert_eq!(s.wait(kfdrt::Condition::Lt(1), T).unwrap(), 0);
}
