//! kfdrt's own blit kernels (`blit/gfx9.s` and `blit/gfx11.s`: aligned copy, unaligned copy,
//! fill) through `Gpu::shader_copy_engine`, on the emulated gfx90a, gfx942 and gfx1100 (wave32),
//! where they run as machine code on kfd-emu's wave interpreter: aligned and unaligned copies of sizes that are not multiples of
//! 4 or of the 64-lane vector width, offsets crossing page boundaries, copies long enough that
//! work-items stride (more elements than 1024 groups of 64), fills, and the fills `CopyEngine`
//! refuses; between host-visible VRAM and GTT in every direction, and through device-local VRAM.
//! Guard bytes before and after each range are checked untouched, sources unchanged, and every
//! copy or fill must have been one dispatch of machine code.

use crate::common;

use kfdrt::emu::Preset;
use kfdrt::{Buffer, CopyEngine, CopyPath, Gpu, MemoryKind};
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(120));
const PAGE: u64 = 4096;
/// Room a buffer has past the range it is given, for page-relative offsets and guard bytes.
const SLACK: u64 = 2 * PAGE + 256;
/// What the bytes around a destination range hold.
const GUARD: u8 = 0xEE;

const VRAM: MemoryKind = MemoryKind::HostVisibleVram;
const GTT: MemoryKind = MemoryKind::GttCoherent;

/// Where a range starts in its buffer.
#[derive(Clone, Copy, Debug)]
enum Off {
    /// At this offset.
    At(u64),
    /// This many bytes before a 4 KiB boundary of the GPU address, so a longer range crosses
    /// it.
    BeforePage(u64),
}

impl Off {
    fn resolve(self, b: &Buffer) -> u64 {
        match self {
            Off::At(n) => n,
            Off::BeforePage(k) => {
                let a = b.gpu_address();
                let mut boundary = (a + 1).next_multiple_of(PAGE);
                if boundary - a < k {
                    boundary += PAGE;
                }
                boundary - k - a
            }
        }
    }
}

struct Rig {
    preset: Preset,
    gpu: Gpu,
    engine: CopyEngine,
    /// Last: dropped after what was made from it, then checked for leaks.
    kfd: common::Checked,
}

impl Rig {
    fn new(preset: Preset) -> Rig {
        let kfd = common::emulated(preset, 1);
        let gpu = kfd.gpu(0).unwrap();
        let engine = gpu.shader_copy_engine().unwrap();
        assert_eq!(engine.path(), CopyPath::Shader);
        Rig {
            preset,
            gpu,
            engine,
            kfd,
        }
    }

    fn dispatches(&self) -> u64 {
        self.kfd.emulator().unwrap().stats().machine_dispatches
    }

    /// A buffer of `kind` holding `bytes`.
    fn buffer(&self, kind: MemoryKind, bytes: &[u8]) -> Buffer {
        let b = self.gpu.alloc(bytes.len() as u64, kind).unwrap();
        b.write(0, bytes).unwrap();
        b
    }

    /// Copies `bytes` from a `src_kind` buffer at `src_off` to a `dst_kind` buffer at `dst_off`
    /// and checks every byte of both buffers.
    fn copy(&self, (src_kind, dst_kind): (MemoryKind, MemoryKind), src: Off, dst: Off, bytes: u64) {
        let len = (bytes + SLACK) as usize;
        let data = pattern(len, bytes);
        let s = self.buffer(src_kind, &data);
        let d = self.buffer(dst_kind, &vec![GUARD; len]);
        let (so, dof) = (src.resolve(&s), dst.resolve(&d));
        let what = format!(
            "{}: {bytes} bytes from {} +{so} ({:#x}) to {} +{dof} ({:#x})",
            self.preset,
            src_kind.name(),
            s.gpu_address() + so,
            dst_kind.name(),
            d.gpu_address() + dof
        );
        let before = self.dispatches();
        self.engine
            .copy(&d, dof, &s, so, bytes, &[])
            .unwrap()
            .wait(T)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(
            self.dispatches(),
            before + 1,
            "{what}: one machine dispatch"
        );
        let mut want = vec![GUARD; len];
        let (so, dof, n) = (so as usize, dof as usize, bytes as usize);
        want[dof..dof + n].copy_from_slice(&data[so..so + n]);
        check_bytes(&read(&d, want.len()), &want, dof, n, &what);
        assert!(read(&s, len) == data, "{what}: source changed");
    }

