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
//!   of one group are shorter than those between groups (the same test, in the matrix where it
//!   is surest);
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

use crate::json::{finite_or_null, DeclaredJson, DeclaredLevelJson, MisplacedJson, TogetherJson};
use crate::side::{RunSide, SideValues};
use crate::{kind_of, DiffError, JUDGED_KINDS};

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
                "the run's ranks are all on one host ({host}): the declared check compares                  groups of hosts; `diff` two runs to compare them, or `score --truth RUN` the                  topology against the run's placement"
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

/// One declared level against each matrix's pairs: its hosts measured nearer another group
/// (each where the evidence is surest), then, without them, whether its groups stand apart
/// (where they stand apart most).
/// The pairs of `level`'s groups (by index) that a coarser level of `all` (fewer groups) puts
/// in one group: declared together above, so not declared apart.
fn joined_above(level: &DeclaredLevel, all: &[DeclaredLevel]) -> HashSet<(usize, usize)> {
    let mut out = HashSet::new();
    for above in all.iter().filter(|a| a.groups.len() < level.groups.len()) {
        let group_of: HashMap<&str, usize> = (above.groups.iter().enumerate())
            .flat_map(|(g, grp)| grp.hosts.iter().map(move |h| (h.as_str(), g)))
            .collect();
        // The group above that holds all of a group's hosts, if one does.
        let within: Vec<Option<usize>> = (level.groups.iter())
            .map(|grp| {
                let mut at = grp.hosts.iter().map(|h| group_of.get(h.as_str()).copied());
                let first = at.next().flatten()?;
                at.all(|g| g == Some(first)).then_some(first)
            })
            .collect();
        for g in 0..within.len() {
            for h in g + 1..within.len() {
                if within[g].is_some() && within[g] == within[h] {
                    out.insert((g, h));
                }
            }
        }
    }
    out
}

fn check_level(
    level: &DeclaredLevel,
    values: &HostPairValues,
    joined: &HashSet<(usize, usize)>,
) -> LevelCheck {
    // Hosts in doubt first (a lower bar), then every host judged against the hosts not in
    // doubt: in small groups a swapped host's partner, counted in the group it is nearer,
    // weighs against it (two leaves of four hosts: z at most 3.4 with it, 4.2 without).
    let doubt: HashSet<String> = (values.iter())
        .flat_map(|(_, by)| misplaced(level, by, &HashSet::new(), Z_DOUBT))
        .map(|m| m.host)
        .collect();
    let mut moved: BTreeMap<String, Misplaced> = BTreeMap::new();
    for (_, by) in values {
        for m in misplaced(level, by, &doubt, Z_DECLARED) {
            if moved.get(&m.host).is_none_or(|x| m.z > x.z) {
                moved.insert(m.host.clone(), m);
            }
        }
    }
    let group_of: HashMap<&str, usize> = (level.groups.iter().enumerate())
        .flat_map(|(g, grp)| grp.hosts.iter().map(move |h| (h.as_str(), g)))
        .filter(|(h, _)| !moved.contains_key(*h))
        .collect();
    let mut best: Option<LevelCheck> = None;
    for (matrix, by) in values {
        let (mut inside, mut between) = (Vec::new(), Vec::new());
        for ((a, b), v) in by {
            let (Some(ga), Some(gb)) = (group_of.get(a.as_str()), group_of.get(b.as_str())) else {
                continue;
            };
            if ga == gb {
                inside.extend(v);
            } else {
                between.extend(v);
            }
        }
        if inside.is_empty() || between.is_empty() {
            continue;
        }
        let z = lgate_stats::mann_whitney_z(&inside, &between);
        let (i, b) = (
            lgate_stats::median(&mut inside),
            lgate_stats::median(&mut between),
        );
        let check = LevelCheck {
            name: level.name.clone(),
            groups: level.groups.iter().map(|g| g.name.clone()).collect(),
            matrix: matrix.clone(),
            seen: z >= Z_DECLARED && b >= (1.0 + LEAST_GAP) * i,
            inside_us: i,
            between_us: b,
            z,
            misplaced: Vec::new(),
            together: Vec::new(),
        };
        if best.as_ref().is_none_or(|x| check.z > x.z) {
            best = Some(check);
        }
    }
    let mut check = best.unwrap_or_else(|| LevelCheck {
        name: level.name.clone(),
        groups: level.groups.iter().map(|g| g.name.clone()).collect(),
        matrix: String::new(),
        seen: false,
        inside_us: f64::NAN,
        between_us: f64::NAN,
        z: 0.0,
        misplaced: Vec::new(),
        together: Vec::new(),
    });
    if let Some((_, by)) = values.iter().find(|(m, _)| *m == check.matrix) {
        let gap = (check.between_us / check.inside_us).ln();
        check.together = together(level, by, &group_of, joined, gap);
    }
    check.misplaced = moved.into_values().collect();
    check
}

