#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| lgate_inputs::kube_topology(bytes));
