//! [`CopyEngine`]: copies and fills on a GPU, through an SDMA queue when one can be had and
//! through blit kernels on an AQL queue when not.
//!
//! SDMA queues are scarce (a few slots per engine, shared by every process); KFD refuses more with
//! `ENOMEM`. A runtime that then fails is broken, so the engine falls back to kernels, as ROCr and
//! tinygrad do. `KFDRT_DISABLE_SDMA=1` forces the fallback (like ROCr's `HSA_ENABLE_SDMA=0`).
//! Peer-to-peer copies run on the source GPU's engine, which must have the destination mapped;
//! between GPUs of one XGMI hive on one of its XGMI SDMA engines, as ROCr copies there.
//!
//! The blit kernels are AMDGPU machine code (`blit/*.s`, assembled by `blit/build.sh` into the
//! checked-in `blit/*.co`) for gfx90a, gfx942 and gfx1100; the emulated device runs them on its
//! wave interpreter like any other code (gfx9 targets).

use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::launch::Dispatch;
use crate::memory::Buffer;
use crate::queue::{check_fill, check_range, AqlQueue, AqlQueueOptions, CopyCompletion, SdmaQueue};
use crate::signal::Signal;

/// Environment variable that makes copy engines use kernels instead of SDMA.
pub const DISABLE_SDMA_ENV: &str = "KFDRT_DISABLE_SDMA";

/// Work-items per work-group of the blit kernels.
const BLIT_GROUP: u64 = 64;
/// Most work-groups a blit launches; work-items stride through larger copies.
const MAX_BLIT_GROUPS: u64 = 1024;
/// Elements each work-item takes at least, before a launch uses more work-groups: 128 groups
/// for 1 MiB (more than an MI210 has compute units), and far fewer work-group starts, which
/// cost more than a loop iteration everywhere (on kfd-emu most of a small copy's time).
const MIN_BLIT_ELEMENTS_PER_ITEM: u64 = 8;
/// Bytes one blit launch covers at most: the kernels' element indices and byte offsets are
/// 32-bit registers.
const MAX_BLIT_BYTES: u64 = 1 << 31;

/// How a [`CopyEngine`] moves data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyPath {
    /// An SDMA queue.
    Sdma,
    /// Blit kernels on an AQL queue.
    Shader,
}

enum Path {
    Sdma(Box<SdmaQueue>),
    Shader(Box<ShaderPath>),
}

/// The fallback: blit kernels on an AQL queue.
struct ShaderPath {
    queue: AqlQueue,
    copy_aligned: Kernel,
    copy_unaligned: Kernel,
    fill: Kernel,
}

/// Copies and fills on one GPU.
pub struct CopyEngine {
    gpu: Gpu,
    path: Path,
    /// Blit kernels beside an SDMA engine (for same-GPU VRAM-to-VRAM copies, and graphs),
    /// made on first use.
    blit_kernels: std::sync::OnceLock<Option<Box<ShaderPath>>>,
    /// Queues on the XGMI SDMA engines, for copies to and from hive peers' VRAM (on an SDMA
    /// path): one per engine, made on first use (`None` where none can be had).
    xgmi: Box<[std::sync::OnceLock<Option<SdmaQueue>>]>,
    /// The hive peers in the order this engine first copied with them: peer `i` uses XGMI
    /// engine `i % engines`.
    xgmi_peers: std::sync::Mutex<Vec<u32>>,
}

/// Same-GPU VRAM-to-VRAM copies of at least this many bytes run as kernels even when SDMA is
/// available: the compute units reach far more VRAM bandwidth than an SDMA engine (ROCr makes
/// the same choice).
pub const DEVICE_TO_DEVICE_KERNEL_THRESHOLD: u64 = 1 << 20;

impl std::fmt::Debug for CopyEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CopyEngine")
            .field("gpu", &self.gpu)
            .field("path", &self.path())
            .finish()
    }
}

