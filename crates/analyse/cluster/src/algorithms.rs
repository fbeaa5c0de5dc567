//! The other clustering algorithms, each on the precomputed distance matrix, each returning a
//! [`Tree`]: flat ones a single level, SSSTree a hierarchy.

use ndarray::Array2;

use crate::apart::{stands_apart, stands_apart_in};
use crate::auto::Tree;
use crate::linkage::{Dendrogram, Linkage};

/// A partition (one label per item) as a one-level tree; noise label `None` is a singleton.
pub fn tree_of_labels(labels: &[Option<usize>]) -> Tree {
    let k = labels.iter().flatten().max().map_or(0, |&x| x + 1);
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); k];
    let mut singles = Vec::new();
    for (i, l) in labels.iter().enumerate() {
        match l {
            Some(g) => groups[*g].push(i),
            None => singles.push(vec![i]),
        }
    }
    groups.retain(|g| !g.is_empty());
    groups.extend(singles);
    groups.sort_by_key(|g| g[0]);
    if groups.len() <= 1 {
        return Tree::Leaf((0..labels.len()).collect());
    }
    Tree::Node {
        children: groups.into_iter().map(Tree::Leaf).collect(),
        separation: None,
    }
}

fn some(labels: Vec<usize>) -> Vec<Option<usize>> {
    labels.into_iter().map(Some).collect()
}

/// Agglomerative clustering cut into `k` clusters or at `height`.
pub fn agglomerative(
    d: &Array2<f64>,
    linkage: Linkage,
    k: Option<usize>,
    height: Option<f64>,
) -> Tree {
    let dendrogram = Dendrogram::new(d, linkage);
    let labels = match (k, height) {
        (Some(k), _) => dendrogram.cut(k),
        (None, Some(h)) => dendrogram.cut_at(h),
        (None, None) => vec![0; d.nrows()],
    };
    tree_of_labels(&some(labels))
}

/// Connected components of the graph joining items closer than `threshold`.
pub fn components(d: &Array2<f64>, threshold: f64) -> Tree {
    let n = d.nrows();
    let mut label = vec![usize::MAX; n];
    let mut next = 0;
    for start in 0..n {
        if label[start] != usize::MAX {
            continue;
        }
        let mut stack = vec![start];
        label[start] = next;
        while let Some(i) = stack.pop() {
            for j in 0..n {
                if label[j] == usize::MAX && d[[i, j]] < threshold {
                    label[j] = next;
                    stack.push(j);
                }
            }
        }
        next += 1;
    }
    tree_of_labels(&some(label))
}

/// DBSCAN: items with at least `min_points` items (themselves included) within `eps` are core
/// items; core items within `eps` of each other share a cluster, and other items within `eps` of
/// a core item join it; the rest is noise, each a group of its own.
pub fn dbscan(d: &Array2<f64>, eps: f64, min_points: usize) -> Tree {
    let n = d.nrows();
    let neighbours: Vec<Vec<usize>> = (0..n)
        .map(|i| (0..n).filter(|&j| d[[i, j]] <= eps).collect())
        .collect();
    let core: Vec<bool> = neighbours.iter().map(|nb| nb.len() >= min_points).collect();
    let mut label: Vec<Option<usize>> = vec![None; n];
    let mut next = 0;
    for start in 0..n {
        if !core[start] || label[start].is_some() {
            continue;
        }
        label[start] = Some(next);
        let mut stack = vec![start];
        while let Some(i) = stack.pop() {
            for &j in &neighbours[i] {
                if label[j].is_none() {
                    label[j] = Some(next);
                    if core[j] {
                        stack.push(j);
                    }
                }
            }
        }
        next += 1;
    }
    tree_of_labels(&label)
}

/// The result of k-medoids.
#[derive(Debug, Clone, PartialEq)]
pub struct Medoids {
    /// The medoid items.
    pub medoids: Vec<usize>,
    /// Each item's medoid index.
    pub labels: Vec<usize>,
    /// The sum of distances to the nearest medoid.
    pub loss: f64,
}

/// Every item's nearest and second nearest medoid (indices into the medoids) and distances.
struct Assignment {
    nearest: Vec<usize>,
    second: Vec<usize>,
    d1: Vec<f64>,
    d2: Vec<f64>,
}

