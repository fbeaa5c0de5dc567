//! `lgate-plogp sizes`: the PLogP parameters per message size as a table on stdout, latency in
//! us and bandwidth in MB/s (or another unit), as OSU's and mpiGraph's tools print theirs.

use std::path::PathBuf;

use anyhow::Result;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};
use lgate_plot::{BandwidthUnit, Curves, SizeTable};

use crate::output::write_output;
use crate::plot_cmd::rank_pair;

/// How `sizes` writes its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SizesFormat {
    /// Aligned columns under `#` comments, a block per line.
    Text,
    /// One row per line and size.
    Csv,
    /// The table as a JSON document.
    Json,
}

/// Options of `sizes`.
#[derive(Debug, Args)]
pub struct SizesArgs {
    /// A PLogP run directory (with measurements.parquet).
    #[arg(value_name = "RUN")]
    run: PathBuf,
    /// Rows for these pairs instead of placement classes, e.g. 0-1,0-64.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pairs: Option<Vec<String>>,
    /// The unit of bandwidths: MB/s (10^6 bytes a second, as OSU), MiB/s (as mpiGraph), GB/s
    /// or Gbit/s.
    #[arg(long, value_name = "UNIT", default_value = "MB/s",
          value_parser = PossibleValuesParser::new(BandwidthUnit::NAMES)
              .try_map(|s| s.parse::<BandwidthUnit>()))]
    units: BandwidthUnit,
    /// text for people, csv or json for programs.
    #[arg(long, value_enum, default_value_t = SizesFormat::Text)]
    format: SizesFormat,
    /// Write the table to FILE instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Runs `sizes`.
pub fn sizes(args: SizesArgs) -> Result<()> {
    let pairs: Option<Vec<(usize, usize)>> = (args.pairs.as_ref())
        .map(|list| list.iter().map(|p| rank_pair(p)).collect::<Result<_>>())
        .transpose()?;
    let curves = Curves::of_run(&args.run, pairs.as_deref())?;
    let table = SizeTable::of(&curves, args.units);
    let text = match args.format {
        SizesFormat::Text => table.to_text(&args.run.display().to_string()),
        SizesFormat::Csv => table.to_csv(),
        SizesFormat::Json => format!("{}\n", serde_json::to_string_pretty(&table)?),
    };
    write_output(args.output.as_deref(), &text)
}
