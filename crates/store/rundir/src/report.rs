//! `report.json`: what in a run's measurements deserves a look before clustering (slow ranks,
//! hosts and pairs, spreads, unstable pairs, known artifacts, warnings), or, for a staged run,
//! what its stages measured and filled. Written by the derive stage, read by `cluster`,
//! `report` and everything else through these types.
//!
//! Fields are in alphabetical order, as the file has always had them. Values that can be
//! undefined (a ratio over nothing) are written as `null` and read back as NaN.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};

use crate::files::REPORT_FILE;
use crate::{Estimator, OddFact, RunDirError};

/// Reads a number that may be `null` (undefined) as NaN.
fn number<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// A run's report.json: the health report of a run whose matrices are all measured, or the
/// stage report of a staged run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Report {
    /// A staged run's report (`"plan": "staged"`).
    Staged(StagedReport),
    /// The health of a run whose every pair was measured (the full plan, a ping-pong run).
    Health(HealthReport),
}

impl Report {
    /// Reads `report.json` from the run directory `run`; errors name the file.
    pub fn read(run: &Path) -> Result<Report, RunDirError> {
        let path = run.join(REPORT_FILE);
        let text = std::fs::read(&path).map_err(|error| RunDirError::Io {
            path: path.clone(),
            error,
        })?;
        serde_json::from_slice(&text).map_err(|e| RunDirError::BadFile {
            path,
            message: format!("not a report.json: {e}"),
        })
    }

    /// The text of report.json: indented JSON and a final newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// The health lines (slow hosts, unstable hosts, known artifacts); none for a staged run.
    pub fn health(&self) -> &[String] {
        match self {
            Report::Health(h) => &h.health,
            Report::Staged(s) => &s.health,
        }
    }

    /// The report of each matrix (none for a staged run).
    pub fn matrices(&self) -> &[MatrixReport] {
        match self {
            Report::Health(h) => &h.matrices,
            Report::Staged(_) => &[],
        }
    }

    /// The known artifacts (none for a staged run).
    pub fn artifacts(&self) -> &[Artifact] {
        match self {
            Report::Health(h) => &h.artifacts,
            Report::Staged(_) => &[],
        }
    }

    /// The unstable pairs and hosts per spread matrix (none for a staged run).
    pub fn unstable(&self) -> &[UnstableReport] {
        match self {
            Report::Health(h) => &h.unstable,
            Report::Staged(_) => &[],
        }
    }

    /// Everything worth a look, one line each (none for a staged run).
    pub fn warnings(&self) -> &[String] {
        match self {
            Report::Health(h) => &h.warnings,
            Report::Staged(_) => &[],
        }
    }

    /// The levels `cluster` finds with its defaults, when `measure` recorded them.
    pub fn levels(&self) -> Option<&FoundLevels> {
        match self {
            Report::Health(h) => h.levels.as_ref(),
            Report::Staged(s) => s.levels.as_ref(),
        }
    }

    /// Records the levels `cluster` finds with its defaults.
    pub fn set_levels(&mut self, levels: Option<FoundLevels>) {
        match self {
            Report::Health(h) => h.levels = levels,
            Report::Staged(s) => s.levels = levels,
        }
    }

    /// The hosts' part, which every report has.
    pub fn hosts(&self) -> &HostsReport {
        match self {
            Report::Health(h) => &h.hosts,
            Report::Staged(s) => &s.hosts,
        }
    }
}

/// The levels `cluster` finds in a run with its defaults, and how sure it is of each: the share
/// of resamples of the measurements (their noise dealt out anew) that gave each back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoundLevels {
    /// The levels, coarsest first.
    pub levels: Vec<FoundLevel>,
    /// The matrix clustered, as `cluster` names it.
    pub matrix: String,
    /// What measuring and clustering said about levels in doubt, for people.
    pub notes: Vec<String>,
    /// The resamples clustered (0: the confidence was not estimated).
    pub resamples: usize,
    /// The share of resamples that gave exactly these levels, when estimated.
    pub same_levels: Option<f64>,
    /// Levels the resamples made that are not reported (undecided), most often first.
    pub undecided: Vec<UndecidedFound>,
}

/// One level found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoundLevel {
    /// The share of resamples that gave its groups back, when estimated.
    pub confidence: Option<f64>,
    /// Its groups.
    pub groups: usize,
    /// Its name (after the placement the run recorded where they match).
    pub name: String,
}

/// A level the evidence almost shows, left undecided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UndecidedFound {
    /// Its groups.
    pub groups: usize,
    /// Its name, when found but given back by too few resamples to keep.
    pub name: Option<String>,
    /// The share of resamples that made it.
    pub share: f64,
    /// For a grouping of hosts the pairs between hosts nearly decide: their Mann-Whitney z.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub z: Option<f64>,
}

