//! HDBSCAN (Campello, Moulavi and Sander) on a precomputed distance matrix, keeping the
//! condensed tree so that the hierarchy is not thrown away.
//!
//! Core distance of an item: its distance to its `min_samples`-th nearest item, itself counted.
//! Mutual reachability of two items: the largest of their distance and their core distances.
//! Single linkage on mutual reachability, read from the top with lambda = 1 / distance, gives the
//! condensed tree: a split where both sides hold `min_cluster_size` items makes two clusters;
//! a smaller side's items fall out of the cluster. A cluster's stability is the sum over its
//! items of (lambda when the item left - lambda when the cluster was born); excess of mass
//! selects the clusters whose stability beats that of their selected descendants.

use ndarray::Array2;
use rayon::prelude::*;

use crate::auto::Tree;
use crate::linkage::{Dendrogram, Merge};

/// HDBSCAN's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HdbscanParams {
    /// The least items of a cluster.
    pub min_cluster_size: usize,
    /// The neighbourhood of the core distance, the item itself counted.
    pub min_samples: usize,
}

impl Default for HdbscanParams {
    /// Clusters of 4 items at least, the core distance at the 4th item.
    fn default() -> Self {
        HdbscanParams {
            min_cluster_size: 4,
            min_samples: 4,
        }
    }
}

/// A cluster of the condensed tree.
#[derive(Debug, Clone)]
struct Condensed {
    children: Vec<usize>,
    birth: f64,
    /// Items that left this cluster (not through a child cluster), with the lambda they left at.
    fell: Vec<(usize, f64)>,
    stability: f64,
    size: usize,
}

/// The result of HDBSCAN.
#[derive(Debug, Clone)]
pub struct Hdbscan {
    /// Flat labels of the selected clusters; `None` is noise.
    pub labels: Vec<Option<usize>>,
    /// The condensed tree as a hierarchy: every condensed cluster a node, the items that fell
    /// out of a cluster directly a group of it.
    pub tree: Tree,
}

fn lambda(d: f64) -> f64 {
    if d > 0.0 {
        1.0 / d
    } else {
        f64::INFINITY
    }
}

/// The `k`-th smallest value of `row` (1-based, `total_cmp`'s order): for a small `k` in one
/// pass keeping the `k` smallest so far, else by selection on a copy.
fn kth_smallest(row: ndarray::ArrayView1<f64>, k: usize) -> f64 {
    const KEPT: usize = 32;
    if k > KEPT || k > row.len() {
        let mut row = row.to_vec();
        let (_, kth, _) = row.select_nth_unstable_by(k - 1, f64::total_cmp);
        return *kth;
    }
    let mut least = [0.0f64; KEPT];
    let least = &mut least[..k];
    for (slot, &x) in least.iter_mut().zip(row.iter()) {
        *slot = x;
    }
    least.sort_unstable_by(f64::total_cmp);
    for &x in row.iter().skip(k) {
        if x.total_cmp(&least[k - 1]).is_lt() {
            // Into its place among the k kept; the largest of them leaves.
            let mut at = k - 1;
            while at > 0 && x.total_cmp(&least[at - 1]).is_lt() {
                least[at] = least[at - 1];
                at -= 1;
            }
            least[at] = x;
        }
    }
    least[k - 1]
}

/// Runs HDBSCAN.
pub fn hdbscan(d: &Array2<f64>, p: HdbscanParams) -> Hdbscan {
    let n = d.nrows();
    let mcs = p.min_cluster_size.max(2);
    if n < 2 * mcs {
        return Hdbscan {
            labels: vec![None; n],
            tree: Tree::Leaf((0..n).collect()),
        };
    }
    // Core distances.
    let k = p.min_samples.clamp(1, n);
    let core: Vec<f64> = (0..n)
        .into_par_iter()
        .map(|i| kth_smallest(d.row(i), k))
        .collect();
    // Single linkage of the mutual reachability, computed as each row is read.
    let dendrogram = Dendrogram::single_with(d, |i, j, x| x.max(core[i]).max(core[j]));
    let mut clusters = condense(n, dendrogram.merges(), mcs);
    stabilities(&mut clusters);
    let selected = excess_of_mass(&clusters);
    // Flat labels: every item of a selected cluster.
    let mut labels = vec![None; n];
    let chosen = selected
        .iter()
        .enumerate()
        .filter(|(_, &s)| s)
        .map(|(c, _)| c);
    for (label, c) in chosen.enumerate() {
        let mut st = vec![c];
        while let Some(x) = st.pop() {
            for &(item, _) in &clusters[x].fell {
                labels[item] = Some(label);
            }
            st.extend(clusters[x].children.iter().copied());
        }
    }
    let tree = tree_of(&clusters, 0);
    Hdbscan { labels, tree }
}

