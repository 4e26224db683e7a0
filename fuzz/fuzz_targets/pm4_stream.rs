//! Fuzz target `pm4_stream`: see `kfdrt_fuzz_harness::pm4_stream`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kfdrt_fuzz_harness::pm4_stream(data));
