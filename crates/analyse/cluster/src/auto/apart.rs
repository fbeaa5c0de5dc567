//! Whether the groups of a partition stand apart (the medians of the pairs between and
//! inside them), and hierarchies with the splits that do not undone.

use ndarray::Array2;

use lgate_stats::median;

use crate::auto::{AutoParams, Tree};

/// Whether the groups of a partition (one label per item) stand apart: the median distance
/// between groups at least the least separation `auto` asks of a level (1.2) times the median
/// inside them. Medians, not `auto`'s finer rule, so that a slow pair inside a group (1.1x the
/// distance between nodes in a simulated fram run) does not hide the whole partition.
pub(crate) fn stands_apart(d: ndarray::ArrayView2<f64>, labels: &[usize]) -> bool {
    let members: Vec<usize> = (0..labels.len()).collect();
    stands_apart_in(d, &members, labels)
}

/// [`stands_apart`] of the items `members` of `d` (labelled in that order), read in place:
/// the pairs inside are gathered for their median, those between only counted against it.
/// The items are taken group by group, so that an item's pairs with the items before it are
/// two runs: those of its own group (inside), those of the groups before (between).
pub(crate) fn stands_apart_in(
    d: ndarray::ArrayView2<f64>,
    members: &[usize],
    labels: &[usize],
) -> bool {
    use rayon::prelude::*;
    let n = labels.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| labels[i]);
    // Each item's column in `d`, in that order, and where its group starts.
    let cols: Vec<usize> = order.iter().map(|&i| members[i]).collect();
    let mut first = vec![0; n];
    for p in 1..n {
        first[p] = if labels[order[p]] == labels[order[p - 1]] {
            first[p - 1]
        } else {
            p
        };
    }
    // The pairs (p, q < p): those inside the group, written straight into their places.
    let mut inside = vec![0.0; first.iter().enumerate().map(|(p, f)| p - f).sum()];
    let mut rows: Vec<(usize, &mut [f64])> = Vec::with_capacity(n);
    let mut rest = inside.as_mut_slice();
    for (p, &f) in first.iter().enumerate() {
        let (row, tail) = rest.split_at_mut(p - f);
        rows.push((p, row));
        rest = tail;
    }
    rows.into_par_iter().for_each(|(p, to)| {
        let row = d.row(cols[p]);
        for (t, &c) in to.iter_mut().zip(&cols[first[p]..p]) {
            *t = row[c];
        }
    });
    if inside.is_empty() {
        return false;
    }
    let threshold = AutoParams::default().min_ratio * median(&mut inside);
    (0..n)
        .into_par_iter()
        .fold(
            || MedianAtLeast::new(threshold),
            |mut m, p| {
                let row = d.row(cols[p]);
                for &c in &cols[..first[p]] {
                    m.add(row[c]);
                }
                m
            },
        )
        .reduce(|| MedianAtLeast::new(threshold), MedianAtLeast::merge)
        .holds()
}

/// Whether the median of values seen one at a time (as [`median`] takes it) is at least a
/// threshold, without keeping them: those below are counted, and the nearest on each side kept
/// for when the middle falls between them.
struct MedianAtLeast {
    threshold: f64,
    count: usize,
    below: usize,
    max_below: f64,
    min_above: f64,
}

impl MedianAtLeast {
    fn new(threshold: f64) -> Self {
        MedianAtLeast {
            threshold,
            count: 0,
            below: 0,
            max_below: f64::NEG_INFINITY,
            min_above: f64::INFINITY,
        }
    }

    /// The counts of two parts of the values, as one.
    fn merge(self, other: Self) -> Self {
        MedianAtLeast {
            threshold: self.threshold,
            count: self.count + other.count,
            below: self.below + other.below,
            max_below: self.max_below.max(other.max_below),
            min_above: self.min_above.min(other.min_above),
        }
    }

    fn add(&mut self, x: f64) {
        self.count += 1;
        if x.total_cmp(&self.threshold).is_lt() {
            self.below += 1;
            self.max_below = self.max_below.max(x);
        } else {
            self.min_above = self.min_above.min(x);
        }
    }

