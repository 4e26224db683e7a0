//! [`Dispatch`]: one kernel launch, and [`PreparedDispatch`]: a launch validated and encoded
//! once for the hot loop.

use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::kernel_args::{KernelArgs, LaunchGeometry};
use aql::{FenceScope, KernelDispatchPacket};

/// What a dispatch passes the kernel.
#[derive(Clone, Copy, Debug)]
pub(crate) enum DispatchArgs<'a> {
    /// Nothing: only for a kernel that reads no arguments (a dispatch of one that does is
    /// refused), or a prepared dispatch, which takes its arguments at submission.
    None,
    /// Bytes laid out by the caller, who vouched for the addresses in them.
    Raw(&'a [u8]),
    /// Arguments checked against the kernel's metadata; buffers among them are kept alive.
    Built(&'a KernelArgs),
}

/// One kernel launch: what to run, on how many work-items, with which arguments, ordered how.
///
/// ```
/// # fn f(kernel: &kfdrt::Kernel, args: &kfdrt::kernel_args::KernelArgs) {
/// let d = kfdrt::Dispatch::linear(kernel, 1 << 20, 256)
///     .with_args(args)         // metadata-checked; the buffers it names are kept alive
///     .with_dynamic_lds(4096)
///     .unordered();            // may overlap the packet before it
/// # }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Dispatch<'a> {
    pub(crate) kernel: &'a Kernel,
    pub(crate) grid: [u32; 3],
    pub(crate) workgroup: [u16; 3],
    pub(crate) args: DispatchArgs<'a>,
    pub(crate) dynamic_lds: u32,
    pub(crate) barrier: bool,
    pub(crate) acquire: FenceScope,
    pub(crate) release: FenceScope,
    /// The packet's 16 header bits, from the three fields above: computed where they are set,
    /// which is usually from constants the compiler folds, not once per launch.
    header: u16,
}

/// A kernel-dispatch packet's header bits.
#[inline]
fn header_bits(barrier: bool, acquire: FenceScope, release: FenceScope) -> u16 {
    aql::Header {
        packet_type: aql::PacketType::KernelDispatch,
        barrier,
        acquire,
        release,
    }
    .to_bits()
}

/// A [`Dispatch`] validated and encoded once ([`Dispatch::prepare`]): the hot loop of a runtime
/// that launches the same kernel shape again and again with new arguments adds it to batches
/// with [`crate::queue::Batch::dispatch_prepared`]. It borrows the kernel, which therefore
/// outlives it.
#[derive(Clone, Copy, Debug)]
pub struct PreparedDispatch<'a> {
    pub(crate) kernel: &'a Kernel,
    /// LDS bytes per work-group: the kernel's static amount plus the dynamic part.
    pub(crate) group_segment: u32,
    /// The encoded packet: kernarg address 0, no completion signal.
    pub(crate) packet: [u32; 16],
}

impl PreparedDispatch<'_> {
    /// The kernel it launches.
    pub fn kernel(&self) -> &Kernel {
        self.kernel
    }
}

impl<'a> Dispatch<'a> {
    /// A launch of `grid` work-items (per dimension; not work-groups: see
    /// [`Dispatch::blocks`] for HIP's `gridDim`) in work-groups of `workgroup`, with no
    /// arguments yet, in order with the queue's earlier work (the AQL
    /// barrier bit) and system-scope fences.
    pub fn new(kernel: &'a Kernel, grid: [u32; 3], workgroup: [u16; 3]) -> Self {
        Dispatch {
            kernel,
            grid,
            workgroup,
            args: DispatchArgs::None,
            dynamic_lds: 0,
            barrier: true,
            acquire: FenceScope::System,
            release: FenceScope::System,
            header: header_bits(true, FenceScope::System, FenceScope::System),
        }
    }