/// The groups of `level` declared apart whose pairs with each other measure as those inside
/// them do (in the matrix `by`; hosts by `group_of`, the misplaced left out): the median between
/// them within [`LEAST_GAP`] of the median inside, and no Mann-Whitney z of [`Z_DECLARED`] for
/// the pairs between being longer, where the pairs are enough for such a z; or, where the level
/// stands apart (`gap`, the log of its median between groups over inside), the median between
/// them nearer the median inside than a quarter of that gap (two leaves of one switch 4.6 %
/// apart at 64 KiB on the testbed, whose leaves are 11 times apart).
fn together(
    level: &DeclaredLevel,
    by: &HashMap<(String, String), Vec<f64>>,
    group_of: &HashMap<&str, usize>,
    joined: &HashSet<(usize, usize)>,
    gap: f64,
) -> Vec<Together> {
    let n = level.groups.len();
    // Per group, its pairs inside; per two groups, the pairs between them.
    let mut inside: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut between: HashMap<(usize, usize), Vec<f64>> = HashMap::new();
    for ((a, b), v) in by {
        let (Some(&ga), Some(&gb)) = (group_of.get(a.as_str()), group_of.get(b.as_str())) else {
            continue;
        };
        if ga == gb {
            inside[ga].extend(v);
        } else {
            between
                .entry((ga.min(gb), ga.max(gb)))
                .or_default()
                .extend(v);
        }
    }
    let mut out = Vec::new();
    let mut keys: Vec<(usize, usize)> = (between.keys())
        .filter(|k| !joined.contains(k))
        .copied()
        .collect();
    keys.sort_unstable();
    for (g, h) in keys {
        let mut apart = between[&(g, h)].clone();
        let mut within: Vec<f64> = inside[g].iter().chain(&inside[h]).copied().collect();
        if !could_decide(within.len(), apart.len()) {
            continue;
        }
        let z = lgate_stats::mann_whitney_z(&within, &apart);
        let (i, b) = (
            lgate_stats::median(&mut within),
            lgate_stats::median(&mut apart),
        );
        let near = (b <= (1.0 + LEAST_GAP) * i && z < Z_DECLARED)
            || (gap > (1.0 + LEAST_GAP).ln() && (b / i).ln() < gap / 4.0);
        if near {
            out.push(Together {
                groups: (level.groups[g].name.clone(), level.groups[h].name.clone()),
                inside_us: i,
                between_us: b,
                z,
                pairs: within.len() + apart.len(),
            });
        }
    }
    out
}

/// Whether samples of `n1` and `n2` values could give a Mann-Whitney z of [`Z_DECLARED`] (the
/// z when every value of one exceeds every value of the other).
fn could_decide(n1: usize, n2: usize) -> bool {
    let (a, b) = (n1 as f64, n2 as f64);
    a > 0.0 && b > 0.0 && (a * b / 2.0) / (a * b * (a + b + 1.0) / 12.0).sqrt() >= Z_DECLARED
}

