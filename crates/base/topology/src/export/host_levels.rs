//! The levels of a topology that hold whole hosts, as the formats of schedulers need them:
//! Slurm's switches and blocks, Kubernetes' fabric tiers.

use super::hostlist::hostlist;
use super::{ExportContext, ExportError};
use crate::tree::{Level, Topology};

/// What a switch has below it, as a hostlist expression.
pub(super) enum Below {
    Hosts(String),
    Switches(String),
}

/// One group of a level of hosts: its hosts and the groups of the next finer level inside it.
pub(super) struct HostGroup<'a> {
    pub(super) hosts: Vec<&'a str>,
    pub(super) children: Vec<usize>,
}

/// A switch of the tree: its name and what hangs below it.
pub(super) struct Switch {
    pub(super) name: String,
    pub(super) below: Below,
}

/// The host names of a topology and its levels that hold whole hosts, coarsest first.
pub(super) struct HostLevels<'a> {
    hosts: &'a [String],
    distinct: usize,
    levels: Vec<&'a Level>,
}

impl<'a> HostLevels<'a> {
    /// The hosts of `context` and the levels of `topology` in which every host lies inside one
    /// group and that have fewer groups than there are hosts.
    pub(super) fn of(
        topology: &'a Topology,
        context: &ExportContext<'a>,
        format: &'static str,
    ) -> Result<Self, ExportError> {
        let hosts = context.hosts.ok_or(ExportError::NeedsHosts { format })?;
        if hosts.len() < topology.ranks() {
            return Err(ExportError::HostCount {
                hosts: hosts.len(),
                ranks: topology.ranks(),
            });
        }
        // Each rank's host as a small integer: every step below is linear in the ranks (this
        // runs on machines of thousands of hosts).
        let mut ids: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        let host_of: Vec<usize> = hosts
            .iter()
            .map(|h| {
                let next = ids.len();
                *ids.entry(h.as_str()).or_insert(next)
            })
            .collect();
        let distinct = ids.len();
        let whole_hosts = |level: &Level| {
            let labels = level.labels(hosts.len());
            let mut group_of_host = vec![None; distinct];
            host_of
                .iter()
                .zip(&labels)
                .all(|(&h, &g)| *group_of_host[h].get_or_insert(g) == g)
        };
        let levels = topology
            .levels()
            .iter()
            .filter(|l| l.groups.len() < distinct && whole_hosts(l))
            .collect();
        Ok(HostLevels {
            hosts,
            distinct,
            levels,
        })
    }

    /// The hosts of a group of ranks as a hostlist expression.
    fn hosts_of(&self, group: &[usize]) -> String {
        hostlist(
            group
                .iter()
                .filter_map(|&r| self.hosts.get(r))
                .map(String::as_str),
        )
    }

    /// The number of distinct hosts of a group of ranks.
    fn host_count(&self, group: &[usize]) -> usize {
        let mut names: Vec<&str> = group
            .iter()
            .filter_map(|&r| self.hosts.get(r))
            .map(String::as_str)
            .collect();
        names.sort_unstable();
        names.dedup();
        names.len()
    }

    /// The switches of topology/tree, leaves first, the root last: a leaf switch per group of
    /// the finest host level over its hosts, a switch per coarser group over the switches of
    /// the groups inside it (a group lies in the parent that holds its first rank), and a
    /// root over the coarsest; one switch over every host when no level holds whole hosts.
    pub(super) fn switches(&self) -> Vec<Switch> {
        if self.levels.is_empty() {
            let all: Vec<usize> = (0..self.hosts.len()).collect();
            return vec![Switch {
                name: "s0".into(),
                below: Below::Hosts(self.hosts_of(&all)),
            }];
        }
        let depth = self.levels.len();
        let children: Vec<Vec<Vec<usize>>> = self
            .levels
            .windows(2)
            .map(|pair| {
                let parent = pair[0].labels(self.hosts.len());
                let mut children = vec![Vec::new(); pair[0].groups.len()];
                for (c, group) in pair[1].groups.iter().enumerate() {
                    if let Some(&p) = group.first().and_then(|&r| parent.get(r)) {
                        if let Some(list) = children.get_mut(p) {
                            list.push(c);
                        }
                    }
                }
                children
            })
            .collect();
        // Switch names `s{level}_{group}`: those under one switch fold into `s1_[0-3]`.
        let names = |k: usize, groups: &[usize]| {
            let names: Vec<String> = groups.iter().map(|g| format!("s{k}_{g}")).collect();
            hostlist(names.iter().map(String::as_str))
        };
        let mut out = Vec::new();
        for (k, level) in self.levels.iter().enumerate().rev() {
            for (g, group) in level.groups.iter().enumerate() {
                let below = if k + 1 == depth {
                    Below::Hosts(self.hosts_of(group))
                } else {
                    Below::Switches(names(k + 1, &children[k][g]))
                };
                out.push(Switch {
                    name: format!("s{k}_{g}"),
                    below,
                });
            }
        }
        let top: Vec<usize> = (0..self.levels[0].groups.len()).collect();
        out.push(Switch {
            name: "root".into(),
            below: Below::Switches(names(0, &top)),
        });
        out
    }

