//! [`DispatchSetup`]: everything about one AQL kernel dispatch that its waves see, and
//! [`RunControl`]: how the caller bounds and stops a run.

use crate::descriptor::KernelDescriptor;
use crate::error::WaveError;
use crate::program::CodeCache;
use crate::target::Target;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The LDS and scratch apertures of flat addressing (what `SH_MEM_BASES`,
/// `src_shared_base` and `src_private_base` report).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Apertures {
    /// Base of the LDS aperture: a flat address `shared_base + x` (x < 4 GiB) is LDS byte x.
    pub shared_base: u64,
    /// Base of the scratch aperture: `private_base + x` is the work-item's private byte x.
    pub private_base: u64,
}

impl Default for Apertures {
    /// KFD's GFX9 layout (`MAKE_LDS_APP_BASE_V9`, `MAKE_SCRATCH_APP_BASE_V9`).
    fn default() -> Apertures {
        Apertures {
            shared_base: 0x1_0000_0000_0000,
            private_base: 0x2_0000_0000_0000,
        }
    }
}

/// The queue's scratch (private segment) backing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ScratchBacking {
    /// GPU address of the backing memory.
    pub base: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Bytes between consecutive waves' scratch, as the queue's `COMPUTE_TMPRING_SIZE`
    /// (`WAVESIZE` in KiB) lays the backing out; 0: the dispatch's own need, rounded to 1 KiB.
    pub wave_bytes: u64,
    /// The private-segment buffer resource the runtime gave the queue
    /// (`amd_queue_t.scratch_resource_descriptor`), handed to the waves as it is, as the CP
    /// does; `None`: one in ROCr's layout over `base` and `size`.
    pub resource: Option<[u32; 4]>,
}

/// One AQL kernel dispatch as its waves see it.
#[derive(Clone, Debug)]
pub struct DispatchSetup {
    /// The processor.
    pub target: Target,
    /// Address of the kernel descriptor (the packet's `kernel_object`).
    pub kernel_object: u64,
    /// The kernel descriptor (read from `kernel_object`).
    pub descriptor: KernelDescriptor,
    /// Work-items per work-group per dimension (packet).
    pub workgroup_size: [u32; 3],
    /// Work-items in the grid per dimension (packet).
    pub grid_size: [u32; 3],
    /// Dimensions (packet `setup`, 1..=3).
    pub dimensions: u8,
    /// Kernel-argument address (packet).
    pub kernarg_address: u64,
    /// Address of the dispatch packet in the ring (the dispatch pointer kernels read).
    pub dispatch_packet_address: u64,
    /// Address of the queue's `amd_queue_t` (the queue pointer).
    pub queue_address: u64,
    /// The dispatch id (the packet's index in the queue).
    pub dispatch_id: u64,
    /// LDS bytes per work-group: the packet's `group_segment_size`, which the runtime makes
    /// the descriptor's fixed size plus the dynamic part. The CP reads only the packet (the
    /// descriptor's segment sizes are the runtime's to use; code objects v2 keep other fields
    /// there).
    pub group_segment_size: u32,
    /// Scratch bytes per work-item: the packet's `private_segment_size` (likewise).
    pub private_segment_size: u32,
    /// The queue's scratch backing, if it has one.
    pub scratch: Option<ScratchBacking>,
    /// Flat-address apertures.
    pub apertures: Apertures,
    /// Decoded code, shared by every dispatch of the same code (see [`CodeCache`]).
    pub code: Arc<CodeCache>,
    /// PM4 dispatches: the entry point (`COMPUTE_PGM_LO/HI << 8`) instead of the
    /// descriptor's.
    pub entry_override: Option<u64>,
    /// PM4 dispatches: the user SGPRs exactly as `COMPUTE_USER_DATA_0..` hold them (the
    /// first `USER_SGPR_COUNT` are loaded), instead of the values the descriptor's enable bits
    /// call for. The system SGPRs and VGPRs still follow `compute_pgm_rsrc2`.
    pub user_sgprs_override: Option<Vec<u32>>,
    /// The GPU's global wave sync resources, when the queue holds them (`ds_gws_*` stop the
    /// wave otherwise).
    pub gws: Option<Arc<crate::gws::Gws>>,
    /// What a trap or a wave exception does (see [`TrapRouting`]).
    pub trap: TrapRouting,
    /// What an attached debugger made the waves trap on (see [`crate::WaveDebug`]).
    pub debug: crate::wave_debug::WaveDebug,
    /// The XCCs the dispatch's work-groups are spread over, in turn (work-group `g` of the
    /// grid, counted x fastest, runs on XCC `g % xccs`): what `HW_REG_XCC_ID` reads on gfx94x.
    pub xccs: u32,
    /// Where the waves' `s_sendmsg` interrupt messages go (none: they are dropped).
    pub messages: Option<MessageSink>,
    /// Address ranges whose accesses are reported, as a debugger's address watch (none: no
    /// check at all).
    pub watch: Option<Arc<WatchSet>>,
    /// Where the running waves' state is noted when asked (hang reports; none: never).
    pub probe: Option<Arc<WaveProbe>>,
    /// Checks every global and LDS access, and reports what it finds (none: no check at all).
    pub sanitize: Option<Arc<crate::sanitize::Sanitizer>>,
}

