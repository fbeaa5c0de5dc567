//! `lgate-plogp plot`: heat maps, curves and dendrograms as PNG or SVG.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use lgate_plot::{save, Heatmap};
use lgate_rundir::files::{BCAST_PNG, CURVES_PNG, DENDROGRAM_PNG, DIFF_PNG, HEATMAP_PNG};

use crate::output::image_output;

/// The pictures `plot` draws.
#[derive(Debug, Subcommand)]
pub enum PlotCommand {
    /// A distance matrix as a heat map, ranks ordered and group boundaries drawn by a topology.
    Heatmap(HeatmapArgs),
    /// PLogP parameters (RTT, o_s, o_r, g, L) against message size, per placement class of
    /// pairs or per chosen pair.
    Curves(CurvesArgs),
    /// A topology as a dendrogram; for a run, the topology `cluster` finds on its default
    /// matrix.
    Dendrogram(DendrogramArgs),
    /// Broadcast times and speedups over MPI_Bcast against message size, from the
    /// bcast-tuning.json of `bcast bench`.
    Bcast(BcastPlotArgs),
    /// What changed between two runs (`diff`) as a heat map of each pair's z, red slower in
    /// the later run, ranks in host order with hosts marked.
    Diff(DiffPlotArgs),
}

/// Options of `plot diff`.
#[derive(Debug, Args)]
pub struct DiffPlotArgs {
    /// The earlier run (a run directory, or a matrix file whose labels name the hosts).
    #[arg(value_name = "RUN_A")]
    a: PathBuf,
    /// The later run.
    #[arg(value_name = "RUN_B")]
    b: PathBuf,
    /// The matrix to draw [default: the one of the worst change, else t at its smallest
    /// size].
    #[arg(long, value_name = "NAME")]
    matrix: Option<String>,
    /// The image to write: .png or .svg [default: RUN_B/diff.png for a run].
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Replace the output if it exists (never one of the inputs).
    #[arg(long)]
    force: bool,
}

/// Options of `plot bcast`.
#[derive(Debug, Args)]
pub struct BcastPlotArgs {
    /// The bcast-tuning.json that `bcast bench` wrote.
    #[arg(value_name = "TUNING")]
    tuning: PathBuf,
    /// The image to write: .png or .svg [default: bcast.png beside TUNING].
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Replace the output if it exists (never one of the inputs).
    #[arg(long)]
    force: bool,
}

/// Options of `plot curves`.
#[derive(Debug, Args)]
pub struct CurvesArgs {
    /// A PLogP run directory (with measurements.parquet).
    #[arg(value_name = "RUN")]
    run: PathBuf,
    /// Draw these pairs instead of placement classes, e.g. 0-1,0-64.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pairs: Option<Vec<String>>,
    /// The image to write: .png or .svg [default: RUN/curves.png].
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Replace the output if it exists (never one of the inputs).
    #[arg(long)]
    force: bool,
}

/// Options of `plot dendrogram`.
#[derive(Debug, Args)]
pub struct DendrogramArgs {
    /// A topology file (LGate, JSON or Newick) or a run directory.
    #[arg(value_name = "TOPOLOGY_OR_RUN")]
    input: PathBuf,
    /// The image to write: .png or .svg [default: RUN/dendrogram.png for a run].
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Replace the output if it exists (never one of the inputs).
    #[arg(long)]
    force: bool,
}

/// Options of `plot heatmap`.
#[derive(Debug, Args)]
pub struct HeatmapArgs {
    /// A run directory or a distance matrix (CSV, lower-triangle CSV or .npy).
    #[arg(value_name = "RUN_OR_MATRIX")]
    input: PathBuf,
    /// The matrix of a run: latency, rtt:0, t:1KiB, features:0, ... [default: t].
    #[arg(long, value_name = "NAME")]
    matrix: Option<String>,
    /// A topology (LGate, JSON or Newick) whose order and groups the heat map shows.
    #[arg(long, value_name = "FILE")]
    topology: Option<PathBuf>,
    /// Clip values above this quantile of the off-diagonal entries (1: no clipping).
    #[arg(long, default_value_t = 0.95, value_name = "Q")]
    #[arg(allow_negative_numbers = true)]
    clip: f64,
    /// The unit of the values [default: us for a run, none for a matrix file].
    #[arg(long, value_name = "UNIT")]
    unit: Option<String>,
    /// The image to write: .png or .svg [default: RUN/heatmap.png for a run].
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Replace the output if it exists (never one of the inputs).
    #[arg(long)]
    force: bool,
}

