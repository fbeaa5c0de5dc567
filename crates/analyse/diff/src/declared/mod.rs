//! The declared topology against the measured one: `diff RUN DECLARED`.
//!
//! What a site says its machine is (Slurm's topology.conf, tree or block; a topology file of
//! ranks whose levels hold whole hosts) is checked against the run's own pairs, level by level,
//! without clustering (so a level the clustering left undecided is still checked):
//!
//! - a host is **misplaced** when its pairs with another group's hosts are shorter than those
//!   with its own group's (median, by 3 %, and a one-sided Mann-Whitney test on every measured
//!   pair at z >= 3, in the compared matrix where it is surest): it is named with the group it
//!   was measured with and both medians;
//! - a declared level is **seen** when, the misplaced hosts left out, the pairs between hosts
//!   of one group are shorter than those between groups (the same test, in the matrix where
//!   its groups stand apart most: a z is at its most wherever the pairs stand fully apart);
//! - two groups are **declared apart, measured as one** when the pairs between them are no
//!   longer than those inside them (medians within 3 %, no z of 3 where the pairs could give
//!   one) and no coarser declared level joins them: a switch declared as two, a host declared
//!   alone, blocks of one switch that no aggregate (`BlockSizes=`) joins.
//!
//! A slow host of the run's health (report.json) would pull its pairs away from its group's:
//! its pairs are taken back by its factor first (the larger of a pair's two hosts').

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use lgate_topology::declared::{parse_host_declared, Declared, DeclaredGroup, DeclaredLevel};

use lgate_knobs::Knob;

use crate::json::{finite_or_null, DeclaredJson, DeclaredLevelJson, MisplacedJson, TogetherJson};
use crate::side::{RunSide, SideValues};
use crate::{kind_of, DiffError, JUDGED_KINDS};

mod judge;
mod summary;

use judge::{check_level, joined_above};

/// The least z of a level seen and of a host misplaced.
pub const Z_DECLARED: f64 = 3.0;

/// The least z of a host in doubt: judged again without the others in doubt.
pub const Z_DOUBT: f64 = 2.0;

/// The least gap between the medians inside groups and between them.
pub const LEAST_GAP: f64 = 0.03;

/// A host measured nearer another group than its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Misplaced {
    /// The host.
    pub host: String,
    /// The group the file puts it in.
    pub declared: String,
    /// The group it was measured nearer.
    pub nearer: String,
    /// The median of its pairs with its declared group's other hosts, us.
    pub to_declared_us: f64,
    /// The median of its pairs with the nearer group's hosts, us.
    pub to_nearer_us: f64,
    /// The Mann-Whitney z of its pairs with the declared group being longer.
    pub z: f64,
    /// Its pairs with both groups.
    pub pairs: usize,
}

/// One declared level checked.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelCheck {
    /// The level (`tier1`, `block`, a topology file's level name).
    pub name: String,
    /// Its groups (with a host of the run).
    pub groups: Vec<String>,
    /// The matrix it was judged in (where its groups stand apart most).
    pub matrix: String,
    /// Whether the pairs show it.
    pub seen: bool,
    /// The median of the pairs between hosts of one group, us.
    pub inside_us: f64,
    /// The median of the pairs between groups, us.
    pub between_us: f64,
    /// The Mann-Whitney z of the pairs between groups being longer.
    pub z: f64,
    /// Hosts measured nearer another group.
    pub misplaced: Vec<Misplaced>,
    /// Two groups declared apart whose pairs measure as one group's.
    pub together: Vec<Together>,
}

/// Two groups of a level declared apart and measured as one: the pairs between them are no
/// longer than those inside either (a switch declared as two, a host declared alone).
#[derive(Debug, Clone, PartialEq)]
pub struct Together {
    /// The two groups.
    pub groups: (String, String),
    /// The median of the pairs inside the two groups, us.
    pub inside_us: f64,
    /// The median of the pairs between them, us.
    pub between_us: f64,
    /// The Mann-Whitney z of the pairs between them being longer.
    pub z: f64,
    /// The pairs compared.
    pub pairs: usize,
}

/// A run checked against a declared topology.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredCheck {
    /// The run.
    pub run: PathBuf,
    /// The declared topology's file.
    pub file: PathBuf,
    /// Its format.
    pub format: String,
    /// The run's hosts the file does not place.
    pub not_declared: Vec<String>,
    /// Each declared level.
    pub levels: Vec<LevelCheck>,
    /// Declared levels of one host a group (the hosts themselves: no pair between two hosts
    /// of a group to judge them by), by name.
    pub one_host_a_group: Vec<String>,
}

