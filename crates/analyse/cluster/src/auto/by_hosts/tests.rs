//! Clustering by hosts: tests.

use super::dense::blocks_of_dense;
use super::*;

/// `hosts` hosts of two sockets of `per` ranks each, in two switches: 1 us inside a
/// socket, 2 between sockets, 6 between hosts of a switch and 9 across, off by a little.
fn machine(hosts: usize, per: usize, slow: Option<usize>) -> HostBlocks {
    let g = 2 * per;
    let entries: Vec<HostEntry> = (0..hosts)
        .map(|x| HostEntry {
            name: format!("n{x}"),
            ranks: (x * g..(x + 1) * g).collect(),
        })
        .collect();
    let factor = |x: usize| if Some(x) == slow { 1.4 } else { 1.0 };
    let blocks = (0..hosts)
        .map(|x| HostBlock {
            values: vec![Array2::from_shape_fn((g, g), |(a, b)| {
                let base = if a == b {
                    0.0
                } else if a / per == b / per {
                    1.0
                } else {
                    2.0
                };
                base * factor(x) * (1.0 + 0.01 * ((a * 7 + b * 3 + x) % 5) as f64)
            })],
        })
        .collect();
    let mut links = HostLinks {
        median_us: vec![Vec::new()],
        p25_us: vec![Vec::new()],
        p75_us: vec![Vec::new()],
        ..HostLinks::default()
    };
    for a in 0..hosts {
        for b in a..hosts {
            let base = if a == b {
                1.5
            } else if a / (hosts / 2) == b / (hosts / 2) {
                6.0
            } else {
                9.0
            };
            let x = base * factor(a).max(factor(b)) * (1.0 + 0.01 * ((a + 2 * b) % 3) as f64);
            links.host_i.push(a as u32);
            links.host_j.push(b as u32);
            links.pairs.push(4);
            links.median_us[0].push(x);
            links.p25_us[0].push(if a == b { 1.0 * factor(a) } else { x });
            links.p75_us[0].push(if a == b { 2.0 * factor(a) } else { x });
        }
    }
    HostBlocks {
        index: HostIndex::new(hosts * g, Estimator::Median, vec![0], entries),
        blocks,
        links,
    }
}

fn levels(t: &Tree) -> Vec<usize> {
    let topology = crate::topology_of(t, t.ranks().len(), None).unwrap();
    topology.levels().iter().map(|l| l.groups.len()).collect()
}

#[test]
fn switches_hosts_and_sockets_are_found() {
    let c = auto_by_hosts(&machine(8, 4, None), 0, None, &AutoParams::default()).unwrap();
    assert_eq!(levels(&c.tree), [2, 8, 16]);
    assert!(c.slow.is_empty());
    assert!(c.host_separation > 2.0, "{}", c.host_separation);
}

#[test]
fn a_slow_host_is_divided_out_and_reported() {
    let c = auto_by_hosts(&machine(8, 4, Some(3)), 0, None, &AutoParams::default()).unwrap();
    assert_eq!(levels(&c.tree), [2, 8, 16]);
    assert_eq!(c.slow_hosts.len(), 1);
    assert_eq!(c.slow_hosts[0].0, 3);
    assert_eq!(c.slow.len(), 8);
    assert!(c.slow.iter().all(|&(r, _)| (24..32).contains(&r)));
}

#[test]
fn a_hole_between_hosts_is_an_error() {
    let mut m = machine(4, 2, None);
    // Drop hosts 0-1's entry.
    let e = (0..m.links.len())
        .position(|e| (m.links.host_i[e], m.links.host_j[e]) == (0, 1))
        .unwrap();
    m.links.host_i.remove(e);
    m.links.host_j.remove(e);
    m.links.pairs.remove(e);
    m.links.median_us[0].remove(e);
    m.links.p25_us[0].remove(e);
    m.links.p75_us[0].remove(e);
    let e = auto_by_hosts(&m, 0, None, &AutoParams::default()).unwrap_err();
    assert!(e.to_string().contains("n0 and n1"), "{e}");
}

