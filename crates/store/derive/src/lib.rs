//! The derive stage: from a run's journal (the PLogP test, the ping-pong, the staged plan's
//! screening and samples) or from imported pairs, to what a run directory holds for its
//! readers: the long tables of parameters per pair and size, the distance matrices that
//! `cluster` reads, and `report.json` with the run's health.
//!
//! Nothing here measures or needs MPI: it reads journal records (`lgate_rundir::records`) or
//! other tools' measurements (`import`) and writes files, so `measure`, `simulate` and
//! `import` share it.
//!
//! ```
//! use lgate_harness::{run, InProcessWorld, ProgressStyle, RunOptions};
//! use lgate_plogp_bench::{PLogP, PLogPOptions};
//! use lgate_derive::{derive, OutputOptions};
//! use lgate_rundir::RunDir;
//!
//! let dir = tempfile::tempdir()?;
//! let options = RunOptions { progress: ProgressStyle::Quiet, ..RunOptions::new(dir.path().join("run")) };
//! let plogp = PLogPOptions { reps: 4, adaptive: false, ..PLogPOptions::new(1024) };
//! // Measured: every rank runs the harness.
//! InProcessWorld::new(3).run(|t| {
//!     let mut test = PLogP::new(plogp.clone()).unwrap();
//!     run(&t, &mut test, &options).unwrap()
//! });
//! // Derived: tables, matrices and the report, from the journal.
//! let outputs = OutputOptions { matrix_sizes: OutputOptions::default_matrix_sizes(1024), ..OutputOptions::default() };
//! derive(&RunDir::open(&dir.path().join("run"))?, &outputs)?;
//! assert!(dir.path().join("run/matrices/t_1024.csv").exists());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod host_blocks;
pub mod import;
pub mod outputs;
pub mod params;
pub mod pingpong;
pub mod plogp;
pub mod report;
pub mod run;
pub mod slow;
mod slow_pairs;
pub mod staged;
/// Long-format tables (CSV and Parquet), from the run directory's crate.
pub use lgate_tables::table;

pub use host_blocks::{by_hosts, ByHosts, HostBlocksBuilder, ScreenedTest};
pub use import::{
    mean_bandwidth, most_repeats, mpigraph_distance, write_imported_mpigraph, write_imported_pairs,
    ImportOrigin, MpiGraphTable,
};
pub use lgate_rundir::Estimator;
pub use outputs::{
    write_matrix_set, write_matrix_set_with, DenseMatrices, OutputBuilder, OutputError,
    OutputOptions, PairValuer, PairValues,
};
pub use params::{MeasurementError, Method, PairParams, Parameter};
pub use pingpong::write_pingpong_outputs;
pub use plogp::{derive_plogp, write_outputs, MeasuredPair};
pub use run::derive;
pub use staged::{derive_staged, interference, write_staged_outputs, StagedScreening};
