//! Minimal AMDGPU code-object reading for the tests (via the `object` crate): loadable
//! segments, symbols, the `.text` section and the target.

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol};
use std::collections::HashMap;
use std::path::PathBuf;

/// The directory of the checked-in test code objects.
pub fn kernels_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/kernels")
}

/// kfdrt's blit code objects.
pub fn blit_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../blit")
}

/// What the tests need of one code object.
pub struct CodeObject {
    /// `(vaddr, bytes, memsz)` of every PT_LOAD segment.
    pub segments: Vec<(u64, Vec<u8>, u64)>,
    /// Symbol name to value.
    pub symbols: HashMap<String, u64>,
    /// `.text` address and bytes.
    pub text: (u64, Vec<u8>),
    /// ELF `e_flags`.
    pub e_flags: u32,
}

impl CodeObject {
    /// Reads and parses `path`.
    pub fn load(path: &std::path::Path) -> CodeObject {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file = object::File::parse(&*data).expect("an ELF");
        let e_flags = match file.flags() {
            object::FileFlags::Elf { e_flags, .. } => e_flags,
            _ => 0,
        };
        let segments = file
            .segments()
            .map(|s| {
                (
                    s.address(),
                    s.data().expect("segment data").to_vec(),
                    s.size(),
                )
            })
            .collect();
        let symbols = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter_map(|s| Some((s.name().ok()?.to_string(), s.address())))
            .collect();
        let text = file
            .section_by_name(".text")
            .map(|s| (s.address(), s.data().expect("text").to_vec()))
            .expect(".text");
        CodeObject {
            segments,
            symbols,
            text,
            e_flags,
        }
    }

    /// The address of a symbol.
    pub fn symbol(&self, name: &str) -> u64 {
        *self
            .symbols
            .get(name)
            .unwrap_or_else(|| panic!("no symbol {name}"))
    }
}
