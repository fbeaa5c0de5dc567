//! `lgate-plogp bcast`: benchmark topology-aware broadcasts against MPI_Bcast and write the
//! decision table, check every broadcast from every root, or apply a table.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use lgate_rundir::MessageSize;

/// The `bcast` subcommands.
#[derive(Debug, Subcommand)]
pub enum BcastCommand {
    /// Time every broadcast (and MPI_Bcast) at each size; write bcast-tuning.json and an Open
    /// MPI rules file to --out.
    Bench(BenchArgs),
    /// Run every broadcast once from every root at each size and check that every rank holds
    /// exactly the root's bytes.
    Check(CheckArgs),
    /// Broadcast with the choice a tuning file makes for the size, and time it.
    Run(RunArgs),
}

/// Where the topology comes from (shared by the subcommands that use one).
#[derive(Debug, Args)]
pub struct TopologyArg {
    /// The topology for MagPIe: a topology file (LGate, JSON or Newick) or `auto` for one
    /// group per host. Without it, only broadcasts over all ranks.
    #[arg(long, value_name = "FILE|auto")]
    topology: Option<String>,
}

/// Options of `bcast bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    topology: TopologyArg,
    /// Message sizes.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0,1KiB,16KiB,64KiB,256KiB,1MiB,2MiB,4MiB",
        value_name = "LIST"
    )]
    sizes: Vec<MessageSize>,
    /// Broadcasts to time: base algorithms (flat, chain, pipeline:SIZE, binary, split-binary,
    /// scatter-allgather, binomial), `magpie` for every MagPIe combination,
    /// magpie(BETWEEN/INSIDE)@DEPTH, MPI_Bcast [default: all of them].
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    algos: Option<Vec<String>>,
    /// Segment sizes of the pipelines in the default set.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "8KiB,64KiB",
        value_name = "LIST"
    )]
    segments: Vec<MessageSize>,
    /// Untimed rounds before the timed ones, per broadcast and size.
    #[arg(long, default_value_t = 50, value_name = "W")]
    warmup: usize,
    /// Timed rounds at most, per broadcast and size.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    rounds: usize,
    /// Fewer timed rounds where N would take longer than this (at least 5 are run).
    #[arg(long, default_value = "1s", value_name = "TIME")]
    budget: humantime::Duration,
    /// The root.
    #[arg(long, default_value_t = 0)]
    root: usize,
    /// The directory for bcast-tuning.json and openmpi-bcast-rules.conf (`--out` is an
    /// alias).
    #[arg(
        long = "output",
        short,
        alias = "out",
        default_value = "bcast-tuning",
        value_name = "DIR"
    )]
    out: PathBuf,
    /// Replace bcast-tuning.json and openmpi-bcast-rules.conf if --output holds them.
    #[arg(long)]
    force: bool,
    /// No progress on stderr.
    #[arg(long, short)]
    quiet: bool,
}

/// Options of `bcast check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    topology: TopologyArg,
    /// Message sizes (odd ones and ones no segment divides find the most bugs).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0,1,7,1000,8193,100000",
        value_name = "LIST"
    )]
    sizes: Vec<MessageSize>,
    /// Segment sizes of the pipelines (333 divides no default size; 300 segments at 100000 B).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "333,8KiB",
        value_name = "LIST"
    )]
    segments: Vec<MessageSize>,
}

/// Options of `bcast run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The tuning file `bcast bench` wrote.
    #[arg(long, value_name = "FILE")]
    tuning: PathBuf,
    /// The message size.
    #[arg(long, default_value = "1MiB", value_name = "SIZE")]
    size: MessageSize,
    /// Broadcasts to time.
    #[arg(long, default_value_t = 100, value_name = "N")]
    rounds: usize,
    /// The root.
    #[arg(long, default_value_t = 0)]
    root: usize,
}

/// Runs a `bcast` subcommand on this rank.
pub use imp::run;

#[cfg(not(feature = "mpi"))]
mod imp {
    pub fn run(_cmd: super::BcastCommand) -> anyhow::Result<()> {
        anyhow::bail!(
            "this lgate-plogp was built without MPI (--no-default-features), so it cannot \
             broadcast; build it with the default features on a machine with an MPI library"
        )
    }
}

