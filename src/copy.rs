//! [`CopyEngine`]: copies and fills on a GPU, through an SDMA queue when one can be had and
//! through copy kernels on an AQL queue when not.
//!
//! SDMA queues are scarce (a few slots per engine, shared by every process); KFD refuses more with
//! `ENOMEM`. A runtime that then fails is broken, so the engine falls back to kernels, as ROCr and
//! tinygrad do. `KFDRT_DISABLE_SDMA=1` forces the fallback (like ROCr's `HSA_ENABLE_SDMA=0`).
//! Peer-to-peer copies run on the source GPU's engine, which must have the destination mapped.

use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::memory::Buffer;
use crate::queue::{
    check_fill, check_range, AqlQueue, AqlQueueOptions, CopyCompletion, Dispatch, SdmaQueue,
};
use crate::signal::Signal;

/// Environment variable that makes copy engines use kernels instead of SDMA.
pub const DISABLE_SDMA_ENV: &str = "KFDRT_DISABLE_SDMA";

/// Bytes one work-group of the copy kernel moves.
const BLIT_CHUNK: u64 = 256 * 1024;

/// How a [`CopyEngine`] moves data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyPath {
    /// An SDMA queue.
    Sdma,
    /// Copy kernels on an AQL queue.
    Shader,
}

enum Path {
    Sdma(Box<SdmaQueue>),
    Shader(Box<ShaderPath>),
}

/// The fallback: copy and fill kernels on an AQL queue.
struct ShaderPath {
    queue: AqlQueue,
    copy: Kernel,
    fill: Kernel,
}

/// Copies and fills on one GPU.
pub struct CopyEngine {
    gpu: Gpu,
    path: Path,
}

impl std::fmt::Debug for CopyEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CopyEngine")
            .field("gpu", &self.gpu)
            .field("path", &self.path())
            .finish()
    }
}

impl Gpu {
    /// A copy engine on this GPU: SDMA when a queue can be created, copy kernels otherwise.
    pub fn copy_engine(&self) -> Result<CopyEngine> {
        let disabled = std::env::var(DISABLE_SDMA_ENV).is_ok_and(|v| v.trim() == "1");
        if !disabled {
            match self.create_sdma_queue() {
                Ok(q) => {
                    return Ok(CopyEngine {
                        gpu: self.clone(),
                        path: Path::Sdma(Box::new(q)),
                    })
                }
                Err(e) => log::info!(
                    "kfdrt: no SDMA queue on GPU {:#x} ({e}); copying with kernels",
                    self.id()
                ),
            }
        }
        self.shader_copy_engine()
    }

    /// A copy engine that always uses copy kernels.
    pub fn shader_copy_engine(&self) -> Result<CopyEngine> {
        let queue = self.create_aql_queue(AqlQueueOptions {
            size_packets: 256,
            ..Default::default()
        })?;
        let (copy, fill) = blit_kernels(self)?;
        Ok(CopyEngine {
            gpu: self.clone(),
            path: Path::Shader(Box::new(ShaderPath { queue, copy, fill })),
        })
    }
}

#[cfg(feature = "emu")]
fn blit_kernels(gpu: &Gpu) -> Result<(Kernel, Kernel)> {
    use kfd_emu::WorkGroup;
    use std::sync::Arc;
    if gpu.kfd().emulator().is_none() {
        return Err(no_blit_code());
    }
    // Kernel arguments: dst u64, src-or-pattern u64, bytes u64. Each work-group moves one chunk.
    let copy = gpu.emulated_kernel(
        "kfdrt_blit_copy",
        24,
        Arc::new(|wg: &WorkGroup<'_>| {
            let (dst, src, bytes) = (wg.kernarg_u64(0)?, wg.kernarg_u64(8)?, wg.kernarg_u64(16)?);
            let off = u64::from(wg.group_id[0]) * BLIT_CHUNK;
            if off < bytes {
                wg.mem
                    .copy(dst + off, src + off, (bytes - off).min(BLIT_CHUNK))?;
            }
            Ok(())
        }),
    )?;
    let fill = gpu.emulated_kernel(
        "kfdrt_blit_fill",
        24,
        Arc::new(|wg: &WorkGroup<'_>| {
            let (dst, pattern, bytes) =
                (wg.kernarg_u64(0)?, wg.kernarg_u64(8)?, wg.kernarg_u64(16)?);
            let off = u64::from(wg.group_id[0]) * BLIT_CHUNK;
            if off < bytes {
                wg.mem
                    .fill_u32(dst + off, pattern as u32, (bytes - off).min(BLIT_CHUNK))?;
            }
            Ok(())
        }),
    )?;
    Ok((copy, fill))
}

