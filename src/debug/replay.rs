//! Replaying a capture (`KFDRT_CAPTURE`, see `docs/debugging.md`): each captured dispatch is run again on a
//! device — its code object loaded, its buffers allocated anew and filled with what they held
//! before the dispatch, its pointer arguments patched to the new buffers — and every buffer it
//! wrote is compared byte for byte with the captured result. The first dispatch that differs
//! is named with the buffer and the first differing byte. `kfdrt-replay DIR` is this, as a
//! program.

use super::capture::{read_manifest, MANIFEST_VERSION};
use crate::error::{Error, Result};
use crate::{AqlQueueOptions, Dispatch, Kfd, MemoryKind};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::time::Duration;

/// The first difference a replay found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The submission's index in the capture.
    pub submission: u64,
    /// What it was: the kernel's name, or `copy`.
    pub what: String,
    /// Which buffer differs: `argument at offset N` of a dispatch, or a copy's `destination`.
    pub buffer: String,
    /// The first differing byte offset in that buffer.
    pub offset: usize,
    /// What the capture recorded there and what the replay produced (up to 16 bytes each).
    pub expected: Vec<u8>,
    /// What the replay produced.
    pub actual: Vec<u8>,
}

/// What a replay did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplayReport {
    /// Submissions (dispatches and copies) run and compared.
    pub replayed: usize,
    /// Submissions the capture marked as not replayable, with why.
    pub skipped: Vec<(u64, String)>,
    /// The first submission whose results differ, if any (the replay stops there).
    pub mismatch: Option<Mismatch>,
}

impl ReplayReport {
    /// Whether every replayed dispatch wrote what the capture recorded.
    pub fn identical(&self) -> bool {
        self.mismatch.is_none()
    }
}

impl fmt::Display for ReplayReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} submissions replayed", self.replayed)?;
        if !self.skipped.is_empty() {
            write!(f, ", {} not replayable", self.skipped.len())?;
            for (i, why) in &self.skipped {
                write!(f, "\n  submission {i}: {why}")?;
            }
        }
        match &self.mismatch {
            None => write!(f, "; every result byte-identical to the capture"),
            Some(m) => write!(
                f,
                "\nFIRST DIFFERENCE: submission {} ({}), {}, byte {:#x}: captured {:02x?}, \
                 replayed {:02x?}",
                m.submission, m.what, m.buffer, m.offset, m.expected, m.actual
            ),
        }
    }
}

fn bad(what: impl fmt::Display) -> Error {
    Error::BadCapture {
        reason: what.to_string(),
    }
}

fn hex(v: &Value) -> Result<u64> {
    let s = v
        .as_str()
        .ok_or_else(|| bad("an address is not a string"))?;
    u64::from_str_radix(s.trim_start_matches("0x"), 16)
        .map_err(|_| bad(format!("{s:?} is not an address")))
}

fn read(dir: &Path, v: &Value) -> Result<Vec<u8>> {
    let name = v.as_str().ok_or_else(|| bad("a file name is missing"))?;
    if name.contains('/') || name.contains("..") {
        return Err(bad(format!("{name:?} is not a file of the capture")));
    }
    std::fs::read(dir.join(name)).map_err(|e| bad(format!("{name}: {e}")))
}

