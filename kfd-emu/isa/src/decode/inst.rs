//! A decoded instruction: the operation, its operands and its modifiers, in a form the
//! interpreter executes without looking at the words again.

use super::op::Op;
use super::operand::Operand;
use super::table::Format;

/// DPP (data-parallel primitives) controls of a VOP1/VOP2/VOPC instruction's src0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dpp {
    /// DPP_CTRL: which lane each lane reads (quad_perm, row shifts, wave shifts, broadcasts).
    pub ctrl: u16,
    /// Rows (groups of 16 lanes) that write.
    pub row_mask: u8,
    /// Banks (groups of 4 lanes within a row) that write.
    pub bank_mask: u8,
    /// A lane whose source is out of range reads 0 (instead of not writing).
    pub bound_ctrl: bool,
    /// GFX10+ FI: lanes read a source lane's value even when EXEC disables that lane.
    pub fetch_inactive: bool,
    /// GFX10+ DPP8: lane `l` reads lane `(l & !7) | sel[l % 8]`, the eight 3-bit selects in
    /// order (`ctrl` and the masks then play no part).
    pub lanes8: Option<u32>,
}

/// SDWA (sub-dword addressing) controls of a VOP1/VOP2/VOPC instruction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sdwa {
    /// Which part of the destination is written: BYTE_0..3 (0-3), WORD_0/1 (4, 5), DWORD (6).
    pub dst_sel: u8,
    /// What happens to the rest: pad with zeros (0), sign-extend (1), preserve (2).
    pub dst_unused: u8,
    /// Which part of src0 is read (same codes as `dst_sel`).
    pub src0_sel: u8,
    /// Which part of src1 is read.
    pub src1_sel: u8,
    /// Sign-extend the selected part of src0 / src1 (bit 0 / bit 1).
    pub sext: u8,
}

/// Flags of memory instructions (cache policy and addressing modes).
pub mod flags {
    /// GLC (gfx940: SC0): globally coherent / return the pre-op value of an atomic.
    pub const GLC: u16 = 1 << 0;
    /// SLC (gfx940: NT): streaming.
    pub const SLC: u16 = 1 << 1;
    /// SCC (gfx940: SC1): system coherent.
    pub const SCC: u16 = 1 << 2;
    /// GFX11 DLC (device level coherent), in the bit GFX9's SCC has (GFX11 has no SCC bit).
    pub const DLC: u16 = SCC;
    /// MUBUF: the address VGPR holds an offset.
    pub const OFFEN: u16 = 1 << 3;
    /// MUBUF: the address VGPR holds an index.
    pub const IDXEN: u16 = 1 << 4;
    /// MUBUF/FLAT: load into LDS.
    pub const LDS: u16 = 1 << 5;
    /// DS: the global data share, not LDS.
    pub const GDS: u16 = 1 << 6;
    /// The data/destination registers are AGPRs (gfx90a+).
    pub const ACC: u16 = 1 << 7;
    /// SMEM: the offset is an immediate.
    pub const IMM: u16 = 1 << 8;
    /// SMEM: an SGPR offset is added too (SOE).
    pub const SOE: u16 = 1 << 9;
    /// Scratch (gfx940): the address VGPR is used (SVE).
    pub const SVE: u16 = 1 << 10;
    /// SMEM NV / MUBUF TFE / MIMG LWE.
    pub const NV: u16 = 1 << 11;
    /// MIMG: coordinates are unnormalised (texels, not [0, 1)).
    pub const UNORM: u16 = 1 << 12;
    /// MIMG: the image is an array (the last coordinate is the slice).
    pub const DA: u16 = 1 << 13;
    /// MIMG: coordinates are 16-bit, two to a register.
    pub const A16: u16 = 1 << 14;
    /// MIMG: data is 16-bit, two to a register.
    pub const D16: u16 = 1 << 15;
}

