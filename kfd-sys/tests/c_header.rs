//! Checks every ioctl number and every struct size and field offset kfdrt uses against the C
//! header, by compiling a small C program. Skips (with a message) where there is no C compiler or
//! no `linux/kfd_ioctl.h`.
//!
//! The header is the system's (`/usr/include/linux/kfd_ioctl.h`) or `$KFD_IOCTL_HEADER`. An
//! older header than the bindings' is checked as an older kernel sees kfdrt: what it defines
//! must sit at the same offsets, its structs may be shorter (KFD zero-extends a short argument
//! and copies back only what the caller passed), and requests must agree in everything but the
//! size; what it does not define yet is skipped.

use kfd_sys::bindings::*;
use kfd_sys::ioctl::{kfd_request_by_nr, request};
use kfd_sys::KFD_ABI;
use std::collections::HashMap;
use std::mem::{offset_of, size_of};
use std::path::Path;
use std::process::Command;

const SYSTEM_HEADER: &str = "/usr/include/linux/kfd_ioctl.h";

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Offset,
    Size,
    Request,
}

struct Expect {
    name: String,
    expr: String,
    rust: u64,
    kind: Kind,
    /// The first KFD minor version whose header defines it.
    since: u32,
}

fn expectations() -> Vec<Expect> {
    let mut v: Vec<Expect> = Vec::new();
    macro_rules! req {
        ($($name:ident),*) => {$(
            v.push(Expect {
                name: concat!("AMDKFD_IOC_", stringify!($name)).into(),
                expr: concat!("(unsigned long long)AMDKFD_IOC_", stringify!($name)).into(),
                rust: u64::from(request::$name.raw()),
                kind: Kind::Request,
                since: kfd_request_by_nr(request::$name.nr()).map_or(1, |(_, v)| v.minor),
            });
        )*};
    }
    req!(
        GET_VERSION,
        CREATE_QUEUE,
        DESTROY_QUEUE,
        SET_MEMORY_POLICY,
        GET_CLOCK_COUNTERS,
        GET_PROCESS_APERTURES,
        UPDATE_QUEUE,
        CREATE_EVENT,
        DESTROY_EVENT,
        SET_EVENT,
        RESET_EVENT,
        WAIT_EVENTS,
        DBG_REGISTER_DEPRECATED,
        DBG_UNREGISTER_DEPRECATED,
        DBG_ADDRESS_WATCH_DEPRECATED,
        DBG_WAVE_CONTROL_DEPRECATED,
        SET_SCRATCH_BACKING_VA,
        GET_TILE_CONFIG,
        SET_TRAP_HANDLER,
        GET_PROCESS_APERTURES_NEW,
        ACQUIRE_VM,
        ALLOC_MEMORY_OF_GPU,
        FREE_MEMORY_OF_GPU,
        MAP_MEMORY_TO_GPU,
        UNMAP_MEMORY_FROM_GPU,
        SET_CU_MASK,
        GET_QUEUE_WAVE_STATE,
        GET_DMABUF_INFO,
        IMPORT_DMABUF,
        ALLOC_QUEUE_GWS,
        SMI_EVENTS,
        SVM,
        SET_XNACK_MODE,
        CRIU_OP,
        AVAILABLE_MEMORY,
        EXPORT_DMABUF,
        RUNTIME_ENABLE,
        DBG_TRAP
    );
    macro_rules! layout {
        ($ty:ident { $($field:ident),* }) => { layout!($ty since 1 { $($field),* }) };
        ($ty:ident since $since:literal { $($field:ident),* }) => {
            v.push(Expect {
                name: concat!("sizeof(", stringify!($ty), ")").into(),
                expr: concat!("(unsigned long long)sizeof(struct ", stringify!($ty), ")").into(),
                rust: size_of::<$ty>() as u64,
                kind: Kind::Size,
                since: $since,
            });
            $(v.push(Expect {
                name: concat!(stringify!($ty), ".", stringify!($field)).into(),
                expr: concat!("(unsigned long long)offsetof(struct ", stringify!($ty), ", ", stringify!($field), ")").into(),
                rust: offset_of!($ty, $field) as u64,
                kind: Kind::Offset,
                since: $since,
            });)*
        };
        (@field $ty:ident since $since:literal { $($field:ident),* }) => {
            $(v.push(Expect {
                name: concat!(stringify!($ty), ".", stringify!($field)).into(),
                expr: concat!("(unsigned long long)offsetof(struct ", stringify!($ty), ", ", stringify!($field), ")").into(),
                rust: offset_of!($ty, $field) as u64,
                kind: Kind::Offset,
                since: $since,
            });)*
        };
    }
    layout!(kfd_ioctl_get_version_args {
        major_version,
        minor_version
    });
    layout!(kfd_ioctl_create_queue_args {
        ring_base_address,
        write_pointer_address,
        read_pointer_address,
        doorbell_offset,
        ring_size,
        gpu_id,
        queue_type,
        queue_percentage,
        queue_priority,
        queue_id,
        eop_buffer_address,
        eop_buffer_size,
        ctx_save_restore_address,
        ctx_save_restore_size,
        ctl_stack_size
    });
    layout!(kfd_ioctl_destroy_queue_args { queue_id });
    layout!(kfd_ioctl_update_queue_args {
        ring_base_address,
        queue_id,
        ring_size,
        queue_percentage,
        queue_priority
    });
    layout!(kfd_ioctl_get_clock_counters_args {
        gpu_clock_counter,
        cpu_clock_counter,
        system_clock_counter,
        system_clock_freq,
        gpu_id
    });
    layout!(kfd_process_device_apertures {
        lds_base,
        lds_limit,
        scratch_base,
        scratch_limit,
        gpuvm_base,
        gpuvm_limit,
        gpu_id
    });
    layout!(kfd_ioctl_get_process_apertures_new_args {
        kfd_process_device_apertures_ptr,
        num_of_nodes
    });
    layout!(kfd_ioctl_acquire_vm_args { drm_fd, gpu_id });
    layout!(kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr,
        size,
        handle,
        mmap_offset,
        gpu_id,
        flags
    });
    layout!(kfd_ioctl_free_memory_of_gpu_args { handle });
    layout!(kfd_ioctl_map_memory_to_gpu_args {
        handle,
        device_ids_array_ptr,
        n_devices,
        n_success
    });
    layout!(kfd_ioctl_unmap_memory_from_gpu_args {
        handle,
        device_ids_array_ptr,
        n_devices,
        n_success
    });
    layout!(kfd_ioctl_create_event_args {
        event_page_offset,
        event_trigger_data,
        event_type,
        auto_reset,
        node_id,
        event_id,
        event_slot_index
    });
    layout!(kfd_ioctl_destroy_event_args { event_id });
    layout!(kfd_ioctl_set_event_args { event_id });
    layout!(kfd_ioctl_reset_event_args { event_id });
    layout!(kfd_ioctl_wait_events_args {
        events_ptr,
        num_events,
        wait_for_all,
        timeout,
        wait_result
    });
    layout!(kfd_event_data {
        kfd_event_data_ext,
        event_id
    });
    layout!(kfd_hsa_memory_exception_data {
        failure,
        va,
        gpu_id
    });
    layout!(kfd_ioctl_get_available_memory_args { available, gpu_id });
    layout!(kfd_ioctl_set_xnack_mode_args { xnack_enabled });
    layout!(kfd_ioctl_get_tile_config_args {
        tile_config_ptr,
        macro_tile_config_ptr,
        num_tile_configs,
        num_macro_tile_configs,
        gpu_id,
        gb_addr_config,
        num_banks,
        num_ranks
    });
    layout!(kfd_ioctl_svm_args {
        start_addr,
        size,
        op,
        nattr
    });
    layout!(kfd_ioctl_set_memory_policy_args {
        alternate_aperture_base,
        alternate_aperture_size,
        gpu_id,
        default_policy,
        alternate_policy
    });
    layout!(kfd_ioctl_set_scratch_backing_va_args { va_addr, gpu_id });
    layout!(kfd_ioctl_set_trap_handler_args {
        tba_addr,
        tma_addr,
        gpu_id
    });
    layout!(@field kfd_ioctl_create_queue_args since 17 { sdma_engine_id });
    layout!(@field kfd_ioctl_set_memory_policy_args since 18 { misc_process_flag });
    layout!(kfd_ioctl_export_dmabuf_args since 12 {
        handle,
        flags,
        dmabuf_fd
    });
    layout!(kfd_ioctl_import_dmabuf_args {
        va_addr,
        handle,
        gpu_id,
        dmabuf_fd
    });
    layout!(kfd_ioctl_get_dmabuf_info_args {
        size,
        metadata_ptr,
        metadata_size,
        gpu_id,
        flags,
        dmabuf_fd
    });
    layout!(kfd_ioctl_alloc_queue_gws_args {
        queue_id,
        num_gws,
        first_gws
    });
    layout!(kfd_ioctl_runtime_enable_args since 13 {
        r_debug,
        mode_mask,
        capabilities_mask
    });
    layout!(kfd_runtime_info since 13 {
        r_debug,
        runtime_state,
        ttmp_setup
    });
    layout!(kfd_ioctl_dbg_trap_args since 13 { pid, op });
    layout!(kfd_ioctl_dbg_trap_enable_args since 13 {
        exception_mask,
        rinfo_ptr,
        rinfo_size,
        dbg_fd
    });
    layout!(kfd_ioctl_dbg_trap_queue_snapshot_args since 13 {
        exception_mask,
        snapshot_buf_ptr,
        num_queues,
        entry_size
    });
    layout!(kfd_ioctl_dbg_trap_device_snapshot_args since 13 {
        exception_mask,
        snapshot_buf_ptr,
        num_devices,
        entry_size
    });
    layout!(kfd_ioctl_dbg_trap_suspend_queues_args since 13 {
        exception_mask,
        queue_array_ptr,
        num_queues,
        grace_period
    });
    layout!(kfd_ioctl_dbg_trap_resume_queues_args since 13 {
        queue_array_ptr,
        num_queues
    });
    layout!(kfd_queue_snapshot_entry since 13 {
        exception_status,
        ring_base_address,
        write_pointer_address,
        read_pointer_address,
        ctx_save_restore_address,
        queue_id,
        gpu_id,
        ring_size,
        queue_type,
        ctx_save_restore_area_size
    });
    layout!(kfd_dbg_device_info_entry since 13 {
        exception_status,
        lds_base,
        lds_limit,
        scratch_base,
        scratch_limit,
        gpuvm_base,
        gpuvm_limit,
        gpu_id,
        location_id,
        vendor_id,
        device_id,
        revision_id,
        subsystem_vendor_id,
        subsystem_device_id,
        fw_version,
        gfx_target_version,
        simd_count,
        max_waves_per_simd,
        array_count,
        simd_arrays_per_engine,
        num_xcc,
        capability,
        debug_prop
    });
    v
}