/// The hosts of `level` measured nearer another group than their own in one matrix, by a
/// Mann-Whitney z of at least `bar`, each against the hosts not in `doubt` (when any are left).
fn misplaced(
    level: &DeclaredLevel,
    by: &HashMap<(String, String), Vec<f64>>,
    doubt: &HashSet<String>,
    bar: f64,
) -> Vec<Misplaced> {
    let pairs_with = |h: &str, g: usize| -> Vec<f64> {
        let hosts = &level.groups[g].hosts;
        let clear = |o: &&String| o.as_str() != h && !doubt.contains(*o);
        let all = |o: &&String| o.as_str() != h;
        let keep: &dyn Fn(&&String) -> bool = if hosts.iter().any(|o| clear(&o)) {
            &clear
        } else {
            &all
        };
        (hosts.iter())
            .filter(keep)
            .flat_map(|o| {
                let key = if h < o.as_str() {
                    (h, o.as_str())
                } else {
                    (o.as_str(), h)
                };
                by.get(&(key.0.to_string(), key.1.to_string()))
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
                    .iter()
                    .copied()
            })
            .collect()
    };
    let mut out = Vec::new();
    for (g, group) in level.groups.iter().enumerate() {
        for h in &group.hosts {
            let mut own = pairs_with(h, g);
            if own.is_empty() {
                continue;
            }
            let own_median = lgate_stats::median(&mut own);
            let mut found: Option<Misplaced> = None;
            for other in (0..level.groups.len()).filter(|&o| o != g) {
                let mut theirs = pairs_with(h, other);
                if theirs.is_empty() {
                    continue;
                }
                let m = lgate_stats::median(&mut theirs);
                let z = lgate_stats::mann_whitney_z(&theirs, &own);
                let nearer = m * (1.0 + LEAST_GAP) <= own_median && z >= bar;
                if nearer && found.as_ref().is_none_or(|f| m < f.to_nearer_us) {
                    found = Some(Misplaced {
                        host: h.clone(),
                        declared: group.name.clone(),
                        nearer: level.groups[other].name.clone(),
                        to_declared_us: own_median,
                        to_nearer_us: m,
                        z,
                        pairs: own.len() + theirs.len(),
                    });
                }
            }
            out.extend(found);
        }
    }
    out
}

impl DeclaredCheck {
    /// A few lines for people: each level, its misplaced hosts, the verdict.
    pub fn summary(&self) -> String {
        let mut out = format!(
            "{} against {} ({})\n",
            self.run.display(),
            self.file.display(),
            self.format
        );
        if !self.not_declared.is_empty() {
            out += &format!(
                "not declared (left out): {}\n",
                self.not_declared.join(", ")
            );
        }
        for name in &self.one_host_a_group {
            out += &format!(
                "level {name}: one host a group, the hosts themselves (nothing between hosts to \
                 judge it by)\n"
            );
        }
        for l in &self.levels {
            let shown: Vec<&str> = l.groups.iter().take(6).map(String::as_str).collect();
            let groups = format!(
                "{} groups: {}{}",
                l.groups.len(),
                shown.join(", "),
                if l.groups.len() > 6 { ", ..." } else { "" }
            );
            let how = if l.seen { "seen" } else { "NOT SEEN" };
            out += &format!(
                "level {} ({groups}) at {}: {how} (pairs inside groups {:.3} us, between {:.3} us; z {:.1})\n",
                l.name, l.matrix, l.inside_us, l.between_us, l.z
            );
            for m in &l.misplaced {
                out += &format!(
                    "  host {}: declared in {}, measured with {} ({:.3} us to {}'s hosts against {:.3} us to {}'s; z {:.1} over {} pairs)\n",
                    m.host, m.declared, m.nearer, m.to_nearer_us, m.nearer, m.to_declared_us, m.declared, m.z, m.pairs
                );
            }
            for t in &l.together {
                out += &format!(
                    "  {} and {}: declared apart, measured as one group ({:.3} us between them against {:.3} us inside; z {:.1} over {} pairs)\n",
                    t.groups.0, t.groups.1, t.between_us, t.inside_us, t.z, t.pairs
                );
            }
        }
        // A host misplaced at two levels (a tree and a block topology of one file) is one host.
        let hosts = (self.levels.iter())
            .flat_map(|l| l.misplaced.iter().map(|m| m.host.as_str()))
            .collect::<HashSet<&str>>()
            .len();
        let joined: usize = self.levels.iter().map(|l| l.together.len()).sum();
        let unseen: Vec<&str> = (self.levels.iter())
            .filter(|l| !l.seen)
            .map(|l| l.name.as_str())
            .collect();
        let mut findings = Vec::new();
        if !unseen.is_empty() {
            findings.push(format!(
                "the run does not show level(s) {}",
                unseen.join(", ")
            ));
        }
        if hosts > 0 {
            findings.push(format!("{hosts} host(s) measured elsewhere than declared"));
        }
        if joined > 0 {
            findings.push(format!(
                "{joined} pair(s) of groups declared apart measured as one"
            ));
        }
        out += &if findings.is_empty() {
            "verdict: the run agrees with the declared topology\n".to_string()
        } else {
            format!("verdict: {}\n", findings.join("; "))
        };
        out
    }

