//! `lgate-plogp plot`: heat maps, curves and dendrograms as PNG or SVG.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use lgate_plot::{save, Heatmap};

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

/// The output a plot or report writes when `--output` is not given: `name` in the run
/// directory `input`, or beside the file `input`; `None` for a file when `beside_files` is
/// false (a matrix file may sit among many others).
fn default_output(input: &Path, name: &str, beside_files: bool) -> Option<PathBuf> {
    if input.is_dir() {
        Some(input.join(name))
    } else if beside_files {
        Some(input.parent().unwrap_or(Path::new("")).join(name))
    } else {
        None
    }
}

/// `--output`, or the default output, checked ([`crate::output::check_output`]).
fn output_of(
    given: &Option<PathBuf>,
    default: Option<PathBuf>,
    inputs: &[&Path],
    force: bool,
) -> Result<PathBuf> {
    let output = match (given.clone(), default) {
        (Some(path), _) | (None, Some(path)) => path,
        (None, None) => anyhow::bail!(
            "{}: give --output FILE (.png or .svg); only a run directory has a default",
            inputs[0].display()
        ),
    };
    crate::output::check_output(&output, inputs, force)?;
    Ok(output)
}

/// The image a plot writes: `--output`, or `name` by [`default_output`] of the first input;
/// checked, and of a format the plots draw.
fn image_output(
    given: &Option<PathBuf>,
    name: &str,
    beside_files: bool,
    inputs: &[&Path],
    force: bool,
) -> Result<PathBuf> {
    let default = default_output(inputs[0], name, beside_files);
    let output = output_of(given, default, inputs, force)?;
    lgate_plot::ImageFormat::of(&output)?;
    Ok(output)
}