impl Gpu {
    /// A copy engine on this GPU: SDMA when a queue can be created, blit kernels otherwise
    /// (and always with `KFDRT_DISABLE_SDMA=1`).
    pub fn copy_engine(&self) -> Result<CopyEngine> {
        let disabled = std::env::var(DISABLE_SDMA_ENV).is_ok_and(|v| v.trim() == "1");
        self.copy_engine_preferring(if disabled {
            CopyPath::Shader
        } else {
            CopyPath::Sdma
        })
    }

    /// A copy engine on the path asked for, whatever the environment says: `Sdma` falls back to
    /// blit kernels when no SDMA queue can be created, `Shader` always uses them.
    pub fn copy_engine_preferring(&self, path: CopyPath) -> Result<CopyEngine> {
        if path == CopyPath::Sdma {
            match self.create_sdma_queue() {
                Ok(q) => return Ok(CopyEngine::new(self.clone(), Path::Sdma(Box::new(q)))),
                Err(e) => log::info!(
                    "kfdrt: no SDMA queue on GPU {:#x} ({e}); copying with kernels",
                    self.id()
                ),
            }
        }
        self.shader_copy_engine()
    }

    /// A copy engine that always uses blit kernels.
    pub fn shader_copy_engine(&self) -> Result<CopyEngine> {
        Ok(CopyEngine::new(
            self.clone(),
            Path::Shader(Box::new(ShaderPath::new(self)?)),
        ))
    }
}

impl ShaderPath {
    fn new(gpu: &Gpu) -> Result<ShaderPath> {
        let queue = gpu.create_aql_queue(AqlQueueOptions {
            size_packets: 256,
            ..Default::default()
        })?;
        let [copy_aligned, copy_unaligned, fill] = blit_kernels(gpu, &queue)?;
        Ok(ShaderPath {
            queue,
            copy_aligned,
            copy_unaligned,
            fill,
        })
    }
}

/// One launch of a blit kernel.
pub(crate) struct BlitLaunch<'k> {
    kernel: &'k Kernel,
    /// Its arguments: addresses of the engine's GPU.
    pub(crate) args: [u8; 32],
    /// Work-items, in groups of [`BLIT_GROUP`].
    items: u32,
    /// The first launch of a copy, which waits for the work before it; the rest need only
    /// start after it (they touch other bytes).
    first: bool,
}

impl<'k> BlitLaunch<'k> {
    /// The launch without its arguments.
    pub(crate) fn dispatch(&self) -> Dispatch<'k> {
        let d = Dispatch::linear(self.kernel, self.items, BLIT_GROUP as u16);
        if self.first {
            d
        } else {
            d.unordered()
        }
    }
}

impl ShaderPath {
    /// The launches that do `kind` over `bytes` at `dst` from `src_or_pattern`.
    fn launches(
        &self,
        kind: Blit,
        dst: u64,
        src_or_pattern: u64,
        bytes: u64,
    ) -> impl Iterator<Item = BlitLaunch<'_>> {
        let kernel = match kind {
            Blit::CopyAligned => &self.copy_aligned,
            Blit::CopyUnaligned => &self.copy_unaligned,
            Blit::Fill => &self.fill,
        };
        // The kernels index elements and bytes with 32-bit registers: a launch covers less than
        // 4 GiB, so larger copies take several (independent, so they may overlap; the batch
        // completes after all of them).
        (0..bytes.div_ceil(MAX_BLIT_BYTES)).map(move |i| {
            let done = i * MAX_BLIT_BYTES;
            let piece = (bytes - done).min(MAX_BLIT_BYTES);
            let src = if kind == Blit::Fill {
                src_or_pattern
            } else {
                src_or_pattern + done
            };
            // Bytes for the unaligned copy; 16-byte quads for the others (see `blit/gfx9.s`).
            let items = if kind == Blit::CopyUnaligned {
                piece
            } else {
                piece.div_ceil(16)
            };
            // Enough groups to fill the GPU, then each work-item strides through the rest.
            let groups = items
                .div_ceil(BLIT_GROUP * MIN_BLIT_ELEMENTS_PER_ITEM)
                .clamp(1, MAX_BLIT_GROUPS);
            let stride = groups * BLIT_GROUP;
            let mut args = [0u8; 32];
            for (i, v) in [dst + done, src, piece].into_iter().enumerate() {
                args[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
            }
            args[24..28].copy_from_slice(&(stride as u32).to_le_bytes());
            BlitLaunch {
                kernel,
                args,
                items: stride as u32,
                first: i == 0,
            }
        })
    }
}

