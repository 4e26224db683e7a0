//! A little emulated GPU for the tests: a [`PagedMemory`] with code objects loaded, buffers
//! allocated, and dispatches built the way a runtime builds them (AQL packet in memory,
//! kernarg buffer, queue, scratch) and run over all work-groups on a few threads.

use super::elf::CodeObject;
use kfd_emu_isa::{
    run_workgroup, CodeCache, DispatchSetup, KernelDescriptor, Memory, PagedMemory, RunControl,
    ScratchBacking, Stats, Target, WaveError,
};
use std::sync::Arc;

/// Where code objects are loaded.
const CODE_BASE: u64 = 0x7F00_0000_0000;
/// Where buffers start.
const HEAP_BASE: u64 = 0x10_0000_0000;

/// One dispatch's launch parameters.
#[derive(Clone, Debug)]
pub struct Launch {
    pub grid: [u32; 3],
    pub workgroup: [u16; 3],
    pub kernarg: Vec<u8>,
    pub dynamic_lds: u32,
    /// Scratch backing: `None` gives none even if the kernel needs it.
    pub scratch: Option<u64>,
    pub threads: usize,
    pub budget: u64,
}

impl Launch {
    pub fn new(grid: [u32; 3], workgroup: [u16; 3], kernarg: Vec<u8>) -> Launch {
        Launch {
            grid,
            workgroup,
            kernarg,
            dynamic_lds: 0,
            scratch: Some(4 << 20),
            threads: 2,
            budget: 1 << 32,
        }
    }

    pub fn linear(items: u32, wg: u16, kernarg: Vec<u8>) -> Launch {
        Launch::new([items, 1, 1], [wg, 1, 1], kernarg)
    }
}

/// Kernel arguments in C layout.
#[derive(Default)]
pub struct Args(pub Vec<u8>);

impl Args {
    pub fn new() -> Args {
        Args::default()
    }
    fn align(&mut self, a: usize) {
        while self.0.len() % a != 0 {
            self.0.push(0);
        }
    }
    pub fn ptr(mut self, p: u64) -> Args {
        self.align(8);
        self.0.extend_from_slice(&p.to_le_bytes());
        self
    }
    pub fn u32(mut self, v: u32) -> Args {
        self.align(4);
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn i32(self, v: i32) -> Args {
        self.u32(v as u32)
    }
    pub fn f32(self, v: f32) -> Args {
        self.u32(v.to_bits())
    }
    pub fn done(self) -> Vec<u8> {
        self.0
    }
}

pub struct Gpu {
    pub target: Target,
    pub mem: PagedMemory,
    pub code: Arc<CodeCache>,
    next: u64,
    code_next: u64,
}

impl Gpu {
    pub fn new(target: Target) -> Gpu {
        Gpu {
            target,
            mem: PagedMemory::new(),
            code: Arc::new(CodeCache::new(target)),
            next: HEAP_BASE,
            code_next: CODE_BASE,
        }
    }

    /// Loads a code object's segments; returns its load base.
    pub fn load(&mut self, co: &CodeObject) -> u64 {
        let base = self.code_next;
        let mut end = 0;
        for (vaddr, bytes, memsz) in &co.segments {
            if *memsz == 0 {
                continue;
            }
            self.mem.map(base + vaddr, *memsz);
            self.mem.write(base + vaddr, bytes).expect("segment");
            end = end.max(vaddr + memsz);
        }
        self.code_next = (base + end + 0xFFFF) & !0xFFFF;
        base
    }

    /// Allocates `bytes` (zeroed, page-aligned, with an unmapped page after it).
    pub fn alloc(&mut self, bytes: u64) -> u64 {
        let va = self.next;
        self.mem.map(va, bytes.max(1));
        self.next = (va + bytes.max(1) + 4096 + 0xFFF) & !0xFFF;
        va
    }

    /// A kernel object of `desc` with `code` at its entry, 256 bytes on (the descriptor's entry
    /// offset is set to that), in at least 8 KiB of zeroed memory: the address to run.
    pub fn load_program(&mut self, desc: &KernelDescriptor, code: &[u32]) -> u64 {
        let ko = self.alloc((256 + 4 * code.len() as u64).max(8192));
        let desc = KernelDescriptor {
            kernel_code_entry_byte_offset: 256,
            ..*desc
        };
        self.mem.write(ko, &desc.to_bytes()).expect("descriptor");
        let bytes: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.mem.write(ko + 256, &bytes).expect("code");
        ko
    }

    pub fn upload(&mut self, data: &[u8]) -> u64 {
        let va = self.alloc(data.len() as u64);
        self.mem.write(va, data).expect("upload");
        va
    }

    pub fn download(&self, va: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0; len];
        self.mem.read(va, &mut b).expect("download");
        b
    }

    pub fn descriptor(&self, kernel_object: u64) -> KernelDescriptor {
        let mut b = [0u8; 64];
        self.mem.read(kernel_object, &mut b).expect("descriptor");
        KernelDescriptor::from_bytes(&b)
    }

