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
//!   extremes, not the bulk. Groups of two and three have one and three distances each:
//!   theirs are pooled, pairs 1.5x slower than the usual pair left out (at most a quarter),
//!   and the 95th percentile taken when there are 20 or more;
//! - that gap is at least `min_gap` times the median raw distance of the set (a ratio on its
//!   own is met by gaps far below measurement noise, and by systematic artifacts such as
//!   diagonal bands), or, in the raw view for groups of two or more ranks all of one size
//!   (singletons aside), far enough out of the noise of the distances between groups (their
//!   standard deviation, from the median difference of two distances between the same two
//!   groups): (separation - 1) x gap / noise at least (`min_ratio` - 1) x `min_noise_gaps`,
//!   the gap at least half of `min_noise_gaps` times the noise, and either the separation
//!   `min_ratio` and the gap half of `min_gap`, or a separation a quarter of the way from 1 to
//!   `min_ratio` (the narrow rule, off for levels of hosts). So 1.2 needs 7 times the noise,
//!   1.1 needs 14: the SMT siblings of one CCD at 0.36-0.38 us against 0.46-0.49 between its
//!   cores (a gap under a fifth of the CCD's median, 10 times the noise), and siblings 1.1-1.25x
//!   below the nearest other cores of a CCD whose pairs spread by their places on its ring,
//!   are found. Stricter on purpose: the sockets of a Stampede node with its slow first rank
//!   apart (groups of 1, 7 and 8) and the module pairs of a Blue Waters node (1.24x at 4.4
//!   times the noise) are not levels the public datasets name;
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
//!   singletons: E-cores without an SMT sibling, or SMT siblings measured slow by a slow pair);
//!   a group of two at least halfway from the usual group of two to the distances between
//!   groups is two singletons first; more singletons than a third of the ranks make a level
//!   only in the raw view with a gap of `min_gap` and `min_noise_gaps` times the noise (a
//!   hybrid CPU's SMT level: P-core pairs beside as many E-cores without a sibling).
//!
//! Candidates of sets up to `all_cuts_up_to` ranks include the cuts of a single-linkage
//! dendrogram of the raw distances (a CCD of three whose one pair is slow stays whole there).
//! Of the partitions that pass, those meeting `min_ratio` come before narrow ones, and raw
//! ones before profile ones (slow pairs that share ranks make profiles alike).
//!
//! A level beneath one that parts some of its groups into single ranks and keeps the others
//! whole (a hybrid CPU's E-cores one by one beside the same SMT pairs, beneath the modules of
//! E-cores beside those pairs) is no group's own level: in sets of up to `all_cuts_up_to`
//! ranks, the groups of three or more are parted from the widest inside (median) down, and the
//! best partition that is a level is kept beneath.
//!
//! Levels beneath a level are looked for inside each group, with that group's own distances
//! and scale. A finer level found inside fewer than half of the groups of one size (nodes
//! alike) is a pattern of a few groups, not a level of the machine, and is dropped; one found
//! inside some groups of one size is looked for again in the others at half the noise margin
//! and kept where it parts them alike.
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
//! (`crates/measure/simulate/tests/robustness.rs`). The price of `min_gap`: a level whose gap between
//! the median between groups and the upper quartile inside is below a fifth of the set's
//! median distance, and not 7 times the noise, is not reported: 32 single-rank hosts in 4
//! switches at 0.45 against 0.65 us are found at 8 % cell noise, and in some draws not at
//! 12-15 %; SMT pairs at 0.34 against 0.48 us inside a CCD, with log-normal noise on every
//! cell, are found at 2 %, in 3 of 5 draws at 4 % and in none at 6 % (the gap is then 2.4-4.4
//! times the noise).
//!
//! The method's parts: [`separation`] (how far apart a partition's groups stand, the noise
//! between them, the candidate cuts), `apart` (partitions whose groups do not stand apart
//! undone), `outliers` (slow ranks and groups divided out first), [`by_hosts`] (the same on
//! host blocks), [`host_levels`] (the levels above the hosts, decided on the pairs between
//! them), [`screened_hosts`] (that judge for `measure`) and [`alike`] (hosts alike).

