//! Slow ranks and slow groups, taken out before `auto` looks for levels: every pair touching
//! one is divided by its slowness.

use lgate_stats::quantile;
use ndarray::Array2;
use rayon::prelude::*;

use crate::separation::{median, pairs_in};
use crate::tree::Tree;

/// A rank whose median distance is this many times the ranks' usual median is slow.
pub(crate) const SLOW_RANK: f64 = 1.15;

/// Ranks slow towards every other rank (a slow node, a rank on a busy core), with how many
/// times slower: a rank's median distance over the median of all ranks' medians, when at
/// least 1.15 and for at most a third of the ranks. In a machine whose ranks all see the same
/// mix of levels, a rank's median distance is the same for every rank; a slow node's ranks
/// see it multiplied. (Ranks of a smaller node see more of the far levels and are not
/// flagged unless their median moves past 15 %.) When more of the machine is slow, the
/// medians no longer tell: [`auto`](fn@crate::auto) then compares the groups it found (see `slow_groups`).
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
    far_groups_kept(d, &medians, slow)
}

/// `slow` without the ranks of groups that are far from the rest rather than slow: candidates
/// near one another (under half their median distance apart) form a group, and a group whose
/// pairs inside, divided by its slowness, would sit below the pairs inside a group of the same
/// size elsewhere (the median of the other ranks' as many nearest distances, over 1.15) is a
/// part of the machine far from the rest (a second socket of fewer cores), not a slow one: a
/// slow node's pairs inside are slowed as much as those leaving it.
fn far_groups_kept(d: &Array2<f64>, medians: &[f64], slow: Vec<(usize, f64)>) -> Vec<(usize, f64)> {
    let n = d.nrows();
    let k = slow.len();
    // Union-find over the candidates, joined where near one another.
    let mut parent: Vec<usize> = (0..k).collect();
    fn root(p: &mut [usize], mut a: usize) -> usize {
        while p[a] != a {
            p[a] = p[p[a]];
            a = p[a];
        }
        a
    }
    for a in 0..k {
        for b in a + 1..k {
            let (i, j) = (slow[a].0, slow[b].0);
            if d[[i, j]] <= 0.5 * medians[i].max(medians[j]) {
                let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
                parent[ra] = rb;
            }
        }
    }
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); k];
    for a in 0..k {
        let r = root(&mut parent, a);
        groups[r].push(a);
    }
    let candidate: Vec<bool> = {
        let mut c = vec![false; n];
        slow.iter().for_each(|&(r, _)| c[r] = true);
        c
    };
    let mut far = vec![false; k];
    let mut usual_by_size = std::collections::HashMap::new();
    for g in groups.iter().filter(|g| g.len() >= 2) {
        let ranks: Vec<usize> = g.iter().map(|&a| slow[a].0).collect();
        let mut inside: Vec<f64> = pairs_in(d, &ranks).collect();
        let mut factors: Vec<f64> = g.iter().map(|&a| slow[a].1).collect();
        let scaled = median(&mut inside) / median(&mut factors);
        // What a group of as many ranks has inside elsewhere: the other ranks' nearest.
        let usual = *usual_by_size
            .entry(g.len())
            .or_insert_with(|| usual_nearest(d, &candidate, g.len() - 1));
        if usual.is_finite() && scaled < usual / SLOW_RANK {
            g.iter().for_each(|&a| far[a] = true);
        }
    }
    slow.into_iter()
        .zip(far)
        .filter(|(_, far)| !far)
        .map(|(s, _)| s)
        .collect()
}

/// The median over the ranks not in `skip` of the median of each one's `near` nearest
/// distances.
fn usual_nearest(d: &Array2<f64>, skip: &[bool], near: usize) -> f64 {
    let n = d.nrows();
    let mut usual: Vec<f64> = (0..n)
        .into_par_iter()
        .filter(|&i| !skip[i])
        .map(|i| {
            let mut row: Vec<f64> = (0..n).filter(|&j| j != i).map(|j| d[[i, j]]).collect();
            if near < row.len() {
                row.select_nth_unstable_by(near - 1, f64::total_cmp);
                row.truncate(near);
            }
            median(&mut row)
        })
        .collect();
    median(&mut usual)
}

/// Ranks of the finest groups of `tree` that are slow inside: a group of three or more ranks
/// whose median distance inside is at least 1.15 times the usual group's (the lower quartile
/// over such groups, at least three of them), for at most half of the ranks. Up to half of the
/// nodes of a machine may be slow this way, where the ranks' medians cannot tell (a slow rank
/// and a normal one then see the same mix of slow pairs).
pub(crate) fn slow_groups(d: &Array2<f64>, tree: &Tree) -> Vec<(usize, f64)> {
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

pub(crate) fn collect_leaves(tree: &Tree, out: &mut Vec<Vec<usize>>) {
    match tree {
        Tree::Leaf(r) => out.push(r.clone()),
        Tree::Node { children, .. } => children.iter().for_each(|c| collect_leaves(c, out)),
    }
}

/// `d` with every pair touching a slow rank divided by the larger slowness of its two ranks.
pub(crate) fn without_slowness(d: &Array2<f64>, slow: &[(usize, f64)]) -> Array2<f64> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Two groups (`sizes`) `between` apart, 1.0 inside, with a small deterministic jitter;
    /// pairs touching a rank of `slow` multiplied by `factor`.
    fn two_groups(sizes: (usize, usize), between: f64, slow: &[usize], factor: f64) -> Array2<f64> {
        let n = sizes.0 + sizes.1;
        let group = |r: usize| usize::from(r >= sizes.0);
        Array2::from_shape_fn((n, n), |(i, j)| {
            if i == j {
                return 0.0;
            }
            let base = if group(i) == group(j) { 1.0 } else { between };
            let jitter = 1.0 + 0.02 * (((i * 7 + j * 7) % 5) as f64 - 2.0) / 2.0;
            let f = if slow.contains(&i) || slow.contains(&j) {
                factor
            } else {
                1.0
            };
            base * jitter * f
        })
    }

    #[test]
    fn a_small_group_far_from_the_rest_is_not_slow() {
        // A second socket of 6 cores beside one of 22 (a derived Broadwell matrix lost its
        // socket level this way): its ranks' medians are 2.8x the usual, its pairs inside not.
        let d = two_groups((22, 6), 2.8, &[], 1.0);
        assert_eq!(slow_ranks(&d), Vec::new());
    }

    #[test]
    fn a_slow_node_and_a_slow_rank_stay_slow() {
        // Four nodes of 8: node 3 1.5x slower on every pair, itself included.
        let n = 32;
        let d = Array2::from_shape_fn((n, n), |(i, j)| {
            if i == j {
                return 0.0;
            }
            let base = if i / 8 == j / 8 { 0.5 } else { 1.5 };
            let f = if i / 8 == 3 || j / 8 == 3 { 1.5 } else { 1.0 };
            base * f * (1.0 + 0.01 * ((i + j) % 3) as f64)
        });
        let slow: Vec<usize> = slow_ranks(&d).into_iter().map(|s| s.0).collect();
        assert_eq!(slow, (24..32).collect::<Vec<_>>());
        // One rank on a busy core among one group.
        let d = two_groups((16, 0), 1.0, &[5], 1.6);
        let slow: Vec<usize> = slow_ranks(&d).into_iter().map(|s| s.0).collect();
        assert_eq!(slow, vec![5]);
    }
}
