//! Fuzz target `aql_packet`: see `kfdrt_fuzz_harness::aql_packet`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kfdrt_fuzz_harness::aql_packet(data));