/// The health report of a run whose every pair was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HealthReport {
    /// Known artifacts of the measurement (the slow first pair, bands).
    pub artifacts: Vec<Artifact>,
    /// The statistic the matrices hold.
    pub estimator: Estimator,
    /// Lines on the machine's health, also in `warnings`: what `cluster` prints.
    pub health: Vec<String>,
    /// The hosts: how many, the odd ones out, placements their facts contradict.
    pub hosts: HostsReport,
    /// Pairs whose L came out as zero (at most 100 listed).
    pub latency_not_positive: Vec<SweepPairRef>,
    /// How many pairs' L came out as zero.
    pub latency_not_positive_count: usize,
    /// The levels `cluster` finds with its defaults, with how sure it is of each (written by
    /// `measure` once the run is derived).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub levels: Option<FoundLevels>,
    /// The report of each matrix: the latency, then t(m) per size.
    pub matrices: Vec<MatrixReport>,
    /// Pair measurements, all sweeps.
    pub pairs: usize,
    /// The tested ranks.
    pub ranks: usize,
    /// Pairs whose link saturation did not settle.
    pub saturation_not_converged: usize,
    /// How much repeats of a pair vary next to how much pairs differ, per t(m).
    pub spread: Vec<SpreadReport>,
    /// Unstable pairs and hosts, per spread matrix.
    pub unstable: Vec<UnstableReport>,
    /// Everything worth a look, one line each.
    pub warnings: Vec<String>,
}

/// A pair in one sweep, as the report lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepPairRef {
    /// The smaller rank.
    pub i: usize,
    /// The larger rank.
    pub j: usize,
    /// The sweep, from 0.
    pub sweep: u32,
}

/// What one matrix shows: its placement classes, slow hosts, pairs and ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixReport {
    /// The classes of pairs by placement (same core, same socket, ...), those with pairs.
    pub classes: Vec<ClassStats>,
    /// The matrix's name (`latency`, `t:1KiB`).
    pub matrix: String,
    /// Hosts slow against all partners.
    pub slow_hosts: Vec<SlowHost>,
    /// The slowest pairs against their class (at most 100 listed).
    pub slow_pairs: Vec<SlowPair>,
    /// How many pairs are slow against their class.
    pub slow_pairs_count: usize,
    /// Ranks slow against all partners.
    pub slow_ranks: Vec<SlowRank>,
}

/// One placement class of pairs in one matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassStats {
    /// The class (`same core`, `same socket`, `different hosts`, ...).
    pub class: String,
    /// The median of its pairs' values, us.
    #[serde(deserialize_with = "number")]
    pub median_us: f64,
    /// How many pairs.
    pub pairs: usize,
    /// Their robust standard deviation (1.4826 MAD), us.
    #[serde(deserialize_with = "number")]
    pub robust_sigma_us: f64,
}

/// A host slow against all partners.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowHost {
    /// How many times the other hosts' median ratio.
    #[serde(deserialize_with = "number")]
    pub factor: f64,
    /// The host.
    pub host: String,
    /// The median of its ranks' median ratios to their pairs' class medians.
    #[serde(deserialize_with = "number")]
    pub median_ratio: f64,
    /// Its ranks.
    pub ranks: usize,
    /// Why it stands out.
    pub why: String,
    /// How sure: the log of its pairs' median ratio over its standard error (0 in reports
    /// written before it was kept).
    #[serde(default, deserialize_with = "number")]
    pub z: f64,
    /// The pairs it was judged on.
    #[serde(default)]
    pub pairs: usize,
    /// The matrix where it stands out most (`rtt:0`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub matrix: String,
}

/// A pair slow against its placement class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowPair {
    /// Its class.
    pub class: String,
    /// The class's median, us.
    #[serde(deserialize_with = "number")]
    pub class_median_us: f64,
    /// The smaller rank.
    pub i: usize,
    /// The larger rank.
    pub j: usize,
    /// Its value over the class median.
    #[serde(deserialize_with = "number")]
    pub ratio: f64,
    /// Its value, us.
    #[serde(deserialize_with = "number")]
    pub value_us: f64,
    /// Why it stands out.
    pub why: String,
}

/// A rank slow against all partners.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowRank {
    /// Its host, where known.
    pub host: Option<String>,
    /// The median over its pairs of the pair's value over its class median.
    #[serde(deserialize_with = "number")]
    pub median_ratio: f64,
    /// The rank.
    pub rank: usize,
    /// Why it stands out.
    pub why: String,
    /// How many times its pairs' class medians its pairs take (0 in reports written before
    /// it was kept: `median_ratio` then).
    #[serde(default, deserialize_with = "number")]
    pub factor: f64,
    /// How sure: the log of that factor over its standard error.
    #[serde(default, deserialize_with = "number")]
    pub z: f64,
    /// The pairs it was judged on.
    #[serde(default)]
    pub pairs: usize,
    /// The matrix where it stands out most.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub matrix: String,
}

