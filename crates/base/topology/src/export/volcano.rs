//! Volcano's HyperNodes (network topology aware scheduling): one cluster-scoped `HyperNode` a
//! group of every level that holds whole hosts, tier 1 the finest; a finest group's members
//! its nodes by exact name, a coarser group's the HyperNodes of the groups inside it.

use std::fmt::Write as _;

use super::host_levels::HostLevels;
use super::{yaml_quoted, ExportContext, ExportError, TopologyWriter};
use crate::tree::Topology;

/// Volcano's API group and version of `HyperNode`.
pub const VOLCANO_API_VERSION: &str = "topology.volcano.sh/v1alpha1";

/// The HyperNode of group `g` of the host level `k` (0 the coarsest).
pub fn hypernode_name(k: usize, g: usize) -> String {
    format!("s{k}-{g}")
}

/// Volcano's HyperNodes of the levels that hold whole hosts.
#[derive(Debug, Clone, Copy)]
pub struct VolcanoHyperNodesWriter;

impl TopologyWriter for VolcanoHyperNodesWriter {
    fn name(&self) -> &'static str {
        "volcano-hypernodes"
    }
    fn description(&self) -> &'static str {
        "Volcano's HyperNode objects (topology.volcano.sh/v1alpha1), one a group of every level of hosts, tier 1 the finest, for kubectl apply"
    }
    fn write(&self, topology: &Topology, context: &ExportContext) -> Result<String, ExportError> {
        let machine = HostLevels::of(topology, context, self.name())?;
        let levels = machine.host_groups();
        let depth = levels.len();
        let mut out = format!(
            "# Volcano HyperNodes: {depth} tier(s), tier 1 the groups of hosts nearest each \
             other\n# written by lgate-plogp {} from {}\n# Apply with: kubectl apply \
             --server-side --field-manager=lgate-plogp -f FILE\n",
            env!("CARGO_PKG_VERSION"),
            context.source.replace('\n', " ")
        );
        for (k, (name, groups)) in levels.iter().enumerate().rev() {
            let tier = depth - k;
            for (g, group) in groups.iter().enumerate() {
                let _ = write!(
                    out,
                    "---\napiVersion: {VOLCANO_API_VERSION}\nkind: HyperNode\nmetadata:\n  \
                     name: {}\nspec:\n  tier: {tier}\n  tierName: {}\n  members:\n",
                    hypernode_name(k, g),
                    yaml_quoted(name)
                );
                let members: Vec<(&str, String)> = if k + 1 == depth {
                    group
                        .hosts
                        .iter()
                        .map(|h| ("Node", yaml_quoted(h)))
                        .collect()
                } else {
                    (group.children.iter())
                        .map(|&c| ("HyperNode", hypernode_name(k + 1, c)))
                        .collect()
                };
                for (kind, name) in members {
                    let _ = writeln!(
                        out,
                        "    - type: {kind}\n      selector:\n        exactMatch:\n          \
                         name: {name}"
                    );
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hypernodes_pass_the_crds_checks_field_by_field_and_read_back() {
        let (topology, hosts) = crate::export::two_switches();
        let context = ExportContext {
            hosts: Some(&hosts),
            source: "test",
        };
        let text = VolcanoHyperNodesWriter.write(&topology, &context).unwrap();
        let docs: Vec<serde_norway::Value> = serde_norway::Deserializer::from_str(&text)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .filter(|v: &serde_norway::Value| !v.is_null())
            .collect();
        // Four leaves at tier 1, two switches at tier 2.
        assert_eq!(docs.len(), 6, "{text}");
        let dns_name = |n: &str| {
            !n.is_empty()
                && n.len() <= 253
                && n.split('.').all(|l| {
                    !l.is_empty()
                        && l.bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                        && !l.starts_with('-')
                        && !l.ends_with('-')
                })
        };
        let mut tiers = Vec::new();
        for doc in &docs {
            assert_eq!(doc["apiVersion"].as_str(), Some(VOLCANO_API_VERSION));
            assert_eq!(doc["kind"].as_str(), Some("HyperNode"));
            let name = doc["metadata"]["name"].as_str().unwrap();
            assert!(dns_name(name), "{name}");
            let tier = doc["spec"]["tier"].as_u64().expect("tier, an integer >= 0");
            tiers.push(tier);
            assert!(doc["spec"]["tierName"].as_str().is_some());
            for m in doc["spec"]["members"].as_sequence().unwrap() {
                let kind = m["type"].as_str().unwrap();
                assert_eq!(kind, if tier == 1 { "Node" } else { "HyperNode" });
                let selector = m["selector"].as_mapping().unwrap();
                assert_eq!(
                    selector.len(),
                    1,
                    "exactly one of exactMatch, regexMatch, labelMatch"
                );
                assert!(m["selector"]["exactMatch"]["name"].as_str().is_some());
            }
        }
        assert_eq!(tiers, [1, 1, 1, 1, 2, 2]);
        let d = crate::declared::parse_volcano_hypernodes(&text).unwrap();
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
                ("switch", vec![h(0..4), h(4..8)]),
                ("leaf", vec![h(0..2), h(2..4), h(4..6), h(6..8)]),
            ]
        );
    }

    #[test]
    fn hypernodes_that_do_not_hold_together_are_refused() {
        let member = |kind: &str, name: &str| {
            format!("    - type: {kind}\n      selector:\n        exactMatch:\n          name: {name}\n")
        };
        let node = |name: &str, tier: u32, members: &str| {
            format!("---\napiVersion: {VOLCANO_API_VERSION}\nkind: HyperNode\nmetadata:\n  name: {name}\nspec:\n  tier: {tier}\n  members:\n{members}")
        };
        let parse = crate::declared::parse_volcano_hypernodes;
        let a = node("a", 1, &(member("Node", "h0") + &member("Node", "h1")));
        let b = node("b", 1, &(member("Node", "h1") + &member("Node", "h2")));
        assert!(parse(&(a.clone() + &b))
            .unwrap_err()
            .to_string()
            .contains("under two HyperNodes"));
        let top = node("top", 2, &member("HyperNode", "missing"));
        assert!(parse(&(a.clone() + &top))
            .unwrap_err()
            .to_string()
            .contains("missing is not in the file"));
        let up = node("up", 1, &member("HyperNode", "a"));
        assert!(parse(&(a.clone() + &up))
            .unwrap_err()
            .to_string()
            .contains("not below it"));
        let regex = node(
            "r",
            1,
            "    - type: Node\n      selector:\n        regexMatch:\n          pattern: h.*\n",
        );
        assert!(parse(&regex)
            .unwrap_err()
            .to_string()
            .contains("regexMatch"));
        assert!(parse("kind: List\nitems: []\n").is_err());
    }
}
