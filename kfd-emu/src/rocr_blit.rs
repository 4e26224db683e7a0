//! ROCr's own blit kernels, recognised and run as host code.
//!
//! ROCr copies and fills memory with three kernels of its own (`BlitKernel`: copy aligned, copy
//! misaligned, fill), loaded from code objects inside `libhsa-runtime64`. kfd-emu runs no AMDGPU
//! machine code, so under the preload interposer every ROCr copy would stop the queue. Instead,
//! a dispatch of an unbound kernel object whose machine code is one of these kernels (recognised
//! by an FNV-1a hash of the first 256 bytes at its entry point) runs the kernel's contract on the
//! host, as kfd-emu does for kfdrt's blit kernels. The kernel-argument layouts are ROCr's
//! `BlitKernel::KernelArgs` (`amd_blit_kernel.h`): every phase of a copy is contiguous, so a
//! copy is `[phase1_src, last_src_end)` to `[phase1_dst, ...)` and a fill is
//! `[phase1_dst, phase2_dst_end)`. The arguments are checked for that shape before anything is
//! written.

use crate::vm::{GpuFault, GpuVm};

/// Which of ROCr's blit kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RocrBlit {
    CopyAligned,
    CopyMisaligned,
    Fill,
}

/// Code fingerprints: Debian 12's ROCr 5.2.3 (`libhsa-runtime64-1` 5.2.3-3), gfx90a.
const KNOWN: [(u64, RocrBlit); 3] = [
    (0xaef2_6b74_f59c_065f, RocrBlit::CopyAligned),
    (0x14f3_ff5e_3bf2_e13b, RocrBlit::CopyMisaligned),
    (0x80fc_bc31_f26e_1cf0, RocrBlit::Fill),
];

/// Bytes of machine code hashed at the entry point.
const FINGERPRINT_BYTES: usize = 256;

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The blit kernel whose descriptor is at `kernel_object`, if it is one of ROCr's.
pub(crate) fn recognize(vm: &GpuVm, kernel_object: u64, entry_offset: i64) -> Option<RocrBlit> {
    let entry = kernel_object.checked_add_signed(entry_offset)?;
    let mut code = [0u8; FINGERPRINT_BYTES];
    vm.read(entry, &mut code).ok()?;
    let h = fnv1a(&code);
    KNOWN.iter().find(|(k, _)| *k == h).map(|&(_, b)| b)
}

/// Why a recognised dispatch did not run.
#[derive(Debug)]
pub(crate) enum BlitError {
    /// The arguments are not in the shape ROCr writes.
    BadArguments,
    /// An access outside the GPU's page table.
    Fault(GpuFault),
}

impl From<GpuFault> for BlitError {
    fn from(f: GpuFault) -> Self {
        BlitError::Fault(f)
    }
}

fn u64_at(vm: &GpuVm, args: u64, offset: u64) -> Result<u64, GpuFault> {
    vm.read_u64(args + offset)
}

fn u32_at(vm: &GpuVm, args: u64, offset: u64) -> Result<u32, GpuFault> {
    vm.read_u32(args + offset)
}

