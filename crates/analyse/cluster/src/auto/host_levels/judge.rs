//! One grouping of hosts judged: the best cut of the hosts' dendrogram, the hosts' and blocks'
//! effects taken out, and the clustered Mann-Whitney test of the pairs inside groups against
//! those between.

use super::*;

/// The grouping of `hosts` the pairs decide with the fewest groups among the cuts that pass
/// the structural and nearness tests, else the one they show best (highest z), at any z.
pub(super) fn best_grouping(
    hosts: &[usize],
    g: &Array2<f64>,
    values: &BetweenValues,
    p: &AutoParams,
) -> Option<Candidate> {
    let medians = HostMedians::of(hosts, g)?;
    let n = hosts.len();
    let dendrogram = Dendrogram::new(&medians.m, Linkage::Average);
    let mut best: Option<Candidate> = None;
    let mut coarsest: Option<Candidate> = None;
    let mut ks = cut_sizes(&dendrogram, p);
    ks.sort_unstable();
    ks.dedup();
    for k in ks {
        if k < 2 || k >= n {
            continue;
        }
        let labels = dendrogram.cut(k);
        let Some(c) = medians.judge_cut(&labels, hosts, values, p) else {
            continue;
        };
        if coarsest.is_none() && c.z >= p.pairs_decide {
            coarsest = Some(c.clone());
        }
        if best.as_ref().is_none_or(|b| c.z > b.z) {
            best = Some(c);
        }
    }
    // The coarsest cut that decides, its groups refined in turn, as a tree is read top down:
    // the best z may be a cut that mixes two levels (one group's leaves beside another group
    // whole), which a finer z of more pairs favours.
    coarsest.or(best)
}

/// The host x host medians of some hosts, as every grouping of them is judged: as measured
/// (`raw`), without each host's own effect (`m`, `effects`), and in logs when all are positive.
struct HostMedians {
    raw: Array2<f64>,
    m: Array2<f64>,
    effects: Vec<f64>,
    logs: Option<Array2<f64>>,
}

impl HostMedians {
    /// The medians among `hosts` of the host x host medians `g`; `None` if one is not finite.
    fn of(hosts: &[usize], g: &Array2<f64>) -> Option<Self> {
        let n = hosts.len();
        let raw = Array2::from_shape_fn((n, n), |(a, b)| g[[hosts[a], hosts[b]]]);
        if raw.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let (m, effects) = without_host_effects(&raw);
        // The logs, once for every cut (none when a median is not positive: the medians are
        // then judged as they are).
        let positive = (raw.indexed_iter()).all(|((a, b), &x)| a == b || x > 0.0);
        let logs = positive.then(|| raw.mapv(f64::ln));
        Some(HostMedians {
            raw,
            m,
            effects,
            logs,
        })
    }

    /// The test of one grouping `labels` of `hosts`: each host's own effect taken out over all
    /// hosts, else around this grouping's blocks (in groups of unequal sizes, the hosts of the
    /// smaller group have more far pairs, and their effects over all hosts are partly the
    /// grouping's).
    fn judge_cut(
        &self,
        labels: &[usize],
        hosts: &[usize],
        values: &BetweenValues,
        p: &AutoParams,
    ) -> Option<Candidate> {
        judge(labels, hosts, &self.m, values, &self.effects, p).or_else(|| {
            let (m, effects) = match &self.logs {
                Some(logs) => without_block_effects(logs, labels),
                None => (self.raw.clone(), vec![1.0; labels.len()]),
            };
            judge(labels, hosts, &m, values, &effects, p)
        })
    }
}

/// The test of the grouping `labels` of `hosts` (a level of the host medians' own tree) on the
/// pairs of one size, `g` its host x host medians; pairs that fall short of the least gap give
/// it a z of 0 at most.
pub(super) fn judge_grouping(
    hosts: &[usize],
    labels: &[usize],
    g: &Array2<f64>,
    values: &BetweenValues,
    p: &AutoParams,
) -> Option<Candidate> {
    let medians = HostMedians::of(hosts, g)?;
    medians.judge_cut(labels, hosts, values, p).or_else(|| {
        // Pairs with no gap between them bear the grouping out even less: judged as they are.
        let c = judge_any_gap(labels, hosts, &medians.m, values, &medians.effects, p)?;
        Some(Candidate {
            z: c.z.min(0.0),
            ..c
        })
    })
}

