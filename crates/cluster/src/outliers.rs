//! Slow ranks and slow groups, taken out before `auto` looks for levels: every pair touching
//! one is divided by its slowness.

use lgate_stats::quantile;
use ndarray::Array2;
use rayon::prelude::*;

use crate::separation::median;
use crate::tree::Tree;

/// A rank whose median distance is this many times the ranks' usual median is slow.
pub(crate) const SLOW_RANK: f64 = 1.15;

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
