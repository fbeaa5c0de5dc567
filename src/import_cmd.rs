//! `lgate-plogp import`: a run directory from measurements made by another tool (a pair list,
//! mmpi's `.dat`, mpiGraph's output), so that `cluster`, `plot`, `report`, the exports and
//! `diff` work on it as on a measured run.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use lgate_derive::{mean_bandwidth, ImportOrigin};
use lgate_matrix::mpigraph::{read_mpigraph, MpiGraphRun};
use lgate_matrix::read_pairs_file;
use lgate_rundir::MessageSize;

/// What `import` reads.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// A pair list (CSV with a header naming i, j, value and optionally host_i, host_j, size;
    /// Parquet with those columns; or mmpi's .dat): one matrix per size, the median of each
    /// pair's repeats.
    Pairs(PairsArgs),
    /// mpiGraph's output (`mpiGraph SIZE ITERS WINDOW > FILE`): the time per message of every
    /// ordered pair, sent and received, and a distance from them.
    Mpigraph(MpiGraphArgs),
}

/// Where an import writes its run.
#[derive(Debug, Args)]
pub struct ImportOutput {
    /// The run directory to create.
    #[arg(long = "output", short, alias = "out", value_name = "DIR")]
    out: PathBuf,
    /// Replace an existing run in --output: its files and the report and pictures made from it
    /// go, other files stay.
    #[arg(long)]
    force: bool,
    /// No summary on stderr.
    #[arg(long, short)]
    quiet: bool,
}

/// Options of `import pairs`.
#[derive(Debug, Args)]
pub struct PairsArgs {
    /// The pair list.
    file: PathBuf,
    #[command(flatten)]
    output: ImportOutput,
}

/// Which of mpiGraph's two tables the distance is made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MpiGraphTable {
    /// What each rank measured receiving (mpiGraph's `Recv` table).
    Recv,
    /// What each rank measured sending (mpiGraph's `Send` table).
    Send,
}

/// Options of `import mpigraph`.
#[derive(Debug, Args)]
pub struct MpiGraphArgs {
    /// mpiGraph's standard output.
    file: PathBuf,
    /// The table the default distance (`imported:SIZE`) is made from; both are kept as
    /// `recv:SIZE` and `send:SIZE`.
    #[arg(long, value_enum, default_value_t = MpiGraphTable::Recv)]
    from: MpiGraphTable,
    #[command(flatten)]
    output: ImportOutput,
}

/// Runs `import`.
pub fn run(command: ImportCommand) -> Result<()> {
    match command {
        ImportCommand::Pairs(args) => pairs(args),
        ImportCommand::Mpigraph(args) => mpigraph(args),
    }
}

/// Who imports `source` into `output`, now.
fn origin<'a>(source: &'a std::path::Path, output: &'a ImportOutput) -> ImportOrigin<'a> {
    ImportOrigin {
        source,
        out: &output.out,
        force: output.force,
        tool: format!("lgate-plogp {}", env!("CARGO_PKG_VERSION")),
        command_line: std::env::args().collect(),
        now: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
    }
}

fn pairs(args: PairsArgs) -> Result<()> {
    let table = read_pairs_file(&args.file)?;
    crate::output::refuse_inputs(&args.output.out, &[args.file.as_path()])?;
    lgate_derive::write_imported_pairs(&table, &origin(&args.file, &args.output))?;
    if let (Some((lines, first)), false) = (table.self_pairs, args.output.quiet) {
        eprintln!(
            "warning: {}: {lines} line(s) pair a rank with itself (the first: line {first});              left out: a rank's distance to itself is 0",
            args.file.display()
        );
    }
    if !args.output.quiet {
        eprintln!(
            "imported {} ({}): {} ranks{}, {} size(s), at most {} repeat(s) of a pair",
            args.file.display(),
            table.layout,
            table.ranks,
            on_hosts(table.hosts.as_deref()),
            table.sizes.len(),
            lgate_derive::most_repeats(&table)
        );
        eprintln!(
            "wrote {}/ (meta.json, matrices/)",
            args.output.out.display()
        );
    }
    Ok(())
}

/// ` on N host(s)` when hosts are named.
fn on_hosts(hosts: Option<&[String]>) -> String {
    hosts.map_or(String::new(), |h| {
        let mut hosts = h.to_vec();
        hosts.sort();
        hosts.dedup();
        format!(" on {} host(s)", hosts.len())
    })
}

fn mpigraph(args: MpiGraphArgs) -> Result<()> {
    let text = std::fs::read(&args.file)
        .with_context(|| format!("{}: cannot read", args.file.display()))?;
    let text = String::from_utf8_lossy(&text);
    let run: MpiGraphRun = read_mpigraph(&args.file, &text)?;
    crate::output::refuse_inputs(&args.output.out, &[args.file.as_path()])?;
    let from = match args.from {
        MpiGraphTable::Recv => lgate_derive::MpiGraphTable::Recv,
        MpiGraphTable::Send => lgate_derive::MpiGraphTable::Send,
    };
    lgate_derive::write_imported_mpigraph(&run, from, &origin(&args.file, &args.output))?;
    if !args.output.quiet {
        let size = MessageSize(run.message_bytes);
        eprintln!(
            "imported {} (mpiGraph {} B x {} x {}): {} ranks{}; mean bandwidth sent {:.0} MB/s, \
             received {:.0} MB/s",
            args.file.display(),
            run.message_bytes,
            run.times,
            run.window,
            run.hosts.len(),
            on_hosts(Some(&run.hosts)),
            mean_bandwidth(&run.send),
            mean_bandwidth(&run.recv),
        );
        eprintln!(
            "wrote {}/ (meta.json, matrices/: imported:{size} from the {} table, recv:{size}, \
             send:{size})",
            args.output.out.display(),
            from.name()
        );
    }
    Ok(())
}