/// `m` (medians between hosts) with each host's own effect taken out, and the effects: in
/// logs, each host's mean towards the others is brought to the mean of all (`m` as it is when
/// a median is not positive, or for fewer than 3 hosts).
pub(super) fn without_host_effects(m: &Array2<f64>) -> (Array2<f64>, Vec<f64>) {
    let n = m.nrows();
    if n < 3
        || m.iter()
            .enumerate()
            .any(|(e, &x)| e / n != e % n && x <= 0.0)
    {
        return (m.clone(), vec![1.0; n]);
    }
    let row: Vec<f64> = (0..n)
        .map(|a| {
            (0..n)
                .filter(|&b| b != a)
                .map(|b| m[[a, b]].ln())
                .sum::<f64>()
                / (n - 1) as f64
        })
        .collect();
    let all = row.iter().sum::<f64>() / n as f64;
    let adjusted = Array2::from_shape_fn((n, n), |(a, b)| match a == b {
        true => 0.0,
        false => (m[[a, b]].ln() - (row[a] - all) - (row[b] - all)).exp(),
    });
    (adjusted, row.iter().map(|r| (r - all).exp()).collect())
}

/// The medians whose logs are `logs` with each host's own effect taken out around the blocks
/// of `labels`: in logs, a host's effect is its mean difference from the mean of each block its
/// pairs fall in (pairs inside its group, pairs with each other group), and its pairs are
/// divided by the effects of both hosts.
pub(super) fn without_block_effects(
    logs: &Array2<f64>,
    labels: &[usize],
) -> (Array2<f64>, Vec<f64>) {
    let n = logs.nrows();
    let k = labels.iter().max().map_or(0, |&x| x + 1);
    let (mut sum, mut count) = (vec![0.0f64; k * k], vec![0usize; k * k]);
    for a in 0..n {
        for b in (0..n).filter(|&b| b != a) {
            sum[labels[a] * k + labels[b]] += logs[[a, b]];
            count[labels[a] * k + labels[b]] += 1;
        }
    }
    let block = |a: usize, b: usize| {
        let e = labels[a] * k + labels[b];
        sum[e] / count[e].max(1) as f64
    };
    let effect: Vec<f64> = (0..n)
        .map(|a| {
            (0..n)
                .filter(|&b| b != a)
                .map(|b| logs[[a, b]] - block(a, b))
                .sum::<f64>()
                / (n - 1).max(1) as f64
        })
        .collect();
    let adjusted = Array2::from_shape_fn((n, n), |(a, b)| match a == b {
        true => 0.0,
        false => (logs[[a, b]] - effect[a] - effect[b]).exp(),
    });
    (adjusted, effect.iter().map(|e| e.exp()).collect())
}

/// The test of one grouping (`labels` over `hosts`, `m` their medians): `None` when it fails
/// the structural or nearness tests or the least gap.
pub(super) fn judge(
    labels: &[usize],
    hosts: &[usize],
    m: &Array2<f64>,
    values: &BetweenValues,
    effects: &[f64],
    p: &AutoParams,
) -> Option<Candidate> {
    judge_any_gap(labels, hosts, m, values, effects, p).filter(|c| c.gap)
}