    /// Every level that holds whole hosts, coarsest first, with its name and groups: each
    /// group's distinct hosts (in the order of their first rank) and the groups of the next finer
    /// level inside it (a group lies in the one that holds its first rank); one level of every
    /// host, named `hosts`, when no level holds whole hosts.
    pub(super) fn host_groups(&self) -> Vec<(&'a str, Vec<HostGroup<'a>>)> {
        let distinct_hosts = |group: &[usize]| {
            let mut seen = std::collections::HashSet::new();
            (group.iter())
                .filter_map(|&r| self.hosts.get(r))
                .map(String::as_str)
                .filter(|h| seen.insert(*h))
                .collect::<Vec<&'a str>>()
        };
        if self.levels.is_empty() {
            let all: Vec<usize> = (0..self.hosts.len()).collect();
            let group = HostGroup {
                hosts: distinct_hosts(&all),
                children: Vec::new(),
            };
            return vec![("hosts", vec![group])];
        }
        let mut out: Vec<(&'a str, Vec<HostGroup<'a>>)> = (self.levels.iter())
            .map(|level| {
                let groups = (level.groups.iter())
                    .map(|g| HostGroup {
                        hosts: distinct_hosts(g),
                        children: Vec::new(),
                    })
                    .collect();
                (level.name.as_str(), groups)
            })
            .collect();
        for k in 1..self.levels.len() {
            let parent = self.levels[k - 1].labels(self.hosts.len());
            for (c, group) in self.levels[k].groups.iter().enumerate() {
                if let Some(&p) = group.first().and_then(|&r| parent.get(r)) {
                    if let Some(g) = out[k - 1].1.get_mut(p) {
                        g.children.push(c);
                    }
                }
            }
        }
        out
    }

    /// Each distinct host (in the order of its first rank) and its switch per level, the
    /// closest first, named as [`HostLevels::switches`] names them (`s0` for every host when no
    /// level holds whole hosts).
    pub(super) fn tiers(&self) -> Vec<(&'a str, Vec<String>)> {
        let mut first: Vec<Option<usize>> = Vec::new();
        let mut order: Vec<&'a str> = Vec::new();
        let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for (r, h) in self.hosts.iter().enumerate() {
            if !seen.contains_key(h.as_str()) {
                seen.insert(h, order.len());
                order.push(h);
                first.push(Some(r));
            }
        }
        let labels: Vec<Vec<usize>> = (self.levels.iter().rev())
            .map(|l| l.labels(self.hosts.len()))
            .collect();
        let depth = self.levels.len();
        (order.into_iter().zip(first))
            .map(|(host, rank)| {
                let names = if depth == 0 {
                    vec!["s0".to_string()]
                } else {
                    (labels.iter().enumerate())
                        .filter_map(|(t, labels)| {
                            let g = *labels.get(rank?)?;
                            (g != usize::MAX).then_some(())?;
                            Some(format!("s{}_{g}", depth - 1 - t))
                        })
                        .collect()
                };
                (host, names)
            })
            .collect()
    }

    /// The blocks of topology/block (the groups of the finest host level, or one block of every
    /// host) as hostlists, and the block sizes: the base is the fewest hosts in a block (every
    /// block must hold at least that many); each coarser level whose groups all hold the same
    /// number of hosts, a power of two times the size before, adds that size.
    pub(super) fn blocks(&self) -> (Vec<String>, Vec<usize>) {
        let all: Vec<usize> = (0..self.hosts.len()).collect();
        let groups: Vec<&[usize]> = match self.levels.last() {
            Some(level) => level.groups.iter().map(Vec::as_slice).collect(),
            None => vec![&all],
        };
        let blocks: Vec<String> = groups.iter().map(|g| self.hosts_of(g)).collect();
        let base = groups
            .iter()
            .map(|g| self.host_count(g))
            .min()
            .unwrap_or(self.distinct)
            .max(1);
        let mut sizes = vec![base];
        for level in self.levels.iter().rev().skip(1) {
            let counts: Vec<usize> = level.groups.iter().map(|g| self.host_count(g)).collect();
            let Some(&size) = counts.first() else {
                continue;
            };
            let last = *sizes.last().expect("the base");
            if counts.iter().all(|&c| c == size)
                && size > last
                && size % last == 0
                && (size / last).is_power_of_two()
            {
                sizes.push(size);
            }
        }
        (blocks, sizes)
    }
}
