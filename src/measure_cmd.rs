//! `lgate-plogp measure`: run a pair test between every pair of MPI ranks.

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
    out: Option<PathBuf>,
    /// Replace an existing run in --output (only the files a run writes are removed).
    #[arg(long, conflicts_with = "resume")]
    force: bool,
    /// Continue the run in DIR, measuring only the pairs its journal lacks, with the run's own
    /// flags (read from its meta.json); flags given again must agree with them.
    #[arg(long, value_name = "DIR")]
    resume: Option<PathBuf>,
    /// The topology that decides which pairs run at the same time: a topology file (LGate,
    /// JSON or Newick), or `auto` for one group per host; its leaves are the staged plan's
    /// hosts [default: auto with --plan staged; none, one pair at a time, with --plan full].
    #[arg(long, value_name = "FILE|auto")]
    topology: Option<String>,
    #[command(flatten)]
    plan: crate::plan_args::PlanArgs,
    /// Run the whole schedule this many times, each sweep after the other.
    #[arg(long, default_value_t = 1, value_name = "N")]
    sweeps: u32,
    /// Seed of the pair order and of fast mode's choice [default: random, recorded].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Test only this share (0 < F <= 1) of the ranks of each group, chosen at random.
    #[arg(long, value_name = "F")]
    fast: Option<f64>,
    /// No progress and no summary on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Progress on rank 0's stderr: a bar when it is a terminal and lines otherwise (auto), a
    /// bar always (under mpirun or srun rank 0's stderr is a pipe even when yours is a
    /// terminal: ask for the bar), lines, or none.
    #[arg(long, value_enum, default_value_t = ProgressFlag::Auto, value_name = "HOW")]
    progress: ProgressFlag,
    /// Print the plan (stages, tests, rounds) and its time from a short calibration (a
    /// screening and a full test inside a host and between two hosts), then stop; nothing is
    /// written.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    pair_test: crate::test_args::TestArgs,
    /// Stop (as a crash would) once rank 0 has this many results; for testing --resume.
    #[arg(long, hide = true, value_name = "N")]
    stop_after: Option<usize>,
}

/// How `measure` shows its progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProgressFlag {
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
    fn options(&self) -> Result<RunOptions> {
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
        })
    }
}

/// Runs `measure` on this rank.
#[cfg(feature = "mpi")]
pub fn run(args: MeasureArgs) -> Result<()> {
    use lgate_harness::Transport;

    // Flags every rank reads alike are checked before MPI starts, and rank 0 alone says what
    // is wrong with them.
    if args.resume.is_none() {
        args.options().map_err(crate::output::once_per_job)?;
        args.pair_test.test().map_err(crate::output::once_per_job)?;
    }
    let mpi = lgate_mpi::MpiTransport::init_for_pair_tests()?;
    let rank = mpi.rank();
    let args = match args.resume.clone() {
        Some(dir) => crate::resume_args::with_run_flags(&mpi, &dir, args)?,
        None => args,
    };
    let once = |e: anyhow::Error| match rank {
        0 => e,
        _ => anyhow::Error::new(crate::output::SaidByRankZero),
    };
    let options = args.options().map_err(once)?;
    let (mut test, outputs) = args.pair_test.test().map_err(once)?;
    if args.dry_run {
        return match lgate_harness::dry_run(&mpi, test.as_mut(), &options) {
            Ok(Some(plan)) => {
                for line in plan.lines {
                    println!("{line}");
                }
                Ok(())
            }
            Ok(None) | Err(lgate_harness::HarnessError::Aborted) => Ok(()),
            Err(e) if e.leaves_others_waiting() => {
                eprintln!("lgate-plogp: rank {rank}: error: {e}");
                mpi.abort(1)
            }
            Err(e) => Err(e.into()),
        };
    }
    match lgate_harness::run(&mpi, test.as_mut(), &options) {
        Ok(Some(report)) => {
            // Measured; now derived, on rank 0 alone, once every rank is done.
            let run = lgate_rundir::RunDir::open(&report.run_dir)?;
            let derived = lgate_derive::derive(&run, &outputs)?;
            // Everything is written: a signal from here on (a launcher ending a rank stuck in
            // MPI_Finalize) has nothing to continue.
            lgate_harness::interrupt::disarm();
            if !args.quiet {
                let meta = run.read_meta().ok();
                let summary = lgate_harness::MeasureSummary {
                    report: &report,
                    meta: meta.as_ref(),
                    derived: &derived,
                };
                eprint!("{summary}");
            }
            Ok(())
        }
        Ok(None) => Ok(()),
        // Rank 0 says why and its exit status becomes mpirun's; the others finish MPI cleanly
        // and quietly, so that mpirun does not kill rank 0 before it has said it.
        Err(lgate_harness::HarnessError::Aborted) => Ok(()),
        Err(e) if e.leaves_others_waiting() => {
            eprintln!("lgate-plogp: rank {rank}: error: {e}");
            mpi.abort(1)
        }
        Err(e) => Err(e.into()),
    }
}

/// Runs `measure` on this rank.
#[cfg(not(feature = "mpi"))]
pub fn run(args: MeasureArgs) -> Result<()> {
    // The arguments are still checked, so a script fails for the right reason.
    args.options()?;
    args.pair_test.test()?;
    anyhow::bail!(
        "this lgate-plogp was built without MPI (--no-default-features), so it cannot measure; \
         build it with the default features on a machine with an MPI library"
    )
}