    /// The verdict; `false` for no values.
    fn holds(&self) -> bool {
        let (n, below) = (self.count, self.below);
        if n == 0 {
            return false;
        }
        if n % 2 == 1 {
            // The median is the middle value.
            return below <= n / 2;
        }
        // The mean of the two middle values, as `quantile` interpolates them.
        match below.cmp(&(n / 2)) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => {
                let (a, b) = (self.max_below, self.min_above);
                a + (b - a) * 0.5 >= self.threshold
            }
        }
    }
}

/// `tree` with every split whose parts do not stand apart ([`stands_apart`]) undone, from the
/// leaves up: a node whose children do not stand apart takes its children's children in their
/// place (single linkage joins groups equally far apart one at a time, a chain of splits that
/// are one split: eight groups of 64 joined at one distance are seven nested nodes, and no
/// node of the chain has parts that stand apart), and becomes one group of all its items once
/// only groups are left. For hierarchies whose splits follow density alone (HDBSCAN's condensed
/// tree), which split a flat matrix of 128 ranks with 1-5 % noise into groups of 91, 33 and 4.
pub(crate) fn prune_weak_splits(d: &Array2<f64>, tree: Tree) -> Tree {
    let Tree::Node {
        children,
        separation,
    } = tree
    else {
        return tree;
    };
    let mut children: Vec<Tree> = (children.into_iter())
        .map(|c| prune_weak_splits(d, c))
        .collect();
    loop {
        if children.len() == 1 {
            return children.pop().expect("one child");
        }
        let node = Tree::Node {
            children,
            separation,
        };
        let (mut members, labels) = node.ranks_by_child();
        let Tree::Node { children: kids, .. } = node else {
            unreachable!("built as a node")
        };
        if kids.len() >= 2 && stands_apart_in(d.view(), &members, &labels) {
            return Tree::Node {
                children: kids,
                separation,
            };
        }
        if kids.iter().all(|c| matches!(c, Tree::Leaf(_))) {
            members.sort_unstable();
            return Tree::Leaf(members);
        }
        // The loosest child split gives its parts in its place: a link of the chain holds the
        // pairs the chain joins (1.8 in the example), a group beside it only its own (0.8).
        let loosest = (kids.iter().enumerate())
            .filter(|(_, c)| matches!(c, Tree::Node { .. }))
            .map(|(k, c)| (k, median_inside(d, &c.ranks())))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(k, _)| k)
            .expect("a child is a node");
        children = Vec::with_capacity(kids.len() + 1);
        for (k, c) in kids.into_iter().enumerate() {
            match c {
                Tree::Node {
                    children: parts, ..
                } if k == loosest => children.extend(parts),
                other => children.push(other),
            }
        }
    }
}

/// The same stream of pseudo-random numbers every time (a linear congruential generator's high
/// bits), to draw pairs.
fn draws() -> impl FnMut() -> usize {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize
    }
}

/// The most pairs [`median_inside`] reads: beyond, an even sample of them.
const INSIDE_SAMPLE: usize = 1 << 14;

/// The median distance between the items `items` of `d` (every pair, or [`INSIDE_SAMPLE`] of
/// them drawn the same way every time when there are more).
fn median_inside(d: &Array2<f64>, items: &[usize]) -> f64 {
    let m = items.len();
    let pairs = m * m.saturating_sub(1) / 2;
    let mut values: Vec<f64> = if pairs <= INSIDE_SAMPLE {
        (0..m)
            .flat_map(|i| (0..i).map(move |j| (i, j)))
            .map(|(i, j)| d[[items[i], items[j]]])
            .collect()
    } else {
        let mut next = draws();
        (0..INSIDE_SAMPLE)
            .map(|_| {
                let i = next() % m;
                let j = (i + 1 + next() % (m - 1)) % m;
                d[[items[i], items[j]]]
            })
            .collect()
    };
    median(&mut values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_judged_against_a_threshold_as_median_says_without_keeping_values() {
        // Seeded values of both parities, with repeats and values at the threshold itself.
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            ((state >> 33) % 9) as f64 * 0.5
        };
        for n in 1..40 {
            let values: Vec<f64> = (0..n).map(|_| next()).collect();
            for t in [0.0, 0.5, 1.0, 1.25, 2.0, 2.2, 4.0, 5.0] {
                let mut m = MedianAtLeast::new(t);
                values.iter().for_each(|&x| m.add(x));
                let want = median(&mut values.clone()) >= t;
                assert_eq!(m.holds(), want, "{values:?} against {t}");
            }
        }
        assert!(!MedianAtLeast::new(1.0).holds());
    }
}
