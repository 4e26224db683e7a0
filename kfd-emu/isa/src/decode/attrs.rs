//! What an operation does beyond its [`Op`](super::Op): the typed attributes each table entry
//! carries. `tools/gen_tables.py` works them out from the mnemonic when it writes the tables,
//! so neither the decoder nor the interpreter reads mnemonics to learn what an instruction does.

use super::compare::Compare;
use super::memop::{Access, Atomic, DsOp, Formatted};

/// The kind of operation, with what the interpreter needs to run it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// An operation the interpreter runs by its [`Op`](super::Op) alone.
    Plain,
    /// A vector compare (VOPC or its VOP3 form).
    Compare(Compare),
    /// A FLAT/GLOBAL/SCRATCH/MUBUF load into registers, or into LDS
    /// ([`traits::LDS_DMA`]).
    Load(Access),
    /// A FLAT/GLOBAL/SCRATCH/MUBUF store.
    Store(Access),
    /// A vector (FLAT/GLOBAL/MUBUF) or scalar (SMEM) read-modify-write.
    Atomic(Atomic),
    /// A formatted buffer access (MTBUF, MUBUF `*_format_*`).
    Formatted(Formatted),
    /// A buffer cache write-back or invalidation.
    CacheControl,
    /// An LDS/GDS operation.
    Ds(DsOp),
    /// A matrix operation.
    Matrix(Matrix),
    /// An image operation.
    Image(ImageArgs),
}

/// What an image operation's mnemonic says of its address and data registers
/// (`image_sample_c_d_o` takes an offset, a compare value and gradients).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageArgs {
    /// Address registers before the coordinates: offset (`_o`), bias (`_b`), compare (`_c`).
    pub extra: u8,
    /// Derivatives follow the coordinates (`_d`, `_cd`).
    pub gradients: bool,
    /// The derivatives are 16-bit (`_g16`).
    pub g16: bool,
    /// A LOD or LOD clamp follows the coordinates (`_l`, `_cl`).
    pub lod_clamp: bool,
    /// A mip level follows the coordinates (`_mip`, `get_resinfo`).
    pub mip: bool,
    /// No coordinates (`get_resinfo`).
    pub no_coords: bool,
    /// Four data channels whatever DMASK says (`gather4*`, `msaa_load`).
    pub four_channels: bool,
    /// Which data sizes the operation comes in.
    pub data: ImageData,
}

impl ImageArgs {
    #[allow(clippy::too_many_arguments)]
    pub(crate) const fn new(
        extra: u8,
        gradients: bool,
        g16: bool,
        lod_clamp: bool,
        mip: bool,
        no_coords: bool,
        four_channels: bool,
        data: ImageData,
    ) -> ImageArgs {
        ImageArgs {
            extra,
            gradients,
            g16,
            lod_clamp,
            mip,
            no_coords,
            four_channels,
            data,
        }
    }
}

/// The data register counts an image operation comes in (LLVM has one variant of each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageData {
    /// Loads, stores and samples: 1-5 registers.
    Plain,
    /// `gather4*`: 4, 2 (d16) or 5 (tfe).
    Gather,
    /// Atomics: 1 or 2.
    Atomic,
    /// `atomic_cmpswap`: 2 or 4.
    CmpSwap,
}

/// The matrix operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Matrix {
    /// `v_mfma_*` (CDNA), with its products (`None`: a form the mnemonic does not spell as
    /// the interpreter knows).
    Dense(Option<MfmaKind>),
    /// `v_smfmac_*`: a sparse A matrix with an index operand (gfx940).
    Sparse(Option<MfmaKind>),
    /// `v_wmma_*` (RDNA3).
    Wmma,
}

/// What an MFMA or SMFMAC multiplies, as its mnemonic names it: an M×N block from K products
/// (`v_mfma_f32_32x32x8f16` is 32, 32, 8 of f16). How many blocks and how many values a lane
/// holds follow from its operands' widths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MfmaKind {
    /// Rows of a block.
    pub m: u8,
    /// Columns of a block.
    pub n: u8,
    /// Products summed into each element.
    pub k: u8,
    /// A's element type.
    pub a: MatrixInput,
    /// B's element type (A's but in the mixed FP8/BF8 forms).
    pub b: MatrixInput,
}

impl MfmaKind {
    pub(crate) const fn new(m: u8, n: u8, k: u8, a: MatrixInput, b: MatrixInput) -> MfmaKind {
        MfmaKind { m, n, k, a, b }
    }
}

/// The element type of a matrix operation's A or B.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatrixInput {
    /// f32.
    F32,
    /// f16.
    F16,
    /// bfloat16.
    Bf16,
    /// 8-bit integers.
    I8,
    /// f64.
    F64,
    /// gfx94x's FP8: E4M3 with exponent bias 8, no infinities, NaN at 0x80 ("FNUZ").
    Fp8,
    /// gfx94x's BF8: E5M2 with exponent bias 16, no infinities, NaN at 0x80.
    Bf8,
    /// f32 registers multiplied at reduced precision (gfx94x's xf32 MFMAs).
    Xf32,
}

