//! Ranks bound to the very same CPUs take turns on them: each waits while the other runs, so
//! their pairs measure slower than the host's other pairs, the opposite of every other level.
//! Clustering by distance cannot find them (two ranks far apart are grouped with neither), so
//! where the run recorded such binding and every one of those pairs measures clearly slower
//! than the host's others, they are added as the finest level, named from the placement.
//! Without such a record (a core-to-core matrix, SMT siblings slower together than with the
//! other cores of their cache) the matrix alone can show them: ranks that are each other's
//! slowest partner in their group, standing clearly above the group's other pairs.

use std::borrow::Cow;

use lgate_topology::{Level, Topology, TopologyError};

use crate::input::ClusterInput;

/// How clearly slower the pairs taking turns must be: their lowest tenth at least this many
/// times the highest tenth of the other pairs of their hosts.
pub const TAKING_TURNS_RATIO: f64 = 1.5;

/// A level of ranks taking turns on their CPUs, as found.
#[derive(Debug, Clone, PartialEq)]
pub struct TakingTurns {
    /// The level's name (from the placement, such as `core`).
    pub name: String,
    /// Its groups.
    pub groups: usize,
    /// The lowest tenth of the pairs taking turns over the highest tenth of their hosts'
    /// other pairs (of their groups, when found from the matrix alone).
    pub ratio: f64,
    /// Whether the run's binding named these ranks (else the matrix alone found them).
    pub bound: bool,
}

/// `topology` (a clustering of `input`) with the ranks taking turns on their CPUs as its finest
/// level, when the run bound ranks to the same CPUs, every level of `topology` keeps each such
/// group whole, and the matrix shows them taking turns ([`TAKING_TURNS_RATIO`]); else as it was.
pub fn add_level(
    input: &ClusterInput,
    topology: Topology,
) -> Result<(Topology, Option<TakingTurns>), TopologyError> {
    let (groups, ratio, bound) = match groups_taking_turns(input) {
        Some((groups, ratio)) => (groups, ratio, true),
        None => match pairs_slower_together(input, &topology) {
            Some((groups, ratio)) => (groups, ratio, false),
            None => return Ok((topology, None)),
        },
    };
    let n = topology.ranks();
    let nested = (topology.levels().iter()).all(|level| {
        let labels = level.labels(n);
        (groups.iter()).all(|g| g.iter().all(|&r| labels.get(r) == labels.get(g[0])))
    });
    if !nested || groups.iter().any(|g| g.iter().any(|&r| r >= n)) {
        return Ok((topology, None));
    }
    // Found already by distance (where sharing a CPU made pairs nearer, as on some guests).
    let mut wanted: Vec<Vec<usize>> = groups.iter().map(|g| sorted(g)).collect();
    wanted.sort();
    if (topology.levels().iter()).any(|level| same_partition(&level.groups, &wanted)) {
        return Ok((topology, None));
    }
    let mut levels = topology.levels().to_vec();
    levels.push(Level {
        name: "taking turns".into(),
        groups: groups.clone(),
        separation: Some(ratio),
        confidence: None,
    });
    let mut topology = topology.keeping_levels(levels)?;
    // The resamples that made these groups by distance made this level: it is no longer in doubt.
    if let Some(c) = topology.confidence() {
        let mut c = c.clone();
        c.undecided.retain(|u| !same_partition(&u.members, &wanted));
        topology = topology.with_confidence(Some(c));
    }
    if let Some(placement) = &input.placement {
        topology = crate::score::name_levels(topology, placement)?;
    }
    let name = (topology.levels().last()).map_or_else(String::new, |l| l.name.clone());
    let turns = TakingTurns {
        name,
        groups: groups.len(),
        ratio,
        bound,
    };
    Ok((topology, Some(turns)))
}

/// Whether `groups` are the sorted groups `wanted`, single ranks aside unless wanted.
fn same_partition(groups: &[Vec<usize>], wanted: &[Vec<usize>]) -> bool {
    let mut have: Vec<Vec<usize>> = groups.iter().map(|g| sorted(g)).collect();
    have.retain(|g| g.len() > 1 || wanted.iter().any(|w| w == g));
    have.sort();
    have == wanted
}

fn sorted(group: &[usize]) -> Vec<usize> {
    let mut g = group.to_vec();
    g.sort_unstable();
    g
}

