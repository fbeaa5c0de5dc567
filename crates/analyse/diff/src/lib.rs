//! What changed between two runs of one machine.
//!
//! Ranks are matched by host (see [`matching`]); every pair measured in both runs is compared
//! in every matrix both have (L, t(m), RTT(m), o_s(m), o_r(m), g(m)) by its log ratio
//! `ln(B / A)`. How much an unchanged pair, rank, host or host pair moves between two runs is
//! read from the runs themselves ([`aggregate`]): each pair's repetitions (p10-p90 range over
//! 2.563, its sweeps' spread, and for a staged run how much a pair screened twice moved between
//! its tests), and the bulk of the machine, most of which did not change (the pairs' spread
//! around their host pair's median, the ranks' around their host's, with six hosts or host
//! pairs or more theirs). A pair's z is its log ratio over that noise.
//!
//! Two kinds of change are told apart, because a whole machine drifts between runs (thermal
//! state, other jobs, a busy 2-core VM: 20-60 % here) far more than one repetition varies:
//! - Local: a host, host pair or rank whose pairs together changed against the machine's
//!   shift (each class's median: inside a host, between hosts): their median change over the
//!   standard error of that median is beyond the threshold, and by at least `--min-change`.
//!   Hosts are judged first (on the pairs inside them and on those with other hosts apart),
//!   then host pairs on the pairs no changed host explains, then ranks; within a level the
//!   most sure unit first, its pairs then explained and the machine's shift taken again. So
//!   500 pairs that agree weigh more than one, and a unit that moved no more than such units
//!   move between runs is not named.
//! - Machine-wide: the median over all pairs beyond the threshold and by at least
//!   `--machine-change` (default 2x); the ranks (or hosts) that carry it are named the same way
//!   with absolute changes.
//!
//! The topology `cluster` finds in each run is compared level by level.
//!
//! Cost: both runs' matrices and, per compared matrix, one `f32` noise value per pair of each
//! run: at P ranks and M matrices about 12 * M * P^2 bytes (P = 4096, M = 5: 1 GB); the pairs
//! are visited once per matrix and once per unit flagged.
#![deny(missing_docs)]

pub mod aggregate;
pub mod compare;
pub mod declared;
mod findings;
pub mod json;
pub mod levels;
pub mod matching;
pub mod side;
mod summary;

use std::collections::{BTreeSet, HashMap};

use lgate_stats::median;
use std::path::{Path, PathBuf};

pub use compare::{
    Bar, MatrixDiff, NoiseSource, PairChange, RunToRun, UnitChange, UnitKind, Units,
};
pub use levels::LevelChange;
pub use matching::{match_ranks, MatchedBy, RankMatching, RankPlace};
pub use side::RunSide;

/// An error of reading or comparing runs.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    /// A run or matrix could not be read.
    #[error(transparent)]
    Input(#[from] lgate_cluster::InputError),
    /// A run could not be clustered.
    #[error(transparent)]
    Clustering(#[from] lgate_cluster::ClusteringError),
    /// A run directory is unusable.
    #[error(transparent)]
    RunDir(#[from] lgate_rundir::RunDirError),
    /// Something else, said in full.
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The file or folder.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// An option that cannot mean anything, named by its field of [`DiffOptions`].
    #[error("{field} {value}: {needs}")]
    Option {
        /// The field of [`DiffOptions`].
        field: &'static str,
        /// Its value.
        value: f64,
        /// What a value of it must be.
        needs: &'static str,
    },
}

/// How `diff` judges.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffOptions {
    /// A unit changed when its pairs' median change is at least this many standard errors
    /// of that median.
    pub threshold: f64,
    /// A local change must also be at least this relative change (0.1: 10 % slower or faster).
    pub min_change: f64,
    /// A machine-wide change must also be at least this factor (2: twice as slow or fast).
    pub machine_change: f64,
    /// A change of one pair that no host or rank explains must also be at least this factor,
    /// ...
    pub pair_change: f64,
    /// ... or be beyond this many standard deviations (and `min_change`).
    pub pair_threshold: f64,
    /// The noise changed when B's is this many times A's, or A's this many times B's.
    pub spread_factor: f64,
    /// Only these matrices (all measured ones when `None`).
    pub matrices: Option<Vec<String>>,
    /// Compare the topologies `cluster` finds.
    pub topology: bool,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            threshold: DEFAULT_THRESHOLD,
            min_change: DEFAULT_MIN_CHANGE,
            machine_change: DEFAULT_MACHINE_CHANGE,
            pair_change: DEFAULT_PAIR_CHANGE,
            pair_threshold: DEFAULT_PAIR_THRESHOLD,
            spread_factor: DEFAULT_SPREAD_FACTOR,
            matrices: None,
            topology: true,
        }
    }
}

