//! Fuzz target `code_object`: see `kfdrt_fuzz_harness::code_object`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kfdrt_fuzz_harness::code_object(data));