    /// Fills `bytes` of a `kind` buffer at `off` with `pattern` and checks every byte.
    fn fill(&self, kind: MemoryKind, off: Off, pattern: u32, bytes: u64) {
        let len = (bytes + SLACK) as usize;
        let d = self.buffer(kind, &vec![GUARD; len]);
        let off = off.resolve(&d);
        let what = format!(
            "{}: fill of {bytes} bytes of {} +{off} ({:#x}) with {pattern:#010x}",
            self.preset,
            kind.name(),
            d.gpu_address() + off
        );
        let before = self.dispatches();
        self.engine
            .fill(&d, off, pattern, bytes, &[])
            .unwrap()
            .wait(T)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(
            self.dispatches(),
            before + 1,
            "{what}: one machine dispatch"
        );
        let mut want = vec![GUARD; len];
        let (o, n) = (off as usize, bytes as usize);
        for (i, b) in want[o..o + n].iter_mut().enumerate() {
            *b = pattern.to_le_bytes()[i % 4];
        }
        check_bytes(&read(&d, want.len()), &want, o, n, &what);
    }

    fn finish(&self) {
        let stats = self.kfd.emulator().unwrap().stats();
        assert_eq!(
            stats.unflushed_vram_reads, 0,
            "{}: CPU writes to VRAM flushed before the kernels read them",
            self.preset
        );
    }
}

/// The first `len` bytes of `b`.
fn read(b: &Buffer, len: usize) -> Vec<u8> {
    let mut v = vec![0; len];
    b.read(0, &mut v).unwrap();
    v
}

/// `len` bytes that differ from their neighbours and from the guard, seeded by `seed`.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    (0..len as u64)
        .map(|i| {
            let b = (i.wrapping_mul(7) ^ (i >> 8).wrapping_mul(13) ^ seed) as u8;
            if b == GUARD {
                0x11
            } else {
                b
            }
        })
        .collect()
}

/// Compares a buffer with what it should hold, naming the first wrong byte and whether it lies
/// before, inside or after the range `at..at + n`.
fn check_bytes(got: &[u8], want: &[u8], at: usize, n: usize, what: &str) {
    if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
        let place = if i < at {
            "guard before the range"
        } else if i < at + n {
            "inside the range"
        } else {
            "guard after the range"
        };
        panic!(
            "{what}: byte {i} ({place}) is {:#04x}, want {:#04x}",
            got[i], want[i]
        );
    }
}

/// Every direction between host-visible VRAM and GTT.
const KINDS: [(MemoryKind, MemoryKind); 4] = [(GTT, GTT), (VRAM, GTT), (GTT, VRAM), (VRAM, VRAM)];

fn presets() -> impl Iterator<Item = Rig> {
    [Preset::Gfx90a, Preset::Gfx942, Preset::Gfx1100]
        .into_iter()
        .map(Rig::new)
}

#[test]
fn aligned_copies() {
    // Dword-aligned addresses and sizes: the aligned kernel, one dword per work-item.
    for rig in presets() {
        for kinds in KINDS {
            for (src, dst, bytes) in [
                (Off::At(0), Off::At(0), 4),
                (Off::At(0), Off::At(0), 252), // 63 dwords: one lane idle
                (Off::At(4), Off::At(8), 256), // one full wave
                (Off::At(12), Off::At(0), 260), // 65 dwords: a second wave for one dword
                (Off::BeforePage(8), Off::BeforePage(12), PAGE + 20),
                (Off::At(0), Off::BeforePage(4), 3 * 4 * 64 + 4),
            ] {
                rig.copy(kinds, src, dst, bytes);
            }
        }
        // More dwords than 1024 groups of 64 work-items: each strides to a second one.
        rig.copy((GTT, VRAM), Off::At(4), Off::BeforePage(16), 65_537 * 4);
        rig.finish();
    }
}

#[test]
fn unaligned_copies() {
    // A misaligned address or a size not a multiple of 4: the byte kernel.
    for rig in presets() {
        for kinds in KINDS {
            for (src, dst, bytes) in [
                (Off::At(0), Off::At(0), 1),
                (Off::At(0), Off::At(0), 3),
                (Off::At(1), Off::At(2), 63),
                (Off::At(3), Off::At(1), 65),
                (Off::At(0), Off::At(0), 4095),
                (Off::At(1), Off::At(0), 4096), // aligned size, misaligned source
                (Off::At(0), Off::At(2), 8),    // aligned size, misaligned destination
                (Off::BeforePage(1), Off::BeforePage(3), 4095),
                (Off::BeforePage(2), Off::At(5), 70),
            ] {
                rig.copy(kinds, src, dst, bytes);
            }
        }
        // More bytes than 1024 groups of 64 work-items: the last one strides.
        rig.copy((VRAM, GTT), Off::At(5), Off::BeforePage(2), 65_537);
        rig.finish();
    }
}

