//! Reading the `NT_AMDGPU_METADATA` note's msgpack document into [`CodeObjectMetadata`].
//!
//! Keys follow LLVM's AMDGPUUsage ("Code Object V3/V4/V5 Metadata"). Keys kfdrt does not use are
//! ignored; a key that is required, or present with the wrong type, is an error naming the
//! kernel, the argument and the key.

use super::metadata::{
    derived_align, AddressSpace, ArgKind, CodeObjectMetadata, CodeObjectVersion, KernelArg,
    KernelMetadata,
};
use super::target::TargetId;
use crate::error::CodeObjectError;
use rmpv::ValueRef;

/// Name and type of the metadata note.
pub(crate) const NOTE_NAME: &[u8] = b"AMDGPU";
pub(crate) const NT_AMDGPU_METADATA: u32 = 32;

/// Nesting the metadata never needs more than (map, array of kernels, kernel map, args array,
/// arg map, value); a little headroom, and a hard stop for hostile documents.
const MAX_DEPTH: usize = 16;

fn err(msg: String) -> CodeObjectError {
    CodeObjectError::Metadata(msg)
}

/// A msgpack map with the context to name in errors.
struct Map<'v, 'a> {
    entries: &'v [(ValueRef<'a>, ValueRef<'a>)],
    context: String,
}

impl<'v, 'a> Map<'v, 'a> {
    fn new(value: &'v ValueRef<'a>, context: String) -> Result<Self, CodeObjectError> {
        match value {
            ValueRef::Map(entries) => Ok(Map { entries, context }),
            _ => Err(err(format!("{context} is not a map"))),
        }
    }

    fn get(&self, key: &str) -> Option<&'v ValueRef<'a>> {
        self.entries
            .iter()
            .find(|(k, _)| matches!(k, ValueRef::String(s) if s.as_str() == Some(key)))
            .map(|(_, v)| v)
    }

    fn wrong(&self, key: &str, what: &str) -> CodeObjectError {
        err(format!("{}: {key} is not {what}", self.context))
    }

    fn missing(&self, key: &str) -> CodeObjectError {
        err(format!("{}: required key {key} is missing", self.context))
    }

    fn u32(&self, key: &str) -> Result<Option<u32>, CodeObjectError> {
        self.get(key)
            .map(|v| {
                v.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| self.wrong(key, "an unsigned 32-bit integer"))
            })
            .transpose()
    }

    fn req_u32(&self, key: &str) -> Result<u32, CodeObjectError> {
        self.u32(key)?.ok_or_else(|| self.missing(key))
    }

    fn str(&self, key: &str) -> Result<Option<&'v str>, CodeObjectError> {
        self.get(key)
            .map(|v| match v {
                ValueRef::String(s) => s.as_str().ok_or_else(|| self.wrong(key, "UTF-8")),
                _ => Err(self.wrong(key, "a string")),
            })
            .transpose()
    }

    fn req_str(&self, key: &str) -> Result<&'v str, CodeObjectError> {
        self.str(key)?.ok_or_else(|| self.missing(key))
    }

    /// Booleans are written as msgpack booleans, some by older tools as 0/1.
    fn bool(&self, key: &str) -> Result<bool, CodeObjectError> {
        match self.get(key) {
            None => Ok(false),
            Some(ValueRef::Boolean(b)) => Ok(*b),
            Some(v) => match v.as_u64() {
                Some(n @ (0 | 1)) => Ok(n == 1),
                _ => Err(self.wrong(key, "a boolean")),
            },
        }
    }

    fn array(&self, key: &str) -> Result<Option<&'v [ValueRef<'a>]>, CodeObjectError> {
        self.get(key)
            .map(|v| match v {
                ValueRef::Array(items) => Ok(items.as_slice()),
                _ => Err(self.wrong(key, "an array")),
            })
            .transpose()
    }

    fn u32s(&self, key: &str) -> Result<Option<Vec<u32>>, CodeObjectError> {
        self.array(key)?
            .map(|items| {
                items
                    .iter()
                    .map(|v| v.as_u64().and_then(|n| u32::try_from(n).ok()))
                    .collect::<Option<Vec<u32>>>()
                    .ok_or_else(|| self.wrong(key, "an array of unsigned integers"))
            })
            .transpose()
    }
}

