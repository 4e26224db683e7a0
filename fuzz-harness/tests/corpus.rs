//! Replays every checked-in corpus file of every fuzz target on stable (the fuzzers themselves
//! need nightly: `cargo +nightly fuzz run <target>` in `fuzz/`). A file that makes a target
//! panic fails this test, with the file named.

use std::path::Path;

#[test]
fn every_corpus_file_runs_clean() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let mut total = 0;
    for (name, target) in kfdrt_fuzz_harness::TARGETS {
        let dir = root.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "corpus {name} is empty");
        for f in files {
            let data = std::fs::read(&f).unwrap();
            let r = std::panic::catch_unwind(|| target(&data));
            assert!(r.is_ok(), "{name}: {} panics", f.display());
            total += 1;
        }
    }
    eprintln!("{total} corpus files replayed");
}
