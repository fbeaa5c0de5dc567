//! Kubernetes node labels as topograph writes them: `kubectl get nodes -o json` (or `-o
//! yaml`), a single node, or the file `--format k8s-labels` writes.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::{Declared, DeclaredError, DeclaredGroup, DeclaredLevel};
use crate::export::FABRIC_TIER;

/// How the rest of a label key after its family's prefix gives the tier.
type TierOf = fn(&str) -> Option<usize>;

/// The label families a node may carry, newest first: a key prefix and how a key's rest gives
/// its tier (0 closest to the node).
const FAMILIES: &[(&str, TierOf)] = &[
    (FABRIC_TIER, number),
    ("network.topology.nvidia.com/tier-", number),
    ("network.topology.nvidia.com/", named_tier),
    ("topology.kubernetes.io/network-level-", from_one),
];

/// The accelerator (NVLink) domain labels, newest first.
const ACCELERATOR: &[&str] = &[
    "accelerator.topograph.run/domain",
    "network.topology.nvidia.com/accelerator",
];

fn number(rest: &str) -> Option<usize> {
    rest.parse().ok()
}

fn from_one(rest: &str) -> Option<usize> {
    rest.parse::<usize>().ok()?.checked_sub(1)
}

fn named_tier(rest: &str) -> Option<usize> {
    match rest {
        "leaf" | "block" => Some(0),
        "spine" => Some(1),
        "core" => Some(2),
        _ => None,
    }
}

/// Just the kind of a Kubernetes document, and whether it has items (a list written without
/// its kind).
#[derive(Debug, Deserialize)]
struct Probe {
    kind: Option<String>,
    #[serde(default)]
    items: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Deserialize)]
struct NodeList {
    items: Vec<Node>,
}

#[derive(Debug, Deserialize)]
struct Node {
    metadata: Metadata,
}

#[derive(Debug, Deserialize)]
struct Metadata {
    name: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

fn read<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| e.to_string())
    } else {
        serde_norway::from_str(text).map_err(|e| e.to_string())
    }
}

/// Whether `text` is a Kubernetes `List`, `NodeList` or `Node` (JSON or YAML), or a malformed
/// one that says so on a line of its own (`kind: List`), so that its error is about nodes.
pub fn is_k8s_nodes(text: &str) -> bool {
    let node_kind = |k: &str| matches!(k, "List" | "NodeList" | "Node");
    match read::<Probe>(text) {
        Ok(Probe { kind: Some(k), .. }) => node_kind(&k),
        Ok(Probe { kind: None, items }) => items.is_some(),
        Err(_) => text.lines().any(|l| {
            let l = l.trim().trim_end_matches(',').replace('"', "");
            l.strip_prefix("kind:").is_some_and(|k| node_kind(k.trim()))
        }),
    }
}

