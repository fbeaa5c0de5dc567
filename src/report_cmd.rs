//! `lgate-plogp report`: one HTML page of a run, with what changed since an earlier one.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use crate::output::{default_output, output_of};

/// Options of `report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run directory.
    #[arg(value_name = "RUN")]
    run: PathBuf,
    /// The topology to show and order the heat map by (nothing is clustered; the heat maps are
    /// of the run's default matrix) [default: what `cluster` finds with its defaults, on the
    /// matrix it chooses].
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
    // One clustering at most: the matrix it chooses is the one drawn; with --topology, the
    // run's default matrix (a staged run's largest screening size), unclustered.
    let (input, topology, source) = match &args.topology {
        Some(path) => {
            let input = lgate_cluster::load(&args.run, None)?;
            let topology = lgate_topology::format::read_file_of_job(path, input.job_size)?;
            (
                input,
                topology,
                format!("The topology of {}.", path.display()),
            )
        }
        None => {
            // What `cluster` finds with its defaults: the one it stored, or computed (and
            // stored) now.
            let opts = lgate_cluster::stored::ClusterOptions::default();
            let (input, topology) = match lgate_cluster::stored::reuse(&args.run, &opts) {
                Some(r) => (
                    lgate_cluster::load_with_sizes(&args.run, r.entry.matrix.as_deref())?,
                    r.topology,
                ),
                None => {
                    let f = lgate_cluster::stored::compute_and_store(&args.run, &opts, false)
                        .map_err(crate::method_args::said)?;
                    (f.input, f.topology)
                }
            };
            (
                input,
                topology,
                "What `lgate-plogp cluster` finds with its defaults on the run's default matrix \
                 (levels named after the recorded placement where they match it)."
                    .to_string(),
            )
        }
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
        Some(d) => Some(d.headline_z().context("no matrix was compared")?),
        None => None,
    };
    let section = match (&diff, &z, &args.since) {
        (Some(d), Some(p), Some(earlier)) => {
            let title = p.title(&format!("since {}", earlier.display()));
            let hosts = d.hosts_a();
            Some(lgate_plot::ReportDiff {
                earlier: earlier.display().to_string(),
                changed: d.changed(),
                headline: d.headline(),
                changes: (d.changes().iter())
                    .map(|u| (u.label(), u.change, u.z, u.matrix.clone()))
                    .collect(),
                summary: d.summary(),
                figure: lgate_plot::diff_heatmap(
                    &p.z,
                    &p.labels,
                    (hosts.as_deref(), p.rows),
                    &title,
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
            input: &input,
            command_line: std::env::args().collect(),
            diff: section,
        },
    )?;
    crate::output::write_output(Some(&output), &html)?;
    eprintln!("wrote {}", output.display());
    Ok(())
}
