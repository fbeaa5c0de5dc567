//! `lgate-plogp measure`: run a pair test between every pair of MPI ranks.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
use lgate_derive::OutputOptions;
#[cfg(feature = "mpi")]
use lgate_harness::RunReport;
use lgate_harness::{PairTest, PingPong, ProgressStyle, RunOptions, TopologySource};
use lgate_plogp_bench::{PLogP, PLogPOptions};
use lgate_rundir::MessageSize;

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
    /// [default: 0,1KiB,64KiB,1MiB up to the largest size measured; a ping-pong: those of them
    /// it measures, else its smallest and largest size].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    matrix_sizes: Option<Vec<MessageSize>>,
    /// The statistic of the repetitions used in matrices.
    #[arg(long, default_value = "median", value_parser = crate::estimator_parser())]
    estimator: lgate_rundir::Estimator,
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

/// The pair tests `measure` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TestKind {
    /// The PLogP parameters L, o_s(m), o_r(m), g(m) and RTT(m), and distance matrices.
    Plogp,
    /// Round-trip times for each message size.
    Pingpong,
}

/// `measure`'s flags alone, parsed from words: a resumed run's recorded ones, then those given
/// now, a later flag replacing an earlier one.
#[derive(Debug, clap::Parser)]
#[command(name = "measure", args_override_self = true)]
struct MeasureLine {
    #[command(flatten)]
    args: MeasureArgs,
}

/// Flags of a run's command line that do not carry over to its resumption, and whether each
/// takes a value.
const NOT_RESUMED: &[(&str, bool)] = &[
    ("--out", true),
    ("--output", true),
    ("-o", true),
    ("--force", false),
    ("--resume", true),
    ("--dry-run", false),
    ("--stop-after", true),
    ("--quiet", false),
    ("-q", false),
];

/// The flags of a recorded command line that a resumption takes over: those after `measure`
/// but the ones in [`NOT_RESUMED`]; `None` when it is no `measure` command.
fn carried_over(recorded: &[String]) -> Option<Vec<String>> {
    let at = recorded.iter().position(|w| w == "measure")?;
    let mut out = Vec::new();
    let mut words = recorded[at + 1..].iter();
    while let Some(word) = words.next() {
        let name = word.split('=').next().unwrap_or(word);
        match NOT_RESUMED.iter().find(|(flag, _)| *flag == name) {
            Some((_, takes_value)) => {
                if *takes_value && !word.contains('=') {
                    words.next();
                }
            }
            None => out.push(word.clone()),
        }
    }
    Some(out)
}

/// The arguments of a resumption: the run's `recorded` command line, then the words given
/// `now` (after `measure`); `None` when the recorded line is not one this version reads.
fn resumed_args(recorded: &[String], now: &[String]) -> Option<MeasureArgs> {
    let mut words = vec!["measure".to_string()];
    words.extend(carried_over(recorded)?);
    words.extend(now.iter().cloned());
    <MeasureLine as clap::Parser>::try_parse_from(words)
        .ok()
        .map(|line| line.args)
}

impl MeasureArgs {
    /// The pair test the arguments ask for and what is derived from it, checked.
    fn test(&self) -> Result<(Box<dyn PairTest>, OutputOptions)> {
        let (test, outputs, largest): (Box<dyn PairTest>, OutputOptions, usize) = match self.test {
            TestKind::Pingpong => {
                let sizes: Vec<usize> = match &self.sizes {
                    Some(s) => s.iter().map(|m| m.0).collect(),
                    None => PingPong::default_sizes(),
                };
                let largest = sizes.iter().copied().max().unwrap_or(0);
                let outputs = OutputOptions::from_pingpong_flags(
                    self.matrix_sizes.clone(),
                    &sizes,
                    self.estimator,
                    self.csv,
                )?;
                (Box::new(PingPong::new(sizes, self.reps)?), outputs, largest)
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
                let outputs = OutputOptions::from_flags(
                    self.matrix_sizes.clone(),
                    max,
                    self.estimator,
                    self.csv,
                )?;
                (Box::new(PLogP::new(options)?), outputs, max)
            }
        };
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

#[cfg(feature = "mpi")]
fn print_summary(report: &RunReport, derived: &[String]) {
    let s = &report.summary;
    let meta = lgate_rundir::RunDir::open(&report.run_dir)
        .and_then(|r| r.read_meta())
        .ok();
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
        if let Some(plan) = meta.as_ref().and_then(|m| m.schedule.plan.as_ref()) {
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
    if let Some(meta) = &meta {
        if let Some(first) = meta.mpi.library_line() {
            let protocol = meta.mpi.protocol().len();
            eprintln!("MPI: {first}; {protocol} protocol thresholds recorded in meta.json");
        }
    }
    if let Some(meta) = &meta {
        for line in crate::output::host_summary_lines(meta) {
            eprintln!("{line}");
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

    // Flags every rank reads alike are checked before MPI starts, and rank 0 alone says what
    // is wrong with them.
    if args.resume.is_none() {
        args.options().map_err(crate::output::once_per_job)?;
        args.test().map_err(crate::output::once_per_job)?;
    }
    let mpi = lgate_mpi::MpiTransport::init_for_pair_tests()?;
    let rank = mpi.rank();
    let args = match args.resume.clone() {
        Some(dir) => with_run_flags(&mpi, &dir, args)?,
        None => args,
    };
    let once = |e: anyhow::Error| match rank {
        0 => e,
        _ => anyhow::Error::new(crate::output::SaidByRankZero),
    };
    let options = args.options().map_err(once)?;
    let (mut test, outputs) = args.test().map_err(once)?;
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

/// With `--resume DIR`: the run's recorded flags with those given now on top. Rank 0 reads
/// DIR/meta.json and every rank takes its reading, so the run directory need only be visible
/// to rank 0.
#[cfg(feature = "mpi")]
fn with_run_flags(
    mpi: &lgate_mpi::MpiTransport,
    dir: &std::path::Path,
    args: MeasureArgs,
) -> Result<MeasureArgs> {
    use lgate_harness::Transport;

    let rank = mpi.rank();
    let reading: Result<Vec<String>, String> = if rank == 0 {
        lgate_rundir::RunDir::open(dir)
            .and_then(|r| r.read_meta())
            .map(|m| m.command_line)
            .map_err(|e| e.to_string())
    } else {
        Ok(Vec::new())
    };
    let mut bytes = serde_json::to_vec(&reading)?;
    let mut len = (bytes.len() as u64).to_le_bytes();
    mpi.library_broadcast(&mut len, 0)?;
    bytes.resize(u64::from_le_bytes(len) as usize, 0);
    mpi.library_broadcast(&mut bytes, 0)?;
    let recorded = match serde_json::from_slice::<Result<Vec<String>, String>>(&bytes)? {
        Ok(recorded) => recorded,
        Err(_) if rank != 0 => return Err(anyhow::Error::new(crate::output::SaidByRankZero)),
        Err(e) => anyhow::bail!("{e}"),
    };
    let now: Vec<String> = std::env::args()
        .skip_while(|w| w != "measure")
        .skip(1)
        .collect();
    match resumed_args(&recorded, &now) {
        Some(merged) => Ok(merged),
        None => {
            if rank == 0 {
                eprintln!(
                    "lgate-plogp: warning: {}: the run's recorded command line is not one this \
                     version reads; resuming with the flags given now",
                    dir.display()
                );
            }
            Ok(args)
        }
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
