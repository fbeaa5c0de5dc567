//! `bcast-tuning.json`, the decision table `lgate-plogp bcast bench` writes into its output
//! directory: per message-size range the fastest correct broadcast, and every timing of the
//! benchmark. The data and what can be read from it without the broadcasts (`plot bcast` reads
//! it here); making, checking and applying a table is `lgate-bcast`'s.

use serde::{Deserialize, Serialize};

use crate::RunDirError;

/// The name of the library's broadcast in tables and tuning files.
pub const LIBRARY: &str = "MPI_Bcast";

/// The `format` field of a tuning file.
pub const TUNING_FORMAT: &str = "lgate-bcast-tuning";

/// One message-size range of a decision table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuningRange {
    /// The smallest size of the range, in bytes.
    pub from_bytes: usize,
    /// The first size past the range; none for the last range.
    pub to_bytes: Option<usize>,
    /// The size the choice was measured at.
    pub measured_bytes: usize,
    /// The chosen broadcast (a plan's name, or `MPI_Bcast`).
    pub choice: String,
    /// The runner-up's time over the chosen one's (trimmed means; below 1 when MPI_Bcast won a
    /// tie); none without a runner-up.
    pub lead: Option<f64>,
}

/// A decision table with what it was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tuning {
    /// Always [`TUNING_FORMAT`].
    pub format: String,
    /// The format's version.
    pub version: u32,
    /// The number of ranks measured.
    pub ranks: usize,
    /// The root measured.
    pub root: usize,
    /// The topology MagPIe choices use, in LGate format; none when no topology was given.
    pub topology: Option<String>,
    /// Where it was measured.
    pub machine: TuningMachine,
    /// The ranges, by increasing size.
    pub ranges: Vec<TuningRange>,
    /// Every timing of the benchmark.
    pub timings: Vec<Timing>,
    /// Per rank, its wall and CPU time broadcasting (`testing_*`) and between broadcasts
    /// (`waiting_*`: barriers, agreeing on round counts, collecting timings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rank_time: Vec<crate::RankTime>,
}

/// Where a decision table was measured.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TuningMachine {
    /// The hosts, one per rank.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// The MPI library's version string.
    #[serde(default)]
    pub library: String,
}

/// The times of one candidate at one size, in microseconds, over the timed rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// The candidate's name.
    pub candidate: String,
    /// Message size in bytes.
    pub size: usize,
    /// Timed rounds.
    pub rounds: usize,
    /// The fastest round.
    pub min_us: f64,
    /// The median round.
    pub median_us: f64,
    /// The 90th percentile.
    pub p90_us: f64,
    /// The mean.
    pub mean_us: f64,
    /// The mean of the rounds up to the 90th percentile (the reference thesis's statistic).
    pub trimmed_us: f64,
    /// Whether every rank held exactly the root's bytes after every round.
    pub correct: bool,
}

impl Timing {
    /// The header of [`Timing::progress_line`]'s columns.
    pub fn progress_header() -> String {
        format!(
            "{:>9} {:<42} {:>6} {:>11} {:>11} {:>11} {:>11} {:>11}",
            "size", "broadcast", "rounds", "min_us", "median_us", "p90_us", "mean_us", "trimmed_us"
        )
    }

    /// One line of progress: size (named by `size`), broadcast, rounds and every statistic.
    pub fn progress_line(&self, size: impl Fn(usize) -> String) -> String {
        format!(
            "{:>9} {:<42} {:>6} {:>11.1} {:>11.1} {:>11.1} {:>11.1} {:>11.1}{}",
            size(self.size),
            self.candidate,
            self.rounds,
            self.min_us,
            self.median_us,
            self.p90_us,
            self.mean_us,
            self.trimmed_us,
            if self.correct { "" } else { "  WRONG BYTES" }
        )
    }
}

impl Tuning {
    /// Reads a tuning file's text, checking its format and that it has ranges; `path` names
    /// the file in errors. (`lgate-bcast` also checks its choices.)
    pub fn read_text(text: &str, path: &std::path::Path) -> Result<Self, RunDirError> {
        let bad = |message: String| RunDirError::BadFile {
            path: path.to_path_buf(),
            message,
        };
        let tuning: Tuning = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        if tuning.format != TUNING_FORMAT {
            return Err(bad(format!(
                "format is `{}`, not `{TUNING_FORMAT}`",
                tuning.format
            )));
        }
        if tuning.ranges.is_empty() {
            return Err(bad("it has no size ranges".into()));
        }
        Ok(tuning)
    }

    /// The range a message of `len` bytes falls in.
    pub fn range_for(&self, len: usize) -> &TuningRange {
        self.ranges
            .iter()
            .rev()
            .find(|r| r.from_bytes <= len)
            .unwrap_or(&self.ranges[0])
    }
    /// The broadcasts that left a rank with other bytes than the root's, as `NAME at N bytes`.
    pub fn wrong_bytes(&self) -> Vec<String> {
        self.timings
            .iter()
            .filter(|t| !t.correct)
            .map(|t| format!("{} at {} bytes", t.candidate, t.size))
            .collect()
    }

    /// What waiting between broadcasts cost the ranks, as the benchmark's summary says it.
    pub fn waiting_line(&self) -> Option<String> {
        let (mean, max) = crate::RankTime::waiting_share(&self.rank_time)?;
        Some(format!(
            "between broadcasts, ranks used {:.1}% of a core on average (at most {:.1}%)",
            100.0 * mean,
            100.0 * max
        ))
    }

    /// Refuses a table in which some broadcast delivered other bytes than the root's: a
    /// failure of the broadcast, not a result.
    pub fn check_delivered(&self) -> Result<(), WrongBytes> {
        let wrong = self.wrong_bytes();
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(WrongBytes(wrong.join(", ")))
        }
    }

    /// The file names a benchmark writes: the table and its Open MPI rules file.
    pub const FILES: [&'static str; 2] = ["bcast-tuning.json", "openmpi-bcast-rules.conf"];

    /// The decision table for people: per measured size the fastest broadcast, its time,
    /// MPI_Bcast's time, the speed-up and the lead over the runner-up; `size` names a size.
    pub fn table(&self, size: impl Fn(usize) -> String) -> String {
        use std::fmt::Write as _;
        let mut out = format!(
            "{:>9}  {:<40} {:>12} {:>12} {:>8} {:>6}\n",
            "size", "fastest", "time_us", "MPI_Bcast_us", "speedup", "lead"
        );
        for r in &self.ranges {
            let time = |name: &str| {
                self.timings
                    .iter()
                    .find(|t| t.size == r.measured_bytes && t.candidate == name)
                    .map(|t| t.trimmed_us)
            };
            let best = time(&r.choice).unwrap_or(f64::NAN);
            let library = time(LIBRARY);
            let _ = writeln!(
                out,
                "{:>9}  {:<40} {:>12.1} {:>12} {:>8} {:>6}",
                size(r.measured_bytes),
                r.choice,
                best,
                library.map_or("-".into(), |l| format!("{l:.1}")),
                library.map_or("-".into(), |l| format!("{:.2}x", l / best)),
                r.lead.map_or("-".into(), |l| format!("{:.2}", l)),
            );
        }
        out
    }
}

/// Broadcasts that delivered other bytes than the root's, listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("broadcasts that delivered other bytes than the root's (a failure, not a result): {0}")]
pub struct WrongBytes(pub String);
