//! Slurm's topology.conf (the topology/tree plugin): switches over the hosts.

use std::fmt::Write as _;

use super::{ExportContext, ExportError, TopologyWriter};
use crate::tree::Topology;

/// Slurm's `topology.conf` of the levels that hold whole hosts, for `TopologyPlugin=topology/tree`.
#[derive(Debug, Clone, Copy)]
pub struct SlurmWriter;

impl TopologyWriter for SlurmWriter {
    fn name(&self) -> &'static str {
        "slurm"
    }
    fn description(&self) -> &'static str {
        "Slurm topology.conf (topology/tree) of the levels at and above hosts"
    }
    fn write(&self, topology: &Topology, context: &ExportContext) -> Result<String, ExportError> {
        let hosts = context
            .hosts
            .ok_or(ExportError::NeedsHosts { format: "slurm" })?;
        if hosts.len() < topology.ranks() {
            return Err(ExportError::HostCount {
                hosts: hosts.len(),
                ranks: topology.ranks(),
            });
        }
        Ok(slurm_topology(topology, hosts, context.source))
    }
}

/// A Slurm topology.conf of the levels that hold whole hosts: leaf switches over hosts, then a
/// switch per coarser group over the switches below it.
fn slurm_topology(topology: &Topology, hosts: &[String], source: &str) -> String {
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
    // A level holds whole hosts when all ranks of each host are in one of its groups.
    let whole_hosts = |level: &crate::tree::Level| {
        let labels = level.labels(hosts.len());
        let mut group_of_host = vec![None; distinct];
        host_of
            .iter()
            .zip(&labels)
            .all(|(&h, &g)| *group_of_host[h].get_or_insert(g) == g)
    };
    let host_levels: Vec<&crate::tree::Level> = topology
        .levels()
        .iter()
        .filter(|l| l.groups.len() < distinct && whole_hosts(l))
        .collect();
    let hosts_of = |g: &[usize]| -> Vec<String> {
        let mut h: Vec<String> = g.iter().map(|&r| hosts[r].clone()).collect();
        h.sort();
        h.dedup();
        h
    };
    let mut out = format!(
        "# Slurm topology.conf written by lgate-plogp {} from {source}\n",
        env!("CARGO_PKG_VERSION")
    );
    if host_levels.is_empty() {
        let all: Vec<usize> = (0..hosts.len()).collect();
        let _ = writeln!(out, "SwitchName=s0 Nodes={}", hosts_of(&all).join(","));
        return out;
    }
    let depth = host_levels.len();
    // The groups of the next level inside each group of a level (levels nest: a group lies in
    // the parent that holds its first rank).
    let children: Vec<Vec<Vec<usize>>> = host_levels
        .windows(2)
        .map(|pair| {
            let parent = pair[0].labels(hosts.len());
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
    for (k, level) in host_levels.iter().enumerate().rev() {
        for (g, group) in level.groups.iter().enumerate() {
            let name = format!("s{k}_{g}");
            if k + 1 == depth {
                let _ = writeln!(out, "SwitchName={name} Nodes={}", hosts_of(group).join(","));
            } else {
                let below: Vec<String> = children[k][g]
                    .iter()
                    .map(|h| format!("s{}_{h}", k + 1))
                    .collect();
                let _ = writeln!(out, "SwitchName={name} Switches={}", below.join(","));
            }
        }
    }
    let top: Vec<String> = (0..host_levels[0].groups.len())
        .map(|g| format!("s0_{g}"))
        .collect();
    let _ = writeln!(out, "SwitchName=root Switches={}", top.join(","));
    out
}