impl Assignment {
    /// Nearest and second nearest medoid of every item.
    fn new(d: &Array2<f64>, medoids: &[usize]) -> Self {
        let n = d.nrows();
        let mut a = Assignment {
            nearest: vec![0; n],
            second: vec![0; n],
            d1: vec![f64::INFINITY; n],
            d2: vec![f64::INFINITY; n],
        };
        // Medoid by medoid over its row (d is symmetric): memory order, not a stride per item.
        for (i, &m) in medoids.iter().enumerate() {
            let row = d.row(m);
            for o in 0..n {
                a.offer(o, i, row[o]);
            }
        }
        a
    }

    /// Medoid `i` at distance `x` from item `o`, taken as nearest or second if it is nearer.
    fn offer(&mut self, o: usize, i: usize, x: f64) {
        if x < self.d1[o] {
            self.d2[o] = self.d1[o];
            self.second[o] = self.nearest[o];
            self.d1[o] = x;
            self.nearest[o] = i;
        } else if x < self.d2[o] {
            self.d2[o] = x;
            self.second[o] = i;
        }
    }

    /// The nearest and second nearest medoid of `items` again from every medoid, medoid by
    /// medoid over its row (d is symmetric): the items of a group lie together in each row,
    /// where one item's row would be read at k places apart.
    fn rescan(&mut self, d: &Array2<f64>, medoids: &[usize], items: &[usize]) {
        for &o in items {
            self.d1[o] = f64::INFINITY;
            self.d2[o] = f64::INFINITY;
        }
        for (i, &m) in medoids.iter().enumerate() {
            let row = d.row(m);
            for &o in items {
                self.offer(o, i, row[o]);
            }
        }
    }

    /// After medoid `i` became item `c`: only items that had `i` as nearest or second, or that
    /// `c` is near, change (FasterPAM's update, O(n) plus O(k) per item that lost a medoid).
    fn swapped(&mut self, d: &Array2<f64>, medoids: &[usize], i: usize, c: usize) {
        let row_c = d.row(c);
        // Items that lost a medoid and are looked at again after.
        let mut again = Vec::new();
        for o in 0..row_c.len() {
            let x = row_c[o];
            if self.nearest[o] == i {
                if x <= self.d2[o] {
                    // The new medoid in the old one's place is still the nearest.
                    self.d1[o] = x;
                } else {
                    again.push(o);
                }
            } else if x < self.d1[o] {
                self.d2[o] = self.d1[o];
                self.second[o] = self.nearest[o];
                self.d1[o] = x;
                self.nearest[o] = i;
            } else if self.second[o] == i {
                if x <= self.d2[o] {
                    self.d2[o] = x;
                } else {
                    again.push(o);
                }
            } else if x < self.d2[o] {
                self.d2[o] = x;
                self.second[o] = i;
            }
        }
        self.rescan(d, medoids, &again);
    }
}

