//! Every algorithm, every root, 2 to 8 ranks, sizes 0, 1, odd and not divisible by the segment,
//! flat and over 2- and 3-level topologies: every rank ends with exactly the root's bytes.

use lgate_bcast::{broadcast, prune_to_depth, BaseAlgorithm, BcastError, Plan};
use lgate_topology::TopologyNode;
use lgate_transport::{InProcessWorld, Transport};

/// The root's bytes: different for every root and length.
fn payload(root: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|k| (k * 31 + root * 7 + len) as u8 ^ 0x5a)
        .collect()
}

/// Runs `plan` from every root on a world of `n` ranks with each length; checks every buffer.
fn check(n: usize, plan: &Plan, lengths: &[usize]) {
    let world = InProcessWorld::new(n);
    for root in 0..n {
        for &len in lengths {
            let got = world.run(|t| {
                let mut buf = if t.rank() == root {
                    payload(root, len)
                } else {
                    vec![0xee; len]
                };
                broadcast(&t, &mut buf, root, plan).map(|()| buf)
            });
            for (rank, buf) in got.into_iter().enumerate() {
                let buf = buf.unwrap_or_else(|e| {
                    panic!("{}: n {n} root {root} len {len}: {e}", plan.name())
                });
                assert!(
                    buf == payload(root, len),
                    "{}: n {n}, root {root}, {len} bytes: rank {rank} holds other bytes",
                    plan.name()
                );
            }
        }
    }
}

const LENGTHS: [usize; 5] = [0, 1, 7, 100, 1001];

fn algorithms() -> Vec<BaseAlgorithm> {
    // Segments of 1, of 3 (dividing none of the odd lengths) and of 64.
    BaseAlgorithm::all(&[1, 3, 64])
}

#[test]
fn flat_broadcasts_deliver_the_roots_bytes() {
    for n in 2..=8 {
        for a in algorithms() {
            check(n, &Plan::Flat(a), &LENGTHS);
        }
    }
}

/// Two levels: groups of `per` consecutive ranks (the last may be smaller).
fn two_levels(n: usize, per: usize) -> TopologyNode {
    let ranks: Vec<usize> = (0..n).collect();
    TopologyNode::cluster(
        ranks
            .chunks(per)
            .map(|c| TopologyNode::group(c.to_vec()))
            .collect(),
    )
}

/// Three levels over 8 ranks, placed round-robin: switches {even, odd}, nodes of two.
fn three_levels_round_robin() -> TopologyNode {
    TopologyNode::cluster(vec![
        TopologyNode::cluster(vec![
            TopologyNode::group(vec![0, 2]),
            TopologyNode::group(vec![4, 6]),
        ]),
        TopologyNode::cluster(vec![
            TopologyNode::group(vec![1, 5]),
            TopologyNode::group(vec![3]),
            TopologyNode::group(vec![7]),
        ]),
    ])
}

#[test]
fn magpie_delivers_over_two_and_three_levels() {
    let mix = [
        (BaseAlgorithm::Flat, BaseAlgorithm::Binomial),
        (
            BaseAlgorithm::Pipeline { segment: 3 },
            BaseAlgorithm::SplitBinary,
        ),
        (
            BaseAlgorithm::Binomial,
            BaseAlgorithm::Pipeline { segment: 64 },
        ),
        (BaseAlgorithm::ScatterAllgather, BaseAlgorithm::Chain),
        (BaseAlgorithm::SplitBinary, BaseAlgorithm::ScatterAllgather),
        (BaseAlgorithm::Binary, BaseAlgorithm::Binary),
    ];
    for n in 2..=8 {
        for per in [1, 2, 3] {
            for &(between, inside) in &mix {
                let plan = Plan::Magpie {
                    tree: two_levels(n, per),
                    between,
                    inside,
                };
                check(n, &plan, &LENGTHS);
            }
        }
    }
    let tree = three_levels_round_robin();
    for segment in [1, 3, 64] {
        for depth in 1..=2 {
            let plan = Plan::Interpipe {
                tree: prune_to_depth(&tree, depth),
                between: BaseAlgorithm::Binomial,
                inside: BaseAlgorithm::Pipeline { segment: 2 },
                segment,
            };
            check(8, &plan, &LENGTHS);
        }
    }
    for a in algorithms() {
        for depth in 0..=2 {
            let plan = Plan::Magpie {
                tree: prune_to_depth(&tree, depth),
                between: a,
                inside: a,
            };
            check(8, &plan, &LENGTHS);
        }
    }
}

#[test]
fn bad_plans_are_errors_on_every_rank() {
    let world = InProcessWorld::new(3);
    let results = world.run(|t| {
        let mut buf = vec![0u8; 4];
        let plan = Plan::Magpie {
            tree: two_levels(2, 1),
            between: BaseAlgorithm::Flat,
            inside: BaseAlgorithm::Flat,
        };
        (
            broadcast(&t, &mut buf, 0, &plan).map_err(|e| e.to_string()),
            broadcast(&t, &mut buf, 3, &Plan::Flat(BaseAlgorithm::Flat)).map_err(|e| e.to_string()),
        )
    });
    for (tree, root) in results {
        assert!(tree.unwrap_err().contains("rank 2 is missing"));
        assert!(root.unwrap_err().contains("root 3 is not a rank"));
    }
    let zero = Plan::Flat(BaseAlgorithm::Pipeline { segment: 0 });
    assert!(matches!(zero.check(2), Err(BcastError::ZeroSegment)));
}