/// Pairs found from the matrix alone (no binding recorded, or none that shows): inside each
/// group of the finest level (the whole matrix without one), every rank's slowest partner; the
/// mutual ones are pairs when they stand above every other pair of their group and either pair
/// off the whole group or, pairing at least half of it and [`SLOWER_TOGETHER_MIN_PAIRS`] pairs,
/// stand above the others by more than the others' upper half spans (a chance ordering would
/// give the slowest pairs of a group too, but not that gap). Groups of at least
/// [`SLOWER_TOGETHER_MIN_GROUP`] ranks count (a small one pairs off by chance too often); the
/// pairs of all such groups together must be slower than the others at a one-sided Mann-Whitney
/// z of [`SLOWER_TOGETHER_Z`]. Every other rank is a group of one. Where the ranks' hosts are
/// known, a group's ranks of each host are judged apart (a core belongs to one host). SMT siblings that measure
/// slower than the other cores of their cache are such pairs: they take turns on one core.
/// Pairs that are a band of the schedule instead ([`a_band`]) add nothing.
fn pairs_slower_together(
    input: &ClusterInput,
    topology: &Topology,
) -> Option<(Vec<Vec<usize>>, f64)> {
    let matrix = input.dense()?;
    let d = matrix.values();
    let items = input.ranks.len().min(d.nrows());
    let item_of: std::collections::HashMap<usize, usize> =
        (input.ranks.iter().take(items).enumerate())
            .map(|(i, &r)| (r, i))
            .collect();
    let finest: Vec<Vec<usize>> = match topology.levels().last() {
        Some(level) => (level.groups.iter())
            .map(|g| g.iter().filter_map(|r| item_of.get(r).copied()).collect())
            .collect(),
        None => vec![(0..items).collect()],
    };
    // Ranks take turns on a core of one host: with the ranks' hosts known, each group is
    // judged host by host.
    let finest: Vec<Vec<usize>> = match &input.hosts {
        Some(hosts) => (finest.into_iter())
            .flat_map(|group| {
                let mut by_host: std::collections::BTreeMap<Option<&String>, Vec<usize>> =
                    std::collections::BTreeMap::new();
                for i in group {
                    by_host
                        .entry(hosts.get(input.ranks[i]))
                        .or_default()
                        .push(i);
                }
                by_host.into_values()
            })
            .collect(),
        None => finest,
    };
    let (mut pairs, mut together, mut others) = (Vec::new(), Vec::new(), Vec::new());
    for group in finest
        .iter()
        .filter(|g| g.len() >= SLOWER_TOGETHER_MIN_GROUP)
    {
        let Some((found, slow, rest)) = slowest_partners(d, group) else {
            continue;
        };
        pairs.extend(
            found
                .iter()
                .map(|&(i, j)| vec![input.ranks[i], input.ranks[j]]),
        );
        together.extend(slow);
        others.extend(rest);
    }
    if pairs.len() < 2 || lgate_stats::mann_whitney_z(&others, &together) < SLOWER_TOGETHER_Z {
        return None;
    }
    if a_band(d, &input.ranks[..items], topology, &pairs) {
        return None;
    }
    let ratio = lgate_stats::quantile(&mut together, 0.1) / lgate_stats::quantile(&mut others, 0.9);
    let paired: std::collections::HashSet<usize> = pairs.iter().flatten().copied().collect();
    let mut groups = pairs;
    groups.extend(
        (input.ranks.iter().take(items))
            .filter(|r| !paired.contains(r))
            .map(|&r| vec![r]),
    );
    groups.sort();
    Some((groups, ratio))
}

