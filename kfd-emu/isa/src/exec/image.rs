//! Image loads, stores and samples (gfx90a MIMG `image_load`, `image_store`, their `_mip` forms
//! and `image_sample`), the instructions ROCr's image blit kernels, HIP's array copies and HIP
//! texture reads use.
//!
//! The image resource (T#, eight SGPRs) gives the base address (256-byte aligned), the data and
//! number formats (the buffer formats' codes, converted as in [`super::buffer_format`]), the
//! size, the type (1D, 2D, 3D, arrays) and the pitch. Coordinates are integers in consecutive
//! VGPRs from the address register: x, then y for 2D types, then z or the slice, then the mip
//! level for the `_mip` forms. DMASK picks which channels a load returns (packed into
//! consecutive registers) and which a store writes; a load's channels pass through DST_SEL, and
//! a store's through its inverse. A lane whose coordinates fall outside the image reads 0 and
//! writes nothing, as does every lane of a resource that is no image.
//!
//! `image_sample` reads the sampler (four SGPRs) too: float coordinates, normalised unless the
//! instruction's `unorm` bit or the sampler's FORCE_UNNORMALIZED says otherwise (an array's
//! slice is a texel index, rounded), point or bilinear filtering (XY_MAG_FILTER), and per axis
//! wrap, mirror, clamp to the last texel or clamp to a transparent black border. Level 0 only;
//! bilinear weights are exact floats where the hardware keeps 8 fractional bits, so filtered
//! values may differ from the hardware's in their last bits.
//!
//! Not modelled: the hardware's tiled layouts. Every image is laid out linearly, row after row
//! at the descriptor's pitch and slice after slice, whatever its swizzle mode: the image
//! instructions agree with each other (and ROCr allocates tiled images at least that large),
//! but a CPU or DMA view of a tiled image's bytes is not the hardware's. Mip levels other than
//! 0, the sRGB and other number formats past FLOAT, A16 coordinates, LWE and TFE are refused as
//! unimplemented.

use super::access::{self, Addr};
use super::buffer_format::{
    channels, element_bytes, field, float_valued, pack, selected, set_field, unpack, write_channels,
};
use super::wave::{Wave, LANES};
use super::Ctx;
use crate::decode::operand::f16_to_f32;
use crate::decode::{flags, Inst, Op, Operand};
use crate::error::WaveError;
use crate::memory::Memory;

/// An image resource's fields this module uses.
struct Image {
    base: u64,
    dfmt: u8,
    nfmt: u8,
    width: u64,
    height: u64,
    depth: u64,
    pitch: u64,
    dst_sel: [u32; 4],
    kind: u32,
    base_array: u64,
}

const TYPE_1D: u32 = 8;
const TYPE_2D: u32 = 9;
const TYPE_3D: u32 = 10;
const TYPE_1D_ARRAY: u32 = 12;
const TYPE_2D_ARRAY: u32 = 13;

impl Image {
    fn read(w: &Wave, inst: &Inst) -> Result<Image, WaveError> {
        let Operand::Sgpr(r, _) = inst.saddr else {
            return Err(w.illegal(inst, "image resource is not in SGPRs"));
        };
        let d: [u32; 8] =
            std::array::from_fn(|k| w.s.get(usize::from(r) + k).copied().unwrap_or(0));
        Ok(Image {
            base: (u64::from(d[0]) | u64::from(d[1] & 0xFF) << 32) << 8,
            dfmt: (d[1] >> 20 & 0x3F) as u8,
            nfmt: (d[1] >> 26 & 0xF) as u8,
            width: u64::from(d[2] & 0x3FFF) + 1,
            height: u64::from(d[2] >> 14 & 0x3FFF) + 1,
            depth: u64::from(d[4] & 0x1FFF) + 1,
            pitch: u64::from(d[4] >> 13 & 0xFFFF) + 1,
            dst_sel: std::array::from_fn(|c| d[3] >> (3 * c) & 7),
            kind: d[3] >> 28,
            base_array: u64::from(d[5] & 0x1FFF),
        })
    }