/// The blit kernels' code object for a target.
fn blit_code_object(gfx_target: &str) -> Option<&'static [u8]> {
    Some(match gfx_target {
        "gfx90a" => include_bytes!("../blit/gfx90a.co"),
        "gfx942" => include_bytes!("../blit/gfx942.co"),
        "gfx1100" => include_bytes!("../blit/gfx1100.co"),
        _ => return None,
    })
}

/// What a blit kernel does (they share one argument layout, see `blit/gfx9.s`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Blit {
    CopyAligned,
    CopyUnaligned,
    Fill,
}

/// Loads the copy-aligned, copy-unaligned and fill kernels for `gpu`, invalidating the
/// instruction cache on the queue that will run them (no other queue is needed for that).
fn blit_kernels(gpu: &Gpu, queue: &AqlQueue) -> Result<[Kernel; 3]> {
    let elf = blit_code_object(&gpu.info().gfx_target).ok_or_else(|| Error::NotOnThisGpu {
        gfx_target: gpu.info().gfx_target.clone(),
        what: "blit kernels in kfdrt (there are for gfx90a, gfx942, gfx1100)".into(),
    })?;
    let co = gpu.load_code_object_with(
        elf,
        &crate::code_object::LoadOptions {
            icache_queue: Some(queue),
            ..Default::default()
        },
    )?;
    Ok([
        co.kernel("kfdrt_blit_copy_aligned")?,
        co.kernel("kfdrt_blit_copy_unaligned")?,
        co.kernel("kfdrt_blit_fill")?,
    ])
}

