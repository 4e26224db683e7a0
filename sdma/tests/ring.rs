//! The ring writer against a model engine that reads the ring the way the hardware does:
//! packet by packet from its read pointer up to the committed write pointer, decoding each from
//! the ring memory without wrapping (a packet that straddled the end would fail to decode).

use sdma::ring::{RingError, SdmaRing};
use sdma::{SdmaPacket, SdmaVersion};
use std::sync::atomic::{AtomicU64, Ordering};

const V: SdmaVersion = SdmaVersion::V6;
const GFX: u32 = 110000;

/// Ring memory, pointers and doorbell, and the model engine's view of them.
struct Rig {
    /// Owns the memory `base` points into; read and written only through `base`.
    _mem: Vec<u32>,
    base: *mut u32,
    size: u64,
    rptr: AtomicU64,
    wptr: AtomicU64,
    doorbell: AtomicU64,
    /// Packets the engine has read, padding NOPs excluded.
    seen: Vec<SdmaPacket>,
    /// Padding dwords the engine has read.
    padding: u64,
}

impl Rig {
    fn new(size: u32) -> Box<Rig> {
        // Not zeros, so that padding is visibly written.
        let mut mem = vec![0xDEAD_BEEF_u32; size as usize / 4];
        let base = mem.as_mut_ptr();
        Box::new(Rig {
            _mem: mem,
            base,
            size: u64::from(size),
            rptr: AtomicU64::new(0),
            wptr: AtomicU64::new(0),
            doorbell: AtomicU64::new(0),
            seen: Vec::new(),
            padding: 0,
        })
    }

    fn ring(&self) -> SdmaRing {
        // SAFETY: the rig is boxed, so memory and words stay put, and it outlives every ring the
        // tests make; only the ring writes the memory and the write pointer and doorbell.
        unsafe {
            SdmaRing::new(
                self.base.cast(),
                self.size as u32,
                &self.rptr,
                &self.wptr,
                &self.doorbell,
            )
        }
        .unwrap()
    }

    fn dword(&self, i: u64) -> u32 {
        // SAFETY: `i < size / 4`, inside the vector the pointer came from; volatile like the
        // engine's reads. The vector itself is not touched while rings exist.
        unsafe { self.base.add(i as usize).read_volatile() }
    }

    fn snapshot(&self) -> Vec<u32> {
        (0..self.size / 4).map(|i| self.dword(i)).collect()
    }

    /// Reads up to `max` packets (padding dwords not counted) up to the committed write
    /// pointer, then writes the read pointer back.
    fn run(&mut self, max: usize) {
        let wptr = self.wptr.load(Ordering::Acquire);
        assert_eq!(self.doorbell.load(Ordering::Acquire), wptr);
        let mut r = self.rptr.load(Ordering::Acquire);
        let mut packets = 0;
        while r < wptr && packets < max {
            let pos = r % self.size;
            // The engine never reads across the end of the ring.
            let avail = (wptr - r).min(self.size - pos) / 4;
            let dwords: Vec<u32> = (0..avail).map(|i| self.dword(pos / 4 + i)).collect();
            let (p, n) = SdmaPacket::decode(V, &dwords)
                .unwrap_or_else(|e| panic!("at ring offset {pos}: {e}"));
            if p == (SdmaPacket::Nop { extra_dwords: 0 }) {
                // Padding runs from here to the end of the ring, all zeros.
                assert!(
                    (pos / 4..self.size / 4).all(|i| self.dword(i) == 0),
                    "padding at {pos} is zeros up to the end"
                );
                self.padding += 1;
            } else {
                self.seen.push(p);
                packets += 1;
            }
            r += n as u64 * 4;
        }
        self.rptr.store(r, Ordering::Release);
    }
}

fn encode(p: &SdmaPacket) -> Vec<u32> {
    let mut out = Vec::new();
    p.encode(V, GFX, &mut out).unwrap();
    out
}

