//! `lgate-plogp simulate`: a run directory from a machine model instead of MPI.

use std::path::PathBuf;

use crate::change_args::said;
use anyhow::{bail, Context, Result};
use clap::Args;
use lgate_derive::OutputOptions;
use lgate_harness::TopologySource;
use lgate_plogp_bench::PLogPOptions;
use lgate_rundir::MessageSize;
use lgate_simulate::{MachineModel, Placement, SimulateOptions, Simulation};

/// Options of `simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// A machine named after the reference thesis's systems (fram, betzy, arm1, hpclab), or a
    /// node they lack: a hybrid CPU (hybrid), 3-core CCDs (chiplet), narrow SMT gaps (zen4).
    #[arg(long, value_name = "NAME", conflicts_with = "model")]
    preset: Option<String>,
    /// A machine model file (JSON, as --print-model writes it).
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// The levels from the top down with their fan-out, replacing the model's, e.g.
    /// switch=2,node=4,socket=2,core=16 (every level needs a link in the model). A fan-out may
    /// differ between the items above, as runs taken in turn: core=64/64/64/32 (a smaller
    /// socket), cluster=10,cpu=2x8/4x2 (8 P-cores of 2 threads, 2 clusters of 4 E-cores).
    #[arg(long, value_name = "LEVELS")]
    machine: Option<String>,
    /// How ranks are dealt to cores: block, round-robin (over sockets within a node) or
    /// random [default: the model's].
    #[arg(long, value_name = "HOW")]
    placement: Option<String>,
    /// Log-normal noise (sigma) of every sample; 0 for none [default: the model's].
    #[arg(long, value_name = "SIGMA", allow_negative_numbers = true)]
    noise: Option<f64>,
    /// The measurement artifacts: none, all, or a list of warmup, spikes, first-pair, bands,
    /// slow-pairs, slow-node [default: the model's].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    artifacts: Option<Vec<String>>,
    /// Write the model (after --machine, --placement, --noise and --artifacts) as JSON to
    /// stdout and stop: a starting point for --model.
    #[arg(long)]
    print_model: bool,
    /// Print how long a real `measure` with these options would take on the machine, and stop.
    #[arg(long)]
    estimate_time: bool,
    /// The run directory to create [default: sim-<model>-<seed>] (`--out` is an alias).
    #[arg(long = "output", short, alias = "out", value_name = "DIR")]
    out: Option<PathBuf>,
    /// Replace an existing run in --output: its files and the report and pictures made from it
    /// go, other files stay.
    #[arg(long)]
    force: bool,
    /// Seed of the placement, the noise and the artifacts.
    #[arg(long, default_value_t = 1, value_name = "N")]
    seed: u64,
    /// Repetitions per message size and procedure [default: the model's, the thesis's R].
    #[arg(long, value_name = "R")]
    reps: Option<usize>,
    /// The largest message size; sizes are 0 and powers of two up to it.
    #[arg(long, default_value = "2MiB", value_name = "SIZE")]
    max_size: MessageSize,
    /// The measured sizes instead of powers of two (must include 0).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    sizes: Option<Vec<MessageSize>>,
    /// Sizes of the t(m) and feature matrices [default: 0,1KiB,64KiB,1MiB up to the largest
    /// size].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    matrix_sizes: Option<Vec<MessageSize>>,
    /// The statistic of the repetitions used in matrices.
    #[arg(long, default_value = "median", value_parser = crate::estimator_parser())]
    estimator: lgate_rundir::Estimator,
    /// Also write the tables as CSV.
    #[arg(long)]
    csv: bool,
    /// Do not write measurements.parquet (a row per pair, size and parameter: 143 million
    /// rows at 4096 ranks and 4 sizes).
    #[arg(long)]
    no_table: bool,
    /// Do not write the feature matrices (equations 3.5-3.6), whose cost grows as P^3.
    #[arg(long)]
    no_features: bool,
    /// Measure every pair this many times.
    #[arg(long, default_value_t = 1, value_name = "N")]
    sweeps: u32,
    /// The schedule's topology, as for measure (a file, or `auto` for one group per host);
    /// it changes the time estimate and meta.json, not the values.
    #[arg(long, value_name = "FILE|auto")]
    topology: Option<String>,
    /// Fast mode's share of ranks per group, as for measure --plan full.
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    fast: Option<f64>,
    /// The plan `measure` would follow, and its choices (as for measure).
    #[command(flatten)]
    plan: crate::plan_args::PlanArgs,
    /// What differs from the machine's first measurement (for the "after" run of `diff`).
    #[command(flatten)]
    change: crate::change_args::ChangeArgs,
    /// No summary on stderr.
    #[arg(long, short)]
    quiet: bool,
}

