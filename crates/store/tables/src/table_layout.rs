//! The columns of a run's tables (`measurements.parquet`/`.csv`, `raw.parquet`): one name per
//! column, shared by the writers and every reader.

pub use lgate_rundir::files::{MEASUREMENTS_CSV_FILE, MEASUREMENTS_FILE, RAW_CSV_FILE, RAW_FILE};

/// The sweep, from 0.
pub const SWEEP: &str = "sweep";
/// The sender, the smaller rank of the pair.
pub const I: &str = "i";
/// The receiver, the larger rank of the pair.
pub const J: &str = "j";
/// In the host tables: the host (its position in `hosts/index.json`).
pub const HOST: &str = "host";
/// In the host tables: the host of the first rank or the first host.
pub const HOST_I: &str = "host_i";
/// In the host tables: the host of the second rank or the second host.
pub const HOST_J: &str = "host_j";
/// In the host tables: a pair's round trip, us.
pub const RTT_US: &str = "rtt_us";
/// In the host tables: the lower quartile of the pairs, us.
pub const P25_US: &str = "p25_us";
/// In the host tables: the upper quartile of the pairs, us.
pub const P75_US: &str = "p75_us";
/// In the host tables: the pairs summarised.
pub const PAIRS: &str = "pairs";
/// In the host tables: the sweeps that measured a pair.
pub const SWEEPS: &str = "sweeps";
/// The message size in bytes.
pub const SIZE_BYTES: &str = "size_bytes";
/// The PLogP parameter: `rtt`, `os`, `or`, `g`, `latency`.
pub const PARAMETER: &str = "parameter";
/// How the value was found (`measured`, `saturation`, `derived`, ...).
pub const METHOD: &str = "method";
/// The least repetition, us.
pub const MIN_US: &str = "min_us";
/// The 10th percentile of the repetitions, us.
pub const P10_US: &str = "p10_us";
/// The median of the repetitions, us.
pub const MEDIAN_US: &str = "median_us";
/// The 90th percentile of the repetitions, us.
pub const P90_US: &str = "p90_us";
/// The mean of the repetitions, us.
pub const MEAN_US: &str = "mean_us";
/// The largest repetition, us.
pub const MAX_US: &str = "max_us";
/// The repetitions kept.
pub const SAMPLES: &str = "samples";
/// The repetitions dropped as warm-up.
pub const WARMUP: &str = "warmup";
/// The repetitions flagged as outliers.
pub const OUTLIERS: &str = "outliers";
/// In `raw.parquet`: the repetition, from 0.
pub const REPETITION: &str = "repetition";
/// In `raw.parquet`: the repetition's value, us.
pub const VALUE_US: &str = "value_us";
