//! The options of a run and what it reports.

use super::*;

/// Where the topology that schedules the pairs comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum TopologySource {
    /// All ranks in one group: one pair at a time.
    None,
    /// One group per host, so pairs on different hosts run at the same time.
    Auto,
    /// A topology file (LGate, JSON or Newick), read on rank 0.
    File(PathBuf),
}

impl TopologySource {
    /// The source a `--topology` flag names: none, `auto`, or a file.
    pub fn from_flag(flag: Option<&str>) -> Self {
        match flag {
            None => TopologySource::None,
            Some("auto") => TopologySource::Auto,
            Some(path) => TopologySource::File(PathBuf::from(path)),
        }
    }

    /// As meta.json records it: `none`, `auto` or the file's path.
    pub fn describe(&self) -> String {
        match self {
            TopologySource::None => "none".into(),
            TopologySource::Auto => "auto".into(),
            TopologySource::File(p) => p.display().to_string(),
        }
    }
}

/// How rank 0 reports progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressStyle {
    /// A bar when stderr is a terminal, lines otherwise.
    Auto,
    /// A bar drawn with terminal control codes even when stderr is not a terminal: under
    /// mpirun or srun rank 0's stderr is a pipe that the launcher copies to its own terminal.
    Bar,
    /// A line after the first seconds, then every ten seconds (for logs).
    Lines,
    /// No progress; the run's directory and resume command are still said.
    None,
    /// Nothing.
    Quiet,
}

/// Everything about a run that is not the pair test.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The run directory.
    pub out: PathBuf,
    /// Replace an existing run in `out`.
    pub force: bool,
    /// Continue the run in `out` instead of starting one.
    pub resume: bool,
    /// The topology that schedules pairs.
    pub topology: TopologySource,
    /// How many times the whole schedule runs.
    pub sweeps: u32,
    /// The seed of the pair order; chosen at random (and recorded) when not given.
    pub seed: Option<u64>,
    /// Test only this share of each group's ranks.
    pub fast: Option<f64>,
    /// Progress reporting on rank 0.
    pub progress: ProgressStyle,
    /// The command line, recorded in meta.json.
    pub command_line: Vec<String>,
    /// The program and version, recorded in meta.json.
    pub tool: String,
    /// Stop with an error once rank 0 has this many results, as a crash would (for tests).
    pub stop_after: Option<usize>,
    /// Which pairs get which test: the full test for every pair, or the staged plan.
    pub plan: PlanKind,
    /// How a new run's journal is written (a resumed run keeps its own).
    pub journal: lgate_rundir::JournalFormat,
    /// The judge of the levels above the groups that a staged plan asks where to spend its
    /// confidence budget (`lgate_cluster::ScreenedJudge`, as `measure` gives it); none spends
    /// nothing there.
    pub judge: Option<&'static dyn lgate_topology::judge::LevelJudge>,
}

/// Which pairs get which test.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanKind {
    /// The full pair test for every pair, scheduled by the topology (LGate).
    Full,
    /// Screening tests inside groups and for sampled pairs between them, the full test for a
    /// sample (see [`crate::staged`]).
    Staged(StagedPlanOptions),
}

/// A staged plan's choices and its screening test.
#[derive(Debug, Clone, PartialEq)]
pub struct StagedPlanOptions {
    /// The plan's choices.
    pub plan: StagedOptions,
    /// The screening test: round trips at these sizes.
    pub screen_sizes: Vec<usize>,
    /// Repetitions per screening size.
    pub screen_reps: usize,
}

impl Default for StagedPlanOptions {
    fn default() -> Self {
        StagedPlanOptions {
            plan: StagedOptions::default(),
            screen_sizes: vec![0, 64 << 10],
            screen_reps: 16,
        }
    }
}

impl StagedPlanOptions {
    /// The screening test these options ask for: a ping-pong at the screening sizes.
    pub fn screening_test(&self) -> Result<PingPong, HarnessError> {
        lgate_stats::check_repetitions(self.screen_reps).map_err(|source| HarnessError::Count {
            field: "screen_reps",
            source,
        })?;
        PingPong::new(self.screen_sizes.clone(), self.screen_reps)
    }
}

impl RunOptions {
    /// A new run in `out`: no topology, one sweep, a random seed, no fast mode, progress on.
    pub fn new(out: impl Into<PathBuf>) -> Self {
        RunOptions {
            out: out.into(),
            force: false,
            resume: false,
            topology: TopologySource::None,
            sweeps: 1,
            seed: None,
            fast: None,
            progress: ProgressStyle::Auto,
            command_line: Vec::new(),
            tool: format!("lgate-harness {}", env!("CARGO_PKG_VERSION")),
            stop_after: None,
            plan: PlanKind::Full,
            journal: lgate_rundir::JournalFormat::Binary,
            judge: None,
        }
    }
}

/// What a finished run reports on rank 0.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The run directory.
    pub run_dir: PathBuf,
    /// Totals.
    pub summary: RunSummary,
    /// Pairs that a previous invocation had measured.
    pub resumed_pairs: usize,
    /// Seconds from entering the run to its first test: every rank's placement, the hosts'
    /// facts, the plan and the run directory.
    pub setup_s: f64,
}