#[cfg(feature = "mpi")]
mod imp {
    use super::*;

    use anyhow::Result;

    use lgate_bcast::check::check_all;
    use lgate_bcast::share::{agreed, hosts_and_topology, tuning_file, Agreed, ShareError};
    use lgate_bcast::tuning::candidates_named;
    use lgate_bcast::{bench, time_tuned, BenchOptions, BroadcastTable, Timing, Tuning};
    use lgate_harness::Transport;

    pub fn run(cmd: BcastCommand) -> Result<()> {
        let mpi = lgate_mpi::MpiTransport::init()?;
        let t: &dyn Transport = &mpi;
        let result = match cmd {
            BcastCommand::Bench(args) => bench_cmd(t, args),
            BcastCommand::Check(args) => check_cmd(t, args),
            BcastCommand::Run(args) => run_cmd(t, args),
        };
        if let Err(e) = &result {
            if t.rank() != 0 {
                // Only rank 0 speaks; an error elsewhere would leave the others waiting.
                eprintln!("lgate-plogp: rank {}: error: {e:#}", t.rank());
                mpi.abort(1);
            }
        }
        result
    }

    fn bench_cmd(t: &dyn Transport, args: BenchArgs) -> Result<()> {
        // Before any broadcast: an existing table is replaced only with --force (--out is
        // created when it does not exist yet).
        let free = crate::output::check_outputs_in(&args.out, &Tuning::FILES, args.force);
        let Agreed::Yes(()) = agreed(t, if t.rank() == 0 { free } else { Ok(()) })? else {
            return Ok(());
        };
        let Agreed::Yes((hosts, tree)) = hosts_and_topology(t, args.topology.topology.as_deref())?
        else {
            return Ok(());
        };
        let candidates = candidates_named(
            args.algos.as_deref(),
            tree.as_ref(),
            &MessageSize::bytes(&args.segments),
        )
        .map_err(|e| ShareError::Invalid(crate::algos_error(e)));
        let Agreed::Yes(candidates) = agreed(t, candidates)? else {
            return Ok(());
        };
        let options = BenchOptions {
            sizes: MessageSize::bytes(&args.sizes),
            candidates,
            warmup: args.warmup,
            rounds: args.rounds,
            budget: std::time::Duration::from(args.budget),
            root: args.root,
        };
        if !args.quiet && t.rank() == 0 {
            eprintln!("{}", Timing::progress_header());
        }
        let Some(result) = bench(t, &options, &mut |timing| {
            if !args.quiet {
                eprintln!("{}", timing.progress_line(|b| MessageSize(b).to_string()));
            }
        })?
        else {
            return Ok(());
        };
        let library = t.library_version();
        let tuning = result.into_tuning(t.size(), args.root, tree.as_ref(), &hosts, library);
        let [json, rules] = tuning.write_to(&args.out)?;
        print!("{}", tuning.table(|b| MessageSize(b).to_string()));
        eprintln!("wrote {} and {}", json.display(), rules.display());
        if let Some(line) = tuning.waiting_line() {
            eprintln!("{line}");
        }
        Ok(tuning.check_delivered()?)
    }

    fn check_cmd(t: &dyn Transport, args: CheckArgs) -> Result<()> {
        let Agreed::Yes((_, tree)) = hosts_and_topology(t, args.topology.topology.as_deref())?
        else {
            return Ok(());
        };
        let report = check_all(
            t,
            tree.as_ref(),
            &MessageSize::bytes(&args.sizes),
            &MessageSize::bytes(&args.segments),
        )?;
        if t.rank() == 0 {
            println!("{}", report.verdict()?);
        }
        Ok(())
    }

    fn run_cmd(t: &dyn Transport, args: RunArgs) -> Result<()> {
        let Agreed::Yes(tuning) = tuning_file(t, &args.tuning)? else {
            return Ok(());
        };
        let timing = time_tuned(t, &tuning, args.size.0, args.root, args.rounds)?;
        if t.rank() == 0 {
            println!(
                "{}",
                timing.line(&tuning, args.size.0, &args.size.to_string())
            );
        }
        Ok(())
    }
}