/// How many times the usual pair between the same two groups a pair's screening must take to
/// be retested alone, and alone again to be named slow (ClusterKit marks a pair at 2.1 times
/// the least latency; the usual pair is the median, not the least).
pub const SLOW_PAIR_FACTOR: f64 = 1.5;

/// A pair of ranks slow against the other pairs between the same two groups, retested alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetestedPair {
    /// Its first rank.
    pub i: usize,
    /// Its second rank.
    pub j: usize,
    /// The host of `i`, where known.
    pub host_i: Option<String>,
    /// The host of `j`, where known.
    pub host_j: Option<String>,
    /// The screening size compared (`64KiB`).
    pub size: String,
    /// Its round trip side by side, us.
    #[serde(deserialize_with = "number")]
    pub side_by_side_us: f64,
    /// The median round trip of the pairs between the same two groups side by side, us.
    #[serde(deserialize_with = "number")]
    pub usual_us: f64,
    /// Its round trip alone, us.
    #[serde(deserialize_with = "number")]
    pub alone_us: f64,
    /// The median round trip alone of the usual pairs of the same two groups retested with it,
    /// us (NaN when none was).
    #[serde(deserialize_with = "number")]
    pub usual_alone_us: f64,
    /// Alone over usual alone (side by side over usual when no usual pair was retested).
    #[serde(deserialize_with = "number")]
    pub factor: f64,
    /// Whether it stayed slow alone: at least [`SLOW_PAIR_FACTOR`] times the usual alone.
    pub confirmed: bool,
}

/// How much repeats of one pair vary next to how much pairs differ, for one t(m).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpreadReport {
    /// The p10-p90 range of the pairs' t(m), us.
    #[serde(deserialize_with = "number")]
    pub between_pairs_spread_us: f64,
    /// The matrix (`t:1KiB`).
    pub matrix: String,
    /// Whether repeats vary as much as pairs differ: clustering this size is unreliable.
    pub overlap: bool,
    /// The median over pairs of a pair's repeat spread, us.
    #[serde(deserialize_with = "number")]
    pub repeat_spread_us: f64,
}

/// Unstable pairs and hosts of one spread matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnstableReport {
    /// The matrix the spreads are of (`t:1KiB`).
    pub matrix: String,
    /// Hosts whose ranks' pairs spread more than other hosts'.
    pub unstable_hosts: Vec<UnstableHost>,
    /// The most unstable pairs (at most 100 listed).
    pub unstable_pairs: Vec<UnstablePair>,
    /// How many pairs are unstable.
    pub unstable_pairs_count: usize,
}

/// A host whose pairs measure unstably.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnstableHost {
    /// The host.
    pub host: String,
    /// Its ranks' median spread ratio over the hosts' usual one.
    #[serde(deserialize_with = "number")]
    pub median_spread_ratio: f64,
}

/// A pair whose repeats spread far more than its class's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnstablePair {
    /// The smaller rank.
    pub i: usize,
    /// The larger rank.
    pub j: usize,
    /// Its spread over its class's median spread.
    #[serde(deserialize_with = "number")]
    pub spread_ratio: f64,
    /// Its repeat spread, us.
    #[serde(deserialize_with = "number")]
    pub spread_us: f64,
}

/// A known artifact of measuring (thesis section 5.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "artifact")]
pub enum Artifact {
    /// Ranks 0 and 1, measured first, slow while neither rank is.
    #[serde(rename = "slow first pair")]
    SlowFirstPair {
        /// The matrix it shows in.
        matrix: String,
        /// The pairs: `[[0, 1]]`.
        pairs: Vec<[usize; 2]>,
        /// The pair over its class median.
        #[serde(deserialize_with = "number")]
        ratio: f64,
        /// What it is and what to do.
        why: String,
    },
    /// Pairs a fixed offset apart slower than their class and their neighbours.
    #[serde(rename = "band")]
    Band {
        /// The matrix it shows in.
        matrix: String,
        /// The offset d of the pairs (i, i + d).
        offset: usize,
        /// Its ratio over the offsets two below and above.
        #[serde(deserialize_with = "number")]
        over_neighbours: f64,
        /// How many pairs are that far apart.
        pairs: usize,
        /// The median ratio of those pairs to their class medians.
        #[serde(deserialize_with = "number")]
        ratio: f64,
        /// What it is.
        why: String,
    },
}

