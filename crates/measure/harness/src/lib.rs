//! The LGate pairwise test harness: it runs a test between every pair of ranks of a job,
//! synchronising with subset barriers so that independent subtrees of a topology are measured
//! at the same time, and records the results in a run directory.
//!
//! The harness talks to other ranks through the [`Transport`] trait: MPI in production
//! (`lgate-mpi`), threads in tests ([`InProcessWorld`]).
//!
//! ```
//! use lgate_harness::{run, InProcessWorld, PingPong, ProgressStyle, RunOptions};
//!
//! let dir = tempfile::tempdir()?;
//! let options = RunOptions {
//!     seed: Some(1),
//!     progress: ProgressStyle::Quiet,
//!     ..RunOptions::new(dir.path().join("run"))
//! };
//! let reports = InProcessWorld::new(3).run(|t| {
//!     let mut test = PingPong::new(vec![0, 1024], 4).unwrap();
//!     run(&t, &mut test, &options).unwrap()
//! });
//! let report = reports[0].as_ref().unwrap();
//! assert_eq!(report.summary.pairs_measured, 3);
//! // The journal holds the results; tables and matrices are derived from it afterwards.
//! assert!(dir.path().join("run/journal.bin").exists());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod clock;
pub mod dry_run;
pub mod host_facts;
pub mod interrupt;
pub mod pair_test;
pub mod placement;
pub mod run;
pub mod schedule;
pub mod staged;
pub mod summary;

pub use dry_run::{dry_run, human_duration, DryRun};
pub use lgate_stats::{warmup_length, Summary};
pub use lgate_transport::{
    barrier, in_process, transport, InProcessTransport, InProcessWorld, LinkModel, PoliteWait,
    SubsetBarrier, Tag, Transport, TransportError,
};
pub use lgate_transport::{cpu_time, Activity, CpuScope, RankClock, TimeSplit};
pub use pair_test::{AnyPairTest, PairResult, PairTest, PingPong, Role};
pub use run::{
    broadcast, resolve_topology, run, screening_value, topology_by_host, wait_for_rank_0, PlanKind,
    ProgressStyle, RunOptions, RunReport, StagedPlanOptions, TopologySource,
};
pub use schedule::{
    turn, unit_barrier_time, Pair, Schedule, ScheduleError, StagedChoice, Step, SweepPair, Turn,
};
pub use staged::{
    choose_follow_up, FollowUp, FollowUpCounts, ScreenedPair, ScreenedValues, StagedOptions,
    StagedPlan, StagedStep, StagedTest,
};
pub use summary::{JobTimes, MeasureSummary};

/// An error of a harness run.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// Messaging failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The run directory could not be read or written.
    #[error(transparent)]
    RunDir(#[from] lgate_rundir::RunDirError),
    /// The topology is malformed.
    #[error(transparent)]
    Topology(#[from] lgate_topology::TopologyError),
    /// The topology does not fit the job.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// The job or the options cannot make a run.
    #[error("{0}")]
    Setup(String),
    /// A count of the options is refused (`field` names it).
    #[error("{field} {source}")]
    Count {
        /// The option's field.
        field: &'static str,
        /// Why.
        source: lgate_stats::CountError,
    },
    /// A run cannot be resumed as asked.
    #[error("{0}")]
    Resume(String),
    /// A run cannot be resumed with other parameters: each that differs.
    #[error(
        "{}: cannot resume with other parameters: {}",
        .run.display(),
        lgate_rundir::PlanDifference::joined(.differences)
    )]
    ResumeParameters {
        /// The run directory.
        run: std::path::PathBuf,
        /// What differs, and how.
        differences: Vec<lgate_rundir::PlanDifference>,
    },
    /// Rank 0 stopped the run before it started; it reports why.
    #[error("rank 0 stopped the run (see its message)")]
    Aborted,
    /// An error after measuring started: other ranks may be waiting for this one, so the
    /// whole job has to be stopped (MPI_Abort).
    #[error(transparent)]
    Measuring(Box<HarnessError>),
}

impl HarnessError {
    /// Whether other ranks may still be waiting for this one, so the job must be aborted.
    pub fn leaves_others_waiting(&self) -> bool {
        matches!(self, HarnessError::Measuring(_))
    }
}