/// `n` items on hosts of `per` each, every pair measured.
fn on_hosts(n: usize, per: usize) -> DenseHosts {
    DenseHosts {
        host_of: (0..n).map(|a| a / per).collect(),
        names: (0..n.div_ceil(per)).map(|x| format!("h{x}")).collect(),
        measured: None,
        other_sizes: Vec::new(),
        tests: None,
    }
}

/// A dense matrix of 6 hosts of 4 ranks in 3 leaves: 10 us inside a host, 100 between
/// hosts of a leaf and 120 across, each pair between hosts off by log-normal noise 0.15
/// (drawn from a fixed sequence), and pair 0-4 (hosts 0 and 1) 6 times slower.
fn leaves_dense() -> (Array2<f64>, DenseHosts) {
    let n = 24;
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut normal = move || {
        // Two uniforms from xorshift, then Box-Muller.
        let mut u = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let (u1, u2) = (u().max(1e-12), u());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    };
    let mut d = Array2::zeros((n, n));
    for a in 0..n {
        for b in a + 1..n {
            let (x, y) = (a / 4, b / 4);
            let base = if x == y {
                10.0
            } else if x / 2 == y / 2 {
                100.0
            } else {
                120.0
            };
            let slow = if (a, b) == (0, 4) { 6.0 } else { 1.0 };
            let v = base * slow * (0.15 * normal()).exp();
            d[[a, b]] = v;
            d[[b, a]] = v;
        }
    }
    (d, on_hosts(n, 4))
}

#[test]
fn a_dense_matrix_on_hosts_keeps_hosts_whole_and_finds_the_leaves_its_pairs_decide() {
    let (d, hosts) = leaves_dense();
    let p = AutoParams::default();
    let c = dense_by_hosts(&d, &hosts, &p).unwrap();
    assert_eq!(levels(&c.tree), [3, 6], "{:?}", c.tree);
    assert!(c.doubts.is_empty(), "{:?}", c.doubts);
    // Without the pairs between hosts, the medians alone decide no leaf.
    let (blocks, _) = blocks_of_dense(&[&d], &hosts);
    let medians_only = auto_by_hosts(&blocks, 0, None, &p).unwrap();
    assert_eq!(levels(&medians_only.tree), [6]);
}

#[test]
fn measure_and_cluster_judge_the_same_pairs_alike() {
    // Six hosts of two ranks in three leaves of two, 20 % apart with a few percent of
    // noise, one pair measured between two hosts: the leaves are in doubt. `measure`'s
    // judge of the pairs it screened and `cluster`'s of the run's dense matrix name the
    // same doubts.
    let n = 12;
    let d = Array2::from_shape_fn((n, n), |(a, b)| {
        let base = match (a / 2 == b / 2, a / 4 == b / 4) {
            _ if a == b => 0.0,
            (true, _) => 1.0,
            (false, true) => 10.0,
            (false, false) => 12.0,
        };
        let (i, j) = (a.min(b), a.max(b));
        base * (1.0 + 0.03 * (((i * 7 + j * 13) % 9) as f64 - 4.0) / 4.0)
    });
    let measured = Array2::from_shape_fn((n, n), |(a, b)| {
        let (i, j) = (a.min(b), a.max(b));
        i / 2 == j / 2 || (i % 2 == 0 && j % 2 == 1)
    });
    let mut hosts = on_hosts(n, 2);
    hosts.measured = Some(measured.clone());
    let p = AutoParams::default();
    let dense = dense_by_hosts(&d, &hosts, &p).unwrap();
    assert!(!dense.doubts.is_empty(), "{:?}", dense.tree);
    let mut pairs = crate::screened_hosts::ScreenedRankPairs::with_sizes(1);
    for a in 0..n {
        for b in (a + 1..n).filter(|&b| measured[[a, b]]) {
            pairs.push(a as u32, b as u32, &[d[[a, b]]], &[f64::NAN]);
        }
    }
    let groups: Vec<Vec<usize>> = (0..6).map(|x| vec![2 * x, 2 * x + 1]).collect();
    let screened = crate::screened_hosts::doubts_of_screened(&groups, n, pairs, &p).unwrap();
    assert_eq!(screened, dense.doubts);
}