impl DeclaredCheck {
    /// Whether the run disagrees: a level not seen or a host misplaced.
    pub fn differs(&self) -> bool {
        self.levels
            .iter()
            .any(|l| !l.seen || !l.misplaced.is_empty() || !l.together.is_empty())
    }
}

/// Whether `path` holds a declared topology (a Slurm topology.conf or a topology file) rather
/// than a matrix.
pub fn is_declared(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    parse_host_declared(&text).is_some() || lgate_topology::format::parse(&text, None, None).is_ok()
}

/// Checks `run` against the topology declared in `file`.
pub fn check_declared(run: &Path, file: &Path) -> Result<DeclaredCheck, DiffError> {
    let side = RunSide::read(run, None)?;
    let invalid = |message: String| DiffError::Invalid {
        path: file.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(file).map_err(|e| invalid(e.to_string()))?;
    let declared = if let Some(declared) = parse_host_declared(&text) {
        declared.map_err(|e| invalid(e.to_string()))?
    } else {
        let ranks = side
            .places
            .iter()
            .map(|p| p.rank)
            .max()
            .map_or(0, |r| r + 1);
        let (topology, format) =
            lgate_topology::format::parse(&text, None, Some(ranks)).map_err(|e| {
                invalid(format!(
                    "not a Slurm topology.conf or topology.yaml, Kubernetes nodes or a \
                     topology file: {e}"
                ))
            })?;
        of_ranks(&topology, &side, format.name()).map_err(invalid)?
    };
    let run_hosts: Vec<String> = {
        let mut h: Vec<String> = side.places.iter().filter_map(|p| p.host.clone()).collect();
        h.sort();
        h.dedup();
        h
    };
    if run_hosts.is_empty() {
        return Err(DiffError::Invalid {
            path: run.to_path_buf(),
            message: "the run names no host to check against the declared topology".into(),
        });
    }
    // Kubernetes names nodes by their full name, MPI by the host's own (`n01` for
    // `n01.cluster.local`): a declared name the run lacks is taken by its first label when the
    // run has that one.
    let mut declared = declared;
    for group in (declared.levels.iter_mut()).flat_map(|l| l.groups.iter_mut()) {
        for h in &mut group.hosts {
            if run_hosts.binary_search(h).is_err() {
                if let Some((short, _)) = h.split_once('.') {
                    if run_hosts
                        .binary_search_by(|r| r.as_str().cmp(short))
                        .is_ok()
                    {
                        *h = short.to_string();
                    }
                }
            }
        }
    }
    let declared_hosts = declared.hosts();
    if let Some(h) = declared_hosts
        .iter()
        .find(|h| run_hosts.binary_search(h).is_err())
    {
        let shown: Vec<&str> = run_hosts.iter().take(4).map(String::as_str).collect();
        return Err(invalid(format!(
            "host {h} is not a host of the run {} (its hosts: {}{})",
            run.display(),
            shown.join(", "),
            if run_hosts.len() > 4 { ", ..." } else { "" }
        )));
    }
    if declared.levels.is_empty() {
        return Err(invalid(
            "declares no level of two groups or more to check".into(),
        ));
    }
    let values = host_pair_values(&side, &slow_factors(run));
    // A level of one host a group (a topology's host level, its ranks one a host) has no pair
    // inside a group: it is the hosts themselves, not a grouping the pairs between hosts judge.
    let (single, judged): (Vec<&DeclaredLevel>, Vec<&DeclaredLevel>) =
        (declared.levels.iter()).partition(|l| l.groups.iter().all(|g| g.hosts.len() <= 1));
    let levels = (judged.into_iter())
        .map(|level| check_level(level, &values, &joined_above(level, &declared.levels)))
        .collect();
    Ok(DeclaredCheck {
        run: run.to_path_buf(),
        file: file.to_path_buf(),
        format: declared.format,
        not_declared: (run_hosts.into_iter())
            .filter(|h| declared_hosts.binary_search(h).is_err())
            .collect(),
        levels,
        one_host_a_group: single.into_iter().map(|l| l.name.clone()).collect(),
    })
}

/// The levels of a topology of ranks that hold whole hosts, as groups of the run's hosts.
fn of_ranks(
    topology: &lgate_topology::Topology,
    side: &RunSide,
    format: &str,
) -> Result<Declared, String> {
    let host_of: HashMap<usize, &str> = (side.places.iter())
        .filter_map(|p| p.host.as_deref().map(|h| (p.rank, h)))
        .collect();
    let mut levels = Vec::new();
    for level in topology.levels() {
        let mut group_of_host: HashMap<&str, usize> = HashMap::new();
        let mut whole = true;
        let mut groups: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for (g, ranks) in level.groups.iter().enumerate() {
            for r in ranks {
                let Some(&h) = host_of.get(r) else { continue };
                match group_of_host.insert(h, g) {
                    Some(other) if other != g => whole = false,
                    Some(_) => {}
                    None => groups.entry(g).or_default().push(h.to_string()),
                }
            }
        }
        if whole && groups.len() >= 2 {
            levels.push(DeclaredLevel {
                name: level.name.clone(),
                groups: (groups.into_iter())
                    .map(|(g, hosts)| DeclaredGroup {
                        name: format!("{} {g}", level.name),
                        hosts,
                    })
                    .collect(),
            });
        }
    }
    if levels.is_empty() {
        let hosts: HashSet<&str> = host_of.values().copied().collect();
        if hosts.len() == 1 {
            let host = hosts.into_iter().next().unwrap_or_default();
            return Err(format!(
                "the run's ranks are all on one host ({host}): the declared check compares groups \
                 of hosts; `diff` two runs to compare them, or `{} RUN` the topology against \
                 the run's placement",
                Knob::Truth.in_command()
            ));
        }
        return Err(
            "no level of this topology holds whole hosts of the run in two groups or more".into(),
        );
    }
    Ok(Declared {
        format: format!("{format} topology of ranks"),
        levels,
    })
}

/// Per compared matrix: its name and the measured pairs' values between each two hosts.
type HostPairValues = Vec<(String, HashMap<(String, String), Vec<f64>>)>;

/// The run's slow hosts (its report.json's health) and how much slower they are: every pair
/// with a rank on one takes longer, which would pull it away from its group's hosts.
fn slow_factors(run: &Path) -> HashMap<String, f64> {
    let Ok(report) = lgate_rundir::Report::read(run) else {
        return HashMap::new();
    };
    let hosts = match &report {
        lgate_rundir::Report::Staged(s) => s.slow_hosts.clone(),
        lgate_rundir::Report::Health(h) => (h.matrices.iter())
            .flat_map(|m| m.slow_hosts.iter().cloned())
            .collect(),
    };
    let mut out: HashMap<String, f64> = HashMap::new();
    for h in hosts
        .into_iter()
        .filter(|h| h.factor.is_finite() && h.factor > 1.0)
    {
        let f = out.entry(h.host).or_insert(1.0);
        *f = f.max(h.factor);
    }
    out
}

/// The measured pairs between each two hosts, per judged matrix; a pair with a slow host
/// (`slow`) taken back by its factor (the larger of its two hosts').
fn host_pair_values(side: &RunSide, slow: &HashMap<String, f64>) -> HostPairValues {
    let mut out = Vec::new();
    for m in side
        .matrices
        .iter()
        .filter(|m| JUDGED_KINDS.contains(&kind_of(&m.name)))
    {
        let mut by: HashMap<(String, String), Vec<f64>> = HashMap::new();
        let mut add = |k: usize, l: usize, v: f64| {
            if let (Some(a), Some(b)) = (side.host(k), side.host(l)) {
                if a != b && v.is_finite() {
                    let key = if a < b { (a, b) } else { (b, a) };
                    let f = |h: &str| slow.get(h).copied().unwrap_or(1.0);
                    let v = v / f(a).max(f(b));
                    by.entry((key.0.to_string(), key.1.to_string()))
                        .or_default()
                        .push(v);
                }
            }
        };
        match &m.values {
            SideValues::Dense { values, .. } => {
                for k in 0..side.len() {
                    for l in k + 1..side.len() {
                        if side.is_measured(k, l) {
                            add(k, l, values.get(k, l));
                        }
                    }
                }
            }
            SideValues::Pairs(p) => {
                for (k, l, v, _) in p.iter() {
                    add(k, l, v);
                }
            }
        }
        out.push((m.name.clone(), by));
    }
    out
}

#[cfg(test)]
mod tests;
