//! Which pairs are tested when: the LGate schedule over a topology tree.
//!
//! Every leaf group tests the pairs among its ranks, one pair at a time, while other leaves do
//! the same; a cluster then tests the pairs across its children, one at a time, while other
//! clusters do the same; and so on up to the root. Each unordered pair is tested once per
//! sweep, at the lowest node holding both of its ranks, and a rank is never in two tests at
//! once because each rank walks its own path from its leaf to the root in order.

use std::borrow::Cow;
use std::collections::HashSet;

use lgate_topology::{Rank, TopologyNode};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use lgate_rundir::Pair;

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
    #[error("fast mode's share of ranks {0}: must be above 0 and at most 1")]
    BadFraction(f64),
    /// A choice of the staged plan that must be at least 1.
    #[error("{0} must be at least 1")]
    NoneOf(StagedChoice),
    /// A sweep asked of more ranks than it runs on.
    #[error(
        "a sweep tests every pair between hosts: {pairs} pairs at {size} ranks; it runs on up to \
         {most} ranks: sweep a part of the machine at a time"
    )]
    SweepTooLarge {
        /// The pairs it would test.
        pairs: usize,
        /// The job's ranks.
        size: usize,
        /// The most ranks a sweep runs on.
        most: usize,
    },
}

/// A choice of the staged plan that a count sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StagedChoice {
    /// The pairs tested between each two hosts.
    PairsBetween,
    /// The tests run at once.
    Concurrency,
}

impl std::fmt::Display for StagedChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StagedChoice::PairsBetween => "pairs_between",
            StagedChoice::Concurrency => "concurrency",
        })
    }
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

/// One step of a rank's program; `T` is what a test step carries (a pair in a sweep, or a
/// staged plan's [`crate::StagedTest`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step<'a, T = SweepPair> {
    /// Synchronise with these ranks; `id` is the same on all of them.
    Barrier {
        /// The members of the barrier.
        members: Cow<'a, [Rank]>,
        /// An id that every member computes alike.
        id: u64,
    },
    /// Pass the turn from the pair that just finished to the pair about to start.
    Handoff {
        /// The pair that just finished.
        from: Pair,
        /// The pair about to start.
        to: Pair,
        /// An id that both pairs compute alike.
        id: u64,
    },
    /// Take part in this test.
    Test(T),
}

/// How a unit of tests among `members` (sorted), run one at a time, synchronises before the
/// test of `next`, `previous` the unit's test before it.
///
/// The unit's first test waits for a barrier of every member, so that the unit starts once
/// each has finished what came before it; each later one for a handoff from the pair that
/// just finished to the pair about to start, so the unit's other ranks sleep until their own
/// turn instead of waking for every test (a barrier of all members before each test woke
/// every member about log2(n) times a test: the waiting ranks' CPU in short runs, and a cost
/// that grows with n).
pub fn turn(members: &[Rank], previous: Option<Pair>, next: Pair) -> Turn<'_> {
    match previous {
        None => Turn::Barrier(members),
        Some(p) => Turn::Handoff(p, next),
    }
}

/// What a test of a unit waits for: see [`turn`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn<'a> {
    /// A barrier of these ranks.
    Barrier(&'a [Rank]),
    /// The turn passed from the first pair to the second.
    Handoff(Pair, Pair),
}

impl Turn<'_> {
    /// Whether `rank` takes part.
    pub fn involves(&self, rank: Rank) -> bool {
        match self {
            Turn::Barrier(members) => members.binary_search(&rank).is_ok(),
            Turn::Handoff(from, to) => from.contains(rank) || to.contains(rank),
        }
    }
}

/// The time the barriers and handoffs of a unit of `tests` tests among `members` ranks take
/// (see [`turn`]) when a barrier among `n` ranks takes `barrier_time(n)`.
/// A handoff is one message from each finished rank: a barrier of two in time.
pub fn unit_barrier_time(tests: u64, members: usize, barrier_time: impl Fn(usize) -> f64) -> f64 {
    match tests {
        0 => 0.0,
        _ => barrier_time(members) + (tests - 1) as f64 * barrier_time(2.min(members)),
    }
}

impl<'a, T> Step<'a, T> {
    /// The step that waits for `turn`.
    pub fn of_turn(turn: Turn<'a>, id: u64) -> Self {
        match turn {
            Turn::Barrier(members) => Step::Barrier {
                members: Cow::Borrowed(members),
                id,
            },
            Turn::Handoff(from, to) => Step::Handoff { from, to, id },
        }
    }

