//! `KFDRT_CAPTURE=dir`: record every kernel dispatch and copy so that `kfdrt-replay` can run
//! them again elsewhere (on kfd-emu, or on a GPU) and compare what they write.
//!
//! For each dispatch the capture keeps the code object it came from (each one once, named by
//! a hash of its bytes), the kernel's name, the launch geometry, the kernel-argument bytes, and
//! for every global-buffer argument (by the kernel's metadata) the buffer's contents before the
//! dispatch and after its completion. Buffers are known by address and size, so a replay can
//! allocate them anew and patch the pointer arguments. `manifest.json` lists the dispatches in
//! order; the blobs are files beside it. Capturing serializes submissions (each waits for its
//! completion), so every dispatch's inputs are recorded as it found them.
//!
//! Not replayable (each such dispatch says so in the manifest, `"replayable": false`, with
//! why): kernels bound to host functions (kfd-emu's emulated kernels) and other kernels not
//! loaded from a code object, kernels with arguments but no metadata naming the pointers,
//! pointer arguments outside the device's buffers, and buffers the CPU cannot read
//! (device-local VRAM). Copies are recorded as copies (source, destination before and
//! after), not as the kernels or packets that run them; fills and raw PM4/SDMA packets are
//! not recorded.

use super::address_map::{AddressMap, TrackedMemory};
use super::registry::Registry;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

/// The manifest's format version.
pub const MANIFEST_VERSION: u64 = 1;

/// A dispatch waiting for its completion.
struct Pending {
    entry: Value,
    outputs: Vec<(Box<dyn TrackedMemory>, String)>,
}

/// The capture being written.
pub(crate) struct Capture {
    dir: PathBuf,
    /// Loaded code objects: base address -> (size, file name).
    code_objects: Vec<(u64, u64, String)>,
    pending: HashMap<(u32, u64), Pending>,
    done: Vec<Value>,
    next: usize,
    error: Option<String>,
}

