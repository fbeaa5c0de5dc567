//! One declared level judged on the pairs between hosts: hosts measured nearer another group,
//! whether its groups stand apart, and groups declared apart that measure as one.

use super::*;

/// The pairs of `level`'s groups (by index) that a coarser level of `all` (fewer groups) puts
/// in one group: declared together above, so not declared apart.
pub(super) fn joined_above(
    level: &DeclaredLevel,
    all: &[DeclaredLevel],
) -> HashSet<(usize, usize)> {
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

/// One declared level against each matrix's pairs: its hosts measured nearer another group
/// (each where the evidence is surest), then, without them, whether its groups stand apart
/// (where they stand apart most, [`stands_apart_more`]).
pub(super) fn check_level(
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
        if best.as_ref().is_none_or(|x| stands_apart_more(&check, x)) {
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

/// Whether `a` shows its level better than `b`: seen where `b` is not; both seen, its groups
/// further apart (the ratio of the medians between and inside: a z is at its most whenever
/// the pairs stand fully apart, at 0 B 39 % apart as at 64 KiB 11 times); neither seen, surer.
fn stands_apart_more(a: &LevelCheck, b: &LevelCheck) -> bool {
    match (a.seen, b.seen) {
        (true, false) => true,
        (false, true) => false,
        (true, true) => a.between_us / a.inside_us > b.between_us / b.inside_us,
        (false, false) => a.z > b.z,
    }
}

/// The groups of `level` declared apart whose pairs with each other measure as those inside
/// them do (in the matrix `by`; hosts by `group_of`, the misplaced left out): the median between
/// them within [`LEAST_GAP`] of the median inside, and no Mann-Whitney z of [`Z_DECLARED`] for
/// the pairs between being longer, where the pairs are enough for such a z; or, where the level
/// stands apart (`gap`, the log of its median between groups over inside), the median between
/// them nearer the median inside than a quarter of that gap (two leaves of one switch 4.6 %
/// apart at 64 KiB on the testbed, whose leaves are 11 times apart).
pub(super) fn together(
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
pub(super) fn could_decide(n1: usize, n2: usize) -> bool {
    let (a, b) = (n1 as f64, n2 as f64);
    a > 0.0 && b > 0.0 && (a * b / 2.0) / (a * b * (a + b + 1.0) / 12.0).sqrt() >= Z_DECLARED
}

/// The hosts of `level` measured nearer another group than their own in one matrix, by a
/// Mann-Whitney z of at least `bar`, each against the hosts not in `doubt` (when any are left).
pub(super) fn misplaced(
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