#[test]
fn pairs_not_measured_are_no_evidence() {
    // Only one pair measured between each two hosts: too few to decide the leaves.
    let (d, mut hosts) = leaves_dense();
    let n = d.nrows();
    hosts.measured = Some(Array2::from_shape_fn((n, n), |(a, b)| {
        a / 4 == b / 4 || (a % 4 == 1 && b % 4 == 1)
    }));
    let c = dense_by_hosts(&d, &hosts, &AutoParams::default()).unwrap();
    assert_eq!(levels(&c.tree), [6], "{:?}", c.tree);
}

/// A dragonfly of 2 groups of 2 leaves of 2 hosts of 2 ranks, at two sizes: at the small
/// one 1.3 us inside a host, 11 between hosts of a leaf, 13 across leaves of a group and
/// 15 across groups (the hops); at the large one 20 inside a host, 270 across hosts of a
/// group, 1380 across groups (the thin global links). Each pair off by log-normal noise
/// 0.03, drawn from `seed`.
fn dragonfly_dense(seed: u64) -> (Array2<f64>, Array2<f64>, DenseHosts) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n = 16;
    let (mut small, mut large) = (Array2::zeros((n, n)), Array2::zeros((n, n)));
    for a in 0..n {
        for b in a + 1..n {
            let (x, y) = (a / 2, b / 2);
            let (s, l) = match () {
                _ if x == y => (1.3, 20.0),
                _ if x / 2 == y / 2 => (11.0, 270.0),
                _ if x / 4 == y / 4 => (13.0, 270.0),
                _ => (15.0, 1380.0),
            };
            for (m, base) in [(&mut small, s), (&mut large, l)] {
                let (u1, u2): (f64, f64) =
                    (rng.random_range(1e-12..1.0), rng.random_range(0.0..1.0));
                let normal = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                let v = base * (0.03 * normal).exp();
                m[[a, b]] = v;
                m[[b, a]] = v;
            }
        }
    }
    (small, large, on_hosts(n, 2))
}

#[test]
fn a_dense_matrix_takes_the_levels_above_its_hosts_from_every_size() {
    for seed in 0..5 {
        let (small, large, mut hosts) = dragonfly_dense(seed);
        let p = AutoParams::default();
        // The large size alone shows the groups, not the leaves inside them.
        let alone = dense_by_hosts(&large, &hosts, &p).unwrap();
        assert_eq!(levels(&alone.tree), [2, 8], "seed {seed}: {:?}", alone.tree);
        // With the small size's pairs, the leaves too.
        hosts.other_sizes = vec![std::sync::Arc::new(small.clone())];
        let both = dense_by_hosts(&large, &hosts, &p).unwrap();
        assert_eq!(
            levels(&both.tree),
            [2, 4, 8],
            "seed {seed}: {:?}",
            both.tree
        );
        // Clustering the small size, with the large one's pairs: the same levels.
        hosts.other_sizes = vec![std::sync::Arc::new(large)];
        let other = dense_by_hosts(&small, &hosts, &p).unwrap();
        assert_eq!(
            levels(&other.tree),
            [2, 4, 8],
            "seed {seed}: {:?}",
            other.tree
        );
    }
}

#[test]
fn the_confidence_of_levels_from_other_sizes_deals_their_noise_out_anew() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (small, large, mut hosts) = dragonfly_dense(11);
    let p = AutoParams::default();
    hosts.other_sizes = vec![std::sync::Arc::new(small.clone())];
    let found = dense_by_hosts(&large, &hosts, &p).unwrap();
    let n = large.nrows();
    let labels = crate::topology_of(&found.tree, n, None).unwrap();
    let levels: Vec<Vec<usize>> = labels.levels().iter().map(|l| l.labels(n)).collect();
    assert_eq!(levels.len(), 3);
    let redrawn = AtomicUsize::new(0);
    let fit = |rs: &[Array2<f64>]| {
        assert_eq!(rs.len(), 2);
        if rs[1] != small {
            redrawn.fetch_add(1, Ordering::Relaxed);
        }
        let resampled = DenseHosts {
            other_sizes: vec![std::sync::Arc::new(rs[1].clone())],
            ..hosts.clone()
        };
        dense_by_hosts(&rs[0], &resampled, &p).unwrap().tree
    };
    let s = crate::confidence::stability_kept(
        &[&large, &small],
        &levels,
        &found.slow,
        &fit,
        (20, 7),
        &|_| true,
        None,
    );
    assert_eq!(redrawn.load(Ordering::Relaxed), 20);
    // The leaves, decided on the small size's pairs, come back as the groups do.
    assert!(s.levels.iter().all(|&c| c >= 0.9), "{:?}", s.levels);
}

