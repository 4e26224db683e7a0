//! Fuzz target `aql_processor`: see `kfdrt_fuzz_harness::aql_processor`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kfdrt_fuzz_harness::aql_processor(data));