    /// Everything, for scripts.
    pub fn to_json(&self) -> DeclaredJson {
        let f = finite_or_null;
        DeclaredJson {
            declared: self.file.display().to_string(),
            differs: self.differs(),
            format: self.format.clone(),
            levels: (self.levels.iter())
                .map(|l| DeclaredLevelJson {
                    between_us: f(l.between_us),
                    groups: l.groups.clone(),
                    inside_us: f(l.inside_us),
                    level: l.name.clone(),
                    matrix: l.matrix.clone(),
                    misplaced: (l.misplaced.iter())
                        .map(|m| MisplacedJson {
                            declared: m.declared.clone(),
                            host: m.host.clone(),
                            nearer: m.nearer.clone(),
                            pairs: m.pairs,
                            to_declared_us: f(m.to_declared_us),
                            to_nearer_us: f(m.to_nearer_us),
                            z: f(m.z),
                        })
                        .collect(),
                    seen: l.seen,
                    together: (l.together.iter())
                        .map(|t| TogetherJson {
                            between_us: f(t.between_us),
                            groups: [t.groups.0.clone(), t.groups.1.clone()],
                            inside_us: f(t.inside_us),
                            pairs: t.pairs,
                            z: f(t.z),
                        })
                        .collect(),
                    z: f(l.z),
                })
                .collect(),
            not_declared: self.not_declared.clone(),
            one_host_a_group: self.one_host_a_group.clone(),
            run: self.run.display().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lgate_topology::declared::DeclaredGroup;

    #[test]
    fn two_leaves_of_one_switch_a_few_percent_apart_are_one_where_the_level_stands_far_apart() {
        // The testbed at 64 KiB: a leaf declared as two (l0a, l0b), its pairs inside 248-275
        // us, between the two halves 215-275 us (median 4.6 % higher), the other leaf 11
        // times away.
        let group = |name: &str, hosts: &[&str]| DeclaredGroup {
            name: name.into(),
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
        };
        let level = DeclaredLevel {
            name: "tier1".into(),
            groups: vec![group("l0a", &["h0", "h1"]), group("l0b", &["h2", "h3"])],
        };
        let inside = [151.9, 247.9, 252.0, 259.8, 262.1, 272.6, 274.2, 275.3];
        let between = [
            214.5, 219.3, 231.3, 232.4, 242.2, 262.0, 266.4, 267.8, 272.8, 273.0, 273.9, 273.9,
            274.2, 274.5, 274.7, 275.4,
        ];
        let key = |a: &str, b: &str| (a.to_string(), b.to_string());
        let mut by = HashMap::new();
        by.insert(key("h0", "h1"), inside[..4].to_vec());
        by.insert(key("h2", "h3"), inside[4..].to_vec());
        for (k, (a, b)) in [("h0", "h2"), ("h0", "h3"), ("h1", "h2"), ("h1", "h3")]
            .into_iter()
            .enumerate()
        {
            by.insert(key(a, b), between[4 * k..4 * k + 4].to_vec());
        }
        let group_of: HashMap<&str, usize> = [("h0", 0), ("h1", 0), ("h2", 1), ("h3", 1)].into();
        let none = HashSet::new();
        // The 3 % alone does not take them (4.6 % apart) ...
        assert!(together(&level, &by, &group_of, &none, 0.0).is_empty());
        // ... against a level 11 times apart, they are one group.
        let found = together(&level, &by, &group_of, &none, 11f64.ln());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].groups, ("l0a".to_string(), "l0b".to_string()));
        // Groups as far apart as the level are not.
        let far: HashMap<_, _> = (by.iter())
            .map(|(k, v)| {
                let apart = group_of[k.0.as_str()] != group_of[k.1.as_str()];
                (
                    k.clone(),
                    v.iter()
                        .map(|x| x * if apart { 11.0 } else { 1.0 })
                        .collect(),
                )
            })
            .collect();
        assert!(together(&level, &far, &group_of, &none, 11f64.ln()).is_empty());
    }
}
