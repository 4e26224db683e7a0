//! Kernel dispatches added to an AQL [`Batch`]: arguments encoded or prepared, checked, staged,
//! and the kernel's code and buffers held until the batch completes.

use super::dispatch::{Dispatch, DispatchArgs, PreparedDispatch};
use crate::error::Result;
use crate::kernel::Kernel;
use crate::kernel_args::{KernelArgs, LaunchContext, LaunchGeometry};
use crate::queue::Batch;

impl<'q> Batch<'q> {
    /// Adds a kernel dispatch. The kernel's code, and the buffers its [`KernelArgs`] name, stay
    /// allocated until the batch completes.
    ///
    /// [`KernelArgs`]: crate::kernel_args::KernelArgs
    // Always inlined: in a loop of launches the call, and its result returned through memory,
    // cost as much as the rest.
    #[inline(always)]
    pub fn dispatch(&mut self, d: &Dispatch<'_>) -> Result<&mut Self> {
        d.check_gpu(self.queue.0.gpu.id())?;
        let bytes = match d.args {
            DispatchArgs::None => d.no_args()?,
            DispatchArgs::Raw(bytes) => bytes,
            DispatchArgs::Built(args) => return self.dispatch_built(d, args),
        };
        let group_segment = d.check()?;
        if self.validating {
            self.validate(d, bytes)?;
        } else {
            d.check_raw_len(bytes, &self.queue.0.gpu)?;
        }
        // Encoded in its staging slot, not copied there (see `Dispatch::encode_into`).
        self.packets.push([0; 16]);
        if let Some(slot) = self.packets.last_mut() {
            d.encode_into(group_segment, slot);
        }
        let index = self.packets.len() - 1;
        self.account(d.kernel, group_segment, bytes, index);
        Ok(self)
    }

    /// [`Batch::dispatch`] with metadata-checked arguments: encoded for this launch, and the
    /// buffers they name held.
    #[inline(never)]
    fn dispatch_built(&mut self, d: &Dispatch<'_>, args: &KernelArgs) -> Result<&mut Self> {
        let p = d.encode()?;
        super::check_kernel(d.kernel, args, &self.queue.0.gpu, self.validating)?;
        let bytes = args.encode(
            &LaunchGeometry::of(d),
            &LaunchContext::for_queue(self.queue),
        )?;
        if self.validating {
            self.validate(d, &bytes)?;
        }
        self.staged.held.extend(args.held());
        self.stage(&p, &bytes);
        Ok(self)
    }

    /// The buffer-validation debug switch: checks the addresses in a dispatch's arguments.
    #[cold]
    #[inline(never)]
    fn validate(&self, d: &Dispatch<'_>, bytes: &[u8]) -> Result<()> {
        match &self.queue.0.gpu.kfd().shared.buffers {
            Some(map) => {
                crate::kernel_args::validate::dispatch(map, &self.queue.0.gpu, d.kernel, bytes)
            }
            None => Ok(()),
        }
    }

    /// Adds a dispatch prepared with [`Dispatch::prepare`], with `kernargs` as its arguments.
    /// Validation and encoding were done once, when it was prepared: what is left per dispatch
    /// is copying the packet and staging the arguments. The kernel's code stays allocated until
    /// the batch completes.
    ///
    /// # Safety
    /// As [`Dispatch::with_raw_args`]: every GPU address in `kernargs` must refer to memory that
    /// stays allocated and mapped until the batch completes.
    #[inline]
    pub unsafe fn dispatch_prepared(
        &mut self,
        p: &PreparedDispatch<'_>,
        kernargs: &[u8],
    ) -> &mut Self {
        self.stage(p, kernargs);
        self
    }

    // Always inlined: a batch's loop is mostly this, and a call costs as much again.
    #[inline(always)]
    fn stage(&mut self, p: &PreparedDispatch<'_>, kernargs: &[u8]) {
        self.packets.push(p.packet);
        let index = self.packets.len() - 1;
        self.account(p.kernel, p.group_segment, kernargs, index);
    }

    /// What a staged dispatch (packet `index`) adds to the batch: its kernel's code held, its
    /// LDS and scratch needs, and its arguments staged.
    #[inline(always)]
    fn account(&mut self, kernel: &Kernel, group_segment: u32, kernargs: &[u8], index: usize) {
        // A kernel's code is held once per run of its dispatches. Its descriptor's address
        // tells kernels apart: while the batch holds one kernel's code, no other memory can be
        // at that address (and the emulator binds one function per address).
        if kernel.object() != self.last_object {
            self.hold_code(kernel);
        }
        self.account_unheld(
            group_segment,
            kernel.private_segment_size(),
            kernel.kernarg_size(),
            kernargs,
            index,
        );
    }

    /// [`Batch::account`] but for holding the code: the LDS and scratch needs, the arguments.
    #[inline(always)]
    fn account_unheld(
        &mut self,
        group_segment: u32,
        private_segment: u32,
        kernarg_size: u32,
        kernargs: &[u8],
        index: usize,
    ) {
        self.max_group_segment = self.max_group_segment.max(group_segment);
        self.uses_scratch |= private_segment > 0;
        let size = kernargs.len().max(kernarg_size as usize);
        // A kernel that takes no arguments gets no kernarg segment (address 0), as its
        // descriptor declares none to load.
        if size != 0 {
            self.stage_kernargs(kernargs, size, index);
        }
    }

    /// Stages an encoded dispatch packet whose kernel code and argument buffers the caller has
    /// the batch hold by other means (a graph holds all of a replay's with one handle).
    #[inline(always)]
    pub(crate) fn stage_held_elsewhere(
        &mut self,
        packet: &[u32; 16],
        group_segment: u32,
        private_segment: u32,
        kernarg_size: u32,
        kernargs: &[u8],
    ) {
        self.packets.push(*packet);
        let index = self.packets.len() - 1;
        self.account_unheld(
            group_segment,
            private_segment,
            kernarg_size,
            kernargs,
            index,
        );
    }

    /// Holds `kernel`'s code for the batch. Only a kernel with code is remembered: a raw
    /// kernel at the same address must not excuse a later loaded one from being held.
    #[inline(never)]
    fn hold_code(&mut self, kernel: &Kernel) {
        if let Some(code) = kernel.code() {
            self.staged.held.push(code.clone());
            self.last_object = kernel.object();
        }
    }

    /// Stages `kernargs` (padded to `size`) and points packet `index` at them (as an offset
    /// into the staged bytes until `place_kernargs` adds the region's address).
    #[inline(never)]
    fn stage_kernargs(&mut self, kernargs: &[u8], size: usize, index: usize) {
        let align = crate::queue::kernarg::KERNARG_ALIGN as usize;
        let len = size.div_ceil(align) * align;
        let staged = &mut **self.staged;
        let offset = staged.kernarg_bytes.len().div_ceil(align) * align;
        staged.kernarg_bytes.resize(offset + len, 0);
        staged.kernarg_bytes[offset..offset + kernargs.len()].copy_from_slice(kernargs);
        staged.kernarg_fixups.push(index);
        if let Some(p) = self.packets.get_mut(index) {
            aql::add_encoded_kernarg_base(p, offset as u64);
        }
    }
}