    /// A 1-D launch of `grid` work-items in groups of `workgroup`.
    pub fn linear(kernel: &'a Kernel, grid: u32, workgroup: u16) -> Self {
        Dispatch::new(kernel, [grid, 1, 1], [workgroup, 1, 1])
    }

    /// A launch of `blocks` work-groups (per dimension: HIP's `gridDim`, CUDA's grid) of
    /// `block` work-items each (`blockDim`): `blocks × block` work-items, where
    /// [`Dispatch::new`] counts work-items. Fails when that many work-items do not fit the
    /// packet's 32 bits per dimension.
    ///
    /// ```
    /// # fn f(kernel: &kfdrt::Kernel) -> kfdrt::Result<()> {
    /// // hipLaunchKernelGGL(kernel, dim3(64), dim3(256), ...): 16384 work-items.
    /// let d = kfdrt::Dispatch::blocks(kernel, [64, 1, 1], [256, 1, 1])?;
    /// assert_eq!(d.grid(), [16384, 1, 1]);
    /// # Ok(()) }
    /// ```
    pub fn blocks(kernel: &'a Kernel, blocks: [u32; 3], block: [u16; 3]) -> Result<Self> {
        let mut grid = [0u32; 3];
        for d in 0..3 {
            grid[d] =
                blocks[d]
                    .checked_mul(u32::from(block[d]))
                    .ok_or_else(|| Error::BadGeometry {
                        grid: std::array::from_fn(|i| u64::from(blocks[i]) * u64::from(block[i])),
                        workgroup: block.map(u32::from),
                        reason: "more than 2^32 work-items in a dimension",
                    })?;
        }
        Ok(Dispatch::new(kernel, grid, block))
    }

    /// Passes `args`, built and checked against the kernel's metadata; the hidden arguments are
    /// filled for the launch at submission, and the buffers `args` names are kept allocated
    /// until the dispatch completes.
    pub fn with_args(self, args: &'a KernelArgs) -> Self {
        Dispatch {
            args: DispatchArgs::Built(args),
            ..self
        }
    }

    /// Passes `kernargs` as the kernel's argument segment, byte for byte.
    ///
    /// # Safety
    /// The kernel will access memory at any GPU address the bytes hold (buffers, signals, or
    /// anything else): that memory must stay allocated and mapped to the GPU until the
    /// dispatch has completed, and must not be freed or reused for other data before then.
    /// kfdrt cannot see addresses inside raw bytes, so it cannot keep that memory alive; prefer
    /// [`Dispatch::with_args`], which can.
    pub unsafe fn with_raw_args(self, kernargs: &'a [u8]) -> Self {
        Dispatch {
            args: DispatchArgs::Raw(kernargs),
            ..self
        }
    }

    /// The same dispatch over `grid` work-items per dimension.
    pub fn with_grid(self, grid: [u32; 3]) -> Self {
        Dispatch { grid, ..self }
    }

    /// The same dispatch in work-groups of `workgroup`.
    pub fn with_workgroup(self, workgroup: [u16; 3]) -> Self {
        Dispatch { workgroup, ..self }
    }

    /// The same dispatch with `bytes` of dynamic LDS per work-group (added to the kernel's
    /// static amount).
    pub fn with_dynamic_lds(self, bytes: u32) -> Self {
        Dispatch {
            dynamic_lds: bytes,
            ..self
        }
    }

    /// The same dispatch without the barrier bit: the GPU may run it alongside the packets
    /// before it. Right only when it neither reads what they write nor writes what they use.
    pub fn unordered(self) -> Self {
        Dispatch {
            barrier: false,
            header: header_bits(false, self.acquire, self.release),
            ..self
        }
    }

    /// The same dispatch with these fence scopes: `acquire` is made visible to the kernel
    /// before it starts, its writes are released to `release` when it ends (both system by
    /// default: the host and every GPU see the results once the completion signal does).
    pub fn with_fences(self, acquire: FenceScope, release: FenceScope) -> Self {
        Dispatch {
            acquire,
            release,
            header: header_bits(self.barrier, acquire, release),
            ..self
        }
    }