#[test]
fn copies_through_device_local_vram() {
    // VRAM the CPU cannot see: in with one copy, out with another.
    for rig in presets() {
        for (bytes, in_off, local_off, out_off) in [(4099u64, 1, 3, 2), (PAGE, 0, 4, 8)] {
            let data = pattern(bytes as usize + 8, 0x5A);
            let src = rig.buffer(GTT, &data);
            let local = rig.gpu.alloc(bytes + 16, MemoryKind::DeviceLocal).unwrap();
            let dst = rig.buffer(VRAM, &vec![GUARD; bytes as usize + 16]);
            let before = rig.dispatches();
            rig.engine
                .copy(&local, local_off, &src, in_off, bytes, &[])
                .unwrap()
                .wait(T)
                .unwrap();
            rig.engine
                .copy(&dst, out_off, &local, local_off, bytes, &[])
                .unwrap()
                .wait(T)
                .unwrap();
            assert_eq!(rig.dispatches(), before + 2, "{}", rig.preset);
            let mut want = vec![GUARD; bytes as usize + 16];
            let (i, o, n) = (in_off as usize, out_off as usize, bytes as usize);
            want[o..o + n].copy_from_slice(&data[i..i + n]);
            let what = format!("{}: {bytes} bytes through device-local VRAM", rig.preset);
            check_bytes(&read(&dst, want.len()), &want, o, n, &what);
        }
        rig.finish();
    }
}

#[test]
fn fills() {
    // Fills take dword offsets and lengths; lengths that are not a multiple of the 64 lanes.
    for rig in presets() {
        for kind in [GTT, VRAM] {
            for (i, (off, bytes)) in [
                (Off::At(0), 4),
                (Off::At(0), 12),
                (Off::At(4), 252),
                (Off::BeforePage(4), 260),
                (Off::At(8), 4092),
                (Off::BeforePage(8), 4 * 1000 + 4),
            ]
            .into_iter()
            .enumerate()
            {
                let pattern = 0xA1B2_C3D4u32.rotate_left(8 * i as u32) ^ i as u32;
                rig.fill(kind, off, pattern, bytes);
            }
        }
        // Past 1024 groups of 64 dwords: work-items stride.
        rig.fill(VRAM, Off::BeforePage(12), 0x0102_0304, 65_539 * 4);
        rig.fill(GTT, Off::At(0), 0, 64 * 4);
        rig.finish();
    }
}

#[test]
fn refused_fills_and_copies_touch_nothing() {
    // A fill of bytes that are not whole dwords, a misaligned fill, an empty copy or fill and
    // ranges past the buffer's end are refused before anything is dispatched.
    for rig in presets() {
        let len = 64usize;
        let d = rig.buffer(GTT, &vec![GUARD; len]);
        let s = rig.buffer(GTT, &pattern(len, 3));
        let before = rig.dispatches();
        for (off, bytes) in [
            (0, 1),
            (0, 3),
            (0, 6),
            (1, 4),
            (2, 8),
            (3, 5),
            (0, 0),
            (60, 8),
        ] {
            let r = rig.engine.fill(&d, off, 0x1234_5678, bytes, &[]);
            assert!(
                matches!(
                    r,
                    Err(kfdrt::Error::ZeroSize { .. }
                        | kfdrt::Error::Misaligned { .. }
                        | kfdrt::Error::OutOfBounds { .. })
                ),
                "{}: fill of {bytes} bytes at {off}: {:?}",
                rig.preset,
                r.map(|_| ())
            );
        }
        for (dst_off, src_off, bytes) in [(0, 0, 0), (1, 0, 64), (0, 61, 4), (63, 0, 2)] {
            let r = rig.engine.copy(&d, dst_off, &s, src_off, bytes, &[]);
            assert!(
                matches!(
                    r,
                    Err(kfdrt::Error::ZeroSize { .. }
                        | kfdrt::Error::Misaligned { .. }
                        | kfdrt::Error::OutOfBounds { .. })
                ),
                "{}: copy of {bytes} bytes from {src_off} to {dst_off}: {:?}",
                rig.preset,
                r.map(|_| ())
            );
        }
        assert_eq!(rig.dispatches(), before, "{}", rig.preset);
        assert!(read(&d, len) == vec![GUARD; len], "{}", rig.preset);
        // The engine still works after refusing.
        rig.fill(GTT, Off::At(4), 0xCAFE_F00D, 8);
        rig.finish();
    }
}
