//! Graphics command submission on the render node, as far as libdrm's `amdgpu_bo_va_op`,
//! `amdgpu_bo_list_create` and `amdgpu_cs_submit` take it for the SDMA engine (what kfdtest's
//! eviction tests do while KFD work runs):
//! - `DRM_IOCTL_AMDGPU_GEM_VA`: a GEM object mapped into the GPU's VM, the same VM as KFD's
//!   (libhsakmt made the render node's VM the process's with `ACQUIRE_VM`). `amdgpu_gem_va_ioctl`'s
//!   checks: page-aligned address and size inside the object, no overlap with another mapping
//!   (`amdgpu_vm_bo_map`); unmapping what is not mapped is ENOENT; closing a GEM handle unmaps
//!   it (`amdgpu_gem_object_close`).
//! - `DRM_IOCTL_AMDGPU_BO_LIST`: create, update and destroy lists of GEM handles.
//! - `DRM_IOCTL_AMDGPU_CS`: IB chunks for the DMA ring run at once, in order, on the GPU's SDMA
//!   engine (the packets kfd-emu's SDMA queues run; others stop the IB with a warning); BO-handle
//!   and dependency chunks are taken (the work is already complete). Returns the fence sequence
//!   number of the context's ring.
//! - `DRM_IOCTL_AMDGPU_WAIT_CS`: the fence of a submission, always signalled.
//!
//! Lenient: an IB that faults (unmapped, or a packet touching unmapped memory) is logged and its
//! fence still signals, where the GPU would raise a VM fault in the process's VM (which KFD then
//! reports and answers by evicting the process's queues).
//!
//! Not modelled: IBs for the graphics and compute rings (the GFX and compute command processors
//! run only KFD queues here; such a submission is refused with EINVAL and a warning), user
//! fences, syncobjs, and the eviction of KFD buffers that graphics memory pressure causes
//! (every process has its own emulator and VRAM).

use crate::memfd::SharedMem;
use crate::vm::{MappingKind, Perms};
use crate::Emulator;
use kfd_sys::{Errno, IoctlRequest};
use sdma::SdmaPacket;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// `DRM_AMDGPU_*` command numbers (after `DRM_COMMAND_BASE`).
const NR_BO_LIST: u8 = 0x43;
const NR_CS: u8 = 0x44;
const NR_GEM_VA: u8 = 0x48;
const NR_WAIT_CS: u8 = 0x49;

/// `AMDGPU_VA_OP_*`.
const VA_OP_MAP: u32 = 1;
const VA_OP_UNMAP: u32 = 2;
/// `AMDGPU_VM_PAGE_WRITEABLE`, `_EXECUTABLE`.
const VM_PAGE_WRITEABLE: u32 = 1 << 2;
const VM_PAGE_EXECUTABLE: u32 = 1 << 3;
/// `AMDGPU_VA_RESERVED_BOTTOM`: the lowest 2 MiB are the kernel's.
const VA_RESERVED_BOTTOM: u64 = 2 << 20;
/// `AMDGPU_GMC_HOLE_START`: the low half of the VM ends here (what `AMDGPU_INFO_DEV_INFO`
/// reports as `virtual_address_max`); the high half is not mapped for these objects.
const VA_LOW_END: u64 = 0x8000_0000_0000;
/// `AMDGPU_BO_LIST_OP_*`.
const BO_LIST_CREATE: u32 = 0;
const BO_LIST_DESTROY: u32 = 1;
const BO_LIST_UPDATE: u32 = 2;
/// `AMDGPU_CHUNK_ID_*`.
const CHUNK_IB: u32 = 0x01;
const CHUNK_DEPENDENCIES: u32 = 0x03;
const CHUNK_BO_HANDLES: u32 = 0x06;
/// `AMDGPU_HW_IP_DMA`.
const HW_IP_DMA: u32 = 2;
/// Mapping handles of GEM objects in the VM, apart from KFD's buffer handles.
const GEM_VA_HANDLE: u64 = 0x6765_6D00_0000_0000;

/// `struct drm_amdgpu_gem_va`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DrmAmdgpuGemVa {
    /// The GEM handle.
    pub handle: u32,
    /// Padding.
    pub pad: u32,
    /// `AMDGPU_VA_OP_*`.
    pub operation: u32,
    /// `AMDGPU_VM_PAGE_*`.
    pub flags: u32,
    /// Where in the VM.
    pub va_address: u64,
    /// From which byte of the object.
    pub offset_in_bo: u64,
    /// How many bytes.
    pub map_size: u64,
}