/// Asks the running waves of a GPU for their state: a reporter bumps the request, and each
/// work-group notes its waves the next time it switches waves (within a time slice).
#[derive(Debug, Default)]
pub struct WaveProbe {
    request: std::sync::atomic::AtomicU64,
    noted: std::sync::Mutex<Vec<(u64, RunningWave)>>,
}

/// A wave as a hang report shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningWave {
    /// The dispatch's kernel object.
    pub kernel_object: u64,
    /// What it is doing: `running`, `at a barrier`, `sleeping (s_sleep)`, `waiting for
    /// memory (s_waitcnt)`.
    pub doing: &'static str,
    /// The instruction at its PC, disassembled.
    pub instruction: String,
    /// Its registers.
    pub state: crate::exec::WaveSnapshot,
}

impl WaveProbe {
    /// Asks the running waves for their state; returns the request's number.
    pub fn ask(&self) -> u64 {
        self.request
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel)
            + 1
    }

    /// The current request (what a work-group compares with the last it answered).
    pub fn current(&self) -> u64 {
        self.request.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Notes `wave` as an answer to request `request`.
    pub fn note(&self, request: u64, wave: RunningWave) {
        let mut n = self.noted.lock().unwrap_or_else(|p| p.into_inner());
        // Only the latest request's answers are kept.
        n.retain(|(r, _)| *r >= request);
        n.push((request, wave));
    }

    /// The answers to request `request` so far.
    pub fn answers(&self, request: u64) -> Vec<RunningWave> {
        self.noted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(r, _)| *r == request)
            .map(|(_, w)| w.clone())
            .collect()
    }
}

/// Address ranges whose vector-memory accesses (global, flat, buffer) a dispatch reports.
pub struct WatchSet {
    /// `[start, end)` ranges of GPU virtual addresses.
    pub ranges: Vec<(u64, u64)>,
    /// Report loads too, not only stores and atomics.
    pub reads: bool,
    /// Gets each access that touches a range, once per lane.
    pub sink: Arc<dyn Fn(&WatchHit) + Send + Sync>,
}

impl std::fmt::Debug for WatchSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchSet")
            .field("ranges", &self.ranges)
            .field("reads", &self.reads)
            .finish()
    }
}

impl WatchSet {
    /// Whether `[address, address + bytes)` touches a watched range.
    pub fn touches(&self, address: u64, bytes: u64) -> bool {
        let end = address.saturating_add(bytes);
        self.ranges.iter().any(|&(s, e)| address < e && s < end)
    }
}

/// One lane's access to a watched range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchHit {
    /// The address accessed.
    pub address: u64,
    /// Bytes accessed.
    pub bytes: u32,
    /// A store or an atomic (`false`: a load).
    pub write: bool,
    /// The instruction's PC.
    pub pc: u64,
    /// The instruction, disassembled.
    pub instruction: String,
    /// The work-group, the wave's index in it, and the lane.
    pub work_group: [u32; 3],
    /// The wave's index in its work-group.
    pub wave: u32,
    /// The lane.
    pub lane: u32,
}