fn hash(bytes: &[u8]) -> u64 {
    // FNV-1a: names files, not a security boundary.
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

impl Capture {
    pub(crate) fn new(dir: PathBuf) -> Capture {
        let error = std::fs::create_dir_all(&dir)
            .err()
            .map(|e| format!("cannot create {}: {e}", dir.display()));
        Capture {
            dir,
            code_objects: Vec::new(),
            pending: HashMap::new(),
            done: Vec::new(),
            next: 0,
            error,
        }
    }

    fn blob(&mut self, name: &str, bytes: &[u8]) -> String {
        if let Err(e) = std::fs::write(self.dir.join(name), bytes) {
            self.error.get_or_insert(format!("writing {name}: {e}"));
        }
        name.to_string()
    }

    /// A code object was loaded at `base` (`size` bytes of GPU memory) from `elf`.
    pub(crate) fn code_object(&mut self, base: u64, size: u64, elf: &[u8]) {
        let name = format!("co-{:016x}.co", hash(elf));
        if !self.dir.join(&name).exists() {
            self.blob(&name, elf);
        }
        self.code_objects.push((base, size, name));
    }

    /// A dispatch packet of queue `queue_id` (GPU index `gpu`) at index `index` is about to be
    /// published; `buffers` finds the device's buffers by address.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn dispatch<S>(
        &mut self,
        queue_id: u32,
        gpu: usize,
        index: u64,
        k: &aql::KernelDispatchPacket,
        registry: &Registry<S>,
        buffers: &AddressMap,
    ) {
        let info = registry.kernel_info(k.kernel_object);
        if info
            .as_ref()
            .is_some_and(|i| i.name.starts_with("kfdrt_blit_"))
        {
            // kfdrt's own copy kernels: the copy is captured as a copy (see `copy`).
            return;
        }
        let n = self.next;
        self.next += 1;
        let code_object = self
            .code_objects
            .iter()
            .find(|(base, size, _)| (*base..base + size).contains(&k.kernel_object))
            .map(|(_, _, name)| name.clone());
        let mut why_not = Vec::new();
        if code_object.is_none() {
            why_not.push("the kernel is not from a code object loaded while capturing");
        }
        if info
            .as_ref()
            .is_some_and(|i| !i.has_metadata && i.kernarg_size > 0)
        {
            why_not.push("the kernel has no metadata saying which arguments are pointers");
        }
        let (name, kernarg_size, pointers) = match &info {
            Some(i) => (i.name.clone(), i.kernarg_size, i.pointer_args.clone()),
            None => {
                why_not.push("the kernel is unknown to kfdrt");
                (format!("{:#x}", k.kernel_object), 0, Vec::new())
            }
        };
        let kernargs = buffers
            .buffer_at(k.kernarg_address)
            .and_then(|b| {
                let mut v = vec![0u8; kernarg_size as usize];
                b.read(k.kernarg_address - b.gpu_address(), &mut v).ok()?;
                Some(v)
            })
            .unwrap_or_default();
        let kernargs_file = self.blob(&format!("d{n}-kernargs.bin"), &kernargs);
        let mut args = Vec::new();
        let mut outputs = Vec::new();
        for (i, &offset) in pointers.iter().enumerate() {
            let at = offset as usize;
            let Some(p) = kernargs.get(at..at + 8) else {
                continue;
            };
            let addr = u64::from_le_bytes(p.try_into().unwrap_or([0; 8]));
            if addr == 0 {
                continue;
            }
            let Some(buf) = buffers.buffer_at(addr) else {
                why_not.push("a pointer argument is outside the device's buffers");
                continue;
            };
            let Ok(input) = buf.to_vec() else {
                why_not.push("a pointer argument's buffer is not readable by the CPU");
                continue;
            };
            let input_file = self.blob(&format!("d{n}-arg{i}-in.bin"), &input);
            let output_file = format!("d{n}-arg{i}-out.bin");
            args.push(json!({
                "offset": offset,
                "buffer": format!("{:#x}", buf.gpu_address()),
                "pointer": format!("{addr:#x}"),
                "size": buf.size(),
                "input": input_file,
                "output": output_file,
            }));
            outputs.push((buf, output_file));
        }
        let entry = json!({
            "index": n,
            "kind": "dispatch",
            "queue": queue_id,
            "gpu": gpu,
            "packet": index,
            "kernel": name,
            "code_object": code_object,
            "grid": k.grid_size,
            "workgroup": k.workgroup_size,
            "group_segment_size": k.group_segment_size,
            "private_segment_size": k.private_segment_size,
            "kernargs": kernargs_file,
            "pointer_args": args,
            "replayable": why_not.is_empty(),
            "not_replayable_because": why_not,
        });
        self.pending
            .insert((queue_id, index), Pending { entry, outputs });
    }

    /// A copy of `bytes` from `src` to `dst` (buffer, offset) completed on GPU index `gpu`;
    /// `before` holds both buffers' contents before it (`None`: not readable by the CPU).
    pub(crate) fn copy(
        &mut self,
        gpu: usize,
        dst: (&dyn TrackedMemory, u64),
        src: (&dyn TrackedMemory, u64),
        bytes: u64,
        before: (Option<Vec<u8>>, Option<Vec<u8>>),
    ) {
        let n = self.next;
        self.next += 1;
        let after = dst.0.to_vec().ok();
        let entry = match (before, after) {
            ((Some(src_in), Some(dst_in)), Some(dst_out)) => json!({
                "index": n,
                "kind": "copy",
                "gpu": gpu,
                "bytes": bytes,
                "src": {"offset": src.1, "size": src.0.size(), "input": self.blob(&format!("c{n}-src.bin"), &src_in)},
                "dst": {"offset": dst.1, "size": dst.0.size(), "input": self.blob(&format!("c{n}-dst-in.bin"), &dst_in), "output": self.blob(&format!("c{n}-dst-out.bin"), &dst_out)},
                "replayable": true,
                "not_replayable_because": [],
            }),
            _ => json!({
                "index": n, "kind": "copy", "gpu": gpu, "bytes": bytes, "replayable": false,
                "not_replayable_because": ["a buffer of the copy is not readable by the CPU"],
            }),
        };
        self.done.push(entry);
    }

    /// Records the results of every pending dispatch of `queue_id` up to `last`.
    pub(crate) fn complete_through(&mut self, queue_id: u32, last: u64) {
        let keys: Vec<(u32, u64)> = self
            .pending
            .keys()
            .copied()
            .filter(|&(q, i)| q == queue_id && i <= last)
            .collect();
        let mut finished: Vec<Pending> =
            keys.iter().filter_map(|k| self.pending.remove(k)).collect();
        finished.sort_by_key(|p| p.entry["index"].as_u64());
        for mut p in finished {
            for (buf, file) in std::mem::take(&mut p.outputs) {
                match buf.to_vec() {
                    Ok(bytes) => {
                        self.blob(&file, &bytes);
                    }
                    Err(e) => {
                        self.error.get_or_insert(format!("reading a result: {e}"));
                    }
                }
            }
            self.done.push(p.entry);
        }
    }

    /// Writes the manifest (dispatches whose completion was never seen are left out).
    pub(crate) fn write(&mut self) -> io::Result<()> {
        self.done.sort_by_key(|e| e["index"].as_u64());
        let manifest = json!({
            "version": MANIFEST_VERSION,
            "submissions": self.done,
            "error": self.error,
        });
        std::fs::write(
            self.dir.join("manifest.json"),
            serde_json::to_string_pretty(&manifest)?,
        )?;
        log::info!(
            "kfdrt: {} dispatches captured in {}",
            self.done.len(),
            self.dir.display()
        );
        Ok(())
    }
}

/// The manifest of the capture in `dir`.
pub(crate) fn read_manifest(dir: &Path) -> io::Result<Value> {
    let text = std::fs::read_to_string(dir.join("manifest.json"))?;
    serde_json::from_str(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}
