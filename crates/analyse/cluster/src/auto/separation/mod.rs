//! How far apart the groups of a partition stand: the separation `auto` judges a level by,
//! the noise of the distances between groups, and the candidate partitions of a set of ranks
//! (the cuts of an average-linkage dendrogram in the raw and the profile view).

use lgate_stats::quantile;
use ndarray::Array2;
use rayon::prelude::*;

use crate::linkage::{profile_distances, Cuts, Dendrogram, Linkage};
use crate::tree::sub_matrix;

mod candidates;
mod noise;
mod partition;

pub(crate) use candidates::*;
pub(crate) use noise::*;
pub(crate) use partition::*;

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
    /// Whether a level the host medians show whose pairs are too few to decide it at
    /// `pairs_decide` is a doubt too (`measure`: more tests of its pairs would decide it); off
    /// in `cluster`, which keeps such a level as the medians show it.
    pub doubt_undecidable: bool,
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
            doubt_undecidable: false,
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
