//! Which pairs are tested when: the LGate schedule over a topology tree.
//!
//! Every leaf group tests the pairs among its ranks, one pair at a time, while other leaves do
//! the same; a cluster then tests the pairs across its children, one at a time, while other
//! clusters do the same; and so on up to the root. Each unordered pair is tested once per
//! sweep, at the lowest node holding both of its ranks, and a rank is never in two tests at
//! once because each rank walks its own path from its leaf to the root in order.

use std::collections::HashSet;

use lgate_topology::{Rank, TopologyNode};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// An unordered pair of ranks, stored with the sender `i` below the receiver `j`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Pair {
    /// The sender, the smaller rank.
    pub i: Rank,
    /// The receiver, the larger rank.
    pub j: Rank,
}

impl Pair {
    /// The pair of two different ranks, in either order.
    pub fn new(a: Rank, b: Rank) -> Self {
        assert_ne!(a, b, "a pair needs two ranks");
        Pair {
            i: a.min(b),
            j: a.max(b),
        }
    }

    /// Whether `rank` is one of the two.
    pub fn contains(&self, rank: Rank) -> bool {
        self.i == rank || self.j == rank
    }
}

/// A pair in one sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SweepPair {
    /// The sweep, from 0.
    pub sweep: u32,
    /// The pair.
    pub pair: Pair,
}

/// An error in the inputs of a schedule.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    /// The topology names ranks the job does not have.
    #[error("the topology names rank {rank}, but the job has only {size} ranks (0 to {last})", last = size - 1)]
    RankOutsideJob {
        /// The first such rank.
        rank: Rank,
        /// The job's size.
        size: usize,
    },
    /// The topology leaves out ranks of the job.
    #[error("the topology leaves out ranks {ranks} of the job's {size}; every rank must be in one group")]
    MissingRanks {
        /// The ranks left out, compressed.
        ranks: String,
        /// The job's size.
        size: usize,
    },
    /// A fast-mode share outside (0, 1].
    #[error("--fast {0}: the share of ranks to test must be above 0 and at most 1")]
    BadFraction(f64),
    /// An option of the plan that cannot make one.
    #[error("{0}")]
    BadOption(String),
}

/// A node of the schedule: the ranks under it and the pairs it tests.
///
/// Pairs are numbered and computed from their number, never stored: a flat job of 4096 ranks
/// has 8.4 million of them.
#[derive(Debug, Clone)]
struct Node {
    /// The tested ranks under this node, sorted: the members of its barriers.
    members: Vec<Rank>,
    /// Leaf: the pairs among `members`. Cluster: the pairs across its children.
    across: Vec<Block>,
    /// The number of pairs this node tests.
    pair_count: u64,
    parent: Option<usize>,
}

/// The pairs between two children of a cluster, numbered from `first`.
#[derive(Debug, Clone)]
struct Block {
    left: usize,
    right: usize,
    first: u64,
}

impl Node {
    /// Pair number `k` of this node, `k < pair_count`.
    fn pair_at(&self, nodes: &[Node], k: u64) -> Pair {
        if self.across.is_empty() {
            // Leaf: pairs (a, b), a < b, numbered b (b - 1) / 2 + a.
            let mut b = ((1.0 + (1.0 + 8.0 * k as f64).sqrt()) / 2.0) as u64;
            while b * (b - 1) / 2 > k {
                b -= 1;
            }
            while (b + 1) * b / 2 <= k {
                b += 1;
            }
            let a = k - b * (b - 1) / 2;
            return Pair::new(self.members[a as usize], self.members[b as usize]);
        }
        let block = match self.across.binary_search_by(|blk| blk.first.cmp(&k)) {
            Ok(i) => &self.across[i],
            Err(i) => &self.across[i - 1],
        };
        let right = &nodes[block.right].members;
        let r = k - block.first;
        let x = nodes[block.left].members[(r / right.len() as u64) as usize];
        let y = right[(r % right.len() as u64) as usize];
        Pair::new(x, y)
    }
}

