//! `auto` on synthetic machines with the artifacts the thesis reports: log-normal noise,
//! random outlier entries, a slow first pair (ranks 0 and 1), one slow rank, and one slow node.

use lgate_cluster::{adjusted_rand_index, auto, topology_of, AutoParams};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// 2 nodes x 2 sockets x 8 cores: 0.4 us inside a socket, 0.8 us across sockets (FRAM's
/// intra-socket twice as fast), 1.8 us across nodes.
fn machine(seed: u64, noise: f64) -> (Array2<f64>, Vec<usize>, Vec<usize>) {
    let n = 32;
    let node = |r: usize| r / 16;
    let socket = |r: usize| r / 8;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut d = Array2::zeros((n, n));
    for i in 0..n {
        for j in i + 1..n {
            let base = if node(i) != node(j) {
                1.8
            } else if socket(i) != socket(j) {
                0.8
            } else {
                0.4
            };
            // Noise of medians of repeated timings: within +-3.4 % for noise 0.02 (the shared
            // datasets vary 3-5 % inside groups).
            let z: f64 = rng.random_range(-1.0..1.0) * noise * 1.7;
            let mut x = base * z.exp();
            // A few outliers, only ever slow.
            if rng.random_bool(0.01) {
                x *= 3.0;
            }
            d[[i, j]] = x;
            d[[j, i]] = x;
        }
    }
    // The slow first pair of section 5.1.1.
    d[[0, 1]] *= 4.0;
    d[[1, 0]] = d[[0, 1]];
    let nodes = (0..n).map(node).collect();
    let sockets = (0..n).map(socket).collect();
    (d, nodes, sockets)
}

#[test]
fn nodes_and_sockets_survive_noise_outliers_and_a_slow_pair() {
    for seed in 0..20 {
        let (d, nodes, sockets) = machine(seed, 0.02);
        let t = topology_of(&auto(&d, &AutoParams::default()), 32, None).unwrap();
        let found: Vec<Vec<usize>> = t.levels().iter().map(|l| l.labels(32)).collect();
        for (name, truth) in [("node", &nodes), ("socket", &sockets)] {
            let best = found
                .iter()
                .map(|f| adjusted_rand_index(truth, f))
                .fold(0.0, f64::max);
            assert_eq!(
                best,
                1.0,
                "seed {seed}: {name} level not found; levels {:?}",
                t.levels()
            );
        }
        assert_eq!(found.len(), 2, "seed {seed}: extra levels {:?}", t.levels());
    }
}

#[test]
fn one_slow_node_does_not_hide_the_levels() {
    // 2 switches x 2 nodes x 2 sockets x 8 cores at FRAM's proportions (0.27 / 0.43 / 0.69 /
    // 0.89 us); every pair touching node 2 is 1.4 times slower, which lifts that node's pairs
    // across nodes (0.97) over the others' pairs across switches (0.89), and its pairs across
    // sockets (0.6) near the pairs across nodes.
    let n = 64;
    let switch = |r: usize| r / 32;
    let node = |r: usize| r / 16;
    let socket = |r: usize| r / 8;
    for seed in 0..20 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut d = Array2::zeros((n, n));
        for i in 0..n {
            for j in i + 1..n {
                let base = if switch(i) != switch(j) {
                    0.89
                } else if node(i) != node(j) {
                    0.69
                } else if socket(i) != socket(j) {
                    0.43
                } else {
                    0.27
                };
                let z: f64 = rng.random_range(-1.0..1.0) * 0.02 * 1.7;
                let slow = if node(i) == 2 || node(j) == 2 {
                    1.4
                } else {
                    1.0
                };
                d[[i, j]] = base * z.exp() * slow;
                d[[j, i]] = d[[i, j]];
            }
        }
        let t = topology_of(&auto(&d, &AutoParams::default()), n, None).unwrap();
        let found: Vec<Vec<usize>> = t.levels().iter().map(|l| l.labels(n)).collect();
        for (name, level) in [
            ("switch", &switch as &dyn Fn(usize) -> usize),
            ("node", &node),
            ("socket", &socket),
        ] {
            let truth: Vec<usize> = (0..n).map(level).collect();
            let best = found
                .iter()
                .map(|f| adjusted_rand_index(&truth, f))
                .fold(0.0, f64::max);
            assert_eq!(best, 1.0, "seed {seed}: {name}; levels {:?}", t.levels());
        }
        assert_eq!(found.len(), 3, "seed {seed}: extra levels {:?}", t.levels());
        // The slow node is named, with its factor.
        let slow = lgate_cluster::slow_ranks(&d);
        assert_eq!(slow.len(), 16, "seed {seed}: {slow:?}");
        assert!(slow
            .iter()
            .all(|&(r, f)| node(r) == 2 && (1.3..1.5).contains(&f)));
    }
}

#[test]
fn a_slow_rank_does_not_make_a_level() {
    for seed in 0..10 {
        let (mut d, nodes, _) = machine(seed, 0.02);
        for j in 0..32 {
            if j != 20 {
                d[[20, j]] *= 1.6;
                d[[j, 20]] *= 1.6;
            }
        }
        let t = topology_of(&auto(&d, &AutoParams::default()), 32, None).unwrap();
        assert!(
            t.levels()
                .iter()
                .all(|l| l.groups.iter().all(|g| g.len() > 1 || g[0] != 20)),
            "seed {seed}: {:?}",
            t.levels()
        );
        assert!(t
            .levels()
            .iter()
            .any(|l| adjusted_rand_index(&nodes, &l.labels(32)) == 1.0));
    }
}

#[test]
fn noise_alone_makes_no_level() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let n = 48;
    let mut d = Array2::zeros((n, n));
    for i in 0..n {
        for j in i + 1..n {
            let x = 1.0 * (rng.random_range(-1.0..1.0) * 0.1f64).exp();
            d[[i, j]] = x;
            d[[j, i]] = x;
        }
    }
    let t = topology_of(&auto(&d, &AutoParams::default()), n, None).unwrap();
    assert!(t.levels().is_empty(), "{:?}", t.levels());
}
