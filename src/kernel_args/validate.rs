//! `KFDRT_VALIDATE=1`: before a dispatch is published, check what the hardware would choke on
//! or silently get wrong, and refuse it with an error naming the field and its value.
//!
//! Checked (beyond what kfdrt always checks: grid and work-group sizes, LDS against the GPU's,
//! objects of another device, copy ranges and mappings): the kernel object lies in a buffer of
//! this device that is mapped on the executing GPU and executable, with a kernel descriptor
//! whose entry lies in mapped executable memory and whose register counts fit the target;
//! the kernel arguments are at least the kernel's kernarg size; every global-buffer argument
//! (by the kernel's metadata) points into a buffer mapped on the executing GPU.
//!
//! To know what is mapped where, a validating device keeps a map of its buffers' address
//! ranges (`debug::address_map`, kept only while the switch is on).

use crate::debug::address_map::AddressMap;
use crate::error::{Error, Result};
use crate::kernel::Kernel;

fn refuse(field: &'static str, value: String, reason: String) -> Error {
    Error::Validation {
        packet: "kernel dispatch",
        field,
        value,
        reason,
    }
}

/// Checks a dispatch of `kernel` with argument bytes `kernargs` on GPU `gpu_id` whose LDS and
/// registers are described by `gpu`.
pub(crate) fn dispatch(
    map: &AddressMap,
    gpu: &crate::device::Gpu,
    kernel: &Kernel,
    kernargs: &[u8],
) -> Result<()> {
    let gpu_id = gpu.id();
    let object = kernel.object();
    let code = map.find(object, 64).ok_or_else(|| {
        refuse(
            "kernel_object",
            format!("{object:#x}"),
            format!(
                "kernel {} has no descriptor in any buffer of this device",
                kernel.name()
            ),
        )
    })?;
    if !code.mapped_gpus.contains(&gpu_id) {
        return Err(refuse(
            "kernel_object",
            format!("{object:#x}"),
            format!(
                "not mapped on GPU {gpu_id:#x} (mapped on {:x?})",
                code.mapped_gpus
            ),
        ));
    }
    if !code.executable {
        return Err(refuse(
            "kernel_object",
            format!("{object:#x}"),
            "in memory allocated without execute permission".into(),
        ));
    }
    if let Some(kd) = kernel.descriptor() {
        let entry = object.wrapping_add_signed(kd.kernel_code_entry_byte_offset);
        match map.find(entry, 4) {
            Some(f) if f.executable && f.mapped_gpus.contains(&gpu_id) => {}
            _ => {
                return Err(refuse(
                    "kernel_code_entry_byte_offset",
                    format!("{} (entry {entry:#x})", kd.kernel_code_entry_byte_offset),
                    "the entry is not in mapped executable memory".into(),
                ))
            }
        }
        // COMPUTE_PGM_RSRC1: VGPRs in blocks of 8 (wave64 gfx9: up to 512 with AGPRs), SGPRs
        // in blocks of 16 (up to 112 on gfx9).
        let vgprs = ((kd.compute_pgm_rsrc1 & 0x3F) + 1) * 8;
        let sgprs = (((kd.compute_pgm_rsrc1 >> 6) & 0xF) + 1) * 16;
        if vgprs > 512 {
            return Err(refuse(
                "compute_pgm_rsrc1",
                format!("{:#x}", kd.compute_pgm_rsrc1),
                format!("{vgprs} VGPRs exceed the 512 a wave can have"),
            ));
        }
        if gpu.info().gfx_target_version < 100000 && sgprs > 112 + 16 {
            return Err(refuse(
                "compute_pgm_rsrc1",
                format!("{:#x}", kd.compute_pgm_rsrc1),
                format!("{sgprs} SGPRs exceed what a GFX9 wave has"),
            ));
        }
    }
    let need = kernel.kernarg_size() as usize;
    if kernargs.len() < need {
        return Err(refuse(
            "kernarg_address",
            format!("{} bytes", kernargs.len()),
            format!("kernel {} reads {need} bytes of arguments", kernel.name()),
        ));
    }
    if let Some(meta) = kernel.metadata() {
        for (i, a) in meta.args.iter().enumerate() {
            if a.kind != crate::code_object::ArgKind::GlobalBuffer || a.size != 8 {
                continue;
            }
            let at = a.offset as usize;
            let Some(bytes) = kernargs.get(at..at + 8) else {
                continue;
            };
            let mut v = [0u8; 8];
            v.copy_from_slice(bytes);
            let addr = u64::from_le_bytes(v);
            if addr == 0 {
                continue;
            }
            match map.find(addr, 1) {
                Some(f) if f.mapped_gpus.contains(&gpu_id) => {}
                Some(f) => {
                    return Err(refuse(
                        "argument",
                        format!("#{i} = {addr:#x}"),
                        format!(
                            "the buffer is not mapped on GPU {gpu_id:#x} (mapped on {:x?})",
                            f.mapped_gpus
                        ),
                    ))
                }
                None => {
                    return Err(refuse(
                        "argument",
                        format!("#{i} = {addr:#x}"),
                        "not in any buffer of this device".into(),
                    ))
                }
            }
        }
    }
    Ok(())
}
