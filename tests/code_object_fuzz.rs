//! Hostile code objects: the fixtures with bytes flipped, lengths cut and header fields,
//! symbols, relocations and the metadata note overwritten, loaded on the emulated device. Every
//! case must end in `Ok` or a typed error — no panic, no absurd allocation — and what loads must
//! hand out kernels and build their arguments without panicking either.

use crate::co_util;

use co_util::{fixture, Elf};
use kfdrt::code_object::{self, ArgKind, LoadOptions};
use kfdrt::emu::Preset;
use kfdrt::kernel_args::{KernelArgs, LaunchContext, LaunchGeometry};
use kfdrt::{Error, Gpu, Kfd};
use proptest::prelude::*;
use proptest::sample::Index;
use std::ops::Range;
use std::sync::OnceLock;

/// A fixture and the byte ranges worth aiming at.
struct Target {
    name: &'static str,
    bytes: Vec<u8>,
    regions: Vec<Range<usize>>,
}

fn targets() -> &'static [Target] {
    static TARGETS: OnceLock<Vec<Target>> = OnceLock::new();
    TARGETS.get_or_init(|| {
        let elf = |name: &'static str| {
            let e = Elf(fixture(name));
            // The ELF header first.
            let mut regions: Vec<Range<usize>> = Vec::new();
            regions.push(0..64);
            let phoff = e.u64_at(32) as usize;
            regions.push(phoff..phoff + 56 * e.phdrs().len());
            let shoff = e.u64_at(40) as usize;
            regions.push(shoff..e.0.len().min(shoff + 64 * e.shdrs().len()));
            for s in [".dynsym", ".dynstr", ".rela.dyn", ".dynamic"] {
                if let Some(s) = e.shdrs().into_iter().find(|x| x.name == s) {
                    regions.push(s.sh_offset as usize..(s.sh_offset + s.sh_size) as usize);
                }
            }
            regions.push(e.metadata_desc());
            Target {
                name,
                bytes: e.0,
                regions,
            }
        };
        let bundle = |name: &'static str| Target {
            name,
            // The bundle's header and entry table.
            regions: std::iter::once(0..200).collect(),
            bytes: fixture(name),
        };
        vec![
            elf("kernels-gfx90a.elf"),
            elf("relocs-gfx90a.elf"),
            elf("hidden_v5-gfx90a.elf"),
            elf("hidden_v3-gfx90a.elf"),
            elf("args-gfx90a.elf"),
            bundle("kernels-gfx90a.co"),
            bundle("hidden_v5.bundle"),
        ]
    })
}

/// One emulated GPU for every case (creating a device per case would dominate the run). It lives
/// as long as the process, so it is the one device of the suite not checked for leaks.
fn gpu() -> &'static Gpu {
    static GPU: OnceLock<(Kfd, Gpu)> = OnceLock::new();
    &GPU.get_or_init(|| {
        let kfd = kfdrt::Kfd::builder()
            .emulated(kfdrt::emu::EmuConfig::new(Preset::Gfx90a, 1))
            .open()
            .unwrap();
        let gpu = kfd.gpu(0).unwrap();
        (kfd, gpu)
    })
    .1
}

