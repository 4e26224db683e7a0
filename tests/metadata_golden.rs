//! kfdrt's metadata parser against LLVM's: every fixture's `NT_AMDGPU_METADATA` note as
//! `llvm-readelf --notes` printed it (the `*.notes.txt` goldens regen.sh writes) must read the
//! same through `code_object::inspect`. Every key the golden shows is compared or explicitly
//! listed as not modelled, so a new key in a regenerated fixture fails here until it is looked at.

use crate::co_util;
use crate::common;

use co_util::{fixture, fixtures_dir};
use kfdrt::code_object::{self, KernelArg, KernelMetadata};
use std::collections::BTreeMap;

/// One YAML mapping of the golden, values as printed (quotes removed).
type Fields = BTreeMap<String, String>;

#[derive(Default, Debug)]
struct GoldenKernel {
    fields: Fields,
    args: Vec<Fields>,
}

#[derive(Default, Debug)]
struct Golden {
    top: Fields,
    lists: BTreeMap<String, Vec<String>>,
    kernels: Vec<GoldenKernel>,
}

fn unquote(v: &str) -> String {
    let v = v.trim();
    v.strip_prefix('\'')
        .and_then(|v| v.strip_suffix('\''))
        .unwrap_or(v)
        .to_owned()
}

fn key_value(line: &str) -> (String, String) {
    let (k, v) = line.split_once(':').unwrap_or((line, ""));
    (k.trim().to_owned(), unquote(v))
}

/// Reads the YAML document `llvm-readelf --notes` prints: its fixed indentation is enough to
/// tell top-level keys, kernels (`  - .`), kernel keys, arguments (`      - .`) and their keys.
fn parse_golden(text: &str) -> Golden {
    let mut g = Golden::default();
    let body = text
        .split_once("---\n")
        .map(|(_, b)| b)
        .expect("a YAML document");
    let mut list: Option<String> = None;
    for line in body.lines().take_while(|l| *l != "...") {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim_start();
        if let Some(item) = trimmed.strip_prefix("- ") {
            if !item.starts_with('.') {
                // An element of a list value (amdhsa.version, .language_version, ...).
                if let Some(l) = &list {
                    g.lists.entry(l.clone()).or_default().push(unquote(item));
                }
                continue;
            }
            let (k, v) = key_value(item);
            match indent {
                2 => g.kernels.push(GoldenKernel::default()),
                6 => g.kernels.last_mut().unwrap().args.push(Fields::new()),
                _ => panic!("unexpected list item {line:?}"),
            }
            let kernel = g.kernels.last_mut().unwrap();
            match indent {
                2 => kernel.fields.insert(k, v),
                _ => kernel.args.last_mut().unwrap().insert(k, v),
            };
            continue;
        }
        let (k, v) = key_value(trimmed);
        match indent {
            0 => {
                list = Some(k.clone());
                g.top.insert(k, v);
            }
            4 => {
                list = Some(k.clone());
                g.kernels.last_mut().unwrap().fields.insert(k, v);
            }
            8 => {
                g.kernels
                    .last_mut()
                    .unwrap()
                    .args
                    .last_mut()
                    .unwrap()
                    .insert(k, v);
            }
            _ => panic!("unexpected line {line:?}"),
        }
    }
    g
}

/// Kernel keys kfdrt does not model.
const KERNEL_KEYS_NOT_MODELLED: [&str; 3] =
    [".args", ".language_version", ".uniform_work_group_size"];

fn check_kernel(file: &str, golden: &GoldenKernel, k: &KernelMetadata) {
    let ctx = format!("{file}: kernel {}", k.name);
    let numbers: [(&str, u32); 12] = [
        (".kernarg_segment_size", k.kernarg_segment_size),
        (".kernarg_segment_align", k.kernarg_segment_align),
        (".group_segment_fixed_size", k.group_segment_fixed_size),
        (".private_segment_fixed_size", k.private_segment_fixed_size),
        (".wavefront_size", k.wavefront_size),
        (".sgpr_count", k.sgpr_count),
        (".vgpr_count", k.vgpr_count),
        (".agpr_count", k.agpr_count),
        (".sgpr_spill_count", k.sgpr_spill_count),
        (".vgpr_spill_count", k.vgpr_spill_count),
        (".max_flat_workgroup_size", k.max_flat_workgroup_size),
        (".uses_dynamic_stack", u32::from(k.uses_dynamic_stack)),
    ];
    let strings = [
        (".name", Some(k.name.clone())),
        (".symbol", Some(k.symbol.clone())),
        (".language", k.language.clone()),
    ];
    for (key, value) in &golden.fields {
        if KERNEL_KEYS_NOT_MODELLED.contains(&key.as_str()) {
            continue;
        }
        if let Some((_, ours)) = numbers.iter().find(|(n, _)| n == key) {
            let theirs = match value.as_str() {
                "true" => 1,
                "false" => 0,
                v => v.parse().unwrap(),
            };
            assert_eq!(*ours, theirs, "{ctx}: {key}");
        } else if let Some((_, ours)) = strings.iter().find(|(n, _)| n == key) {
            assert_eq!(ours.as_deref(), Some(value.as_str()), "{ctx}: {key}");
        } else {
            panic!("{ctx}: key {key} is neither compared nor listed as not modelled");
        }
    }
    assert_eq!(golden.args.len(), k.args.len(), "{ctx}: argument count");
    for (i, (theirs, ours)) in golden.args.iter().zip(&k.args).enumerate() {
        check_arg(&format!("{ctx} argument {i}"), theirs, ours);
    }
}