/// `union drm_amdgpu_bo_list` (in: operation, list handle, entries; out: the list handle).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DrmAmdgpuBoList {
    /// In: `AMDGPU_BO_LIST_OP_*`; out: the new list's handle.
    pub operation: u32,
    /// In: the list (destroy, update).
    pub list_handle: u32,
    /// In: entries.
    pub bo_number: u32,
    /// In: bytes per entry.
    pub bo_info_size: u32,
    /// In: the entries (`struct drm_amdgpu_bo_list_entry`: handle, priority).
    pub bo_info_ptr: u64,
}

/// `union drm_amdgpu_cs` (in: context, list, chunks; out: the fence sequence number).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DrmAmdgpuCs {
    /// In: the context; out: the sequence number's low half.
    pub ctx_id: u32,
    /// In: the BO list (0: none); out: the sequence number's high half.
    pub bo_list_handle: u32,
    /// In: chunks.
    pub num_chunks: u32,
    /// In: `AMDGPU_CS_FLAGS_*`.
    pub flags: u32,
    /// In: an array of `num_chunks` pointers to `struct drm_amdgpu_cs_chunk`.
    pub chunks: u64,
}

/// `struct drm_amdgpu_cs_chunk`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DrmAmdgpuCsChunk {
    /// `AMDGPU_CHUNK_ID_*`.
    pub chunk_id: u32,
    /// Dwords at `chunk_data`.
    pub length_dw: u32,
    /// The chunk's payload.
    pub chunk_data: u64,
}

/// `struct drm_amdgpu_cs_chunk_ib`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DrmAmdgpuCsChunkIb {
    /// Padding.
    pub pad: u32,
    /// `AMDGPU_IB_FLAG_*`.
    pub flags: u32,
    /// The IB's GPU address.
    pub va_start: u64,
    /// Its size.
    pub ib_bytes: u32,
    /// `AMDGPU_HW_IP_*`.
    pub ip_type: u32,
    /// Instance of the IP.
    pub ip_instance: u32,
    /// Ring of the IP.
    pub ring: u32,
}

/// `union drm_amdgpu_wait_cs` (in: the fence; out: whether it is still busy).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DrmAmdgpuWaitCs {
    /// In: the sequence number; out: 1 if the fence is not yet signalled, 0 if it is.
    pub handle: u64,
    /// In: absolute timeout.
    pub timeout: u64,
    /// In: `AMDGPU_HW_IP_*`.
    pub ip_type: u32,
    /// In: instance.
    pub ip_instance: u32,
    /// In: ring.
    pub ring: u32,
    /// In: the context.
    pub ctx_id: u32,
}

const _: () = assert!(std::mem::size_of::<DrmAmdgpuGemVa>() == 40);
const _: () = assert!(std::mem::size_of::<DrmAmdgpuBoList>() == 24);
const _: () = assert!(std::mem::size_of::<DrmAmdgpuCs>() == 24);
const _: () = assert!(std::mem::size_of::<DrmAmdgpuCsChunkIb>() == 32);
const _: () = assert!(std::mem::size_of::<DrmAmdgpuWaitCs>() == 32);

/// `DRM_IOCTL_AMDGPU_GEM_VA` (libdrm issues it read-write; the kernel matches the number).
pub const DRM_IOCTL_AMDGPU_GEM_VA: IoctlRequest =
    IoctlRequest::iowr(b'd', NR_GEM_VA, std::mem::size_of::<DrmAmdgpuGemVa>());
/// `DRM_IOCTL_AMDGPU_BO_LIST`.
pub const DRM_IOCTL_AMDGPU_BO_LIST: IoctlRequest =
    IoctlRequest::iowr(b'd', NR_BO_LIST, std::mem::size_of::<DrmAmdgpuBoList>());
/// `DRM_IOCTL_AMDGPU_CS`.
pub const DRM_IOCTL_AMDGPU_CS: IoctlRequest =
    IoctlRequest::iowr(b'd', NR_CS, std::mem::size_of::<DrmAmdgpuCs>());
/// `DRM_IOCTL_AMDGPU_WAIT_CS`.
pub const DRM_IOCTL_AMDGPU_WAIT_CS: IoctlRequest =
    IoctlRequest::iowr(b'd', NR_WAIT_CS, std::mem::size_of::<DrmAmdgpuWaitCs>());

