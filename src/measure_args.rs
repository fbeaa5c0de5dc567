//! The flags of `lgate-plogp measure`, and the run options they make.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
use lgate_harness::{ProgressStyle, RunOptions, TopologySource};

/// Options of `measure`.
#[derive(Debug, Args)]
pub struct MeasureArgs {
    /// The run directory to create [default: lgate-run-<UTC time>] (`--out` is an alias).
    #[arg(
        long = "output",
        short,
        alias = "out",
        value_name = "DIR",
        conflicts_with = "resume"
    )]
    pub(crate) out: Option<PathBuf>,
    /// Replace an existing run in --output: its files and the report and pictures made from it
    /// go, other files stay.
    #[arg(long, conflicts_with = "resume")]
    pub(crate) force: bool,
    /// Continue the run in DIR, measuring only the pairs its journal lacks, with the run's own
    /// flags (read from its meta.json); flags given again must agree with them.
    #[arg(long, value_name = "DIR")]
    pub(crate) resume: Option<PathBuf>,
    /// The topology that decides which pairs run at the same time: a topology file (LGate,
    /// JSON or Newick), or `auto` for one group per host; its leaves are the staged plan's
    /// hosts [default: auto with --plan staged; none, one pair at a time, with --plan full].
    #[arg(long, value_name = "FILE|auto")]
    pub(crate) topology: Option<String>,
    #[command(flatten)]
    pub(crate) plan: crate::plan_args::PlanArgs,
    /// Run the whole schedule this many times, each sweep after the other.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub(crate) sweeps: u32,
    /// Seed of the pair order and of fast mode's choice [default: random, recorded].
    #[arg(long, value_name = "N")]
    pub(crate) seed: Option<u64>,
    /// Test only this share (0 < F <= 1) of the ranks of each group, chosen at random.
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    pub(crate) fast: Option<f64>,
    /// No progress and no summary on stderr.
    #[arg(long, short)]
    pub(crate) quiet: bool,
    /// Progress on rank 0's stderr: a bar when it is a terminal and lines otherwise (auto), a
    /// bar always (under mpirun or srun rank 0's stderr is a pipe even when yours is a
    /// terminal: ask for the bar), lines, or none.
    #[arg(long, value_enum, default_value_t = ProgressFlag::Auto, value_name = "HOW")]
    pub(crate) progress: ProgressFlag,
    /// Print the plan (stages, tests, rounds) and its time from a short calibration (a
    /// screening and a full test inside a host and between two hosts), then stop; nothing is
    /// written.
    #[arg(long)]
    pub(crate) dry_run: bool,
    #[command(flatten)]
    pub(crate) pair_test: crate::test_args::TestArgs,
    /// How rank 0 keeps the record of the tests: binary (journal.bin, about 56 bytes a
    /// screening test) or json (journal.jsonl, a JSON line of about 470 bytes each); a resumed
    /// run goes on in its own. `lgate-plogp journal RUN` prints either as JSON lines.
    #[arg(long, value_enum, default_value_t = JournalFlag::Binary, value_name = "FORMAT")]
    pub(crate) journal: JournalFlag,
    /// Stop (as a crash would) once rank 0 has this many results; for testing --resume.
    #[arg(long, hide = true, value_name = "N")]
    pub(crate) stop_after: Option<usize>,
}

/// How `measure` writes its journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum JournalFlag {
    /// Length-prefixed binary records (journal.bin).
    Binary,
    /// One JSON line per test (journal.jsonl).
    Json,
}

/// How `measure` shows its progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressFlag {
    /// A bar on a terminal, lines otherwise.
    Auto,
    /// A bar, even through a launcher's pipe.
    Bar,
    /// A line every ten seconds.
    Lines,
    /// No progress (the resume command and the summary still come, unless --quiet).
    None,
}

impl MeasureArgs {
    /// The run's options as the flags give them, checked.
    pub fn options(&self) -> Result<RunOptions> {
        crate::count("--sweeps", lgate_stats::check_sweeps(self.sweeps))?;
        let (out, resume) = match &self.resume {
            Some(dir) => (dir.clone(), true),
            None => (
                self.out.clone().unwrap_or_else(|| {
                    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
                        .to_string()
                        .replace(':', "");
                    PathBuf::from(format!("lgate-run-{}", now.trim_end_matches('Z')))
                }),
                false,
            ),
        };
        let topology = match (&self.topology, self.plan.staged()) {
            (None, true) => TopologySource::Auto,
            (flag, _) => TopologySource::from_flag(flag.as_deref()),
        };
        crate::plan_args::check_fast(self.fast)?;
        Ok(RunOptions {
            out,
            force: self.force,
            resume,
            topology,
            sweeps: self.sweeps,
            seed: self.seed,
            fast: self.fast,
            progress: match (self.quiet, self.progress) {
                (true, _) => ProgressStyle::Quiet,
                (_, ProgressFlag::None) => ProgressStyle::None,
                (_, ProgressFlag::Auto) => ProgressStyle::Auto,
                (_, ProgressFlag::Bar) => ProgressStyle::Bar,
                (_, ProgressFlag::Lines) => ProgressStyle::Lines,
            },
            command_line: std::env::args().collect(),
            tool: format!("lgate-plogp {}", env!("CARGO_PKG_VERSION")),
            stop_after: self.stop_after,
            plan: self.plan.plan()?,
            journal: match self.journal {
                JournalFlag::Binary => lgate_rundir::JournalFormat::Binary,
                JournalFlag::Json => lgate_rundir::JournalFormat::Json,
            },
            // The staged plan's confidence budget asks `cluster`'s own judge.
            judge: Some(&lgate_cluster::ScreenedJudge),
        })
    }
}
