//! The layering `docs/architecture.md` draws, checked from the source: a module may use the
//! modules below it, never one above, and modules do not import each other in circles.
//!
//! A module's imports are the `crate::x` paths in its files (and `super::x` in a submodule
//! checked against its siblings), comments and test modules left out. For kfdrt the paths are
//! resolved further (groups, `super::` chains, root re-exports) and checked at the units the
//! document draws, submodules placed apart from their parents included (see
//! [`unit_graph`]). kfdrt keeps its documented order with no exception: [`KFDRT_DEBT`] is
//! empty, and the test fails on any upward import and on a listed one that is gone.

use crate::common;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module -> the modules it imports.
type Graph = BTreeMap<String, BTreeSet<String>>;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The code of a file without comments and without its `#[cfg(test)]` part (unit tests may
/// reach anywhere).
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // The first test module: a `cfg(test)` or `cfg(all(test, ..))` attribute on a `mod`.
    let tests = ["#[cfg(test)]", "#[cfg(all(test"]
        .iter()
        .flat_map(|m| text.match_indices(m).map(|(at, _)| at))
        .filter(|&at| {
            let rest = &text[at..];
            let after = rest.find(']').map_or("", |end| &rest[end + 1..]);
            after.trim_start().starts_with("mod ")
        })
        .min()
        .unwrap_or(text.len());
    let text = &text[..tests];
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Identifiers following each occurrence of `prefix` (`crate::` or `super::`).
fn names_after<'a>(code: &'a str, prefix: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    code.match_indices(prefix).filter_map(move |(at, _)| {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            return None;
        }
        let rest = &code[at + prefix.len()..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        (end > 0).then(|| &rest[..end])
    })
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of file `f` of crate source directory `src` (`memory/raw.rs`: `memory`,
/// `raw`; a `mod.rs` is its directory's module).
fn module_path(src: &Path, f: &Path) -> Vec<String> {
    let rel = f.strip_prefix(src).unwrap_or(f).with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The import graph of the modules of `src` (a crate's source directory): the top-level modules
/// (`parent` `None`), or the submodules of module `parent`. The crate root and binaries are not
/// modules of it.
fn graph(src: &Path, parent: Option<&str>) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut g = Graph::new();
    for f in files {
        let parts = module_path(src, &f);
        let unit = match parent {
            None => match parts.first() {
                Some(p) if p != "lib" && p != "main" && p != "bin" => p.clone(),
                _ => continue,
            },
            Some(parent) => match parts.as_slice() {
                [p, unit, ..] if p == parent => unit.clone(),
                _ => continue,
            },
        };
        let code = code_of(&f);
        let entry = g.entry(unit.clone()).or_default();
        let mut add = |name: &str| {
            if name != unit {
                entry.insert(name.to_string());
            }
        };
        match parent {
            None => names_after(&code, "crate::").for_each(&mut add),
            Some(parent) => {
                let path = format!("crate::{parent}::");
                names_after(&code, &path).for_each(&mut add);
                // A submodule's own file names its siblings through `super::`.
                if parts.len() == 2 {
                    names_after(&code, "super::").for_each(&mut add);
                }
            }
        }
    }
    // Only edges to modules of this graph (not to items of the parent or the crate root).
    let units: BTreeSet<String> = g.keys().cloned().collect();
    for deps in g.values_mut() {
        deps.retain(|d| units.contains(d));
    }
    g
}

/// The paths a module's code names, made absolute: each `crate::a::b`, `super::a` (relative
/// to `here`, the module's own path) and the members of groups (`crate::{a::X, b::Y}`), as
/// segment lists.
fn paths_named(code: &str, here: &[String]) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut out = Vec::new();
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let (base, len) = if rest.starts_with("crate::") {
            (Vec::new(), "crate::".len())
        } else if rest.starts_with("super::") && !code[..at].ends_with("::") {
            let mut base = here.to_vec();
            let mut len = 0;
            while code[at + len..].starts_with("super::") {
                base.pop();
                len += "super::".len();
            }
            (base, len)
        } else {
            at += 1;
            continue;
        };
        if at > 0 && ident(bytes[at - 1]) {
            at += 1;
            continue;
        }
        let mut end = at + len;
        parse_path(code, &mut end, base, &mut out);
        at = end.max(at + 1);
    }
    out
}

/// Parses the path (or `{...}` group of paths) at `*at`, which continue `base`.
fn parse_path(code: &str, at: &mut usize, mut base: Vec<String>, out: &mut Vec<Vec<String>>) {
    let bytes = code.as_bytes();
    loop {
        while *at < code.len() && bytes[*at].is_ascii_whitespace() {
            *at += 1;
        }
        if *at < code.len() && bytes[*at] == b'{' {
            *at += 1;
            loop {
                parse_path(code, at, base.clone(), out);
                while *at < code.len() && bytes[*at].is_ascii_whitespace() {
                    *at += 1;
                }
                match bytes.get(*at) {
                    Some(b',') => *at += 1,
                    Some(b'}') => {
                        *at += 1;
                        return;
                    }
                    _ => return,
                }
                while *at < code.len() && bytes[*at].is_ascii_whitespace() {
                    *at += 1;
                }
                if bytes.get(*at) == Some(&b'}') {
                    *at += 1;
                    return;
                }
            }
        }
        let start = *at;
        while *at < code.len() && (bytes[*at].is_ascii_alphanumeric() || bytes[*at] == b'_') {
            *at += 1;
        }
        if *at == start {
            break;
        }
        base.push(code[start..*at].to_string());
        if code[*at..].starts_with("::") {
            *at += 2;
        } else {
            break;
        }
    }
    if !base.is_empty() {
        out.push(base);
    }
}

/// kfdrt's root re-exports (`pub use memory::{Buffer, ..}` in lib.rs): item -> its module path.
fn root_reexports(lib: &Path) -> BTreeMap<String, Vec<String>> {
    let code = code_of(lib);
    let mut out = BTreeMap::new();
    for stmt in code.split(';') {
        let Some(path) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let mut paths = Vec::new();
        let mut at = 0;
        parse_path(path, &mut at, Vec::new(), &mut paths);
        for mut p in paths {
            if let Some(item) = p.pop() {
                out.insert(item, p);
            }
        }
    }
    out
}

/// The import graph of kfdrt's units: each of `units` (a module path, `memory::raw`) is one, and
/// every other top-level module is one with all its submodules. A file belongs to the longest
/// unit its module path starts with; so does each path it names (root re-exports resolved).
fn unit_graph(src: &Path, units: &[&str]) -> Graph {
    let units: Vec<Vec<String>> = units
        .iter()
        .map(|u| u.split("::").map(str::to_string).collect())
        .collect();
    let reexports = root_reexports(&src.join("lib.rs"));
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut top: BTreeSet<String> = BTreeSet::new();
    let mut modules = Vec::new();
    for f in files {
        let parts = module_path(src, &f);
        match parts.first().map(String::as_str) {
            None | Some("lib" | "main" | "bin") => continue,
            Some(t) => top.insert(t.to_string()),
        };
        modules.push((parts, f));
    }
    let unit_of = |path: &[String]| -> Option<String> {
        let best = units
            .iter()
            .filter(|u| path.starts_with(u))
            .max_by_key(|u| u.len());
        match best {
            Some(u) => Some(u.join("::")),
            None => path.first().filter(|t| top.contains(*t)).cloned(),
        }
    };
    let mut g = Graph::new();
    for (parts, f) in &modules {
        let Some(unit) = unit_of(parts) else { continue };
        let code = code_of(f);
        let entry = g.entry(unit.clone()).or_default();
        for mut p in paths_named(&code, parts) {
            if let Some(m) = reexports.get(&p[0]).filter(|_| !top.contains(&p[0])) {
                p.splice(0..1, m.iter().cloned());
            }
            if let Some(u) = unit_of(&p).filter(|u| *u != unit) {
                entry.insert(u);
            }
        }
    }
    g
}

/// The modules on import circles, each circle as a sorted list (Tarjan's strongly connected
/// components of more than one module).
fn circles(g: &Graph) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            for w in self.g.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut c = Vec::new();
                while let Some(w) = self.stack.pop() {
                    c.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if c.len() > 1 {
                    c.sort();
                    self.out.push(c);
                }
            }
        }
    }
    let mut t = Tarjan {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out
}

