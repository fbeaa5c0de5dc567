//! The PLogP micro-benchmark (Kielmann et al., as extended in section 3.1.2 of the reference
//! thesis) as a pair test of the LGate harness: RTT(m), o_s(m), o_r(m) and g(m) by link
//! saturation per pair, with adaptive midpoint sizes and a time budget per pair. What a run
//! derives from its measurements (tables, matrices, report) is `lgate-derive`'s.
//!
//! Nothing here needs MPI: the procedures talk to a [`lgate_harness::Transport`].
//!
//! ```
//! use lgate_harness::{run, InProcessWorld, ProgressStyle, RunOptions};
//! use lgate_plogp_bench::{PLogP, PLogPOptions};
//!
//! let dir = tempfile::tempdir()?;
//! let options = RunOptions { progress: ProgressStyle::Quiet, ..RunOptions::new(dir.path().join("run")) };
//! let plogp = PLogPOptions { reps: 4, adaptive: false, ..PLogPOptions::new(1024) };
//! let reports = InProcessWorld::new(3).run(|t| {
//!     let mut test = PLogP::new(plogp.clone()).unwrap();
//!     run(&t, &mut test, &options).unwrap()
//! });
//! assert_eq!(reports[0].as_ref().unwrap().summary.pairs_measured, 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod clock;
pub mod procedures;

pub use lgate_rundir::{MessageSize, PairMeasurement, RawSamples, Saturation, SizeResult};
pub use procedures::{OptionsError, PLogP, PLogPOptions};
