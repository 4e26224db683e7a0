//! Fuzz target `emu_ioctls`: see `kfdrt_fuzz_harness::emu_ioctls`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kfdrt_fuzz_harness::emu_ioctls(data));