/// Whether `pairs` (of ranks, rows of `d` in the order of `ranks`) are a band of the schedule
/// rather than ranks taking turns: all the same number of ranks apart, and the other pairs as
/// far apart slower than their class (the finest level of `topology` holding both ranks) by at
/// least [`BAND_SHARE`] of how much `pairs` are slower than theirs. Ranks that take turns are
/// slower together only: pairs as far apart in other groups are not (thesis section 5.1.2 on
/// bands). On simulated fram (seed 9) ranks 24 apart measured 8 % slower than their class
/// inside a socket and across nodes alike.
fn a_band(
    d: &ndarray::Array2<f64>,
    ranks: &[usize],
    topology: &Topology,
    pairs: &[Vec<usize>],
) -> bool {
    let apart: std::collections::BTreeSet<usize> =
        pairs.iter().map(|p| p[0].abs_diff(p[1])).collect();
    let [off] = apart.into_iter().collect::<Vec<_>>()[..] else {
        return false;
    };
    let n = topology.ranks();
    let labels: Vec<Vec<usize>> = topology.levels().iter().map(|l| l.labels(n)).collect();
    let item_of: std::collections::HashMap<usize, usize> =
        ranks.iter().enumerate().map(|(i, &r)| (r, i)).collect();
    // The class of a pair: the finest level whose group holds both ranks (levels.len() for none).
    let class = |a: usize, b: usize| {
        (0..labels.len())
            .rev()
            .find(|&k| {
                let (x, y) = (labels[k].get(a), labels[k].get(b));
                x.is_some() && x == y && x != Some(&usize::MAX)
            })
            .map_or(labels.len(), |k| k)
    };
    let mut by_class: Vec<Vec<f64>> = vec![Vec::new(); labels.len() + 1];
    for (i, &a) in ranks.iter().enumerate() {
        for (j, &b) in ranks.iter().enumerate().take(i) {
            let v = d[[i, j]];
            if v.is_finite() {
                by_class[class(a, b)].push(v);
            }
        }
    }
    let medians: Vec<f64> = by_class
        .iter_mut()
        .map(|v| lgate_stats::median(v))
        .collect();
    let ratio = |a: usize, b: usize| {
        let (i, j) = (*item_of.get(&a)?, *item_of.get(&b)?);
        let r = d[[i, j]] / medians[class(a, b)];
        r.is_finite().then_some(r)
    };
    let level: std::collections::HashSet<(usize, usize)> = pairs
        .iter()
        .map(|p| (p[0].min(p[1]), p[0].max(p[1])))
        .collect();
    let mut inside: Vec<f64> = level.iter().filter_map(|&(a, b)| ratio(a, b)).collect();
    let mut outside: Vec<f64> = (ranks.iter())
        .filter(|&&a| !level.contains(&(a, a + off)))
        .filter_map(|&a| ratio(a, a + off))
        .collect();
    if outside.len() < SLOWER_TOGETHER_MIN_PAIRS || inside.is_empty() {
        return false;
    }
    let (slower, also) = (
        lgate_stats::median(&mut inside) - 1.0,
        lgate_stats::median(&mut outside) - 1.0,
    );
    slower > 0.0 && also >= BAND_SHARE * slower
}

/// How much of the level's slowness the other pairs as many ranks apart must share (over
/// their own class) for the level to be a band: ranks taking turns share none of it.
pub const BAND_SHARE: f64 = 0.5;