/// Runs `plot`.
pub fn run(command: PlotCommand) -> Result<()> {
    match command {
        PlotCommand::Heatmap(args) => heatmap(args),
        PlotCommand::Dendrogram(args) => dendrogram(args),
        PlotCommand::Curves(args) => curves(args),
        PlotCommand::Bcast(args) => bcast(args),
        PlotCommand::Diff(args) => diff(args),
    }
}

fn diff(args: DiffPlotArgs) -> Result<()> {
    let output = image_output(
        &args.output,
        DIFF_PNG,
        false,
        &[&args.b, &args.a],
        args.force,
    )?;
    let options = lgate_diff::DiffOptions {
        matrices: args.matrix.clone().map(|m| vec![m]),
        topology: false,
        ..lgate_diff::DiffOptions::default()
    };
    let diff = lgate_diff::diff(&args.a, &args.b, &options)?;
    let p = diff.headline_z().context("no matrix was compared")?;
    let title = p.title(&format!("{} -> {}", args.a.display(), args.b.display()));
    let (hosts, note) = (diff.hosts_a(), diff.headline());
    let figure =
        lgate_plot::diff_heatmap(&p.z, &p.labels, (hosts.as_deref(), p.rows), &title, note)?;
    save_and_say(&figure, &output)?;
    Ok(())
}

fn bcast(args: BcastPlotArgs) -> Result<()> {
    let output = image_output(&args.output, BCAST_PNG, true, &[&args.tuning], args.force)?;
    let figure = lgate_plot::BcastFigure::of_file(&args.tuning)?;
    save_and_say(&figure, &output)?;
    Ok(())
}

fn dendrogram(args: DendrogramArgs) -> Result<()> {
    let output = image_output(
        &args.output,
        DENDROGRAM_PNG,
        false,
        &[&args.input],
        args.force,
    )?;
    let (topology, title) = if args.input.is_dir() {
        (
            lgate_cluster::default_topology(&args.input)?,
            format!("{}: the topology auto finds", args.input.display()),
        )
    } else {
        (
            lgate_topology::format::read_file(&args.input, None)?.0,
            args.input.display().to_string(),
        )
    };
    save_and_say(&lgate_plot::Dendrogram::new(&topology, &title), &output)?;
    Ok(())
}

fn heatmap(args: HeatmapArgs) -> Result<()> {
    let mut inputs = vec![args.input.as_path()];
    inputs.extend(args.topology.as_deref());
    let output = image_output(&args.output, HEATMAP_PNG, false, &inputs, args.force)?;
    if !(args.clip > 0.5 && args.clip <= 1.0) {
        anyhow::bail!("--clip must be above 0.5 and at most 1");
    }
    // The matrix `cluster` would take: a staged run's screening size that shows most levels.
    let input = lgate_cluster::load_chosen(&args.input, args.matrix.as_deref())?;
    let unit = args.unit.clone().unwrap_or_else(|| {
        if args.input.is_dir() {
            "us".into()
        } else {
            String::new()
        }
    });
    // Host blocks draw the host x host medians.
    let (matrix, title, items) =
        (input.picture()).context("the host blocks have no host matrix")?;
    let mut figure = Heatmap::new(&matrix, &title, &unit)
        .with_items(items)
        .with_clip_quantile(args.clip)
        .with_note(input.filled_note());
    if let Some(path) = &args.topology {
        let topology = lgate_topology::format::read_file_of_job(path, input.job_size)?;
        if let Some(topology) = input.picture_topology(&topology) {
            figure = figure
                .with_topology(&topology)
                .with_context(|| path.display().to_string())?;
        }
    }
    save_and_say(&figure, &output)?;
    Ok(())
}

fn curves(args: CurvesArgs) -> Result<()> {
    let output = image_output(&args.output, CURVES_PNG, false, &[&args.run], args.force)?;
    let pairs: Option<Vec<(usize, usize)>> = (args.pairs.as_ref())
        .map(|list| list.iter().map(|p| rank_pair(p)).collect::<Result<_>>())
        .transpose()?;
    let figure = lgate_plot::Curves::of_run(&args.run, pairs.as_deref())?;
    save_and_say(&figure, &output)?;
    Ok(())
}

/// A pair of two ranks as `--pairs` takes it: `0-5`.
pub(crate) fn rank_pair(p: &str) -> Result<(usize, usize)> {
    let parse = |x: &str| x.trim().parse::<usize>().ok();
    p.split_once('-')
        .and_then(|(a, b)| Some((parse(a)?, parse(b)?)))
        .filter(|(a, b)| a != b)
        .with_context(|| format!("`{p}` in --pairs is not a pair of two ranks such as 0-5"))
}

/// Writes the figure to `output` and says so.
fn save_and_say(figure: &impl lgate_plot::Figure, output: &std::path::Path) -> Result<()> {
    save(figure, output)?;
    eprintln!("wrote {}", output.display());
    Ok(())
}