/// Parses the note's descriptor (the msgpack document).
pub(crate) fn parse(desc: &[u8]) -> Result<CodeObjectMetadata, CodeObjectError> {
    let mut reader = desc;
    let root = rmpv::decode::read_value_ref_with_max_depth(&mut reader, MAX_DEPTH)
        .map_err(|e| err(format!("not a msgpack document ({e})")))?;
    let root = Map::new(&root, "the metadata".into())?;
    let metadata_version = match root.u32s("amdhsa.version")?.as_deref() {
        Some(&[major, minor]) => (major, minor),
        Some(_) => return Err(err("amdhsa.version is not [major, minor]".into())),
        None => return Err(root.missing("amdhsa.version")),
    };
    let version = match metadata_version {
        (1, 0) => CodeObjectVersion::V3,
        (1, 1) => CodeObjectVersion::V4,
        (1, 2) => CodeObjectVersion::V5,
        (major, minor) => {
            return Err(err(format!(
                "amdhsa.version {major}.{minor} is not one kfdrt reads (1.0 to 1.2: code \
                 object v3 to v5)"
            )))
        }
    };
    let target = root
        .str("amdhsa.target")?
        .map(TargetId::parse)
        .transpose()?;
    let printf = root
        .array("amdhsa.printf")?
        .unwrap_or_default()
        .iter()
        .map(|v| match v {
            ValueRef::String(s) => s.as_str().map(str::to_owned),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| err("amdhsa.printf is not an array of strings".into()))?;
    let mut kernels: Vec<KernelMetadata> = Vec::new();
    for (i, k) in root
        .array("amdhsa.kernels")?
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let kernel = parse_kernel(k, i)?;
        if let Some(other) = kernels
            .iter()
            .find(|o| o.name == kernel.name || o.symbol == kernel.symbol)
        {
            return Err(err(format!(
                "kernels {:?} and {:?} share a name or a descriptor symbol",
                other.name, kernel.name
            )));
        }
        kernels.push(kernel);
    }
    Ok(CodeObjectMetadata {
        version,
        metadata_version,
        target,
        kernels,
        printf,
    })
}

fn parse_kernel(value: &ValueRef<'_>, index: usize) -> Result<KernelMetadata, CodeObjectError> {
    let map = Map::new(value, format!("kernel {index}"))?;
    let name = map.req_str(".name")?.to_owned();
    let map = Map {
        context: format!("kernel {name:?}"),
        ..map
    };
    let reqd_workgroup_size = match map.u32s(".reqd_workgroup_size")?.as_deref() {
        None => None,
        Some(&[x, y, z]) => Some([x, y, z]),
        Some(_) => return Err(map.wrong(".reqd_workgroup_size", "three integers")),
    };
    let mut args = Vec::new();
    for (i, a) in map.array(".args")?.unwrap_or_default().iter().enumerate() {
        args.push(parse_arg(a, &format!("kernel {name:?} argument {i}"))?);
    }
    let kernel = KernelMetadata {
        symbol: map.req_str(".symbol")?.to_owned(),
        kernarg_segment_size: map.req_u32(".kernarg_segment_size")?,
        kernarg_segment_align: map.req_u32(".kernarg_segment_align")?,
        group_segment_fixed_size: map.req_u32(".group_segment_fixed_size")?,
        private_segment_fixed_size: map.req_u32(".private_segment_fixed_size")?,
        uses_dynamic_stack: map.bool(".uses_dynamic_stack")?,
        wavefront_size: map.req_u32(".wavefront_size")?,
        sgpr_count: map.req_u32(".sgpr_count")?,
        vgpr_count: map.req_u32(".vgpr_count")?,
        agpr_count: map.u32(".agpr_count")?.unwrap_or(0),
        sgpr_spill_count: map.u32(".sgpr_spill_count")?.unwrap_or(0),
        vgpr_spill_count: map.u32(".vgpr_spill_count")?.unwrap_or(0),
        max_flat_workgroup_size: map.req_u32(".max_flat_workgroup_size")?,
        reqd_workgroup_size,
        language: map.str(".language")?.map(str::to_owned),
        name,
        args,
    };
    check_layout(&kernel)?;
    Ok(kernel)
}

