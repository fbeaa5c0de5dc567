//! Slurm's topology files from the levels that hold whole hosts: `topology.conf` for the
//! topology/tree plugin (switches) and the topology/block plugin (blocks), and `topology.yaml`
//! (Slurm 24.11 and later), which holds both. Host sets are written as hostlist expressions
//! (`node[01-16]`).

use std::fmt::Write as _;

use super::host_levels::{Below, HostLevels};
use super::{yaml_quoted, ExportContext, ExportError, TopologyWriter};
use crate::tree::Topology;

/// Slurm's `topology.conf` of the levels that hold whole hosts, for `TopologyPlugin=topology/tree`.
#[derive(Debug, Clone, Copy)]
pub struct SlurmWriter;

/// Slurm's `topology.conf` for `TopologyPlugin=topology/block` (Slurm 23.11 and later).
#[derive(Debug, Clone, Copy)]
pub struct SlurmBlockWriter;

/// Slurm's `topology.yaml` (Slurm 24.11 and later): the tree as the cluster's default topology
/// and the blocks as a second one.
#[derive(Debug, Clone, Copy)]
pub struct SlurmYamlWriter;

impl TopologyWriter for SlurmWriter {
    fn name(&self) -> &'static str {
        "slurm"
    }
    fn description(&self) -> &'static str {
        "Slurm topology.conf (topology/tree) of the levels at and above hosts"
    }
    fn write(&self, topology: &Topology, context: &ExportContext) -> Result<String, ExportError> {
        let machine = HostLevels::of(topology, context, self.name())?;
        let mut out = header("topology.conf (topology/tree)", context);
        for switch in machine.switches() {
            let _ = match &switch.below {
                Below::Hosts(hosts) => {
                    writeln!(out, "SwitchName={} Nodes={}", switch.name, hosts)
                }
                Below::Switches(names) => {
                    writeln!(out, "SwitchName={} Switches={}", switch.name, names)
                }
            };
        }
        Ok(out)
    }
}

impl TopologyWriter for SlurmBlockWriter {
    fn name(&self) -> &'static str {
        "slurm-block"
    }
    fn description(&self) -> &'static str {
        "Slurm topology.conf (topology/block, Slurm 23.11+): the finest level of whole hosts as blocks"
    }
    fn write(&self, topology: &Topology, context: &ExportContext) -> Result<String, ExportError> {
        let machine = HostLevels::of(topology, context, self.name())?;
        let mut out = header("topology.conf (topology/block)", context);
        let (blocks, sizes) = machine.blocks();
        for (k, hosts) in blocks.iter().enumerate() {
            let _ = writeln!(out, "BlockName=b{k} Nodes={hosts}");
        }
        let sizes: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
        let _ = writeln!(out, "BlockSizes={}", sizes.join(","));
        Ok(out)
    }
}

impl TopologyWriter for SlurmYamlWriter {
    fn name(&self) -> &'static str {
        "slurm-yaml"
    }
    fn description(&self) -> &'static str {
        "Slurm topology.yaml (Slurm 24.11+): the tree as the default topology, the blocks as a second"
    }
    fn write(&self, topology: &Topology, context: &ExportContext) -> Result<String, ExportError> {
        let machine = HostLevels::of(topology, context, self.name())?;
        let mut out = header("topology.yaml", context);
        out.push_str(
            "# A partition takes the blocks instead with Topology=lgate-plogp-block on its \
             PartitionName line in slurm.conf\n",
        );
        out.push_str(
            "---\n- topology: lgate-plogp-tree\n  cluster_default: true\n  tree:\n    switches:\n",
        );
        for switch in machine.switches() {
            let _ = writeln!(out, "      - switch: {}", yaml_quoted(&switch.name));
            let _ = match &switch.below {
                Below::Hosts(hosts) => writeln!(out, "        nodes: {}", yaml_quoted(hosts)),
                Below::Switches(names) => writeln!(out, "        children: {}", yaml_quoted(names)),
            };
        }
        let (blocks, sizes) = machine.blocks();
        out.push_str(
            "- topology: lgate-plogp-block\n  cluster_default: false\n  block:\n    block_sizes:\n",
        );
        for size in sizes {
            let _ = writeln!(out, "      - {size}");
        }
        out.push_str("    blocks:\n");
        for (k, hosts) in blocks.iter().enumerate() {
            let _ = writeln!(
                out,
                "      - block: b{k}\n        nodes: {}",
                yaml_quoted(hosts)
            );
        }
        Ok(out)
    }
}

/// The comment line that opens each file.
fn header(what: &str, context: &ExportContext) -> String {
    format!(
        "# Slurm {what} written by lgate-plogp {} from {}\n",
        env!("CARGO_PKG_VERSION"),
        context.source.replace('\n', " ")
    )
}