/// FasterPAM (Schubert and Rousseeuw, 2021): k medoids from a seeded random start (as its
/// authors recommend: the eager swaps make a greedy start unnecessary), improved by eager swaps
/// whose change in total deviation is computed for all medoids at once.
pub fn faster_pam(d: &Array2<f64>, k: usize) -> Medoids {
    use rand::seq::index::sample;
    use rand::SeedableRng;
    let n = d.nrows();
    let k = k.clamp(1, n.max(1));
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x6b6d_6564_6f69_6473);
    let mut medoids: Vec<usize> = sample(&mut rng, n, k).into_vec();
    medoids.sort_unstable();
    let mut a = Assignment::new(d, &medoids);
    let removal = |a: &Assignment| -> Vec<f64> {
        let mut r = vec![0.0; k];
        for o in 0..n {
            r[a.nearest[o]] += a.d2[o] - a.d1[o];
        }
        r
    };
    let mut loss_removal = removal(&a);
    // The change in loss of swapping candidate `c` in, and the medoid it replaces, against the
    // assignment as it stands (`None` for a medoid).
    let gain = |a: &Assignment, medoids: &[usize], loss_removal: &[f64], c: usize| {
        if medoids.contains(&c) {
            return None;
        }
        let mut delta = loss_removal.to_vec();
        let mut add = 0.0;
        // d is symmetric: row c holds d(o, c) for every o, in memory order.
        let row_c = d.row(c);
        let row_c = row_c.as_slice().expect("a standard-layout matrix");
        let items = row_c.iter().zip(&a.d1).zip(&a.d2).zip(&a.nearest);
        for (((&doc, &d1), &d2), &nearest) in items {
            if doc < d1 {
                add += doc - d1;
                delta[nearest] += d1 - d2;
            } else if doc < d2 {
                delta[nearest] += doc - d2;
            }
        }
        let (i, best) = delta
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, &v)| (i, v))
            .expect("k >= 1");
        Some((i, best + add))
    };
    // Candidates are weighed a batch at a time on every core, against the same assignment; the
    // first in order that lowers the loss is swapped in and the next batch starts after it: the
    // swaps, and so the medoids, are those of weighing one candidate at a time.
    let batch = if n >= 1024 {
        2 * rayon::current_num_threads()
    } else {
        1
    };
    // On a worker of the pool, so that each batch is shared without waking this thread.
    rayon::scope(|_| {
        if k < 2 {
            return;
        }
        let mut last_swap = n; // no swap yet
        let mut c = 0;
        let mut candidates = Vec::with_capacity(batch);
        loop {
            // The next candidates up to the last swap (a full turn without one ends the search),
            // or to the end of the first turn.
            candidates.clear();
            let mut next = c;
            let mut last_turn = false;
            while candidates.len() < batch {
                if next == last_swap {
                    last_turn = true;
                    break;
                }
                candidates.push(next);
                next = (next + 1) % n;
                if last_swap == n && next == 0 {
                    last_turn = true;
                    break;
                }
            }
            let gains: Vec<Option<(usize, f64)>> = if candidates.len() > 1 {
                use rayon::prelude::*;
                candidates
                    .par_iter()
                    .map(|&x| gain(&a, &medoids, &loss_removal, x))
                    .collect()
            } else {
                candidates
                    .iter()
                    .map(|&x| gain(&a, &medoids, &loss_removal, x))
                    .collect()
            };
            let first = candidates
                .iter()
                .zip(&gains)
                .find_map(|(&x, g)| g.filter(|&(_, v)| v < -1e-12).map(|(i, _)| (x, i)));
            match first {
                Some((x, i)) => {
                    medoids[i] = x;
                    a.swapped(d, &medoids, i, x);
                    loss_removal = removal(&a);
                    last_swap = x;
                    c = (x + 1) % n;
                }
                None if last_turn || candidates.is_empty() => break,
                None => c = next,
            }
        }
    });
    let loss = a.d1.iter().sum();
    Medoids {
        medoids,
        labels: a.nearest,
        loss,
    }
}

/// The medoid silhouette (Lenssen and Schubert): the mean of 1 - d1 / d2 over items, where an
/// item alone in its cluster counts 0 (Rousseeuw's convention).
pub fn medoid_silhouette(d: &Array2<f64>, medoids: &[usize]) -> f64 {
    let Assignment {
        d1, d2, nearest, ..
    } = Assignment::new(d, medoids);
    let n = d.nrows();
    // Without the convention a medoid scores 1 whatever its cluster, so that every extra medoid
    // taken from a cluster of two raises the mean: 15 clusters were chosen for 16 ranks on 4
    // nodes, 5 for three pairs.
    let mut sizes = vec![0usize; medoids.len()];
    for &c in &nearest {
        sizes[c] += 1;
    }
    (0..n)
        .map(|o| {
            if sizes[nearest[o]] > 1 && d2[o] > 0.0 && d2[o].is_finite() {
                1.0 - d1[o] / d2[o]
            } else {
                0.0
            }
        })
        .sum::<f64>()
        / n as f64
}

