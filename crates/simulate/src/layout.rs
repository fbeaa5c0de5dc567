//! Where each rank of a simulated machine sits: its coordinates in every level, the level at
//! which two ranks part, and the placement record `meta.json` keeps of it.

use std::collections::BTreeMap;

use lgate_rundir::RankInfo;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::model::{MachineModel, Placement};

/// The ranks of a machine placed on its cores.
#[derive(Debug, Clone)]
pub struct Layout {
    fanouts: Vec<usize>,
    names: Vec<String>,
    node_level: Option<usize>,
    /// Per rank, per level: the index of the rank's item of that level among all items of
    /// the level (so equal values mean the same socket, node, ...).
    groups: Vec<Vec<u32>>,
    /// Per rank, per level: its digit, the index within the item above.
    digits: Vec<Vec<u32>>,
    host_prefix: String,
    host_width: usize,
}

impl Layout {
    /// Places the ranks of `model` (a random placement draws from `seed`).
    pub fn new(model: &MachineModel, seed: u64) -> Layout {
        let fanouts: Vec<usize> = model.levels.iter().map(|l| l.fanout).collect();
        let levels = fanouts.len();
        let size: usize = fanouts.iter().product();
        let node_level = model.node_level();
        let slots: Vec<Vec<u32>> = match model.placement {
            Placement::Block => (0..size).map(|r| digits_of(r, &fanouts)).collect(),
            Placement::Random => {
                let mut order: Vec<usize> = (0..size).collect();
                order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed ^ 0x706c_6163_656d_656e));
                order.into_iter().map(|s| digits_of(s, &fanouts)).collect()
            }
            Placement::RoundRobin => {
                let below = node_level.map_or(0, |k| k + 1);
                let per_node: usize = fanouts[below..].iter().product();
                (0..size)
                    .map(|r| {
                        let mut d = digits_of(r / per_node * per_node, &fanouts);
                        let mut k = r % per_node;
                        // Consecutive ranks go to the next socket, then the next item of the
                        // level below, ...: the core index changes slowest.
                        for (l, &f) in fanouts.iter().enumerate().skip(below) {
                            d[l] = (k % f) as u32;
                            k /= f;
                        }
                        d
                    })
                    .collect()
            }
        };
        let groups = slots
            .iter()
            .map(|d| {
                let mut g = Vec::with_capacity(levels);
                let mut acc = 0u64;
                for (l, &x) in d.iter().enumerate() {
                    acc = acc * fanouts[l] as u64 + x as u64;
                    g.push(acc as u32);
                }
                g
            })
            .collect();
        let nodes = model.node_count();
        let prefix: String = model
            .name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        Layout {
            names: model.levels.iter().map(|l| l.name.clone()).collect(),
            fanouts,
            node_level,
            groups,
            digits: slots,
            host_prefix: if prefix.is_empty() {
                "n".into()
            } else {
                format!("{prefix}-n")
            },
            host_width: (nodes.max(2) - 1).to_string().len(),
        }
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.groups.len()
    }

    /// The level (index, top down) at which two different ranks part: the coarsest level whose
    /// items differ.
    pub fn parting_level(&self, a: usize, b: usize) -> usize {
        let (ga, gb) = (&self.groups[a], &self.groups[b]);
        (0..ga.len())
            .find(|&l| ga[l] != gb[l])
            .unwrap_or(ga.len() - 1)
    }

    /// The node (in machine order) a rank runs on; 0 without a node level.
    pub fn node_of(&self, rank: usize) -> usize {
        self.node_level.map_or(0, |k| self.groups[rank][k] as usize)
    }

    /// The host name of a node.
    pub fn host_name(&self, node: usize) -> String {
        format!("{}{:0w$}", self.host_prefix, node, w = self.host_width)
    }

    /// What `meta.json` records of each rank: host, socket, core, cpu, NUMA node, and the
    /// other levels (such as `switch`) as extra fields holding the item's index in the machine.
    pub fn rank_infos(&self) -> Vec<RankInfo> {
        let level = |name: &str| self.names.iter().position(|n| n == name);
        let socket = level("socket").or_else(|| level("package"));
        let numa = level("numa");
        let leaf = self.names.len() - 1;
        let below = self.node_level.map_or(0, |k| k + 1);
        (0..self.size())
            .map(|r| {
                let d = &self.digits[r];
                // Index among the items of `from..=leaf` under the item above `from`.
                let index_from = |from: usize| {
                    (from..=leaf).fold(0usize, |acc, l| acc * self.fanouts[l] + d[l] as usize)
                };
                let cpu = index_from(below);
                let mut extra = BTreeMap::new();
                for (l, name) in self.names.iter().enumerate() {
                    // `numa` has a field of its own (the index within the node).
                    if Some(l) != self.node_level
                        && Some(l) != socket
                        && Some(l) != numa
                        && l != leaf
                    {
                        extra.insert(name.clone(), serde_json::Value::from(self.groups[r][l]));
                    }
                }
                RankInfo {
                    rank: r,
                    host: self.host_name(self.node_of(r)),
                    pid: None,
                    cpu: Some(cpu),
                    cpuset: Some(cpu.to_string()),
                    core: Some(socket.map_or(cpu, |s| index_from(s + 1))),
                    socket: Some(socket.map_or(0, |s| d[s] as usize)),
                    numa: Some(match numa {
                        Some(n) => {
                            (below..=n).fold(0usize, |acc, l| acc * self.fanouts[l] + d[l] as usize)
                        }
                        None => socket.map_or(0, |s| d[s] as usize),
                    }),
                    governor: None,
                    machine: None,
                    extra,
                }
            })
            .collect()
    }
}