/// [`judge`], with a grouping whose pairs fall short of the least gap kept (its `gap` false).
fn judge_any_gap(
    labels: &[usize],
    hosts: &[usize],
    m: &Array2<f64>,
    values: &BetweenValues,
    effects: &[f64],
    p: &AutoParams,
) -> Option<Candidate> {
    let n = labels.len();
    let k = labels.iter().max().map_or(0, |&x| x + 1);
    let mut members = vec![Vec::new(); k];
    for (a, &l) in labels.iter().enumerate() {
        members[l].push(a);
    }
    let singles = members.iter().filter(|g| g.len() == 1).count();
    if k - singles < 2 || singles as f64 > p.max_singleton_share * k as f64 {
        return None;
    }
    if !nearer_their_groups(labels, &members, m) {
        return None;
    }
    let between_pairs = pairs_to_nearest_groups(&members, m)?;
    let within_pairs: Vec<(usize, usize)> = (0..n)
        .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
        .filter(|&(a, b)| labels[a] == labels[b])
        .collect();
    let of_hosts = |pairs: &[(usize, usize)]| -> Vec<(usize, usize)> {
        pairs.iter().map(|&(a, b)| (hosts[a], hosts[b])).collect()
    };
    // Each host's own effect, by its index in the host x host matrix.
    let at: HashMap<usize, usize> = hosts.iter().enumerate().map(|(i, &x)| (x, i)).collect();
    let effect = |x: usize| at.get(&x).map_or(1.0, |&i| effects[i]);
    let t = rank_test(
        &of_hosts(&within_pairs),
        &of_hosts(&between_pairs),
        values,
        &|a, b| effect(a) * effect(b),
        p,
    )?;
    if t.within <= 0.0 {
        return None;
    }
    // Each group of four hosts or more apart on its own too: pooled, one group far apart can
    // carry a grouping that joins two groups as far apart as any.
    let gap = t.between >= (1.0 + LEAST_GAP) * t.within && each_apart(&members, m, hosts, values);
    Some(Candidate {
        labels: labels.to_vec(),
        z: t.z,
        ratio: t.between / t.within,
        pairs: t.pairs,
        every_pair: t.every_pair,
        z_most: t.z_most,
        tests: t.tests,
        gap,
    })
}

/// The rank test of the pairs inside groups against those between them, as [`rank_test`]
/// gives it.
pub(super) struct RankTest {
    /// The test's z.
    pub(super) z: f64,
    /// The most z the pairs there are can give (every pair inside shorter than every pair
    /// between).
    pub(super) z_most: f64,
    /// The tests a pair has, as far as they vary independently (1 where not kept apart).
    pub(super) tests: f64,
    /// The pairs between two hosts compared (the median over them).
    pub(super) pairs: usize,
    /// Whether every pair between the hosts compared was measured.
    pub(super) every_pair: bool,
    /// The median of the values inside.
    pub(super) within: f64,
    /// The median of the values between.
    pub(super) between: f64,
}

/// The one-sided Mann-Whitney test that the values between the pairs of hosts `across` are
/// longer than those between the pairs of hosts `inside`, each value divided by `scale` of its
/// two hosts: with repeated tests (or the pairs between two hosts one unit), every test
/// counted as far as a unit's tests vary independently (this z, not the larger of the two:
/// taking the larger makes levels of noise); on floors, a clear gap decides whatever few units
/// cap the test at. `None` when a side has no value.
fn rank_test(
    inside: &[(usize, usize)],
    across: &[(usize, usize)],
    values: &BetweenValues,
    scale: &dyn Fn(usize, usize) -> f64,
    p: &AutoParams,
) -> Option<RankTest> {
    let gather = |pairs: &[(usize, usize)]| -> Vec<f64> {
        (pairs.iter())
            .flat_map(|&(a, b)| {
                let e = scale(a, b);
                values.of(a, b).iter().map(move |x| x / e)
            })
            .filter(|x| x.is_finite())
            .collect()
    };
    let (mut within, mut between) = (gather(inside), gather(across));
    if within.is_empty() || between.is_empty() {
        return None;
    }
    let mut z = lgate_stats::mann_whitney_z(&within, &between);
    let (n1, n2) = (within.len() as f64, between.len() as f64);
    let mut z_most = (n1 * n2 / 2.0) / (n1 * n2 * (n1 + n2 + 1.0) / 12.0).sqrt();
    let mut tests = 1.0;
    if !values.tests.is_empty() || values.units_are_host_pairs {
        // The units: each pair's tests, or all the tests between two hosts as one.
        let units = |pairs: &[(usize, usize)]| -> Vec<Vec<f64>> {
            (pairs.iter())
                .flat_map(|&(a, b)| {
                    let e = scale(a, b);
                    let scaled = move |t: &[f64]| -> Vec<f64> {
                        t.iter().map(|x| x / e).filter(|x| x.is_finite()).collect()
                    };
                    let of = values.tests_of(a, b);
                    match values.units_are_host_pairs {
                        true => vec![scaled(&of.concat())],
                        false => of.into_iter().map(scaled).collect(),
                    }
                })
                .collect()
        };
        if let Some(c) = lgate_stats::mann_whitney_z_clustered(&units(inside), &units(across)) {
            z = c.z;
            z_most = z_most.max(c.z_most);
            if !values.units_are_host_pairs {
                tests = c.per_unit;
            }
        }
    }
    // Floors far apart decide whatever few units cap the rank test at.
    if values.are_floors && clear_gap(&within, &between) {
        z = z.max(p.pairs_decide);
        z_most = z_most.max(z);
    }
    let mut counts: Vec<f64> = (inside.iter().chain(across))
        .map(|&(a, b)| values.of(a, b).len() as f64)
        .collect();
    let every_pair = !values.ranks.is_empty()
        && (inside.iter().chain(across)).all(|&(a, b)| {
            let most = values.ranks.get(a).copied().unwrap_or(0)
                * values.ranks.get(b).copied().unwrap_or(0);
            values.of(a, b).len() >= most
        });
    Some(RankTest {
        z,
        z_most,
        tests,
        pairs: median(&mut counts).round().max(1.0) as usize,
        every_pair,
        within: median(&mut within),
        between: median(&mut between),
    })
}

