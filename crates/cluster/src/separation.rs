//! How far apart the groups of a partition stand: the separation `auto` judges a level by,
//! the noise of the distances between groups, and the candidate partitions of a set of ranks
//! (the cuts of an average-linkage dendrogram in the raw and the profile view).

use lgate_stats::quantile;
use ndarray::Array2;
use rayon::prelude::*;

use crate::linkage::{profile_distances, Cuts, Dendrogram, Linkage};
use crate::tree::sub_matrix;

/// The least Mann-Whitney z of the pairs between hosts that decides a level on hosts, by
/// default (see the levels on hosts for how it was set).
pub const PAIRS_DECIDE: f64 = 4.0;

/// The thresholds of `auto`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AutoParams {
    /// The least separation of a level.
    pub min_ratio: f64,
    /// The least gap between groups, as a share of the set's median distance.
    pub min_gap: f64,
    /// How far out of the noise (standard deviations of the distances between groups) the gap
    /// of a level must be when it is under `min_gap` or its separation under `min_ratio`
    /// (groups alike, raw view): at `min_ratio`; (separation - 1) x gap / noise at least
    /// (`min_ratio` - 1) times this.
    pub min_noise_gaps: f64,
    /// The share of the largest distances inside groups left out as noise.
    pub trim: f64,
    /// The largest share of singletons in a level.
    pub max_singleton_share: f64,
    /// Whether a level below `min_ratio` may stand when its gap is far out of the noise (SMT
    /// siblings barely nearer than the nearest cores of their CCD).
    pub narrow: bool,
    /// Sets of fewer items are split on raw distances only.
    pub profile_min_items: usize,
    /// Sets of more items are split on raw distances only (profiles cost n^3).
    pub profile_max_items: usize,
    /// Above this many items, only the cuts with the largest jumps in merge height are scored.
    pub all_cuts_up_to: usize,
    /// How many cuts are scored above `all_cuts_up_to`.
    pub jump_cuts: usize,
    /// Whether groups each slower inside than towards the others may make a level (ranks
    /// that take turns on one core); off for levels of hosts, whose ranks never share a core.
    pub slow_inside_level: bool,
    /// The least Mann-Whitney z of the pairs between hosts that decides a level on hosts
    /// ([`PAIRS_DECIDE`]; `measure` asks more of a level before it spends nothing on it: its
    /// `Z_FIRM` of the levels on hosts).
    pub pairs_decide: f64,
}

impl Default for AutoParams {
    fn default() -> Self {
        AutoParams {
            min_ratio: 1.2,
            min_gap: 0.2,
            min_noise_gaps: 7.0,
            trim: 0.05,
            max_singleton_share: 1.0 / 3.0,
            narrow: true,
            profile_min_items: 4,
            profile_max_items: 512,
            all_cuts_up_to: 256,
            jump_cuts: 12,
            slow_inside_level: true,
            pairs_decide: PAIRS_DECIDE,
        }
    }
}

/// Which view of the distances a split was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// The distances themselves.
    Raw,
    /// Profile distances.
    Profile,
}

#[derive(Debug, Clone)]
pub(crate) struct Split {
    pub(crate) labels: Vec<usize>,
    pub(crate) separation: f64,
    /// A finer level that parts some of the split's groups into single ranks and keeps the
    /// others whole (a hybrid CPU's E-core modules beside P-core SMT pairs: the core level),
    /// with its separation.
    pub(crate) singles: Option<(Vec<usize>, f64)>,
}

