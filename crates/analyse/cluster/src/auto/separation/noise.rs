//! The noise of the distances between groups, and the pairs of near groups it is taken from.

use super::*;

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
        // Each group's members gathered in increasing order (the sums of a pass over the row,
        // to the last bit), so that the groups' sums run side by side.
        for &i in group.iter().step_by(step) {
            let row = m.row(i);
            for (sum, h) in sums.iter_mut().zip(members) {
                // In a register: a store per value would chain each add to the last.
                *sum = h.iter().fold(*sum, |s, &j| s + row[j]);
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
pub(crate) fn without_slow_pairs(pairs: &mut Vec<f64>) {
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
