//! `lgate-plogp topology show|convert|check`.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use lgate_topology::{format, sorted_rank_list, Topology, TopologyFormat};

use crate::output::write_output;

#[derive(Debug, Subcommand)]
pub enum TopologyCommand {
    /// Draw a topology as an indented tree with rank ranges, group sizes and levels.
    Show {
        #[command(flatten)]
        input: Input,
        /// Draw nodes down to this depth only (the root is depth 0); deeper ones are summarised.
        #[arg(long, value_name = "N")]
        depth: Option<usize>,
    },
    /// Convert a topology to another format.
    Convert {
        #[command(flatten)]
        input: Input,
        /// The format to write.
        #[arg(long, value_name = "FORMAT", value_parser = clap::builder::PossibleValuesParser::new(lgate_topology::export::names()))]
        to: String,
        /// Write here instead of stdout (replaced atomically).
        #[arg(long, short, value_name = "OUT")]
        output: Option<PathBuf>,
        /// Replace the output if it exists (never the input).
        #[arg(long)]
        force: bool,
    },
    /// Check that a topology file is well formed; exits non-zero with the first problem.
    Check {
        #[command(flatten)]
        input: Input,
    },
    /// Write an Open MPI rankfile that places a job's ranks along the topology, on the hosts
    /// and CPUs where a run's ranks ran: consecutive ranks fill one group's CPUs first.
    Rankfile {
        /// Topology file (LGate, JSON or Newick) of the run's ranks.
        #[arg(value_name = "TOPOLOGY")]
        file: PathBuf,
        /// The run whose meta.json gives each rank's host and CPU (bound ranks: a CPU each).
        #[arg(long, value_name = "RUN")]
        run: PathBuf,
        /// Deal consecutive ranks round the top-level groups instead.
        #[arg(long)]
        spread: bool,
        /// Write here instead of stdout (replaced atomically).
        #[arg(long, short, value_name = "OUT")]
        output: Option<PathBuf>,
        /// Replace the output if it exists (never an input).
        #[arg(long)]
        force: bool,
    },
}

/// A topology file and the rank count it is checked against.
#[derive(Debug, Args)]
pub struct Input {
    /// Topology file (LGate, JSON or Newick, told apart by content); `-` reads stdin.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The job's rank count: ranks must be below it; ranks the file leaves out are singletons.
    #[arg(long, value_name = "P")]
    ranks: Option<usize>,
}

impl Input {
    fn read(&self) -> Result<(Topology, TopologyFormat)> {
        if self.file == Path::new("-") {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("<stdin>: cannot read")?;
            return Ok(format::parse(&text, None, self.ranks).map_err(|e| e.in_file("<stdin>"))?);
        }
        Ok(format::read_file(&self.file, self.ranks)?)
    }
}

/// Writes `topology rankfile`.
fn rankfile(
    file: &Path,
    run: &Path,
    spread: bool,
    output: Option<&Path>,
    force: bool,
) -> Result<()> {
    if let Some(out) = output {
        crate::output::check_output(out, &[file, run], force)?;
    }
    let meta = lgate_rundir::RunDir::open(run)?.read_meta()?;
    let topology = format::read_file_of_job(file, meta.ranks.len())?;
    // A topology that names hosts must name the run's.
    if let Some(labels) = topology.labels() {
        for (rank, (label, info)) in labels.iter().zip(&meta.ranks).enumerate() {
            if !label.is_empty() && *label != info.host {
                anyhow::bail!(
                    "{}: rank {rank} is on host {label}, but ran on {} in {}: the topology is of \
                     another run",
                    file.display(),
                    info.host,
                    run.display()
                );
            }
        }
    }
    let places = meta
        .ranks
        .iter()
        .map(|r| {
            r.cpu.map(|cpu| (r.host.clone(), cpu)).with_context(|| {
                format!(
                    "{}: meta.json has no CPU for rank {}",
                    run.display(),
                    r.rank
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let text = lgate_topology::export::rankfile(&topology, &places, spread)
        .with_context(|| run.display().to_string())?;
    write_output(output, &text)
}

pub fn run(cmd: TopologyCommand) -> Result<()> {
    match cmd {
        TopologyCommand::Rankfile {
            file,
            run,
            spread,
            output,
            force,
        } => rankfile(&file, &run, spread, output.as_deref(), force),
        TopologyCommand::Show { input, depth } => {
            let (topology, _) = input.read()?;
            let options = lgate_topology::OutlineOptions { max_depth: depth };
            write_output(None, &lgate_topology::outline(&topology, options))
        }
        TopologyCommand::Convert {
            input,
            to,
            output,
            force,
        } => {
            if let Some(out) = output.as_deref() {
                crate::output::check_output(out, &[&input.file], force)?;
            }
            let (topology, _) = input.read()?;
            let writer = lgate_topology::export::writer(&to)
                .with_context(|| format!("unknown --to {to}"))?;
            // A topology's labels stand for the hosts of its ranks (a run's topology has them).
            let source = input.file.display().to_string();
            let context = lgate_topology::export::ExportContext {
                hosts: topology.labels(),
                source: &source,
            };
            let text = writer
                .write(&topology, &context)
                .with_context(|| source.clone())?;
            write_output(output.as_deref(), &text)
        }
        TopologyCommand::Check { input } => {
            let (topology, found) = input.read()?;
            let mut line = format!(
                "{}: ok, {} topology of {}",
                input.file.display(),
                found,
                lgate_topology::size_summary(&topology)
            );
            let missing = topology.missing_ranks();
            if !missing.is_empty() {
                line.push_str(&format!(
                    "; ranks {} are not listed (each its own group)",
                    sorted_rank_list(&missing)
                ));
            }
            line.push('\n');
            write_output(None, &line)
        }
    }
}