fn check_arg(ctx: &str, golden: &Fields, a: &KernelArg) {
    for (key, value) in golden {
        let ours = match key.as_str() {
            ".offset" => a.offset.to_string(),
            ".size" => a.size.to_string(),
            ".value_kind" => a.kind.name(),
            ".name" => a.name.clone().unwrap_or_default(),
            ".type_name" => a.type_name.clone().unwrap_or_default(),
            ".pointee_align" => a.pointee_align.map(|p| p.to_string()).unwrap_or_default(),
            ".is_restrict" => a.is_restrict.to_string(),
            ".is_const" => a.is_const.to_string(),
            ".is_volatile" => a.is_volatile.to_string(),
            ".access" | ".actual_access" => a.access.clone().unwrap_or_default(),
            ".address_space" => a
                .address_space
                .as_ref()
                .map(|s| s.to_string())
                .unwrap_or_default(),
            _ => panic!("{ctx}: argument key {key} is not compared"),
        };
        assert_eq!(&ours, value, "{ctx}: {key}");
    }
    // The kind is always known for what these compilers emit.
    assert!(
        !matches!(a.kind, code_object::ArgKind::Unknown(_)),
        "{ctx}: {:?}",
        a.kind
    );
}

#[test]
fn every_fixture_reads_as_llvm_reads_it() {
    common::device_free();
    let mut checked = 0;
    for entry in std::fs::read_dir(fixtures_dir()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".elf") else {
            continue;
        };
        let golden_text = std::fs::read_to_string(fixtures_dir().join(format!("{stem}.notes.txt")))
            .unwrap_or_else(|e| panic!("{name} has no golden: {e}"));
        let golden = parse_golden(&golden_text);
        let info = code_object::inspect(&fixture(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let md = info
            .metadata
            .unwrap_or_else(|| panic!("{name}: no metadata"));
        let version = &golden.lists["amdhsa.version"];
        assert_eq!(
            [md.metadata_version.0, md.metadata_version.1].map(|v| v.to_string()),
            [version[0].clone(), version[1].clone()],
            "{name}: amdhsa.version"
        );
        match golden.top.get("amdhsa.target") {
            Some(t) => {
                let ours = md.target.as_ref().unwrap();
                assert_eq!(format!("amdgcn-amd-amdhsa--{ours}"), *t, "{name}: target");
                assert_eq!(*ours, info.target, "{name}: metadata and e_flags agree");
            }
            None => assert_eq!(md.target, None, "{name}: v3 has no amdhsa.target"),
        }
        assert_eq!(
            md.printf,
            golden
                .lists
                .get("amdhsa.printf")
                .cloned()
                .unwrap_or_default(),
            "{name}: printf formats"
        );
        assert_eq!(md.kernels.len(), golden.kernels.len(), "{name}: kernels");
        for g in &golden.kernels {
            let k = md
                .kernels
                .iter()
                .find(|k| Some(&k.name) == g.fields.get(".name"))
                .unwrap_or_else(|| panic!("{name}: kernel {:?} missing", g.fields.get(".name")));
            check_kernel(&name, g, k);
        }
        checked += 1;
    }
    assert!(checked >= 7, "only {checked} fixtures found");
}

#[test]
fn the_golden_reader_reads_what_it_claims() {
    common::device_free();
    let g = parse_golden(
        &std::fs::read_to_string(fixtures_dir().join("args-gfx90a.notes.txt")).unwrap(),
    );
    assert_eq!(g.kernels.len(), 2);
    assert_eq!(g.kernels[0].fields[".name"], "scale_rows");
    assert_eq!(
        g.kernels[0].args[3][".value_kind"],
        "dynamic_shared_pointer"
    );
    assert_eq!(g.kernels[0].args[0][".type_name"], "float*");
    assert_eq!(g.lists["amdhsa.version"], ["1", "2"]);
}