/// What a wave does at an `s_trap` or an exception (an illegal instruction).
///
/// The GPU enters the driver's first-level trap handler, which jumps to the second-level
/// handler the process installed (`SET_TRAP_HANDLER`), or, without one, halts the wave at an
/// exception and steps over an `s_trap` (Linux's `cwsr_trap_handler_gfx9.asm`,
/// `L_NO_NEXT_TRAP`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TrapRouting {
    /// The run ends with the error ([`WaveError::Trap`], [`WaveError::Undecodable`]) for the
    /// caller to report: the effect of a handler the interpreter does not run (kfd-emu's model
    /// of a pre-debugger-ABI runtime's handler, which reports through the queue's signal).
    #[default]
    Report,
    /// No second-level handler: an exception halts the wave ([`WaveError::Halted`]), an
    /// `s_trap` is stepped over.
    FirstLevelOnly,
    /// The second-level handler at `tba` runs, in trap mode, with the trap registers as the
    /// first-level handler leaves them.
    Handler(TrapHandler),
}

/// A second-level trap handler and what the waves entering it are given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrapHandler {
    /// The handler's first instruction (`SET_TRAP_HANDLER`'s `tba_addr`).
    pub tba: u64,
    /// Its memory (`tma_addr`), in `ttmp[14:15]` on entry.
    pub tma: u64,
    /// The queue's doorbell id, which `s_sendmsg(MSG_GET_DOORBELL)` returns.
    pub doorbell_id: u32,
}

/// A wave's `s_sendmsg(MSG_INTERRUPT)`: what the SQ puts in the interrupt it raises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqMessage {
    /// M0 at the message (the payload).
    pub m0: u32,
    /// Whether the wave was in trap mode (the interrupt's PRIV bit).
    pub privileged: bool,
}

/// The receiver of the waves' interrupt messages (shared by every thread of a dispatch).
#[derive(Clone)]
pub struct MessageSink(pub Arc<dyn Fn(SqMessage) + Send + Sync>);

impl std::fmt::Debug for MessageSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MessageSink")
    }
}

/// Most work-items in one work-group.
pub const MAX_WORKGROUP_ITEMS: u32 = 1024;
/// Most LDS bytes one work-group may use (GFX9).
pub const MAX_GROUP_SEGMENT: u32 = 64 * 1024;
/// Granule of per-wave scratch (bytes).
const SCRATCH_WAVE_GRANULE: u64 = 1024;

fn u16_at(p: &[u8; 64], off: usize) -> u16 {
    u16::from_le_bytes([p[off], p[off + 1]])
}

fn u32_at(p: &[u8; 64], off: usize) -> u32 {
    u32::from_le_bytes([p[off], p[off + 1], p[off + 2], p[off + 3]])
}

fn u64_at(p: &[u8; 64], off: usize) -> u64 {
    u64::from(u32_at(p, off)) | u64::from(u32_at(p, off + 4)) << 32
}

impl DispatchSetup {
    /// A dispatch from the 64 bytes of an AQL kernel-dispatch packet found at
    /// `packet_address`, with the descriptor already read from the packet's `kernel_object`.
    pub fn from_aql_packet(
        target: Target,
        packet: &[u8; 64],
        packet_address: u64,
        descriptor: KernelDescriptor,
        code: Arc<CodeCache>,
    ) -> DispatchSetup {
        DispatchSetup {
            target,
            kernel_object: u64_at(packet, 32),
            descriptor,
            workgroup_size: [
                u32::from(u16_at(packet, 4)),
                u32::from(u16_at(packet, 6)),
                u32::from(u16_at(packet, 8)),
            ],
            grid_size: [u32_at(packet, 12), u32_at(packet, 16), u32_at(packet, 20)],
            dimensions: (u16_at(packet, 2) & 3) as u8,
            kernarg_address: u64_at(packet, 40),
            dispatch_packet_address: packet_address,
            queue_address: 0,
            dispatch_id: 0,
            group_segment_size: u32_at(packet, 28),
            private_segment_size: u32_at(packet, 24),
            scratch: None,
            watch: None,
            probe: None,
            sanitize: None,
            apertures: Apertures::default(),
            code,
            entry_override: None,
            user_sgprs_override: None,
            gws: None,
            trap: TrapRouting::Report,
            debug: crate::wave_debug::WaveDebug::default(),
            messages: None,
            xccs: 1,
        }
    }