fn parse_arg(value: &ValueRef<'_>, context: &str) -> Result<KernelArg, CodeObjectError> {
    let map = Map::new(value, context.to_owned())?;
    let offset = map.req_u32(".offset")?;
    let size = map.req_u32(".size")?;
    let kind = ArgKind::from_name(map.req_str(".value_kind")?);
    Ok(KernelArg {
        name: map.str(".name")?.map(str::to_owned),
        type_name: map.str(".type_name")?.map(str::to_owned),
        offset,
        size,
        align: derived_align(offset, size),
        address_space: map.str(".address_space")?.map(AddressSpace::from_name),
        pointee_align: map.u32(".pointee_align")?,
        access: match map.str(".actual_access")? {
            Some(a) => Some(a.to_owned()),
            None => map.str(".access")?.map(str::to_owned),
        },
        is_const: map.bool(".is_const")?,
        is_restrict: map.bool(".is_restrict")?,
        is_volatile: map.bool(".is_volatile")?,
        kind,
    })
}

/// Largest kernarg segment kfdrt accepts: far above what compilers emit (HIP allows 4 KiB of
/// arguments), and small enough that a corrupt size cannot make argument building allocate
/// gigabytes.
pub(crate) const MAX_KERNARG_SEGMENT: u32 = 1 << 20;