#[derive(Clone, Debug)]
enum Mutation {
    /// XOR a byte anywhere.
    Flip(Index, u8),
    /// XOR a byte inside one of the target's structural regions.
    FlipIn(Index, Index, u8),
    /// Overwrite 1, 2, 4 or 8 bytes inside a region with a chosen value.
    Field(Index, Index, u8, u64),
    /// Cut the file.
    Truncate(Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let interesting = prop_oneof![
        Just(0u64),
        Just(1),
        Just(0xFF),
        Just(0x1000),
        Just(u64::MAX),
        Just(u64::MAX / 2),
        Just(1 << 40),
        any::<u64>(),
    ];
    prop_oneof![
        (any::<Index>(), 1u8..).prop_map(|(i, x)| Mutation::Flip(i, x)),
        (any::<Index>(), any::<Index>(), 1u8..).prop_map(|(r, i, x)| Mutation::FlipIn(r, i, x)),
        (
            any::<Index>(),
            any::<Index>(),
            prop::sample::select(vec![1u8, 2, 4, 8]),
            interesting
        )
            .prop_map(|(r, i, w, v)| Mutation::Field(r, i, w, v)),
        any::<Index>().prop_map(Mutation::Truncate),
    ]
}

fn apply(t: &Target, bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    let pick = |r: &Index, i: &Index, len: usize| -> Option<usize> {
        let region = &t.regions[r.index(t.regions.len())];
        let region = region.start.min(len)..region.end.min(len);
        (!region.is_empty()).then(|| region.start + i.index(region.len()))
    };
    match m {
        Mutation::Flip(i, x) => {
            let at = i.index(bytes.len());
            bytes[at] ^= x;
        }
        Mutation::FlipIn(r, i, x) => {
            if let Some(at) = pick(r, i, bytes.len()) {
                bytes[at] ^= x;
            }
        }
        Mutation::Field(r, i, width, v) => {
            if let Some(at) = pick(r, i, bytes.len()) {
                let n = usize::from(*width).min(bytes.len() - at);
                bytes[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]);
            }
        }
        Mutation::Truncate(i) => {
            let len = i.index(bytes.len());
            bytes.truncate(len);
        }
    }
}

/// Uses what loaded as a caller would: every kernel, its metadata, an argument block.
fn exercise(co: &kfdrt::CodeObject) {
    let names: Vec<String> = co.kernel_names().map(str::to_owned).collect();
    for name in names {
        let kernel = co.kernel(&name).expect("a listed kernel");
        let _ = kernel.entry_address();
        let Ok(mut args) = KernelArgs::new(&kernel) else {
            continue;
        };
        let explicit: Vec<_> = args.metadata().explicit_args().cloned().collect();
        for (i, a) in explicit.iter().enumerate() {
            let r = match a.kind {
                ArgKind::ByValue | ArgKind::DynamicSharedPointer => args
                    .set_bytes(i, &vec![0u8; a.size.min(64) as usize])
                    .map(drop),
                // SAFETY: the arguments are encoded, never dispatched.
                _ => unsafe { args.set_address(i, 0) }.map(drop),
            };
            let _ = r;
        }
        let _ = args.encode(
            &LaunchGeometry::linear(256, 64),
            &LaunchContext::for_gpu(gpu()),
        );
    }
    for s in co.symbols() {
        assert_eq!(
            co.symbol_address(&s.name).ok(),
            Some(co.symbol(&s.name).unwrap().address)
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 4096,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn mutated_code_objects_load_or_fail_with_a_typed_error(
        which in any::<Index>(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let t = &targets()[which.index(targets().len())];
        let mut bytes = t.bytes.clone();
        for m in &mutations {
            apply(t, &mut bytes, m);
        }
        // Reading without a GPU must not panic either (bundles are refused by inspect).
        let _ = code_object::inspect(&bytes);
        let options = LoadOptions::default().with_max_image_bytes(64 << 20);
        match gpu().load_code_object_with(&bytes, &options) {
            Ok(co) => exercise(&co),
            Err(Error::CodeObject(_)) | Err(Error::OutOfMemory { .. }) => {}
            Err(e) => prop_assert!(false, "{}: unexpected error kind: {e}", t.name),
        }
    }
}

#[test]
fn every_prefix_of_a_small_fixture_is_refused_cleanly() {
    let bytes = fixture("relocs-gfx90a.elf");
    for len in (0..bytes.len()).step_by(7) {
        let r = gpu().load_code_object(&bytes[..len]);
        assert!(
            matches!(r, Err(Error::CodeObject(_))),
            "prefix of {len} bytes: {r:?}"
        );
    }
    gpu().load_code_object(&bytes).unwrap();
}