#[cfg(test)]
mod tests {
    use super::super::hostlist::expand_hostlist;
    use super::*;
    use crate::tree::Level;

    /// 2 switches x 2 leaf switches x 2 hosts `n01`-`n08`, a rank each.
    fn machine() -> (Topology, Vec<String>) {
        let hosts: Vec<String> = (0..8).map(|r| format!("n{:02}", r + 1)).collect();
        let topology = Topology::from_levels(
            8,
            vec![
                Level::new("switch", vec![(0..4).collect(), (4..8).collect()]),
                Level::new("leaf", vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]),
            ],
        )
        .unwrap();
        (topology, hosts)
    }

    fn write(format: &dyn TopologyWriter, topology: &Topology, hosts: &[String]) -> String {
        let context = ExportContext {
            hosts: Some(hosts),
            source: "test",
        };
        format.write(topology, &context).unwrap()
    }

    #[test]
    fn tree_switches_name_hosts_and_switches_as_hostlists() {
        let (topology, hosts) = machine();
        let text = write(&SlurmWriter, &topology, &hosts);
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                "SwitchName=s1_0 Nodes=n[01-02]",
                "SwitchName=s1_1 Nodes=n[03-04]",
                "SwitchName=s1_2 Nodes=n[05-06]",
                "SwitchName=s1_3 Nodes=n[07-08]",
                "SwitchName=s0_0 Switches=s1_[0-1]",
                "SwitchName=s0_1 Switches=s1_[2-3]",
                "SwitchName=root Switches=s0_[0-1]",
            ]
        );
    }

    /// Every line of a topology/block file: `BlockName=NAME Nodes=HOSTLIST`, then one
    /// `BlockSizes=` whose sizes grow by powers of two, the first no larger than any block
    /// (topology.conf(5)); returns the hosts of each block.
    fn parse_blocks(text: &str) -> (Vec<Vec<String>>, Vec<usize>) {
        let mut blocks = Vec::new();
        let mut sizes: Vec<usize> = Vec::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            if let Some(list) = line.strip_prefix("BlockSizes=") {
                assert!(sizes.is_empty(), "one BlockSizes line");
                sizes = list.split(',').map(|s| s.parse().unwrap()).collect();
                continue;
            }
            let (name, nodes) = line.split_once(' ').expect("two fields");
            assert!(name.starts_with("BlockName=") && name.len() > 10, "{line}");
            let nodes = nodes.strip_prefix("Nodes=").expect("Nodes=");
            blocks.push(expand_hostlist(nodes).unwrap());
        }
        assert!(!sizes.is_empty(), "a BlockSizes line");
        for pair in sizes.windows(2) {
            assert!(pair[1] > pair[0] && (pair[1] / pair[0]).is_power_of_two());
            assert_eq!(pair[1] % pair[0], 0);
        }
        assert!(blocks.iter().all(|b| b.len() >= sizes[0]), "{text}");
        (blocks, sizes)
    }

    #[test]
    fn blocks_are_the_finest_host_level_with_power_of_two_sizes() {
        let (topology, hosts) = machine();
        let (blocks, sizes) = parse_blocks(&write(&SlurmBlockWriter, &topology, &hosts));
        // The leaf switches are the finest level of whole hosts; the switches above them hold
        // twice as many.
        assert_eq!(
            blocks,
            [
                ["n01", "n02"],
                ["n03", "n04"],
                ["n05", "n06"],
                ["n07", "n08"]
            ]
        );
        assert_eq!(sizes, [2, 4]);
        // No level of whole hosts: one block of every host.
        let flat = Topology::from_levels(8, vec![]).unwrap();
        let (blocks, sizes) = parse_blocks(&write(&SlurmBlockWriter, &flat, &hosts));
        assert_eq!(blocks, std::slice::from_ref(&hosts));
        assert_eq!(sizes, [8]);
    }

    #[test]
    fn yaml_holds_the_tree_and_the_blocks() {
        let (topology, hosts) = machine();
        let text = write(&SlurmYamlWriter, &topology, &hosts);
        assert!(text.starts_with("# Slurm topology.yaml"), "{text}");
        for line in [
            "- topology: lgate-plogp-tree",
            "  cluster_default: true",
            "      - switch: \"s1_0\"",
            "        nodes: \"n[01-02]\"",
            "        children: \"s0_[0-1]\"",
            "- topology: lgate-plogp-block",
            "      - block: b3",
            "        nodes: \"n[07-08]\"",
        ] {
            assert!(text.lines().any(|l| l == line), "`{line}` in\n{text}");
        }
        // Indentation only by spaces, in steps of two.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let indent = line.len() - line.trim_start_matches(' ').len();
            assert_eq!(indent % 2, 0, "{line}");
            assert!(!line.contains('\t'));
        }
    }
}