    /// The first instruction's address.
    pub fn entry(&self) -> u64 {
        self.entry_override
            .unwrap_or_else(|| self.descriptor.entry(self.kernel_object))
    }

    /// Work-groups per dimension.
    pub fn grid_groups(&self) -> [u32; 3] {
        std::array::from_fn(|d| {
            let wg = self.workgroup_size[d].max(1);
            self.grid_size[d].div_ceil(wg)
        })
    }

    /// Every work-group id of the dispatch, x fastest.
    pub fn workgroup_ids(&self) -> impl Iterator<Item = [u32; 3]> {
        let g = self.grid_groups();
        (0..g[2]).flat_map(move |z| (0..g[1]).flat_map(move |y| (0..g[0]).map(move |x| [x, y, z])))
    }

    /// LDS bytes per work-group: the descriptor's fixed size plus the packet's dynamic part.
    pub fn group_segment_size(&self) -> u32 {
        self.group_segment_size
    }

    /// Scratch bytes per work-item.
    pub fn private_segment_size(&self) -> u32 {
        self.private_segment_size
    }

    /// Whether the kernel needs scratch.
    pub fn needs_scratch(&self) -> bool {
        self.private_segment_size > 0
    }

    /// Scratch bytes of one wave.
    pub fn scratch_per_wave(&self) -> u64 {
        if let Some(s) = self.scratch.filter(|s| s.wave_bytes > 0) {
            return s.wave_bytes;
        }
        let raw = u64::from(self.private_segment_size()) * u64::from(self.wave_lanes());
        raw.div_ceil(SCRATCH_WAVE_GRANULE) * SCRATCH_WAVE_GRANULE
    }

    /// Lanes per wave: 32 for a wave32 kernel on a target that runs them (GFX11), else 64.
    pub fn wave_lanes(&self) -> u32 {
        if self.descriptor.wavefront_size32() && self.target.supports_wave32() {
            32
        } else {
            self.target.wave_size()
        }
    }

    /// Waves per work-group.
    pub fn waves_per_group(&self) -> u32 {
        let items: u64 = self.workgroup_size.iter().map(|&s| u64::from(s)).product();
        u32::try_from(items.div_ceil(u64::from(self.wave_lanes()))).unwrap_or(u32::MAX)
    }

    /// Scratch bytes one slot (one concurrently running work-group) needs.
    pub fn scratch_per_slot(&self) -> u64 {
        self.scratch_per_wave()
            .saturating_mul(u64::from(self.waves_per_group()))
    }

    /// Checks the dispatch as the CP would before launching it.
    pub fn validate(&self) -> Result<(), WaveError> {
        let bad = |s: String| Err(WaveError::InvalidDispatch(s));
        if self.workgroup_size.contains(&0) || self.grid_size.contains(&0) {
            return bad(format!(
                "zero size: work-group {:?}, grid {:?}",
                self.workgroup_size, self.grid_size
            ));
        }
        let items = self
            .workgroup_size
            .iter()
            .try_fold(1u32, |a, &b| a.checked_mul(b));
        if items.is_none_or(|n| n > MAX_WORKGROUP_ITEMS) {
            return bad(format!(
                "work-group of {:?} work-items is over {MAX_WORKGROUP_ITEMS}",
                self.workgroup_size
            ));
        }
        if self.group_segment_size() > MAX_GROUP_SEGMENT {
            return bad(format!(
                "group segment of {} bytes is over {MAX_GROUP_SEGMENT}",
                self.group_segment_size()
            ));
        }
        if self.descriptor.wavefront_size32() && !self.target.supports_wave32() {
            return bad(format!("wave32 kernel on {}", self.target));
        }
        if self.code.target() != self.target {
            return bad(format!(
                "code cache is for {}, dispatch for {}",
                self.code.target(),
                self.target
            ));
        }
        if self.needs_scratch() && self.scratch.is_none() {
            return Err(WaveError::ScratchUnavailable {
                bytes_per_work_item: self.private_segment_size(),
            });
        }
        Ok(())
    }
}