/// The imports of `g` that go up `layers` (bottom first; modules of one layer may use each
/// other, modules in no layer are not checked), as "a -> b".
fn upward(g: &Graph, layers: &[&[&str]]) -> BTreeSet<String> {
    let level = |m: &str| layers.iter().position(|l| l.contains(&m));
    let mut out = BTreeSet::new();
    for (a, deps) in g {
        for b in deps {
            if let (Some(la), Some(lb)) = (level(a), level(b)) {
                if lb > la {
                    out.insert(format!("{a} -> {b}"));
                }
            }
        }
    }
    out
}

/// Crates (and module trees) whose modules import each other in no circle: `(source dir,
/// parent module)`.
const ACYCLIC: &[(&str, Option<&str>)] = &[
    ("kfd-sys/src", None),
    ("aql/src", None),
    ("pm4/src", None),
    ("sdma/src", None),
    ("kfd-emu/src", Some("engine")),
    ("kfd-emu/isa/src", Some("exec")),
];

#[test]
fn the_leaf_crates_and_the_engines_import_in_no_circle() {
    common::device_free();
    for (src, parent) in ACYCLIC {
        let g = graph(&workspace().join(src), *parent);
        assert!(g.len() >= 2, "{src} {parent:?}: no modules found");
        let c = circles(&g);
        assert!(
            c.is_empty(),
            "{src} {parent:?}: modules import each other in circles: {c:?}"
        );
    }
}