    /// Builds the dispatch (packet, kernarg, queue and scratch in memory) without running it.
    pub fn setup(&mut self, kernel_object: u64, l: &Launch) -> DispatchSetup {
        let dims = if l.grid[2] > 1 || l.workgroup[2] > 1 {
            3
        } else if l.grid[1] > 1 || l.workgroup[1] > 1 {
            2
        } else {
            1
        };
        let desc = self.descriptor(kernel_object);
        let kernarg_len = (desc.kernarg_size as usize).max(l.kernarg.len()).max(8);
        let mut ka = l.kernarg.clone();
        ka.resize(kernarg_len, 0);
        let kernarg = self.upload(&ka);
        let mut packet = [0u8; 64];
        packet[0..2].copy_from_slice(&(2u16 | 1 << 8).to_le_bytes());
        packet[2..4].copy_from_slice(&(dims as u16).to_le_bytes());
        for d in 0..3 {
            packet[4 + 2 * d..6 + 2 * d].copy_from_slice(&l.workgroup[d].to_le_bytes());
            packet[12 + 4 * d..16 + 4 * d].copy_from_slice(&l.grid[d].to_le_bytes());
        }
        packet[24..28].copy_from_slice(&desc.private_segment_fixed_size.to_le_bytes());
        packet[28..32]
            .copy_from_slice(&(desc.group_segment_fixed_size + l.dynamic_lds).to_le_bytes());
        packet[32..40].copy_from_slice(&kernel_object.to_le_bytes());
        packet[40..48].copy_from_slice(&kernarg.to_le_bytes());
        let packet_va = self.upload(&packet);
        let queue = self.alloc(256);
        let mut s = DispatchSetup::from_aql_packet(
            self.target,
            &packet,
            packet_va,
            desc,
            self.code.clone(),
        );
        s.queue_address = queue;
        // The test GPU's queue holds global wave sync, fresh (every count 0) per dispatch.
        s.gws = Some(Default::default());
        s.scratch = l.scratch.map(|size| ScratchBacking {
            base: self.alloc(size),
            size,
            ..ScratchBacking::default()
        });
        s
    }

    /// Runs every work-group of a dispatch on `l.threads` threads.
    pub fn run(&mut self, kernel_object: u64, l: &Launch) -> Result<Stats, WaveError> {
        let setup = self.setup(kernel_object, l);
        let groups: Vec<[u32; 3]> = setup.workgroup_ids().collect();
        let threads = l.threads.max(1);
        let mem = &self.mem;
        let results: Vec<Result<Stats, WaveError>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let groups = &groups;
                    let setup = &setup;
                    s.spawn(move || {
                        let control = RunControl {
                            cancel: None,
                            max_wave_instructions: l.budget,
                            scratch_slot: t as u32,
                        };
                        let mut total = Stats::default();
                        for g in groups.iter().skip(t).step_by(threads) {
                            let st = run_workgroup(setup, *g, mem, &control)?;
                            total.wave_instructions += st.wave_instructions;
                            total.waves += st.waves;
                            total.barriers += st.barriers;
                        }
                        Ok(total)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("thread"))
                .collect()
        });
        let mut total = Stats::default();
        for r in results {
            let st = r?;
            total.wave_instructions += st.wave_instructions;
            total.waves += st.waves;
            total.barriers += st.barriers;
        }
        Ok(total)
    }
}

pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
pub fn i32_bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
pub fn u32_bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
pub fn to_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
pub fn to_i32(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
pub fn to_u32(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
pub fn to_u64(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect()
}
pub fn to_f64(b: &[u8]) -> Vec<f64> {
    to_u64(b).into_iter().map(f64::from_bits).collect()
}

/// A deterministic pseudo-random sequence (xorshift) for test data.
pub struct Rng(pub u64);
impl Rng {
    pub fn next_u32(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) as u32
    }
    pub fn f32(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * (self.next_u32() as f32 / u32::MAX as f32)
    }
}

/// A loaded copy of the test kernels for `target`.
pub fn kernels(target: Target) -> (Gpu, u64, CodeObject) {
    let name = match target {
        Target::Gfx90a => "kernels-gfx90a.co",
        Target::Gfx942 => "kernels-gfx942.co",
        Target::Gfx1100 => "kernels-gfx1100.co",
    };
    let co = CodeObject::load(&super::elf::kernels_dir().join(name));
    let mut gpu = Gpu::new(target);
    let base = gpu.load(&co);
    (gpu, base, co)
}

/// Kernel arguments of a code-object-v5 kernel: the explicit ones followed by the hidden ones
/// the runtime fills (block counts, group sizes, remainders, grid dimensions), at the offsets
/// listed in the `.args` file regen.sh extracts from the metadata note.
pub fn kernarg_v5(
    layout_file: &str,
    kernel: &str,
    explicit: &[u8],
    grid: [u32; 3],
    wg: [u16; 3],
) -> Vec<u8> {
    let path = super::elf::kernels_dir().join(layout_file);
    let text = std::fs::read_to_string(path).expect("kernarg layout");
    let mut out = explicit.to_vec();
    let dims = if grid[2] > 1 {
        3u32
    } else if grid[1] > 1 {
        2
    } else {
        1
    };
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [name, off, size, kind] = f[..] else {
            continue;
        };
        if name != kernel {
            continue;
        }
        let (off, size): (usize, usize) = (off.parse().unwrap(), size.parse().unwrap());
        let axis = |k: &str| match k.chars().last() {
            Some('x') => 0,
            Some('y') => 1,
            _ => 2,
        };
        let value: u64 = match kind {
            k if k.starts_with("hidden_block_count_") => {
                let d = axis(k);
                u64::from(grid[d].div_ceil(u32::from(wg[d])))
            }
            k if k.starts_with("hidden_group_size_") => u64::from(wg[axis(k)]),
            k if k.starts_with("hidden_remainder_") => {
                let d = axis(k);
                u64::from(grid[d] % u32::from(wg[d]))
            }
            "hidden_grid_dims" => u64::from(dims),
            _ => continue,
        };
        if out.len() < off + size {
            out.resize(off + size, 0);
        }
        out[off..off + size].copy_from_slice(&value.to_le_bytes()[..size]);
    }
    out
}
