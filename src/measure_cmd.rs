//! `lgate-plogp measure`: run a pair test between every pair of MPI ranks.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
#[cfg(feature = "mpi")]
use lgate_harness::RunReport;
use lgate_harness::{PairTest, PingPong, ProgressStyle, RunOptions, TopologySource};
use lgate_plogp_bench::{MessageSize, OutputOptions, PLogP, PLogPOptions};

/// Options of `measure`.
#[derive(Debug, Args)]
pub struct MeasureArgs {
    /// The run directory to create [default: lgate-run-<UTC time>].
    #[arg(long, value_name = "DIR", conflicts_with = "resume")]
    out: Option<PathBuf>,
    /// Replace an existing run in --out (only the files a run writes are removed).
    #[arg(long, conflicts_with = "resume")]
    force: bool,
    /// Continue the run in DIR, measuring only the pairs its journal lacks. The parameters
    /// must be the run's; the seed is taken from the run unless given.
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
    /// Print the plan (stages, tests, rounds) and its time from a short calibration (a
    /// screening and a full test inside a host and between two hosts), then stop; nothing is
    /// written.
    #[arg(long)]
    dry_run: bool,
    /// The pair test.
    #[arg(long, value_enum, default_value_t = TestKind::Plogp)]
    test: TestKind,
    /// PLogP: the largest message size; sizes are 0 and powers of two up to it.
    #[arg(long, default_value = "2MiB", value_name = "SIZE")]
    max_size: MessageSize,
    /// Repetitions per message size (and per PLogP procedure).
    #[arg(long, default_value_t = PingPong::DEFAULT_REPS, value_name = "R")]
    reps: usize,
    /// PLogP: the sender waits K x RTT before timing the receive of o_r(m).
    #[arg(long, default_value_t = 1.3, value_name = "K")]
    or_wait: f64,
    /// PLogP: the pair test's time budget in seconds, shared by its sizes and procedures: a
    /// procedure stops repeating (after at least 3 repetitions) once its share is spent; 0
    /// runs every repetition whatever it costs.
    #[arg(long, default_value_t = PLogPOptions::DEFAULT_BUDGET_S, value_name = "SECONDS")]
    pair_budget: f64,
    /// PLogP: do not measure midpoints where a size misses the interpolation of its
    /// neighbours.
    #[arg(long)]
    no_adaptive: bool,
    /// Sizes of the matrices: PLogP's t(m), o_s, o_r, g and features, ping-pong's RTT(m)
    /// [default: 0,1KiB,64KiB,1MiB up to the largest size measured].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    matrix_sizes: Option<Vec<MessageSize>>,
    /// The statistic of the repetitions used in matrices.
    #[arg(long, default_value = "median", value_parser = ["min", "p10", "median", "p90", "mean"])]
    estimator: String,
    /// PLogP: keep every repetition (raw.parquet).
    #[arg(long)]
    raw: bool,
    /// PLogP: also write the tables as CSV.
    #[arg(long)]
    csv: bool,
    /// Ping-pong: message sizes [default: 0 and 1 B to 1 MiB in powers of two].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    sizes: Option<Vec<MessageSize>>,
    /// Stop (as a crash would) once rank 0 has this many results; for testing --resume.
    #[arg(long, hide = true, value_name = "N")]
    stop_after: Option<usize>,
}

/// The pair tests `measure` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TestKind {
    /// The PLogP parameters L, o_s(m), o_r(m), g(m) and RTT(m), and distance matrices.
    Plogp,
    /// Round-trip times for each message size.
    Pingpong,
}

