//! Reading an AMDGPU code object's ELF as a loader needs it: the header checks, the loadable
//! segments and the image they span, the metadata note, `.dynsym` and the dynamic relocations.
//! Every offset, size and index is checked against the file before use (through `object`'s
//! bounds-checked readers), so hostile input yields an error, never a panic.

use super::metadata::CodeObjectVersion;
use super::note::{NOTE_NAME, NT_AMDGPU_METADATA};
use crate::error::CodeObjectError;
use object::elf::{self, FileHeader64};
use object::read::elf::{FileHeader, ProgramHeader, Rela as _, SectionHeader, Sym};
use object::Endianness;

const EM_AMDGPU: u16 = 224;
const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// Images are placed page-aligned, so every section keeps its alignment (at most a page).
pub(crate) const PAGE: u64 = 4096;

/// A `PT_LOAD` program header.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Segment {
    pub(crate) vaddr: u64,
    pub(crate) mem_size: u64,
    pub(crate) file_offset: u64,
    pub(crate) file_size: u64,
    /// `PF_X`, `PF_W`, `PF_R`.
    pub(crate) flags: u32,
}

impl Segment {
    pub(crate) fn end(&self) -> u64 {
        self.vaddr + self.mem_size
    }

    /// Whether `[vaddr, vaddr + len)` lies inside this segment.
    pub(crate) fn holds(&self, vaddr: u64, len: u64) -> bool {
        vaddr >= self.vaddr && vaddr.checked_add(len).is_some_and(|end| end <= self.end())
    }
}

/// An entry of `.dynsym`.
#[derive(Clone, Debug)]
pub(crate) struct DynSymbol {
    pub(crate) name: String,
    pub(crate) value: u64,
    pub(crate) size: u64,
    /// `STT_*`.
    pub(crate) kind: u8,
    pub(crate) defined: bool,
    pub(crate) absolute: bool,
    pub(crate) weak: bool,
}

/// An `Elf64_Rela` of a dynamic relocation section.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rela {
    pub(crate) offset: u64,
    pub(crate) r_type: u32,
    pub(crate) symbol: u32,
    pub(crate) addend: i64,
}

/// What the loader reads from the ELF.
pub(crate) struct ParsedElf<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) version: CodeObjectVersion,
    pub(crate) e_flags: u32,
    /// `PT_LOAD` segments with a non-zero size, by address.
    pub(crate) segments: Vec<Segment>,
    /// Lowest loaded address, rounded down to a page.
    pub(crate) image_start: u64,
    /// End of the highest segment.
    pub(crate) image_end: u64,
    pub(crate) metadata_note: Option<&'a [u8]>,
    /// `.dynsym`, by symbol index.
    pub(crate) symbols: Vec<DynSymbol>,
    pub(crate) relocations: Vec<Rela>,
}

fn malformed(what: &str) -> impl Fn(object::read::Error) -> CodeObjectError + '_ {
    move |e| CodeObjectError::Malformed(format!("{what}: {e}"))
}