/// The type of an operation's sources, as its last type suffix names it (LLVM names
/// conversions `v_cvt_DST_SRC`): what an inline constant in a source means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Integers or raw bits of 32 bits (or 64, as the operand's width says); also operations
    /// with no type suffix.
    Int,
    /// 16-bit integers or bits.
    Int16,
    /// f32 or f64, as the operand's width says.
    Float,
    /// f16.
    Float16,
}

/// Facts about an operation's operands that its encoding alone does not give (bits of
/// [`Traits`]).
pub mod traits {
    /// Writes a carry or other scalar result besides its vector one: VOP2's `_co_` forms
    /// (to VCC), VOP3's VOP3b layout (an SDST field).
    pub const CARRY_OUT: u16 = 1 << 0;
    /// A memory load (`*_load_*`).
    pub const LOAD: u16 = 1 << 1;
    /// A memory store (`*_store*`).
    pub const STORE: u16 = 1 << 2;
    /// A memory atomic (`*_atomic_*`).
    pub const ATOMIC: u16 = 1 << 3;
    /// A compare-swap: its data is a value and a compare value, twice the result's width.
    pub const CMPSWAP: u16 = 1 << 4;
    /// A load straight into LDS (`*_load_lds_*`): no destination register.
    pub const LDS_DMA: u16 = 1 << 5;
    /// A scalar buffer access (`s_buffer_*`): the base is a buffer resource.
    pub const SCALAR_BUFFER: u16 = 1 << 6;
    /// An image operation that takes a sampler (`image_sample*`, `image_gather*`,
    /// `image_get_lod`).
    pub const SAMPLER: u16 = 1 << 7;
    /// A DS operation that returns data in a destination VGPR.
    pub const RETURNS: u16 = 1 << 8;
    /// No address operand: the lane id is the address (`*_addtid_*`, DS and GFX11's FLAT), or
    /// M0 is (`ds_append`, `ds_consume`).
    pub const NO_ADDRESS: u16 = 1 << 9;
    /// GFX11's GS register operations (`ds_*_gs_reg_rtn`): one source, in the data field.
    pub const GS_REGISTER: u16 = 1 << 10;
}

/// A set of [`traits`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traits(pub u16);

impl Traits {
    /// Whether `trait_bit` (one of [`traits`]) is set.
    pub fn has(self, trait_bit: u16) -> bool {
        self.0 & trait_bit != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::compare::{CmpType, Compare, Predicate};
    use crate::decode::memop::{DsClass, GwsOp};
    use crate::decode::table::{entries, Entry};
    use crate::memory::AtomicOp;
    use crate::target::Target;

    fn entry(target: Target, name: &str) -> &'static Entry {
        entries(target)
            .find(|e| e.name == name)
            .unwrap_or_else(|| panic!("{target} has no {name}"))
    }

    #[test]
    fn memory_operations() {
        let t = Target::Gfx90a;
        let load = |name| match entry(t, name).class {
            Class::Load(a) => a,
            c => panic!("{name}: {c:?}"),
        };
        assert_eq!(
            load("global_load_sshort"),
            Access::new(2, true, None),
            "sign-extends"
        );
        assert_eq!(load("flat_load_short_d16_hi").d16, Some(true));
        assert_eq!(load("buffer_load_ubyte_d16").d16, Some(false));
        assert_eq!(
            entry(t, "buffer_store_dwordx4").class,
            Class::Store(Access::new(16, false, None))
        );
        assert_eq!(
            entry(t, "global_atomic_cmpswap_x2").class,
            Class::Atomic(Atomic::new(AtomicOp::CmpSwap, true))
        );
        let cmpswap = entry(t, "global_atomic_cmpswap_x2").traits;
        assert!(cmpswap.has(traits::CMPSWAP) && cmpswap.has(traits::ATOMIC));
        assert_eq!(
            entry(t, "global_atomic_add_f32").class,
            Class::Atomic(Atomic::new(AtomicOp::FAdd, false))
        );
        assert_eq!(
            entry(t, "global_atomic_max_f64").class,
            Class::Atomic(Atomic::new(AtomicOp::FMax, true))
        );
        assert_eq!(entry(t, "buffer_wbinvl1").class, Class::CacheControl);
        assert_eq!(
            entry(t, "buffer_load_format_xy").class,
            Class::Formatted(Formatted::new(2, false, false))
        );
        assert_eq!(
            entry(t, "tbuffer_store_format_d16_xyzw").class,
            Class::Formatted(Formatted::new(4, true, false))
        );
        assert!(entry(t, "tbuffer_store_format_d16_xyzw")
            .traits
            .has(traits::STORE));
        assert_eq!(
            entry(t, "s_atomic_add").class,
            Class::Atomic(Atomic::new(AtomicOp::Add, false))
        );
        assert!(entry(t, "s_buffer_load_dword")
            .traits
            .has(traits::SCALAR_BUFFER));
        // GFX11 spellings get GFX9's semantics.
        let g11 = entry(Target::Gfx1100, "global_load_i16");
        assert_eq!(g11.class, Class::Load(Access::new(2, true, None)));
        let lds = entry(Target::Gfx942, "global_load_lds_ubyte");
        assert_eq!(lds.class, Class::Load(Access::new(1, false, None)));
        assert!(lds.traits.has(traits::LDS_DMA) && lds.traits.has(traits::LOAD));
    }