/// A seeded permutation of `0..n` that needs no memory: a Feistel network on the next power of
/// four, cycle-walking until the value falls below `n`.
#[derive(Debug, Clone)]
struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    fn new(n: u64, seed: u64, stream: u64) -> Self {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut key = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let keys = std::array::from_fn(|_| {
            key = splitmix64(key);
            key
        });
        Permutation { n, half_bits, keys }
    }

    fn apply(&self, x: u64) -> u64 {
        if self.n <= 1 {
            return x;
        }
        let mask = (1u64 << self.half_bits) - 1;
        let mut y = x;
        loop {
            let (mut l, mut r) = (y >> self.half_bits, y & mask);
            for key in self.keys {
                (l, r) = (r, l ^ (splitmix64(r ^ key) & mask));
            }
            y = l << self.half_bits | r;
            if y < self.n {
                return y;
            }
        }
    }
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The LGate schedule of a job.
#[derive(Debug, Clone)]
pub struct Schedule {
    nodes: Vec<Node>,
    /// For each rank, the leaf node it belongs to, if it is tested.
    leaf_of: Vec<Option<usize>>,
    seed: u64,
}

/// One step of a rank's program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    /// Synchronise with these ranks; `id` is the same on all of them.
    Barrier {
        /// The members of the barrier.
        members: &'a [Rank],
        /// An id that every member computes alike.
        id: u64,
    },
    /// Take part in the test of this pair.
    Test(SweepPair),
}

impl Schedule {
    /// The schedule of a job of `size` ranks over `tree`; `fast` tests only that share of each
    /// group's ranks, chosen at random from `seed`.
    pub fn new(
        tree: &TopologyNode,
        size: usize,
        seed: u64,
        fast: Option<f64>,
    ) -> Result<Self, ScheduleError> {
        let mut listed = vec![false; size];
        for rank in tree.ranks() {
            if rank >= size {
                return Err(ScheduleError::RankOutsideJob { rank, size });
            }
            listed[rank] = true;
        }
        let missing: Vec<Rank> = (0..size).filter(|&r| !listed[r]).collect();
        if !missing.is_empty() {
            return Err(ScheduleError::MissingRanks {
                ranks: lgate_topology::sorted_rank_list(&missing),
                size,
            });
        }
        if let Some(f) = fast {
            if !(f > 0.0 && f <= 1.0) {
                return Err(ScheduleError::BadFraction(f));
            }
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xFA57_5E1E_C7ED_0000);
        let mut schedule = Schedule {
            nodes: Vec::new(),
            leaf_of: vec![None; size],
            seed,
        };
        schedule.add(tree, None, fast, &mut rng);
        Ok(schedule)
    }

    /// Adds the nodes of `tree` under `parent` and returns the index of its top, if it has
    /// tested ranks. Clusters with one child add nothing of their own.
    fn add(
        &mut self,
        tree: &TopologyNode,
        parent: Option<usize>,
        fast: Option<f64>,
        rng: &mut ChaCha8Rng,
    ) -> Option<usize> {
        match tree {
            TopologyNode::Group { ranks, .. } => {
                let mut members = ranks.clone();
                if let Some(f) = fast {
                    let keep =
                        ((f * members.len() as f64).ceil() as usize).max(2.min(members.len()));
                    members.shuffle(rng);
                    members.truncate(keep);
                }
                members.sort_unstable();
                let n = members.len() as u64;
                let index = self.nodes.len();
                for &r in &members {
                    self.leaf_of[r] = Some(index);
                }
                self.nodes.push(Node {
                    members,
                    across: Vec::new(),
                    pair_count: n * n.saturating_sub(1) / 2,
                    parent,
                });
                Some(index)
            }
            TopologyNode::Cluster { children, .. } if children.len() == 1 => {
                self.add(&children[0], parent, fast, rng)
            }
            TopologyNode::Cluster { children, .. } => {
                let index = self.nodes.len();
                self.nodes.push(Node {
                    members: Vec::new(),
                    across: Vec::new(),
                    pair_count: 0,
                    parent,
                });
                let kids: Vec<usize> = children
                    .iter()
                    .filter_map(|c| self.add(c, Some(index), fast, rng))
                    .collect();
                let mut across = Vec::new();
                let mut count = 0u64;
                for (a, &left) in kids.iter().enumerate() {
                    for &right in &kids[a + 1..] {
                        across.push(Block {
                            left,
                            right,
                            first: count,
                        });
                        count += (self.nodes[left].members.len() * self.nodes[right].members.len())
                            as u64;
                    }
                }
                let mut members: Vec<Rank> = kids
                    .iter()
                    .flat_map(|&k| self.nodes[k].members.iter().copied())
                    .collect();
                members.sort_unstable();
                let node = &mut self.nodes[index];
                node.members = members;
                node.across = across;
                node.pair_count = count;
                Some(index)
            }
        }
    }