#[cfg(not(feature = "emu"))]
fn blit_kernels(_gpu: &Gpu) -> Result<(Kernel, Kernel)> {
    Err(no_blit_code())
}

fn no_blit_code() -> Error {
    Error::InvalidArgument(
        "the shader-copy fallback needs blit kernel code objects, which this kfdrt version does not ship yet".into(),
    )
}

impl CopyEngine {
    /// Which path the engine uses.
    pub fn path(&self) -> CopyPath {
        match self.path {
            Path::Sdma(_) => CopyPath::Sdma,
            Path::Shader(_) => CopyPath::Shader,
        }
    }

    /// The GPU whose engine runs the copies.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    fn blit(
        &self,
        kernel_is_copy: bool,
        dst: u64,
        src_or_pattern: u64,
        bytes: u64,
        deps: &[&Signal],
    ) -> Result<CopyCompletion> {
        let Path::Shader(shader) = &self.path else {
            return Err(Error::InvalidArgument("not a shader copy engine".into()));
        };
        let mut args = Vec::with_capacity(24);
        for v in [dst, src_or_pattern, bytes] {
            args.extend_from_slice(&v.to_le_bytes());
        }
        let groups = u32::try_from(bytes.div_ceil(BLIT_CHUNK))
            .map_err(|_| Error::InvalidArgument(format!("copy of {bytes} bytes is too large")))?;
        let kernel = if kernel_is_copy {
            &shader.copy
        } else {
            &shader.fill
        };
        let mut b = shader.queue.batch()?;
        if !deps.is_empty() {
            b.barrier_and(deps)?;
        }
        b.dispatch(&Dispatch::linear(kernel, groups, 1, &args))?;
        Ok(CopyCompletion::from_submission(b.submit()?))
    }

    /// Copies `bytes` from `src[src_off..]` to `dst[dst_off..]` once every signal in `deps` is 0.
    pub fn copy(
        &self,
        dst: &Buffer,
        dst_off: u64,
        src: &Buffer,
        src_off: u64,
        bytes: u64,
        deps: &[&Signal],
    ) -> Result<CopyCompletion> {
        match &self.path {
            Path::Sdma(q) => q.copy(dst, dst_off, src, src_off, bytes, deps),
            Path::Shader(_) => {
                if bytes == 0 {
                    return Err(Error::InvalidArgument("copy of 0 bytes".into()));
                }
                let d = check_range(&self.gpu, dst, dst_off, bytes, "destination")?;
                let s = check_range(&self.gpu, src, src_off, bytes, "source")?;
                self.blit(true, d, s, bytes, deps)
            }
        }
    }

    /// Fills `bytes` (a multiple of 4) of `dst[dst_off..]` with `pattern`.
    pub fn fill(
        &self,
        dst: &Buffer,
        dst_off: u64,
        pattern: u32,
        bytes: u64,
        deps: &[&Signal],
    ) -> Result<CopyCompletion> {
        match &self.path {
            Path::Sdma(q) => q.fill(dst, dst_off, pattern, bytes, deps),
            Path::Shader(_) => {
                check_fill(dst_off, bytes)?;
                let d = check_range(&self.gpu, dst, dst_off, bytes, "destination")?;
                self.blit(false, d, u64::from(pattern), bytes, deps)
            }
        }
    }
}