/// The digits of `slot` in the mixed radix of `fanouts` (the first level most significant).
fn digits_of(mut slot: usize, fanouts: &[usize]) -> Vec<u32> {
    let mut d = vec![0u32; fanouts.len()];
    for (l, &f) in fanouts.iter().enumerate().rev() {
        d[l] = (slot % f) as u32;
        slot /= f;
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::preset;

    #[test]
    fn block_and_round_robin_placements() {
        let mut m = preset("fram")
            .unwrap()
            .with_machine("node=2,socket=2,core=4")
            .unwrap();
        m.placement = Placement::Block;
        let block = Layout::new(&m, 0);
        let infos = block.rank_infos();
        let sockets: Vec<usize> = infos.iter().map(|i| i.socket.unwrap()).collect();
        assert_eq!(sockets, [0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1]);
        assert_eq!(infos[9].host, "fram-n1");
        assert_eq!(block.parting_level(0, 1), 2, "same socket: part at core");
        assert_eq!(block.parting_level(0, 4), 1, "other socket");
        assert_eq!(block.parting_level(0, 8), 0, "other node");

        m.placement = Placement::RoundRobin;
        let rr = Layout::new(&m, 0);
        let infos = rr.rank_infos();
        let sockets: Vec<usize> = infos.iter().map(|i| i.socket.unwrap()).collect();
        assert_eq!(sockets, [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]);
        let cpus: Vec<usize> = infos[..8].iter().map(|i| i.cpu.unwrap()).collect();
        assert_eq!(cpus, [0, 4, 1, 5, 2, 6, 3, 7]);
        assert_eq!(infos[8].host, "fram-n1", "nodes are filled in turn");
    }

    #[test]
    fn arm1_deals_ranks_over_sockets_then_groups() {
        let m = preset("arm1").unwrap();
        let infos = Layout::new(&m, 0).rank_infos();
        let label = |r: usize| (infos[r].socket.unwrap(), infos[r].numa.unwrap());
        // The thesis's four groups {0, 4, 8, ...}, {1, 5, ...}, {2, 6, ...}, {3, 7, ...}.
        assert_eq!(label(0), label(4));
        assert_eq!(label(1), label(5));
        assert_ne!(label(0), label(2));
        assert_eq!(infos[0].socket, infos[2].socket);
        assert_ne!(infos[0].socket, infos[1].socket);
    }

    #[test]
    fn random_placement_is_a_seeded_permutation() {
        let mut m = preset("betzy")
            .unwrap()
            .with_machine("node=2,socket=2,core=8")
            .unwrap();
        m.placement = Placement::Random;
        let a = Layout::new(&m, 5).rank_infos();
        let b = Layout::new(&m, 5).rank_infos();
        let c = Layout::new(&m, 6).rank_infos();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut slots: Vec<(String, usize)> =
            a.iter().map(|i| (i.host.clone(), i.cpu.unwrap())).collect();
        slots.sort();
        slots.dedup();
        assert_eq!(slots.len(), 32, "every core once");
    }

    #[test]
    fn levels_above_the_node_are_extra_fields() {
        let m = preset("fram").unwrap();
        let infos = Layout::new(&m, 0).rank_infos();
        assert_eq!(infos[0].extra["switch"], 0);
        assert_eq!(infos[127].extra["switch"], 1);
        assert_eq!(infos[127].host, "fram-n3");
    }
}
