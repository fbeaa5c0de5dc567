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

pub fn run(cmd: TopologyCommand) -> Result<()> {
    match cmd {
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
