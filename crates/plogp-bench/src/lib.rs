//! The PLogP micro-benchmark (Kielmann et al., as extended in section 3.1.2 of the reference
//! thesis) as a pair test of the LGate harness, and what a run derives from it: the long table
//! of parameters per pair and size, the distance matrices that `cluster` reads, and the report
//! of slow ranks and pairs.
//!
//! Nothing here needs MPI: the procedures talk to a [`lgate_harness::Transport`], and the
//! outputs are built from a run's journal.
//!
//! ```
//! use lgate_harness::{run, InProcessWorld, ProgressStyle, RunOptions};
//! use lgate_plogp_bench::{derive, OutputOptions, PLogP, PLogPOptions};
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

pub mod clock;
pub mod derive;
pub mod derive_run;
pub mod outputs;
pub mod params;
pub mod pingpong;
pub mod procedures;
pub mod report;
pub mod size;
pub mod staged;
pub mod table;

pub use derive::{derive_plogp, write_outputs, MeasuredPair};
pub use derive_run::derive;
pub use outputs::{
    write_matrix_set, write_matrix_set_with, OutputBuilder, OutputError, OutputOptions, PairValuer,
    PairValues,
};
pub use params::{Estimator, MeasurementError, Method, PairParams, Parameter};
pub use pingpong::write_pingpong_outputs;
pub use procedures::{PLogP, PLogPOptions, PairMeasurement, SizeResult};
pub use size::MessageSize;
pub use staged::write_staged_outputs;