    #[test]
    fn ds_operations() {
        let t = Target::Gfx90a;
        let ds = |name| match entry(t, name).class {
            Class::Ds(d) => d,
            c => panic!("{name}: {c:?}"),
        };
        let d = ds("ds_read_i8_d16_hi");
        assert_eq!(
            (d.class, d.size, d.signed, d.d16),
            (DsClass::Read, 1, true, Some(true))
        );
        let d = ds("ds_write2st64_b64");
        assert_eq!((d.class, d.size, d.st64), (DsClass::Write2, 8, true));
        assert_eq!(ds("ds_read_b128").size, 16);
        assert_eq!(ds("ds_add_rtn_u64").class, DsClass::Atomic(AtomicOp::Add));
        assert_eq!(ds("ds_max_i64").class, DsClass::Atomic(AtomicOp::SMax));
        assert_eq!(ds("ds_min_rtn_f32").class, DsClass::Atomic(AtomicOp::FMin));
        assert_eq!(ds("ds_add_f32").class, DsClass::Atomic(AtomicOp::FAdd));
        assert_eq!(
            ds("ds_cmpst_rtn_b32").class,
            DsClass::Atomic(AtomicOp::CmpSwap)
        );
        assert_eq!(ds("ds_swizzle_b32").class, DsClass::Other);
        assert_eq!(ds("ds_consume").class, DsClass::Append(true));
        assert_eq!(ds("ds_gws_sema_p").class, DsClass::Gws(GwsOp::SemaP));
        assert!(entry(t, "ds_add_rtn_u32").traits.has(traits::RETURNS));
        assert!(!entry(t, "ds_add_u32").traits.has(traits::RETURNS));
        assert!(entry(t, "ds_append").traits.has(traits::NO_ADDRESS));
        // GFX11's compare-store is GFX9's compare-swap.
        let g11 = entry(Target::Gfx1100, "ds_cmpstore_b32");
        assert!(matches!(
            g11.class,
            Class::Ds(DsOp {
                class: DsClass::Atomic(AtomicOp::CmpSwap),
                ..
            })
        ));
    }

    #[test]
    fn compares_carries_matrices_and_sources() {
        let t = Target::Gfx90a;
        assert_eq!(
            entry(t, "v_cmp_gt_i32_e32").class,
            Class::Compare(Compare::new(Predicate::Gt, CmpType::I32, false))
        );
        assert_eq!(
            entry(t, "v_cmpx_nlt_f64_e64").class,
            Class::Compare(Compare::new(Predicate::Nlt, CmpType::F64, true))
        );
        assert_eq!(
            entry(t, "v_cmp_class_f32_e64").class,
            Class::Compare(Compare::new(Predicate::Class, CmpType::F32, false))
        );
        // GFX11 spells the always-true compare `t`; GFX9's float one is `tru`.
        assert_eq!(
            entry(Target::Gfx1100, "v_cmp_t_f32_e32").class,
            Class::Compare(Compare::new(Predicate::Tru, CmpType::F32, false))
        );
        assert_eq!(entry(t, "v_add_f32_e32").class, Class::Plain);
        assert!(entry(t, "v_add_co_u32_e32").traits.has(traits::CARRY_OUT));
        assert!(entry(t, "v_div_scale_f32").traits.has(traits::CARRY_OUT));
        assert!(!entry(t, "v_add_u32_e32").traits.has(traits::CARRY_OUT));
        assert!(entry(Target::Gfx1100, "v_add_co_ci_u32_e32")
            .traits
            .has(traits::CARRY_OUT));
        let f16 = MatrixInput::F16;
        assert_eq!(
            entry(t, "v_mfma_f32_32x32x8f16").class,
            Class::Matrix(Matrix::Dense(Some(MfmaKind::new(32, 32, 8, f16, f16))))
        );
        assert_eq!(
            entry(Target::Gfx942, "v_smfmac_f32_16x16x32_f16").class,
            Class::Matrix(Matrix::Sparse(Some(MfmaKind::new(16, 16, 32, f16, f16))))
        );
        let (fp8, bf8) = (MatrixInput::Fp8, MatrixInput::Bf8);
        assert_eq!(
            entry(Target::Gfx942, "v_mfma_f32_16x16x32_fp8_bf8").class,
            Class::Matrix(Matrix::Dense(Some(MfmaKind::new(16, 16, 32, fp8, bf8))))
        );
        assert_eq!(
            entry(Target::Gfx1100, "v_wmma_f32_16x16x16_f16").class,
            Class::Matrix(Matrix::Wmma)
        );
        assert_eq!(entry(t, "v_cvt_f32_f16_e32").source, Source::Float16);
        assert_eq!(entry(t, "v_cvt_f16_f32_e32").source, Source::Float);
        assert_eq!(entry(t, "v_add_u16_e32").source, Source::Int16);
        assert_eq!(entry(t, "s_mov_b32").source, Source::Int);
    }
}
