//! Applying an AMDGPU code object's dynamic relocations to its image once the load address is
//! known. The linker leaves these for data that holds addresses (tables of pointers to device
//! variables or functions); code itself is position independent.
//!
//! Formulas (AMDGPUUsage, "Relocation Records"): `B` is the load bias (where virtual address 0
//! lands), `S` the symbol's loaded address, `A` the addend.

use super::elf::ParsedElf;
use crate::error::CodeObjectError;

const R_AMDGPU_NONE: u32 = 0;
const R_AMDGPU_ABS32_LO: u32 = 1;
const R_AMDGPU_ABS32_HI: u32 = 2;
const R_AMDGPU_ABS64: u32 = 3;
const R_AMDGPU_ABS32: u32 = 6;
const R_AMDGPU_RELATIVE64: u32 = 13;

/// A resolved relocation: write the low `width` bytes of `value` at byte `at` of the image.
pub(crate) struct Patch {
    at: usize,
    width: usize,
    value: u64,
}

/// Resolves every dynamic relocation for an image (the bytes of `[elf.image_start,
/// elf.image_end)`) loaded at GPU address `base`, checking each: a known type, a target inside
/// a loaded segment, a defined symbol inside the image.
pub(crate) fn resolve(elf: &ParsedElf<'_>, base: u64) -> Result<Vec<Patch>, CodeObjectError> {
    let bias = base.wrapping_sub(elf.image_start);
    let mut patches = Vec::with_capacity(elf.relocations.len());
    for r in &elf.relocations {
        let bad = |why: String| CodeObjectError::BadRelocation {
            r_type: r.r_type,
            offset: r.offset,
            why,
        };
        let width = match r.r_type {
            R_AMDGPU_NONE => continue,
            R_AMDGPU_ABS64 | R_AMDGPU_RELATIVE64 => 8,
            R_AMDGPU_ABS32 | R_AMDGPU_ABS32_LO | R_AMDGPU_ABS32_HI => 4,
            r_type => {
                return Err(CodeObjectError::UnsupportedRelocation {
                    r_type,
                    offset: r.offset,
                })
            }
        };
        if elf.segment_holding(r.offset, width).is_none() {
            return Err(bad(format!(
                "its {width} bytes are outside the loaded segments [{:#x}, {:#x})",
                elf.image_start, elf.image_end
            )));
        }
        let addend = r.addend as u64;
        let symbol = || -> Result<u64, CodeObjectError> {
            if r.symbol == 0 {
                return Ok(0);
            }
            let sym = elf
                .symbols
                .get(r.symbol as usize)
                .ok_or_else(|| bad(format!("symbol index {} is not in .dynsym", r.symbol)))?;
            if !sym.defined {
                return if sym.weak {
                    Ok(0) // An undefined weak symbol resolves to null, as in any ELF loader.
                } else {
                    Err(CodeObjectError::UndefinedSymbol {
                        name: sym.name.clone(),
                        offset: r.offset,
                    })
                };
            }
            if sym.absolute {
                return Ok(sym.value);
            }
            if sym.value < elf.image_start || sym.value > elf.image_end {
                return Err(bad(format!(
                    "symbol {:?} at {:#x} is outside the image",
                    sym.name, sym.value
                )));
            }
            Ok(sym.value.wrapping_add(bias))
        };
        let value = match r.r_type {
            R_AMDGPU_RELATIVE64 => bias.wrapping_add(addend),
            R_AMDGPU_ABS64 => symbol()?.wrapping_add(addend),
            R_AMDGPU_ABS32_LO => symbol()?.wrapping_add(addend) & 0xFFFF_FFFF,
            R_AMDGPU_ABS32_HI => symbol()?.wrapping_add(addend) >> 32,
            _ => {
                let v = symbol()?.wrapping_add(addend);
                if v > u64::from(u32::MAX) {
                    return Err(bad(format!("value {v:#x} does not fit 32 bits")));
                }
                v
            }
        };
        patches.push(Patch {
            // The segment holding the target lies inside the image, so this fits a usize.
            at: (r.offset - elf.image_start) as usize,
            width: width as usize,
            value,
        });
    }
    Ok(patches)
}

/// Writes resolved relocations into the image.
pub(crate) fn apply(image: &mut [u8], patches: &[Patch]) -> Result<(), CodeObjectError> {
    for p in patches {
        let slot = image
            .get_mut(p.at..p.at + p.width)
            .ok_or_else(|| CodeObjectError::Malformed("relocation outside the image".into()))?;
        slot.copy_from_slice(&p.value.to_le_bytes()[..p.width]);
    }
    Ok(())
}