/// The default threshold on a unit's z.
pub const DEFAULT_THRESHOLD: f64 = 3.0;
/// The default least relative change of a local change: 5 %, so that a host 10 % slower is
/// named even when its noise puts it a little under 10 %; the z of its pairs together decides.
pub const DEFAULT_MIN_CHANGE: f64 = 0.05;
/// The default least factor of a machine-wide change.
pub const DEFAULT_MACHINE_CHANGE: f64 = 2.0;
/// The default least factor of a change of one pair: pairs of ranks sharing a core moved
/// 20-40 % at z 4-14 between back-to-back runs of this 2-core VM with nothing changed.
pub const DEFAULT_PAIR_CHANGE: f64 = 2.0;
/// The default threshold of a change of one pair smaller than that factor: 30 standard
/// deviations, 4.5 times the most an unchanged pair of runs of three sweeps showed here
/// (6.7); a pair of ranks on a busy CPU under MPICH moved by 64 % at z 279.
pub const DEFAULT_PAIR_THRESHOLD: f64 = 30.0;
/// How many standard deviations a pair that moved by the cube of `--pair-change` must be
/// beyond: one, so that a later run too noisy for the threshold (ranks time-sliced with a busy
/// process) still shows a pair that became several times slower.
pub const GROSS_PAIR_SIGMAS: f64 = 1.0;
/// The default factor of a noise change.
pub const DEFAULT_SPREAD_FACTOR: f64 = 1.5;

impl DiffOptions {
    /// Refuses a threshold or factor that cannot mean anything.
    pub fn check(&self) -> Result<(), DiffError> {
        const SIGMAS: &str = "must be a positive number of standard deviations";
        const FACTOR: &str = "must be a factor of 1 or more";
        let checks = [
            ("threshold", self.threshold, self.threshold > 0.0, SIGMAS),
            (
                "pair_threshold",
                self.pair_threshold,
                self.pair_threshold > 0.0,
                SIGMAS,
            ),
            (
                "min_change",
                self.min_change,
                self.min_change >= 0.0,
                "must be a relative change of 0 or more (0.1 for 10 %)",
            ),
            (
                "machine_change",
                self.machine_change,
                self.machine_change >= 1.0,
                FACTOR,
            ),
            (
                "pair_change",
                self.pair_change,
                self.pair_change >= 1.0,
                FACTOR,
            ),
            (
                "spread_factor",
                self.spread_factor,
                self.spread_factor > 1.0,
                "must be a number above 1",
            ),
        ];
        match checks
            .into_iter()
            .find(|&(_, v, ok, _)| !(v.is_finite() && ok))
        {
            Some((field, value, _, needs)) => Err(DiffError::Option {
                field,
                value,
                needs,
            }),
            None => Ok(()),
        }
    }
}

/// Ranks up to which a diff's picture is pair by pair (a P x P picture); above, host by host.
pub const DENSE_PICTURE_RANKS: usize = 4096;

/// A diff's picture: z per pair, or per pair of hosts.
#[derive(Debug, Clone)]
pub struct ZPicture {
    /// The matrix compared.
    pub matrix: String,
    /// z, or the median z of each two hosts' pairs.
    pub z: ndarray::Array2<f64>,
    /// Per row, its rank number or host name.
    pub labels: Vec<String>,
    /// What a row is: `rank` or `host`.
    pub rows: &'static str,
}

impl ZPicture {
    /// Its title after `what` (`A -> B`, `since A`): the matrix, and what a cell is.
    pub fn title(&self, what: &str) -> String {
        let per_hosts = if self.rows == "host" {
            ", median per two hosts"
        } else {
            ""
        };
        format!("{what}: {}, change over noise (z{per_hosts})", self.matrix)
    }
}