/// A GEM object's mapping in the VM.
struct VaMapping {
    minor: u32,
    handle: u32,
    /// Keeps the memory alive while the GPU can reach it.
    _mem: Arc<SharedMem>,
}

#[derive(Default)]
struct Tables {
    /// VA -> what is mapped there.
    mappings: HashMap<(u32, u64), VaMapping>,
    /// (minor, list handle) -> GEM handles.
    lists: HashMap<(u32, u32), Vec<u32>>,
    /// (minor, context, ip type, instance, ring) -> the last sequence number.
    fences: HashMap<(u32, u32, u32, u32, u32), u64>,
    next_list: u32,
}

/// The render nodes' VA mappings, BO lists and fences.
#[derive(Default)]
pub(crate) struct CsTable {
    t: Mutex<Tables>,
}

/// Handles `request` on render node `minor` if it is one of this module's; `None` otherwise.
///
/// # Safety
/// `a` must be valid for the request's argument (the `Driver::ioctl` contract), and the
/// pointers inside it for what they describe.
pub(crate) unsafe fn dispatch(
    emu: &Emulator,
    minor: u32,
    gpu_index: usize,
    request: IoctlRequest,
    a: *mut c_void,
) -> Option<Result<(), Errno>> {
    if request.ty() != b'd' {
        return None;
    }
    let matches = |nr: u8, size: usize| request.nr() == nr && request.size() == size;
    Some(if matches(NR_GEM_VA, 40) {
        // SAFETY: the request's number and size name the argument type.
        let v = unsafe { &*(a as *const DrmAmdgpuGemVa) };
        gem_va(emu, minor, gpu_index, v)
    } else if matches(NR_BO_LIST, 24) {
        // SAFETY: the request names the argument type; the entries are the caller's contract.
        unsafe { bo_list(emu, minor, &mut *(a as *mut DrmAmdgpuBoList)) }
    } else if matches(NR_CS, 24) {
        // SAFETY: the request names the argument type; the chunks are the caller's contract.
        unsafe { submit(emu, minor, gpu_index, &mut *(a as *mut DrmAmdgpuCs)) }
    } else if matches(NR_WAIT_CS, 32) {
        // SAFETY: the request's number and size name the argument type.
        let w = unsafe { &mut *(a as *mut DrmAmdgpuWaitCs) };
        wait(emu, minor, w)
    } else {
        return None;
    })
}

fn gem_va(emu: &Emulator, minor: u32, gpu_index: usize, v: &DrmAmdgpuGemVa) -> Result<(), Errno> {
    let vm = &emu.gpus.get(gpu_index).ok_or(Errno::ENODEV)?.vm;
    match v.operation {
        VA_OP_MAP => {
            let (mem, vram) = crate::drm_gem::object(emu, minor, v.handle).ok_or(Errno::ENOENT)?;
            let page = 4096u64;
            let end = v.offset_in_bo.checked_add(v.map_size);
            let va_end = v.va_address.checked_add(v.map_size);
            if v.va_address % page != 0
                || va_end.is_none_or(|e| e > VA_LOW_END)
                || v.offset_in_bo % page != 0
                || v.map_size % page != 0
                || v.map_size == 0
                || v.va_address < VA_RESERVED_BOTTOM
                || end.is_none_or(|e| e > mem.len() as u64)
            {
                return Err(Errno::EINVAL);
            }
            let overlaps = vm.mappings().iter().any(|&(s, len)| {
                v.va_address < s.saturating_add(len) && s < v.va_address + v.map_size
            });
            if overlaps {
                log::debug!("kfd-emu: GEM_VA at {:#x} overlaps a mapping", v.va_address);
                return Err(Errno::EINVAL);
            }
            let perms = Perms {
                write: v.flags & VM_PAGE_WRITEABLE != 0,
                exec: v.flags & VM_PAGE_EXECUTABLE != 0,
            };
            let kind = MappingKind {
                visible_vram: vram,
                ..MappingKind::default()
            };
            // SAFETY: in bounds of the object's mapping (checked above).
            let host = unsafe { mem.host().add(v.offset_in_bo as usize) };
            vm.map_memory(
                v.va_address,
                v.map_size,
                host,
                GEM_VA_HANDLE | u64::from(v.handle),
                perms,
                kind,
            );
            let mut t = emu.cs.t.lock().unwrap_or_else(|p| p.into_inner());
            t.mappings.insert(
                (minor, v.va_address),
                VaMapping {
                    minor,
                    handle: v.handle,
                    _mem: mem,
                },
            );
            Ok(())
        }
        VA_OP_UNMAP => {
            let mut t = emu.cs.t.lock().unwrap_or_else(|p| p.into_inner());
            match t.mappings.get(&(minor, v.va_address)) {
                Some(m) if m.handle == v.handle => {}
                _ => return Err(Errno::ENOENT),
            }
            vm.unmap(v.va_address);
            t.mappings.remove(&(minor, v.va_address));
            Ok(())
        }
        op => {
            log::warn!("kfd-emu: GEM_VA operation {op} (clear, replace) is not modelled");
            Err(Errno::EINVAL)
        }
    }
}