/// The rank test of the pairs between the hosts of each of `inside` (pairs of hosts) against
/// the pairs between those of `across`, their units as [`judge_cut`]'s (each pair's tests, or
/// the pairs between two hosts as one) and floors far apart deciding as there; `None` unless
/// the medians of the two stand [`LEAST_GAP`] apart.
pub(super) fn pooled_z(
    inside: &[(usize, usize)],
    across: &[(usize, usize)],
    values: &BetweenValues,
    p: &AutoParams,
) -> Option<f64> {
    pooled(inside, across, values, p).map(|t| t.z)
}

/// [`pooled_z`] with what would decide it.
pub(super) fn pooled(
    inside: &[(usize, usize)],
    across: &[(usize, usize)],
    values: &BetweenValues,
    p: &AutoParams,
) -> Option<RankTest> {
    let t = rank_test(inside, across, values, &|_, _| 1.0, p)?;
    (t.within > 0.0 && t.between >= (1.0 + LEAST_GAP) * t.within).then_some(t)
}

/// Whether every value of `within` lies below every value of `between` by [`CLEAR_GAP`] times
/// the wider spread of the two at least, with [`MIN_CLEAR_INSIDE`] values inside at least.
fn clear_gap(within: &[f64], between: &[f64]) -> bool {
    let range = |v: &[f64]| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo, hi)
    };
    let ((w_lo, w_hi), (b_lo, b_hi)) = (range(within), range(between));
    let gap = b_lo - w_hi;
    within.len() >= MIN_CLEAR_INSIDE
        && between.len() >= MIN_CLEAR_INSIDE
        && gap > 0.0
        && gap >= CLEAR_GAP * (w_hi - w_lo).max(b_hi - b_lo)
}

/// Every host nearer to each of its group than to any host outside it; in a group of four or
/// more, nearer to most of its group (a group holding leaves of its own has pairs across them,
/// and one of those slowed throughout is the noise of a single pair); a host alone farther
/// from its nearest host than that host is from its own group, by the least gap.
fn nearer_their_groups(labels: &[usize], members: &[Vec<usize>], m: &Array2<f64>) -> bool {
    let n = labels.len();
    // The farthest each host of a group of two or more is from its group.
    let spread = |a: usize| {
        (members[labels[a]].iter())
            .filter(|&&b| b != a)
            .fold(0.0f64, |x, &b| x.max(m[[a, b]]))
    };
    for a in 0..n {
        if members[labels[a]].len() < 2 {
            // A host alone stands apart from its nearest host by more than the least gap
            // over that host's own group: else it is one of them whose pairs with one of its
            // group were slowed, and the grouping that sets it apart is made of that noise.
            let nearest = (0..n)
                .filter(|&b| b != a)
                .min_by(|&x, &y| m[[a, x]].total_cmp(&m[[a, y]]));
            if let Some(b) = nearest.filter(|&b| members[labels[b]].len() >= 2) {
                if m[[a, b]] <= (1.0 + LEAST_GAP) * spread(b) {
                    return false;
                }
            }
            continue;
        }
        let mut inside: Vec<f64> = Vec::new();
        let mut outside = f64::INFINITY;
        for b in (0..n).filter(|&b| b != a) {
            if labels[b] == labels[a] {
                inside.push(m[[a, b]]);
            } else {
                outside = outside.min(m[[a, b]]);
            }
        }
        let near = match inside.len() {
            0..=2 => inside.iter().fold(0.0f64, |a, &b| a.max(b)),
            _ => median(&mut inside),
        };
        if near >= outside {
            return false;
        }
    }
    true
}

