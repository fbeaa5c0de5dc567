//! `lgate-plogp diff`: what changed between two runs of one machine.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};

use crate::output::write_output;

/// How `diff` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// A few lines for people, worst change first.
    Text,
    /// Everything, for scripts.
    Json,
}

/// Options of `diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The earlier run (a run directory, or a matrix file whose labels name the hosts).
    #[arg(value_name = "RUN_A")]
    a: PathBuf,
    /// The later run, or the topology the site declares for the machine (a Slurm
    /// topology.conf, tree or block, a Slurm topology.yaml, Kubernetes nodes as `kubectl get
    /// nodes -o yaml|json` lists them, or a topology file of ranks): the run is checked against
    /// it, level by level.
    #[arg(value_name = "RUN_B|DECLARED")]
    b: PathBuf,
    /// A host, host pair or rank changed when the median of its pairs' changes is this many
    /// standard errors or more (its pairs' repetitions and how much pairs, ranks and hosts of
    /// the machine move between runs, as both runs show).
    #[arg(long, value_name = "SIGMAS", default_value_t = lgate_diff::DEFAULT_THRESHOLD, allow_negative_numbers = true)]
    threshold: f64,
    /// A host, host pair or rank changed only when its change against the machine's is also
    /// at least this share (0.05: 5 % slower or faster).
    #[arg(long, value_name = "SHARE", default_value_t = lgate_diff::DEFAULT_MIN_CHANGE, allow_negative_numbers = true)]
    min_change: f64,
    /// The whole machine changed only when the median pair changed by at least this factor
    /// as well as beyond --threshold (runs of one machine drift by tens of percent).
    #[arg(long, value_name = "FACTOR", default_value_t = lgate_diff::DEFAULT_MACHINE_CHANGE, allow_negative_numbers = true)]
    machine_change: f64,
    /// A single pair that no host or rank explains changed only when it changed by at least
    /// this factor as well as beyond --threshold (or by its cube, at one standard deviation).
    #[arg(long, value_name = "FACTOR", default_value_t = lgate_diff::DEFAULT_PAIR_CHANGE, allow_negative_numbers = true)]
    pair_change: f64,
    /// ... or, by --min-change at least, beyond this many standard deviations.
    #[arg(long, value_name = "SIGMAS", default_value_t = lgate_diff::DEFAULT_PAIR_THRESHOLD, allow_negative_numbers = true)]
    pair_threshold: f64,
    /// Noise changed when one run's is this many times the other's.
    #[arg(long, value_name = "FACTOR", default_value_t = lgate_diff::DEFAULT_SPREAD_FACTOR, allow_negative_numbers = true)]
    spread_factor: f64,
    /// Compare only these matrices (comma-separated names, as `cluster --matrix` takes them).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    matrices: Option<Vec<String>>,
    /// Do not cluster the runs to compare their topologies.
    #[arg(long)]
    no_topology: bool,
    /// Text for people or JSON for scripts.
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    format: DiffFormat,
    /// Write to this file instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Runs `diff`: whether anything changed beyond the noise.
pub fn run(args: DiffArgs) -> Result<bool> {
    let options = lgate_diff::DiffOptions {
        threshold: args.threshold,
        min_change: args.min_change,
        machine_change: args.machine_change,
        pair_change: args.pair_change,
        pair_threshold: args.pair_threshold,
        spread_factor: args.spread_factor,
        matrices: args.matrices.clone(),
        topology: !args.no_topology,
    };
    // A file named as a declared topology is read as one, so that an empty or broken one is
    // told as such (not as a matrix without rows).
    let named_declared = (args.b.extension().and_then(|e| e.to_str())).is_some_and(|e| {
        ["yaml", "yml", "conf", "json", "nwk", "newick", "lgate"]
            .contains(&e.to_ascii_lowercase().as_str())
    });
    if args.b.is_file() && (named_declared || lgate_diff::declared::is_declared(&args.b)) {
        let check = lgate_diff::declared::check_declared(&args.a, &args.b)?;
        let text = match args.format {
            DiffFormat::Text => check.summary(),
            DiffFormat::Json => serde_json::to_string_pretty(&check.to_json())? + "\n",
        };
        write_output(args.output.as_deref(), &text)?;
        return Ok(check.differs());
    }
    // The library names the option's field; the user typed its flag.
    if let Err(lgate_diff::DiffError::Option {
        field,
        value,
        needs,
    }) = options.check()
    {
        anyhow::bail!("--{} {value}: {needs}", field.replace('_', "-"));
    }
    let diff = lgate_diff::diff(&args.a, &args.b, &options)?;
    let text = match args.format {
        DiffFormat::Text => diff.summary(),
        DiffFormat::Json => serde_json::to_string_pretty(&diff.to_json())? + "\n",
    };
    write_output(args.output.as_deref(), &text)?;
    Ok(diff.changed())
}