/// A GEM handle of render node `minor` was closed: its VA mappings go (`amdgpu_vm_bo_del`).
pub(crate) fn gem_closed(emu: &Emulator, minor: u32, gpu_index: usize, handle: u32) {
    let Some(gpu) = emu.gpus.get(gpu_index) else {
        return;
    };
    let mut t = emu.cs.t.lock().unwrap_or_else(|p| p.into_inner());
    t.mappings.retain(|&(_, va), m| {
        let gone = m.minor == minor && m.handle == handle;
        if gone {
            gpu.vm.unmap(va);
        }
        !gone
    });
}

/// # Safety
/// `l.bo_info_ptr` must be valid for `bo_number` entries of `bo_info_size` bytes.
unsafe fn bo_list(emu: &Emulator, minor: u32, l: &mut DrmAmdgpuBoList) -> Result<(), Errno> {
    let read_handles = |l: &DrmAmdgpuBoList| -> Result<Vec<u32>, Errno> {
        if l.bo_number > 0 && (l.bo_info_ptr == 0 || l.bo_info_size < 4) {
            return Err(Errno::EINVAL);
        }
        Ok((0..l.bo_number as usize)
            .map(|i| {
                let at = l.bo_info_ptr as usize + i * l.bo_info_size as usize;
                // SAFETY: entry `i` of the caller's array; its first field is the handle.
                unsafe { std::ptr::read_unaligned(at as *const u32) }
            })
            .collect())
    };
    match l.operation {
        BO_LIST_CREATE | BO_LIST_UPDATE => {
            let handles = read_handles(l)?;
            if handles
                .iter()
                .any(|&h| crate::drm_gem::object(emu, minor, h).is_none())
            {
                return Err(Errno::ENOENT);
            }
            let mut t = emu.cs.t.lock().unwrap_or_else(|p| p.into_inner());
            let id = if l.operation == BO_LIST_CREATE {
                t.next_list += 1;
                t.next_list
            } else if t.lists.contains_key(&(minor, l.list_handle)) {
                l.list_handle
            } else {
                return Err(Errno::ENOENT);
            };
            t.lists.insert((minor, id), handles);
            *l = DrmAmdgpuBoList {
                operation: id,
                ..Default::default()
            };
            Ok(())
        }
        BO_LIST_DESTROY => {
            let mut t = emu.cs.t.lock().unwrap_or_else(|p| p.into_inner());
            t.lists
                .remove(&(minor, l.list_handle))
                .map(drop)
                .ok_or(Errno::EINVAL)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// # Safety
/// `c.chunks` must point at `num_chunks` pointers to valid chunks, each to `length_dw`
/// dwords.
unsafe fn submit(
    emu: &Emulator,
    minor: u32,
    gpu_index: usize,
    c: &mut DrmAmdgpuCs,
) -> Result<(), Errno> {
    if !crate::drm_gem::context_exists(emu, minor, c.ctx_id) {
        return Err(Errno::EINVAL);
    }
    if c.bo_list_handle != 0 {
        let t = emu.cs.t.lock().unwrap_or_else(|p| p.into_inner());
        if !t.lists.contains_key(&(minor, c.bo_list_handle)) {
            return Err(Errno::ENOENT);
        }
    }
    if c.num_chunks == 0 || c.chunks == 0 {
        return Err(Errno::EINVAL);
    }
    let mut ibs = Vec::new();
    for i in 0..c.num_chunks as usize {
        // SAFETY: the caller's array of chunk pointers, then each chunk.
        let chunk = unsafe {
            let p = std::ptr::read_unaligned((c.chunks as usize + 8 * i) as *const u64);
            if p == 0 {
                return Err(Errno::EFAULT);
            }
            std::ptr::read_unaligned(p as *const DrmAmdgpuCsChunk)
        };
        match chunk.chunk_id {
            CHUNK_IB => {
                if (chunk.length_dw as usize) * 4 < std::mem::size_of::<DrmAmdgpuCsChunkIb>() {
                    return Err(Errno::EINVAL);
                }
                // SAFETY: the chunk's payload, at least one IB long (checked).
                ibs.push(unsafe {
                    std::ptr::read_unaligned(chunk.chunk_data as *const DrmAmdgpuCsChunkIb)
                });
            }
            // The work runs to its end before the call returns: nothing to wait for.
            CHUNK_DEPENDENCIES | CHUNK_BO_HANDLES => {}
            other => {
                log::warn!("kfd-emu: command-submission chunk {other:#x} is not modelled");
                return Err(Errno::EINVAL);
            }
        }
    }
    let Some(first) = ibs.first().copied() else {
        return Err(Errno::EINVAL);
    };
    if ibs.iter().any(|ib| {
        (ib.ip_type, ib.ip_instance, ib.ring) != (first.ip_type, first.ip_instance, first.ring)
    }) {
        return Err(Errno::EINVAL);
    }
    if first.ip_type != HW_IP_DMA {
        log::warn!(
            "kfd-emu: command submission to hardware IP {} is not modelled (only the SDMA engine's)",
            first.ip_type
        );
        return Err(Errno::EINVAL);
    }
    let gpu = emu.gpus.get(gpu_index).ok_or(Errno::ENODEV)?;
    for ib in &ibs {
        run_sdma_ib(gpu, ib);
    }
    let mut t = emu.cs.t.lock().unwrap_or_else(|p| p.into_inner());
    let seq = t
        .fences
        .entry((
            minor,
            c.ctx_id,
            first.ip_type,
            first.ip_instance,
            first.ring,
        ))
        .or_insert(0);
    *seq += 1;
    let seq = *seq;
    *c = DrmAmdgpuCs {
        ctx_id: seq as u32,
        bo_list_handle: (seq >> 32) as u32,
        ..Default::default()
    };
    Ok(())
}

/// Runs an IB on the GPU's SDMA engine: its packets in order, until its end, a fault or a
/// packet the engine here does not run (each logged).
fn run_sdma_ib(gpu: &crate::device::GpuState, ib: &DrmAmdgpuCsChunkIb) {
    let len = u64::from(ib.ib_bytes & !3);
    // The IB's size is the caller's: check it lies in mapped memory before reading it all.
    if !gpu.vm.is_mapped(ib.va_start, len) {
        log::warn!(
            "kfd-emu: command submission: the IB at {:#x} ({len} bytes) is not mapped",
            ib.va_start
        );
        return;
    }
    let mut bytes = vec![0u8; len as usize];
    if let Err(f) = gpu.vm.read(ib.va_start, &mut bytes) {
        log::warn!(
            "kfd-emu: command submission: the IB at {:#x} is not readable: {f}",
            ib.va_start
        );
        return;
    }
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mut at = 0;
    while at < words.len() {
        let version = sdma::SdmaVersion::from_gfx_target_version(gpu.params.gfx_target_version)
            .unwrap_or(sdma::SdmaVersion::V4);
        let decoded =
            SdmaPacket::decode_for_part(version, gpu.params.gfx_target_version, &words[at..]);
        let (packet, n) = match decoded {
            Ok(p) => p,
            Err(e) => {
                log::warn!("kfd-emu: command submission: undecodable SDMA packet at {at} ({e:?})");
                return;
            }
        };
        match crate::engine::sdma_ib_packet(&gpu.vm, &packet) {
            Some(Ok(())) => {}
            Some(Err(f)) => {
                log::warn!("kfd-emu: command submission: GPU fault in an IB: {f}");
                return;
            }
            None => {
                log::warn!("kfd-emu: command submission: SDMA packet {packet:?} is not run in IBs");
                return;
            }
        }
        at += n.max(1);
    }
}

fn wait(emu: &Emulator, minor: u32, w: &mut DrmAmdgpuWaitCs) -> Result<(), Errno> {
    if !crate::drm_gem::context_exists(emu, minor, w.ctx_id) {
        return Err(Errno::EINVAL);
    }
    let t = emu.cs.t.lock().unwrap_or_else(|p| p.into_inner());
    let last = t
        .fences
        .get(&(minor, w.ctx_id, w.ip_type, w.ip_instance, w.ring))
        .copied()
        .unwrap_or(0);
    if w.handle > last {
        return Err(Errno::EINVAL);
    }
    // Every submission ran to its end when it was made.
    *w = DrmAmdgpuWaitCs::default();
    Ok(())
}