/// The comparison of two runs.
#[derive(Debug, Clone)]
pub struct RunDiff {
    /// Run A (before) and run B (after).
    pub paths: (PathBuf, PathBuf),
    /// The options judged with.
    pub options: DiffOptions,
    /// Which ranks stand for which.
    pub matching: RankMatching,
    /// Matched ranks one of the runs did not test (a run of a share of the ranks).
    pub untested: Vec<usize>,
    /// Per compared matrix, every pair.
    pub matrices: Vec<MatrixDiff>,
    /// Every host, host pair and rank, in the matrix where it changed most (absolute).
    pub units: Vec<UnitChange>,
    /// Hosts, host pairs and ranks changed against the machine's shift, in the matrix where
    /// each changed most.
    pub local: Vec<UnitChange>,
    /// Hosts, host pairs and ranks beyond the bar in one of three or more deciding matrices
    /// and in none of the others: listed, not counted (noise at one size).
    pub one_matrix_only: Vec<UnitChange>,
    /// Per matrix, the machine's shift.
    pub machine: Vec<MachineShift>,
    /// The topology compared level by level, when asked for.
    pub levels: Option<Vec<LevelChange>>,
    /// Per row of run A: its rank and host, to name pairs.
    pub rows_a: Vec<(usize, Option<String>)>,
}

/// Reads both runs and compares them.
pub fn diff(a: &Path, b: &Path, options: &DiffOptions) -> Result<RunDiff, DiffError> {
    options.check()?;
    let side_a = RunSide::read(a, options.matrices.as_deref())?;
    let side_b = RunSide::read(b, options.matrices.as_deref())?;
    let (matching, rows, untested) = matched_rows(a, b, &side_a, &side_b)?;
    let mut matrices = compare::compare_matrices(&side_a, &side_b, &rows);
    let unit_set = matrices
        .first()
        .map(|m| Units::of(&side_a, m))
        .unwrap_or_default();
    // How much unchanged pairs and units move between the runs, read from the machine's bulk;
    // each pair's z then counts it.
    for m in &mut matrices {
        m.run_to_run = aggregate::run_to_run(m, &unit_set);
        let model = m.run_to_run.clone();
        for p in &mut m.pairs {
            let r = p.log_ratio();
            if r.is_finite() {
                p.z = compare::z_of(r, model.pair_variance(p).sqrt());
            }
        }
    }
    // Every unit's change in the matrices that decide the verdict (all when none does).
    let mut judged: Vec<&MatrixDiff> = matrices
        .iter()
        .filter(|m| options.matrices.is_some() || JUDGED_KINDS.contains(&kind_of(&m.name)))
        .collect();
    if judged.is_empty() {
        judged = matrices.iter().collect();
    }
    let units = compare::unit_changes(&unit_set, &judged);
    let unit_bar = Bar {
        z: options.threshold,
        factor: 1.0 + options.min_change,
    };
    let (local, one_matrix_only, machine) =
        flag_shifts(&side_a, &unit_set, &matrices, options, unit_bar);
    let levels = if options.topology {
        let ta = topology_of(a)?;
        let tb = topology_of(b)?;
        let matched: Vec<(usize, usize)> = rows
            .iter()
            .map(|&(ka, kb)| (side_a.ranks[ka], side_b.ranks[kb]))
            .collect();
        Some(levels::compare_topologies(&ta, &tb, &matched))
    } else {
        None
    };
    Ok(RunDiff {
        paths: (a.to_path_buf(), b.to_path_buf()),
        options: options.clone(),
        matching,
        untested,
        matrices,
        units,
        local,
        one_matrix_only,
        machine,
        levels,
        rows_a: side_a
            .ranks
            .iter()
            .zip(&side_a.places)
            .map(|(&r, p)| (r, p.host.clone()))
            .collect(),
    })
}

/// How two runs' ranks were matched, the matched ranks' rows in each run's matrices, and the
/// ranks of the first run without a row in both.
type MatchedRows = (RankMatching, Vec<(usize, usize)>, Vec<usize>);