impl MeasureArgs {
    /// The pair test the arguments ask for and what is derived from it, checked.
    fn test(&self) -> Result<(Box<dyn PairTest>, OutputOptions)> {
        let (test, largest): (Box<dyn PairTest>, usize) = match self.test {
            TestKind::Pingpong => {
                let sizes: Vec<usize> = match &self.sizes {
                    Some(s) => s.iter().map(|m| m.0).collect(),
                    None => PingPong::default_sizes(),
                };
                let largest = sizes.iter().copied().max().unwrap_or(0);
                (Box::new(PingPong::new(sizes, self.reps)?), largest)
            }
            TestKind::Plogp => {
                let max = self.max_size.0;
                let options = PLogPOptions {
                    reps: self.reps,
                    or_wait: self.or_wait,
                    adaptive: !self.no_adaptive,
                    raw: self.raw,
                    budget_s: (self.pair_budget > 0.0).then_some(self.pair_budget),
                    ..PLogPOptions::new(max)
                };
                (Box::new(PLogP::new(options)?), max)
            }
        };
        let outputs = OutputOptions::from_flags(
            self.matrix_sizes.clone(),
            largest,
            &self.estimator,
            self.csv,
        )?;
        outputs.check_largest(largest)?;
        Ok((test, outputs))
    }

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
            progress: if self.quiet {
                ProgressStyle::Quiet
            } else {
                ProgressStyle::Auto
            },
            command_line: std::env::args().collect(),
            tool: format!("lgate-plogp {}", env!("CARGO_PKG_VERSION")),
            stop_after: self.stop_after,
            plan: self.plan.plan()?,
        })
    }
}

#[cfg(feature = "mpi")]
fn print_summary(report: &RunReport, derived: &[String]) {
    let s = &report.summary;
    let resumed = if report.resumed_pairs > 0 {
        format!(" (resumed: {} measured before)", report.resumed_pairs)
    } else {
        String::new()
    };
    if s.pairs_measured == 0 {
        eprintln!(
            "nothing left to measure: the journal holds all {} pairs; outputs rebuilt from it",
            s.pairs_total
        );
    } else {
        eprintln!(
            "measured {} pairs{resumed} in {:.2} s: pair tests ran {:.1}% of the wall time, the \
         harness took {:.1}% (barriers, bookkeeping, I/O)",
            s.pairs_measured,
            s.wall_s,
            100.0 * (1.0 - s.overhead_share),
            100.0 * s.overhead_share
        );
        if let Some(plan) = lgate_rundir::RunDir::open(&report.run_dir)
            .and_then(|r| r.read_meta())
            .ok()
            .and_then(|m| m.schedule.plan)
        {
            for note in &plan.notes {
                eprintln!("  plan: {note}");
            }
        }
        for stage in &s.stages {
            eprintln!(
                "  stage {:<8} {:>7} tests  {:>8.2} s{}",
                stage.stage.name(),
                stage.tests,
                stage.wall_s,
                match stage.stage {
                    lgate_rundir::Stage::Hosts => "  (screening every pair inside each host)",
                    lgate_rundir::Stage::Between => "  (screening sampled pairs between hosts)",
                    lgate_rundir::Stage::Refine => {
                        "  (screening more pairs of hosts whose samples disagree)"
                    }
                    lgate_rundir::Stage::Alone => "  (screened pairs again, one at a time)",
                    lgate_rundir::Stage::Sample => "  (the full test for a sample of pairs)",
                }
            );
        }
        if let Some((mean, max)) = s.waiting_cpu_share() {
            eprintln!(
                "while waiting for their next test, ranks used {:.1}% of a core on average (at \
                 most {:.1}%)",
                100.0 * mean,
                100.0 * max
            );
        }
    }
    let mut files = vec![
        lgate_rundir::META_FILE.to_string(),
        lgate_rundir::JOURNAL_FILE.to_string(),
    ];
    files.extend(derived.iter().cloned());
    eprintln!("wrote {}/ ({})", report.run_dir.display(), files.join(", "));
}

/// Runs `measure` on this rank.
#[cfg(feature = "mpi")]
pub fn run(args: MeasureArgs) -> Result<()> {
    use lgate_harness::Transport;

    let options = args.options()?;
    let (mut test, outputs) = args.test()?;
    let mpi = lgate_mpi::MpiTransport::init_for_pair_tests()?;
    let rank = mpi.rank();
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
            let derived = lgate_plogp_bench::derive(&run, &outputs)?;
            if !args.quiet {
                print_summary(&report, &derived);
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
    args.test()?;
    anyhow::bail!(
        "this lgate-plogp was built without MPI (--no-default-features), so it cannot measure; \
         build it with the default features on a machine with an MPI library"
    )
}
