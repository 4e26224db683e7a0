//! Fuzz target `topology_tree`: see `kfdrt_fuzz_harness::topology_tree`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kfdrt_fuzz_harness::topology_tree(data));