/// VOP3/VOP3P modifiers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Vop3Mods {
    /// Clamp the result (to [0, 1] for floats, saturate for integers).
    pub clamp: bool,
    /// Output modifier: 0 none, 1 *2, 2 *4, 3 /2.
    pub omod: u8,
    /// Negate source i (bit i); for VOP3P the low halves.
    pub neg: u8,
    /// Absolute value of source i (bit i); for VOP3P `neg_hi`.
    pub abs: u8,
    /// OP_SEL: which half each 16-bit source (bits 0-2) and the destination (bit 3) use.
    pub opsel: u8,
    /// VOP3P OP_SEL_HI.
    pub opsel_hi: u8,
}

/// A decoded instruction.
#[derive(Clone, Copy, Debug)]
pub struct Inst {
    /// The operation.
    pub op: Op,
    /// The encoding it came in.
    pub format: Format,
    /// The mnemonic as LLVM prints it for this encoding.
    pub name: &'static str,
    /// Its words (`len` of them are meaningful).
    pub words: [u32; 3],
    /// Length in dwords.
    pub len: u8,
    /// The (vector or scalar) destination.
    pub dst: Operand,
    /// VOP3b's scalar carry/condition destination; VOPC's destination in VOP3/SDWA form.
    pub sdst: Operand,
    /// Sources in order (src0, src1, src2); for memory instructions the address, data and
    /// second data operands.
    pub src: [Operand; 3],
    /// The value of each constant source for the source's data size (0 for registers).
    pub imm: [u64; 3],
    /// Memory offset (SMEM, DS offset0, FLAT, MUBUF) or the 16-bit immediate of SOPK/SOPP
    /// (sign-extended).
    pub offset: i32,
    /// DS offset1.
    pub offset1: u8,
    /// Memory flags (see [`flags`]).
    pub flags: u16,
    /// Scalar offset operand (SMEM soffset, MUBUF soffset, FLAT/GLOBAL/SCRATCH saddr) or the
    /// buffer resource (MUBUF srsrc, SMEM sbase).
    pub saddr: Operand,
    /// The second scalar operand of memory instructions (MUBUF soffset, SMEM soffset).
    pub soffset: Operand,
    /// VOP3/VOP3P modifiers.
    pub vop3: Vop3Mods,
    /// DPP controls, when src0 is DPP-encoded.
    pub dpp: Option<Dpp>,
    /// SDWA controls, when src0 is SDWA-encoded.
    pub sdwa: Option<Sdwa>,
    /// Register widths of the operands in printed order (from the opcode table).
    pub widths: [u8; 6],
    /// What the operation does beyond its `op` (from the opcode table).
    pub class: super::attrs::Class,
    /// Facts about its operands (from the opcode table; see [`super::attrs::traits`]).
    pub traits: super::attrs::Traits,
    /// Its sources' type (from the opcode table).
    pub source: super::attrs::Source,
    /// GFX11 VOPD: the two halves (X, Y), each as the VOP2 instruction it performs.
    pub pair: Option<&'static [Inst; 2]>,
}

impl Inst {
    /// An instruction that decodes to nothing (executing it is an error).
    pub fn invalid(words: &[u32]) -> Inst {
        let mut w = [0; 3];
        for (d, s) in w.iter_mut().zip(words) {
            *d = *s;
        }
        Inst {
            op: Op::Invalid,
            format: Format::Sopp,
            name: "",
            words: w,
            len: 1,
            dst: Operand::None,
            sdst: Operand::None,
            src: [Operand::None; 3],
            imm: [0; 3],
            offset: 0,
            offset1: 0,
            flags: 0,
            saddr: Operand::None,
            soffset: Operand::None,
            vop3: Vop3Mods::default(),
            dpp: None,
            sdwa: None,
            widths: [0; 6],
            class: super::attrs::Class::Plain,
            traits: super::attrs::Traits(0),
            source: super::attrs::Source::Int,
            pair: None,
        }
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        u64::from(self.len) * 4
    }

    /// The words that make up the instruction.
    pub fn word_slice(&self) -> &[u32] {
        self.words
            .get(..usize::from(self.len))
            .unwrap_or(&self.words)
    }

    /// Whether a flag is set.
    pub fn has(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }

    /// Whether the operation has a trait (one of [`super::attrs::traits`]).
    pub fn is(&self, trait_bit: u16) -> bool {
        self.traits.has(trait_bit)
    }
}