/// Packets of 2, 3, 5 ... 13 and 7 dwords: sizes that do not divide the ring.
fn packet(i: u32) -> SdmaPacket {
    match i % 4 {
        0 => SdmaPacket::Write {
            dst: u64::from(i) * 64,
            data: (0..1 + i % 9).map(|k| i << 8 | k).collect(),
        },
        1 => SdmaPacket::CopyLinear {
            src: u64::from(i),
            dst: u64::from(i) << 20,
            bytes: u64::from(i) + 1,
        },
        2 => SdmaPacket::Trap { int_context: i },
        _ => SdmaPacket::Timestamp {
            addr: u64::from(i) * 8,
        },
    }
}

#[test]
fn wraps_with_several_sizes_behind_a_lagging_reader() {
    let mut rig = Rig::new(256);
    let mut ring = rig.ring();
    let written: Vec<SdmaPacket> = (0..400).map(packet).collect();
    let mut fulls = 0;
    for p in &written {
        let dwords = encode(p);
        loop {
            let (before, wptr) = (rig.snapshot(), ring.wptr());
            match ring.try_write(&dwords) {
                Ok(w) => {
                    assert_eq!(w, ring.wptr());
                    break;
                }
                Err(RingError::Full) => {
                    // Nothing was written: these packets are short enough that padding plus
                    // packet always fit an empty ring.
                    assert_eq!(rig.snapshot(), before);
                    assert_eq!(ring.wptr(), wptr);
                    fulls += 1;
                    ring.commit();
                    rig.run(1); // the engine lags: one packet per round
                }
                Err(e) => panic!("{e}"),
            }
            // Never more in flight than the ring minus one dword.
            assert!(ring.wptr() - rig.rptr.load(Ordering::Relaxed) <= 252);
        }
    }
    ring.commit();
    rig.run(usize::MAX);
    assert_eq!(rig.seen, written, "every packet read once, in order, whole");
    assert!(fulls > 100, "the reader lagged ({fulls} Full)");
    assert!(rig.padding > 0, "the tail was padded");
    assert!(
        ring.wptr() > 20 * 256,
        "wrapped many times ({} bytes)",
        ring.wptr()
    );
    assert!(ring.is_idle());
}

#[test]
fn full_when_the_reader_does_not_read() {
    let mut rig = Rig::new(256);
    let mut ring = rig.ring();
    let trap = encode(&SdmaPacket::Trap { int_context: 1 }); // 8 bytes
                                                             // 252 usable bytes hold 31 traps (248 bytes); the 32nd does not fit.
    for i in 1..=31u64 {
        assert_eq!(ring.try_write(&trap), Ok(i * 8));
    }
    assert_eq!(ring.space(), Ok(4));
    let before = rig.snapshot();
    assert_eq!(ring.try_write(&trap), Err(RingError::Full));
    assert_eq!(rig.snapshot(), before);
    assert_eq!(ring.wptr(), 248);
    // Once the engine has read one, the next fits exactly at the end: no padding.
    ring.commit();
    rig.run(1);
    assert_eq!(ring.try_write(&trap), Ok(256));
    assert_eq!(&rig.snapshot()[62..], &trap[..]);
    ring.commit();
    rig.run(usize::MAX);
    assert_eq!(rig.seen.len(), 32);
    assert_eq!(rig.padding, 0);
}

#[test]
fn too_large_and_the_largest() {
    let mut rig = Rig::new(256);
    let mut ring = rig.ring();
    assert_eq!(ring.try_write(&[0; 64]), Err(RingError::TooLarge(64)));
    // 63 dwords = 252 bytes, the ring minus its free dword: a NOP with 62 extra dwords.
    let nop = encode(&SdmaPacket::Nop { extra_dwords: 62 });
    assert_eq!(ring.try_write(&nop), Ok(252));
    assert_eq!(ring.try_write(&[0]), Err(RingError::Full));
    ring.commit();
    rig.run(usize::MAX);
    assert_eq!(rig.seen, [SdmaPacket::Nop { extra_dwords: 62 }]);
}

