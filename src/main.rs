//! lgate-plogp: discover the topology of a parallel machine from pairwise measurements.
//!
//! This binary parses arguments and wires the library crates together; the work is done in
//! `crates/`.

mod bcast_cmd;
mod change_args;
mod cluster_cmd;
mod diff_cmd;
mod import_cmd;
mod journal_cmd;
mod knob_names;
mod measure_args;
mod measure_cmd;
mod method_args;
mod output;
mod plan_args;
mod plot_cmd;
mod report_cmd;
#[cfg(feature = "mpi")]
mod resume_args;
mod score_cmd;
mod simulate_cmd;
mod sizes_cmd;
mod test_args;
mod topology_cmd;

use std::process::ExitCode;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// A count a flag gave, refused in the flag's name: "--reps must be at least 1".
fn count(flag: &str, checked: Result<(), lgate_stats::CountError>) -> anyhow::Result<()> {
    checked.map_err(|e| anyhow::anyhow!("{flag} {e}"))
}

/// A broadcast list `--algos` the bcast library refused, in the flags' words.
#[cfg(feature = "mpi")]
fn algos_error(e: lgate_bcast::tuning::TuningError) -> String {
    match e {
        lgate_bcast::tuning::TuningError::MagpieWithoutTopology => {
            "--algos magpie needs --topology".into()
        }
        e => format!("--algos: {e}"),
    }
}

/// `--estimator`: one of the estimators' names, as the typed estimator.
fn estimator_parser() -> impl TypedValueParser<Value = lgate_rundir::Estimator> {
    PossibleValuesParser::new(lgate_rundir::Estimator::NAMES)
        .try_map(|name| name.parse::<lgate_rundir::Estimator>())
}

/// Discover the topology of a parallel machine from pairwise PLogP measurements.
#[derive(Debug, Parser)]
#[command(name = "lgate-plogp", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Measure every pair of MPI ranks (run it under mpirun or srun).
    Measure(measure_cmd::MeasureArgs),
    /// Cluster a distance matrix (or a measured run) into a hierarchical topology.
    Cluster(cluster_cmd::ClusterArgs),
    /// Write the run directory of a simulated machine with known topology (no MPI needed).
    Simulate(simulate_cmd::SimulateArgs),
    /// Compare a topology with known placement (adjusted Rand index and accuracy per level).
    Score(score_cmd::ScoreArgs),
    /// Draw heat maps, PLogP curves and dendrograms (PNG or SVG).
    #[command(subcommand)]
    Plot(plot_cmd::PlotCommand),
    /// Write a one-page HTML report of a run (images inlined; opens with no network).
    Report(report_cmd::ReportArgs),
    /// PLogP parameters per message size as a table: latency (RTT/2) in us and bandwidth
    /// (size/g) in MB/s per placement class, as OSU's and mpiGraph's tools print theirs.
    Sizes(sizes_cmd::SizesArgs),
    /// Topology-aware broadcasts: benchmark them against MPI_Bcast, check them, apply a tuning
    /// (run under mpirun or srun).
    #[command(subcommand)]
    Bcast(bcast_cmd::BcastCommand),
    /// What changed between two runs of one machine (exit 0: nothing beyond the noise, 1:
    /// changed, 2: error).
    Diff(diff_cmd::DiffArgs),
    /// Make a run directory from another tool's measurements (a pair list, mmpi's .dat,
    /// mpiGraph's output).
    #[command(subcommand)]
    Import(import_cmd::ImportCommand),
    /// Read, check and convert topology files (LGate, JSON, Newick).
    #[command(subcommand)]
    Topology(topology_cmd::TopologyCommand),
    /// Print a run's journal (its record of every pair test) as JSON lines, or convert it
    /// between the binary and the JSON-lines format.
    Journal(journal_cmd::JournalArgs),
}

/// The version line: the program's, and the MPI it was built against.
fn version() -> String {
    #[cfg(feature = "mpi")]
    let mpi = format!("built with {}", lgate_mpi::built_with());
    #[cfg(not(feature = "mpi"))]
    let mpi = "built without MPI".to_string();
    format!("{} ({mpi})", env!("CARGO_PKG_VERSION"))
}

fn main() -> ExitCode {
    lgate_knobs::name_by(knob_names::knob_flag);
    // Built once per process; clap keeps borrowed strings.
    let version: &'static str = Box::leak(version().into_boxed_str());
    let matches = match Cli::command().version(version).try_get_matches() {
        Ok(m) => m,
        // Under a launcher every rank parses the same words: rank 0 says what is wrong.
        Err(e) if output::another_rank_says_it() => std::process::exit(e.exit_code()),
        Err(e) => e.exit(),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    if let Command::Diff(args) = cli.command {
        return match diff_cmd::run(args) {
            Ok(changed) => ExitCode::from(u8::from(changed)),
            Err(err) if output::is_broken_pipe(&err) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("lgate-plogp: error: {err:#}");
                ExitCode::from(2)
            }
        };
    }
    let result = match cli.command {
        Command::Measure(args) => measure_cmd::run(args),
        Command::Cluster(args) => cluster_cmd::run(args),
        Command::Score(args) => score_cmd::score(args),
        Command::Simulate(args) => simulate_cmd::run(args),
        Command::Import(command) => import_cmd::run(command),
        Command::Plot(cmd) => plot_cmd::run(cmd),
        Command::Report(args) => report_cmd::report(args),
        Command::Sizes(args) => sizes_cmd::sizes(args),
        Command::Topology(cmd) => topology_cmd::run(cmd),
        Command::Journal(args) => journal_cmd::journal(args),
        Command::Bcast(cmd) => bcast_cmd::run(cmd),
        Command::Diff(_) => unreachable!("handled above"),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if output::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) if err.is::<output::SaidByRankZero>() => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("lgate-plogp: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
