//! Where each rank of a simulated machine sits: its coordinates in every level, the level at
//! which two ranks part, and the placement record `meta.json` keeps of it.

use std::collections::{BTreeMap, BTreeSet};

use lgate_rundir::{HostFacts, RankInfo};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::model::{MachineModel, Placement};

/// The ranks of a machine placed on its cores.
#[derive(Debug, Clone)]
pub struct Layout {
    names: Vec<String>,
    node_level: Option<usize>,
    /// Per rank, per level: the index of the rank's item of that level among all items of
    /// the level (so equal values mean the same socket, node, ...).
    groups: Vec<Vec<u32>>,
    /// Per rank: its core's index among all cores of the machine, in machine order.
    slots: Vec<usize>,
    /// Per level, per item: the index of its first core in machine order (an item's cores are
    /// consecutive).
    first_slot: Vec<Vec<usize>>,
    /// Per core in machine order, per level: its item.
    core_items: Vec<Vec<u32>>,
    host_prefix: String,
    host_width: usize,
}

/// The cores of a machine in machine order: each core's item at every level, and each item's
/// first core.
fn cores_of(model: &MachineModel) -> (Vec<Vec<u32>>, Vec<Vec<usize>>) {
    // Items level by level: each item's parent (its index at the level above).
    let mut parents: Vec<Vec<u32>> = Vec::with_capacity(model.levels.len());
    let mut above = 1usize;
    for l in &model.levels {
        let mut p = Vec::new();
        for k in 0..above {
            p.extend(std::iter::repeat_n(k as u32, l.fanout.of(k)));
        }
        above = p.len();
        parents.push(p);
    }
    let levels = parents.len();
    let cores = above;
    let mut groups = vec![vec![0u32; levels]; cores];
    for (c, g) in groups.iter_mut().enumerate() {
        let mut item = c as u32;
        for l in (0..levels).rev() {
            g[l] = item;
            item = parents[l][item as usize];
        }
    }
    let mut first_slot: Vec<Vec<usize>> =
        parents.iter().map(|p| vec![usize::MAX; p.len()]).collect();
    for (c, g) in groups.iter().enumerate() {
        for (l, &item) in g.iter().enumerate() {
            let f = &mut first_slot[l][item as usize];
            *f = (*f).min(c);
        }
    }
    (groups, first_slot)
}

