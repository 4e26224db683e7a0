//! Checks every ioctl number and every struct size and field offset kfdrt uses against the C
//! header, by compiling a small C program. Skips (with a message) where there is no C compiler or
//! no `linux/kfd_ioctl.h`.

use kfd_sys::bindings::*;
use kfd_sys::ioctl::request;
use std::collections::HashMap;
use std::mem::{offset_of, size_of};
use std::path::Path;
use std::process::Command;

const HEADER: &str = "/usr/include/linux/kfd_ioctl.h";

/// (name, C expression, Rust value)
fn expectations() -> Vec<(String, String, u64)> {
    let mut v: Vec<(String, String, u64)> = Vec::new();
    macro_rules! req {
        ($($name:ident),*) => {$(
            v.push((
                concat!("AMDKFD_IOC_", stringify!($name)).into(),
                concat!("(unsigned long long)AMDKFD_IOC_", stringify!($name)).into(),
                u64::from(request::$name.raw()),
            ));
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
        AVAILABLE_MEMORY
    );
    macro_rules! layout {
        ($ty:ident { $($field:ident),* }) => {
            v.push((
                concat!("sizeof(", stringify!($ty), ")").into(),
                concat!("(unsigned long long)sizeof(struct ", stringify!($ty), ")").into(),
                size_of::<$ty>() as u64,
            ));
            $(v.push((
                concat!(stringify!($ty), ".", stringify!($field)).into(),
                concat!("(unsigned long long)offsetof(struct ", stringify!($ty), ", ", stringify!($field), ")").into(),
                offset_of!($ty, $field) as u64,
            ));)*
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
    v
}

#[test]
fn ioctl_numbers_and_layouts_match_the_c_header() {
    if !Path::new(HEADER).exists() {
        eprintln!("skipped: {HEADER} not present (apt-get install linux-libc-dev)");
        return;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if Command::new(&cc).arg("--version").output().is_err() {
        eprintln!("skipped: no C compiler ({cc})");
        return;
    }
    let exp = expectations();
    let dir = std::env::temp_dir().join(format!("kfd-sys-check-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("drm")).unwrap();
    // kfd_ioctl.h includes <drm/drm.h> only for the fixed-width types and _IOC macros, which
    // Debian ships in libdrm-dev under another path; a shim stands in when it is missing.
    std::fs::write(
        dir.join("drm/drm.h"),
        "#include <linux/types.h>\n#include <linux/ioctl.h>\n",
    )
    .unwrap();
    let mut src = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <linux/kfd_ioctl.h>\nint main(void) {\n",
    );
    for (name, expr, _) in &exp {
        src.push_str(&format!("  printf(\"%s %llu\\n\", \"{name}\", {expr});\n"));
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
    let mut mismatches = Vec::new();
    for (name, _, rust) in &exp {
        match values.get(name) {
            Some(c) if c == rust => {}
            other => mismatches.push(format!("{name}: C {other:?}, Rust {rust}")),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        mismatches.is_empty(),
        "mismatches:\n{}",
        mismatches.join("\n")
    );
    assert!(exp.len() > 100, "checked only {} values", exp.len());
}