/// The arguments must fit the kernarg segment without overlapping, hidden ones must have the
/// ABI's sizes, and the segment's alignment must be a power of two: the argument builder writes
/// at these offsets, so a hostile note must not make it write out of place.
fn check_layout(k: &KernelMetadata) -> Result<(), CodeObjectError> {
    let at = |a: &KernelArg| format!("kernel {:?} argument {} ({})", k.name, a.offset, a.kind);
    if !k.kernarg_segment_align.is_power_of_two() {
        return Err(err(format!(
            "kernel {:?}: .kernarg_segment_align {} is not a power of two",
            k.name, k.kernarg_segment_align
        )));
    }
    if k.kernarg_segment_size > MAX_KERNARG_SEGMENT {
        return Err(err(format!(
            "kernel {:?}: .kernarg_segment_size {} exceeds kfdrt's limit of {MAX_KERNARG_SEGMENT}",
            k.name, k.kernarg_segment_size
        )));
    }
    let mut ranges: Vec<(u64, u64)> = Vec::with_capacity(k.args.len());
    for a in &k.args {
        let end = u64::from(a.offset) + u64::from(a.size);
        if end > u64::from(k.kernarg_segment_size) {
            return Err(err(format!(
                "{}: bytes {}..{end} exceed .kernarg_segment_size {}",
                at(a),
                a.offset,
                k.kernarg_segment_size
            )));
        }
        if let Some(size) = a.kind.required_size() {
            if a.size != size {
                return Err(err(format!(
                    "{}: size {} (the ABI's is {size})",
                    at(a),
                    a.size
                )));
            }
        }
        ranges.push((u64::from(a.offset), end));
    }
    ranges.sort_unstable();
    if let Some(w) = ranges.windows(2).find(|w| w[1].0 < w[0].1) {
        return Err(err(format!(
            "kernel {:?}: arguments at bytes {}..{} and {}..{} overlap",
            k.name, w[0].0, w[0].1, w[1].0, w[1].1
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmpv::Value;

    fn s(v: &str) -> Value {
        Value::from(v)
    }

    fn arg(kind: &str, offset: u32, size: u32) -> Value {
        Value::Map(vec![
            (s(".value_kind"), s(kind)),
            (s(".offset"), Value::from(offset)),
            (s(".size"), Value::from(size)),
        ])
    }

    fn kernel(args: Vec<Value>, segment: u32) -> Vec<(Value, Value)> {
        vec![
            (s(".name"), s("k")),
            (s(".symbol"), s("k.kd")),
            (s(".args"), Value::Array(args)),
            (s(".kernarg_segment_size"), Value::from(segment)),
            (s(".kernarg_segment_align"), Value::from(8)),
            (s(".group_segment_fixed_size"), Value::from(0)),
            (s(".private_segment_fixed_size"), Value::from(0)),
            (s(".wavefront_size"), Value::from(64)),
            (s(".sgpr_count"), Value::from(10)),
            (s(".vgpr_count"), Value::from(4)),
            (s(".max_flat_workgroup_size"), Value::from(256)),
        ]
    }

    fn document(kernel: Vec<(Value, Value)>) -> Vec<u8> {
        let root = Value::Map(vec![
            (
                s("amdhsa.version"),
                Value::Array(vec![Value::from(1), Value::from(2)]),
            ),
            (s("amdhsa.target"), s("amdgcn-amd-amdhsa--gfx90a:xnack-")),
            (s("amdhsa.kernels"), Value::Array(vec![Value::Map(kernel)])),
        ]);
        let mut out = Vec::new();
        rmpv::encode::write_value(&mut out, &root).unwrap();
        out
    }

    fn error_of(kernel: Vec<(Value, Value)>) -> String {
        match parse(&document(kernel)) {
            Err(e) => e.to_string(),
            Ok(md) => panic!("parsed: {md:?}"),
        }
    }

    #[test]
    fn a_minimal_document_parses() {
        let md = parse(&document(kernel(
            vec![
                arg("global_buffer", 0, 8),
                arg("hidden_block_count_x", 8, 4),
            ],
            16,
        )))
        .unwrap();
        assert_eq!(md.version, CodeObjectVersion::V5);
        assert_eq!(md.target.unwrap().to_string(), "gfx90a:xnack-");
        let k = &md.kernels[0];
        assert_eq!((k.name.as_str(), k.symbol.as_str()), ("k", "k.kd"));
        assert_eq!(k.agpr_count, 0);
        assert!(!k.uses_dynamic_stack);
        assert_eq!(
            k.args[1].kind,
            ArgKind::HiddenBlockCount(super::super::Dim::X)
        );
    }

    #[test]
    fn unknown_kinds_are_kept_not_refused() {
        let md = parse(&document(kernel(vec![arg("hidden_tomorrow", 0, 24)], 24))).unwrap();
        assert_eq!(
            md.kernels[0].args[0].kind,
            ArgKind::Unknown("hidden_tomorrow".into())
        );
    }

    #[test]
    fn bad_documents_name_what_is_wrong() {
        let mut missing = kernel(vec![], 0);
        missing.retain(|(k, _)| k.as_str() != Some(".sgpr_count"));
        assert!(error_of(missing).contains("kernel \"k\": required key .sgpr_count is missing"));
        let mut wrong_type = kernel(vec![], 0);
        wrong_type.push((s(".agpr_count"), s("lots")));
        assert!(error_of(wrong_type).contains(".agpr_count is not an unsigned 32-bit integer"));
        let past_end = error_of(kernel(vec![arg("by_value", 12, 8)], 16));
        assert!(
            past_end.contains("bytes 12..20 exceed .kernarg_segment_size 16"),
            "{past_end}"
        );
        let overlap = error_of(kernel(
            vec![arg("by_value", 0, 8), arg("by_value", 4, 4)],
            16,
        ));
        assert!(overlap.contains("overlap"), "{overlap}");
        let hidden_size = error_of(kernel(vec![arg("hidden_queue_ptr", 0, 4)], 16));
        assert!(
            hidden_size.contains("size 4 (the ABI's is 8)"),
            "{hidden_size}"
        );
        let mut align = kernel(vec![], 0);
        align[4].1 = Value::from(12);
        assert!(error_of(align).contains("not a power of two"));
        let huge = error_of(kernel(vec![], u32::MAX));
        assert!(huge.contains("exceeds kfdrt's limit"), "{huge}");
        let mut dup = kernel(vec![], 0);
        dup.push((s(".args"), Value::from(3))); // a second .args key is ignored (first wins)
        assert!(parse(&document(dup)).is_ok());
    }

    #[test]
    fn hostile_documents_are_errors() {
        // 200 nested arrays: refused by the depth limit before recursing far.
        let mut deep = vec![0x91u8; 200];
        deep.push(0xC0);
        assert!(matches!(parse(&deep), Err(CodeObjectError::Metadata(_))));
        // An array claiming four billion elements in a few bytes.
        assert!(parse(&[0xDD, 0xFF, 0xFF, 0xFF, 0xFF, 0xC0]).is_err());
        // A string longer than the document.
        assert!(parse(&[0xDB, 0x7F, 0xFF, 0xFF, 0xFF, b'a']).is_err());
        assert!(parse(&[]).is_err());
        // Not a map at the top.
        assert!(parse(&[0x01]).is_err());
        // amdhsa.version from the future.
        let mut future = Vec::new();
        let root = Value::Map(vec![(
            s("amdhsa.version"),
            Value::Array(vec![Value::from(1), Value::from(9)]),
        )]);
        rmpv::encode::write_value(&mut future, &root).unwrap();
        assert!(parse(&future).unwrap_err().to_string().contains("1.9"));
    }
}
