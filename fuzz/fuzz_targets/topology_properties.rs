//! Fuzz target `topology_properties`: see `kfdrt_fuzz_harness::topology_properties`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kfdrt_fuzz_harness::topology_properties(data));