/// The condensed tree of the dendrogram of `n` items (`merges`, ids >= n are merges), read
/// from the root down: a split where both sides hold `mcs` items makes two clusters, a smaller
/// side's items fall out of the cluster at the split's lambda. Cluster 0 is the root.
fn condense(n: usize, merges: &[Merge], mcs: usize) -> Vec<Condensed> {
    // Sizes of every dendrogram node.
    let total = n + merges.len();
    let mut size = vec![1usize; total];
    for (t, m) in merges.iter().enumerate() {
        size[n + t] = size[m.a] + size[m.b];
    }
    let items_of = |node: usize| -> Vec<usize> {
        let mut out = Vec::new();
        let mut stack = vec![node];
        while let Some(x) = stack.pop() {
            if x < n {
                out.push(x);
            } else {
                let m = merges[x - n];
                stack.push(m.a);
                stack.push(m.b);
            }
        }
        out
    };
    let root = total - 1;
    let mut clusters = vec![Condensed {
        children: Vec::new(),
        birth: 0.0,
        fell: Vec::new(),
        stability: 0.0,
        size: n,
    }];
    // (dendrogram node, condensed cluster it belongs to)
    let mut stack = vec![(root, 0usize)];
    while let Some((node, c)) = stack.pop() {
        if node < n {
            // A single item reached by descending: it leaves at its last merge's lambda, which the
            // caller recorded; nothing to do here.
            continue;
        }
        let m = merges[node - n];
        let l = lambda(m.height);
        let (a, b) = (m.a, m.b);
        let (big_a, big_b) = (size[a] >= mcs, size[b] >= mcs);
        match (big_a, big_b) {
            (true, true) => {
                for side in [a, b] {
                    let id = clusters.len();
                    clusters.push(Condensed {
                        children: Vec::new(),
                        birth: l,
                        fell: Vec::new(),
                        stability: 0.0,
                        size: size[side],
                    });
                    clusters[c].children.push(id);
                    stack.push((side, id));
                }
            }
            (true, false) | (false, true) => {
                let (keep, drop_side) = if big_a { (a, b) } else { (b, a) };
                for item in items_of(drop_side) {
                    clusters[c].fell.push((item, l));
                }
                stack.push((keep, c));
            }
            (false, false) => {
                for item in items_of(node) {
                    clusters[c].fell.push((item, l));
                }
            }
        }
    }
    clusters
}

/// Each cluster's stability: its items falling out, and its child clusters leaving at their
/// birth.
fn stabilities(clusters: &mut [Condensed]) {
    for c in 0..clusters.len() {
        let birth = clusters[c].birth;
        let mut s: f64 = clusters[c]
            .fell
            .iter()
            .map(|&(_, l)| (l.min(1e300) - birth).max(0.0))
            .sum();
        for &ch in &clusters[c].children {
            s += (clusters[ch].birth - birth).max(0.0) * clusters[ch].size as f64;
        }
        clusters[c].stability = s;
    }
}

/// Excess of mass, bottom up: the clusters whose stability beats that of their selected
/// descendants; the root is never selected (it is everything).
fn excess_of_mass(clusters: &[Condensed]) -> Vec<bool> {
    let mut selected = vec![false; clusters.len()];
    let mut subtree = vec![0.0f64; clusters.len()];
    for c in (1..clusters.len()).rev() {
        let kids: f64 = clusters[c].children.iter().map(|&ch| subtree[ch]).sum();
        if clusters[c].children.is_empty() || clusters[c].stability >= kids {
            selected[c] = true;
            subtree[c] = clusters[c].stability;
            // Deselect descendants.
            let mut st = clusters[c].children.clone();
            while let Some(x) = st.pop() {
                selected[x] = false;
                st.extend(clusters[x].children.iter().copied());
            }
        } else {
            subtree[c] = kids;
        }
    }
    selected
}

