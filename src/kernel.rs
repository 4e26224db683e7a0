//! [`Kernel`]: what a dispatch runs — a kernel descriptor's address and its segment sizes, and
//! for kernels of a code object with a metadata note, what the compiler says about its arguments
//! ([`KernelMetadata`]), which [`crate::kernel_args::KernelArgs`] builds them from.

use crate::code_object::KernelMetadata;
use crate::device::Gpu;
#[cfg(feature = "emu")]
use crate::error::Error;
use crate::error::Result;
use crate::hostcall::HostcallService;
use crate::memory::Buffer;
#[cfg(feature = "emu")]
use crate::memory::{AllocOptions, MemoryKind};
use std::fmt;
use std::sync::Arc;

/// A kernel ready to dispatch: the address of its 64-byte kernel descriptor ("kernel object")
/// plus the sizes a dispatch packet needs. Clones share the code (a "compiled model" can own
/// its kernels while each launch borrows one).
#[derive(Clone)]
pub struct Kernel {
    name: String,
    object: u64,
    kernarg_size: u32,
    group_segment_size: u32,
    private_segment_size: u32,
    /// The kernel descriptor, when kfdrt knows it (needed for PM4 dispatch).
    descriptor: Option<aql::KernelDescriptor>,
    /// Memory holding the descriptor (and code).
    memory: Option<Arc<Buffer>>,
    /// What keeps the code runnable ([`KernelCode`]): held by the kernel and by every dispatch
    /// of it until the dispatch completes.
    code: Option<Arc<dyn Send + Sync>>,
    /// What the code object's metadata note says about the kernel.
    metadata: Option<Arc<KernelMetadata>>,
    /// For a kernel whose metadata asks for the hostcall buffer: its claim on the GPU's
    /// hostcall service.
    hostcall: Option<Arc<HostcallSlot>>,
}

/// A kernel's claim on its GPU's hostcall service, taken up the first time the buffer's address
/// is asked for (kernels that declare the buffer without printing then cost nothing). Shared by
/// the kernel's clones and held by its dispatches, which keep the service alive.
pub(crate) struct HostcallSlot {
    gpu: Gpu,
    service: std::sync::OnceLock<Arc<HostcallService>>,
}

/// A kernel's code as GPU work needs it: the memory holding it and, on the emulated device, the
/// host function bound to its descriptor. Freed (unbound) when the kernel and every dispatch of
/// it are gone.
struct KernelCode {
    _memory: Arc<Buffer>,
    /// The hostcall service answers the kernel's waves until its last dispatch completes.
    _hostcall: Option<Arc<HostcallSlot>>,
    #[cfg(feature = "emu")]
    binding: Option<(Arc<kfd_emu::Emulator>, u64)>,
}

impl Drop for KernelCode {
    fn drop(&mut self) {
        #[cfg(feature = "emu")]
        if let Some((emu, object)) = self.binding.take() {
            emu.unbind_kernel(object);
        }
    }
}

fn code(memory: &Arc<Buffer>, hostcall: &Option<Arc<HostcallSlot>>) -> Arc<dyn Send + Sync> {
    Arc::new(KernelCode {
        _memory: memory.clone(),
        _hostcall: hostcall.clone(),
        #[cfg(feature = "emu")]
        binding: None,
    })
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.name)
            .field("object", &format_args!("{:#x}", self.object))
            .field("kernarg_size", &self.kernarg_size)
            .finish()
    }
}

impl Kernel {
    /// A kernel whose descriptor is already in GPU memory at `object` (for example loaded by
    /// other code).
    ///
    /// # Safety
    /// `object` must be the address of a valid kernel descriptor, mapped to the GPUs it will be
    /// dispatched on, whose code and descriptor outlive every dispatch of it; the GPU will run it.
    pub unsafe fn from_raw(
        name: &str,
        object: u64,
        kernarg_size: u32,
        group_segment_size: u32,
        private_segment_size: u32,
    ) -> Kernel {
        Kernel {
            name: name.to_owned(),
            object,
            kernarg_size,
            group_segment_size,
            private_segment_size,
            descriptor: None,
            memory: None,
            code: None,
            metadata: None,
            hostcall: None,
        }
    }

    /// A kernel of a loaded code object (see [`crate::Gpu::load_code_object`]).
    pub(crate) fn loaded(
        name: &str,
        object: u64,
        kd: aql::KernelDescriptor,
        memory: Arc<Buffer>,
        metadata: Option<Arc<KernelMetadata>>,
        hostcall_gpu: Option<Gpu>,
    ) -> Kernel {
        let hostcall = hostcall_gpu.map(|gpu| {
            Arc::new(HostcallSlot {
                gpu,
                service: std::sync::OnceLock::new(),
            })
        });
        Kernel {
            name: name.to_owned(),
            object,
            kernarg_size: kd.kernarg_size,
            group_segment_size: kd.group_segment_fixed_size,
            private_segment_size: kd.private_segment_fixed_size,
            descriptor: Some(kd),
            code: Some(code(&memory, &hostcall)),
            memory: Some(memory),
            metadata,
            hostcall,
        }
    }

    /// Binds a host function to this kernel's object on the emulated device: its dispatches run
    /// `f` there instead of the code (an emulated kernel).
    #[cfg(feature = "emu")]
    pub(crate) fn bind_emulation(
        &mut self,
        emu: Arc<kfd_emu::Emulator>,
        f: Arc<kfd_emu::KernelFn>,
    ) {
        let Some(memory) = self.memory.clone() else {
            return;
        };
        emu.bind_kernel(self.object, &self.name, f);
        self.code = Some(Arc::new(KernelCode {
            _memory: memory,
            _hostcall: self.hostcall.clone(),
            binding: Some((emu, self.object)),
        }));
    }