pub mod alike;
pub(crate) mod apart;
pub mod by_hosts;
pub mod host_levels;
pub(crate) mod outliers;
pub mod screened_hosts;
pub mod separation;

use ndarray::Array2;
use rayon::prelude::*;

use crate::outliers::{slow_groups, slow_ranks, without_slowness};
use crate::separation::{best_split, median, pairs_in};
pub use crate::separation::{separation_of, AutoParams, View};
use crate::tree::sub_matrix;
pub use crate::tree::Tree;

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
    seconded(d, &groups, &mut kids, p);
    parted_like_siblings(d, &groups, &mut kids);
    if let Some((finer, separation)) = &s.singles {
        // Groups the finer level parts into single ranks, where nothing finer was found inside.
        let local = groups_of(&(0..members.len()).collect::<Vec<_>>(), &s.labels);
        for (kid, positions) in kids.iter_mut().zip(&local) {
            let parted = positions.len() >= 2
                && positions
                    .iter()
                    .all(|&i| finer.iter().filter(|&&l| l == finer[i]).count() == 1);
            if parted && matches!(kid, Tree::Leaf(_)) {
                *kid = Tree::Node {
                    children: positions
                        .iter()
                        .map(|&i| Tree::Leaf(vec![members[i]]))
                        .collect(),
                    separation: Some(*separation),
                };
            }
        }
    }
    merge_up(d, groups, kids, s.separation, p)
}

