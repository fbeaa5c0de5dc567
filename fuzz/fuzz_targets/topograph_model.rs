#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| lgate_inputs::topograph_model(bytes));