impl Artifact {
    /// Its name (`slow first pair`, `band`).
    pub fn name(&self) -> &'static str {
        match self {
            Artifact::SlowFirstPair { .. } => "slow first pair",
            Artifact::Band { .. } => "band",
        }
    }

    /// The matrix it shows in.
    pub fn matrix(&self) -> &str {
        match self {
            Artifact::SlowFirstPair { matrix, .. } | Artifact::Band { matrix, .. } => matrix,
        }
    }

    /// Its pairs' ratio to their class median.
    pub fn ratio(&self) -> f64 {
        match self {
            Artifact::SlowFirstPair { ratio, .. } | Artifact::Band { ratio, .. } => *ratio,
        }
    }

    /// What it is.
    pub fn why(&self) -> &str {
        match self {
            Artifact::SlowFirstPair { why, .. } | Artifact::Band { why, .. } => why,
        }
    }
}

/// The hosts' part of a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostsReport {
    /// How many hosts ran ranks.
    pub count: usize,
    /// The facts in which some hosts differ from most.
    pub odd: Vec<OddFact>,
    /// One line per odd host.
    pub odd_lines: Vec<String>,
    /// Ranks whose recorded placement their host's facts contradict (at most 100 listed).
    pub placement_mismatches: Vec<String>,
    /// How many such ranks.
    pub placement_mismatches_count: usize,
    /// How many hosts recorded facts.
    pub with_facts: usize,
}

/// A staged run's report: its plan, what each stage measured, what was filled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StagedReport {
    /// The groups (hosts, or the topology's leaves).
    pub groups: usize,
    /// The hosts.
    pub hosts: HostsReport,
    /// Per stage measured side by side, per size: how much slower than alone.
    pub interference: BTreeMap<String, BTreeMap<String, Interference>>,
    /// The levels `cluster` finds with its defaults, with how sure it is of each (written by
    /// `measure` once the run is derived).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub levels: Option<FoundLevels>,
    /// Pairs measured and filled.
    pub pairs: PairCounts,
    /// Always `staged`.
    pub plan: StagedPlanName,
    /// The pairs given the full test.
    pub sample: Vec<SampledPair>,
    /// Tests per stage.
    pub tests: BTreeMap<String, usize>,
    /// Hosts slow with all their peers (their pairs together against the other hosts'), at
    /// the screening size where they stand out most.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slow_hosts: Vec<SlowHost>,
    /// Ranks slow against all partners (a busy or slow core), at the size where each stands
    /// out most.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slow_ranks: Vec<SlowRank>,
    /// Pairs slow against the other pairs of their two groups side by side, retested alone:
    /// those that stayed slow (`confirmed`) and those that did not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slow_pairs: Vec<RetestedPair>,
    /// The warnings about the machine's health, for people (`cluster` and `report` show them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub health: Vec<String>,
}

/// The plan's name in a staged report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StagedPlanName {
    /// The staged plan.
    #[serde(rename = "staged")]
    Staged,
}

/// The bias of testing side by side at one size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interference {
    /// The median over pairs of the round trip side by side over the round trip alone.
    #[serde(deserialize_with = "number")]
    pub median_ratio_side_by_side_to_alone: f64,
    /// The pairs tested both ways.
    pub pairs: usize,
}

/// How many pairs a staged run measured and filled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairCounts {
    /// Pairs given their groups' median.
    pub filled: usize,
    /// Their share of all pairs.
    #[serde(deserialize_with = "number")]
    pub filled_share: f64,
    /// Pairs measured.
    pub measured: usize,
    /// All pairs.
    pub total: usize,
}

/// A pair the staged run gave the full test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampledPair {
    /// The smaller rank.
    pub i: usize,
    /// Whether both ranks are in one group.
    pub inside_group: bool,
    /// The larger rank.
    pub j: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undefined_numbers_are_written_as_null_and_read_as_nan() {
        let s = SpreadReport {
            between_pairs_spread_us: f64::NAN,
            matrix: "t:0".into(),
            overlap: false,
            repeat_spread_us: 1.5,
        };
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains("\"between_pairs_spread_us\":null"), "{text}");
        let back: SpreadReport = serde_json::from_str(&text).unwrap();
        assert!(back.between_pairs_spread_us.is_nan());
        assert_eq!(back.repeat_spread_us, 1.5);
    }

    #[test]
    fn artifacts_are_tagged_by_name() {
        let a = Artifact::Band {
            matrix: "t:0".into(),
            offset: 4,
            over_neighbours: 1.2,
            pairs: 12,
            ratio: 1.1,
            why: "a band".into(),
        };
        let text = serde_json::to_string(&a).unwrap();
        assert!(
            text.starts_with("{\"artifact\":\"band\",\"matrix\""),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Artifact>(&text).unwrap(), a);
        assert_eq!((a.name(), a.matrix(), a.why()), ("band", "t:0", "a band"));
    }

    #[test]
    fn a_malformed_report_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(REPORT_FILE), "{\"plan\": \"staged\"}").unwrap();
        let err = Report::read(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("report.json") && err.contains("not a report.json"),
            "{err}"
        );
        assert!(Report::read(&dir.path().join("none")).is_err());
    }
}