impl CopyEngine {
    fn new(gpu: Gpu, path: Path) -> CopyEngine {
        let gpu_xgmi_engines = gpu.info().sdma_xgmi_engines;
        CopyEngine {
            gpu,
            path,
            blit_kernels: std::sync::OnceLock::new(),
            xgmi: (0..gpu_xgmi_engines)
                .map(|_| std::sync::OnceLock::new())
                .collect(),
            xgmi_peers: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The kernels for a same-GPU VRAM-to-VRAM copy on an SDMA engine, when worth it and loadable.
    fn device_to_device(&self, dst: &Buffer, src: &Buffer, bytes: u64) -> Option<&ShaderPath> {
        let me = self.gpu.id();
        let local = |b: &Buffer| b.kind().is_vram() && b.owner_gpu_id() == me;
        if bytes < DEVICE_TO_DEVICE_KERNEL_THRESHOLD || !local(dst) || !local(src) {
            return None;
        }
        self.blit_kernels()
    }

    /// Blit kernels beside the SDMA queue, loaded on first use (`None` where they cannot be).
    fn blit_kernels(&self) -> Option<&ShaderPath> {
        self.blit_kernels
            .get_or_init(|| match ShaderPath::new(&self.gpu) {
                Ok(p) => Some(Box::new(p)),
                Err(e) => {
                    log::info!("kfdrt: no blit kernels beside SDMA: {e}");
                    None
                }
            })
            .as_deref()
    }

    /// An XGMI engine's queue when one of `buffers` is the VRAM of a GPU this one reaches over
    /// XGMI, as ROCr copies between hive peers on the XGMI engines: each peer keeps one engine,
    /// the peers spread over the engines in the order they first come (ROCr's
    /// `GpuAgent::GetXgmiBlit`), so copies with one peer stay in order and different peers'
    /// copies run side by side. `None` (use the PCIe engine) otherwise, or when no XGMI queue
    /// can be had.
    fn xgmi_for(&self, buffers: &[&Buffer]) -> Option<&SdmaQueue> {
        let me = self.gpu.id();
        let kfd = self.gpu.kfd();
        let over_xgmi = |b: &&&Buffer| {
            b.kind().is_vram()
                && b.owner_gpu_id() != me
                && kfd
                    .gpu_by_id(b.owner_gpu_id())
                    .is_some_and(|o| self.gpu.peer_access(&o) == crate::PeerAccess::Xgmi)
        };
        if self.xgmi.is_empty() {
            return None;
        }
        let peer = buffers.iter().find(over_xgmi)?.owner_gpu_id();
        let slot = {
            let mut peers = self.xgmi_peers.lock().unwrap_or_else(|p| p.into_inner());
            let index = peers.iter().position(|&p| p == peer).unwrap_or_else(|| {
                peers.push(peer);
                peers.len() - 1
            });
            index % self.xgmi.len()
        };
        let engine = self.gpu.info().sdma_engines + slot as u32;
        self.xgmi
            .get(slot)?
            .get_or_init(|| {
                // The engine by number where the driver takes it (KFD 1.17); otherwise KFD
                // places an XGMI queue itself (`allocate_sdma_queue`: the lowest free slot).
                let q = self
                    .gpu
                    .create_sdma_queue_on_engine(engine)
                    .or_else(|_| self.gpu.create_sdma_xgmi_queue());
                match q {
                    Ok(q) => Some(q),
                    Err(e) => {
                        log::info!("kfdrt: hive copies stay on the PCIe SDMA engine: {e}");
                        None
                    }
                }
            })
            .as_ref()
    }

    /// Which path the engine uses for copies in general.
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

    /// Launches `kind` over `bytes`; `buffers` are the buffers `dst` and `src_or_pattern` point
    /// into, which the copy keeps allocated until it completes.
    fn blit(
        shader: &ShaderPath,
        kind: Blit,
        dst: u64,
        src_or_pattern: u64,
        bytes: u64,
        deps: &[&Signal],
        buffers: &[&Buffer],
    ) -> Result<CopyCompletion> {
        let mut b = shader.queue.batch()?;
        if !deps.is_empty() {
            b.barrier_and(deps)?;
        }
        for buf in buffers {
            b.staged.held.push(buf.retain());
        }
        for launch in shader.launches(kind, dst, src_or_pattern, bytes) {
            // SAFETY: the arguments point into `buffers` (checked by the callers to hold the
            // ranges), which the batch keeps allocated until the copy completes.
            let d = unsafe { launch.dispatch().with_raw_args(&launch.args) };
            b.dispatch(&d)?;
        }
        Ok(CopyCompletion::from_submission(b.submit()?))
    }

    /// The blit kernels of this GPU, loaded on first use when the engine runs on SDMA.
    fn shader(&self) -> Result<&ShaderPath> {
        match &self.path {
            Path::Shader(s) => Ok(s),
            Path::Sdma(_) => self.blit_kernels().ok_or_else(|| Error::NotOnThisGpu {
                gfx_target: self.gpu.info().gfx_target.clone(),
                what: format!(
                    "loaded blit kernels (GPU {:#x}; see the log)",
                    self.gpu.id()
                ),
            }),
        }
    }

    /// The launches that copy `bytes` from `src[src_off..]` to `dst[dst_off..]` with blit
    /// kernels, whatever the engine's path (for a graph, which replays them on a stream's
    /// queue). The caller keeps the buffers allocated while they may run.
    pub(crate) fn copy_launches(
        &self,
        dst: &Buffer,
        dst_off: u64,
        src: &Buffer,
        src_off: u64,
        bytes: u64,
    ) -> Result<Vec<BlitLaunch<'_>>> {
        let (kind, d, s) = self.plan_copy(dst, dst_off, src, src_off, bytes)?;
        Ok(self.shader()?.launches(kind, d, s, bytes).collect())
    }

    /// As [`CopyEngine::copy_launches`], for a fill.
    pub(crate) fn fill_launches(
        &self,
        dst: &Buffer,
        dst_off: u64,
        pattern: u32,
        bytes: u64,
    ) -> Result<Vec<BlitLaunch<'_>>> {
        check_fill(dst_off, bytes)?;
        let d = check_range(&self.gpu, dst, dst_off, bytes, "destination")?;
        Ok(self
            .shader()?
            .launches(Blit::Fill, d, u64::from(pattern), bytes)
            .collect())
    }