/// k-medoids with the given k; or the k in 2..=`max_k` with the best medoid silhouette, kept
/// only if its clusters stand apart (`stands_apart`; else one cluster).
pub fn kmedoids(d: &Array2<f64>, k: Option<usize>, max_k: usize) -> Tree {
    let n = d.nrows();
    let result = match k {
        Some(k) => faster_pam(d, k),
        None => (2..=max_k.min(n.saturating_sub(1)))
            .map(|k| faster_pam(d, k))
            .max_by(|a, b| {
                medoid_silhouette(d, &a.medoids).total_cmp(&medoid_silhouette(d, &b.medoids))
            })
            .filter(|best| stands_apart(d.view(), &best.labels))
            .unwrap_or_else(|| faster_pam(d, 1)),
    };
    tree_of_labels(&some(result.labels))
}

/// SSSTree (Figure 2.5 of the reference thesis): a cluster's first item is its center; every
/// other item joins the nearest center unless it is at least `alpha` times twice the cluster's
/// radius away, when it becomes a new center; each new cluster is split the same way while it
/// has at least `min_children` items. A split whose clusters do not stand apart as `auto`
/// requires of a level is not made (on a flat matrix every item was its own center).
pub fn ssstree(d: &Array2<f64>, alpha: f64, min_children: usize) -> Tree {
    fn build(d: &Array2<f64>, items: Vec<usize>, alpha: f64, min_children: usize) -> Tree {
        if items.len() < min_children.max(2) {
            return Tree::Leaf(items);
        }
        let center = items[0];
        let radius = items.iter().map(|&i| d[[center, i]]).fold(0.0, f64::max);
        let m = 2.0 * radius;
        let mut clusters: Vec<Vec<usize>> = vec![vec![center]];
        for &child in &items[1..] {
            let (c, dist) = clusters
                .iter()
                .enumerate()
                .map(|(k, cl)| (k, d[[child, cl[0]]]))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("one cluster at least");
            if dist >= m * alpha {
                clusters.push(vec![child]);
            } else {
                clusters[c].push(child);
            }
        }
        if clusters.len() == 1 {
            // Nothing split off: splitting again would only repeat this.
            return Tree::Leaf(items);
        }
        let members: Vec<usize> = clusters.concat();
        let labels: Vec<usize> = clusters
            .iter()
            .enumerate()
            .flat_map(|(c, cluster)| std::iter::repeat_n(c, cluster.len()))
            .collect();
        if !stands_apart_in(d.view(), &members, &labels) {
            return Tree::Leaf(items);
        }
        Tree::Node {
            children: clusters
                .into_iter()
                .map(|c| build(d, c, alpha, min_children))
                .collect(),
            separation: None,
        }
    }
    build(d, (0..d.nrows()).collect(), alpha, min_children)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apart::prune_weak_splits;

    use crate::test_matrices::{blocks, flat};

    fn groups(t: &Tree) -> Vec<Vec<usize>> {
        match t {
            Tree::Leaf(r) => vec![r.clone()],
            Tree::Node { children, .. } => children.iter().map(Tree::ranks).collect(),
        }
    }

    #[test]
    fn flat_algorithms_find_blocks() {
        let d = blocks(&[3, 4, 2], 1.0, 5.0);
        let expected = vec![vec![0, 1, 2], vec![3, 4, 5, 6], vec![7, 8]];
        assert_eq!(
            groups(&agglomerative(&d, Linkage::Average, Some(3), None)),
            expected
        );
        assert_eq!(
            groups(&agglomerative(&d, Linkage::Single, None, Some(2.0))),
            expected
        );
        assert_eq!(groups(&components(&d, 2.0)), expected);
        assert_eq!(groups(&dbscan(&d, 2.0, 2)), expected);
        assert_eq!(groups(&kmedoids(&d, Some(3), 8)), expected);
        assert_eq!(groups(&kmedoids(&d, None, 6)), expected, "k by silhouette");
    }

    #[test]
    fn dbscan_noise_is_singletons() {
        let mut d = blocks(&[3, 3], 1.0, 5.0);
        for j in 0..6 {
            if j != 5 {
                d[[5, j]] = 4.0;
                d[[j, 5]] = 4.0;
            }
        }
        assert_eq!(
            groups(&dbscan(&d, 2.0, 2)),
            vec![vec![0, 1, 2], vec![3, 4], vec![5]]
        );
    }

    #[test]
    fn faster_pam_reaches_the_optimum_of_small_problems() {
        // Exhaustive search over all pairs of medoids on a small irregular matrix.
        let n = 9;
        let d = Array2::from_shape_fn((n, n), |(i, j)| {
            if i == j {
                0.0
            } else {
                ((i * 31 + j * 17) % 11 + (i + j) % 4) as f64 + 1.0
            }
        });
        let d = (&d + &d.t()) / 2.0;
        let best = (0..n)
            .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
            .map(|(a, b)| (0..n).map(|o| d[[o, a]].min(d[[o, b]])).sum::<f64>())
            .fold(f64::INFINITY, f64::min);
        assert!((faster_pam(&d, 2).loss - best).abs() < 1e-9);
    }

    #[test]
    fn swaps_update_the_assignment_as_a_full_recount_does() {
        let n = 40;
        let d = Array2::from_shape_fn((n, n), |(i, j)| {
            if i == j {
                0.0
            } else {
                ((i * 7919 + j * 104_729) % 97 + (i * j) % 13) as f64
            }
        });
        let d = (&d + &d.t()) / 2.0;
        let mut medoids = vec![0, 5, 11, 17, 30];
        let mut a = Assignment::new(&d, &medoids);
        for (step, c) in [3, 8, 21, 22, 39, 1, 12, 33, 6, 27].into_iter().enumerate() {
            let i = (step * 3) % medoids.len();
            medoids[i] = c;
            a.swapped(&d, &medoids, i, c);
            let full = Assignment::new(&d, &medoids);
            assert_eq!(a.d1, full.d1, "step {step}");
            assert_eq!(a.d2, full.d2, "step {step}");
            for o in 0..n {
                assert_eq!(d[[o, medoids[a.nearest[o]]]], a.d1[o]);
                assert_eq!(d[[o, medoids[a.second[o]]]], a.d2[o]);
            }
        }
    }

    #[test]
    fn without_k_a_flat_matrix_is_one_group() {
        for n in [16, 32, 128] {
            for noise in [0.0, 0.01, 0.02, 0.05] {
                for seed in 0..3 {
                    let d = flat(n, noise, seed);
                    let all = vec![(0..n).collect::<Vec<_>>()];
                    let what = format!("{n} items, noise {noise}, seed {seed}");
                    assert_eq!(groups(&kmedoids(&d, None, 16)), all, "kmedoids: {what}");
                    assert_eq!(groups(&ssstree(&d, 0.5, 2)), all, "ssstree: {what}");
                    assert_eq!(groups(&ssstree(&d, 0.3, 2)), all, "ssstree: {what}");
                }
            }
        }
    }

    #[test]
    fn hdbscan_answers_one_group_on_flat_matrices() {
        use crate::hdbscan::{hdbscan, HdbscanParams};
        let params = HdbscanParams {
            min_cluster_size: 4,
            min_samples: 4,
        };
        for n in [16, 32, 128] {
            for noise in [0.0, 0.01, 0.02, 0.05] {
                for seed in 0..3 {
                    let d = flat(n, noise, seed);
                    let tree = prune_weak_splits(&d, hdbscan(&d, params).tree);
                    let mut found = groups(&tree);
                    found.iter_mut().for_each(|g| g.sort_unstable());
                    assert_eq!(
                        found,
                        vec![(0..n).collect::<Vec<_>>()],
                        "{n} items, noise {noise}, seed {seed}"
                    );
                }
            }
        }
        // Separated blocks stay split, at whatever depth the condensed tree splits them.
        fn leaves(t: &Tree, out: &mut Vec<Vec<usize>>) {
            match t {
                Tree::Leaf(items) => out.push(items.clone()),
                Tree::Node { children, .. } => children.iter().for_each(|c| leaves(c, out)),
            }
        }
        let d = blocks(&[6, 8, 5], 1.0, 5.0);
        let mut found = Vec::new();
        leaves(&prune_weak_splits(&d, hdbscan(&d, params).tree), &mut found);
        found.iter_mut().for_each(|g| g.sort_unstable());
        found.sort();
        let expected: Vec<Vec<usize>> =
            vec![(0..6).collect(), (6..14).collect(), (14..19).collect()];
        assert_eq!(found, expected);
    }

    #[test]
    fn hdbscan_keeps_a_hierarchy_of_groups_equally_far_apart() {
        // Eight groups of 64 at 1.8, each two of 32 at 0.8, 0.4 inside, 3 % noise (the
        // benchmark's matrix against the Python stack): single linkage joins the eight one at
        // a time, a chain of splits none of which stands apart on its own. Python's hdbscan
        // finds the 16 groups of 32; once the chain undid the whole tree here.
        use crate::hdbscan::{hdbscan, HdbscanParams};
        let n = 512;
        let mut state = 7u64;
        let mut d = Array2::zeros((n, n));
        for i in 0..n {
            for j in 0..i {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let noise = 1.0 + 0.03 * ((state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0);
                let base = if i / 32 == j / 32 {
                    0.4
                } else if i / 64 == j / 64 {
                    0.8
                } else {
                    1.8
                };
                d[[i, j]] = base * noise;
                d[[j, i]] = base * noise;
            }
        }
        let params = HdbscanParams {
            min_cluster_size: 16,
            min_samples: 4,
        };
        let tree = prune_weak_splits(&d, hdbscan(&d, params).tree);
        let Tree::Node { children, .. } = &tree else {
            panic!("one group: {tree:?}");
        };
        let mut sixty_four: Vec<Vec<usize>> = children.iter().map(Tree::ranks).collect();
        sixty_four.iter_mut().for_each(|g| g.sort_unstable());
        sixty_four.sort();
        let expected: Vec<Vec<usize>> = (0..8).map(|g| (64 * g..64 * g + 64).collect()).collect();
        assert_eq!(sixty_four, expected);
        for child in children {
            let Tree::Node {
                children: halves, ..
            } = child
            else {
                panic!("a group of 64 not split in two: {child:?}");
            };
            let mut halves: Vec<Vec<usize>> = halves.iter().map(Tree::ranks).collect();
            halves.iter_mut().for_each(|g| g.sort_unstable());
            halves.sort();
            assert_eq!(halves.len(), 2, "{halves:?}");
            assert!(
                halves.iter().all(|h| h.len() == 32 && h[0] % 32 == 0),
                "{halves:?}"
            );
        }
    }

    #[test]
    fn without_k_separated_groups_are_found() {
        // Three pairs far apart: the medoid silhouette once chose 5 clusters here.
        let pairs = blocks(&[2, 2, 2], 1.0, 5.0);
        let expected = vec![vec![0, 1], vec![2, 3], vec![4, 5]];
        assert_eq!(groups(&kmedoids(&pairs, None, 5)), expected);
        // SSSTree opens a cluster beyond 2 alpha times the radius: at 0.5 only the farthest
        // item would, so the pairs need a smaller alpha.
        assert_eq!(groups(&ssstree(&pairs, 0.3, 2)), expected);
        // 4 nodes of 4 on noise: once 15 clusters.
        let mut nodes = flat(16, 0.05, 7);
        for i in 0..16 {
            for j in 0..16 {
                if i != j && i / 4 == j / 4 {
                    nodes[[i, j]] *= 0.3;
                }
            }
        }
        let expected: Vec<Vec<usize>> = (0..4).map(|g| (g * 4..g * 4 + 4).collect()).collect();
        assert_eq!(groups(&kmedoids(&nodes, None, 8)), expected);
        for k in 2..=8 {
            let sizes: Vec<usize> = (0..k).map(|g| 3 + g % 3).collect();
            let d = blocks(&sizes, 1.0, 3.0);
            assert_eq!(groups(&kmedoids(&d, None, 10)).len(), k, "{sizes:?}");
        }
    }

    #[test]
    fn ssstree_nests_levels() {
        // Two groups of two pairs.
        let d = Array2::from_shape_fn((8, 8), |(i, j)| {
            if i == j {
                0.0
            } else if i / 4 != j / 4 {
                10.0
            } else if i / 2 != j / 2 {
                4.0
            } else {
                1.0
            }
        });
        let t = ssstree(&d, 0.3, 2);
        assert_eq!(groups(&t), vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        let Tree::Node { children, .. } = &t else {
            panic!()
        };
        assert_eq!(groups(&children[0]), vec![vec![0, 1], vec![2, 3]]);
    }
}