    /// The same step, holding its own copy of a barrier's members.
    pub fn into_owned(self) -> Step<'static, T> {
        match self {
            Step::Barrier { members, id } => Step::Barrier {
                members: Cow::Owned(members.into_owned()),
                id,
            },
            Step::Handoff { from, to, id } => Step::Handoff { from, to, id },
            Step::Test(t) => Step::Test(t),
        }
    }

    /// The same step with its synchronisation ids renumbered by `id` and its test by `test`.
    pub fn map<U>(self, id: impl Fn(u64) -> u64, test: impl FnOnce(T) -> U) -> Step<'a, U> {
        match self {
            Step::Barrier { members, id: i } => Step::Barrier { members, id: id(i) },
            Step::Handoff { from, to, id: i } => Step::Handoff {
                from,
                to,
                id: id(i),
            },
            Step::Test(t) => Step::Test(test(t)),
        }
    }
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
                + unit_barrier_time(node.pair_count, node.members.len(), &barrier_time);
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

    /// `rank`'s program for the sweeps `0..sweeps`, skipping pairs in `done`: before a node's
    /// first pair a barrier of its members, before each later pair a handoff ([`turn`]), then the test
    /// for the pair's two ranks.
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
                .scan(None, move |previous, (k, pair)| {
                    Some((k, pair, turn(members, previous.replace(pair), pair)))
                })
                .flat_map(move |(k, pair, turn)| {
                    let id = (sweep as u64) << 48 ^ (node as u64) << 32 ^ k;
                    let barrier = turn.involves(rank).then(|| Step::of_turn(turn, id));
                    let test = pair
                        .contains(rank)
                        .then_some(Step::Test(SweepPair { sweep, pair }));
                    barrier.into_iter().chain(test)
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

/// Runs the programs of every rank as the ranks would, to check a plan's barriers in tests.
#[cfg(test)]
pub(crate) mod replay {
    use super::{Pair, Rank};

    /// A step as the replay sees it.
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) enum Event {
        /// A barrier: its members and id.
        Barrier(Vec<Rank>, u64),
        /// A handoff from the first pair to the second, and its id.
        Handoff(Pair, Pair, u64),
        /// A test of a pair in a sweep.
        Test(u32, Pair),
    }

    /// A test as it ran: sweep, pair, start and end.
    pub(crate) type Ran = (u32, Pair, f64, f64);

    /// Walks `programs` (one per rank) together: a barrier ends once every member has reached
    /// it, at the latest member's time; a handoff's first pair passes it at once, leaving a
    /// token, and its second pair once it has the first pair's tokens; a test starts once both
    /// ranks have reached it and takes `duration(pair)`. Panics when the ranks disagree about
    /// a barrier or a handoff, or deadlock.
    pub(crate) fn replay(programs: &[Vec<Event>], duration: impl Fn(Pair) -> f64) -> Vec<Ran> {
        let n = programs.len();
        let (mut at, mut clock) = (vec![0usize; n], vec![0.0f64; n]);
        let mut ran = Vec::new();
        // (handoff id, rank of the first pair) -> when that rank left its token.
        let mut tokens: std::collections::HashMap<(u64, Rank), (Pair, Pair, f64)> =
            std::collections::HashMap::new();
        loop {
            let mut moved = false;
            for r in 0..n {
                match programs[r].get(at[r]) {
                    Some(Event::Barrier(members, id)) => {
                        assert!(members.contains(&r), "rank {r} outside barrier {id:#x}");
                        let here = |m: &Rank| {
                            programs[*m].get(at[*m]) == Some(&Event::Barrier(members.clone(), *id))
                        };
                        if members.iter().all(here) {
                            let t = members.iter().map(|&m| clock[m]).fold(0.0, f64::max);
                            for &m in members {
                                clock[m] = t;
                                at[m] += 1;
                            }
                            moved = true;
                        }
                    }
                    Some(&Event::Handoff(from, to, id)) => {
                        assert!(
                            from.contains(r) || to.contains(r),
                            "rank {r} outside {id:#x}"
                        );
                        if from.contains(r) && !tokens.contains_key(&(id, r)) {
                            tokens.insert((id, r), (from, to, clock[r]));
                            moved = true;
                        }
                        let senders = [from.i, from.j];
                        let mut ready = clock[r];
                        let mut all = true;
                        for f in senders.into_iter().filter(|&f| f != r) {
                            match tokens.get(&(id, f)) {
                                Some(&(ff, tt, t)) => {
                                    assert_eq!((ff, tt), (from, to), "handoff {id:#x} disagrees");
                                    ready = ready.max(t);
                                }
                                None => all = false,
                            }
                        }
                        if !to.contains(r) || all {
                            clock[r] = if to.contains(r) { ready } else { clock[r] };
                            at[r] += 1;
                            moved = true;
                        }
                    }
                    Some(&Event::Test(sweep, pair)) => {
                        let other = if pair.i == r { pair.j } else { pair.i };
                        if r == pair.i
                            && programs[other].get(at[other]) == Some(&Event::Test(sweep, pair))
                        {
                            let start = clock[r].max(clock[other]);
                            let end = start + duration(pair);
                            (clock[r], clock[other]) = (end, end);
                            at[r] += 1;
                            at[other] += 1;
                            ran.push((sweep, pair, start, end));
                            moved = true;
                        }
                    }
                    None => {}
                }
            }
            if !moved {
                let stuck: Vec<(Rank, &Event)> = (0..n)
                    .filter_map(|r| programs[r].get(at[r]).map(|e| (r, e)))
                    .collect();
                assert!(stuck.is_empty(), "deadlock: {stuck:?}");
                return ran;
            }
        }
    }

    /// Whether two tests ran at the same time.
    pub(crate) fn overlap(a: &Ran, b: &Ran) -> bool {
        a.2 < b.3 && b.2 < a.3
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lgate_topology::lgate;
    use replay::{overlap, replay, Event};

    fn events(s: &Schedule, sweeps: u32, done: &HashSet<SweepPair>) -> Vec<Vec<Event>> {
        (0..s.size())
            .map(|r| {
                s.program(r, sweeps, done)
                    .map(|st| match st {
                        Step::Barrier { members, id } => Event::Barrier(members.to_vec(), id),
                        Step::Handoff { from, to, id } => Event::Handoff(from, to, id),
                        Step::Test(sp) => Event::Test(sp.sweep, sp.pair),
                    })
                    .collect()
            })
            .collect()
    }

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
        // A barrier of all 6 before the first pair, a handoff (a barrier of 2 in time) before
        // each of the 14 others.
        let flat = Schedule::new(&tree("group { 0-5 }"), 6, 1, None).unwrap();
        assert_eq!(
            flat.critical_path(|_| 1.0, |n| 0.5 * n as f64),
            15.0 + 3.0 + 14.0 * 1.0
        );
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
    fn tests_of_a_node_run_one_at_a_time_and_after_its_children() {
        let t = tree("cluster { group { 0-3 } group { 4-8 } }");
        let s = Schedule::new(&t, 9, 7, None).unwrap();
        let ran = replay(&events(&s, 2, &HashSet::new()), |p| 1.0 + p.i as f64 / 10.0);
        assert_eq!(ran.len(), 2 * 36, "every pair once per sweep");
        let leaf = |p: Pair| match (p.i < 4, p.j < 4) {
            (true, true) => 0,
            (false, false) => 1,
            _ => 2,
        };
        for a in &ran {
            for b in &ran {
                if a == b {
                    continue;
                }
                // One test at a time in each leaf and across them; the leaves side by side.
                if leaf(a.1) == leaf(b.1) {
                    assert!(!overlap(a, b), "{a:?} and {b:?}");
                }
                // The pairs across the leaves wait for both leaves of their sweep.
                if a.0 == b.0 && leaf(a.1) == 2 && leaf(b.1) < 2 {
                    assert!(a.2 >= b.3, "{a:?} started before {b:?} ended");
                }
            }
        }
        // Both leaves really run side by side: the root's first pair starts before 6 + 10
        // leaf tests one after the other would end.
        let first_across = ran
            .iter()
            .filter(|r| r.0 == 0 && leaf(r.1) == 2)
            .map(|r| r.2)
            .fold(f64::INFINITY, f64::min);
        assert!(first_across < 16.0, "{first_across}");
    }

    #[test]
    fn waiting_ranks_sit_out_the_handoffs_of_others() {
        // One group of 8: a barrier of all 8 before the first test, then handoffs that only
        // the two pairs concerned take part in.
        let s = Schedule::new(&tree("group { 0-7 }"), 8, 3, None).unwrap();
        let programs = events(&s, 1, &HashSet::new());
        for (rank, program) in programs.iter().enumerate() {
            assert!(matches!(&program[0], Event::Barrier(m, _) if m.len() == 8));
            let handoffs = program
                .iter()
                .filter(|e| matches!(e, Event::Handoff(..)))
                .count();
            assert_eq!(
                program.len() - handoffs,
                1 + 7,
                "rank {rank}: the barrier, 7 tests"
            );
            // A rank is in 7 tests: at most the handoff before each and after each.
            assert!(handoffs <= 2 * 7, "rank {rank}: {handoffs}");
        }
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
        let ran = replay(&events(&s, 1, &done), |_| 1.0);
        assert_eq!(ran.len(), 5, "the other pairs, without a deadlock");
        assert!(ran.windows(2).all(|w| w[0].3 <= w[1].2), "one at a time");
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