#[test]
fn ioctl_numbers_and_layouts_match_the_c_header() {
    let header = std::env::var("KFD_IOCTL_HEADER").unwrap_or_else(|_| SYSTEM_HEADER.into());
    let header = Path::new(&header);
    if !header.exists() {
        eprintln!(
            "skipped: {} not present (apt-get install linux-libc-dev)",
            header.display()
        );
        return;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if Command::new(&cc).arg("--version").output().is_err() {
        eprintln!("skipped: no C compiler ({cc})");
        return;
    }
    let exp = expectations();
    let dir = std::env::temp_dir().join(format!("kfd-sys-check-{}", std::process::id()));
    for shim in ["drm", "libdrm"] {
        std::fs::create_dir_all(dir.join(shim)).unwrap();
        // kfd_ioctl.h includes <drm/drm.h> (libhsakmt's copy <libdrm/drm.h>) only for the
        // fixed-width types and _IOC macros, which Debian ships in libdrm-dev under another
        // path; a shim stands in.
        std::fs::write(
            dir.join(shim).join("drm.h"),
            "#include <linux/types.h>\n#include <linux/ioctl.h>\n",
        )
        .unwrap();
    }
    let mut src = format!(
        "#include <stdio.h>\n#include <stddef.h>\n#include \"{}\"\nint main(void) {{\n  printf(\"minor %d\\n\", KFD_IOCTL_MINOR_VERSION);\n",
        header.display()
    );
    for e in &exp {
        src.push_str(&format!(
            "#if KFD_IOCTL_MINOR_VERSION >= {}\n  printf(\"%s %llu\\n\", \"{}\", {});\n#endif\n",
            e.since, e.name, e.expr
        ));
    }
    src.push_str("  return 0;\n}\n");
    let c = dir.join("check.c");
    let exe = dir.join("check");
    std::fs::write(&c, src).unwrap();
    let out = Command::new(&cc)
        .arg(format!("-I{}", dir.display()))
        .arg(&c)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "C compile failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success());
    let values: HashMap<String, u64> = String::from_utf8_lossy(&run.stdout)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_owned(), v.parse().ok()?))
        })
        .collect();
    let minor = values["minor"] as u32;
    let same = minor == KFD_ABI.minor;
    assert!(
        minor <= KFD_ABI.minor,
        "the header (KFD 1.{minor}) is newer than the bindings ({KFD_ABI}): regenerate them"
    );
    const SIZE_BITS: u64 = 0x3FFF << 16;
    let mut mismatches = Vec::new();
    let mut checked = 0;
    for e in exp.iter().filter(|e| e.since <= minor) {
        checked += 1;
        let Some(&c) = values.get(&e.name) else {
            mismatches.push(format!("{}: missing from the C output", e.name));
            continue;
        };
        let ok = match e.kind {
            _ if same => c == e.rust,
            Kind::Offset => c == e.rust,
            Kind::Size => c <= e.rust,
            Kind::Request => {
                c & !SIZE_BITS == e.rust & !SIZE_BITS && c & SIZE_BITS <= e.rust & SIZE_BITS
            }
        };
        if !ok {
            mismatches.push(format!(
                "{} ({:?}): C {c:#x}, Rust {:#x}",
                e.name, e.kind, e.rust
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        mismatches.is_empty(),
        "against KFD 1.{minor} ({}):\n{}",
        header.display(),
        mismatches.join("\n")
    );
    assert!(checked > 100, "checked only {checked} values");
    eprintln!(
        "checked {checked} values against KFD 1.{minor} ({})",
        header.display()
    );
}
