//! `auto`: every level the data supports and no level it does not, with nothing given.
//!
//! A set of ranks is split where its distances show the clearest gap; the groups found are
//! then merged into coarser groups where the distances between groups show a gap (coarser
//! levels), and each group is split again (finer levels). So a level is found per subtree, and
//! a level that only shows between groups (a die whose halves are as far apart as the dies)
//! is still found.
//!
//! Candidate partitions are the cuts of an average-linkage dendrogram over two views of the
//! distances: the raw distances, and profile distances (how differently two ranks see all the
//! others), which separate groups that are slow inside, such as a socket whose memory sits in
//! the other socket. A partition is a level when
//!
//! - its **separation**, the least median distance between two groups over the largest
//!   upper quartile of the distances inside a group, is at least `min_ratio`. Medians and
//!   quartiles, not extremes: measured distances are noisy both ways (8-15 % log-normal noise
//!   makes the extremes of two levels 1.45x apart overlap), and a few slow pairs move
//!   extremes, not the bulk. Groups of two have one distance each: theirs are pooled, pairs
//!   1.5x slower than the usual pair left out (at most a quarter), and the 95th percentile
//!   taken when there are 20 or more;
//! - that gap is at least `min_gap` times the median raw distance of the set (a ratio on its
//!   own is met by gaps far below measurement noise, and by systematic artifacts such as
//!   diagonal bands), or, in the raw view for groups of two or more ranks all of one size
//!   (singletons aside), at least half that and `min_noise_gaps` times the noise of the
//!   distances between groups (their standard deviation, from the median difference of two
//!   distances between the same two groups). So the SMT siblings of one CCD are found inside
//!   the CCD: at 0.36-0.38 us against 0.46-0.49 between its cores, their gap of 0.09 us is under
//!   a fifth of the CCD's median but 10 times the noise. Stricter on purpose: the sockets of a
//!   Stampede node with its slow first rank apart (groups of 1, 7 and 8) and the module pairs
//!   of a Blue Waters node (4.4 times the noise) are not levels the public datasets name;
//! - not some groups, but not all, more than 10 % slower inside (median) than towards the
//!   other groups: one slow pair looks like a group in profiles, while ranks that share a core
//!   (every group slow inside) are a consistent grouping, and a socket whose memory is
//!   elsewhere is only about as slow inside as across (a few slow groups of two are allowed
//!   when the other groups are a level on their own: SMT siblings hit by a slow pair);
//! - the groups stand apart in the bulk, not only in medians: in the view the partition was
//!   found in, a distance between a group and its nearest group exceeds a distance inside a
//!   group at least 90 % of the time (medians of a few values differ by chance in noise with
//!   no structure);
//! - at least two groups hold two or more ranks, and at most a third are singletons, after
//!   each singleton joined the group it is nearest to when it is nearer to it than halfway
//!   from that group's distances inside to the distances between groups (a level may hold
//!   singletons: E-cores without an SMT sibling, or SMT siblings measured slow by a slow pair).
//!
//! Levels beneath a level are looked for inside each group, with that group's own distances
//! and scale. A finer level found inside fewer than half of the groups of one size (nodes
//! alike) is a pattern of a few groups, not a level of the machine, and is dropped.
//!
//! **Outliers.** Slow ranks are taken out before any of this: ranks whose median distance is
//! 1.15x the ranks' usual median (at most a third of the ranks: a slow node, a rank on a busy
//! core), then, once groups are found, groups of three or more ranks whose median distance
//! inside is 1.15x the lower quartile of the groups' (up to half of the machine: two slow nodes
//! of four, which the ranks' medians cannot tell). Every pair touching a slow rank is divided
//! by its slowness and the levels are looked for again; [`auto_with_outliers`] returns the
//! slow ranks with their slowness, and `cluster` reports them (`outliers` in JSON).
//!
//! Tested against the public datasets in `shared/datasets` (every level of every file found
//! exactly, none on the flat mesh and the torus whose nodes do not show) and against the
//! thesis's systems simulated with every artifact, 1 and 2 slow nodes and noise up to 0.15
//! (`crates/simulate/tests/robustness.rs`). The price of `min_gap`: a level whose gap between
//! the median between groups and the upper quartile inside is below a fifth of the set's
//! median distance, and not 7 times the noise, is not reported: 32 single-rank hosts in 4
//! switches at 0.45 against 0.65 us are found at 8 % cell noise, and in some draws not at
//! 12-15 %; SMT pairs at 0.34 against 0.48 us inside a CCD, with log-normal noise on every
//! cell, are found at 2 %, in 3 of 5 draws at 4 % and in none at 6 % (the gap is then 2.4-4.4
//! times the noise).

