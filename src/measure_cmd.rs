//! `lgate-plogp measure`: run a pair test between every pair of MPI ranks.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
#[cfg(feature = "mpi")]
use lgate_harness::RunReport;
use lgate_harness::{PingPong, ProgressStyle, RunOptions, TopologySource};

/// Options of `measure`.
#[derive(Debug, Args)]
pub struct MeasureArgs {
    /// The run directory to create [default: lgate-run-<UTC time>].
    #[arg(long, value_name = "DIR", conflicts_with = "resume")]
    out: Option<PathBuf>,
    /// Replace an existing run in --out (only the files a run writes are removed).
    #[arg(long, conflicts_with = "resume")]
    force: bool,
    /// Continue the run in DIR, measuring only the pairs its journal lacks. The parameters
    /// must be the run's; the seed is taken from the run unless given.
    #[arg(long, value_name = "DIR")]
    resume: Option<PathBuf>,
    /// The topology that decides which pairs run at the same time: a topology file (LGate,
    /// JSON or Newick), or `auto` for one group per host. Without it, one pair at a time.
    #[arg(long, value_name = "FILE|auto")]
    topology: Option<String>,
    /// Run the whole schedule this many times, each sweep after the other.
    #[arg(long, default_value_t = 1, value_name = "N")]
    sweeps: u32,
    /// Seed of the pair order and of fast mode's choice [default: random, recorded].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Test only this share (0 < F <= 1) of the ranks of each group, chosen at random.
    #[arg(long, value_name = "F")]
    fast: Option<f64>,
    /// No progress and no summary on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// The pair test.
    #[arg(long, value_enum, default_value_t = TestKind::Pingpong)]
    test: TestKind,
    /// Message sizes, comma-separated, with optional unit B, KiB or MiB
    /// [default: 0 and 1 B to 1 MiB in powers of two].
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_size)]
    sizes: Option<Vec<usize>>,
    /// Repetitions per message size.
    #[arg(long, default_value_t = PingPong::DEFAULT_REPS, value_name = "R")]
    reps: usize,
    /// Stop (as a crash would) once rank 0 has this many results; for testing --resume.
    #[arg(long, hide = true, value_name = "N")]
    stop_after: Option<usize>,
}

/// The pair tests `measure` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TestKind {
    /// Round-trip times for each message size.
    Pingpong,
}

/// Parses `64`, `64B`, `4KiB`, `1MiB` (also `k`/`K`/`KB`/`M`/`MB`, all powers of 1024).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: usize = number
        .parse()
        .map_err(|_| format!("`{text}` is not a size such as 64, 4KiB or 1MiB"))?;
    let factor = match unit.trim() {
        "" | "B" | "b" => 1,
        "k" | "K" | "KB" | "KiB" | "kiB" => 1 << 10,
        "M" | "MB" | "MiB" => 1 << 20,
        "G" | "GB" | "GiB" => 1 << 30,
        other => {
            return Err(format!(
                "`{other}` in `{text}` is not a size unit (B, KiB, MiB, GiB)"
            ))
        }
    };
    number
        .checked_mul(factor)
        .ok_or_else(|| format!("`{text}` is too large"))
}

impl MeasureArgs {
    fn options(&self) -> RunOptions {
        let (out, resume) = match &self.resume {
            Some(dir) => (dir.clone(), true),
            None => (
                self.out.clone().unwrap_or_else(|| {
                    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
                        .to_string()
                        .replace(':', "");
                    PathBuf::from(format!("lgate-run-{}", now.trim_end_matches('Z')))
                }),
                false,
            ),
        };
        let topology = match self.topology.as_deref() {
            None => TopologySource::None,
            Some("auto") => TopologySource::Auto,
            Some(path) => TopologySource::File(PathBuf::from(path)),
        };
        RunOptions {
            out,
            force: self.force,
            resume,
            topology,
            sweeps: self.sweeps,
            seed: self.seed,
            fast: self.fast,
            progress: if self.quiet {
                ProgressStyle::Quiet
            } else {
                ProgressStyle::Auto
            },
            command_line: std::env::args().collect(),
            tool: format!("lgate-plogp {}", env!("CARGO_PKG_VERSION")),
            stop_after: self.stop_after,
        }
    }
}

#[cfg(feature = "mpi")]
fn print_summary(report: &RunReport) {
    let s = &report.summary;
    let resumed = if report.resumed_pairs > 0 {
        format!(" (resumed: {} measured before)", report.resumed_pairs)
    } else {
        String::new()
    };
    eprintln!(
        "measured {} pairs{resumed} in {:.2} s: pair tests ran {:.1}% of the wall time, the \
         harness took {:.1}% (barriers, bookkeeping, I/O)",
        s.pairs_measured,
        s.wall_s,
        100.0 * (1.0 - s.overhead_share),
        100.0 * s.overhead_share
    );
    let mut files = vec![
        lgate_rundir::META_FILE.to_string(),
        lgate_rundir::JOURNAL_FILE.to_string(),
    ];
    files.extend(report.files.iter().cloned());
    eprintln!("wrote {}/ ({})", report.run_dir.display(), files.join(", "));
}

/// Runs `measure` on this rank.
#[cfg(feature = "mpi")]
pub fn run(args: MeasureArgs) -> Result<()> {
    use lgate_harness::Transport;

    let options = args.options();
    let mut test = match args.test {
        TestKind::Pingpong => PingPong::new(
            args.sizes.clone().unwrap_or_else(PingPong::default_sizes),
            args.reps,
        )?,
    };
    let mpi = lgate_mpi::MpiTransport::init()?;
    let rank = mpi.rank();
    match lgate_harness::run(&mpi, &mut test, &options) {
        Ok(Some(report)) => {
            if !args.quiet {
                print_summary(&report);
            }
            Ok(())
        }
        Ok(None) => Ok(()),
        // Rank 0 says why and its exit status becomes mpirun's; the others finish MPI cleanly
        // and quietly, so that mpirun does not kill rank 0 before it has said it.
        Err(lgate_harness::HarnessError::Aborted) => Ok(()),
        Err(e) if e.leaves_others_waiting() => {
            eprintln!("lgate-plogp: rank {rank}: error: {e}");
            mpi.abort(1)
        }
        Err(e) => Err(e.into()),
    }
}

/// Runs `measure` on this rank.
#[cfg(not(feature = "mpi"))]
pub fn run(args: MeasureArgs) -> Result<()> {
    // The arguments are still checked, so a script fails for the right reason.
    let _ = args.options();
    anyhow::bail!(
        "this lgate-plogp was built without MPI (--no-default-features), so it cannot measure; \
         build it with the default features on a machine with an MPI library"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_with_units() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("64B"), Ok(64));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("2M"), Ok(2 << 20));
        assert!(parse_size("1.5MiB").is_err());
        assert!(parse_size("KiB").is_err());
        assert!(parse_size("4 parsecs")
            .unwrap_err()
            .contains("not a size unit"));
    }
}
