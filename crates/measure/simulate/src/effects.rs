//! The seeded, fixed choices of a simulation: bands, slow pairs and nodes, degraded hosts and
//! links, slower ranks.

use std::collections::HashSet;

use lgate_harness::Pair;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use crate::layout::Layout;
use crate::model::MachineModel;
use crate::options::{ChangeKind, SimulateError, SimulateOptions};
use crate::seed::splitmix;

/// The seeded, fixed choices of a simulation: which pairs and nodes are slow.
#[derive(Debug, Clone)]
pub struct Effects {
    bands: Vec<usize>,
    /// Slow pairs of cores (indices in machine order).
    slow_pairs: HashSet<Pair>,
    slow_nodes: Vec<usize>,
    /// Degraded hosts (one node) and links (two), by node number, with their factor.
    pub(crate) degraded: Vec<(Vec<usize>, f64)>,
    /// Slower ranks (and the other rank when only their pair is slower), with their factor.
    pub(crate) slow_ranks: Vec<(usize, Option<usize>, f64)>,
    /// Where the fixed factors of links with a spread are drawn from.
    spread_seed: u64,
}

impl Effects {
    /// Draws the bands, slow pairs and slow nodes of `model` from `seed`.
    pub fn new(model: &MachineModel, layout: &Layout, seed: u64) -> Effects {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6172_7469_6661_6374);
        let n = layout.size();
        let a = &model.artifacts;
        let mut bands: Vec<usize> = Vec::new();
        if let Some(b) = a.bands {
            for _ in 0..b.count.min(n.saturating_sub(1)) {
                let d = rng.random_range(1..n);
                if !bands.contains(&d) {
                    bands.push(d);
                }
            }
        }
        let mut slow_pairs = HashSet::new();
        if let Some(s) = a.slow_pairs {
            let total = n * (n - 1) / 2;
            while slow_pairs.len() < s.count.min(total) {
                let i = rng.random_range(0..n);
                let j = rng.random_range(0..n);
                if i != j {
                    slow_pairs.insert(Pair::new(i, j));
                }
            }
        }
        let mut slow_nodes = Vec::new();
        if let Some(s) = a.slow_node {
            let nodes = model.node_count();
            match s.node {
                Some(first) => slow_nodes.extend(first..first + s.count),
                None => {
                    while slow_nodes.len() < s.count.min(nodes) {
                        let k = rng.random_range(0..nodes);
                        if !slow_nodes.contains(&k) {
                            slow_nodes.push(k);
                        }
                    }
                    slow_nodes.sort_unstable();
                }
            }
        }
        Effects {
            bands,
            slow_pairs,
            slow_nodes,
            degraded: Vec::new(),
            slow_ranks: Vec::new(),
            spread_seed: splitmix(seed ^ 0x7370_7265_6164),
        }
    }

    /// The nodes made slow, in machine order.
    pub fn slow_nodes(&self) -> &[usize] {
        &self.slow_nodes
    }

    /// The slow pairs drawn, as pairs of cores (indices in machine order): a slow pair is a
    /// slow path between two cores, so it stays with them when the ranks are numbered
    /// otherwise.
    pub fn slow_core_pairs(&self) -> impl Iterator<Item = Pair> + '_ {
        self.slow_pairs.iter().copied()
    }

    /// The band offsets drawn.
    pub fn bands(&self) -> &[usize] {
        &self.bands
    }

    /// The fixed factor of the pair of items `pair` parts at, when its link has a spread: the
    /// same for every pair of ranks on those two items.
    fn spread_factor(&self, model: &MachineModel, layout: &Layout, pair: Pair) -> f64 {
        let (level, x, y) = layout.parting_items(pair.i, pair.j);
        let spread = model
            .links
            .get(&model.levels[level].name)
            .map_or(0.0, |l| l.spread);
        if spread == 0.0 {
            return 1.0;
        }
        let key =
            splitmix(self.spread_seed ^ ((level as u64) << 56) ^ ((x as u64) << 28) ^ y as u64);
        let z: f64 = ChaCha8Rng::seed_from_u64(key).sample(StandardNormal);
        (spread * z).exp()
    }

    /// How much slower than its link every measurement of `pair` is.
    pub(crate) fn factor(&self, model: &MachineModel, layout: &Layout, pair: Pair) -> f64 {
        let a = &model.artifacts;
        let mut f = self.spread_factor(model, layout, pair);
        if let Some(first) = a.first_pair {
            if pair == Pair::new(0, 1) {
                f *= first.factor;
            }
        }
        if let Some(b) = a.bands {
            if self.bands.contains(&(pair.j - pair.i)) {
                f *= b.factor;
            }
        }
        if let Some(s) = a.slow_pairs {
            if self
                .slow_pairs
                .contains(&Pair::new(layout.slot(pair.i), layout.slot(pair.j)))
            {
                f *= s.factor;
            }
        }
        if let Some(s) = a.slow_node {
            let slow = |r: usize| self.slow_nodes.contains(&layout.node_of(r));
            if slow(pair.i) || slow(pair.j) {
                f *= s.factor;
            }
        }
        let (ni, nj) = (layout.node_of(pair.i), layout.node_of(pair.j));
        for (nodes, factor) in &self.degraded {
            let hit = match nodes[..] {
                [n] => ni == n || nj == n,
                [a, b] => (ni, nj) == (a, b) || (ni, nj) == (b, a),
                _ => false,
            };
            if hit {
                f *= factor;
            }
        }
        for &(rank, with, factor) in &self.slow_ranks {
            let hit = match with {
                None => pair.i == rank || pair.j == rank,
                Some(w) => (pair.i, pair.j) == (rank.min(w), rank.max(w)),
            };
            if hit {
                f *= factor;
            }
        }
        f
    }

    /// Adds the hosts and links made slower and the slower ranks of `options` (hosts by name or
    /// number among `hosts`, ranks of `layout`), and sets the facts of the hosts made to differ.
    pub(crate) fn add_changes(
        &mut self,
        options: &SimulateOptions,
        layout: &Layout,
        hosts: &mut [lgate_rundir::HostFacts],
    ) -> Result<(), SimulateError> {
        let node_named = |what: ChangeKind, given: &str, host: &str| {
            hosts
                .iter()
                .position(|h| h.host == host)
                .or_else(|| host.parse::<usize>().ok().filter(|&k| k < hosts.len()))
                .ok_or_else(|| SimulateError::Change {
                    what,
                    given: given.to_string(),
                    problem: format!(
                        "no such host{}; the hosts are {} or their numbers 0-{}",
                        if given == host {
                            String::new()
                        } else {
                            format!(" {host}")
                        },
                        hosts
                            .iter()
                            .map(|h| h.host.as_str())
                            .take(4)
                            .collect::<Vec<_>>()
                            .join(", ")
                            + if hosts.len() > 4 { ", ..." } else { "" },
                        hosts.len() - 1
                    ),
                })
        };
        for d in &options.degraded {
            let what = match d.hosts.len() {
                2 => ChangeKind::SlowLink,
                _ => ChangeKind::SlowHost,
            };
            let given = d.hosts.join(":");
            let nodes = d
                .hosts
                .iter()
                .map(|h| node_named(what, &given, h))
                .collect::<Result<Vec<usize>, _>>()?;
            if nodes.len() == 2 && nodes[0] == nodes[1] {
                return Err(SimulateError::Change {
                    what,
                    given,
                    problem: "a link joins two different hosts".into(),
                });
            }
            self.degraded.push((nodes, d.factor));
        }
        for r in &options.slow_ranks {
            if let Some(bad_rank) = [Some(r.rank), r.with]
                .into_iter()
                .flatten()
                .find(|&k| k >= layout.size())
            {
                let (what, given) = match r.with {
                    None => (ChangeKind::SlowRank, format!("{}={}", r.rank, r.factor)),
                    Some(w) => (ChangeKind::SlowPair, format!("{}:{w}={}", r.rank, r.factor)),
                };
                return Err(SimulateError::Change {
                    what,
                    given,
                    problem: format!("no rank {bad_rank}; the ranks are 0-{}", layout.size() - 1),
                });
            }
            self.slow_ranks.push((r.rank, r.with, r.factor));
        }
        let changed = options
            .host_changes
            .iter()
            .map(|c| node_named(ChangeKind::OddHost, &c.host, &c.host).map(|k| (k, c)))
            .collect::<Result<Vec<_>, _>>()?;
        for (k, change) in changed {
            hosts[k]
                .set(&change.fact, &change.value)
                .map_err(|e| SimulateError::Change {
                    what: ChangeKind::OddHost,
                    given: change.host.clone(),
                    problem: e.to_string(),
                })?;
        }
        Ok(())
    }
}
