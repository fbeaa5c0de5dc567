#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| lgate_inputs::slurm_topology_yaml(bytes));
