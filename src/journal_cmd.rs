//! `lgate-plogp journal`: a run's journal as JSON lines on stdout, or converted into a journal
//! file of either format.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use lgate_rundir::{JournalFormat, RunDir};

use crate::output::check_output;

/// The journal format `--format` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FormatFlag {
    /// One JSON line per test (journal.jsonl).
    Json,
    /// Length-prefixed binary records (journal.bin).
    Binary,
}

/// Options of `journal`.
#[derive(Debug, Args)]
pub struct JournalArgs {
    /// A run directory, or a journal file (journal.bin or journal.jsonl).
    #[arg(value_name = "RUN|FILE")]
    input: PathBuf,
    /// Write the journal to FILE instead of stdout (replaced atomically).
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The format written [default: json on stdout; by --output's name otherwise: binary
    /// unless it ends in .jsonl].
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: Option<FormatFlag>,
    /// Replace an existing --output file.
    #[arg(long)]
    force: bool,
}

/// Runs `journal`.
pub fn journal(args: JournalArgs) -> Result<()> {
    let path = journal_file(&args.input)?;
    let format = match (args.format, &args.output) {
        (Some(FormatFlag::Json), _) => JournalFormat::Json,
        (Some(FormatFlag::Binary), _) => JournalFormat::Binary,
        (None, Some(out)) => JournalFormat::of_path(out),
        (None, None) => JournalFormat::Json,
    };
    if let Some(out) = &args.output {
        check_output(out, &[&args.input, &path], args.force)?;
        let mut file = lgate_output::AtomicFile::create(out)
            .with_context(|| format!("{}: cannot write", out.display()))?;
        copy(&path, format, &mut file)
            .with_context(|| format!("{}: cannot write", out.display()))?;
        return file
            .commit()
            .with_context(|| format!("{}: cannot write", out.display()));
    }
    if format == JournalFormat::Binary && io::IsTerminal::is_terminal(&io::stdout()) {
        anyhow::bail!(
            "a binary journal is not for a terminal: give --output FILE or --format json"
        );
    }
    let mut stdout = BufWriter::new(io::stdout().lock());
    copy(&path, format, &mut stdout)?;
    stdout.flush()?;
    Ok(())
}

/// The journal file `input` names: itself, or the journal of the run directory it is.
fn journal_file(input: &Path) -> Result<PathBuf> {
    if input.is_dir() {
        let run = RunDir::open(input)?;
        if run.journal_format().is_none() {
            anyhow::bail!(
                "{}: the run has no journal (journal.bin or journal.jsonl)",
                input.display()
            );
        }
        return Ok(run.journal_file());
    }
    if !input.is_file() {
        anyhow::bail!("{}: no such run directory or journal file", input.display());
    }
    Ok(input.to_path_buf())
}

/// Writes the journal at `path` to `out` in `format`, an entry at a time; a record cut short
/// at the end (a crash mid-write) is left out and said on stderr.
fn copy(path: &Path, format: JournalFormat, out: &mut impl Write) -> Result<()> {
    if format == JournalFormat::Binary {
        out.write_all(lgate_rundir::journal_binary::MAGIC)?;
    }
    let mut record = Vec::new();
    let read = lgate_rundir::for_each_journal_entry(path, |entry| {
        record.clear();
        format.encode(&entry, &mut record);
        out.write_all(&record).map_err(anyhow::Error::from)
    })?;
    if read.torn_tail {
        eprintln!(
            "lgate-plogp: {}: the last record is cut short (a crash mid-write); left out",
            path.display()
        );
    }
    Ok(())
}
