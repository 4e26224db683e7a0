//! Reading the `NT_AMDGPU_METADATA` note's msgpack document into [`CodeObjectMetadata`].
//!
//! Keys follow LLVM's AMDGPUUsage ("Code Object V3/V4/V5 Metadata"). Keys kfdrt does not use are
//! ignored; a key that is required, or present with the wrong type, is an error naming the
//! kernel, the argument and the key.

use super::error::CodeObjectError;
use super::metadata::{
    derived_align, AddressSpace, ArgKind, CodeObjectMetadata, CodeObjectVersion, KernelArg,
    KernelMetadata,
};
use super::target::TargetId;
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
        if kernels.iter().any(|other| other.name == kernel.name) {
            return Err(err(format!("two kernels are named {:?}", kernel.name)));
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
