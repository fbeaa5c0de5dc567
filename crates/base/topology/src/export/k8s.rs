//! Kubernetes node labels in topograph's keys (`fabric.topograph.run/tier-N`, tier 0 the
//! switch closest to the node), for the schedulers that read them (Slinky, soperator, KAI,
//! Kueue): a `v1 List` of nodes with only their labels, applied with server-side apply.

use std::fmt::Write as _;

use super::host_levels::HostLevels;
use super::{yaml_quoted, ExportContext, ExportError, TopologyWriter};
use crate::tree::Topology;

/// topograph's fabric tier label, followed by the tier (0: the switch closest to the node).
pub const FABRIC_TIER: &str = "fabric.topograph.run/tier-";

/// Kubernetes node labels, topograph's fabric tiers, of the levels that hold whole hosts.
#[derive(Debug, Clone, Copy)]
pub struct K8sLabelsWriter;

impl TopologyWriter for K8sLabelsWriter {
    fn name(&self) -> &'static str {
        "k8s-labels"
    }
    fn description(&self) -> &'static str {
        "Kubernetes node labels in topograph's keys (fabric.topograph.run/tier-N, 0 = closest), for kubectl apply --server-side"
    }
    fn write(&self, topology: &Topology, context: &ExportContext) -> Result<String, ExportError> {
        let (machine, _) = tier_levels(topology, context, self.name())?;
        let mut out = format!(
            "# Kubernetes node labels (topograph's {FABRIC_TIER}N, tier 0 the switch closest to \
             the node)\n# written by lgate-plogp {} from {}\n# Apply with: kubectl apply \
             --server-side --field-manager=lgate-plogp -f FILE\n",
            env!("CARGO_PKG_VERSION"),
            context.source.replace('\n', " ")
        );
        out.push_str(&node_label_list(&machine));
        Ok(out)
    }
}

/// The levels of hosts of `topology` and their node label keys, coarsest first
/// (`fabric.topograph.run/tier-N` down to `tier-0`).
pub(super) fn tier_levels<'a>(
    topology: &'a Topology,
    context: &ExportContext<'a>,
    format: &'static str,
) -> Result<(HostLevels<'a>, Vec<String>), ExportError> {
    let machine = HostLevels::of(topology, context, format)?;
    let depth = machine.tiers().first().map_or(0, |(_, t)| t.len());
    let labels = (0..depth)
        .rev()
        .map(|t| format!("{FABRIC_TIER}{t}"))
        .collect();
    Ok((machine, labels))
}

/// A `v1 List` of every host as a node with only its fabric tier labels.
pub(super) fn node_label_list(machine: &HostLevels) -> String {
    let mut out = String::from("apiVersion: v1\nkind: List\nitems:\n");
    for (host, tiers) in machine.tiers() {
        let _ = writeln!(
            out,
            "  - apiVersion: v1\n    kind: Node\n    metadata:\n      name: {}\n      labels:",
            yaml_quoted(host)
        );
        for (t, switch) in tiers.iter().enumerate() {
            let _ = writeln!(out, "        {FABRIC_TIER}{t}: {}", yaml_quoted(switch));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declared::parse_k8s_nodes;

    #[test]
    fn the_labels_read_back_as_the_levels_of_hosts() {
        let (topology, hosts) = crate::export::two_switches();
        let context = ExportContext {
            hosts: Some(&hosts),
            source: "test",
        };
        let text = K8sLabelsWriter.write(&topology, &context).unwrap();
        assert!(
            text.contains("        fabric.topograph.run/tier-0: \"s1_0\""),
            "{text}"
        );
        let d = parse_k8s_nodes(&text).unwrap();
        let levels: Vec<(&str, Vec<Vec<String>>)> = (d.levels.iter())
            .map(|l| {
                (
                    l.name.as_str(),
                    l.groups.iter().map(|g| g.hosts.clone()).collect(),
                )
            })
            .collect();
        let h = |k: std::ops::Range<usize>| k.map(|h| format!("n{h:02}")).collect::<Vec<_>>();
        assert_eq!(
            levels,
            [
                ("fabric.topograph.run/tier-1", vec![h(0..4), h(4..8)]),
                (
                    "fabric.topograph.run/tier-0",
                    vec![h(0..2), h(2..4), h(4..6), h(6..8)]
                ),
            ]
        );
    }
}