/// Random fabric 2's shape (2026-12-04) at two sizes: 8 hosts of 2 ranks in 4 leaves of 2,
/// leaves 0 and 1 one group, leaves 2 and 3 each a group of its own. At the small size 2 us
/// inside a host, 16 between hosts of a leaf, 30 across the leaves of a group, 35 across
/// groups (the hops); at the large one 15 inside a host and 250 between any two (the host
/// links: neither leaves nor groups show). Each pair off by log-normal `sigma`.
fn groups_of_leaves_dense(sigma: f64, seed: u64) -> (Array2<f64>, Array2<f64>, DenseHosts) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n = 16;
    let group = |x: usize| [0, 0, 0, 0, 1, 1, 2, 2][x];
    let (mut small, mut large) = (Array2::zeros((n, n)), Array2::zeros((n, n)));
    for a in 0..n {
        for b in a + 1..n {
            let (x, y) = (a / 2, b / 2);
            let (s, l) = match () {
                _ if x == y => (2.0, 15.0),
                _ if x / 2 == y / 2 => (16.0, 250.0),
                _ if group(x) == group(y) => (30.0, 250.0),
                _ => (35.0, 250.0),
            };
            for (m, base) in [(&mut small, s), (&mut large, l)] {
                let (u1, u2): (f64, f64) =
                    (rng.random_range(1e-12..1.0), rng.random_range(0.0..1.0));
                let normal = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                let v = base * (sigma * normal).exp();
                m[[a, b]] = v;
                m[[b, a]] = v;
            }
        }
    }
    (small, large, on_hosts(n, 2))
}

#[test]
fn groups_above_leaves_that_only_another_size_shows_are_decided_or_in_doubt() {
    // Clustering the large size, whose medians show no leaves: the small size's pairs decide
    // the leaves (a level of the pairs, not of the medians), and the groups above them. At 4-8 %
    // noise they are decided in 96 of 100 draws at least (92-98 before a group of four hosts
    // had to stand apart by a rank test too, not only by its median: leaves 2 and 3 were
    // made one group, as far apart as any, in up to 8). At 12 % the groups are decided or,
    // where not, in doubt with their own groups (looked for above the medians' top level
    // only before: never in doubt, so `measure` never tested their pairs again).
    let p = AutoParams::default();
    let groups = [vec![0, 1, 2, 3], vec![4, 5], vec![6, 7]];
    for (sigma, least, most_invented) in
        [(0.04, 98, 1), (0.06, 96, 2), (0.08, 96, 4), (0.12, 85, 4)]
    {
        let (mut known, mut invented) = (0, 0);
        for seed in 0..100 {
            let (small, large, mut hosts) = groups_of_leaves_dense(sigma, 1000 + seed);
            hosts.other_sizes = vec![std::sync::Arc::new(small)];
            let c = dense_by_hosts(&large, &hosts, &p).unwrap();
            let found = levels(&c.tree);
            let doubted = c.doubts.iter().any(|d| d.groups_of() == groups);
            known += usize::from(found == [3, 4, 8] || (found == [4, 8] && doubted));
            invented += usize::from(found != [3, 4, 8] && found != [4, 8]);
        }
        assert!(
            known >= least,
            "noise {sigma}: the groups known in {known} of 100"
        );
        assert!(
            invented <= most_invented,
            "noise {sigma}: a level invented in {invented} of 100"
        );
    }
}