/// Replays the capture in `dir` on `kfd`; stops at the first dispatch whose results differ.
pub fn replay(kfd: &Kfd, dir: &Path) -> Result<ReplayReport> {
    let manifest = read_manifest(dir).map_err(|e| bad(format!("{}: {e}", dir.display())))?;
    if manifest["version"].as_u64() != Some(MANIFEST_VERSION) {
        return Err(bad(format!("manifest version {}", manifest["version"])));
    }
    let submissions = manifest["submissions"]
        .as_array()
        .ok_or_else(|| bad("no submission list"))?;
    let mut report = ReplayReport::default();
    let mut code_objects = HashMap::new();
    let mut queues = HashMap::new();
    for d in submissions {
        let index = d["index"].as_u64().unwrap_or(0);
        if d["replayable"] != Value::Bool(true) {
            report
                .skipped
                .push((index, d["not_replayable_because"].to_string()));
            continue;
        }
        let gpu_index = d["gpu"].as_u64().unwrap_or(0) as usize;
        let gpu = kfd
            .gpu(gpu_index)
            .or_else(|| kfd.gpu(0))
            .ok_or_else(|| bad("no GPU"))?;
        if d["kind"] == "copy" {
            let upload = |part: &Value| -> Result<crate::Buffer> {
                let bytes = read(dir, &part["input"])?;
                let size = part["size"].as_u64().unwrap_or(bytes.len() as u64).max(1);
                let b = gpu.alloc(size, MemoryKind::GttCoherent)?;
                b.write(0, &bytes)?;
                Ok(b)
            };
            let (src, dst) = (upload(&d["src"])?, upload(&d["dst"])?);
            gpu.copy_engine()?
                .copy(
                    &dst,
                    d["dst"]["offset"].as_u64().unwrap_or(0),
                    &src,
                    d["src"]["offset"].as_u64().unwrap_or(0),
                    d["bytes"].as_u64().unwrap_or(0),
                    &[],
                )?
                .wait(Some(Duration::from_secs(600)))?;
            report.replayed += 1;
            let expected = read(dir, &d["dst"]["output"])?;
            let buffer = "destination".to_string();
            if let Some(m) = differ(index, "copy", buffer, &dst.to_vec()?, &expected) {
                report.mismatch = Some(m);
                return Ok(report);
            }
            continue;
        }
        let co_name = d["code_object"].as_str().unwrap_or_default().to_string();
        let co = match code_objects.entry((gpu_index, co_name)) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let bytes = read(dir, &d["code_object"])?;
                e.insert(gpu.load_code_object(&bytes)?)
            }
        };
        let kernel_name = d["kernel"].as_str().unwrap_or_default().to_string();
        let kernel = co.kernel(&kernel_name)?;
        let mut kernargs = read(dir, &d["kernargs"])?;
        let mut outputs = Vec::new();
        for a in d["pointer_args"].as_array().into_iter().flatten() {
            let input = read(dir, &a["input"])?;
            let buf = gpu.alloc(input.len().max(1) as u64, MemoryKind::GttCoherent)?;
            buf.write(0, &input)?;
            let (old_base, old_ptr) = (hex(&a["buffer"])?, hex(&a["pointer"])?);
            let new_ptr = buf.gpu_address() + (old_ptr - old_base);
            let at = a["offset"].as_u64().unwrap_or(0) as usize;
            kernargs
                .get_mut(at..at + 8)
                .ok_or_else(|| bad("a pointer argument past the arguments"))?
                .copy_from_slice(&new_ptr.to_le_bytes());
            outputs.push((at as u64, buf, read(dir, &a["output"])?));
        }
        let grid = triple(&d["grid"]);
        let wg = triple(&d["workgroup"]);
        let group = d["group_segment_size"].as_u64().unwrap_or(0) as u32;
        let queue = match queues.entry(gpu_index) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(gpu.create_aql_queue(AqlQueueOptions::default())?)
            }
        };
        let dispatch = Dispatch::new(
            &kernel,
            [grid[0], grid[1], grid[2]],
            [wg[0] as u16, wg[1] as u16, wg[2] as u16],
        )
        .with_dynamic_lds(group.saturating_sub(kernel.group_segment_size()));
        // SAFETY: the arguments point into `outputs`' buffers, which live until the wait below
        // has seen the dispatch complete.
        let dispatch = unsafe { dispatch.with_raw_args(&kernargs) };
        queue
            .dispatch(&dispatch)?
            .wait(Some(Duration::from_secs(600)))?;
        report.replayed += 1;
        for (offset, buf, expected) in outputs {
            let buffer = format!("buffer of the argument at offset {offset}");
            if let Some(m) = differ(index, &kernel_name, buffer, &buf.to_vec()?, &expected) {
                report.mismatch = Some(m);
                return Ok(report);
            }
        }
    }
    Ok(report)
}

/// The first difference between what a replay produced and what the capture recorded.
fn differ(
    submission: u64,
    what: &str,
    buffer: String,
    actual: &[u8],
    expected: &[u8],
) -> Option<Mismatch> {
    let at = actual
        .iter()
        .zip(expected)
        .position(|(a, e)| a != e)
        .or((actual.len() != expected.len()).then_some(actual.len().min(expected.len())))?;
    let window = |v: &[u8]| v[at.min(v.len())..(at + 16).min(v.len())].to_vec();
    Some(Mismatch {
        submission,
        what: what.to_string(),
        buffer,
        offset: at,
        expected: window(expected),
        actual: window(actual),
    })
}

fn triple(v: &Value) -> [u32; 3] {
    let mut t = [1u32; 3];
    for (i, x) in v.as_array().into_iter().flatten().take(3).enumerate() {
        t[i] = x.as_u64().unwrap_or(1) as u32;
    }
    t
}