#[test]
fn a_packet_that_only_fits_at_the_start_is_padded_ahead() {
    let mut rig = Rig::new(256);
    let mut ring = rig.ring();
    let big = encode(&SdmaPacket::Write {
        dst: 0,
        data: vec![3; 36],
    }); // 40 dwords = 160 bytes
    assert_eq!(ring.try_write(&big), Ok(160));
    ring.commit();
    rig.run(usize::MAX);
    // At 160, the packet needs 96 bytes of padding and 160 more: 256 > 252, so it can only be
    // written once the engine has read the padding. The padding goes in now.
    assert_eq!(ring.try_write(&big), Err(RingError::Full));
    assert_eq!(ring.wptr(), 256);
    assert!(rig.snapshot()[40..].iter().all(|&d| d == 0));
    ring.commit();
    rig.run(usize::MAX);
    assert_eq!(rig.padding, 24);
    assert_eq!(ring.try_write(&big), Ok(416));
    assert_eq!(&rig.snapshot()[..40], &big[..]);
    ring.commit();
    rig.run(usize::MAX);
    assert_eq!(rig.seen.len(), 2);
}

#[test]
fn an_impossible_read_pointer_writes_nothing() {
    let rig = Rig::new(256);
    let mut ring = rig.ring();
    // Ahead of the write pointer.
    rig.rptr.store(8, Ordering::Release);
    assert_eq!(
        ring.try_write(&[0x6, 1]),
        Err(RingError::BadReadPointer { rptr: 8, wptr: 0 })
    );
    assert_eq!(ring.wptr(), 0);
    rig.rptr.store(0, Ordering::Release);
    // More than a ring behind: 252 bytes, read, then a trap that pads 4 bytes -> wptr 264.
    ring.try_write(&[0; 63]).unwrap();
    rig.rptr.store(252, Ordering::Release);
    assert_eq!(ring.try_write(&[0x6, 1]), Ok(264));
    rig.rptr.store(0, Ordering::Release);
    assert_eq!(
        ring.try_write(&[0x6, 1]),
        Err(RingError::BadReadPointer { rptr: 0, wptr: 264 })
    );
    assert_eq!(ring.wptr(), 264);
    assert!(ring.space().is_err());
}

#[test]
fn commit_publishes_the_pointer_then_the_doorbell() {
    let rig = Rig::new(1024);
    let mut ring = rig.ring();
    assert_eq!(ring.try_write(&[]), Ok(0), "an empty write is a no-op");
    ring.try_write(&encode(&packet(1))).unwrap();
    ring.try_write(&encode(&packet(2))).unwrap();
    assert_eq!(rig.wptr.load(Ordering::Acquire), 0, "nothing before commit");
    assert_eq!(rig.doorbell.load(Ordering::Acquire), 0);
    ring.commit();
    assert_eq!(ring.wptr(), (7 + 2) * 4);
    assert_eq!(rig.wptr.load(Ordering::Acquire), 36);
    assert_eq!(rig.doorbell.load(Ordering::Acquire), 36);
    assert!(!ring.is_idle());
}

#[test]
fn geometry_is_checked() {
    let mut mem = vec![0u64; 128];
    let words = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];
    let base = mem.as_mut_ptr().cast::<u8>();
    let make = |base: *mut u8, size: u32, rptr: *const AtomicU64| {
        // SAFETY: every call either fails the geometry check or gets valid memory (1 KiB) and
        // words that outlive the ring, which is dropped at once.
        unsafe { SdmaRing::new(base, size, rptr, &words[1], &words[2]) }.map(|_| ())
    };
    assert_eq!(make(base, 1024, &words[0]), Ok(()));
    assert_eq!(make(base, 256, &words[0]), Ok(()));
    for size in [0, 100, 128, 384] {
        assert_eq!(
            make(base, size, &words[0]),
            Err(RingError::BadGeometry),
            "{size}"
        );
    }
    assert_eq!(
        make(std::ptr::null_mut(), 256, &words[0]),
        Err(RingError::BadGeometry)
    );
    // SAFETY: an offset of 2 inside the allocation, never dereferenced (rejected as misaligned).
    let odd = unsafe { base.add(2) };
    assert_eq!(make(odd, 256, &words[0]), Err(RingError::BadGeometry));
    let misaligned_rptr = base.wrapping_add(4).cast::<AtomicU64>();
    assert_eq!(
        make(base, 256, misaligned_rptr),
        Err(RingError::BadGeometry)
    );
}