/// Levels found inside fewer than half of the groups of one size (nodes alike): not a level of
/// the machine but a pattern a few groups happen to show, so those groups stay whole. Groups
/// of different sizes (P-cores and E-cores) are not compared.
pub(crate) fn outvoted(kids: &mut [Tree]) {
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

/// A level found inside some groups of one size (CCDs alike) is looked for again in the
/// others of that size, at half the noise margin (`min_noise_gaps`), and kept where it parts
/// them into groups of the same sizes: the groups' evidence together, as two CCDs of one part
/// whose SMT siblings stand 13 and 7 times the noise apart.
pub(crate) fn seconded(d: &Array2<f64>, groups: &[Vec<usize>], kids: &mut [Tree], p: &AutoParams) {
    // The sizes of a split's groups of two or more ranks.
    let pattern = |t: &Tree| -> Option<Vec<usize>> {
        let Tree::Node { children, .. } = t else {
            return None;
        };
        let mut sizes: Vec<usize> = (children.iter())
            .map(|c| c.ranks().len())
            .filter(|&n| n >= 2)
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        Some(sizes)
    };
    let relaxed = AutoParams {
        min_noise_gaps: p.min_noise_gaps / 2.0,
        ..*p
    };
    for k in 0..kids.len() {
        if !matches!(kids[k], Tree::Leaf(_)) || groups[k].len() < 4 {
            continue;
        }
        let size = groups[k].len();
        let patterns: Vec<Vec<usize>> = (0..kids.len())
            .filter(|&o| groups[o].len() == size)
            .filter_map(|o| pattern(&kids[o]))
            .collect();
        if patterns.is_empty() {
            continue;
        }
        let m = sub_matrix(d, &groups[k]);
        let Some(s) = best_split(&m, &relaxed) else {
            continue;
        };
        let found = groups_of(&groups[k], &s.labels);
        let mut sizes: Vec<usize> = found.iter().map(Vec::len).filter(|&n| n >= 2).collect();
        sizes.sort_unstable();
        sizes.dedup();
        if patterns.contains(&sizes) {
            kids[k] = Tree::Node {
                children: found.into_iter().map(Tree::Leaf).collect(),
                separation: Some(s.separation),
            };
        }
    }
}

/// A group with nothing found inside, beside a sibling whose finer level parts it into groups
/// and single ranks (SMT pairs beside cores of one thread): its ranks are single at that level
/// too when they stand as far apart as the sibling's groups do from one another (the median
/// inside nearer, in ratio, the sibling's median between its groups than inside them). A
/// second socket of cores without their sibling thread is then cores, not one core.
pub(crate) fn parted_like_siblings(d: &Array2<f64>, groups: &[Vec<usize>], kids: &mut [Tree]) {
    let mut values = Vec::new();
    // Per sibling with groups and single ranks below it: (median inside its groups, between).
    let mut levels: Vec<(f64, f64, f64)> = Vec::new();
    for kid in kids.iter() {
        let Tree::Node {
            children,
            separation,
        } = kid
        else {
            continue;
        };
        let parts: Vec<Vec<usize>> = children.iter().map(Tree::ranks).collect();
        let singles = parts.iter().filter(|g| g.len() == 1).count();
        if singles == 0 || singles == parts.len() {
            continue;
        }
        let mut within: Vec<f64> = parts.iter().flat_map(|g| pairs_in(d, g)).collect();
        values.clear();
        for (a, ga) in parts.iter().enumerate() {
            for gb in &parts[a + 1..] {
                values.extend(ga.iter().flat_map(|&i| gb.iter().map(move |&j| d[[i, j]])));
            }
        }
        let between = median(&mut values);
        let within = median(&mut within);
        if within > 0.0 && between > within {
            levels.push((within, between, separation.unwrap_or(between / within)));
        }
    }
    for (k, kid) in kids.iter_mut().enumerate() {
        if !matches!(kid, Tree::Leaf(_)) || groups[k].len() < 2 {
            continue;
        }
        values.clear();
        values.extend(pairs_in(d, &groups[k]));
        let m = median(&mut values);
        let like = levels
            .iter()
            .find(|&&(within, between, _)| m * m >= within * between);
        if let Some(&(_, _, separation)) = like {
            *kid = Tree::Node {
                children: groups[k].iter().map(|&r| Tree::Leaf(vec![r])).collect(),
                separation: Some(separation),
            };
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

    /// `n` ranks all `1.0` apart but for the pairs `(2i, 2i + 1)` of the first `pairs`, `near`
    /// apart; every distance off by log-normal noise `sigma` drawn from `seed`.
    fn pairs_beside_singletons(
        n: usize,
        pairs: usize,
        near: f64,
        sigma: f64,
        seed: u64,
    ) -> Array2<f64> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut d = Array2::zeros((n, n));
        for i in 0..n {
            for j in i + 1..n {
                let base = if i / 2 == j / 2 && i / 2 < pairs {
                    near
                } else {
                    1.0
                };
                let (u1, u2): (f64, f64) =
                    (rng.random_range(1e-12..1.0), rng.random_range(0.0..1.0));
                let normal = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                d[[i, j]] = base * (sigma * normal).exp();
                d[[j, i]] = d[[i, j]];
            }
        }
        d
    }

    #[test]
    fn pairs_beside_more_singletons_are_a_level_when_far_out_of_the_noise() {
        // A hybrid CPU's SMT level: 6 P-cores of two threads at 0.4 beside 12 E-cores without
        // one, 1.0 between cores, 1 % noise: half the ranks are singletons.
        for seed in 0..5 {
            let d = pairs_beside_singletons(24, 6, 0.4, 0.01, seed);
            let t = auto(&d, &AutoParams::default());
            let Tree::Node { children, .. } = &t else {
                panic!("seed {seed}: {t:?}")
            };
            assert_eq!(children.len(), 18, "seed {seed}: {t:?}");
            let pairs = children.iter().filter(|c| c.ranks().len() == 2).count();
            assert_eq!(pairs, 6, "seed {seed}: {t:?}");
        }
    }

    #[test]
    fn noise_draws_no_level_of_singletons_and_chance_pairs() {
        // Flat sets with no structure: the nearest pairs that noise draws together are no
        // level, however many singletons stand beside them.
        for (n, sigma) in [
            (12, 0.01),
            (24, 0.01),
            (24, 0.05),
            (48, 0.05),
            (24, 0.15),
            (48, 0.15),
        ] {
            for seed in 0..40 {
                let d = pairs_beside_singletons(n, 0, 1.0, sigma, 100 + seed);
                let t = auto(&d, &AutoParams::default());
                assert!(
                    matches!(t, Tree::Leaf(_)),
                    "{n} ranks, noise {sigma}, seed {seed}: {t:?}"
                );
            }
        }
    }

    /// `cores` cores of `threads` threads each (ranks numbered core by core): threads of one
    /// core `sibling` apart, cores `core` apart times a fixed factor per pair of cores of
    /// log-normal `spread` (their places on a ring), every distance off by `sigma`.
    fn spread_cores(
        cores: usize,
        threads: usize,
        (sibling, core, spread): (f64, f64, f64),
        sigma: f64,
        seed: u64,
    ) -> Array2<f64> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut normal = move || {
            let (u1, u2): (f64, f64) = (rng.random_range(1e-12..1.0), rng.random_range(0.0..1.0));
            (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        };
        let factor: Vec<f64> = (0..cores * cores)
            .map(|_| (spread * normal()).exp())
            .collect();
        let n = cores * threads;
        let mut d = Array2::zeros((n, n));
        for i in 0..n {
            for j in i + 1..n {
                let (a, b) = (i / threads, j / threads);
                let base = if a == b {
                    sibling
                } else {
                    core * factor[a * cores + b]
                };
                d[[i, j]] = base * (sigma * normal()).exp();
                d[[j, i]] = d[[i, j]];
            }
        }
        d
    }

    #[test]
    fn siblings_barely_nearer_than_the_nearest_cores_of_a_spread_ccd_are_a_level() {
        // 8 cores of two threads: siblings 0.30 apart, cores 0.38 times 4 % of spread, 0.3 %
        // noise: the nearest cores are 1.1-1.2x the siblings (below the 1.2 a level needs
        // otherwise), a gap some 30 times the noise.
        for seed in 0..10 {
            let d = spread_cores(8, 2, (0.30, 0.38, 0.04), 0.003, seed);
            let t = auto(&d, &AutoParams::default());
            let Tree::Node { children, .. } = &t else {
                panic!("seed {seed}: {t:?}")
            };
            let pairs: Vec<Vec<usize>> = children.iter().map(Tree::ranks).collect();
            let expected: Vec<Vec<usize>> = (0..8).map(|c| vec![2 * c, 2 * c + 1]).collect();
            assert_eq!(pairs, expected, "seed {seed}");
        }
    }

    #[test]
    fn cores_spread_on_a_ring_without_siblings_are_no_level() {
        // The same spread and noise, one thread per core: the nearest pairs of cores are no
        // level, however far out of the noise their distances are.
        for (cores, seed) in (0..20u64).map(|s| (12 + 4 * (s as usize % 3), 200 + s)) {
            let d = spread_cores(cores, 1, (0.30, 0.37, 0.04), 0.003, seed);
            let t = auto(&d, &AutoParams::default());
            assert!(
                matches!(t, Tree::Leaf(_)),
                "{cores} cores, seed {seed}: {t:?}"
            );
        }
    }

    #[test]
    fn e_core_modules_beside_smt_pairs_give_a_level_of_singletons_beneath() {
        // 8 P-cores of two threads (0.34 apart), 2 modules of 4 E-cores (0.5), 1.0 between
        // them, 1 % noise: the modules beside the pairs, then the E-cores as singletons beside
        // the same pairs (a level no group's own split can find).
        for seed in 0..5 {
            let mut d = pairs_beside_singletons(24, 8, 0.34, 0.01, seed);
            for i in 16..24 {
                for j in 16..24 {
                    if i != j && (i - 16) / 4 == (j - 16) / 4 {
                        d[[i, j]] *= 0.5;
                    }
                }
            }
            let t = auto(&d, &AutoParams::default());
            let topology = crate::topology_of(&t, 24, None).unwrap();
            let sizes: Vec<usize> = topology.levels().iter().map(|l| l.groups.len()).collect();
            assert_eq!(sizes, [10, 16], "seed {seed}: {t:?}");
            let singles = topology.levels()[1].groups.iter().filter(|g| g.len() == 1);
            assert_eq!(singles.count(), 8, "seed {seed}");
        }
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