/// Runs `blit` with the kernel arguments at `args`, dispatched over `grid_x` work-items.
pub(crate) fn run(vm: &GpuVm, blit: RocrBlit, args: u64, grid_x: u32) -> Result<(), BlitError> {
    let check = |ok: bool| {
        if ok {
            Ok(())
        } else {
            Err(BlitError::BadArguments)
        }
    };
    match blit {
        RocrBlit::CopyAligned | RocrBlit::CopyMisaligned => {
            // Aligned: 4 phases (src, dst pairs at 0..64), then src_end, dst_end, num_workitems.
            // Misaligned: 2 phases (0..32), then src_end, dst_end, num_workitems.
            let (pairs, tail) = if blit == RocrBlit::CopyAligned {
                (4, 64)
            } else {
                (2, 32)
            };
            let mut src = Vec::with_capacity(pairs + 1);
            let mut dst = Vec::with_capacity(pairs + 1);
            for p in 0..pairs as u64 {
                src.push(u64_at(vm, args, 16 * p)?);
                dst.push(u64_at(vm, args, 16 * p + 8)?);
            }
            src.push(u64_at(vm, args, tail)?);
            dst.push(u64_at(vm, args, tail + 8)?);
            let workitems = u32_at(vm, args, tail + 16)?;
            check(workitems == grid_x)?;
            // Phases are consecutive and move source and destination together.
            let ordered = src.windows(2).all(|w| w[0] <= w[1]);
            let paired = src
                .iter()
                .zip(&dst)
                .all(|(s, d)| d.wrapping_sub(*s) == dst[0].wrapping_sub(src[0]));
            check(ordered && paired)?;
            let len = src[pairs] - src[0];
            if len > 0 {
                vm.copy(dst[0], src[0], len)?;
            }
            Ok(())
        }
        RocrBlit::Fill => {
            let start = u64_at(vm, args, 0)?;
            let phase2 = u64_at(vm, args, 8)?;
            let end = u64_at(vm, args, 16)?;
            let value = u32_at(vm, args, 24)?;
            let workitems = u32_at(vm, args, 28)?;
            check(workitems == grid_x && start <= phase2 && phase2 <= end)?;
            check(start % 4 == 0 && (end - start) % 4 == 0)?;
            if end > start {
                vm.fill_u32(start, value, end - start)?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(vm: &GpuVm, va: u64, words: &[u64]) {
        for (i, w) in words.iter().enumerate() {
            vm.write_u64(va + 8 * i as u64, *w).unwrap();
        }
    }

    #[test]
    fn copies_and_fills_with_rocr_argument_layouts() {
        let vm = GpuVm::default();
        let mut mem = vec![0u64; 4096];
        let base = 0x100_0000u64;
        vm.map(
            base,
            4096 * 8,
            mem.as_mut_ptr().cast(),
            1,
            crate::vm::Perms::ALL,
        );
        let (src, dst, args) = (base, base + 0x4000, base + 0x7000);
        for i in 0..256u64 {
            vm.write_u64(src + 8 * i, i * 3 + 1).unwrap();
        }
        // Aligned copy of 2000 bytes split into phases 100 / 1600 / 296 / 4.
        let s = [src, src + 100, src + 1700, src + 1996, src + 2000];
        let off = dst - src;
        put(
            &vm,
            args,
            &[
                s[0],
                s[0] + off,
                s[1],
                s[1] + off,
                s[2],
                s[2] + off,
                s[3],
                s[3] + off,
                s[4],
                s[4] + off,
            ],
        );
        vm.write_u32(args + 80, 26624).unwrap();
        run(&vm, RocrBlit::CopyAligned, args, 26624).unwrap();
        let mut a = vec![0u8; 2000];
        let mut b = vec![0u8; 2001];
        vm.read(src, &mut a).unwrap();
        vm.read(dst, &mut b).unwrap();
        assert_eq!(&a[..], &b[..2000]);
        assert_eq!(b[2000], 0, "copied past the end");
        // A grid that does not match the arguments is refused, nothing written.
        vm.write_u64(dst + 4096, 0).unwrap();
        put(
            &vm,
            args,
            &[src, dst + 4096, src + 8, dst + 4104, src + 16, dst + 4112],
        );
        vm.write_u32(args + 48, 64).unwrap();
        assert!(matches!(
            run(&vm, RocrBlit::CopyMisaligned, args, 128),
            Err(BlitError::BadArguments)
        ));
        assert_eq!(vm.read_u64(dst + 4096), Ok(0));
        // Misaligned copy (src +1, dst +3), 13 bytes.
        put(
            &vm,
            args,
            &[
                src + 1,
                dst + 0x800 + 3,
                src + 9,
                dst + 0x800 + 11,
                src + 14,
                dst + 0x800 + 16,
            ],
        );
        vm.write_u32(args + 48, 64).unwrap();
        run(&vm, RocrBlit::CopyMisaligned, args, 64).unwrap();
        let mut c = [0u8; 13];
        let mut d = [0u8; 13];
        vm.read(src + 1, &mut c).unwrap();
        vm.read(dst + 0x800 + 3, &mut d).unwrap();
        assert_eq!(c, d);
        // Fill of 64 bytes.
        put(&vm, args, &[dst, dst + 48, dst + 64]);
        vm.write_u32(args + 24, 0xA5A5_5A5A).unwrap();
        vm.write_u32(args + 28, 6656).unwrap();
        run(&vm, RocrBlit::Fill, args, 6656).unwrap();
        for i in 0..16 {
            assert_eq!(vm.read_u32(dst + 4 * i), Ok(0xA5A5_5A5A));
        }
        assert_ne!(vm.read_u32(dst + 64), Ok(0xA5A5_5A5A));
    }

    #[test]
    fn unknown_code_is_not_recognised() {
        let vm = GpuVm::default();
        let mut mem = vec![0u8; 8192];
        vm.map(0x200_0000, 8192, mem.as_mut_ptr(), 1, crate::vm::Perms::ALL);
        assert_eq!(recognize(&vm, 0x200_0000, 256), None);
        // Entry outside the page table.
        assert_eq!(recognize(&vm, 0x200_0000, 1 << 20), None);
    }
}