    /// The seed of the pair order.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The number of ranks in the job.
    pub fn size(&self) -> usize {
        self.leaf_of.len()
    }

    /// The ranks that take part in tests, ascending.
    pub fn tested_ranks(&self) -> Vec<Rank> {
        (0..self.size())
            .filter(|&r| self.leaf_of[r].is_some())
            .collect()
    }

    /// The number of pairs tested per sweep.
    pub fn pairs_per_sweep(&self) -> usize {
        self.nodes.iter().map(|n| n.pair_count as usize).sum()
    }

    /// Every pair of one sweep, in no particular order.
    pub fn pairs(&self) -> impl Iterator<Item = Pair> + '_ {
        self.nodes
            .iter()
            .flat_map(|n| (0..n.pair_count).map(|k| n.pair_at(&self.nodes, k)))
    }

    /// The number of leaf groups: how many pair tests may run at the same time at most.
    pub fn leaf_count(&self) -> usize {
        let mut leaves: Vec<usize> = self.leaf_of.iter().flatten().copied().collect();
        leaves.sort_unstable();
        leaves.dedup();
        leaves.len()
    }

    /// The wall time of one sweep when every pair takes `pair_time` and a barrier among `n`
    /// ranks takes `barrier_time(n)`: nodes in different subtrees run at the same time, and a
    /// node starts once all of its children have finished (its first barrier waits for them).
    pub fn critical_path(
        &self,
        pair_time: impl Fn(Pair) -> f64,
        barrier_time: impl Fn(usize) -> f64,
    ) -> f64 {
        let mut finish = vec![0.0f64; self.nodes.len()];
        // Parents are created before their children, so descending order visits children first.
        for (k, node) in self.nodes.iter().enumerate().rev() {
            let own: f64 = (0..node.pair_count)
                .map(|q| pair_time(node.pair_at(&self.nodes, q)))
                .sum::<f64>()
                + node.pair_count as f64 * barrier_time(node.members.len());
            finish[k] += own;
            if let Some(parent) = node.parent {
                finish[parent] = finish[parent].max(finish[k]);
            }
        }
        self.nodes
            .iter()
            .zip(&finish)
            .filter(|(n, _)| n.parent.is_none())
            .map(|(_, &f)| f)
            .fold(0.0, f64::max)
    }

    /// The nodes from `rank`'s leaf up to the root; empty for a rank that is not tested.
    fn path(&self, rank: Rank) -> Vec<usize> {
        let mut out = Vec::new();
        let mut node = match self.leaf_of.is_empty() {
            // A group's own schedule: its one node, for its members.
            true => self
                .nodes
                .first()
                .filter(|n| n.members.binary_search(&rank).is_ok())
                .map(|_| 0),
            false => self.leaf_of.get(rank).copied().flatten(),
        };
        while let Some(n) = node {
            out.push(n);
            node = self.nodes[n].parent;
        }
        out
    }

    /// The permutation that orders a node's pairs in one sweep; every rank computes it alike.
    fn permutation(&self, node: usize, sweep: u32) -> Permutation {
        let stream = (node as u64) << 32 | sweep as u64;
        Permutation::new(self.nodes[node].pair_count, self.seed, stream)
    }

    /// A node's pairs in the order of one sweep.
    #[cfg(test)]
    fn order(&self, node: usize, sweep: u32) -> Vec<Pair> {
        let perm = self.permutation(node, sweep);
        let n = &self.nodes[node];
        (0..n.pair_count)
            .map(|k| n.pair_at(&self.nodes, perm.apply(k)))
            .collect()
    }

    /// `rank`'s program for the sweeps `0..sweeps`, skipping pairs in `done`: before each pair
    /// of a node, a barrier of the node's members, then the test for the pair's two ranks.
    pub fn program<'a>(
        &'a self,
        rank: Rank,
        sweeps: u32,
        done: &'a HashSet<SweepPair>,
    ) -> impl Iterator<Item = Step<'a>> + 'a {
        (0..sweeps)
            .flat_map(move |sweep| self.sweep_program(rank, sweep, move |sp| done.contains(sp)))
    }

    /// `rank`'s program for one sweep, skipping the pairs `skip` names.
    pub fn sweep_program<'a>(
        &'a self,
        rank: Rank,
        sweep: u32,
        skip: impl Fn(&SweepPair) -> bool + Clone + 'a,
    ) -> impl Iterator<Item = Step<'a>> + 'a {
        self.path(rank).into_iter().flat_map(move |node| {
            let n = &self.nodes[node];
            let members = n.members.as_slice();
            let perm = self.permutation(node, sweep);
            let skip = skip.clone();
            (0..n.pair_count)
                .map(move |k| (k, n.pair_at(&self.nodes, perm.apply(k))))
                .filter(move |(_, pair)| !skip(&SweepPair { sweep, pair: *pair }))
                .flat_map(move |(k, pair)| {
                    let id = (sweep as u64) << 48 ^ (node as u64) << 32 ^ k;
                    let barrier = Step::Barrier { members, id };
                    let test = pair
                        .contains(rank)
                        .then_some(Step::Test(SweepPair { sweep, pair }));
                    std::iter::once(barrier).chain(test)
                })
        })
    }

    /// The schedule of one group (`members`, sorted) of a larger job: the pairs among them.
    /// It holds nothing per rank of the job, so a job of many groups can have one for each.
    pub fn of_group(members: &[Rank], seed: u64) -> Self {
        let n = members.len() as u64;
        Schedule {
            nodes: vec![Node {
                members: members.to_vec(),
                across: Vec::new(),
                pair_count: n * n.saturating_sub(1) / 2,
                parent: None,
            }],
            leaf_of: Vec::new(),
            seed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lgate_topology::lgate;

    fn tree(text: &str) -> TopologyNode {
        lgate::parse(text, None).unwrap().tree().clone()
    }

    #[test]
    fn critical_path_overlaps_subtrees() {
        // Two leaves of 3 ranks run side by side (3 pairs each), then 9 pairs across them.
        let s =
            Schedule::new(&tree("cluster { group { 0-2 } group { 3-5 } }"), 6, 1, None).unwrap();
        let t = s.critical_path(|_| 1.0, |_| 0.0);
        assert_eq!(t, 3.0 + 9.0);
        let flat = Schedule::new(&tree("group { 0-5 }"), 6, 1, None).unwrap();
        assert_eq!(flat.critical_path(|_| 1.0, |n| 0.5 * n as f64), 15.0 * 4.0);
        // A slow pair in one leaf delays the root by its excess only.
        let slow = s.critical_path(|p| if p == Pair::new(0, 1) { 5.0 } else { 1.0 }, |_| 0.0);
        assert_eq!(slow, 7.0 + 9.0);
    }

    fn all_tests(s: &Schedule, sweeps: u32) -> Vec<SweepPair> {
        let done = HashSet::new();
        let mut out = Vec::new();
        for rank in 0..s.size() {
            for step in s.program(rank, sweeps, &done) {
                if let Step::Test(sp) = step {
                    if sp.pair.i == rank {
                        out.push(sp);
                    }
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn every_pair_once_per_sweep_on_both_ranks() {
        let t = tree("cluster { cluster { group { 0-2 } group { 3,4 } } group { 5-8 } cluster { group { 9 } } }");
        let s = Schedule::new(&t, 10, 42, None).unwrap();
        assert_eq!(s.pairs_per_sweep(), 45);
        let tests = all_tests(&s, 3);
        let mut expected = Vec::new();
        for sweep in 0..3 {
            for i in 0..10 {
                for j in i + 1..10 {
                    expected.push(SweepPair {
                        sweep,
                        pair: Pair::new(i, j),
                    });
                }
            }
        }
        assert_eq!(tests, expected);
        // The receiver runs the same tests as the sender.
        let done = HashSet::new();
        for sp in &tests {
            assert!(s
                .program(sp.pair.j, 3, &done)
                .any(|st| st == Step::Test(*sp)));
        }
    }

    #[test]
    fn members_of_a_node_agree_on_its_barriers() {
        let t = tree("cluster { group { 0-3 } group { 4-7 } }");
        let s = Schedule::new(&t, 8, 7, None).unwrap();
        let done = HashSet::new();
        let barriers = |rank| -> Vec<(Vec<Rank>, u64)> {
            s.program(rank, 1, &done)
                .filter_map(|st| match st {
                    Step::Barrier { members, id } => Some((members.to_vec(), id)),
                    _ => None,
                })
                .collect()
        };
        // Ranks of one leaf see the same barriers; the two leaves differ until the root.
        assert_eq!(barriers(0), barriers(3));
        assert_eq!(barriers(4), barriers(7));
        assert_ne!(barriers(0), barriers(4));
        assert_eq!(
            barriers(0)[6..],
            barriers(4)[6..],
            "6 pairs per leaf, then the root"
        );
        assert_eq!(barriers(0).len(), 6 + 16);
    }

    #[test]
    fn order_is_shuffled_by_seed_and_sweep() {
        let t = tree("group { 0-9 }");
        let a = Schedule::new(&t, 10, 1, None).unwrap();
        let b = Schedule::new(&t, 10, 2, None).unwrap();
        assert_ne!(a.order(0, 0), b.order(0, 0));
        assert_ne!(a.order(0, 0), a.order(0, 1));
        assert_eq!(
            a.order(0, 1),
            Schedule::new(&t, 10, 1, None).unwrap().order(0, 1)
        );
    }

    #[test]
    fn fast_mode_tests_a_share_of_each_group() {
        let t = tree("cluster { group { 0-9 } group { 10-19 } group { 20,21 } }");
        let s = Schedule::new(&t, 22, 5, Some(0.3)).unwrap();
        let tested = s.tested_ranks();
        assert_eq!(tested.iter().filter(|&&r| r < 10).count(), 3);
        assert_eq!(tested.iter().filter(|&&r| (10..20).contains(&r)).count(), 3);
        assert_eq!(
            tested.iter().filter(|&&r| r >= 20).count(),
            2,
            "at least two per group"
        );
        let n = tested.len();
        assert_eq!(s.pairs_per_sweep(), n * (n - 1) / 2);
        let untested = (0..22).find(|r| !tested.contains(r)).unwrap();
        assert!(s.program(untested, 1, &HashSet::new()).next().is_none());
        let again = Schedule::new(&t, 22, 5, Some(0.3)).unwrap();
        assert_eq!(again.tested_ranks(), tested, "the choice follows the seed");
        assert!(matches!(
            Schedule::new(&t, 22, 5, Some(0.0)),
            Err(ScheduleError::BadFraction(_))
        ));
    }

    #[test]
    fn done_pairs_are_skipped_with_their_barriers() {
        let t = tree("group { 0-3 }");
        let s = Schedule::new(&t, 4, 3, None).unwrap();
        let done: HashSet<SweepPair> = [SweepPair {
            sweep: 0,
            pair: Pair::new(0, 1),
        }]
        .into();
        let steps: Vec<_> = s.program(2, 1, &done).collect();
        let barriers = steps
            .iter()
            .filter(|s| matches!(s, Step::Barrier { .. }))
            .count();
        assert_eq!(barriers, 5);
        assert!(!s.program(0, 1, &done).any(|st| st
            == Step::Test(SweepPair {
                sweep: 0,
                pair: Pair::new(0, 1)
            })));
    }

    #[test]
    fn permutations_are_bijections() {
        for n in [0u64, 1, 2, 3, 7, 64, 100, 1000, 4097] {
            let p = Permutation::new(n, 11, 3);
            let mut seen: Vec<u64> = (0..n).map(|k| p.apply(k)).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n = {n}");
        }
        let a: Vec<u64> = (0..50)
            .map(|k| Permutation::new(50, 1, 0).apply(k))
            .collect();
        assert_ne!(a, (0..50).collect::<Vec<_>>(), "it shuffles");
    }

    #[test]
    fn pair_numbers_cover_each_pair_once() {
        let t =
            tree("cluster { group { 0-4 } group { 5,6 } cluster { group { 7-9 } group { 10 } } }");
        let s = Schedule::new(&t, 11, 0, None).unwrap();
        let mut pairs: Vec<Pair> = s.pairs().collect();
        pairs.sort();
        let expected: Vec<Pair> = (0..11)
            .flat_map(|i| (i + 1..11).map(move |j| Pair::new(i, j)))
            .collect();
        assert_eq!(pairs, expected);
    }

    #[test]
    fn topology_must_cover_the_job() {
        let t = tree("cluster { group { 0-3 } group { 4,5 } }");
        assert!(matches!(
            Schedule::new(&t, 5, 0, None),
            Err(ScheduleError::RankOutsideJob { rank: 5, size: 5 })
        ));
        let err = Schedule::new(&t, 8, 0, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the topology leaves out ranks 6,7 of the job's 8; every rank must be in one group"
        );
    }
}