/// The groups of each level of a tree over ranks.
fn level_groups(t: &Tree) -> Vec<Vec<Vec<usize>>> {
    let topology = crate::topology_of(t, t.ranks().len(), None).unwrap();
    topology.levels().iter().map(|l| l.groups.clone()).collect()
}

#[test]
fn hosts_are_one_level_under_every_group_of_hosts() {
    // Random fabric 2 as one kept run found it (2026-12-04): a group of two leaves beside two
    // groups of one leaf of two hosts, two ranks a host. The lone leaves' hosts were the
    // leaves' level (6 groups: two leaves, four hosts), a level of no fabric.
    let t = Tree::Node {
        children: vec![
            Tree::Node {
                children: vec![Tree::Leaf(vec![0, 1]), Tree::Leaf(vec![2, 3])],
                separation: Some(1.4),
            },
            Tree::Leaf(vec![4, 5]),
            Tree::Leaf(vec![6, 7]),
        ],
        separation: Some(1.3),
    };
    let kids: Vec<Tree> = (0..8).map(|x| Tree::Leaf(vec![2 * x, 2 * x + 1])).collect();
    let range = |a: usize, b: usize| (a..b).collect::<Vec<usize>>();
    let levels = level_groups(&join(&t, &kids, 5.0));
    assert_eq!(levels.len(), 3, "{levels:?}");
    assert_eq!(levels[0], [range(0, 8), range(8, 12), range(12, 16)]);
    assert_eq!(
        levels[1],
        [range(0, 4), range(4, 8), range(8, 12), range(12, 16)]
    );
    assert_eq!(
        levels[2],
        (0..8).map(|x| range(2 * x, 2 * x + 2)).collect::<Vec<_>>()
    );
    // A lone host beside a group of three, each host two sockets of two ranks: the lone
    // host's sockets are the sockets' level, not the hosts'.
    let t = Tree::Node {
        children: vec![Tree::Leaf(vec![0, 1, 2]), Tree::Leaf(vec![3])],
        separation: Some(2.0),
    };
    let kids: Vec<Tree> = (0..4)
        .map(|x| Tree::Node {
            children: vec![
                Tree::Leaf(range(4 * x, 4 * x + 2)),
                Tree::Leaf(range(4 * x + 2, 4 * x + 4)),
            ],
            separation: Some(2.0),
        })
        .collect();
    let levels = level_groups(&join(&t, &kids, 5.0));
    assert_eq!(levels.len(), 3, "{levels:?}");
    assert_eq!(levels[0], [range(0, 12), range(12, 16)]);
    assert_eq!(
        levels[1],
        (0..4).map(|x| range(4 * x, 4 * x + 4)).collect::<Vec<_>>()
    );
    assert_eq!(levels[2].len(), 8);
    // One host alone: its own tree.
    assert_eq!(join(&Tree::Leaf(vec![0]), &kids, 5.0), kids[0]);
}

/// 18 hosts of 2 ranks in 6 leaves of 3 (random fabric 29 on a 2-CPU machine, 2026-12-04):
/// 2 us inside a host, 15 between hosts of a leaf (20.5 without `leaves`) and 20.5 across,
/// each pair off by 1 %, and a third of the tests between hosts slowed as a whole by 6 or
/// 12 us (ranks descheduled on a busy machine: noise that only adds). Drawn from `seed`.
fn slowed_tests_dense(leaves: bool, seed: u64) -> (Array2<f64>, DenseHosts) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n = 36;
    let mut d = Array2::zeros((n, n));
    for a in 0..n {
        for b in a + 1..n {
            let (x, y) = (a / 2, b / 2);
            let base = match () {
                _ if x == y => 2.0,
                _ if leaves && x / 3 == y / 3 => 15.0,
                _ => 20.5,
            };
            let slowed = match rng.random_range(0.0..1.0) {
                _ if x == y => 0.0,
                u if u < 0.2 => 6.0,
                u if u < 0.33 => 12.0,
                _ => 0.0,
            };
            let v = base * (1.0 + 0.01 * rng.random_range(-1.0..1.0)) + slowed;
            d[[a, b]] = v;
            d[[b, a]] = v;
        }
    }
    (d, on_hosts(n, 2))
}