/// The best finer level of `labels` (raw view) that parts its widest groups of three or more
/// into single ranks and keeps the others whole, with its separation, if one is a level: the
/// groups of three or more are ordered by their median distance inside and parted from each
/// point in that order on. Sets of up to `all_cuts_up_to` ranks.
fn singles_beside(
    m: &Array2<f64>,
    labels: &[usize],
    scale: f64,
    p: &AutoParams,
) -> Option<(Vec<usize>, f64)> {
    if m.nrows() > p.all_cuts_up_to {
        return None;
    }
    let k = labels.iter().max().map_or(0, |&x| x + 1);
    let members = members_of(labels, k);
    let mut wide: Vec<(f64, usize)> = (0..k)
        .filter(|&g| members[g].len() >= 3)
        .map(|g| {
            let mut v: Vec<f64> = pairs_in(m, &members[g]).collect();
            (median(&mut v), g)
        })
        .collect();
    wide.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Held to the share of singletons for those it adds: the level's own (SMT siblings a slow
    // pair parted) are already judged.
    let already = members.iter().filter(|g| g.len() == 1).count();
    let p = &AutoParams {
        max_singleton_share: p.max_singleton_share + already as f64 / labels.len() as f64,
        ..*p
    };
    let mut values = Vec::new();
    let mut best: Option<(Vec<usize>, f64)> = None;
    for keep in 0..wide.len() {
        if keep > 0 && wide[keep].0 <= wide[keep - 1].0 {
            continue;
        }
        // The groups kept whole, their labels first; then one label per parted rank.
        let mut finer = vec![usize::MAX; labels.len()];
        let mut next = 0;
        let parted: Vec<usize> = wide[keep..].iter().map(|&(_, g)| g).collect();
        for (g, group) in members.iter().enumerate() {
            if group.is_empty() || parted.contains(&g) {
                continue;
            }
            group.iter().for_each(|&i| finer[i] = next);
            next += 1;
        }
        for &g in &parted {
            for &i in &members[g] {
                finer[i] = next;
                next += 1;
            }
        }
        let s = separation(m, &finer, scale, p, &mut values, View::Raw);
        if s > 0.0
            && best.as_ref().is_none_or(|b| s > b.1)
            && !inverted(m, &finer, p)
            && distinct(m, &finer)
        {
            best = Some((finer, s));
        }
    }
    best
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    quantile(v, 0.5)
}

/// The median distance between distinct items, from every `stride`-th pair when there are more
/// than [`WITHIN_SAMPLES`] (the same sampling as the percentile inside groups).
pub(crate) fn upper_median(m: &Array2<f64>) -> f64 {
    let n = m.nrows();
    let stride = (n * n.saturating_sub(1) / 2 / WITHIN_SAMPLES).max(1);
    let mut v: Vec<f64> = (0..n)
        .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
        .step_by(stride)
        .map(|(i, j)| m[[i, j]])
        .collect();
    median(&mut v)
}

/// `sum(d[j] * w[j])`, in four lanes so that it vectorises.
pub(crate) fn weighted_sum(d: &[f64], w: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 4];
    let (dc, wc) = (d.chunks_exact(4), w.chunks_exact(4));
    let tail: f64 = dc
        .remainder()
        .iter()
        .zip(wc.remainder())
        .map(|(a, b)| a * b)
        .sum();
    for (a, b) in dc.zip(wc) {
        for l in 0..4 {
            lanes[l] += a[l] * b[l];
        }
    }
    lanes.iter().sum::<f64>() + tail
}

/// The items of each group `0..k`, in increasing order.
pub(crate) fn members_of(labels: &[usize], k: usize) -> Vec<Vec<usize>> {
    let mut members = vec![Vec::new(); k];
    for (i, &l) in labels.iter().enumerate() {
        members[l].push(i);
    }
    members
}

/// A group of two whose distance is at least halfway from the usual such group's (the median
/// of them) to the mean distance between groups is two singletons: an SMT pair measured slow,
/// or two ranks that noise drew together in a level of singletons. Only when three or more
/// groups of two can tell the usual one, and at most a quarter of them are so far apart.
pub(crate) fn split_far_pairs(m: &Array2<f64>, labels: &mut [usize]) {
    let n = labels.len();
    let k = labels.iter().max().map_or(0, |&x| x + 1);
    let members = members_of(labels, k);
    let pairs: Vec<usize> = (0..k).filter(|&g| members[g].len() == 2).collect();
    if pairs.len() < 3 {
        return;
    }
    let distance = |g: usize| m[[members[g][0], members[g][1]]];
    let usual = median(&mut pairs.iter().map(|&g| distance(g)).collect::<Vec<_>>());
    // The mean distance between ranks of different groups (the pairs of every `stride`-th
    // rank when there are more than [`WITHIN_SAMPLES`]).
    let stride = (n * n.saturating_sub(1) / 2 / WITHIN_SAMPLES).max(1);
    let (mut sum, mut count) = (0.0, 0usize);
    for i in (0..n).step_by(stride) {
        let row = m.row(i);
        for j in (i + 1..n).filter(|&j| labels[i] != labels[j]) {
            sum += row[j];
            count += 1;
        }
    }
    if count == 0 {
        return;
    }
    let halfway = 0.5 * (usual + sum / count as f64);
    let far: Vec<usize> = pairs
        .into_iter()
        .filter(|&g| distance(g) >= halfway)
        .collect();
    if far.is_empty() || 4 * far.len() > members.iter().filter(|g| g.len() == 2).count() {
        return;
    }
    for (next, g) in (k..).zip(far) {
        labels[members[g][1]] = next;
    }
}