/// The ranks of run `b` matched to run `a`'s (by their places), as rows of each run's
/// matrices, and `a`'s ranks without a row in both; an error when the runs share no matrix or
/// fewer than two ranks.
fn matched_rows(
    a: &Path,
    b: &Path,
    side_a: &RunSide,
    side_b: &RunSide,
) -> Result<MatchedRows, DiffError> {
    let shared: Vec<&str> = side_a
        .matrices
        .iter()
        .filter(|m| side_b.matrices.iter().any(|x| x.name == m.name))
        .map(|m| m.name.as_str())
        .collect();
    if shared.is_empty() {
        let names = |s: &RunSide| {
            s.matrices
                .iter()
                .map(|m| m.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(DiffError::Invalid {
            path: b.to_path_buf(),
            message: format!(
                "no matrix in common with {}: it has {}, this has {}",
                a.display(),
                names(side_a),
                names(side_b)
            ),
        });
    }
    let matching = match_ranks(&side_a.places, &side_b.places);
    let row_a: HashMap<usize, usize> = side_a
        .ranks
        .iter()
        .enumerate()
        .map(|(k, &r)| (r, k))
        .collect();
    let row_b: HashMap<usize, usize> = side_b
        .ranks
        .iter()
        .enumerate()
        .map(|(k, &r)| (r, k))
        .collect();
    let mut rows = Vec::new();
    let mut untested = Vec::new();
    for &(ra, rb) in &matching.pairs {
        match (row_a.get(&ra), row_b.get(&rb)) {
            (Some(&ka), Some(&kb)) => rows.push((ka, kb)),
            _ => untested.push(ra),
        }
    }
    if rows.len() < 2 {
        return Err(DiffError::Invalid {
            path: b.to_path_buf(),
            message: format!(
                "{} rank(s) match {} by {}: a diff needs two",
                rows.len(),
                a.display(),
                matching.by.describe()
            ),
        });
    }
    Ok((matching, rows, untested))
}

/// Per matrix, the shift of the whole machine (flagged in the matrices that decide the
/// verdict), the units (hosts, switches, ranks, pairs) that moved against it, each at the
/// matrix where it moved surest, and those of them that moved in that matrix alone.
fn flag_shifts(
    side_a: &RunSide,
    unit_set: &Units,
    matrices: &[MatrixDiff],
    options: &DiffOptions,
    unit_bar: Bar,
) -> (Vec<UnitChange>, Vec<UnitChange>, Vec<MachineShift>) {
    let pair_bars = [
        Bar {
            z: options.threshold,
            factor: options.pair_change,
        },
        // A pair that moved by the cube of --pair-change needs one standard deviation only:
        // two ranks time-sliced with a busy process on their CPU made a pair 42 times slower
        // (t(64 KiB), against the machine) under MPICH 5, with repetitions so spread that it
        // stood 1.3 deviations out. The cube, not the square: a pair of ranks sharing a CPU
        // under Debian's MPICH flipped between its fast and its time-sliced mode by 4.4x
        // between runs of an unchanged machine.
        Bar {
            z: GROSS_PAIR_SIGMAS,
            factor: options.pair_change.powi(3),
        },
        Bar {
            z: options.pair_threshold,
            factor: 1.0 + options.min_change,
        },
    ];
    let mut local: Vec<UnitChange> = Vec::new();
    let mut machine = Vec::new();
    for m in matrices {
        let (z, change, _) = m.medians();
        // One pair among many: at --threshold alone, pairs of an unchanged machine with
        // heavy-tailed noise pass by chance (1 of 6 simulated betzy runs of 130 816 pairs,
        // one pair 4.6x at z 3.2); the bar rises with the pairs so that all of them together
        // pass it by chance 5 % of the time (two-sided).
        let family = lgate_stats::normal_upper_quantile(0.025 / m.pairs.len().max(1) as f64);
        let mut pair_bars = pair_bars;
        pair_bars[0].z = pair_bars[0].z.max(family);
        let judged = options.matrices.is_some() || JUDGED_KINDS.contains(&kind_of(&m.name));
        let whole = Bar {
            z: options.threshold,
            factor: options.machine_change,
        };
        let flagged = judged && whole.passed_by(z, change);
        // When the whole machine moved, pairs of one class moved apart from pairs of another
        // by as much (between hosts 2.25x, inside 1.5x): against the machine, only a pair
        // beyond --pair-change counts then.
        let bars = if flagged {
            (unit_bar, &pair_bars[..2])
        } else {
            (unit_bar, &pair_bars[..])
        };
        let flagged_here = if judged {
            compare::flag_units(side_a, unit_set, m, bars, true)
        } else {
            Vec::new()
        };
        for c in flagged_here {
            match local
                .iter_mut()
                .find(|x| x.kind == c.kind && x.name == c.name)
            {
                Some(x) if x.z.abs() >= c.z.abs() => {}
                Some(x) => *x = c,
                None => local.push(c),
            }
        }
        let carried_by = if flagged {
            compare::flag_units(side_a, unit_set, m, (unit_bar, &pair_bars), false)
        } else {
            Vec::new()
        };
        machine.push(MachineShift {
            matrix: m.name.clone(),
            pairs: m.pairs.len(),
            z,
            change,
            flagged,
            carried_by,
        });
    }
    // Where three or more matrices decide, a host, host pair or rank beyond the bar in one
    // counts when another shows it too, the same way, at half the bar: one size alone is noise.
    let judged: Vec<&MatrixDiff> = matrices
        .iter()
        .filter(|m| options.matrices.is_some() || JUDGED_KINDS.contains(&kind_of(&m.name)))
        .collect();
    let mut alone = Vec::new();
    if judged.len() >= CONFIRMED_FROM {
        (local, alone) = local.into_iter().partition(|c| {
            c.kind == UnitKind::Pair
                || compare::seen_elsewhere(unit_set, c, &judged, unit_bar.z / 2.0)
        });
    }
    (local, alone, machine)
}

/// The number of matrices deciding the verdict from which a unit flagged in one of them must
/// show in another (see [`compare::seen_elsewhere`]): a staged run decides on one or two.
const CONFIRMED_FROM: usize = 3;

/// The matrices whose changes decide the verdict when `--matrices` does not name them: the
/// distances topologies are made of. o_s(m), o_r(m) and g(m) alone are compared and listed but
/// judged only when named: one repetition of them varies far less than they move between runs
/// of an unchanged machine (here 10-40 % per rank at z 5-70 between back-to-back runs).
pub const JUDGED_KINDS: [&str; 5] = ["latency", "t", "rtt", "imported", "matrix"];

/// The kind of a matrix name: `t` of `t:1KiB`.
pub fn kind_of(name: &str) -> &str {
    name.split(':').next().unwrap_or(name)
}

/// The topology `cluster` finds with its defaults.
fn topology_of(path: &Path) -> Result<lgate_topology::Topology, DiffError> {
    if path.is_dir() {
        return Ok(lgate_cluster::default_topology(path)?);
    }
    let input = lgate_cluster::load(path, None)?;
    let (tree, _) = input.auto(&lgate_cluster::AutoParams::default())?;
    Ok(input.topology(&tree)?)
}

/// The shift of the whole machine in one matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineShift {
    /// The matrix.
    pub matrix: String,
    /// Its compared pairs.
    pub pairs: usize,
    /// The median z over all pairs.
    pub z: f64,
    /// The median relative change over all pairs.
    pub change: f64,
    /// Whether it counts as a change (beyond the threshold and `--machine-change`).
    pub flagged: bool,
    /// When it counts: the units whose pairs carry it (absolute changes).
    pub carried_by: Vec<UnitChange>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_option_is_named_by_its_field_never_a_flag() {
        let bad = |o: DiffOptions| match o.check() {
            Err(DiffError::Option { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let base = DiffOptions::default;
        assert_eq!(
            bad(DiffOptions {
                threshold: f64::NAN,
                ..base()
            }),
            "threshold"
        );
        assert_eq!(
            bad(DiffOptions {
                pair_change: 0.5,
                ..base()
            }),
            "pair_change"
        );
        assert_eq!(
            bad(DiffOptions {
                spread_factor: 1.0,
                ..base()
            }),
            "spread_factor"
        );
        assert!(base().check().is_ok());
    }
}