/// Whether every group of four hosts or more (`members`, positions in `hosts`) stands apart on
/// its own: the pairs across its own widest split (the last merge of its hosts' medians `m`)
/// have their median [`LEAST_GAP`] below that of its pairs with its nearest group, as
/// measured, and above them by a one-sided Mann-Whitney test at `z >=` [`Z_APART`] (two
/// medians of 16 pairs at 6 % noise stand 3 % apart in 1 of 10 draws by chance: a group
/// joining two leaves as far apart as any was then made in 7 of 100). The pairs inside its finer levels are left out (a group joining two leaves as
/// far from each other as from any other leaf is no group, whatever its leaves' pairs), and
/// so are the hosts' own effects (a host with no near group is far from all, and with that
/// taken out such a group comes within the gap). Smaller groups have too few pairs across
/// their split to be judged alone: they count in the pooled test only.
fn each_apart(
    members: &[Vec<usize>],
    m: &Array2<f64>,
    hosts: &[usize],
    values: &BetweenValues,
) -> bool {
    let gather = |pairs: &mut dyn Iterator<Item = (usize, usize)>| -> Vec<f64> {
        pairs
            .flat_map(|(a, b)| values.of(hosts[a], hosts[b]).iter().copied())
            .filter(|x| x.is_finite())
            .collect()
    };
    (0..members.len())
        .filter(|&x| members[x].len() >= 4)
        .all(|x| {
            let Some(y) = nearest_group(members, m, x) else {
                return true;
            };
            let g = &members[x];
            let sub = Array2::from_shape_fn((g.len(), g.len()), |(a, b)| m[[g[a], g[b]]]);
            let halves = Dendrogram::new(&sub, Linkage::Average).cut(2);
            let mut inside = gather(&mut (0..g.len()).flat_map(|a| {
                let halves = &halves;
                (a + 1..g.len())
                    .filter(move |&b| halves[a] != halves[b])
                    .map(move |b| (g[a], g[b]))
            }));
            let mut across =
                gather(&mut (g.iter()).flat_map(|&a| members[y].iter().map(move |&b| (a, b))));
            if inside.is_empty() || across.is_empty() {
                return true;
            }
            let z = lgate_stats::mann_whitney_z(&inside, &across);
            median(&mut across) >= (1.0 + LEAST_GAP) * median(&mut inside) && z >= Z_APART
        })
}

/// The group nearest to group `x` of `members` (by the median of the medians `m` between
/// them); `None` when there is no other group.
fn nearest_group(members: &[Vec<usize>], m: &Array2<f64>, x: usize) -> Option<usize> {
    let at = |y: usize| {
        let mut v: Vec<f64> = (members[x].iter())
            .flat_map(|&a| members[y].iter().map(move |&b| (a, b)))
            .map(|(a, b)| m[[a, b]])
            .collect();
        median(&mut v)
    };
    (0..members.len())
        .filter(|&y| y != x)
        .min_by(|&y, &z| at(y).total_cmp(&at(z)))
}

/// The pairs of hosts between each group and its nearest group (by the median of the medians
/// between them), each pair once; `None` when a group has no other group.
fn pairs_to_nearest_groups(members: &[Vec<usize>], m: &Array2<f64>) -> Option<Vec<(usize, usize)>> {
    let k = members.len();
    let mut between_pairs: Vec<(usize, usize)> = Vec::new();
    for x in 0..k {
        let near = nearest_group(members, m, x)?;
        for &a in &members[x] {
            for &b in &members[near] {
                between_pairs.push((a.min(b), a.max(b)));
            }
        }
    }
    between_pairs.sort_unstable();
    between_pairs.dedup();
    Some(between_pairs)
}