fn diff(args: DiffPlotArgs) -> Result<()> {
    let output = image_output(
        &args.output,
        "diff.png",
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
    let name = diff
        .headline_matrix()
        .context("no matrix was compared")?
        .to_string();
    let (z, labels) = diff.z_matrix(&name).context("no matrix was compared")?;
    let note = diff.headline();
    let title = format!(
        "{} -> {}: {name}, change over noise (z)",
        args.a.display(),
        args.b.display()
    );
    let hosts: Option<Vec<String>> = diff.rows_a.iter().map(|(_, h)| h.clone()).collect();
    let figure = lgate_plot::diff_heatmap(&z, &labels, hosts.as_deref(), &title, note)?;
    save(&figure, &output)?;
    eprintln!("wrote {}", output.display());
    Ok(())
}

fn bcast(args: BcastPlotArgs) -> Result<()> {
    let output = image_output(&args.output, "bcast.png", true, &[&args.tuning], args.force)?;
    let figure = lgate_plot::BcastFigure::of_file(&args.tuning)?;
    save(&figure, &output)?;
    eprintln!("wrote {}", output.display());
    Ok(())
}

fn dendrogram(args: DendrogramArgs) -> Result<()> {
    let output = image_output(
        &args.output,
        "dendrogram.png",
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
    save(&lgate_plot::Dendrogram::new(&topology, &title), &output)?;
    eprintln!("wrote {}", output.display());
    Ok(())
}

fn heatmap(args: HeatmapArgs) -> Result<()> {
    let mut inputs = vec![args.input.as_path()];
    inputs.extend(args.topology.as_deref());
    let output = image_output(
        &args.output,
        lgate_rundir::files::HEATMAP_PNG,
        false,
        &inputs,
        args.force,
    )?;
    if !(args.clip > 0.5 && args.clip <= 1.0) {
        anyhow::bail!("--clip must be above 0.5 and at most 1");
    }
    // The matrix `cluster` would take: a staged run's screening size that shows most levels.
    let input = match args.matrix.as_deref() {
        Some(name) => lgate_cluster::load(&args.input, Some(name))?,
        None => {
            let mut inputs = lgate_cluster::load_candidates(&args.input)?;
            if inputs.len() == 1 {
                inputs.remove(0)
            } else {
                lgate_cluster::default_clustering(&args.input)?.0
            }
        }
    };
    let unit = args.unit.clone().unwrap_or_else(|| {
        if args.input.is_dir() {
            "us".into()
        } else {
            String::new()
        }
    });
    let mut figure = Heatmap::new(&input.matrix, &input.source, &unit)
        .with_clip_quantile(args.clip)
        .with_note(input.filled_note());
    if let Some(path) = &args.topology {
        let topology = lgate_topology::format::read_file_of_job(path, input.job_size)?;
        figure = figure
            .with_topology(&topology)
            .with_context(|| path.display().to_string())?;
    }
    save(&figure, &output)?;
    eprintln!("wrote {}", output.display());
    Ok(())
}

fn curves(args: CurvesArgs) -> Result<()> {
    let output = image_output(&args.output, "curves.png", false, &[&args.run], args.force)?;
    let pairs = args
        .pairs
        .as_ref()
        .map(|list| {
            list.iter()
                .map(|p| {
                    let parse = |x: &str| x.trim().parse::<usize>().ok();
                    p.split_once('-')
                        .and_then(|(a, b)| Some((parse(a)?, parse(b)?)))
                        .filter(|(a, b)| a != b)
                        .with_context(|| {
                            format!("`{p}` in --pairs is not a pair of two ranks such as 0-5")
                        })
                })
                .collect::<Result<Vec<_>>>()
        })
        .transpose()?;
    let figure = lgate_plot::Curves::of_run(&args.run, pairs.as_deref())?;
    save(&figure, &output)?;
    eprintln!("wrote {}", output.display());
    Ok(())
}

/// Options of `report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run directory.
    #[arg(value_name = "RUN")]
    run: PathBuf,
    /// The topology to show and order the heat map by [default: what `cluster` finds on the
    /// run's default matrix].
    #[arg(long, value_name = "FILE")]
    topology: Option<PathBuf>,
    /// Add what changed since this earlier run of the machine (as `diff EARLIER RUN` says).
    #[arg(long, value_name = "EARLIER_RUN")]
    since: Option<PathBuf>,
    /// The HTML file to write [default: RUN/report.html].
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Replace the output if it exists (never one of the inputs).
    #[arg(long)]
    force: bool,
}

/// Runs `report`.
pub fn report(args: ReportArgs) -> Result<()> {
    if !args.run.is_dir() {
        anyhow::bail!("{}: not a run directory", args.run.display());
    }
    let mut inputs = vec![args.run.as_path()];
    inputs.extend(args.topology.as_deref());
    inputs.extend(args.since.as_deref());
    let output = output_of(
        &args.output,
        default_output(&args.run, lgate_rundir::files::REPORT_HTML, false),
        &inputs,
        args.force,
    )?;
    let (topology, source) = match &args.topology {
        Some(path) => (
            lgate_topology::format::read_file_of_job(
                path,
                lgate_rundir::RunDir::open(&args.run)?
                    .read_meta()?
                    .ranks
                    .len(),
            )?,
            format!("The topology of {}.", path.display()),
        ),
        None => (
            lgate_cluster::default_topology(&args.run)?,
            "What `lgate-plogp cluster` finds with its defaults on the run's default matrix \
             (levels named after the recorded placement where they match it)."
                .to_string(),
        ),
    };
    let diff = match &args.since {
        Some(earlier) => Some(lgate_diff::diff(
            earlier,
            &args.run,
            &lgate_diff::DiffOptions::default(),
        )?),
        None => None,
    };
    let z = match &diff {
        Some(d) => {
            let name = d.headline_matrix().context("no matrix was compared")?;
            Some((
                name.to_string(),
                d.z_matrix(name).context("no matrix was compared")?,
            ))
        }
        None => None,
    };
    let section = match (&diff, &z, &args.since) {
        (Some(d), Some((name, (values, labels))), Some(earlier)) => {
            let hosts: Option<Vec<String>> = d.rows_a.iter().map(|(_, h)| h.clone()).collect();
            Some(lgate_plot::ReportDiff {
                earlier: earlier.display().to_string(),
                changed: d.changed(),
                headline: d.headline(),
                changes: d
                    .changes()
                    .iter()
                    .map(|u| (u.label(), u.change, u.z, u.matrix.clone()))
                    .collect(),
                summary: d.summary(),
                figure: lgate_plot::diff_heatmap(
                    values,
                    labels,
                    hosts.as_deref(),
                    &format!("since {}: {name}, change over noise (z)", earlier.display()),
                    d.headline(),
                )?,
            })
        }
        _ => None,
    };
    let html = lgate_plot::report_html(
        &args.run,
        &lgate_plot::ReportInputs {
            topology: &topology,
            topology_source: source,
            command_line: std::env::args().collect(),
            diff: section,
        },
    )?;
    crate::output::write_output(Some(&output), &html)?;
    eprintln!("wrote {}", output.display());
    Ok(())
}
