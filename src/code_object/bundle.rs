//! Clang offload bundles: what `hipcc --genco` writes (and what a HIP fat binary embeds) — one
//! file holding a code object per target, each under an ID such as
//! `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`.
//!
//! Layout (little endian): the 24-byte magic, the number of entries (u64), then per entry its
//! offset and size in the file (u64 each), the length of its ID (u64) and the ID's bytes.

use super::target::TargetId;
use crate::error::CodeObjectError;

/// The first bytes of an uncompressed offload bundle.
pub const BUNDLE_MAGIC: &[u8; 24] = b"__CLANG_OFFLOAD_BUNDLE__";
/// The first bytes of a compressed one (newer clang's `--compress`).
const COMPRESSED_MAGIC: &[u8; 4] = b"CCOB";

/// One entry of an [`OffloadBundle`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleEntry<'a> {
    /// The entry's ID, e.g. `hipv4-amdgcn-amd-amdhsa--gfx90a`.
    pub id: &'a str,
    /// The AMDGPU target the ID names (`None` for host and other entries).
    pub target: Option<TargetId>,
    /// The entry's bytes (a code object for AMDGPU entries; empty for the host stub).
    pub data: &'a [u8],
}

/// A parsed offload bundle, borrowing the file's bytes.
#[derive(Clone, Debug)]
pub struct OffloadBundle<'a> {
    entries: Vec<BundleEntry<'a>>,
}

/// Whether `bytes` start like an offload bundle (compressed or not).
pub fn is_bundle(bytes: &[u8]) -> bool {
    bytes.starts_with(BUNDLE_MAGIC) || bytes.starts_with(COMPRESSED_MAGIC)
}

fn read_u64(bytes: &[u8], at: usize) -> Result<u64, CodeObjectError> {
    bytes
        .get(at..at.saturating_add(8))
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| CodeObjectError::Bundle(format!("truncated header at byte {at}")))
}

/// The AMDGPU target of a bundle entry ID: `<kind>-amdgcn-amd-amdhsa-<environment>-<target ID>`.
fn entry_target(id: &str) -> Option<TargetId> {
    let at = id.find("amdgcn-amd-amdhsa-")?;
    TargetId::parse(&id[at..]).ok()
}

impl<'a> OffloadBundle<'a> {
    /// Parses a bundle; every entry must lie inside `bytes`.
    pub fn parse(bytes: &'a [u8]) -> Result<OffloadBundle<'a>, CodeObjectError> {
        if bytes.starts_with(COMPRESSED_MAGIC) {
            return Err(CodeObjectError::Bundle(
                "compressed offload bundles are not supported (unbundle it with \
                 clang-offload-bundler --unbundle first)"
                    .into(),
            ));
        }
        if !bytes.starts_with(BUNDLE_MAGIC) {
            return Err(CodeObjectError::Bundle("no bundle magic".into()));
        }
        let count = read_u64(bytes, 24)?;
        let mut at = 32usize;
        let mut entries = Vec::new();
        for index in 0..count {
            let offset = read_u64(bytes, at)?;
            let size = read_u64(bytes, at + 8)?;
            let id_len = read_u64(bytes, at + 16)?;
            at += 24;
            let id = usize::try_from(id_len)
                .ok()
                .and_then(|len| bytes.get(at..at.checked_add(len)?))
                .ok_or_else(|| {
                    CodeObjectError::Bundle(format!("entry {index}: ID runs past the file"))
                })?;
            at += id.len();
            let id = std::str::from_utf8(id)
                .map_err(|_| CodeObjectError::Bundle(format!("entry {index}: ID is not UTF-8")))?;
            let data = usize::try_from(offset)
                .ok()
                .zip(usize::try_from(size).ok())
                .and_then(|(o, s)| bytes.get(o..o.checked_add(s)?))
                .ok_or_else(|| {
                    CodeObjectError::Bundle(format!(
                        "entry {id:?}: {size} bytes at {offset} run past the file ({} bytes)",
                        bytes.len()
                    ))
                })?;
            entries.push(BundleEntry {
                id,
                target: entry_target(id),
                data,
            });
        }
        Ok(OffloadBundle { entries })
    }

    /// The entries, in file order.
    pub fn entries(&self) -> &[BundleEntry<'a>] {
        &self.entries
    }

    /// The code object for a GPU that is `gpu`: among the entries that run on it, the one
    /// that states the most features (an exact build beats a portable one, as ROCr chooses).
    pub fn select(&self, gpu: &TargetId) -> Result<&'a [u8], CodeObjectError> {
        self.entries
            .iter()
            .filter_map(|e| Some((e.target.as_ref()?, e.data)))
            .filter(|(t, _)| t.runs_on(gpu))
            .max_by_key(|(t, _)| t.specificity())
            .map(|(_, data)| data)
            .ok_or_else(|| CodeObjectError::NoBundleEntry {
                gpu: gpu.to_string(),
                entries: self.entries.iter().map(|e| e.id.to_owned()).collect(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut header = BUNDLE_MAGIC.to_vec();
        header.extend((entries.len() as u64).to_le_bytes());
        let table: usize = entries.iter().map(|(id, _)| 24 + id.len()).sum();
        let mut offset = header.len() + table;
        let mut body = Vec::new();
        for (id, data) in entries {
            header.extend((offset as u64).to_le_bytes());
            header.extend((data.len() as u64).to_le_bytes());
            header.extend((id.len() as u64).to_le_bytes());
            header.extend(id.as_bytes());
            body.extend_from_slice(data);
            offset += data.len();
        }
        header.extend(body);
        header
    }

    #[test]
    fn picks_the_most_specific_entry_that_runs() {
        let b = bundle(&[
            ("host-x86_64-unknown-linux-gnu", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"any"),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", b"off"),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", b"on"),
        ]);
        let parsed = OffloadBundle::parse(&b).unwrap();
        assert_eq!(parsed.entries().len(), 4);
        assert_eq!(parsed.entries()[0].target, None);
        let gpu = TargetId::parse("gfx90a:sramecc+:xnack-").unwrap();
        assert_eq!(parsed.select(&gpu).unwrap(), b"off");
        let other = TargetId::parse("gfx942:sramecc+:xnack-").unwrap();
        let err = parsed.select(&other).unwrap_err().to_string();
        assert!(err.contains("gfx942:sramecc+:xnack-"), "{err}");
        assert!(
            err.contains("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"),
            "{err}"
        );
    }

    #[test]
    fn entries_outside_the_file_are_errors() {
        let mut b = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", b"code")]);
        // The entry's size field: magic (24) + count (8) + offset (8).
        b[40] = 0xFF;
        assert!(matches!(
            OffloadBundle::parse(&b),
            Err(CodeObjectError::Bundle(_))
        ));
        let mut huge_count = bundle(&[]);
        huge_count[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(OffloadBundle::parse(&huge_count).is_err());
        assert!(OffloadBundle::parse(b"CCOB\x01\x00").is_err());
    }
}
