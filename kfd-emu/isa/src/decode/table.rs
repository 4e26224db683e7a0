//! Opcode tables: for each target, which operation each (encoding, opcode) pair is.
//!
//! The entries themselves are generated (`tables.rs`, from `tools/gen_tables.py`): one table for
//! every target, each entry carrying the set of targets it is for (gfx90a and gfx940 share most
//! of theirs); this module defines their shape and looks them up.

use super::attrs::{Class, Source, Traits};
use super::op::Op;
use super::tables;
use crate::target::Target;

/// An instruction encoding (the format of the words, before the opcode picks the operation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Format {
    /// Scalar ALU, two sources.
    Sop2,
    /// Scalar ALU with a 16-bit immediate.
    Sopk,
    /// Scalar ALU, one source.
    Sop1,
    /// Scalar compare.
    Sopc,
    /// Scalar program control (branches, waits, end).
    Sopp,
    /// Scalar memory.
    Smem,
    /// Vector ALU, two sources.
    Vop2,
    /// Vector ALU, one source.
    Vop1,
    /// Vector compare.
    Vopc,
    /// Vector ALU, three sources and modifiers (VOP3a/VOP3b).
    Vop3,
    /// Vector ALU on packed operands (and MFMA).
    Vop3p,
    /// LDS/GDS.
    Ds,
    /// Flat memory (address decides global, LDS or scratch).
    Flat,
    /// Scratch (private) memory.
    Scratch,
    /// Global memory.
    Global,
    /// Untyped buffer memory.
    Mubuf,
    /// Typed buffer memory.
    Mtbuf,
    /// Image memory (gfx90a; gfx94x has none).
    Mimg,
    /// GFX11 dual issue (VOPD), its X half: an instruction of this format carries both halves
    /// in [`crate::decode::Inst::pair`].
    VopdX,
    /// GFX11 dual issue, its Y half (table entries only).
    VopdY,
}

/// One opcode of one target.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// The encoding.
    pub format: Format,
    /// The opcode field's value.
    pub opcode: u16,
    /// The operation.
    pub op: Op,
    /// The mnemonic as LLVM prints it for this encoding (`v_add_f32_e32`).
    pub name: &'static str,
    /// Widths in dwords of the register operands in printed order (0: none).
    pub widths: [u8; 6],
    /// The targets the entry is for ([`target_bit`] of each).
    pub targets: u8,
    /// What the operation does beyond its `op`.
    pub class: Class,
    /// Facts about its operands (see [`super::attrs::traits`]).
    pub traits: Traits,
    /// Its sources' type (what an inline constant means).
    pub source: Source,
}

impl Entry {
    pub(crate) const fn new(
        format: Format,
        opcode: u16,
        op: Op,
        name: &'static str,
        widths: [u8; 6],
        targets: u8,
    ) -> Entry {
        Entry {
            format,
            opcode,
            op,
            name,
            widths,
            targets,
            class: Class::Plain,
            traits: Traits(0),
            source: Source::Int,
        }
    }

    pub(crate) const fn class(mut self, class: Class) -> Entry {
        self.class = class;
        self
    }

    pub(crate) const fn traits(mut self, traits: u16) -> Entry {
        self.traits = Traits(traits);
        self
    }

    pub(crate) const fn source(mut self, source: Source) -> Entry {
        self.source = source;
        self
    }
}

/// A target's bit in [`Entry::targets`].
pub fn target_bit(target: Target) -> u8 {
    match target {
        Target::Gfx90a => 1,
        Target::Gfx942 => 2,
        Target::Gfx1100 => 4,
    }
}

/// The entry for `opcode` in `format` on `target`.
pub fn lookup(target: Target, format: Format, opcode: u16) -> Option<&'static Entry> {
    let t = tables::ENTRIES;
    let first = t.partition_point(|e| (e.format, e.opcode) < (format, opcode));
    let bit = target_bit(target);
    t.get(first..)?
        .iter()
        .take_while(|e| (e.format, e.opcode) == (format, opcode))
        .find(|e| e.targets & bit != 0)
}

/// Every opcode of `target`, sorted by encoding and opcode (for coverage listings and tests).
pub fn entries(target: Target) -> impl Iterator<Item = &'static Entry> {
    let bit = target_bit(target);
    tables::ENTRIES.iter().filter(move |e| e.targets & bit != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_and_unique() {
        for t in Target::ALL {
            let e: Vec<&Entry> = entries(t).collect();
            assert!(e.len() > 1000, "{t}: {} entries", e.len());
            assert!(e
                .windows(2)
                .all(|w| (w[0].format, w[0].opcode) < (w[1].format, w[1].opcode)));
            let add_opcode = if t == Target::Gfx1100 { 3 } else { 1 };
            let add = lookup(t, Format::Vop2, add_opcode).map(|e| e.name);
            assert_eq!(add, Some("v_add_f32_e32"));
            assert!(lookup(t, Format::Sop2, 0x7F).is_none());
        }
    }
}
