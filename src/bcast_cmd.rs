//! `lgate-plogp bcast`: benchmark topology-aware broadcasts against MPI_Bcast and write the
//! decision table, check every broadcast from every root, or apply a table.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use lgate_plogp_bench::MessageSize;

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
    /// The directory for bcast-tuning.json and openmpi-bcast-rules.conf.
    #[arg(long, default_value = "bcast-tuning", value_name = "DIR")]
    out: PathBuf,
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
    /// Segment sizes of the pipelines.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "3,8KiB",
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
pub fn run(cmd: BcastCommand) -> Result<()> {
    imp::run(cmd)
}

#[cfg(not(feature = "mpi"))]
mod imp {
    use super::*;

    pub fn run(_cmd: BcastCommand) -> Result<()> {
        anyhow::bail!(
            "this lgate-plogp was built without MPI (--no-default-features), so it cannot \
             broadcast; build it with the default features on a machine with an MPI library"
        )
    }
}

#[cfg(feature = "mpi")]
mod imp {
    use super::*;

    use std::time::Duration;

    use anyhow::Context;
    use lgate_bcast::bench::{magpie_candidates, payload};
    use lgate_bcast::{
        bench, broadcast, broadcast_tuned, default_candidates, parse_candidate, share_from_rank0,
        BaseAlgorithm, BenchOptions, Candidate, Plan, Tuning,
    };
    use lgate_harness::{resolve_topology, TopologySource, Transport};
    use lgate_topology::TopologyNode;

    /// The hosts of every rank, on every rank.
    fn hosts(t: &dyn Transport) -> Result<Vec<String>> {
        let tag = lgate_harness::Tag::HOSTS;
        let mine = t.processor_name();
        if t.rank() != 0 {
            t.send(0, tag, mine.as_bytes())?;
        }
        let all = if t.rank() == 0 {
            let mut all = vec![mine];
            for from in 1..t.size() {
                all.push(String::from_utf8_lossy(&t.recv_vec(from, tag)?).into_owned());
            }
            Some(serde_json::to_vec(&all)?)
        } else {
            None
        };
        let bytes = share_from_rank0(t, all)?.context("rank 0 could not list the hosts")?;
        Ok(serde_json::from_slice(&bytes)?)
    }

    /// The topology on every rank, resolved on rank 0 (which reports a bad file); `Ok(None)`
    /// on the other ranks when rank 0 failed, so that they stop quietly.
    fn topology(
        t: &dyn Transport,
        flag: Option<&str>,
        hosts: &[String],
    ) -> Result<Option<Option<TopologyNode>>> {
        let Some(flag) = flag else {
            return Ok(Some(None));
        };
        let (text, failure) = if t.rank() == 0 {
            match resolve_topology(&TopologySource::from_flag(Some(flag)), hosts) {
                Ok(top) => (
                    Some(lgate_topology::lgate::to_string(&top).into_bytes()),
                    None,
                ),
                Err(e) => (None, Some(e)),
            }
        } else {
            (None, None)
        };
        match share_from_rank0(t, text)? {
            Some(bytes) => {
                let text = String::from_utf8(bytes)?;
                let top = lgate_topology::lgate::parse(&text, Some(t.size()))?;
                Ok(Some(Some(top.tree().clone())))
            }
            None => match failure {
                Some(e) => Err(anyhow::Error::from(e).context(format!("--topology {flag}"))),
                None => Ok(None),
            },
        }
    }

    /// A result every rank computes alike (from the same arguments and files), settled by rank
    /// 0's: when rank 0 failed, it reports the error and the others return `Ok(None)` to stop
    /// quietly, so that one line is printed.
    fn agreed<T>(t: &dyn Transport, result: Result<T>) -> Result<Option<T>> {
        let ok = if t.rank() == 0 {
            Some(vec![u8::from(result.is_ok())])
        } else {
            None
        };
        let ok = share_from_rank0(t, ok)?.is_some_and(|b| b == [1]);
        match (ok, result) {
            (true, r) => r.map(Some),
            (false, Err(e)) if t.rank() == 0 => Err(e),
            (false, _) => Ok(None),
        }
    }

    fn sizes(list: &[MessageSize]) -> Vec<usize> {
        list.iter().map(|s| s.0).collect()
    }

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