/// A singleton joins the group it is nearest to (mean raw distance) when it is nearer to it
/// than halfway from the group's mean distance inside to the mean distance between groups: a
/// slow rank still belongs where it runs, while a rank as far from every group as groups are
/// from each other (an SMT pair measured slow: two singletons) joins none by chance.
pub(crate) fn absorb_singletons(m: &Array2<f64>, labels: &mut [usize]) {
    let n = labels.len();
    let k = labels.iter().max().map_or(0, |&x| x + 1);
    if k == n {
        return;
    }
    let mut sizes = vec![0usize; k];
    for &l in labels.iter() {
        sizes[l] += 1;
    }
    if sizes.iter().all(|&s| s >= 2) {
        return;
    }
    // How far groups are from each other: the mean over pairs of ranks in different groups
    // (every pair of grouped ranks, less the pairs inside groups).
    let members = members_of(labels, k);
    let weight: Vec<f64> = labels
        .iter()
        .map(|&l| if sizes[l] >= 2 { 1.0 } else { 0.0 })
        .collect();
    let mut sum = 0.0;
    for i in 0..n {
        if sizes[labels[i]] < 2 {
            continue;
        }
        let row = m.row(i);
        let row = row.as_slice().expect("a standard-layout row");
        let all = weighted_sum(&row[i + 1..], &weight[i + 1..]);
        let group = &members[labels[i]];
        let inside: f64 = group[group.partition_point(|&j| j <= i)..]
            .iter()
            .map(|&j| row[j])
            .sum();
        sum += all - inside;
    }
    let pairs = |s: usize| s * s.saturating_sub(1) / 2;
    let grouped: usize = sizes.iter().filter(|&&s| s >= 2).sum();
    let count = pairs(grouped)
        - sizes
            .iter()
            .filter(|&&s| s >= 2)
            .map(|&s| pairs(s))
            .sum::<usize>();
    let level = if count == 0 {
        f64::INFINITY
    } else {
        sum / count as f64
    };
    // Each group's mean distance inside.
    let inside: Vec<f64> = members
        .iter()
        .map(|g| {
            let pairs = pairs(g.len());
            let sum: f64 = g
                .iter()
                .enumerate()
                .flat_map(|(a, &i)| g[a + 1..].iter().map(move |&j| m[[i, j]]))
                .sum();
            if pairs == 0 {
                0.0
            } else {
                sum / pairs as f64
            }
        })
        .collect();
    // The usual distance inside a group of two: a singleton slow towards one rank of a group
    // of two (a slow pair) is judged by its distance to the other (the third core of a CCD).
    let mut twos: Vec<f64> = (members.iter())
        .filter(|g| g.len() == 2)
        .map(|g| m[[g[0], g[1]]])
        .collect();
    let usual_two = (!twos.is_empty()).then(|| median(&mut twos));
    let original = labels.to_vec();
    let mut sums = vec![0.0f64; k];
    for i in 0..n {
        if sizes[original[i]] != 1 {
            continue;
        }
        sums.iter_mut().for_each(|x| *x = 0.0);
        let row = m.row(i);
        for j in 0..n {
            if sizes[original[j]] >= 2 {
                sums[original[j]] += row[j];
            }
        }
        let distance = |g: usize| match (members[g].as_slice(), usual_two) {
            (&[a, b], Some(u)) if row[a].max(row[b]) > SLOW_PAIR * u => row[a].min(row[b]),
            _ => sums[g] / sizes[g] as f64,
        };
        let nearest = (0..k)
            .filter(|&g| sizes[g] >= 2)
            .map(|g| (g, distance(g)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((g, d)) = nearest {
            if d < (inside[g] + level) / 2.0 {
                labels[i] = g;
            }
        }
    }
}

/// Whether some groups, but not all, are far slower inside than towards the other groups (raw
/// medians): an artifact such as one slow pair among normal neighbours, not a level. When every
/// group is slow inside (ranks that share a core, each slow towards its core mate only), the
/// pattern is consistent: a real grouping of the machine. A socket whose memory is elsewhere is
/// about as slow inside as across, and not counted as slow at all. When the slow groups are a
/// few groups of two (at most a quarter of the groups) and the other groups are a level of
/// their own on raw distances, the slow groups are pairs measured slow (SMT siblings hit by a
/// slow pair), not the reason for the level. Levels of hosts (`slow_inside_level` off) never
/// have every group slow inside: their ranks share no core.
pub(crate) fn inverted(raw: &Array2<f64>, labels: &[usize], p: &AutoParams) -> bool {
    let k = labels.iter().max().map_or(0, |&x| x + 1);
    let members = members_of(labels, k);
    // One group at a time, so that only one group's distances are held (the matrix is
    // symmetric: each pair counted once, inside as i < j).
    let (mut inside, mut outside) = (Vec::new(), Vec::new());
    let mut slow = Vec::new();
    let mut judged = 0;
    for (g, group) in members.iter().enumerate() {
        inside.clear();
        outside.clear();
        for &i in group {
            for (j, &d) in raw.row(i).iter().enumerate() {
                if labels[j] != g {
                    outside.push(d);
                } else if j > i {
                    inside.push(d);
                }
            }
        }
        if inside.is_empty() || outside.is_empty() {
            continue;
        }
        judged += 1;
        if median(&mut inside) > MAX_INVERSION * median(&mut outside) {
            slow.push(g);
        }
    }
    if slow.is_empty() {
        return false;
    }
    if slow.len() == judged {
        // Every group slow inside: ranks taking turns on shared cores, never hosts.
        return !p.slow_inside_level;
    }
    if 4 * slow.len() > judged || slow.iter().any(|&g| members[g].len() != 2) {
        return true;
    }
    // The other groups alone, on raw distances.
    let rest: Vec<usize> = (0..labels.len())
        .filter(|&i| !slow.contains(&labels[i]))
        .collect();
    let mut relabel = vec![usize::MAX; k];
    let mut next = 0;
    let rest_labels: Vec<usize> = rest
        .iter()
        .map(|&i| {
            let l = &mut relabel[labels[i]];
            if *l == usize::MAX {
                *l = next;
                next += 1;
            }
            *l
        })
        .collect();
    let sub = sub_matrix(raw, &rest);
    separation(
        &sub,
        &rest_labels,
        upper_median(&sub),
        p,
        &mut Vec::new(),
        View::Raw,
    ) <= 0.0
}

/// The separation of a partition in a view, or 0 when it is not a level: the least median
/// distance between two groups over the greatest upper quartile of the distances inside a
/// group (groups of two, one distance each, pooled: their 95th percentile when there are 20 or
/// more). Medians and quartiles, because measured distances are noisy both ways and a few
/// pairs or ranks are slow: a level is in the bulk of the distances, not in their extremes.
pub(crate) fn separation(
    m: &Array2<f64>,
    labels: &[usize],
    scale: f64,
    p: &AutoParams,
    values: &mut Vec<f64>,
    view: View,
) -> f64 {
    let n = labels.len();
    let k = labels.iter().max().map_or(0, |&x| x + 1);
    let mut sizes = vec![0usize; k];
    for &l in labels {
        sizes[l] += 1;
    }
    let singletons = sizes.iter().filter(|&&s| s == 1).count();
    if sizes.iter().filter(|&&s| s >= 2).count() < 2 {
        return 0.0;
    }
    // More singletons than `max_singleton_share` of the ranks: a level only far out of the
    // noise (below).
    let crowded = singletons as f64 > p.max_singleton_share * n as f64;
    if crowded && view != View::Raw {
        return 0.0;
    }
    let members = members_of(labels, k);
    // Inside each group of four or more: the upper quartile of its pairs (every `stride`-th
    // pair of a large group: a quantile of 200 000 samples is exact to a small fraction of a
    // percent). Groups of two and three have one and three distances each: those are pooled,
    // and their 95th percentile taken when there are 20 or more, so that one slow pair does
    // not decide.
    let mut inside = 0.0f64;
    let mut small_pairs = Vec::new();
    for group in &members {
        match group.len() {
            0 | 1 => {}
            2 | 3 => small_pairs.extend(pairs_in(m, group)),
            size => {
                values.clear();
                let pairs = size * (size - 1) / 2;
                let stride = (pairs / WITHIN_SAMPLES).max(1);
                let mut seen = 0usize;
                for (a, &i) in group.iter().enumerate() {
                    let row = m.row(i);
                    for &j in &group[a + 1..] {
                        if seen.is_multiple_of(stride) {
                            values.push(row[j]);
                        }
                        seen += 1;
                    }
                }
                inside = inside.max(quantile(values, INSIDE_QUANTILE));
            }
        }
    }
    if !small_pairs.is_empty() {
        // A pair far slower than the usual pair is a slow pair (the slow first pair), not the
        // level's distance: left out, when at most a quarter of the pairs are.
        without_slow_pairs(&mut small_pairs);
        let q = if small_pairs.len() >= 20 {
            1.0 - p.trim
        } else {
            1.0
        };
        inside = inside.max(quantile(&mut small_pairs, q));
    }
    // Between each two groups: the median of their pairs; the least of those medians.
    let near = near_group_pairs(m, labels, &members);
    let mut least_between = f64::INFINITY;
    for &(a, b) in &near {
        least_between = least_between.min(median_between(m, &members[a], &members[b], values));
    }
    if !least_between.is_finite() {
        return 0.0;
    }
    let gap = least_between - inside;
    if crowded {
        // A level of more singletons than usual (a hybrid CPU's SMT level: P-core siblings
        // beside E-cores without one) is one when it also stands far out of the noise: groups
        // that chance drew together in a flat set do not.
        let clear_of_noise = gap >= p.min_gap * scale
            && least_between >= p.min_ratio * inside
            && gap >= p.min_noise_gaps * noise(m, &members, &near);
        if !clear_of_noise {
            return 0.0;
        }
    }
    let ratio = if inside > 0.0 {
        least_between / inside
    } else if least_between > 0.0 {
        // Groups without spread inside stand apart without measure.
        f64::INFINITY
    } else {
        0.0
    };
    if gap < p.min_gap * scale || ratio < p.min_ratio {
        // A narrower gap, or a smaller ratio, is a level only when it stands far out of the
        // noise, for groups alike (module documentation).
        if view != View::Raw || !regular(&sizes) {
            return 0.0;
        }
        let noise = noise(m, &members, &near);
        // The farther out of the noise, the smaller a ratio will do, and the wider apart, the
        // nearer the noise: (ratio - 1) x gap / noise at least (min_ratio - 1) x min_noise_gaps,
        // that is 1.2 at 7 times the noise, 1.1 at 14 (SMT siblings barely nearer than the
        // nearest other cores of their CCD, whose pairs spread by their places on its ring),
        // 1.3 at 4.7; never under half of min_noise_gaps.
        let far = (ratio - 1.0) * gap >= (p.min_ratio - 1.0) * p.min_noise_gaps * noise
            && gap >= 0.5 * p.min_noise_gaps * noise;
        let clear_of_noise = far
            && if ratio >= p.min_ratio {
                gap >= 0.5 * p.min_gap * scale
            } else {
                p.narrow && ratio >= least_ratio(p)
            };
        if !clear_of_noise {
            return 0.0;
        }
    }
    ratio
}

/// The least separation of a level however far out of the noise: a quarter of the way from
/// 1 to `min_ratio`.
pub(crate) fn least_ratio(p: &AutoParams) -> f64 {
    1.0 + 0.25 * (p.min_ratio - 1.0)
}

/// Whether every group of two or more ranks holds as many ranks as the others (singletons
/// aside: ranks whose sibling a slow pair hid, or E-cores without one).
pub(crate) fn regular(sizes: &[usize]) -> bool {
    let mut grouped = sizes.iter().filter(|&&s| s >= 2);
    let first = grouped.next();
    grouped.all(|s| Some(s) == first)
}

/// The noise of the distances between groups: the standard deviation of one distance, from
/// the median absolute difference between two distances of one pair of near groups (each
/// distance of the first half of a pair's sample with one of the second half), pooled over the
/// pairs of groups. Distances between two groups are one level of the machine each, so they
/// differ by noise alone when the partition is right; differences of two distances are
/// unbiased for blocks of any size, where deviations from a block's own median are not (27 %
/// low for groups of two).
pub(crate) fn noise(m: &Array2<f64>, members: &[Vec<usize>], near: &[(usize, usize)]) -> f64 {
    // At most about WITHIN_SAMPLES differences in all.
    let per_pair = (WITHIN_SAMPLES / near.len().max(1)).max(2);
    let mut block = Vec::new();
    let mut differences = Vec::new();
    for &(a, b) in near {
        block.clear();
        let (a, b) = (&members[a], &members[b]);
        let step = (a.len() * b.len() / per_pair).max(1);
        for &i in a.iter().step_by(step) {
            let row = m.row(i);
            block.extend(b.iter().map(|&j| row[j]));
        }
        let half = block.len() / 2;
        differences.extend((0..half).map(|k| (block[k] - block[half + k]).abs()));
    }
    if differences.is_empty() {
        return f64::INFINITY;
    }
    // |x - y| of two normal draws has median 0.6745 * sqrt(2) sigma.
    median(&mut differences) / (0.6745 * std::f64::consts::SQRT_2)
}

/// The quantile of a group's distances that stands for the group inside: its upper quartile,
/// so that a group holding two groups (half its pairs across) is not taken for one, while a
/// few slow pairs are left out.
pub(crate) const INSIDE_QUANTILE: f64 = 0.75;

/// How many nearest groups (by mean distance) of each group are compared by median.
pub(crate) const NEAR_GROUPS: usize = 3;

/// Items from which a matrix's groups are looked at on every core.
const PARALLEL_ITEMS: usize = 1024;

/// The pairs of groups whose median distance may be the least: each group with its
/// [`NEAR_GROUPS`] nearest groups by mean distance (all pairs when there are few groups). A
/// median is below the mean unless a few pairs are far slower than the rest, so the least
/// median is among the least means; the means take one pass over the matrix, the medians a
/// selection each.
pub(crate) fn near_group_pairs(
    m: &Array2<f64>,
    labels: &[usize],
    members: &[Vec<usize>],
) -> Vec<(usize, usize)> {
    let k = members.len();
    if k <= NEAR_GROUPS + 1 {
        return (0..k)
            .flat_map(|a| (a + 1..k).map(move |b| (a, b)))
            .collect();
    }
    // Each group's nearest groups by mean distance, from up to MEAN_ROWS of its rows.
    let nearest = |sums: &mut Vec<f64>, (g, group): (usize, &Vec<usize>)| {
        sums.iter_mut().for_each(|x| *x = 0.0);
        let step = group.len().div_ceil(MEAN_ROWS).max(1);
        let rows = group.len().div_ceil(step);
        for &i in group.iter().step_by(step) {
            for (j, &x) in m.row(i).iter().enumerate() {
                sums[labels[j]] += x;
            }
        }
        let mut near: Vec<(f64, usize)> = (0..k)
            .filter(|&h| h != g && !members[h].is_empty())
            .map(|h| (sums[h] / (rows * members[h].len()) as f64, h))
            .collect();
        let take = NEAR_GROUPS.min(near.len());
        if take == 0 {
            return Vec::new();
        }
        near.select_nth_unstable_by(take - 1, |a, b| a.0.total_cmp(&b.0));
        near[..take]
            .iter()
            .map(|&(_, h)| (g.min(h), g.max(h)))
            .collect::<Vec<_>>()
    };
    // On every core when the matrix is large; a small one (a host's block, clustered beside
    // the other hosts') costs less than sharing out its groups.
    let mut pairs: Vec<(usize, usize)> = if labels.len() >= PARALLEL_ITEMS {
        members
            .par_iter()
            .enumerate()
            .map_init(|| vec![0.0f64; k], nearest)
            .flatten()
            .collect()
    } else {
        let mut sums = vec![0.0f64; k];
        members
            .iter()
            .enumerate()
            .flat_map(|x| nearest(&mut sums, x))
            .collect()
    };
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

/// A group of two whose distance is this many times the usual pair's is a slow pair.
pub(crate) const SLOW_PAIR: f64 = 1.5;

/// The distances between the members of a small group.
pub(crate) fn pairs_in<'a>(
    m: &'a Array2<f64>,
    group: &'a [usize],
) -> impl Iterator<Item = f64> + 'a {
    (0..group.len()).flat_map(move |a| (a + 1..group.len()).map(move |b| m[[group[a], group[b]]]))
}

/// `pairs` (the distances inside small groups) without those [`SLOW_PAIR`] times the usual
/// one, when at most a quarter are.
fn without_slow_pairs(pairs: &mut Vec<f64>) {
    let usual = median(&mut pairs.clone());
    let kept = pairs.iter().filter(|&&x| x <= SLOW_PAIR * usual).count();
    if 4 * kept >= 3 * pairs.len() {
        pairs.retain(|&x| x <= SLOW_PAIR * usual);
    }
}

/// The median distance between two groups (from every `step`-th row of the first when the two
/// are large).
pub(crate) fn median_between(
    m: &Array2<f64>,
    a: &[usize],
    b: &[usize],
    values: &mut Vec<f64>,
) -> f64 {
    values.clear();
    // Whole rows of `a`, every `step`-th: at most about PAIR_SAMPLES distances.
    let step = (a.len() * b.len() / PAIR_SAMPLES).max(1);
    for &i in a.iter().step_by(step) {
        let row = m.row(i);
        values.extend(b.iter().map(|&j| row[j]));
    }
    median(values)
}

/// Distances between two groups sampled at most (about) for their median: exact to a small
/// fraction of a percent.
pub(crate) const PAIR_SAMPLES: usize = 20_000;

/// Rows of a group read at most for its mean distances to the other groups.
pub(crate) const MEAN_ROWS: usize = 32;

/// Distances inside groups sampled at most for the percentile of a separation.
pub(crate) const WITHIN_SAMPLES: usize = 200_000;

/// How much slower inside than towards other groups a group may be.
pub(crate) const MAX_INVERSION: f64 = 1.1;

/// The separation of a partition of a matrix (one label per item), as `auto` judges levels: 0
/// when it cannot be a level (see the module documentation).
pub fn separation_of(m: &Array2<f64>, labels: &[usize], p: &AutoParams) -> f64 {
    if labels.len() < 2 {
        return 0.0;
    }
    let mut within = Vec::new();
    let standard;
    let m = if m.is_standard_layout() {
        m
    } else {
        standard = m.as_standard_layout().into_owned();
        &standard
    };
    let s = separation(m, labels, upper_median(m), p, &mut within, View::Raw);
    if s > 0.0 && inverted(m, labels, p) {
        0.0
    } else {
        s
    }
}

/// The cuts worth scoring, most clusters first (cuts are reached by merging, which only goes
/// one way): all of them for small sets, else those before the largest jumps in merge height.
pub(crate) fn cut_sizes(d: &Dendrogram, p: &AutoParams) -> Vec<usize> {
    let n = d.len();
    if n <= p.all_cuts_up_to {
        return (2..n).rev().collect();
    }
    let merges = d.merges();
    let mut jumps: Vec<(f64, usize)> = (1..merges.len())
        .map(|t| {
            let (h0, h1) = (merges[t - 1].height, merges[t].height);
            // After t merges, n - t clusters remain; the next merge joins two of them.
            (
                if h0 > 0.0 {
                    h1 / h0
                } else if h1 > 0.0 {
                    f64::MAX
                } else {
                    1.0
                },
                n - t,
            )
        })
        .filter(|&(_, k)| (2..n).contains(&k))
        .collect();
    jumps.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut ks: Vec<usize> = jumps.into_iter().take(p.jump_cuts).map(|j| j.1).collect();
    ks.sort_unstable_by(|a, b| b.cmp(a));
    ks
}

/// The best level of a set of items, if any: its labels and separation.
pub(crate) fn best_split(m: &Array2<f64>, p: &AutoParams) -> Option<Split> {
    let n = m.nrows();
    if n < 4 {
        return None;
    }
    // The scale, the profile view and each view's dendrogram are independent: on every core.
    let with_profile = (p.profile_min_items..=p.profile_max_items).contains(&n);
    let ((scale, raw_tree), profile) = rayon::join(
        || rayon::join(|| upper_median(m), || Dendrogram::new(m, Linkage::Average)),
        || {
            with_profile.then(|| {
                let view = profile_distances(m);
                let tree = Dendrogram::new(&view, Linkage::Average);
                (view, tree)
            })
        },
    );
    let mut views: Vec<(View, &Array2<f64>, &Dendrogram)> = vec![(View::Raw, m, &raw_tree)];
    if let Some((view, tree)) = &profile {
        views.push((View::Profile, view, tree));
    }
    // Small sets: single linkage's cuts too, which keep a group whose one pair a slow pair
    // hit (three cores of a CCD, two of them measured slow) where average linkage parts it.
    let single = (n <= p.all_cuts_up_to).then(|| Dendrogram::new(m, Linkage::Single));
    if let Some(tree) = &single {
        views.push((View::Raw, m, tree));
    }
    // Every cut's labels first (cuts are reached by merging, one way), then scored in parallel.
    let mut candidates: Vec<(View, &Array2<f64>, Vec<usize>)> = Vec::new();
    for &(kind, view, dendrogram) in &views {
        let mut cuts = Cuts::new(dendrogram);
        for k in cut_sizes(dendrogram, p) {
            cuts.advance_to(k);
            let labels = cuts.labels();
            // Mostly singletons, or fewer than two real groups: absorbing cannot make a level.
            let mut sizes = vec![0usize; k];
            for &l in &labels {
                sizes[l] += 1;
            }
            let real = sizes.iter().filter(|&&s| s >= 2).count();
            let singles = sizes.iter().filter(|&&s| s == 1).count();
            if real < 2 || 2 * singles > n {
                continue;
            }
            candidates.push((kind, view, labels));
        }
    }
    let mut passing: Vec<(View, &Array2<f64>, Split)> = candidates
        .into_par_iter()
        .map_init(Vec::new, |within, (kind, view, mut labels)| {
            split_far_pairs(m, &mut labels);
            absorb_singletons(m, &mut labels);
            let s = separation(view, &labels, scale, p, within, kind);
            (s > 0.0).then_some((
                kind,
                view,
                Split {
                    labels,
                    separation: s,
                    singles: None,
                },
            ))
        })
        .flatten()
        .collect();
    // The costly checks last, best first: usually only the winner is checked. A level that
    // stands `min_ratio` apart comes before a narrower one far out of the noise, and one the
    // distances themselves show before one only profiles show (slow pairs that happen to
    // share ranks make those look alike).
    let key = |kind: View, s: &Split| (s.separation >= p.min_ratio, kind == View::Raw);
    passing.sort_by(|a, b| {
        let (ka, kb) = (key(a.0, &a.2), key(b.0, &b.2));
        kb.cmp(&ka).then(b.2.separation.total_cmp(&a.2.separation))
    });
    let level = |(_, view, s): &(View, &Array2<f64>, Split)| {
        !inverted(m, &s.labels, p) && distinct(view, &s.labels)
    };
    let best = passing.iter().position(level)?;
    // A finer level that parts some of its groups into single ranks: the recursion inside each
    // group cannot find it (a group's parting into singletons is no level of the group).
    let singles = singles_beside(m, &passing[best].2.labels, scale, p);
    let mut split = passing.swap_remove(best).2;
    split.singles = singles;
    Some(split)
}

/// How often a distance between a group and its nearest group must exceed a distance inside a
/// group (each compared with each) for the groups to be distinct.
pub(crate) const MIN_DISTINCT: f64 = 0.9;

/// Whether the groups stand apart in the bulk of the distances of the view they were found in,
/// not only in their medians and quartiles: a distance between a group and its nearest group
/// (by median) exceeds a distance inside a group at least 90 % of the time. Medians of a few
/// values can differ by chance: on 12 ranks measured at 0 B over an oversubscribed emulated
/// network (round trips of 22-150 us with no structure), groups of two picked by the
/// dendrogram have medians 1.2-5x apart, yet their distances overlap.
pub(crate) fn distinct(m: &Array2<f64>, labels: &[usize]) -> bool {
    let k = labels.iter().max().map_or(0, |&x| x + 1);
    let members = members_of(labels, k);
    // Each group's nearest group by median, among its nearest by mean.
    let mut values = Vec::new();
    let mut best = vec![(f64::INFINITY, usize::MAX); k];
    for (a, b) in near_group_pairs(m, labels, &members) {
        let x = median_between(m, &members[a], &members[b], &mut values);
        if x < best[a].0 {
            best[a] = (x, b);
        }
        if x < best[b].0 {
            best[b] = (x, a);
        }
    }
    let mut nearest: Vec<(usize, usize)> = best
        .iter()
        .enumerate()
        .filter(|(_, b)| b.1 != usize::MAX)
        .map(|(g, &(_, h))| (g.min(h), g.max(h)))
        .collect();
    nearest.sort_unstable();
    nearest.dedup();
    // Every `stride`-th distance inside groups and between nearest groups: the share is exact
    // to a fraction of a percent from 200 000 of each.
    let sampled = |blocks: &mut dyn Iterator<Item = (usize, usize)>, total: usize| {
        let stride = (total / WITHIN_SAMPLES).max(1);
        let mut v: Vec<f64> = blocks.step_by(stride).map(|(i, j)| m[[i, j]]).collect();
        v.sort_unstable_by(f64::total_cmp);
        v
    };
    // Groups of four or more sampled; the pairs of groups of two and three without their slow
    // pairs, as the separation takes them.
    let large = |g: &&Vec<usize>| g.len() > 3;
    let inside_total: usize = (members.iter().filter(large))
        .map(|g| g.len() * (g.len() - 1) / 2)
        .sum();
    let mut inside = sampled(
        &mut members.iter().filter(large).flat_map(|g| {
            g.iter()
                .enumerate()
                .flat_map(move |(a, &i)| g[a + 1..].iter().map(move |&j| (i, j)))
        }),
        inside_total,
    );
    let mut small: Vec<f64> = (members.iter())
        .filter(|g| (2..=3).contains(&g.len()))
        .flat_map(|g| pairs_in(m, g))
        .collect();
    if !small.is_empty() {
        without_slow_pairs(&mut small);
        inside.extend(small);
        inside.sort_unstable_by(f64::total_cmp);
    }
    let between_total: usize = nearest
        .iter()
        .map(|&(g, h)| members[g].len() * members[h].len())
        .sum();
    let between = sampled(
        &mut nearest.iter().flat_map(|&(g, h)| {
            let (a, b) = (&members[g], &members[h]);
            a.iter().flat_map(move |&i| b.iter().map(move |&j| (i, j)))
        }),
        between_total,
    );
    if inside.is_empty() || between.is_empty() {
        return true;
    }
    let mut above = 0.0f64;
    let (mut lo, mut hi) = (0usize, 0usize);
    for &b in &between {
        while lo < inside.len() && inside[lo] < b {
            lo += 1;
        }
        hi = hi.max(lo);
        while hi < inside.len() && inside[hi] <= b {
            hi += 1;
        }
        above += lo as f64 + 0.5 * (hi - lo) as f64;
    }
    above / (inside.len() as f64 * between.len() as f64) >= MIN_DISTINCT
}