    /// Coordinates the type takes (x, then y, then z or the slice): 0 for a resource that is no
    /// image (a zeroed or buffer descriptor: every lane reads 0 and writes nothing); `None`
    /// for the types not modelled (cube, MSAA).
    fn dims(&self) -> Option<usize> {
        Some(match self.kind {
            0..=7 => 0,
            TYPE_1D => 1,
            TYPE_2D | TYPE_1D_ARRAY => 2,
            TYPE_3D | TYPE_2D_ARRAY => 3,
            _ => return None,
        })
    }

    /// The address of texel `c` (x, y, z-or-slice), or `None` outside the image.
    fn texel(&self, c: [u64; 3]) -> Option<u64> {
        let (x, mut y, mut z) = (c[0], c[1], c[2]);
        let (mut rows, mut slices) = (self.height, self.depth);
        match self.kind {
            TYPE_1D => (y, z, rows, slices) = (0, 0, 1, 1),
            TYPE_1D_ARRAY => {
                // The slice is the second coordinate; an array's slices are its depth.
                (z, y, rows) = (y + self.base_array, 0, 1);
            }
            TYPE_2D => (z, slices) = (0, 1),
            TYPE_2D_ARRAY => z += self.base_array,
            _ => {}
        }
        if self.dims() == Some(0) || x >= self.width || y >= rows || z >= slices {
            return None;
        }
        let bytes = element_bytes(self.dfmt) as u64;
        Some(self.base + ((z * rows + y) * self.pitch + x) * bytes)
    }
}

/// Runs an image load or store.
pub(super) fn exec<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
) -> Result<(), WaveError> {
    let (store, mip) = match inst.op {
        Op::ImageSample => return sample(w, inst, ctx),
        Op::ImageLoad => (false, false),
        Op::ImageLoadMip => (false, true),
        Op::ImageStore => (true, false),
        Op::ImageStoreMip => (true, true),
        _ => return Err(w.unimplemented(inst)),
    };
    let load = !store;
    if inst.has(flags::A16) || inst.has(flags::NV) {
        return Err(w.unimplemented(inst));
    }
    let img = Image::read(w, inst)?;
    let Some(dims) = img.dims() else {
        return Err(w.unimplemented(inst));
    };
    if img.nfmt > 7 {
        return Err(w.unimplemented(inst));
    }
    let coords: Vec<crate::exec::wave::Lanes> = (0..dims + usize::from(mip))
        .map(|k| w.vreg(inst, inst.src[0], k).copied())
        .collect::<Result<_, _>>()?;
    let exec = w.exec();
    if mip && (0..LANES).any(|l| exec >> l & 1 != 0 && coords[dims][l] != 0) {
        return Err(w.unimplemented(inst));
    }
    let dmask = inst.offset1 & 0xF;
    let enabled: Vec<usize> = (0..4).filter(|c| dmask >> c & 1 != 0).collect();
    let d16 = inst.has(flags::D16);
    let chans = channels(img.dfmt);
    let size = element_bytes(img.dfmt);
    let regs = if d16 {
        enabled.len().div_ceil(2)
    } else {
        enabled.len()
    }
    .max(1);
    let one = if float_valued(img.nfmt) {
        1f32.to_bits()
    } else {
        1
    };
    let addr_of = |l: usize| -> Addr {
        let c = [0, 1, 2].map(|k| if k < dims { u64::from(coords[k][l]) } else { 0 });
        match img.texel(c) {
            Some(a) if size > 0 => Addr::Linear(a),
            _ => Addr::Discard,
        }
    };
    if store {
        let data: Vec<crate::exec::wave::Lanes> = (0..regs)
            .map(|k| w.vreg(inst, inst.src[1], k).copied())
            .collect::<Result<_, _>>()?;
        for l in (0..LANES).filter(|l| exec >> l & 1 != 0) {
            let at = addr_of(l);
            if matches!(at, Addr::Discard) {
                continue;
            }
            let mut element = [0u8; 16];
            access::read(w, ctx, at, 0, &mut element[..size])?;
            // Register value i is the i-th enabled channel; it lands in the memory channel
            // the destination select of that channel names.
            for (i, &c) in enabled.iter().enumerate() {
                let v = if d16 {
                    let half = data[i / 2][l] >> (16 * (i % 2)) & 0xFFFF;
                    if float_valued(img.nfmt) {
                        f16_to_f32(half as u16).to_bits()
                    } else {
                        half
                    }
                } else {
                    data[i][l]
                };
                let target = match img.dst_sel[c] {
                    s @ 4..=7 => s as usize - 4,
                    _ => continue,
                };
                if let Some(&(lo, n)) = chans.get(target) {
                    set_field(&mut element, lo, n, pack(v, n, img.nfmt));
                }
            }
            access::write(w, ctx, at, 0, &element[..size])?;
        }
        return Ok(());
    }
    debug_assert!(load);
    let mut values = vec![[0u32; 4]; LANES];
    for l in (0..LANES).filter(|l| exec >> l & 1 != 0) {
        let at = addr_of(l);
        if matches!(at, Addr::Discard) {
            continue; // outside the image: every channel reads 0
        }
        let mut element = [0u8; 16];
        access::read(w, ctx, at, 0, &mut element[..size])?;
        let channel = |c: usize| match chans.get(c) {
            Some(&(lo, n)) => unpack(field(&element, lo, n), n, img.nfmt),
            None if c == 3 => one,
            None => 0,
        };
        for (i, &c) in enabled.iter().enumerate() {
            values[l][i] = selected(img.dst_sel[c], one, channel);
        }
    }
    write_channels(
        w,
        inst,
        &values,
        enabled.len(),
        img.nfmt,
        (d16, false),
        exec,
    )
}