use lgate_stats::quantile;
use ndarray::Array2;
use rayon::prelude::*;

use crate::linkage::{profile_distances, Cuts, Dendrogram, Linkage};

/// The thresholds of `auto`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AutoParams {
    /// The least separation of a level.
    pub min_ratio: f64,
    /// The least gap between groups, as a share of the set's median distance.
    pub min_gap: f64,
    /// The least gap between groups, in standard deviations of the distances between groups,
    /// of a level whose gap is under `min_gap` (at least half of it, groups alike, raw view).
    pub min_noise_gaps: f64,
    /// The share of the largest distances inside groups left out as noise.
    pub trim: f64,
    /// The largest share of singletons in a level.
    pub max_singleton_share: f64,
    /// Sets of fewer items are split on raw distances only.
    pub profile_min_items: usize,
    /// Sets of more items are split on raw distances only (profiles cost n^3).
    pub profile_max_items: usize,
    /// Above this many items, only the cuts with the largest jumps in merge height are scored.
    pub all_cuts_up_to: usize,
    /// How many cuts are scored above `all_cuts_up_to`.
    pub jump_cuts: usize,
}

impl Default for AutoParams {
    fn default() -> Self {
        AutoParams {
            min_ratio: 1.2,
            min_gap: 0.2,
            min_noise_gaps: 7.0,
            trim: 0.05,
            max_singleton_share: 1.0 / 3.0,
            profile_min_items: 4,
            profile_max_items: 512,
            all_cuts_up_to: 256,
            jump_cuts: 12,
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

/// A hierarchy found by a clustering: groups of ranks at the leaves.
#[derive(Debug, Clone, PartialEq)]
pub enum Tree {
    /// Ranks not split further.
    Leaf(Vec<usize>),
    /// A split into children, with its separation when known.
    Node {
        /// The parts.
        children: Vec<Tree>,
        /// The separation of the split.
        separation: Option<f64>,
    },
}

impl Tree {
    /// The same tree with each item `i` renumbered as `ranks[i]`.
    pub fn to_ranks(&self, ranks: &[usize]) -> Tree {
        match self {
            Tree::Leaf(items) => Tree::Leaf(items.iter().map(|&i| ranks[i]).collect()),
            Tree::Node {
                children,
                separation,
            } => Tree::Node {
                children: children.iter().map(|c| c.to_ranks(ranks)).collect(),
                separation: *separation,
            },
        }
    }
}

impl Tree {
    /// Every rank under this tree.
    pub fn ranks(&self) -> Vec<usize> {
        match self {
            Tree::Leaf(r) => r.clone(),
            Tree::Node { children, .. } => children.iter().flat_map(Tree::ranks).collect(),
        }
    }

    /// The least separation of the splits in this tree that have one (`None` when none has).
    pub fn weakest_separation(&self) -> Option<f64> {
        match self {
            Tree::Leaf(_) => None,
            Tree::Node {
                children,
                separation,
            } => children
                .iter()
                .filter_map(Tree::weakest_separation)
                .chain(*separation)
                .reduce(f64::min),
        }
    }
}

#[derive(Debug, Clone)]
struct Split {
    labels: Vec<usize>,
    separation: f64,
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    quantile(v, 0.5)
}

/// The median distance between distinct items, from every `stride`-th pair when there are more
/// than [`WITHIN_SAMPLES`] (the same sampling as the percentile inside groups).
fn upper_median(m: &Array2<f64>) -> f64 {
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
fn weighted_sum(d: &[f64], w: &[f64]) -> f64 {
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
fn members_of(labels: &[usize], k: usize) -> Vec<Vec<usize>> {
    let mut members = vec![Vec::new(); k];
    for (i, &l) in labels.iter().enumerate() {
        members[l].push(i);
    }
    members
}

/// A singleton joins the group it is nearest to (mean raw distance) when it is nearer to it
/// than halfway from the group's mean distance inside to the mean distance between groups: a
/// slow rank still belongs where it runs, while a rank as far from every group as groups are
/// from each other (an SMT pair measured slow: two singletons) joins none by chance.
fn absorb_singletons(m: &Array2<f64>, labels: &mut [usize]) {
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
        let nearest = (0..k)
            .filter(|&g| sizes[g] >= 2)
            .map(|g| (g, sums[g] / sizes[g] as f64))
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
/// slow pair), not the reason for the level.
fn inverted(raw: &Array2<f64>, labels: &[usize], p: &AutoParams) -> bool {
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
    if slow.is_empty() || slow.len() == judged {
        return false;
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
    ) < p.min_ratio
}

/// The separation of a partition in a view, or 0 when it cannot be a level: the least median
/// distance between two groups over the greatest upper quartile of the distances inside a
/// group (groups of two, one distance each, pooled: their 95th percentile when there are 20 or
/// more). Medians and quartiles, because measured distances are noisy both ways and a few
/// pairs or ranks are slow: a level is in the bulk of the distances, not in their extremes.
fn separation(
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
    if singletons as f64 > p.max_singleton_share * n as f64
        || sizes.iter().filter(|&&s| s >= 2).count() < 2
    {
        return 0.0;
    }
    let members = members_of(labels, k);
    // Inside each group of three or more: the upper quartile of its pairs (every `stride`-th
    // pair of a large group: a quantile of 200 000 samples is exact to a small fraction of a
    // percent). Groups of two have one distance each: those are pooled, and their 95th
    // percentile taken when there are 20 or more, so that one slow pair does not decide.
    let mut inside = 0.0f64;
    let mut pairs_of_two = Vec::new();
    for group in &members {
        match group.len() {
            0 | 1 => {}
            2 => pairs_of_two.push(m[[group[0], group[1]]]),
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
    if !pairs_of_two.is_empty() {
        // A pair far slower than the usual pair is a slow pair (the slow first pair), not the
        // level's distance: left out, when at most a quarter of the pairs are.
        let usual = median(&mut pairs_of_two);
        let kept: Vec<f64> = pairs_of_two
            .iter()
            .copied()
            .filter(|&x| x <= SLOW_PAIR * usual)
            .collect();
        if 4 * kept.len() >= 3 * pairs_of_two.len() {
            pairs_of_two = kept;
        }
        let q = if pairs_of_two.len() >= 20 {
            1.0 - p.trim
        } else {
            1.0
        };
        inside = inside.max(quantile(&mut pairs_of_two, q));
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
    if gap < p.min_gap * scale {
        // A narrower gap is a level only when it stands far out of the noise, for groups alike
        // (module documentation).
        let clear_of_noise = view == View::Raw
            && regular(&sizes)
            && least_between >= p.min_ratio * inside
            && gap >= 0.5 * p.min_gap * scale
            && gap >= p.min_noise_gaps * noise(m, &members, &near);
        if !clear_of_noise {
            return 0.0;
        }
    }
    if inside <= 0.0 {
        // Groups without spread inside stand apart without measure.
        return if least_between > 0.0 {
            f64::INFINITY
        } else {
            0.0
        };
    }
    least_between / inside
}

/// Whether every group of two or more ranks holds as many ranks as the others (singletons
/// aside: ranks whose sibling a slow pair hid, or E-cores without one).
fn regular(sizes: &[usize]) -> bool {
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
fn noise(m: &Array2<f64>, members: &[Vec<usize>], near: &[(usize, usize)]) -> f64 {
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
const INSIDE_QUANTILE: f64 = 0.75;

/// How many nearest groups (by mean distance) of each group are compared by median.
const NEAR_GROUPS: usize = 3;

/// The pairs of groups whose median distance may be the least: each group with its
/// [`NEAR_GROUPS`] nearest groups by mean distance (all pairs when there are few groups). A
/// median is below the mean unless a few pairs are far slower than the rest, so the least
/// median is among the least means; the means take one pass over the matrix, the medians a
/// selection each.
fn near_group_pairs(
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
    let mut pairs: Vec<(usize, usize)> = members
        .par_iter()
        .enumerate()
        .map_init(
            || vec![0.0f64; k],
            |sums, (g, group)| {
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
            },
        )
        .flatten()
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

/// A group of two whose distance is this many times the usual pair's is a slow pair.
const SLOW_PAIR: f64 = 1.5;

/// The median distance between two groups (from every `step`-th row of the first when the two
/// are large).
fn median_between(m: &Array2<f64>, a: &[usize], b: &[usize], values: &mut Vec<f64>) -> f64 {
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
const PAIR_SAMPLES: usize = 20_000;

/// Rows of a group read at most for its mean distances to the other groups.
const MEAN_ROWS: usize = 32;

/// Distances inside groups sampled at most for the percentile of a separation.
const WITHIN_SAMPLES: usize = 200_000;

/// How much slower inside than towards other groups a group may be.
const MAX_INVERSION: f64 = 1.1;

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
fn cut_sizes(d: &Dendrogram, p: &AutoParams) -> Vec<usize> {
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
fn best_split(m: &Array2<f64>, p: &AutoParams) -> Option<Split> {
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
    let mut passing: Vec<(&Array2<f64>, Split)> = candidates
        .into_par_iter()
        .map_init(Vec::new, |within, (kind, view, mut labels)| {
            absorb_singletons(m, &mut labels);
            let s = separation(view, &labels, scale, p, within, kind);
            (s >= p.min_ratio).then_some((
                view,
                Split {
                    labels,
                    separation: s,
                },
            ))
        })
        .flatten()
        .collect();
    // The costly checks last, best first: usually only the winner is checked.
    passing.sort_by(|a, b| b.1.separation.total_cmp(&a.1.separation));
    passing
        .into_iter()
        .find(|(view, s)| !inverted(m, &s.labels, p) && distinct(view, &s.labels))
        .map(|(_, s)| s)
}

/// How often a distance between a group and its nearest group must exceed a distance inside a
/// group (each compared with each) for the groups to be distinct.
const MIN_DISTINCT: f64 = 0.9;

/// Whether the groups stand apart in the bulk of the distances of the view they were found in,
/// not only in their medians and quartiles: a distance between a group and its nearest group
/// (by median) exceeds a distance inside a group at least 90 % of the time. Medians of a few
/// values can differ by chance: on 12 ranks measured at 0 B over an oversubscribed emulated
/// network (round trips of 22-150 us with no structure), groups of two picked by the
/// dendrogram have medians 1.2-5x apart, yet their distances overlap.
fn distinct(m: &Array2<f64>, labels: &[usize]) -> bool {
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
    let inside_total: usize = members
        .iter()
        .map(|g| g.len() * g.len().saturating_sub(1) / 2)
        .sum();
    let inside = sampled(
        &mut members.iter().flat_map(|g| {
            g.iter()
                .enumerate()
                .flat_map(move |(a, &i)| g[a + 1..].iter().map(move |&j| (i, j)))
        }),
        inside_total,
    );
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

pub(crate) fn sub_matrix(d: &Array2<f64>, members: &[usize]) -> Array2<f64> {
    Array2::from_shape_fn((members.len(), members.len()), |(a, b)| {
        d[[members[a], members[b]]]
    })
}

fn groups_of(members: &[usize], labels: &[usize]) -> Vec<Vec<usize>> {
    let k = labels.iter().max().map_or(0, |&x| x + 1);
    let mut out = vec![Vec::new(); k];
    for (i, &l) in labels.iter().enumerate() {
        out[l].push(members[i]);
    }
    out.retain(|g| !g.is_empty());
    out
}

/// The hierarchy `auto` finds in a distance matrix.
pub fn auto(d: &Array2<f64>, p: &AutoParams) -> Tree {
    auto_with_outliers(d, p).0
}

/// The hierarchy `auto` finds, and the ranks it found slow (with how many times slower),
/// whose slowness it divided out before looking for levels.
pub fn auto_with_outliers(d: &Array2<f64>, p: &AutoParams) -> (Tree, Vec<(usize, f64)>) {
    let all: Vec<usize> = (0..d.nrows()).collect();
    // Every pair touching a slow rank is divided by its slowness, so that slow nodes do not
    // lift their pairs over the next level's distances.
    let slow = slow_ranks(d);
    let owned;
    let m = if slow.is_empty() && d.is_standard_layout() {
        d
    } else {
        // Rows are read as slices: a column-major matrix is copied once.
        owned = without_slowness(d, &slow);
        &owned
    };
    let tree = split(m, &all, p);
    // Slow groups the ranks' medians could not tell, or told only in part (ranks of a slow
    // node near the threshold): judged on the distances as measured, in the groups found;
    // their slowness replaces the ranks' own, and the levels are looked for again.
    let groups = slow_groups(d, &tree);
    // Nothing new: no slow group, or the same ranks about as slow as the ranks' medians said.
    let known = |&(r, f): &(usize, f64)| {
        slow.iter()
            .any(|&(q, g)| q == r && (f / g - 1.0).abs() < 0.05)
    };
    if groups.is_empty() || (groups.len() == slow.len() && groups.iter().all(known)) {
        return (tree, slow);
    }
    let mut all_slow = groups;
    for (r, f) in slow {
        if !all_slow.iter().any(|s| s.0 == r) {
            all_slow.push((r, f));
        }
    }
    all_slow.sort_by_key(|s| s.0);
    let m = without_slowness(d, &all_slow);
    (split(&m, &all, p), all_slow)
}

/// A rank whose median distance is this many times the ranks' usual median is slow.
const SLOW_RANK: f64 = 1.15;

/// Ranks slow towards every other rank (a slow node, a rank on a busy core), with how many
/// times slower: a rank's median distance over the median of all ranks' medians, when at
/// least 1.15 and for at most a third of the ranks. In a machine whose ranks all see the same
/// mix of levels, a rank's median distance is the same for every rank; a slow node's ranks
/// see it multiplied. (Ranks of a smaller node see more of the far levels and are not
/// flagged unless their median moves past 15 %.) When more of the machine is slow, the
/// medians no longer tell: [`auto`] then compares the groups it found (see `slow_groups`).
pub fn slow_ranks(d: &Array2<f64>) -> Vec<(usize, f64)> {
    let n = d.nrows();
    if n < 8 {
        return Vec::new();
    }
    let medians: Vec<f64> = (0..n)
        .into_par_iter()
        .map(|i| {
            let mut row: Vec<f64> = (0..n).filter(|&j| j != i).map(|j| d[[i, j]]).collect();
            median(&mut row)
        })
        .collect();
    let mut sorted = medians.clone();
    let usual = median(&mut sorted);
    if usual.is_nan() || usual <= 0.0 {
        return Vec::new();
    }
    let slow: Vec<(usize, f64)> = medians
        .iter()
        .enumerate()
        .map(|(i, &m)| (i, m / usual))
        .filter(|&(_, f)| f >= SLOW_RANK)
        .collect();
    if slow.len() * 3 > n {
        return Vec::new();
    }
    slow
}

/// Ranks of the finest groups of `tree` that are slow inside: a group of three or more ranks
/// whose median distance inside is at least 1.15 times the usual group's (the lower quartile
/// over such groups, at least three of them), for at most half of the ranks. Up to half of the
/// nodes of a machine may be slow this way, where the ranks' medians cannot tell (a slow rank
/// and a normal one then see the same mix of slow pairs).
fn slow_groups(d: &Array2<f64>, tree: &Tree) -> Vec<(usize, f64)> {
    let mut leaves = Vec::new();
    collect_leaves(tree, &mut leaves);
    let mut inside: Vec<(Vec<usize>, f64)> = leaves
        .into_iter()
        .filter(|g| g.len() >= 3)
        .map(|g| {
            let mut v: Vec<f64> = g
                .iter()
                .enumerate()
                .flat_map(|(a, &i)| g[a + 1..].iter().map(move |&j| (i, j)))
                .map(|(i, j)| d[[i, j]])
                .collect();
            let m = median(&mut v);
            (g, m)
        })
        .collect();
    if inside.len() < 3 {
        return Vec::new();
    }
    // The usual group is a faster one (the lower quartile), so that up to half may be slow.
    let mut medians: Vec<f64> = inside.iter().map(|g| g.1).collect();
    let usual = quantile(&mut medians, 0.25);
    if usual.is_nan() || usual <= 0.0 {
        return Vec::new();
    }
    inside.retain(|g| g.1 >= SLOW_RANK * usual);
    let slow: Vec<(usize, f64)> = inside
        .iter()
        .flat_map(|(g, m)| g.iter().map(move |&r| (r, m / usual)))
        .collect();
    if slow.len() * 2 > d.nrows() {
        return Vec::new();
    }
    slow
}

fn collect_leaves(tree: &Tree, out: &mut Vec<Vec<usize>>) {
    match tree {
        Tree::Leaf(r) => out.push(r.clone()),
        Tree::Node { children, .. } => children.iter().for_each(|c| collect_leaves(c, out)),
    }
}

/// `d` with every pair touching a slow rank divided by the larger slowness of its two ranks.
fn without_slowness(d: &Array2<f64>, slow: &[(usize, f64)]) -> Array2<f64> {
    let mut m = d.as_standard_layout().into_owned();
    let n = m.nrows();
    let mut factor = vec![1.0; n];
    for &(r, f) in slow {
        factor[r] = f;
    }
    for i in 0..n {
        for j in 0..n {
            let f = factor[i].max(factor[j]);
            if f > 1.0 {
                m[[i, j]] /= f;
            }
        }
    }
    m
}

fn split(d: &Array2<f64>, members: &[usize], p: &AutoParams) -> Tree {
    // The whole matrix is used as it is; only subsets are copied.
    let whole = members.len() == d.nrows() && members.iter().enumerate().all(|(k, &r)| k == r);
    let sub;
    let m = if whole {
        d
    } else {
        sub = sub_matrix(d, members);
        &sub
    };
    let Some(s) = best_split(m, p) else {
        return Tree::Leaf(members.to_vec());
    };
    let groups = groups_of(members, &s.labels);
    let mut kids: Vec<Tree> = groups.par_iter().map(|g| split(d, g, p)).collect();
    outvoted(&mut kids);
    merge_up(d, groups, kids, s.separation, p)
}

/// Levels found inside fewer than half of the groups of one size (nodes alike): not a level of
/// the machine but a pattern a few groups happen to show, so those groups stay whole. Groups
/// of different sizes (P-cores and E-cores) are not compared.
fn outvoted(kids: &mut [Tree]) {
    let mut sizes: Vec<usize> = kids.iter().map(|k| k.ranks().len()).collect();
    sizes.sort_unstable();
    sizes.dedup();
    for size in sizes {
        let alike: Vec<usize> = (0..kids.len())
            .filter(|&k| kids[k].ranks().len() == size)
            .collect();
        let split: Vec<usize> = alike
            .iter()
            .copied()
            .filter(|&k| matches!(kids[k], Tree::Node { .. }))
            .collect();
        if alike.len() >= 2 && !split.is_empty() && 2 * split.len() < alike.len() {
            for k in split {
                kids[k] = Tree::Leaf(kids[k].ranks());
            }
        }
    }
}

/// Merges groups into coarser groups while the distances between groups show a level.
fn merge_up(
    d: &Array2<f64>,
    mut groups: Vec<Vec<usize>>,
    mut kids: Vec<Tree>,
    separation: f64,
    p: &AutoParams,
) -> Tree {
    let mut node = Tree::Node {
        children: kids.clone(),
        separation: Some(separation),
    };
    while groups.len() >= 4 {
        let k = groups.len();
        // The median distance between each two groups (d is symmetric: each pair once), the
        // pairs of groups on every core.
        let pairs: Vec<(usize, usize)> = (0..k)
            .flat_map(|a| (a + 1..k).map(move |b| (a, b)))
            .collect();
        let medians: Vec<f64> = pairs
            .par_iter()
            .map_init(Vec::new, |v, &(a, b)| {
                v.clear();
                for &i in &groups[a] {
                    let row = d.row(i);
                    v.extend(groups[b].iter().map(|&j| row[j]));
                }
                median(v)
            })
            .collect();
        let mut g = Array2::zeros((k, k));
        for (&(a, b), &x) in pairs.iter().zip(&medians) {
            g[[a, b]] = x;
            g[[b, a]] = x;
        }
        let Some(s) = best_split(&g, p) else { break };
        let supers = groups_of(&(0..k).collect::<Vec<_>>(), &s.labels);
        let mut new_groups = Vec::with_capacity(supers.len());
        let mut new_kids = Vec::with_capacity(supers.len());
        for sg in supers {
            if sg.len() == 1 {
                new_groups.push(groups[sg[0]].clone());
                new_kids.push(kids[sg[0]].clone());
            } else {
                new_groups.push(sg.iter().flat_map(|&x| groups[x].iter().copied()).collect());
                new_kids.push(Tree::Node {
                    children: sg.iter().map(|&x| kids[x].clone()).collect(),
                    separation: Some(separation),
                });
            }
        }
        groups = new_groups;
        kids = new_kids;
        node = Tree::Node {
            children: kids.clone(),
            separation: Some(s.separation),
        };
    }
    node
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two groups of `size` at distance 1 inside and `far` across, with a little structure.
    fn two_groups(size: usize, far: f64) -> Array2<f64> {
        let n = 2 * size;
        Array2::from_shape_fn((n, n), |(i, j)| {
            if i == j {
                0.0
            } else if i / size == j / size {
                1.0 + 0.01 * ((i + j) % 3) as f64
            } else {
                far
            }
        })
    }

    #[test]
    fn finds_two_groups_and_nothing_in_flat_data() {
        let t = auto(&two_groups(4, 3.0), &AutoParams::default());
        let Tree::Node {
            children,
            separation,
        } = &t
        else {
            panic!("{t:?}")
        };
        assert_eq!(children.len(), 2);
        assert_eq!(children[0], Tree::Leaf(vec![0, 1, 2, 3]));
        assert!(separation.unwrap() > 2.5);
        let flat = Array2::from_shape_fn((8, 8), |(i, j)| {
            if i == j {
                0.0
            } else {
                1.0 + 0.001 * ((i * j) % 5) as f64
            }
        });
        assert!(matches!(auto(&flat, &AutoParams::default()), Tree::Leaf(_)));
    }

    #[test]
    fn a_gap_below_the_noise_floor_is_no_level() {
        // Groups 2 % apart: a ratio of 1.02 and a gap far below 20 % of the scale.
        assert!(matches!(
            auto(&two_groups(4, 1.04), &AutoParams::default()),
            Tree::Leaf(_)
        ));
    }

    /// Ranks in groups `group_of` (one label per rank), `near` apart inside a group and `far`
    /// between groups, each distance off by up to 1 % (a fixed pattern, symmetric).
    fn groups_with_noise(group_of: &[usize], near: f64, far: f64) -> Array2<f64> {
        let n = group_of.len();
        Array2::from_shape_fn((n, n), |(i, j)| {
            let (a, b) = (i.min(j), i.max(j));
            let off = ((a * 7 + b * 13 + a * b) % 11) as f64 / 10.0 - 0.5;
            let base = if group_of[i] == group_of[j] {
                near
            } else {
                far
            };
            if i == j {
                0.0
            } else {
                base * (1.0 + 0.02 * off)
            }
        })
    }

    #[test]
    fn a_narrow_gap_far_above_the_noise_is_a_level_of_groups_alike() {
        // The SMT siblings of a CCD: 8 pairs at 0.37 us, 0.46 us between cores, 1 % noise. The
        // gap (about 0.085 us) is under a fifth of the median (0.092 us), but some 30 times the
        // noise of the distances between pairs.
        let pairs: Vec<usize> = (0..16).map(|r| r / 2).collect();
        let d = groups_with_noise(&pairs, 0.37, 0.46);
        let t = auto(&d, &AutoParams::default());
        let Tree::Node { children, .. } = &t else {
            panic!("{t:?}")
        };
        let mut groups: Vec<Vec<usize>> = children.iter().map(Tree::ranks).collect();
        groups.iter_mut().for_each(|g| g.sort_unstable());
        groups.sort();
        let expected: Vec<Vec<usize>> = (0..8).map(|k| vec![2 * k, 2 * k + 1]).collect();
        assert_eq!(groups, expected);
        // Asking for more than the noise allows: no level.
        let strict = AutoParams {
            min_noise_gaps: 50.0,
            ..AutoParams::default()
        };
        assert!(matches!(auto(&d, &strict), Tree::Leaf(_)));
        // Groups of different sizes (six pairs and a three) need the whole gap.
        let mixed: Vec<usize> = (0..15).map(|r| (r / 2).min(6)).collect();
        let d = groups_with_noise(&mixed, 0.37, 0.46);
        assert!(matches!(auto(&d, &AutoParams::default()), Tree::Leaf(_)));
    }

    #[test]
    fn ranks_sharing_a_core_are_a_level() {
        // 8 ranks on 4 cores, rank r on core r % 4: core mates are slow to each other only
        // (3.5 us against 0.8 us), as measured with more ranks than cores.
        let d = Array2::from_shape_fn((8, 8), |(i, j)| {
            if i == j {
                0.0
            } else if i % 4 == j % 4 {
                3.5 + 0.01 * (i % 3) as f64
            } else {
                0.8 + 0.01 * ((i + j) % 3) as f64
            }
        });
        let t = auto(&d, &AutoParams::default());
        let Tree::Node { children, .. } = &t else {
            panic!("{t:?}")
        };
        let mut groups: Vec<Vec<usize>> = children
            .iter()
            .map(|c| {
                let mut r = c.ranks();
                r.sort();
                r
            })
            .collect();
        groups.sort();
        assert_eq!(groups, vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]);
    }

    #[test]
    fn heavy_tailed_noise_on_few_ranks_is_no_level() {
        // 12 ranks, round trips drawn from two modes with no structure (22-36 us, or 57-150
        // us), as 0-byte pings over an oversubscribed emulated network give: groups of two
        // picked from the low values have medians far apart, but their distances overlap.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut draw = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..20 {
            let mut d = Array2::zeros((12, 12));
            for i in 0..12 {
                for j in i + 1..12 {
                    let v = if draw() < 0.5 {
                        22.0 + 14.0 * draw()
                    } else {
                        57.0 + 93.0 * draw()
                    };
                    d[[i, j]] = v;
                    d[[j, i]] = v;
                }
            }
            let t = auto(&d, &AutoParams::default());
            assert!(matches!(t, Tree::Leaf(_)), "{d:.1}\n{t:?}");
        }
    }

    #[test]
    fn a_slow_rank_is_not_a_level() {
        let mut m = two_groups(4, 3.0);
        for j in 0..8 {
            if j != 5 {
                m[[5, j]] *= 1.8;
                m[[j, 5]] *= 1.8;
            }
        }
        let t = auto(&m, &AutoParams::default());
        let Tree::Node { children, .. } = &t else {
            panic!("{t:?}")
        };
        assert_eq!(children.len(), 2, "{t:?}");
    }
}
