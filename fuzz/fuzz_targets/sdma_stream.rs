//! Fuzz target `sdma_stream`: see `kfdrt_fuzz_harness::sdma_stream`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kfdrt_fuzz_harness::sdma_stream(data));