/// The sampler's addressing modes (SQ_TEX_CLAMP): wrap, mirror, clamp to the last texel, clamp
/// to the border.
const WRAP: u32 = 0;
const MIRROR: u32 = 1;
const CLAMP_LAST_TEXEL: u32 = 2;
const CLAMP_BORDER: u32 = 6;

/// Texel index `i` on an axis of `n` texels under addressing `mode`; `None` for the border.
fn address(i: i64, n: i64, mode: u32) -> Option<i64> {
    match mode {
        WRAP => Some(i.rem_euclid(n)),
        MIRROR => {
            let p = i.rem_euclid(2 * n);
            Some(if p < n { p } else { 2 * n - 1 - p })
        }
        CLAMP_LAST_TEXEL => Some(i.clamp(0, n - 1)),
        _ => (0..n).contains(&i).then_some(i),
    }
}

/// Runs `image_sample`: level 0, point or bilinear (see the module's docs).
fn sample<M: Memory + ?Sized>(
    w: &mut Wave,
    inst: &Inst,
    ctx: &mut Ctx<'_, M>,
) -> Result<(), WaveError> {
    if inst.has(flags::A16) || inst.has(flags::NV) || inst.has(flags::D16) {
        return Err(w.unimplemented(inst));
    }
    let img = Image::read(w, inst)?;
    let Operand::Sgpr(r, _) = inst.soffset else {
        return Err(w.illegal(inst, "sampler is not in SGPRs"));
    };
    let samp: [u32; 4] = std::array::from_fn(|k| w.s.get(usize::from(r) + k).copied().unwrap_or(0));
    let modes = [samp[0] & 7, samp[0] >> 3 & 7, samp[0] >> 6 & 7];
    let unnormalized = inst.has(flags::UNORM) || samp[0] >> 15 & 1 != 0;
    let bilinear = samp[2] >> 20 & 3 == 1;
    let (Some(dims), true) = (
        img.dims(),
        modes
            .iter()
            .all(|m| matches!(*m, WRAP | MIRROR | CLAMP_LAST_TEXEL | CLAMP_BORDER)),
    ) else {
        return Err(w.unimplemented(inst));
    };
    if img.nfmt > 7 {
        return Err(w.unimplemented(inst));
    }
    let coords: Vec<crate::exec::wave::Lanes> = (0..dims)
        .map(|k| w.vreg(inst, inst.src[0], k).copied())
        .collect::<Result<_, _>>()?;
    let exec = w.exec();
    let dmask = inst.offset1 & 0xF;
    let enabled: Vec<usize> = (0..4).filter(|c| dmask >> c & 1 != 0).collect();
    let chans = channels(img.dfmt);
    let size = element_bytes(img.dfmt);
    let float = float_valued(img.nfmt);
    let one = if float { 1f32.to_bits() } else { 1 };
    // The axes that filter (x, then y for 2D types) and the texel extent of each.
    let array = matches!(img.kind, TYPE_1D_ARRAY | TYPE_2D_ARRAY);
    let axes = if array { dims - 1 } else { dims };
    let extent = [img.width, img.height, img.depth];
    let mut values = vec![[0u32; 4]; LANES];
    for l in (0..LANES).filter(|l| exec >> l & 1 != 0) {
        // Per filtering axis: the (index, weight) pairs to blend.
        let mut taps: Vec<Vec<(Option<i64>, f32)>> = Vec::with_capacity(3);
        for a in 0..axes {
            let n = extent[a] as i64;
            let c = f32::from_bits(coords[a][l]);
            let t = if unnormalized { c } else { c * n as f32 };
            if bilinear {
                let p = t - 0.5;
                let i = p.floor();
                let f = p - i;
                let i = i as i64;
                taps.push(vec![
                    (address(i, n, modes[a]), 1.0 - f),
                    (address(i + 1, n, modes[a]), f),
                ]);
            } else {
                taps.push(vec![(address(t.floor() as i64, n, modes[a]), 1.0)]);
            }
        }
        let slice = if array {
            // Both array types keep their last slice in DEPTH (ROCr's PopulateImageSrd), as
            // `Image::texel` reads it; the slice counts from BASE_ARRAY.
            let n = img.depth as i64;
            let base = img.base_array as i64;
            let s = f32::from_bits(coords[dims - 1][l]).round_ties_even() as i64;
            ((s + base).clamp(base, (n - 1).max(base)) - base) as u64
        } else {
            0
        };
        // Every combination of the axes' taps, with the product of their weights.
        let mut acc = [0f32; 4];
        let mut raw = [0u32; 4];
        let combos: usize = taps.iter().map(Vec::len).product();
        for k in 0..combos {
            let (mut idx, mut weight, mut rest, mut border) = ([0u64; 3], 1f32, k, false);
            for (a, t) in taps.iter().enumerate() {
                let (i, wgt) = t[rest % t.len()];
                rest /= t.len();
                weight *= wgt;
                match i {
                    Some(i) => idx[a] = i as u64,
                    None => border = true,
                }
            }
            if weight == 0.0 {
                continue;
            }
            let mut texel = [0u32; 4];
            if !border {
                let c = match img.kind {
                    TYPE_1D_ARRAY => [idx[0], slice, 0],
                    TYPE_2D_ARRAY => [idx[0], idx[1], slice],
                    _ => idx,
                };
                if let (Some(at), true) = (img.texel(c), size > 0) {
                    let mut element = [0u8; 16];
                    access::read(w, ctx, Addr::Linear(at), 0, &mut element[..size])?;
                    for (ch, v) in texel.iter_mut().enumerate() {
                        *v = match chans.get(ch) {
                            Some(&(lo, n)) => unpack(field(&element, lo, n), n, img.nfmt),
                            None if ch == 3 => one,
                            None => 0,
                        };
                    }
                }
            }
            // The transparent black border is 0 in every channel.
            for ch in 0..4 {
                if float {
                    acc[ch] += weight * f32::from_bits(texel[ch]);
                } else {
                    raw[ch] = texel[ch];
                }
            }
        }
        let sampled = |ch: usize| if float { acc[ch].to_bits() } else { raw[ch] };
        for (i, &c) in enabled.iter().enumerate() {
            values[l][i] = selected(img.dst_sel[c], one, sampled);
        }
    }
    for k in 0..enabled.len().max(1) {
        let reg = w.vreg_mut(inst, inst.dst, k)?;
        for (l, r) in reg.iter_mut().enumerate() {
            if exec >> l & 1 != 0 {
                *r = values[l][k];
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampler_addressing_wraps_mirrors_clamps_and_borders() {
        let at = |mode| [-5, -1, 0, 3, 4, 9].map(|i| address(i, 4, mode));
        assert_eq!(at(WRAP), [3, 3, 0, 3, 0, 1].map(Some));
        assert_eq!(at(MIRROR), [3, 0, 0, 3, 3, 1].map(Some));
        assert_eq!(at(CLAMP_LAST_TEXEL), [0, 0, 0, 3, 3, 3].map(Some));
        assert_eq!(at(CLAMP_BORDER), [None, None, Some(0), Some(3), None, None]);
    }
}