/// The condensed tree from cluster `c` down as a hierarchy. A child cluster that splits again
/// within `auto`'s least separation of where it was born (its children born at a distance
/// above its own over 1.2) is a link of a chain, not a group: single linkage joins groups
/// equally far apart one at a time, eight groups of 64 at one distance are seven nested
/// splits, which are one split of eight. Its parts take its place.
fn tree_of(clusters: &[Condensed], c: usize) -> Tree {
    let own: Vec<usize> = clusters[c].fell.iter().map(|&(i, _)| i).collect();
    if clusters[c].children.is_empty() {
        return Tree::Leaf(own);
    }
    let ratio = crate::auto::AutoParams::default().min_ratio;
    // Lambdas are 1 / distance: a split within the ratio is born below the ratio times later.
    let link = |ch: usize| {
        let split = (clusters[ch].children.iter()).map(|&g| clusters[g].birth);
        let born = clusters[ch].birth;
        split.fold(f64::NAN, f64::min) < born * ratio
    };
    let mut children: Vec<Tree> = Vec::new();
    let mut stack: Vec<usize> = clusters[c].children.iter().rev().copied().collect();
    while let Some(ch) = stack.pop() {
        if link(ch) {
            let own: Vec<usize> = clusters[ch].fell.iter().map(|&(i, _)| i).collect();
            if !own.is_empty() {
                children.push(Tree::Leaf(own));
            }
            stack.extend(clusters[ch].children.iter().rev());
        } else {
            children.push(tree_of(clusters, ch));
        }
    }
    if !own.is_empty() {
        // Items that left before the split: a group of their own at this level.
        children.push(Tree::Leaf(own));
    }
    Tree::Node {
        children,
        separation: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_matrices::blocks;

    #[test]
    fn the_kth_smallest_is_selections() {
        let values: Vec<f64> = (0..300).map(|i| ((i * 7919) % 97) as f64 / 7.0).collect();
        let row = ndarray::Array1::from(values.clone());
        for k in [1, 2, 4, 16, 32, 33, 300] {
            let mut sorted = values.clone();
            sorted.sort_by(f64::total_cmp);
            assert_eq!(kth_smallest(row.view(), k), sorted[k - 1], "k = {k}");
        }
    }

    #[test]
    fn finds_three_blocks() {
        let d = blocks(&[6, 8, 5], 1.0, 5.0);
        let r = hdbscan(
            &d,
            HdbscanParams {
                min_cluster_size: 3,
                min_samples: 3,
            },
        );
        let l: Vec<usize> = r.labels.iter().map(|x| x.expect("no noise")).collect();
        assert!(l[..6].iter().all(|&x| x == l[0]));
        assert!(l[6..14].iter().all(|&x| x == l[6]));
        assert!(l[14..].iter().all(|&x| x == l[14]));
        assert!(l[0] != l[6] && l[6] != l[14] && l[0] != l[14]);
    }

    #[test]
    fn keeps_the_hierarchy() {
        // Two groups of two blocks each.
        let n = 24;
        let d = Array2::from_shape_fn((n, n), |(i, j)| {
            if i == j {
                0.0
            } else if i / 12 != j / 12 {
                10.0
            } else if i / 6 != j / 6 {
                4.0
            } else {
                1.0 + 0.01 * ((i + j) % 3) as f64
            }
        });
        let r = hdbscan(
            &d,
            HdbscanParams {
                min_cluster_size: 4,
                min_samples: 3,
            },
        );
        let Tree::Node { children, .. } = &r.tree else {
            panic!("{:?}", r.tree)
        };
        assert_eq!(children.len(), 2);
        let mut halves: Vec<Vec<usize>> = children
            .iter()
            .map(|c| {
                let mut v = c.ranks();
                v.sort();
                v
            })
            .collect();
        halves.sort();
        assert_eq!(halves[0], (0..12).collect::<Vec<_>>());
        assert!(
            matches!(&children[0], Tree::Node { .. }),
            "the blocks below: {:?}",
            children[0]
        );
    }

    #[test]
    fn too_few_items_are_noise() {
        let d = blocks(&[3], 1.0, 5.0);
        let r = hdbscan(
            &d,
            HdbscanParams {
                min_cluster_size: 5,
                min_samples: 2,
            },
        );
        assert!(r.labels.iter().all(Option::is_none));
    }
}