/// Reads the topology Kubernetes nodes' labels declare: a level per fabric tier (the coarsest
/// first) in the newest label family any node carries, then the accelerator domains; a node
/// without a tier's label is left out of that level.
pub fn parse_k8s_nodes(text: &str) -> Result<Declared, DeclaredError> {
    let probe: Probe =
        read(text).map_err(|e| DeclaredError::file(format!("not a Kubernetes node list: {e}")))?;
    let nodes = match probe.kind.as_deref() {
        Some("Node") => {
            vec![read::<Node>(text)
                .map_err(|e| DeclaredError::file(format!("not a Kubernetes node: {e}")))?]
        }
        Some("List" | "NodeList") | None if probe.kind.is_some() || probe.items.is_some() => {
            read::<NodeList>(text)
                .map_err(|e| DeclaredError::file(format!("not a Kubernetes node list: {e}")))?
                .items
        }
        other => {
            return Err(DeclaredError::file(format!(
                "not a Kubernetes node list: kind {}",
                other.unwrap_or("missing")
            )))
        }
    };
    if nodes.is_empty() {
        return Err(DeclaredError::file(
            "a Kubernetes node list without nodes: nothing is declared",
        ));
    }
    let family = FAMILIES.iter().find(|(prefix, tier)| {
        (nodes.iter()).any(|n| {
            (n.metadata.labels.keys()).any(|k| k.strip_prefix(prefix).and_then(tier).is_some())
        })
    });
    let accelerator = (ACCELERATOR.iter())
        .find(|key| nodes.iter().any(|n| n.metadata.labels.contains_key(**key)));
    if family.is_none() && accelerator.is_none() {
        return Err(DeclaredError::file(format!(
            "none of its {} nodes carries a topology label ({FABRIC_TIER}N, \
             network.topology.nvidia.com/..., accelerator.topograph.run/domain)",
            nodes.len()
        )));
    }
    // Per level (by its key), per group (by its value), the hosts.
    let mut tiers: BTreeMap<usize, (String, BTreeMap<String, Vec<String>>)> = BTreeMap::new();
    let mut domains: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    for n in &nodes {
        let host = &n.metadata.name;
        if host.trim().is_empty() {
            return Err(DeclaredError::file("a node without a name"));
        }
        if !seen.insert(host.as_str()) {
            return Err(DeclaredError::file(format!("node {host} is listed twice")));
        }
        // An empty value (valid in Kubernetes) places the node in no group of that level.
        for (key, value) in n
            .metadata
            .labels
            .iter()
            .filter(|(_, v)| !v.trim().is_empty())
        {
            if let Some((prefix, tier)) = family {
                if let Some(t) = key.strip_prefix(prefix).and_then(tier) {
                    let (_, groups) = tiers
                        .entry(t)
                        .or_insert_with(|| (key.clone(), BTreeMap::new()));
                    groups.entry(value.clone()).or_default().push(host.clone());
                }
            }
            if accelerator == Some(&key.as_str()) {
                domains.entry(value.clone()).or_default().push(host.clone());
            }
        }
    }
    let level = |name: String, groups: BTreeMap<String, Vec<String>>| DeclaredLevel {
        name,
        groups: (groups.into_iter())
            .map(|(name, hosts)| DeclaredGroup { name, hosts })
            .collect(),
    };
    let mut levels: Vec<DeclaredLevel> = (tiers.into_values().rev())
        .map(|(key, groups)| level(key, groups))
        .collect();
    if let Some(key) = accelerator {
        levels.push(level(key.to_string(), domains));
    }
    levels.retain(|l| l.groups.len() >= 2);
    Ok(Declared {
        format: format!(
            "Kubernetes node labels ({})",
            family.map_or_else(|| accelerator.copied().unwrap_or(""), |(p, _)| *p)
        ),
        levels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, labels: &[(&str, &str)]) -> String {
        let labels: Vec<String> = (labels.iter())
            .map(|(k, v)| format!("\"{k}\": \"{v}\""))
            .collect();
        format!(
            "{{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {{\"name\": \"{name}\", \
             \"labels\": {{{}}}}}, \"status\": {{}}}}",
            labels.join(", ")
        )
    }

    #[test]
    fn fabric_tiers_give_levels_coarsest_first() {
        let items: Vec<String> = (0..4)
            .map(|h| {
                let leaf = format!("leaf{}", h / 2);
                node(
                    &format!("n{h}"),
                    &[
                        ("fabric.topograph.run/tier-0", &leaf),
                        ("fabric.topograph.run/tier-1", "spine"),
                        (
                            "accelerator.topograph.run/domain",
                            if h % 2 == 0 { "a" } else { "b" },
                        ),
                        ("kubernetes.io/hostname", "x"),
                    ],
                )
            })
            .collect();
        let text = format!(
            "{{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [{}]}}",
            items.join(",")
        );
        assert!(is_k8s_nodes(&text));
        let d = parse_k8s_nodes(&text).unwrap();
        // tier-1 has one group: left out.
        let names: Vec<&str> = d.levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "fabric.topograph.run/tier-0",
                "accelerator.topograph.run/domain"
            ]
        );
        assert_eq!(d.levels[0].groups[1].hosts, ["n2", "n3"]);
        assert_eq!(d.levels[1].groups[0].hosts, ["n0", "n2"]);
    }

    #[test]
    fn a_list_without_its_kind_or_without_nodes_is_told_as_such() {
        // `{"items": []}` was read as a matrix ("a header but no rows of numbers").
        for text in [
            "{\"items\": []}",
            "items: []\n",
            "{\"kind\": \"List\", \"items\": []}",
        ] {
            assert!(is_k8s_nodes(text), "{text}");
            let e = parse_k8s_nodes(text).unwrap_err();
            assert!(e.to_string().contains("without nodes"), "{text}: {e}");
        }
        let items = [
            node("n0", &[("network.topology.nvidia.com/leaf", "l1")]),
            node("n1", &[("network.topology.nvidia.com/leaf", "l2")]),
        ];
        let d = parse_k8s_nodes(&format!("{{\"items\": [{}]}}", items.join(","))).unwrap();
        assert_eq!(d.levels.len(), 1);
        assert_eq!(d.levels[0].groups.len(), 2);
    }

    #[test]
    fn older_keys_and_yaml_are_read() {
        let text = "apiVersion: v1\nkind: NodeList\nitems:\n\
            - metadata:\n    name: a\n    labels:\n      network.topology.nvidia.com/leaf: l1\n      network.topology.nvidia.com/spine: s1\n\
            - metadata:\n    name: b\n    labels:\n      network.topology.nvidia.com/leaf: l2\n      network.topology.nvidia.com/spine: s1\n\
            - metadata:\n    name: c\n    labels:\n      network.topology.nvidia.com/leaf: l3\n      network.topology.nvidia.com/spine: s2\n";
        let d = parse_k8s_nodes(text).unwrap();
        assert_eq!(d.levels.len(), 2);
        assert_eq!(d.levels[0].name, "network.topology.nvidia.com/spine");
        assert_eq!(d.levels[0].groups[0].hosts, ["a", "b"]);
    }

    #[test]
    fn an_empty_label_value_places_a_node_in_no_group_and_a_node_needs_a_name() {
        let text = "kind: NodeList\nitems:\n\
            - metadata:\n    name: a\n    labels:\n      network.topology.nvidia.com/leaf: l1\n\
            - metadata:\n    name: b\n    labels:\n      network.topology.nvidia.com/leaf: \"\"\n\
            - metadata:\n    name: c\n    labels:\n      network.topology.nvidia.com/leaf: l2\n";
        let d = parse_k8s_nodes(text).unwrap();
        assert_eq!(d.levels.len(), 1);
        let names: Vec<&str> = d.levels[0].groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["l1", "l2"]);
        let hosts: Vec<&String> = d.levels[0].groups.iter().flat_map(|g| &g.hosts).collect();
        assert_eq!(hosts, ["a", "c"]);
        let nameless = "kind: NodeList\nitems:\n\
            - metadata:\n    name: \"\"\n    labels:\n      network.topology.nvidia.com/leaf: l1\n";
        assert_eq!(
            parse_k8s_nodes(nameless).unwrap_err().to_string(),
            "a node without a name"
        );
    }

    #[test]
    fn a_bad_file_says_what() {
        for (text, problem) in [
            ("{\"kind\": \"Pod\"}", "not a Kubernetes node list: kind Pod"),
            ("{\"kind\": \"List\", \"items\": [{\"metadata\": {}}]}", "not a Kubernetes node list:"),
            ("{\"kind\": \"List\", \"items\": [{\"metadata\": {\"name\": \"a\"}}]}", "none of its 1 nodes"),
            ("{\"kind\": \"List\", \"items\": [{\"metadata\": {\"name\": \"a\", \"labels\": {\"fabric.topograph.run/tier-0\": 3}}}]}", "not a Kubernetes node list:"),
        ] {
            let e = parse_k8s_nodes(text).unwrap_err();
            assert!(e.to_string().starts_with(problem), "{text}: {e}");
        }
        let twice = format!(
            "{{\"kind\": \"List\", \"items\": [{}, {}]}}",
            node("a", &[("fabric.topograph.run/tier-0", "x")]),
            node("a", &[("fabric.topograph.run/tier-0", "y")])
        );
        assert_eq!(
            parse_k8s_nodes(&twice).unwrap_err().to_string(),
            "node a is listed twice"
        );
    }
}