/// The pairs of `group` (items of `d`) slower together, as [`pairs_slower_together`] judges
/// one group: the pairs, their values and the values of the group's other pairs.
#[allow(clippy::type_complexity)]
fn slowest_partners(
    d: &ndarray::Array2<f64>,
    group: &[usize],
) -> Option<(Vec<(usize, usize)>, Vec<f64>, Vec<f64>)> {
    use rayon::prelude::*;
    let g = group.len();
    let at = |a: usize, b: usize| d[[group[a], group[b]]];
    // Row by row on every core (a group may be the whole matrix): each position's slowest
    // partner (the last of equals, as `max_by` takes it), kept where mutual.
    // Compared by `f64::total_cmp`'s key (NaN above every number), as integers: no branch.
    let key = |x: f64| {
        let bits = x.to_bits() as i64;
        bits ^ (((bits >> 63) as u64) >> 1) as i64
    };
    let partner: Vec<usize> = (0..g)
        .into_par_iter()
        .map(|a| {
            let row = d.row(group[a]);
            let row = row
                .as_slice()
                .map_or_else(|| Cow::Owned(row.to_vec()), Cow::Borrowed);
            // None yet: any key is at least i64::MIN.
            let (mut slowest, mut at_least) = (usize::MAX, i64::MIN);
            for (b, &x) in group.iter().enumerate() {
                let k = key(row[x]);
                if b != a && k >= at_least {
                    (slowest, at_least) = (b, k);
                }
            }
            (slowest != usize::MAX).then_some(slowest)
        })
        .collect::<Option<_>>()?;
    let mut mate: Vec<Option<usize>> = (0..g)
        .map(|a| (partner[partner[a]] == a).then_some(partner[a]))
        .collect();
    // Mutual pairs no slower than some other pair of the group are among the others (ranks
    // without a sibling can be each other's slowest by chance); dropping them moves the
    // highest of the others no higher, so one pass does.
    let others_of = |mate: &[Option<usize>], a: usize| {
        let row = d.row(group[a]);
        let mate = mate[a];
        (0..a)
            .filter(move |&b| mate != Some(b))
            .map(move |b| row[group[b]])
    };
    // The highest pair of position a with those before it but its mate (NaN left out), as
    // `others_of(..).fold(f64::NEG_INFINITY, f64::max)` without its branches.
    let highest_of = |mate: &[Option<usize>], a: usize| {
        let row = d.row(group[a]);
        let row = row
            .as_slice()
            .map_or_else(|| Cow::Owned(row.to_vec()), Cow::Borrowed);
        let mate = mate[a].unwrap_or(usize::MAX);
        let mut high = f64::NEG_INFINITY;
        for (b, &x) in group[..a].iter().enumerate() {
            let v = row[x];
            if b != mate && v > high {
                high = v;
            }
        }
        high
    };
    let highest = (0..g)
        .into_par_iter()
        .map(|a| highest_of(&mate, a))
        .reduce(|| f64::NEG_INFINITY, f64::max);
    for (a, m) in mate.iter_mut().enumerate() {
        if m.is_some_and(|b| at(a, b).is_nan() || at(a, b) <= highest) {
            *m = None;
        }
    }
    let found: Vec<(usize, usize)> = (0..g)
        .filter_map(|a| mate[a].filter(|&b| b > a).map(|b| (a, b)))
        .collect();
    if found.is_empty() || highest.is_nan() {
        return None;
    }
    let whole = 2 * found.len() == g;
    let enough = 4 * found.len() >= g && found.len() >= SLOWER_TOGETHER_MIN_PAIRS;
    if !whole && !enough {
        return None;
    }
    let slow: Vec<f64> = found.iter().map(|&(a, b)| at(a, b)).collect();
    let mut rest: Vec<f64> = (0..g)
        .into_par_iter()
        .flat_map_iter(|a| others_of(&mate, a))
        .collect();
    if !whole {
        let lowest = slow.iter().copied().fold(f64::INFINITY, f64::min);
        let upper_half = highest - lgate_stats::median(&mut rest);
        if lowest - highest <= upper_half {
            return None;
        }
    }
    let found = found
        .into_iter()
        .map(|(a, b)| (group[a], group[b]))
        .collect();
    Some((found, slow, rest))
}

/// The fewest pairs that pair part of a group off as slower together.
pub const SLOWER_TOGETHER_MIN_PAIRS: usize = 3;

/// The smallest group of the finest level whose ranks can pair off as slower together.
pub const SLOWER_TOGETHER_MIN_GROUP: usize = 6;

/// How surely the pairs found from the matrix alone must be slower than the other pairs of
/// their groups (one-sided Mann-Whitney z).
pub const SLOWER_TOGETHER_Z: f64 = 3.0;