impl SimulateArgs {
    fn model(&self) -> Result<MachineModel> {
        let mut model = match (&self.preset, &self.model) {
            (Some(name), _) => lgate_simulate::preset(name).with_context(|| {
                format!(
                    "unknown preset `{name}`: expected one of {}",
                    lgate_simulate::PRESETS.join(", ")
                )
            })?,
            (None, Some(path)) => MachineModel::read(path)?,
            (None, None) => bail!(
                "say which machine: --preset {} or --model FILE",
                lgate_simulate::PRESETS.join("|")
            ),
        };
        if let Some(m) = &self.machine {
            model = model.with_machine(m)?;
        }
        if let Some(p) = &self.placement {
            model.placement = p.parse::<Placement>()?;
        }
        if let Some(sigma) = self.noise {
            model.noise.sigma = sigma;
        }
        if let Some(list) = &self.artifacts {
            model.artifacts = match list.as_slice() {
                [one] if one == "none" => Default::default(),
                [one] if one == "all" => lgate_simulate::model::Artifacts::all(),
                names => model.artifacts.only(names)?,
            };
        }
        if let Some(r) = self.reps {
            crate::count("--reps", lgate_stats::check_repetitions(r))?;
            model.reps = r;
        }
        model.check()?;
        Ok(model)
    }

    fn options(&self, model: &MachineModel) -> Result<SimulateOptions> {
        crate::count("--sweeps", lgate_stats::check_sweeps(self.sweeps))?;
        let sizes = match &self.sizes {
            Some(list) => {
                let mut s: Vec<usize> = list.iter().map(|m| m.0).collect();
                s.sort_unstable();
                s.dedup();
                if s.first() != Some(&0) {
                    bail!(
                        "--sizes must include 0: L and g(m) above the saturation limit need RTT(0)"
                    );
                }
                s
            }
            None => PLogPOptions::sizes_up_to(self.max_size.0),
        };
        let max = *sizes.last().expect("size 0 at least");
        crate::plan_args::check_fast(self.fast)?;
        Ok(SimulateOptions {
            sizes,
            reps: model.reps,
            sweeps: self.sweeps,
            seed: self.seed,
            topology: match (&self.topology, self.plan.staged()) {
                (None, true) => TopologySource::Auto,
                (flag, _) => TopologySource::from_flag(flag.as_deref()),
            },
            fast: self.fast,
            outputs: OutputOptions {
                table: !self.no_table,
                features: !self.no_features,
                dense: self.plan.dense(),
                ..OutputOptions::from_flags(
                    self.matrix_sizes.clone(),
                    max,
                    self.estimator,
                    self.csv,
                )?
            },
            command_line: std::env::args().collect(),
            tool: format!("lgate-plogp {}", env!("CARGO_PKG_VERSION")),
            plan: match self.plan.plan()? {
                lgate_harness::PlanKind::Staged(staged) => Some(staged),
                lgate_harness::PlanKind::Full => None,
            },
            host_changes: self.change.odd_host.clone(),
            degraded: self.change.degraded(),
            slow_ranks: (self.change.slow_rank.iter())
                .chain(&self.change.slow_pair)
                .copied()
                .collect(),
            rerun: self.change.rerun,
        })
    }
}

/// Runs `simulate`.
pub fn run(args: SimulateArgs) -> Result<()> {
    let model = args.model()?;
    if args.print_model {
        crate::output::write_output(None, &model.to_json())?;
        return Ok(());
    }
    let options = args.options(&model)?;
    let sim = Simulation::new(&model, &options).map_err(said)?;
    if args.estimate_time {
        crate::output::write_output(None, &sim.estimate_text().map_err(said)?)?;
        return Ok(());
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("sim-{}-{}", model.name, args.seed)));
    let existed = out.exists();
    let run = lgate_rundir::RunDir::create(&out, args.force)?;
    let report = sim
        .write(&run)
        .inspect_err(|_| {
            // A run that cannot be simulated (its plan refused) leaves no folder behind.
            if !existed {
                let _ = std::fs::remove_dir_all(&out);
            }
        })
        .map_err(said)?;
    if !args.quiet {
        eprintln!(
            "simulated {} pair measurements of {} in {:.2} s",
            report.pairs,
            sim.describe(),
            report.wall_s
        );
        if let Ok(meta) = run.read_meta() {
            for line in meta.host_summary_lines() {
                eprintln!("{line}");
            }
        }
        eprintln!("wrote {}/ ({})", out.display(), report.files.join(", "));
    }
    for (a, b, factor) in lgate_simulate::untested_slow_pairs(&args.change.slow_pair, &out) {
        eprintln!(
            "warning: --slow-pair {a}:{b}={factor}: the staged plan did not test this pair \
             (between hosts it samples a few pairs of each two hosts), so the run does not show \
             it; give --plan full, or a pair it tested (screen.csv)"
        );
    }
    Ok(())
}
