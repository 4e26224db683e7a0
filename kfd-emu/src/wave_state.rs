//! What the driver writes into a queue's context-save area for a debugger: the wave-state
//! header of each XCC's part (`get_wave_state` in `kfd_mqd_manager_v9.c`, per XCC in
//! `get_wave_state_v9_4_3`), written with `copy_to_user` when a debugger suspends queues
//! (`suspend_queues` → `copy_context_work_handler`, for every compute queue of the process
//! that is not running) and when it asks (`AMDKFD_IOC_GET_QUEUE_WAVE_STATE`, into its own
//! buffer).
//!
//! The header says where the control stack and the saved waves are and how much of each is
//! used. kfd-emu suspends and evicts queues between packets, with no wave resident, so both are
//! empty: the control stack's offset and the wave state's are the queue's `ctl_stack_size`
//! (as `init_mqd` leaves `cp_hqd_cntl_stack_offset` and `cp_hqd_wg_state_offset` when nothing
//! was saved), and the sizes are 0. A wave halted in the trap handler is not saved into the
//! area either: a debugger sees no waves there.

use crate::engine::QueueCtl;
use crate::Emulator;
use kfd_sys::bindings::KFD_IOC_QUEUE_TYPE_COMPUTE;
use kfd_sys::bindings::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL;
use kfd_sys::bindings::{
    kfd_context_save_area_header__bindgen_ty_1, kfd_ioctl_get_queue_wave_state_args,
};
use kfd_sys::Errno;
use std::sync::atomic::Ordering;

impl QueueCtl {
    /// Whether the queue is mapped to the hardware (`q->properties.is_active`): enabled, not
    /// suspended by a debugger, not evicted.
    pub(crate) fn is_active(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
            && !self.faults.queues_evicted()
            && !self.faults.is_debug_suspended(self.id)
            && self.gpu.exceptions() <= self.exception_epoch
    }
}

/// `dqm->ops.get_wave_state` for queue `ctl` into the user area at `ctl_stack`: the used
/// sizes (control stack, saved waves), or EINVAL for a running or non-compute queue or one
/// without CWSR, EFAULT where the area cannot be written.
fn get_wave_state(ctl: &QueueCtl, ctl_stack: u64) -> Result<(u32, u32), Errno> {
    let compute = matches!(
        ctl.queue_type,
        KFD_IOC_QUEUE_TYPE_COMPUTE | KFD_IOC_QUEUE_TYPE_COMPUTE_AQL
    );
    if !compute || ctl.is_active() || ctl.cwsr == 0 {
        return Err(Errno::EINVAL);
    }
    let header = kfd_context_save_area_header__bindgen_ty_1 {
        control_stack_offset: ctl.ctl_stack_size,
        control_stack_size: 0,
        wave_state_offset: ctl.ctl_stack_size,
        wave_state_size: 0,
    };
    let bytes = [
        header.control_stack_offset,
        header.control_stack_size,
        header.wave_state_offset,
        header.wave_state_size,
    ];
    let mut raw = [0u8; 16];
    for (i, w) in bytes.iter().enumerate() {
        raw[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    for xcc in 0..ctl.gpu.params.num_xcc.max(1) {
        let at = ctl_stack + u64::from(ctl.cwsr_size) * u64::from(xcc);
        if !crate::user_access::put_bytes(at, &raw) {
            return Err(Errno::EFAULT);
        }
    }
    Ok((header.control_stack_size, header.wave_state_size))
}

/// `AMDKFD_IOC_GET_QUEUE_WAVE_STATE` (`pqm_get_wave_state`): EFAULT for an unknown queue.
pub(crate) fn get_queue_wave_state(
    emu: &Emulator,
    a: &mut kfd_ioctl_get_queue_wave_state_args,
) -> Result<(), Errno> {
    let ctl = emu.queues.ctl(a.queue_id).ok_or(Errno::EFAULT)?;
    let (ctl_used, save_used) = get_wave_state(&ctl, a.ctl_stack_address)?;
    a.ctl_stack_used_size = ctl_used;
    a.save_area_used_size = save_used;
    Ok(())
}

/// `copy_context_work_handler`, after a debugger suspended queues: every compute queue not
/// running gets its header, errors ignored as the driver ignores them.
pub(crate) fn copy_context(emu: &Emulator) {
    for ctl in emu.queues.ctls() {
        let _ = get_wave_state(&ctl, ctl.cwsr);
    }
}