#[test]
fn leaves_hidden_by_tests_slowed_whole_show_in_the_least_of_their_pairs() {
    // The host medians of 4 pairs, one or two slowed, put some hosts of one leaf as far
    // apart as hosts across leaves; the least of each two hosts' pairs does not. Before the
    // least was looked at, the leaves were known in 2 of 40 draws and a wrong level (a leaf
    // split, one of its hosts alone) made in 26; with it, and a host alone no nearer its
    // nearest host than that host is to its own group: known in 30, wrong in 4 (leaves split
    // where every pair of one host with the rest of its leaf was slowed; the coarsest
    // grouping any size decides, not the highest z, made 2 but lost two kept testbed runs).
    let p = AutoParams::default();
    let leaves: Vec<Vec<usize>> = (0..6).map(|l| (3 * l..3 * l + 3).collect()).collect();
    let (mut known, mut wrong, mut invented) = (0, 0, 0);
    for seed in 0..40 {
        let (d, hosts) = slowed_tests_dense(true, 2900 + seed);
        let c = dense_by_hosts(&d, &hosts, &p).unwrap();
        let found = levels(&c.tree);
        let doubted = c.doubts.iter().any(|d| d.groups_of() == leaves);
        known += usize::from(found == [6, 18] || (found == [18] && doubted));
        wrong += usize::from(found != [6, 18] && found != [18]);
        let (d, hosts) = slowed_tests_dense(false, 2900 + seed);
        let c = dense_by_hosts(&d, &hosts, &p).unwrap();
        invented += usize::from(levels(&c.tree) != [18]);
    }
    assert!(known >= 29, "the leaves known in {known} of 40");
    assert!(wrong <= 4, "a wrong level in {wrong} of 40");
    assert!(invented <= 1, "a level invented in {invented} of 40");
}

#[test]
fn leaves_of_tests_slowed_whole_come_back_in_the_resamples() {
    // The model above where the leaves are found: the resamples must deal the slowing out as
    // what it is, delays above each two hosts' floor. Around each block's median (a third of
    // its pairs slowed moves it by up to 12 us) the least of a resampled block lands anywhere:
    // the leaves came back in 0 % of the resamples in each of the 12 draws of 20 that found
    // them (and in 0 of 20 of random fabric 29's kept run). Around the blocks' least, where the
    // blocks of a class agree on it better than on their median: in 40-90 % (13 of 20 for
    // fabric 29), kept (14 of 20) in 6 of the 12. What still loses them: a block whose four
    // pairs all draw a slowed residual (1 % a block, 18 blocks inside leaves), which the
    // measurement did not show but the noise could have made.
    let p = AutoParams::default();
    let (mut shares, mut kept) = (Vec::new(), 0);
    for seed in 0..20 {
        let (d, hosts) = slowed_tests_dense(true, 2900 + seed);
        let c = dense_by_hosts(&d, &hosts, &p).unwrap();
        if levels(&c.tree) != [6, 18] {
            continue;
        }
        let n = d.nrows();
        let topology = crate::topology_of(&c.tree, n, None).unwrap();
        let labels: Vec<Vec<usize>> = topology.levels().iter().map(|l| l.labels(n)).collect();
        let fit = |rs: &[Array2<f64>]| dense_by_hosts(&rs[0], &hosts, &p).unwrap().tree;
        let s = crate::confidence::stability_kept(
            &[&d],
            &labels,
            &c.slow,
            &fit,
            (20, 7),
            &|_| true,
            None,
        );
        assert_eq!(s.levels[1], 1.0, "seed {seed}: the hosts {:?}", s.levels);
        kept += usize::from(s.levels[0] >= crate::confidence::kept_share(20));
        shares.push(s.levels[0]);
    }
    assert!(
        shares.len() >= 10,
        "the leaves found in {} of 20",
        shares.len()
    );
    assert!(
        shares.iter().all(|&c| c >= 0.4),
        "the leaves came back in {shares:?} of the resamples"
    );
    assert!(
        2 * kept >= shares.len(),
        "the leaves kept in {kept} of the {} draws that found them",
        shares.len()
    );
}
