//! Test helpers for code objects: the checked-in fixtures, and an ELF64 patcher that finds the
//! bytes of one program header, symbol or relocation so a test can corrupt exactly that.
#![allow(dead_code)]

use std::path::PathBuf;

/// The fixtures directory.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/code_objects")
}

/// The bytes of fixture `name`.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = fixtures_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// A program header's position and fields.
#[derive(Clone, Copy, Debug)]
pub struct Phdr {
    /// File offset of the header itself.
    pub at: usize,
    pub p_type: u32,
    pub p_flags: u32,
    pub p_offset: u64,
    pub p_vaddr: u64,
    pub p_filesz: u64,
    pub p_memsz: u64,
}

/// A section header's position and fields.
#[derive(Clone, Debug)]
pub struct Shdr {
    pub name: String,
    pub sh_type: u32,
    pub sh_offset: u64,
    pub sh_size: u64,
}

/// An ELF64 file being patched.
pub struct Elf(pub Vec<u8>);

pub const PT_LOAD: u32 = 1;
pub const PT_NOTE: u32 = 4;

impl Elf {
    pub fn phdrs(&self) -> Vec<Phdr> {
        let b = &self.0;
        let (off, size, n) = (
            u64_at(b, 32) as usize,
            u16_at(b, 54) as usize,
            u16_at(b, 56),
        );
        (0..n as usize)
            .map(|i| {
                let at = off + i * size;
                Phdr {
                    at,
                    p_type: u32_at(b, at),
                    p_flags: u32_at(b, at + 4),
                    p_offset: u64_at(b, at + 8),
                    p_vaddr: u64_at(b, at + 16),
                    p_filesz: u64_at(b, at + 32),
                    p_memsz: u64_at(b, at + 40),
                }
            })
            .collect()
    }

    pub fn loads(&self) -> Vec<Phdr> {
        self.phdrs()
            .into_iter()
            .filter(|p| p.p_type == PT_LOAD)
            .collect()
    }

    pub fn shdrs(&self) -> Vec<Shdr> {
        let b = &self.0;
        let (off, size, n) = (
            u64_at(b, 40) as usize,
            u16_at(b, 58) as usize,
            u16_at(b, 60),
        );
        let strndx = u16_at(b, 62) as usize;
        let raw: Vec<(u32, u32, u64, u64)> = (0..n as usize)
            .map(|i| {
                let at = off + i * size;
                (
                    u32_at(b, at),
                    u32_at(b, at + 4),
                    u64_at(b, at + 24),
                    u64_at(b, at + 32),
                )
            })
            .collect();
        let strtab = raw[strndx].2 as usize;
        raw.iter()
            .map(|&(name, sh_type, sh_offset, sh_size)| {
                let start = strtab + name as usize;
                let end = start + b[start..].iter().position(|&c| c == 0).unwrap();
                Shdr {
                    name: String::from_utf8_lossy(&b[start..end]).into_owned(),
                    sh_type,
                    sh_offset,
                    sh_size,
                }
            })
            .collect()
    }

    pub fn section(&self, name: &str) -> Shdr {
        self.shdrs()
            .into_iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no section {name}"))
    }

    /// File offset of the `.dynsym` entry named `name`.
    pub fn dynsym(&self, name: &str) -> usize {
        let (syms, strs) = (self.section(".dynsym"), self.section(".dynstr"));
        (0..syms.sh_size as usize / 24)
            .map(|i| syms.sh_offset as usize + i * 24)
            .find(|&at| {
                let start = strs.sh_offset as usize + u32_at(&self.0, at) as usize;
                self.0[start..].starts_with(name.as_bytes()) && self.0[start + name.len()] == 0
            })
            .unwrap_or_else(|| panic!("no .dynsym entry {name}"))
    }

    /// File offsets of the `.rela.dyn` entries (24 bytes each: offset, info, addend).
    pub fn relas(&self) -> Vec<usize> {
        let s = self.section(".rela.dyn");
        (0..s.sh_size as usize / 24)
            .map(|i| s.sh_offset as usize + i * 24)
            .collect()
    }

    pub fn u64_at(&self, at: usize) -> u64 {
        u64_at(&self.0, at)
    }

    pub fn u32_at(&self, at: usize) -> u32 {
        u32_at(&self.0, at)
    }

    pub fn put_u64(&mut self, at: usize, v: u64) {
        self.0[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }

    pub fn put_u32(&mut self, at: usize, v: u32) {
        self.0[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }

    pub fn put_u16(&mut self, at: usize, v: u16) {
        self.0[at..at + 2].copy_from_slice(&v.to_le_bytes());
    }

    /// File range of the AMDGPU metadata note's descriptor (the msgpack document).
    pub fn metadata_desc(&self) -> std::ops::Range<usize> {
        let note = self
            .phdrs()
            .into_iter()
            .find(|p| p.p_type == PT_NOTE)
            .expect("a PT_NOTE");
        let mut at = note.p_offset as usize;
        let end = at + note.p_filesz as usize;
        while at < end {
            let (namesz, descsz, ty) = (
                u32_at(&self.0, at) as usize,
                u32_at(&self.0, at + 4) as usize,
                u32_at(&self.0, at + 8),
            );
            let name_at = at + 12;
            let desc_at = name_at + namesz.div_ceil(4) * 4;
            if &self.0[name_at..name_at + 6] == b"AMDGPU" && ty == 32 {
                return desc_at..desc_at + descsz;
            }
            at = desc_at + descsz.div_ceil(4) * 4;
        }
        panic!("no AMDGPU metadata note")
    }
}