impl<'a> ParsedElf<'a> {
    /// Parses `data` (8-byte aligned, as `object` reads ELF structures in place), refusing an
    /// image that spans more than `max_span` bytes.
    pub(crate) fn parse(data: &'a [u8], max_span: u64) -> Result<ParsedElf<'a>, CodeObjectError> {
        let header = FileHeader64::<Endianness>::parse(data).map_err(malformed("ELF header"))?;
        if header.endian().map_err(malformed("ELF header"))? != Endianness::Little {
            return Err(CodeObjectError::NotAmdgpu("big-endian ELF".into()));
        }
        let endian = Endianness::Little;
        let machine = header.e_machine(endian);
        if machine != EM_AMDGPU {
            return Err(CodeObjectError::NotAmdgpu(format!(
                "e_machine {machine} is not EM_AMDGPU ({EM_AMDGPU})"
            )));
        }
        let ident = header.e_ident();
        if ident.os_abi != ELFOSABI_AMDGPU_HSA {
            return Err(CodeObjectError::NotAmdgpu(format!(
                "OS ABI {} is not ELFOSABI_AMDGPU_HSA ({ELFOSABI_AMDGPU_HSA})",
                ident.os_abi
            )));
        }
        let version = abi_version(ident.abi_version)?;
        let e_type = header.e_type(endian);
        if e_type != elf::ET_DYN {
            return Err(CodeObjectError::NotAmdgpu(format!(
                "e_type {e_type} is not a shared object (ET_DYN); link it with ld.lld -shared"
            )));
        }
        let (segments, notes) = read_segments(header, data)?;
        let image_start = segments.first().map_or(0, |s| s.vaddr) & !(PAGE - 1);
        let image_end = segments
            .iter()
            .map(Segment::end)
            .max()
            .ok_or_else(|| CodeObjectError::Malformed("no loadable segment".into()))?;
        let span = image_end - image_start;
        if span > max_span {
            return Err(CodeObjectError::ImageTooLarge {
                span,
                limit: max_span,
            });
        }
        let sections = header
            .sections(endian, data)
            .map_err(malformed("section headers"))?;
        let metadata_note = match notes {
            Some(n) => Some(n),
            None => find_note(
                sections
                    .iter()
                    .filter_map(|s| s.notes(endian, data).transpose()),
            )?,
        };
        let dynsym = sections
            .symbols(endian, data, elf::SHT_DYNSYM)
            .map_err(malformed(".dynsym"))?;
        let mut symbols = Vec::with_capacity(dynsym.len());
        for sym in dynsym.iter() {
            let name = dynsym
                .symbol_name(endian, sym)
                .map_err(malformed(".dynsym name"))?;
            let shndx = sym.st_shndx(endian);
            symbols.push(DynSymbol {
                name: String::from_utf8_lossy(name).into_owned(),
                value: sym.st_value(endian),
                size: sym.st_size(endian),
                kind: sym.st_type(),
                defined: shndx != elf::SHN_UNDEF,
                absolute: shndx == elf::SHN_ABS,
                weak: sym.st_bind() == elf::STB_WEAK,
            });
        }
        let mut relocations = Vec::new();
        for section in sections.iter() {
            let kind = section.sh_type(endian);
            let linked = section.sh_link(endian) as usize;
            if !dynsym.is_empty() && linked == dynsym.section().0 {
                if kind == elf::SHT_REL {
                    return Err(CodeObjectError::Malformed(
                        "SHT_REL dynamic relocations (AMDGPU uses SHT_RELA)".into(),
                    ));
                }
                if let Some((relas, _)) = section
                    .rela(endian, data)
                    .map_err(malformed("relocation section"))?
                {
                    relocations.extend(relas.iter().map(|r| Rela {
                        offset: r.r_offset(endian),
                        r_type: r.r_type(endian, false),
                        symbol: r.r_sym(endian, false),
                        addend: r.r_addend(endian),
                    }));
                }
            }
        }
        Ok(ParsedElf {
            data,
            version,
            e_flags: header.e_flags(endian),
            segments,
            image_start,
            image_end,
            metadata_note,
            symbols,
            relocations,
        })
    }

    /// Bytes from the lowest to the highest loaded address.
    pub(crate) fn span(&self) -> u64 {
        self.image_end - self.image_start
    }

    /// The image as it is placed in memory: every segment's file bytes at its address, the rest
    /// zero.
    pub(crate) fn image(&self) -> Result<Vec<u8>, CodeObjectError> {
        let span = usize::try_from(self.span()).map_err(|_| {
            CodeObjectError::Malformed("image larger than the address space".into())
        })?;
        let mut image = vec![0u8; span];
        for s in &self.segments {
            // Both ranges were checked when the segment was read.
            let from = self
                .data
                .get(s.file_offset as usize..(s.file_offset + s.file_size) as usize);
            let at = (s.vaddr - self.image_start) as usize;
            let to = image.get_mut(at..at + s.file_size as usize);
            match (from, to) {
                (Some(from), Some(to)) => to.copy_from_slice(from),
                _ => {
                    return Err(CodeObjectError::Malformed(
                        "segment outside the file".into(),
                    ))
                }
            }
        }
        Ok(image)
    }

    /// Reads `out.len()` bytes at virtual address `vaddr` as they will be loaded (zero past a
    /// segment's file bytes); `false` when no segment holds them all.
    pub(crate) fn read_at(&self, vaddr: u64, out: &mut [u8]) -> bool {
        let Some(s) = self.segment_holding(vaddr, out.len() as u64) else {
            return false;
        };
        out.fill(0);
        let start = vaddr - s.vaddr;
        for (i, b) in out.iter_mut().enumerate() {
            let at = start + i as u64;
            if at < s.file_size {
                match self.data.get((s.file_offset + at) as usize) {
                    Some(v) => *b = *v,
                    None => return false,
                }
            }
        }
        true
    }

    /// The segment holding `[vaddr, vaddr + len)`, if one does.
    pub(crate) fn segment_holding(&self, vaddr: u64, len: u64) -> Option<&Segment> {
        self.segments.iter().find(|s| s.holds(vaddr, len))
    }
}

/// `e_ident[EI_ABIVERSION]` of the HSA OS ABI: the code-object version minus 2.
fn abi_version(v: u8) -> Result<CodeObjectVersion, CodeObjectError> {
    let number = u32::from(v) + 2;
    CodeObjectVersion::from_number(number).ok_or(CodeObjectError::UnsupportedVersion {
        version: number,
        hint: if number < 3 {
            ": rebuild it with a current compiler (-mcode-object-version=4 or 5)"
        } else {
            ""
        },
    })
}

type Notes<'a> = Option<&'a [u8]>;

/// The `PT_LOAD` segments, sorted and checked (inside the file, not overlapping), and the
/// metadata note of the `PT_NOTE` segments.
fn read_segments<'a>(
    header: &FileHeader64<Endianness>,
    data: &'a [u8],
) -> Result<(Vec<Segment>, Notes<'a>), CodeObjectError> {
    let endian = Endianness::Little;
    let phdrs = header
        .program_headers(endian, data)
        .map_err(malformed("program headers"))?;
    let mut segments = Vec::new();
    for ph in phdrs {
        if ph.p_type(endian) != elf::PT_LOAD || ph.p_memsz(endian) == 0 {
            continue;
        }
        let s = Segment {
            vaddr: ph.p_vaddr(endian),
            mem_size: ph.p_memsz(endian),
            file_offset: ph.p_offset(endian),
            file_size: ph.p_filesz(endian),
            flags: ph.p_flags(endian),
        };
        if s.file_size > s.mem_size {
            return Err(CodeObjectError::Malformed(format!(
                "segment at {:#x}: {} bytes in the file but {} in memory",
                s.vaddr, s.file_size, s.mem_size
            )));
        }
        if s.vaddr.checked_add(s.mem_size).is_none() {
            return Err(CodeObjectError::Malformed(format!(
                "segment at {:#x} of {} bytes wraps the address space",
                s.vaddr, s.mem_size
            )));
        }
        ph.data(endian, data).map_err(|()| {
            CodeObjectError::Malformed(format!(
                "segment at {:#x}: file bytes {}..+{} are outside the file ({} bytes)",
                s.vaddr,
                s.file_offset,
                s.file_size,
                data.len()
            ))
        })?;
        segments.push(s);
    }
    segments.sort_by_key(|s| s.vaddr);
    if let Some(w) = segments.windows(2).find(|w| w[1].vaddr < w[0].end()) {
        return Err(CodeObjectError::OverlappingSegments {
            first: (w[0].vaddr, w[0].end()),
            second: (w[1].vaddr, w[1].end()),
        });
    }
    let notes = find_note(
        phdrs
            .iter()
            .filter_map(|ph| ph.notes(endian, data).transpose()),
    )?;
    Ok((segments, notes))
}

/// The descriptor of the first `AMDGPU` note of type `NT_AMDGPU_METADATA`.
fn find_note<'a>(
    note_sets: impl Iterator<
        Item = object::read::Result<object::read::elf::NoteIterator<'a, FileHeader64<Endianness>>>,
    >,
) -> Result<Notes<'a>, CodeObjectError> {
    for notes in note_sets {
        let mut notes = notes.map_err(malformed("note"))?;
        while let Some(note) = notes.next().map_err(malformed("note"))? {
            if note.name() == NOTE_NAME && note.n_type(Endianness::Little) == NT_AMDGPU_METADATA {
                return Ok(Some(note.desc()));
            }
        }
    }
    Ok(None)
}
