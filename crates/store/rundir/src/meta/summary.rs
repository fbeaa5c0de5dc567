//! A run's totals: each part (the first start and every resume), the time per stage and per
//! rank.

use serde::{Deserialize, Serialize};

/// One invocation of a run that measured: its first start, or a resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunPart {
    /// When it started (RFC 3339, UTC).
    pub start: String,
    /// When it ended; none while it runs or when it was killed.
    #[serde(default)]
    pub end: Option<String>,
    /// Tests it measured (for a killed part: the journal's entries it left).
    pub pairs_measured: usize,
    /// Its wall time, seconds, when it ended.
    #[serde(default)]
    pub wall_s: Option<f64>,
    /// Time during which one of its pair tests was running, seconds, when it ended.
    #[serde(default)]
    pub testing_s: Option<f64>,
    /// The command line of rank 0 that ran it (the run's own is [`RunMeta::command_line`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_line: Vec<String>,
}

impl RunPart {
    /// A part starting now that has measured nothing yet.
    pub fn starting(start: String) -> Self {
        RunPart {
            start,
            end: None,
            pairs_measured: 0,
            wall_s: None,
            testing_s: None,
            command_line: Vec::new(),
        }
    }
}

/// Totals of a finished run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Pairs measured, over every part of the run (first start and resumes).
    pub pairs_measured: usize,
    /// Pairs in the journal, all sweeps.
    pub pairs_total: usize,
    /// Wall time, summed over the parts whose wall time is known, seconds.
    pub wall_s: f64,
    /// Time during which at least one pair test was running, summed like `wall_s`, seconds.
    pub testing_s: f64,
    /// Share of wall time with no pair test running: barriers, bookkeeping, I/O.
    pub overhead_share: f64,
    /// How each rank spent the last part: waiting for its next test or testing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rank_time: Vec<RankTime>,
    /// A staged run's stages: tests and the wall time each took in the last part.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageSummary>,
    /// What rank 0 chose while measuring, for people: the levels in doubt after the screening
    /// and the tests added to decide them (`measure --confidence`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One stage of a staged run in one invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageSummary {
    /// The stage.
    pub stage: crate::Stage,
    /// Tests run in this invocation.
    pub tests: usize,
    /// From its first test's start to its last test's end, seconds.
    pub wall_s: f64,
}

/// One rank's wall and CPU time while waiting for its next test and while testing.
///
/// CPU time is the whole process's (every thread, user and system) from getrusage, read
/// between steps, never inside timed code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RankTime {
    /// The rank.
    pub rank: usize,
    /// Wall time spent waiting (barriers, handoffs, the final gathering), seconds.
    pub waiting_s: f64,
    /// CPU time used while waiting, seconds.
    pub waiting_cpu_s: f64,
    /// Wall time spent in pair tests (a sender's sending its result to rank 0 included),
    /// seconds.
    pub testing_s: f64,
    /// CPU time used in pair tests, seconds.
    pub testing_cpu_s: f64,
    /// Rank 0 and each host's first rank: wall time spent collecting the others' results
    /// (receiving and journalling them, or relaying them to rank 0), seconds; absent on other
    /// ranks.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub collecting_s: f64,
    /// Rank 0 and each host's first rank: CPU time used collecting, seconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub collecting_cpu_s: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl RankTime {
    /// The share of one core this rank used while waiting (0 when it never waited).
    pub fn waiting_cpu_share(&self) -> f64 {
        if self.waiting_s > 0.0 {
            self.waiting_cpu_s / self.waiting_s
        } else {
            0.0
        }
    }
}

impl RunSummary {
    /// The mean and the largest share of a core that ranks used while waiting, if recorded.
    pub fn waiting_cpu_share(&self) -> Option<(f64, f64)> {
        RankTime::waiting_share(&self.rank_time)
    }
}

impl RankTime {
    /// Over the ranks that waited: the mean and the largest share of a core used while
    /// waiting; `None` when none waited.
    pub fn waiting_share(times: &[RankTime]) -> Option<(f64, f64)> {
        let waited: Vec<f64> = times
            .iter()
            .filter(|t| t.waiting_s > 0.0)
            .map(RankTime::waiting_cpu_share)
            .collect();
        if waited.is_empty() {
            return None;
        }
        let mean = waited.iter().sum::<f64>() / waited.len() as f64;
        let max = waited.iter().copied().fold(0.0, f64::max);
        Some((mean, max))
    }
}

impl RunSummary {
    /// Totals over `parts`, with the last part's `rank_time` and `stages`.
    pub fn over_parts(parts: &[RunPart], pairs_total: usize, last: RunSummary) -> RunSummary {
        let wall_s: f64 = parts.iter().filter_map(|p| p.wall_s).sum();
        let testing_s: f64 = parts.iter().filter_map(|p| p.testing_s).sum();
        RunSummary {
            pairs_measured: parts.iter().map(|p| p.pairs_measured).sum(),
            pairs_total,
            wall_s,
            testing_s,
            overhead_share: Self::overhead_share(wall_s, testing_s),
            ..last
        }
    }

    /// The share of `wall_s` when no test ran (testing took `testing_s` of it).
    pub fn overhead_share(wall_s: f64, testing_s: f64) -> f64 {
        if wall_s > 0.0 {
            (1.0 - testing_s / wall_s).max(0.0)
        } else {
            0.0
        }
    }
}