    fn candidates(args: &BenchArgs, tree: Option<&TopologyNode>) -> Result<Vec<Candidate>> {
        let segments = sizes(&args.segments);
        let Some(list) = &args.algos else {
            return Ok(default_candidates(tree, &segments));
        };
        let mut out = Vec::new();
        for name in list {
            if name == "magpie" {
                anyhow::ensure!(tree.is_some(), "--algos magpie needs --topology");
                out.extend(magpie_candidates(tree, &segments));
            } else {
                out.push(parse_candidate(name, tree).map_err(|e| anyhow::anyhow!("--algos: {e}"))?);
            }
        }
        Ok(out)
    }

    fn bench_cmd(t: &dyn Transport, args: BenchArgs) -> Result<()> {
        let hosts = hosts(t)?;
        let Some(tree) = topology(t, args.topology.topology.as_deref(), &hosts)? else {
            return Ok(());
        };
        let Some(candidates) = agreed(t, candidates(&args, tree.as_ref()))? else {
            return Ok(());
        };
        let options = BenchOptions {
            sizes: sizes(&args.sizes),
            candidates,
            warmup: args.warmup,
            rounds: args.rounds,
            budget: Duration::from(args.budget),
            root: args.root,
        };
        let quiet = args.quiet;
        if !quiet && t.rank() == 0 {
            eprintln!(
                "{:>9} {:<42} {:>6} {:>11} {:>11} {:>11} {:>11} {:>11}",
                "size",
                "broadcast",
                "rounds",
                "min_us",
                "median_us",
                "p90_us",
                "mean_us",
                "trimmed_us"
            );
        }
        let timings = bench(t, &options, &mut |timing| {
            if !quiet {
                eprintln!(
                    "{:>9} {:<42} {:>6} {:>11.1} {:>11.1} {:>11.1} {:>11.1} {:>11.1}{}",
                    MessageSize(timing.size).to_string(),
                    timing.candidate,
                    timing.rounds,
                    timing.min_us,
                    timing.median_us,
                    timing.p90_us,
                    timing.mean_us,
                    timing.trimmed_us,
                    if timing.correct { "" } else { "  WRONG BYTES" }
                );
            }
        })?;
        let Some(timings) = timings else {
            return Ok(());
        };
        let wrong: Vec<String> = timings
            .iter()
            .filter(|t| !t.correct)
            .map(|t| format!("{} at {} bytes", t.candidate, t.size))
            .collect();
        let machine = serde_json::json!({
            "hosts": hosts,
            "library": t.library_version(),
        });
        let tuning = Tuning::from_timings(timings, t.size(), args.root, tree.as_ref(), machine);
        std::fs::create_dir_all(&args.out)
            .with_context(|| format!("{}: cannot create the directory", args.out.display()))?;
        let json = args.out.join("bcast-tuning.json");
        lgate_output::write_atomic(&json, serde_json::to_string_pretty(&tuning)?.as_bytes())
            .with_context(|| format!("{}: cannot write", json.display()))?;
        let rules = args.out.join("openmpi-bcast-rules.conf");
        lgate_output::write_atomic(&rules, tuning.openmpi_rules().as_bytes())
            .with_context(|| format!("{}: cannot write", rules.display()))?;
        print_table(&tuning);
        eprintln!("wrote {} and {}", json.display(), rules.display());
        anyhow::ensure!(
            wrong.is_empty(),
            "broadcasts that delivered other bytes than the root's (a failure, not a result): {}",
            wrong.join(", ")
        );
        Ok(())
    }

    /// The decision table with MPI_Bcast's time beside the choice.
    fn print_table(tuning: &Tuning) {
        println!(
            "{:>9}  {:<40} {:>12} {:>12} {:>8} {:>6}",
            "size", "fastest", "time_us", "MPI_Bcast_us", "speedup", "lead"
        );
        for r in &tuning.ranges {
            let time = |name: &str| {
                tuning
                    .timings
                    .iter()
                    .find(|t| t.size == r.measured_bytes && t.candidate == name)
                    .map(|t| t.trimmed_us)
            };
            let best = time(&r.choice).unwrap_or(f64::NAN);
            let library = time(lgate_bcast::bench::LIBRARY);
            println!(
                "{:>9}  {:<40} {:>12.1} {:>12} {:>8} {:>6}",
                MessageSize(r.measured_bytes).to_string(),
                r.choice,
                best,
                library.map_or("-".into(), |l| format!("{l:.1}")),
                library.map_or("-".into(), |l| format!("{:.2}x", l / best)),
                r.lead.map_or("-".into(), |l| format!("{:.2}", l)),
            );
        }
    }