    /// What a dispatch holds to keep the kernel's code runnable until it completes.
    pub(crate) fn code(&self) -> Option<&Arc<dyn Send + Sync>> {
        self.code.as_ref()
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the GPU with KFD id `gpu_id` can run the kernel: its descriptor and code are
    /// mapped there (always, for a kernel kfdrt does not hold the memory of).
    #[inline]
    pub fn runs_on(&self, gpu_id: u32) -> bool {
        self.memory.as_ref().is_none_or(|m| m.is_mapped_on(gpu_id))
    }

    /// Address of the kernel descriptor.
    pub fn object(&self) -> u64 {
        self.object
    }

    /// Bytes of kernel arguments the kernel reads.
    pub fn kernarg_size(&self) -> u32 {
        self.kernarg_size
    }

    /// The kernel descriptor, when known.
    pub fn descriptor(&self) -> Option<&aql::KernelDescriptor> {
        self.descriptor.as_ref()
    }

    /// Address of the first instruction (descriptor + `kernel_code_entry_byte_offset`).
    pub fn entry_address(&self) -> Option<u64> {
        let kd = self.descriptor.as_ref()?;
        self.object
            .checked_add_signed(kd.kernel_code_entry_byte_offset)
    }

    /// The kernel's metadata (code objects with an `NT_AMDGPU_METADATA` note): its arguments,
    /// hidden ones included, and resource use. `None` for kernels built otherwise.
    pub fn metadata(&self) -> Option<&KernelMetadata> {
        self.metadata.as_deref()
    }

    /// The metadata, shared (for [`crate::kernel_args::KernelArgs`]).
    pub fn metadata_arc(&self) -> Option<&Arc<KernelMetadata>> {
        self.metadata.as_ref()
    }

    /// The GPU address of the hostcall buffer kfdrt serves for this kernel (HIP's device
    /// `printf`), when its metadata asks for one ([`crate::hostcall`]); the first call starts the
    /// GPU's hostcall service. [`KernelArgs`] passes it by itself; a raw-argument launch writes
    /// it at the argument's offset.
    ///
    /// [`KernelArgs`]: crate::KernelArgs
    pub fn hostcall_buffer(&self) -> Result<Option<u64>> {
        let Some(slot) = &self.hostcall else {
            return Ok(None);
        };
        if let Some(s) = slot.service.get() {
            return Ok(Some(s.address()));
        }
        let service = crate::hostcall::service_for(&slot.gpu)?;
        // Two threads may both have started it: the service is per GPU, so both got the same.
        let s = slot.service.get_or_init(|| service);
        Ok(Some(s.address()))
    }

    /// Static LDS bytes per work-group.
    pub fn group_segment_size(&self) -> u32 {
        self.group_segment_size
    }

    /// Scratch bytes per work-item.
    pub fn private_segment_size(&self) -> u32 {
        self.private_segment_size
    }
}

/// Builds the 64-byte kernel descriptor of an emulated kernel: segment sizes and kernarg size
/// as a real one, entry 256 bytes after the descriptor (where an `s_endpgm` would be).
#[cfg(feature = "emu")]
fn emulated_descriptor(kernarg_size: u32, wave32: bool) -> aql::KernelDescriptor {
    let mut kd = aql::KernelDescriptor::default();
    kd.kernarg_size = kernarg_size;
    kd.kernel_code_entry_byte_offset = 256;
    kd.set_kernarg_segment_ptr(true);
    kd.set_wavefront_size32(wave32);
    kd
}

#[cfg(feature = "emu")]
impl Gpu {
    /// Creates an emulated kernel: `f` runs once per work-group when the kernel is dispatched on
    /// the emulated device. The kernel object is a real descriptor in executable GPU memory,
    /// so dispatch paths are the same as for machine code. Errors on a hardware device.
    pub fn emulated_kernel(
        &self,
        name: &str,
        kernarg_size: u32,
        f: Arc<kfd_emu::KernelFn>,
    ) -> Result<Kernel> {
        let emu = self
            .kfd()
            .emulator()
            .cloned()
            .ok_or_else(|| Error::NotOnThisGpu {
                gfx_target: self.info().gfx_target.clone(),
                what: format!("emulated kernels (kernel {name:?}): it is not the emulator"),
            })?;
        let code = self.alloc_with(
            4096,
            AllocOptions {
                executable: true,
                // Code is aligned to 256 bytes; a page keeps the descriptor and entry together.
                alignment: 4096,
                ..AllocOptions::new(MemoryKind::HostVisibleVram)
            },
        )?;
        let kd = emulated_descriptor(kernarg_size, self.info().wave_size == 32);
        // SAFETY: `KernelDescriptor` is plain old data of 64 bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts((&kd as *const aql::KernelDescriptor).cast::<u8>(), 64)
        };
        code.write(0, bytes)?;
        // s_endpgm (SOPP opcode 1) at the entry, so the object is also well-formed machine code.
        code.write(256, &0xBF81_0000u32.to_le_bytes())?;
        let mut k = Kernel {
            name: name.to_owned(),
            object: code.gpu_address(),
            kernarg_size,
            group_segment_size: 0,
            private_segment_size: 0,
            descriptor: Some(kd),
            memory: Some(Arc::new(code)),
            code: None,
            metadata: None,
            hostcall: None,
        };
        k.bind_emulation(emu, f);
        self.kfd()
            .shared
            .reports
            .name_kernel(k.object, name, kernarg_size, None, None);
        Ok(k)
    }
}