    /// Copies `bytes` from `src[src_off..]` to `dst[dst_off..]` once every signal in `deps` is 0.
    /// Same-GPU VRAM-to-VRAM copies from [`DEVICE_TO_DEVICE_KERNEL_THRESHOLD`] up run as kernels.
    pub fn copy(
        &self,
        dst: &Buffer,
        dst_off: u64,
        src: &Buffer,
        src_off: u64,
        bytes: u64,
        deps: &[&Signal],
    ) -> Result<CopyCompletion> {
        let shared = &self.gpu.kfd().shared;
        let capture = shared.recorder.as_ref().and_then(|r| r.capture.as_ref());
        let Some(capture) = capture else {
            return self.copy_uncaptured(dst, dst_off, src, src_off, bytes, deps);
        };
        // Capturing serializes: the copy is complete when it returns.
        let before = (src.to_vec().ok(), dst.to_vec().ok());
        let done = self.copy_uncaptured(dst, dst_off, src, src_off, bytes, deps)?;
        done.wait(shared.debug.wait_timeout)?;
        capture.lock().unwrap_or_else(|p| p.into_inner()).copy(
            self.gpu.index(),
            (dst, dst_off),
            (src, src_off),
            bytes,
            before,
        );
        Ok(done)
    }

    fn copy_uncaptured(
        &self,
        dst: &Buffer,
        dst_off: u64,
        src: &Buffer,
        src_off: u64,
        bytes: u64,
        deps: &[&Signal],
    ) -> Result<CopyCompletion> {
        let shader = match &self.path {
            Path::Shader(s) => s,
            Path::Sdma(q) => match self.device_to_device(dst, src, bytes) {
                Some(s) => s,
                None => {
                    let q = self.xgmi_for(&[dst, src]).unwrap_or(q);
                    return q.copy(dst, dst_off, src, src_off, bytes, deps);
                }
            },
        };
        let (kind, d, s) = self.plan_copy(dst, dst_off, src, src_off, bytes)?;
        Self::blit(shader, kind, d, s, bytes, deps, &[dst, src])
    }

    /// Checks a blit copy's ranges: the kernel to use and the two addresses.
    fn plan_copy(
        &self,
        dst: &Buffer,
        dst_off: u64,
        src: &Buffer,
        src_off: u64,
        bytes: u64,
    ) -> Result<(Blit, u64, u64)> {
        if bytes == 0 {
            return Err(Error::ZeroSize { what: "copy" });
        }
        let d = check_range(&self.gpu, dst, dst_off, bytes, "destination")?;
        let s = check_range(&self.gpu, src, src_off, bytes, "source")?;
        let kind = if (d | s | bytes) % 4 == 0 {
            Blit::CopyAligned
        } else {
            Blit::CopyUnaligned
        };
        Ok((kind, d, s))
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
            Path::Sdma(q) => {
                let q = self.xgmi_for(&[dst]).unwrap_or(q);
                q.fill(dst, dst_off, pattern, bytes, deps)
            }
            Path::Shader(shader) => {
                check_fill(dst_off, bytes)?;
                let d = check_range(&self.gpu, dst, dst_off, bytes, "destination")?;
                Self::blit(
                    shader,
                    Blit::Fill,
                    d,
                    u64::from(pattern),
                    bytes,
                    deps,
                    &[dst],
                )
            }
        }
    }
}