    fn check_cmd(t: &dyn Transport, args: CheckArgs) -> Result<()> {
        let hosts = hosts(t)?;
        let Some(tree) = topology(t, args.topology.topology.as_deref(), &hosts)? else {
            return Ok(());
        };
        let segments = sizes(&args.segments);
        let plans: Vec<Plan> = default_candidates(tree.as_ref(), &segments)
            .into_iter()
            .chain(
                // Every base algorithm also inside groups and between coordinators.
                BaseAlgorithm::all(&segments).into_iter().flat_map(|a| {
                    tree.iter().map(move |tree| {
                        Candidate::Plan(Plan::Magpie {
                            tree: tree.clone(),
                            between: a,
                            inside: a,
                        })
                    })
                }),
            )
            .filter_map(|c| match c {
                Candidate::Plan(p) => Some(p),
                Candidate::Library => None,
            })
            .collect();
        let mut wrong = Vec::new();
        for plan in &plans {
            for root in 0..t.size() {
                for &len in &sizes(&args.sizes) {
                    let mut buf = if t.rank() == root {
                        payload(root, len)
                    } else {
                        vec![0xee; len]
                    };
                    broadcast(t, &mut buf, root, plan)?;
                    if buf != payload(root, len) {
                        wrong.push(format!("{} from root {root} at {len} bytes", plan.name()));
                    }
                }
            }
        }
        // Every rank's verdict to rank 0.
        let verdicts = share_verdicts(t, &wrong)?;
        if t.rank() == 0 {
            anyhow::ensure!(verdicts.is_empty(), "wrong bytes: {}", verdicts.join("; "));
            println!(
                "{} broadcasts x {} roots x {} sizes on {} ranks: every rank held the root's bytes",
                plans.len(),
                t.size(),
                args.sizes.len(),
                t.size()
            );
        }
        Ok(())
    }

    /// Rank 0 learns what went wrong on every rank.
    fn share_verdicts(t: &dyn Transport, wrong: &[String]) -> Result<Vec<String>> {
        let tag = lgate_harness::Tag::VERDICTS;
        let mine = serde_json::to_vec(wrong)?;
        if t.rank() != 0 {
            t.send(0, tag, &mine)?;
            return Ok(Vec::new());
        }
        let mut all: Vec<String> = wrong.iter().map(|w| format!("rank 0: {w}")).collect();
        for from in 1..t.size() {
            let theirs: Vec<String> = serde_json::from_slice(&t.recv_vec(from, tag)?)?;
            all.extend(theirs.into_iter().map(|w| format!("rank {from}: {w}")));
        }
        Ok(all)
    }

    fn run_cmd(t: &dyn Transport, args: RunArgs) -> Result<()> {
        let text = if t.rank() == 0 {
            match std::fs::read_to_string(&args.tuning) {
                Ok(text) => Some(text),
                Err(e) => {
                    share_from_rank0(t, None)?;
                    return Err(anyhow::anyhow!("{}: {e}", args.tuning.display()));
                }
            }
        } else {
            None
        };
        let Some(bytes) = share_from_rank0(t, text.map(String::into_bytes))? else {
            return Ok(());
        };
        let parsed = String::from_utf8(bytes)
            .map_err(anyhow::Error::from)
            .and_then(|text| Tuning::parse(&text).map_err(anyhow::Error::msg))
            .and_then(|tuning| {
                anyhow::ensure!(
                    tuning.ranks == t.size(),
                    "the tuning was measured on {} ranks, this job has {}",
                    tuning.ranks,
                    t.size()
                );
                Ok(tuning)
            })
            .with_context(|| args.tuning.display().to_string());
        let Some(tuning) = agreed(t, parsed)? else {
            return Ok(());
        };
        let len = args.size.0;
        let expected = payload(args.root, len);
        let mut buf = vec![0u8; len];
        let mut slowest = Duration::ZERO;
        for _ in 0..args.rounds.max(1) {
            if t.rank() == args.root {
                buf.copy_from_slice(&expected);
            } else {
                buf.fill(0);
            }
            t.library_barrier()?;
            let s = std::time::Instant::now();
            broadcast_tuned(t, &mut buf, args.root, &tuning)?;
            slowest = slowest.max(s.elapsed());
            anyhow::ensure!(
                buf == expected,
                "rank {}: wrong bytes after the broadcast",
                t.rank()
            );
        }
        if t.rank() == 0 {
            println!(
                "{} at {}: {} rounds, slowest on rank 0 {:.1} us",
                tuning.range_for(len).choice,
                args.size,
                args.rounds.max(1),
                slowest.as_secs_f64() * 1e6
            );
        }
        Ok(())
    }
}