/// How a run is bounded and stopped by its caller.
#[derive(Clone, Copy, Debug)]
pub struct RunControl<'a> {
    /// Set to stop the run (checked every few thousand instructions); the run returns
    /// [`WaveError::Cancelled`].
    pub cancel: Option<&'a AtomicBool>,
    /// Most wave-instructions one work-group may execute before
    /// [`WaveError::BudgetExhausted`].
    pub max_wave_instructions: u64,
    /// Which scratch slot the work-group uses: its waves' scratch lies at
    /// `scratch.base + slot * scratch_per_slot()`. Work-groups running at the same time must
    /// use different slots (kfd-emu: the host thread's index).
    pub scratch_slot: u32,
}

impl Default for RunControl<'_> {
    fn default() -> Self {
        RunControl {
            cancel: None,
            max_wave_instructions: 1 << 32,
            scratch_slot: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kfd-emu shares one setup and one code cache between its worker threads.
    #[test]
    fn shared_across_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<DispatchSetup>();
        send_sync::<CodeCache>();
        send_sync::<RunControl<'_>>();
        send_sync::<WaveError>();
    }

    #[test]
    fn sizes_and_validation() {
        let code = Arc::new(CodeCache::new(Target::Gfx90a));
        let mut p = [0u8; 64];
        p[2] = 2;
        p[4] = 16; // 16 x 8 work-groups
        p[6] = 8;
        p[8] = 1;
        p[12..16].copy_from_slice(&100u32.to_le_bytes());
        p[16..20].copy_from_slice(&20u32.to_le_bytes());
        p[20..24].copy_from_slice(&1u32.to_le_bytes());
        p[24..28].copy_from_slice(&40u32.to_le_bytes());
        p[28..32].copy_from_slice(&256u32.to_le_bytes());
        let desc = KernelDescriptor {
            group_segment_fixed_size: 1024,
            private_segment_fixed_size: 16,
            ..KernelDescriptor::default()
        };
        let mut s = DispatchSetup::from_aql_packet(Target::Gfx90a, &p, 0, desc, code.clone());
        assert_eq!(s.grid_groups(), [7, 3, 1]);
        assert_eq!(s.workgroup_ids().count(), 21);
        assert_eq!(s.waves_per_group(), 2);
        assert_eq!(s.private_segment_size(), 40);
        // 40 bytes x 64 lanes = 2560, rounded to 1 KiB granules.
        assert_eq!(s.scratch_per_wave(), 3072);
        assert_eq!(s.scratch_per_slot(), 6144);
        assert_eq!(
            s.validate(),
            Err(WaveError::ScratchUnavailable {
                bytes_per_work_item: 40
            })
        );
        s.scratch = Some(ScratchBacking {
            base: 0,
            size: 1 << 20,
            ..ScratchBacking::default()
        });
        assert_eq!(s.validate(), Ok(()));
        // The queue's layout decides the stride between waves.
        s.scratch = s.scratch.map(|b| ScratchBacking {
            wave_bytes: 4096,
            ..b
        });
        assert_eq!(s.scratch_per_wave(), 4096);
        s.group_segment_size = 64 * 1024 + 4;
        assert!(matches!(s.validate(), Err(WaveError::InvalidDispatch(_))));
        s.group_segment_size = 0;
        s.code = Arc::new(CodeCache::new(Target::Gfx942));
        assert!(matches!(s.validate(), Err(WaveError::InvalidDispatch(_))));
    }
}