impl Layout {
    /// Places the ranks of `model` (a random placement draws from `seed`).
    pub fn new(model: &MachineModel, seed: u64) -> Layout {
        let (cores, first_slot) = cores_of(model);
        let size = cores.len();
        let node_level = model.node_level();
        let order: Vec<usize> = match model.placement {
            Placement::Block => (0..size).collect(),
            Placement::Random => {
                let mut order: Vec<usize> = (0..size).collect();
                order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed ^ 0x706c_6163_656d_656e));
                order
            }
            Placement::RoundRobin => {
                // Nodes filled in turn; within a node, consecutive ranks go to the next item of
                // the level below the node (socket), then of the next level, ...: the core's
                // index within its item changes slowest.
                let below = node_level.map_or(0, |k| k + 1);
                let index_in = |c: usize, l: usize| {
                    let above = if l == 0 {
                        0
                    } else {
                        first_slot[l - 1][cores[c][l - 1] as usize]
                    };
                    // The item's index among the items of its level under the same parent.
                    cores[c][l] as usize - cores[above][l] as usize
                };
                let mut order: Vec<usize> = (0..size).collect();
                order.sort_by_key(|&c| {
                    let node = node_level.map_or(0, |k| cores[c][k]);
                    let key: Vec<usize> = (below..cores[c].len())
                        .rev()
                        .map(|l| index_in(c, l))
                        .collect();
                    (node, key)
                });
                order
            }
        };
        let nodes = model.node_count();
        let prefix: String = model
            .name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        Layout {
            names: model.levels.iter().map(|l| l.name.clone()).collect(),
            node_level,
            groups: order.iter().map(|&c| cores[c].clone()).collect(),
            slots: order,
            first_slot,
            core_items: cores,
            host_prefix: if prefix.is_empty() {
                "n".into()
            } else {
                format!("{prefix}-n")
            },
            host_width: (nodes.max(2) - 1).to_string().len(),
        }
    }

    /// The core a rank sits on, by its index among all cores in machine order.
    pub fn slot(&self, rank: usize) -> usize {
        self.slots[rank]
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

    /// The level at which two different ranks part and their two items of it (indices among
    /// all items of the level, the smaller first): the two cores of a CCD two threads sit on.
    pub fn parting_items(&self, a: usize, b: usize) -> (usize, u32, u32) {
        let l = self.parting_level(a, b);
        let (x, y) = (self.groups[a][l], self.groups[b][l]);
        (l, x.min(y), x.max(y))
    }

    /// The node (in machine order) a rank runs on; 0 without a node level.
    pub fn node_of(&self, rank: usize) -> usize {
        self.node_level.map_or(0, |k| self.groups[rank][k] as usize)
    }

    /// The host name of a node.
    pub fn host_name(&self, node: usize) -> String {
        format!("{}{:0w$}", self.host_prefix, node, w = self.host_width)
    }

    /// Where rank `r`'s core is counted from within its item of level `l` (the whole machine
    /// for `l` = None): the first core of that item.
    fn first_core(&self, r: usize, l: Option<usize>) -> usize {
        l.map_or(0, |l| self.first_slot[l][self.groups[r][l] as usize])
    }

    /// The index of rank `r`'s item of level `of` among the items of that level under its item
    /// of level `within` (the whole machine for None).
    fn index_within(&self, r: usize, of: usize, within: Option<usize>) -> usize {
        // The first core of the item above is in the first item of level `of` under it.
        let first = self.first_core(r, within);
        self.groups[r][of] as usize - self.core_items[first][of] as usize
    }

    /// What `meta.json` records of each rank: host, socket, core, cpu, NUMA node, and the
    /// other levels (such as `switch`) as extra fields holding the item's index in the machine.
    pub fn rank_infos(&self) -> Vec<RankInfo> {
        let level = |name: &str| self.names.iter().position(|n| n == name);
        let socket = level("socket").or_else(|| level("package"));
        let numa = level("numa");
        let leaf = self.names.len() - 1;
        (0..self.size())
            .map(|r| {
                // The core's index within its node, within its socket.
                let cpu = self.slots[r] - self.first_core(r, self.node_level);
                let mut extra = BTreeMap::new();
                for (l, name) in self.names.iter().enumerate() {
                    // `numa` has a field of its own (the index within the node).
                    if Some(l) != self.node_level
                        && Some(l) != socket
                        && Some(l) != numa
                        && l != leaf
                    {
                        extra.insert(name.clone(), self.groups[r][l] as usize);
                    }
                }
                RankInfo {
                    rank: r,
                    host: self.host_name(self.node_of(r)),
                    pid: None,
                    cpu: Some(cpu),
                    cpuset: Some(cpu.to_string()),
                    core: Some(socket.map_or(cpu, |s| self.slots[r] - self.first_core(r, Some(s)))),
                    socket: Some(socket.map_or(0, |s| self.index_within(r, s, s.checked_sub(1)))),
                    numa: Some(match numa {
                        Some(n) => self.index_within(r, n, self.node_level),
                        None => socket.map_or(0, |s| self.index_within(r, s, s.checked_sub(1))),
                    }),
                    governor: None,
                    machine: None,
                    extra,
                }
            })
            .collect()
    }
    /// What `meta.json` records of each host (in node order): its CPUs, sockets and NUMA
    /// nodes as the ranks' placement has them, one rank per core, no SMT, the CPU model named
    /// after the model, the frequency governor `performance` (what HPC nodes are usually set
    /// to); memory, kernel and caches unknown (a model does not say).
    pub fn host_facts(&self, model_name: &str) -> Vec<HostFacts> {
        let infos = self.rank_infos();
        let mut by_host: BTreeMap<String, Vec<&RankInfo>> = BTreeMap::new();
        for i in &infos {
            by_host.entry(i.host.clone()).or_default().push(i);
        }
        let text = |cpus: &BTreeSet<usize>| {
            let v: Vec<usize> = cpus.iter().copied().collect();
            lgate_topology::RankList(&v).to_string()
        };
        by_host
            .into_iter()
            .map(|(host, ranks)| {
                let mut sockets: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
                let mut numa: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
                let mut cpus = BTreeSet::new();
                for r in ranks {
                    let cpu = r.cpu.unwrap_or(r.rank);
                    cpus.insert(cpu);
                    sockets
                        .entry(r.socket.unwrap_or(0))
                        .or_default()
                        .insert(cpu);
                    numa.entry(r.numa.unwrap_or(0)).or_default().insert(cpu);
                }
                HostFacts {
                    host,
                    cpu_model: Some(format!("simulated {model_name}")),
                    sockets: Some(sockets.len()),
                    cores: Some(cpus.len()),
                    threads: Some(cpus.len()),
                    smt: Some(false),
                    online_cpus: Some(text(&cpus)),
                    socket_cpus: sockets.iter().map(|(&k, c)| (k, text(c))).collect(),
                    numa_cpus: numa.iter().map(|(&k, c)| (k, text(c))).collect(),
                    frequency: lgate_rundir::FrequencyFacts {
                        driver: Some("simulated".into()),
                        governor: Some("performance".into()),
                        ..Default::default()
                    },
                    ..Default::default()
                }
            })
            .collect()
    }
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
    fn items_of_different_sizes_are_laid_out_in_turn() {
        // Two nodes; the second has a smaller second socket.
        let m = preset("betzy")
            .unwrap()
            .with_machine("node=2,socket=2,core=4/4/4/2")
            .unwrap();
        let mut block = m.clone();
        block.placement = Placement::Block;
        let layout = Layout::new(&block, 0);
        assert_eq!(layout.size(), 14);
        let infos = layout.rank_infos();
        let hosts: Vec<&str> = infos.iter().map(|i| i.host.as_str()).collect();
        assert_eq!(hosts[7], "betzy-n0");
        assert_eq!(hosts[8], "betzy-n1");
        let sockets: Vec<usize> = infos.iter().map(|i| i.socket.unwrap()).collect();
        assert_eq!(sockets, [0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1]);
        let cpus: Vec<usize> = infos[8..].iter().map(|i| i.cpu.unwrap()).collect();
        assert_eq!(cpus, [0, 1, 2, 3, 4, 5]);
        assert_eq!(layout.parting_level(12, 13), 2, "one socket");
        assert_eq!(layout.parting_level(11, 12), 1, "two sockets");
        // Round-robin deals each node's ranks over its sockets while both have cores left.
        let mut rr = m;
        rr.placement = Placement::RoundRobin;
        let infos = Layout::new(&rr, 0).rank_infos();
        let sockets: Vec<usize> = infos[8..].iter().map(|i| i.socket.unwrap()).collect();
        assert_eq!(sockets, [0, 1, 0, 1, 0, 0]);
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