/// kfd-emu's order (docs/architecture.md, "Inside kfd-emu"), bottom first.
const KFD_EMU_LAYERS: &[&[&str]] = &[
    &[
        "device",
        "vm",
        "events",
        "kernel",
        "icache",
        "hdp",
        "doorbell_trap",
        "segv",
        "wake",
        "arbiter",
    ],
    &["engine"],
    &["queue"],
    &["ioctl"],
];

#[test]
fn kfd_emu_imports_only_downward() {
    common::device_free();
    let g = graph(&workspace().join("kfd-emu/src"), None);
    let up = upward(&g, KFD_EMU_LAYERS);
    assert!(up.is_empty(), "kfd-emu imports upward: {up:?}");
    // The bottom layer's modules use each other, in no circle.
    let bottom: Graph = g
        .iter()
        .filter(|(m, _)| KFD_EMU_LAYERS[0].contains(&m.as_str()))
        .map(|(m, d)| {
            let d = d
                .iter()
                .filter(|x| KFD_EMU_LAYERS[0].contains(&x.as_str()))
                .cloned()
                .collect();
            (m.clone(), d)
        })
        .collect();
    assert!(circles(&bottom).is_empty(), "{:?}", circles(&bottom));
}

/// kfdrt's order (docs/architecture.md, "Inside kfdrt"), bottom first. A unit is a top-level
/// module with its submodules, or a submodule named by path where the document places it apart
/// from its parent (`memory::raw` below `device`, `memory` above).
const KFDRT_LAYERS: &[&[&str]] = &[
    &["error"],
    &["topology"],
    &[
        "device::context",
        "device::fork",
        "device::clock",
        "memory::kind",
        "memory::raw",
        "memory::va",
        "debug::r_debug",
    ],
    &[
        "event::table",
        "exception",
        "signal::pool",
        "memory::buddy",
        "memory::suballoc",
        "memory::shards",
        "memory::hdp",
        "queue::doorbell",
        "debug::options",
        "debug::log",
        "debug::registry",
        "debug::source_lines",
        "code_object::demangle",
        "debug::address_map",
        "debug::recorder",
        "debug::capture",
        "debug::trace",
        "debug::depgraph",
    ],
    &["device"],
    &["event", "signal", "memory"],
    &["queue"],
    &["code_object", "kernel", "kernel_args", "hostcall"],
    &["launch"],
    &["copy"],
    &["stream", "smi"],
    &["debug"],
];

/// Upward imports kfdrt tolerates, as "a -> b": none since issue #29 item 1. Nothing may be
/// added without a reason in docs/architecture.md; a line whose import is gone must be removed.
const KFDRT_DEBT: &[&str] = &[];

#[test]
fn kfdrt_imports_only_downward_but_for_its_listed_debt() {
    common::device_free();
    let units: Vec<&str> = KFDRT_LAYERS
        .iter()
        .flat_map(|l| l.iter().copied())
        .collect();
    let g = unit_graph(&workspace().join("src"), &units);
    for layer in KFDRT_LAYERS {
        for m in *layer {
            assert!(
                g.contains_key(*m),
                "kfdrt has no module {m} (update the layers)"
            );
        }
    }
    let placed: BTreeSet<&str> = KFDRT_LAYERS
        .iter()
        .flat_map(|l| l.iter().copied())
        .collect();
    let unplaced: Vec<&String> = g.keys().filter(|m| !placed.contains(m.as_str())).collect();
    assert!(unplaced.is_empty(), "modules in no layer: {unplaced:?}");
    let up = upward(&g, KFDRT_LAYERS);
    let debt: BTreeSet<String> = KFDRT_DEBT.iter().map(|s| s.to_string()).collect();
    let new: Vec<&String> = up.difference(&debt).collect();
    assert!(
        new.is_empty(),
        "kfdrt imports upward (see docs/architecture.md): {new:?}"
    );
    let paid: Vec<&String> = debt.difference(&up).collect();
    assert!(
        paid.is_empty(),
        "no longer imported upward, take off KFDRT_DEBT: {paid:?}"
    );
}

#[test]
fn the_checker_sees_imports_and_circles() {
    common::device_free();
    let code =
        "use crate::alpha::X; // crate::beta\nfn f() { mycrate::gamma(); crate::delta::g() }";
    let names: Vec<&str> = names_after(code, "crate::").collect();
    assert_eq!(names, ["alpha", "beta", "delta"]);
    let mut g = Graph::new();
    g.insert("a".into(), ["b".into()].into());
    g.insert("b".into(), ["c".into()].into());
    g.insert("c".into(), ["a".into()].into());
    g.insert("d".into(), ["a".into()].into());
    assert_eq!(circles(&g), [vec!["a", "b", "c"]]);
    assert_eq!(
        upward(&g, &[&["a"], &["b", "c"], &["d"]]),
        ["a -> b".to_string()].into()
    );
}
