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
    let host_levels: Vec<&crate::tree::Level> = topology
        .levels()
        .iter()
        .filter(|l| {
            l.groups.iter().all(|g| {
                // A group holds whole hosts: no host has ranks outside it.
                g.iter().all(|&r| {
                    hosts
                        .iter()
                        .enumerate()
                        .filter(|(_, h)| **h == hosts[r])
                        .all(|(q, _)| g.contains(&q))
                })
            })
        })
        .filter(|l| {
            let mut distinct: Vec<&String> = hosts.iter().collect();
            distinct.sort();
            distinct.dedup();
            l.groups.len() < distinct.len()
        })
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
    for (k, level) in host_levels.iter().enumerate().rev() {
        for (g, group) in level.groups.iter().enumerate() {
            let name = format!("s{k}_{g}");
            if k + 1 == depth {
                let _ = writeln!(out, "SwitchName={name} Nodes={}", hosts_of(group).join(","));
            } else {
                let below: Vec<String> = host_levels[k + 1]
                    .groups
                    .iter()
                    .enumerate()
                    .filter(|(_, h)| h.iter().all(|r| group.contains(r)))
                    .map(|(h, _)| format!("s{}_{h}", k + 1))
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