/// The groups of ranks bound to the same CPUs (every rank of the matrix in one, most of one
/// rank) and how clearly slower their pairs measure, when there are such ranks and their pairs
/// are slower by [`TAKING_TURNS_RATIO`].
fn groups_taking_turns(input: &ClusterInput) -> Option<(Vec<Vec<usize>>, f64)> {
    let placement = input.placement.as_ref()?;
    let same = placement.same_cpus.as_deref()?;
    let matrix = input.dense()?;
    let d = matrix.values();
    let ranks = &input.ranks;
    let label = |item: usize| same.get(ranks[item]).copied();
    let node = (placement.levels.iter()).find(|(name, _)| name == "node");
    let host = |item: usize| node.and_then(|(_, labels)| labels.get(ranks[item]).copied());
    let items = ranks.len().min(d.nrows());
    // At each size measured (a run's screening sizes over the same ranks), how much slower the
    // pairs sharing CPUs are: the turns show at some sizes more than at others (at 0 B a pair
    // waits a whole time slice, at 64 KiB the transfer hides part of it).
    let ratio_in = |d: &ndarray::Array2<f64>| {
        let (mut inside, mut between) = (Vec::new(), Vec::new());
        for i in 0..items {
            for j in 0..i {
                if label(i).is_none() || label(j).is_none() || host(i) != host(j) {
                    continue;
                }
                if label(i) == label(j) {
                    inside.push(d[[i, j]]);
                } else {
                    between.push(d[[i, j]]);
                }
            }
        }
        if inside.is_empty() || between.is_empty() {
            return None;
        }
        let ratio =
            lgate_stats::quantile(&mut inside, 0.1) / lgate_stats::quantile(&mut between, 0.9);
        // A NaN ratio (no spread to divide by) is no evidence either.
        (!ratio.is_nan()).then_some(ratio)
    };
    let sizes = std::iter::once(d).chain(
        (input.other_sizes.iter())
            .map(|m| &**m)
            .filter(|m| m.nrows() >= items && m.ncols() >= items),
    );
    let ratio = sizes.filter_map(ratio_in).fold(f64::NAN, f64::max);
    if ratio.is_nan() || ratio < TAKING_TURNS_RATIO {
        return None;
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut seen: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    for (item, &rank) in ranks.iter().enumerate().take(items) {
        let key = label(item)?;
        let k = *seen.entry(key).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[k].push(rank);
    }
    (groups.len() >= 2).then_some((groups, ratio))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{Distances, Truth};
    use lgate_matrix::DistanceMatrix;

    /// Four ranks on one host, 0 and 2 bound to one core, 1 and 3 to the other; `turns` the
    /// round trip of a pair on one core, 1 those across.
    fn input(turns: f64) -> ClusterInput {
        let values = ndarray::Array2::from_shape_fn((4, 4), |(i, j)| match (i, j) {
            _ if i == j => 0.0,
            _ if i % 2 == j % 2 => turns,
            // Noise across cores, as measured.
            _ => 1.0 + 0.05 * ((i + j) % 3) as f64,
        });
        ClusterInput {
            distances: Distances::Dense(DistanceMatrix::new(values, None).unwrap()),
            ranks: (0..4).collect(),
            job_size: 4,
            hosts: None,
            source: "demo".into(),
            matrix: None,
            warnings: Vec::new(),
            placement: Some(Truth {
                levels: vec![
                    ("node".into(), vec![0, 0, 0, 0]),
                    ("core".into(), vec![0, 1, 0, 1]),
                ],
                shared_cpus: Some(vec![0, 1, 0, 1]),
                same_cpus: Some(vec![0, 1, 0, 1]),
            }),
            filled: None,
            mask: None,
            other_sizes: Vec::new(),
            tests: None,
        }
    }

    /// A bare matrix: no placement, no binding recorded.
    fn matrix_input(values: ndarray::Array2<f64>) -> ClusterInput {
        let n = values.nrows();
        ClusterInput {
            distances: Distances::Dense(DistanceMatrix::new(values, None).unwrap()),
            ranks: (0..n).collect(),
            job_size: n,
            hosts: None,
            source: "matrix".into(),
            matrix: None,
            warnings: Vec::new(),
            placement: None,
            filled: None,
            mask: None,
            other_sizes: Vec::new(),
            tests: None,
        }
    }

    /// A repeatable noise in [-1, 1) for a pair and a seed.
    fn noise(i: usize, j: usize, seed: u64) -> f64 {
        let (i, j) = (i.min(j) as u64, i.max(j) as u64);
        let mut x = (i << 32 | j) ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^= x >> 33;
        (x >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    fn level(name: &str, groups: Vec<Vec<usize>>) -> Level {
        Level {
            name: name.into(),
            groups,
            separation: None,
            confidence: None,
        }
    }

    #[test]
    fn siblings_slower_than_their_cache_are_found_from_the_matrix_alone() {
        // Two chiplets of 8 cores with SMT, siblings numbered i and i + 16 (as Linux numbers
        // them): 80 ns between chiplets, 15.5-20.5 inside, siblings 21.5-22.5, just above.
        let chiplet = |i: usize| (i % 16) / 8;
        let values = ndarray::Array2::from_shape_fn((32, 32), |(i, j)| match (i, j) {
            _ if i == j => 0.0,
            _ if i % 16 == j % 16 => 22.0 + 0.5 * noise(i, j, 1),
            _ if chiplet(i) == chiplet(j) => 18.0 + 2.5 * noise(i, j, 2),
            _ => 80.0 + 4.0 * noise(i, j, 3),
        });
        let chiplets: Vec<Vec<usize>> = (0..2)
            .map(|c| (0..32).filter(|&i| chiplet(i) == c).collect())
            .collect();
        let found = Topology::from_levels(32, vec![level("level1", chiplets)]).unwrap();
        let (topology, turns) = add_level(&matrix_input(values), found).unwrap();
        let turns = turns.expect("the siblings");
        assert!(
            !turns.bound && turns.groups == 16 && turns.ratio > 1.0,
            "{turns:?}"
        );
        let siblings: Vec<Vec<usize>> = (0..16).map(|i| vec![i, i + 16]).collect();
        assert_eq!(topology.levels()[1].groups, siblings);

        // Sharing a core with a sibling on some cores only (a hybrid part): 8 pairs, 6 alone.
        let values = ndarray::Array2::from_shape_fn((22, 22), |(i, j)| match (i, j) {
            _ if i == j => 0.0,
            _ if i < 16 && i / 2 == j / 2 => 90.0 + 2.0 * noise(i, j, 4),
            _ => 45.0 + 9.0 * noise(i, j, 5),
        });
        let (topology, turns) = add_level(&matrix_input(values), one_group_of(22)).unwrap();
        assert_eq!(turns.map(|t| t.groups), Some(14));
        let mut want: Vec<Vec<usize>> = (0..8).map(|k| vec![2 * k, 2 * k + 1]).collect();
        want.extend((16..22).map(|r| vec![r]));
        assert_eq!(topology.levels()[0].groups, want);
    }

    #[test]
    fn a_band_of_the_schedule_is_no_level_of_ranks_taking_turns() {
        // Two hosts of 16 ranks; the pairs 12 ranks apart 8 % slower: inside a host (0-3 with
        // 12-15, 16-19 with 28-31) each other's slowest partners, but across the hosts too, as
        // a band of the schedule is (simulated fram showed one 24 ranks apart). Slower inside
        // only, as ranks taking turns are, they are a level.
        let host = |i: usize| i / 16;
        for across in [true, false] {
            let values = ndarray::Array2::from_shape_fn((32, 32), |(i, j)| {
                let slower = i.abs_diff(j) == 12 && (across || host(i) == host(j));
                let base = if i == j {
                    0.0
                } else if host(i) == host(j) {
                    20.0 + 0.25 * noise(i, j, 8)
                } else {
                    60.0 + 0.5 * noise(i, j, 9)
                };
                base * if slower { 1.08 } else { 1.0 }
            });
            let hosts: Vec<Vec<usize>> = (0..2).map(|h| (16 * h..16 * h + 16).collect()).collect();
            let found = Topology::from_levels(32, vec![level("level1", hosts)]).unwrap();
            let (_, turns) = add_level(&matrix_input(values), found).unwrap();
            assert_eq!(
                turns.is_none(),
                across,
                "across the hosts too: {across}: {turns:?}"
            );
        }
    }

    #[test]
    fn noise_and_a_few_slow_pairs_pair_nothing_off() {
        // Noise alone, spread and skewed, in groups of 6 to 40: no level in 600 draws.
        for seed in 0..600u64 {
            let n = 6 + (seed as usize * 7) % 35;
            let skew = 1.0 + (seed % 3) as f64;
            let values = ndarray::Array2::from_shape_fn((n, n), |(i, j)| {
                if i == j {
                    0.0
                } else {
                    10.0 * (0.3 * skew * noise(i, j, seed)).exp()
                }
            });
            let (_, turns) = add_level(&matrix_input(values), one_group_of(n)).unwrap();
            assert!(turns.is_none(), "seed {seed}, {n} ranks: {turns:?}");
        }
        // Two slow links among 16 ranks: slow pairs, but no level of them.
        let values =
            ndarray::Array2::from_shape_fn((16, 16), |(i, j)| match (i.min(j), i.max(j)) {
                _ if i == j => 0.0,
                (0, 1) | (5, 9) => 40.0,
                _ => 20.0 + noise(i, j, 6),
            });
        assert!(add_level(&matrix_input(values), one_group_of(16))
            .unwrap()
            .1
            .is_none());
    }

    #[test]
    fn pairs_of_different_hosts_never_take_turns() {
        // Eight hosts of one rank whose pairs 2k, 2k+1 measure slowest: a core is one host's.
        let values = ndarray::Array2::from_shape_fn((8, 8), |(i, j)| match (i, j) {
            _ if i == j => 0.0,
            _ if i / 2 == j / 2 => 40.0 + noise(i, j, 7),
            _ => 20.0 + noise(i, j, 8),
        });
        let mut input = matrix_input(values.clone());
        assert!(add_level(&input, one_group_of(8)).unwrap().1.is_some());
        input.hosts = Some((0..8).map(|h| format!("n{h}")).collect());
        assert!(add_level(&input, one_group_of(8)).unwrap().1.is_none());
        // The same pairs on one host are a level.
        input.hosts = Some(vec!["n0".into(); 8]);
        assert!(add_level(&input, one_group_of(8)).unwrap().1.is_some());
    }

    fn one_group_of(n: usize) -> Topology {
        Topology::from_levels(n, Vec::new()).unwrap()
    }

    fn one_group() -> Topology {
        Topology::from_levels(4, Vec::new()).unwrap()
    }

    #[test]
    fn ranks_taking_turns_on_one_core_are_its_level() {
        let (topology, turns) = add_level(&input(2.0), one_group()).unwrap();
        let turns = turns.expect("the level of ranks taking turns");
        assert_eq!((turns.name.as_str(), turns.groups), ("core", 2));
        assert!(turns.ratio >= TAKING_TURNS_RATIO, "{turns:?}");
        let level = &topology.levels()[0];
        assert_eq!(level.groups, vec![vec![0, 2], vec![1, 3]]);
    }

    #[test]
    fn the_level_taking_turns_is_no_longer_undecided_where_resamples_made_it() {
        // Resamples by distance made the same groups in a quarter of the draws, and another
        // level in a tenth: the first is the level now, the second stays in doubt.
        let undecided = |groups: Vec<Vec<usize>>, share| lgate_topology::UndecidedLevel {
            groups: groups.len(),
            share,
            name: None,
            members: groups,
            z: None,
        };
        let doubted = one_group().with_confidence(Some(lgate_topology::Confidence {
            resamples: 20,
            same_levels: 0.65,
            undecided: vec![
                undecided(vec![vec![2, 0], vec![1, 3]], 0.25),
                undecided(vec![vec![0, 1], vec![2, 3]], 0.1),
            ],
        }));
        let (topology, turns) = add_level(&input(2.0), doubted).unwrap();
        assert!(turns.is_some());
        let left = &topology
            .confidence()
            .expect("the confidence kept")
            .undecided;
        assert_eq!(left.len(), 1, "{left:?}");
        assert_eq!(left[0].members, vec![vec![0, 1], vec![2, 3]]);
    }

    #[test]
    fn ranks_taking_turns_clearly_at_another_size_are_its_level() {
        // Barely slower in the matrix kept (64 KiB, say), clearly at 0 B.
        let mut kept = input(1.3);
        let Distances::Dense(small) = &input(4.0).distances else {
            unreachable!("a dense matrix")
        };
        kept.other_sizes = vec![std::sync::Arc::new(small.values().clone())];
        let (topology, turns) = add_level(&kept, one_group()).unwrap();
        let turns = turns.expect("the level of ranks taking turns");
        assert!(turns.ratio >= 2.0, "{turns:?}");
        assert_eq!(topology.levels()[0].groups, vec![vec![0, 2], vec![1, 3]]);
    }

    #[test]
    fn pairs_not_clearly_slower_or_a_level_across_them_add_nothing() {
        // Slower, but not by half.
        let (topology, turns) = add_level(&input(1.3), one_group()).unwrap();
        assert!(turns.is_none() && topology.levels().is_empty());
        // A level found that puts 0 and 2 apart: they cannot also be one group under it.
        let across = Topology::from_levels(
            4,
            vec![Level {
                name: "socket".into(),
                groups: vec![vec![0, 1], vec![2, 3]],
                separation: None,
                confidence: None,
            }],
        )
        .unwrap();
        let (topology, turns) = add_level(&input(2.0), across).unwrap();
        assert!(turns.is_none());
        assert_eq!(topology.levels().len(), 1);
        // Found already by distance: not added twice.
        let found = Topology::from_levels(
            4,
            vec![Level {
                name: "core".into(),
                groups: vec![vec![0, 2], vec![1, 3]],
                separation: None,
                confidence: None,
            }],
        )
        .unwrap();
        let (topology, turns) = add_level(&input(2.0), found).unwrap();
        assert!(turns.is_none());
        assert_eq!(topology.levels().len(), 1);
        // No binding recorded: nothing to check the pairs against.
        let mut free = input(2.0);
        free.placement = None;
        assert!(add_level(&free, one_group()).unwrap().1.is_none());
    }
}