    /// The kernel.
    pub fn kernel(&self) -> &'a Kernel {
        self.kernel
    }

    /// Grid size in work-items per dimension.
    pub fn grid(&self) -> [u32; 3] {
        self.grid
    }

    /// Work-group size per dimension.
    pub fn workgroup(&self) -> [u16; 3] {
        self.workgroup
    }

    /// Dynamic LDS bytes per work-group.
    pub fn dynamic_lds(&self) -> u32 {
        self.dynamic_lds
    }

    /// Whether the dispatch waits for the queue's earlier work (the barrier bit).
    pub fn is_ordered(&self) -> bool {
        self.barrier
    }

    /// Validates and encodes this dispatch once, for submitting it many times with different
    /// kernel arguments ([`crate::queue::Batch::dispatch_prepared`]); its own arguments are not
    /// part of it.
    pub fn prepare(&self) -> Result<PreparedDispatch<'a>> {
        self.encode()
    }

    /// [`Dispatch::prepare`], always inlined: the submission paths encode once per launch,
    /// and a call returning the 80-byte result through memory costs as much as the encoding.
    #[inline(always)]
    pub(crate) fn encode(&self) -> Result<PreparedDispatch<'a>> {
        let group_segment = self.check()?;
        let mut packet = [0u32; 16];
        self.encode_into(group_segment, &mut packet);
        Ok(PreparedDispatch {
            kernel: self.kernel,
            group_segment,
            packet,
        })
    }

    /// Validates the launch; returns its LDS bytes per work-group (static plus dynamic).
    #[inline(always)]
    pub(crate) fn check(&self) -> Result<u32> {
        self.validate()?;
        let static_lds = self.kernel.group_segment_size();
        match static_lds.checked_add(self.dynamic_lds) {
            Some(group_segment) => Ok(group_segment),
            None => Err(lds_overflow(static_lds, self.dynamic_lds)),
        }
    }

    /// Encodes the checked launch ([`Dispatch::check`] gave `group_segment`) into `out`, with
    /// kernarg address 0 and no completion signal. Writing straight into the packet's final
    /// place matters: a packet built in a temporary, in narrow stores, and copied on in wide
    /// loads makes each load wait for the stores to retire.
    #[inline(always)]
    pub(crate) fn encode_into(&self, group_segment: u32, out: &mut [u32; 16]) {
        let dimensions = self.dimensions();
        *out = KernelDispatchPacket {
            barrier: self.barrier,
            acquire: self.acquire,
            release: self.release,
            dimensions,
            workgroup_size: self.workgroup,
            grid_size: self.grid,
            private_segment_size: self.kernel.private_segment_size(),
            group_segment_size: group_segment,
            kernel_object: self.kernel.object(),
            kernarg_address: 0,
            completion_signal: 0,
        }
        .encode();
        // The same header word, from the bits computed with the fields (the compiler drops the
        // encoder's own computation of it).
        out[0] = u32::from(self.header) | u32::from(dimensions) << 16;
    }

    /// 1, 2 or 3: the highest dimension with more than one work-item or group member.
    #[inline]
    pub fn dimensions(&self) -> u16 {
        // Sizes are at least 1 once validated; a dimension counts when either is above 1.
        let used = |i: usize| self.grid[i].max(u32::from(self.workgroup[i])) > 1;
        if used(2) {
            3
        } else if used(1) {
            2
        } else {
            1
        }
    }

    #[inline]
    fn validate(&self) -> Result<()> {
        // The product of three u16 is exact in a u64, and 0 exactly when a size is 0: one
        // comparison checks both bounds.
        let items = aql::work_group_items(self.workgroup.map(u32::from));
        let grid_has_zero = self.grid.iter().min() == Some(&0);
        if grid_has_zero || items.wrapping_sub(1) >= aql::MAX_WORK_GROUP_ITEMS {
            return Err(self.shape_error(items));
        }
        Ok(())
    }

    /// Refuses a kernel the GPU of the queue cannot reach (loaded on another GPU): its code
    /// would fault the whole GPU, and every queue of it with it.
    #[inline]
    pub(crate) fn check_gpu(&self, gpu_id: u32) -> Result<()> {
        if self.kernel.runs_on(gpu_id) {
            return Ok(());
        }
        Err(Error::NotOnGpu {
            what: format!("kernel {:?}", self.kernel.name()),
            gpu_id,
        })
    }

    /// Refuses raw argument bytes shorter than the kernel's kernarg segment on `gpu`'s device
    /// (a cheap check made by default; `KFDRT_UNCHECKED=1` lets them through, zero-padded;
    /// `KFDRT_VALIDATE` makes it too, naming the packet field).
    #[inline]
    pub(crate) fn check_raw_len(&self, bytes: &[u8], gpu: &crate::Gpu) -> Result<()> {
        if bytes.len() >= self.kernel.kernarg_size() as usize {
            return Ok(());
        }
        self.short_arguments(bytes.len(), gpu)
    }

    #[cold]
    #[inline(never)]
    fn short_arguments(&self, given: usize, gpu: &crate::Gpu) -> Result<()> {
        if gpu.kfd().shared.debug.unchecked {
            return Ok(());
        }
        Err(crate::kernel_args::KernelArgError::ShortArguments {
            kernel: self.kernel.name().to_owned(),
            expected: self.kernel.kernarg_size(),
            given,
        }
        .into())
    }

    /// The empty argument segment of a dispatch given no arguments, refused when the kernel
    /// reads some (it would run on zeroes). A prepared dispatch takes its arguments later.
    #[inline]
    pub(crate) fn no_args(&self) -> Result<&'static [u8]> {
        if self.kernel.kernarg_size() > 0 {
            return Err(self.no_arguments());
        }
        Ok(&[])
    }

    #[cold]
    #[inline(never)]
    fn no_arguments(&self) -> Error {
        crate::kernel_args::KernelArgError::NoArguments {
            kernel: self.kernel.name().to_owned(),
            bytes: self.kernel.kernarg_size(),
        }
        .into()
    }

    #[cold]
    #[inline(never)]
    fn shape_error(&self, items: u64) -> Error {
        if items == 0 || self.grid.contains(&0) {
            Error::BadGeometry {
                grid: self.grid.map(u64::from),
                workgroup: self.workgroup.map(u32::from),
                reason: "a zero dimension",
            }
        } else {
            Error::TooLarge {
                what: "work-items per work-group",
                requested: items,
                limit: aql::MAX_WORK_GROUP_ITEMS,
            }
        }
    }
}

#[cold]
#[inline(never)]
fn lds_overflow(static_lds: u32, dynamic: u32) -> Error {
    Error::TooLarge {
        what: "LDS bytes per work-group (static and dynamic)",
        requested: u64::from(static_lds) + u64::from(dynamic),
        limit: u64::from(u32::MAX),
    }
}

impl LaunchGeometry {
    /// The geometry of a [`Dispatch`].
    pub fn of(dispatch: &Dispatch<'_>) -> LaunchGeometry {
        LaunchGeometry {
            grid: dispatch.grid,
            workgroup: dispatch.workgroup,
            dynamic_lds: dispatch.dynamic_lds,
        }
    }

    /// A [`Dispatch`] of `kernel` with this geometry, ordered as [`Dispatch::new`] orders
    /// (barrier bit, system scopes), with no arguments yet ([`Dispatch::with_args`] adds them).
    pub fn dispatch<'a>(&self, kernel: &'a Kernel) -> Dispatch<'a> {
        Dispatch::new(kernel, self.grid, self.workgroup).with_dynamic_lds(self.dynamic_lds)
    }
}
