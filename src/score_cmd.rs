//! `lgate-plogp score`: a topology against known placement.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use lgate_topology::format;

use crate::output::write_output;

/// Options of `score`.
#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// Known placement: a run directory (or its meta.json), or a JSON object with `levels`
    /// mapping a level name to one label per rank.
    #[arg(long, value_name = "RUN_OR_FILE")]
    truth: PathBuf,
    /// The topology to judge (LGate, JSON or Newick).
    #[arg(long, value_name = "FILE")]
    topology: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `score`.
pub fn score(args: ScoreArgs) -> Result<()> {
    let truth = lgate_cluster::read_truth(&args.truth)?;
    let ranks = truth.levels.first().map(|(_, labels)| labels.len());
    let topology = match ranks {
        Some(n) => format::read_file_of_job(&args.topology, n)?,
        None => format::read_file(&args.topology, None)?.0,
    };
    let rows = lgate_cluster::score::score_levels(&truth, &topology)
        .with_context(|| args.topology.display().to_string())?;
    let text = if args.json {
        lgate_cluster::score::scores_json(&rows)? + "\n"
    } else {
        lgate_cluster::score::scores_table(&rows)
    };
    write_output(None, &text)
}
