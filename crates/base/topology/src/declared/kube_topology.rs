//! Kubernetes scheduler topologies that name node labels: Kueue's and KAI Scheduler's
//! `Topology` (`spec.levels[].nodeLabel`, coarsest first) with the nodes that carry those labels
//! in the same file (the documents `--format kueue-topology` and `kai-topology` write, or a
//! Topology followed by `kubectl get nodes -o yaml`).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{documents, Declared, DeclaredError, DeclaredGroup, DeclaredLevel, DeclaredPlace};

/// The node label that is each node itself (a Topology's last level may be it).
const HOSTNAME: &str = "kubernetes.io/hostname";

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Probe {
    api_version: Option<String>,
    kind: Option<String>,
}

#[derive(Debug, Deserialize)]
struct TopologyObject {
    spec: TopologySpec,
}

#[derive(Debug, Deserialize)]
struct TopologySpec {
    levels: Vec<TopologyLevel>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TopologyLevel {
    node_label: String,
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

/// Whose `Topology` an API version is, when it is Kueue's or KAI Scheduler's.
fn scheduler_of(api_version: &str) -> Option<&'static str> {
    match api_version.split('/').next()? {
        "kueue.x-k8s.io" => Some("Kueue"),
        "kai.scheduler" => Some("KAI Scheduler"),
        _ => None,
    }
}

fn probe(doc: &serde_norway::Value) -> Probe {
    serde_norway::from_value(doc.clone()).unwrap_or(Probe {
        api_version: None,
        kind: None,
    })
}

/// Whether `text` holds a Kueue or KAI Scheduler `Topology` document.
pub fn is_kube_topology(text: &str) -> bool {
    documents(text).is_ok_and(|docs| {
        docs.iter().map(probe).any(|p| {
            p.kind.as_deref() == Some("Topology")
                && p.api_version.as_deref().and_then(scheduler_of).is_some()
        })
    })
}

/// Reads the topology a Kueue or KAI Scheduler `Topology` declares over the nodes in the same
/// file: a level per node label it names (coarsest first, `kubernetes.io/hostname` aside), its
/// groups the nodes sharing the label's value; a node without the label is left out of that
/// level, and levels of one group are left out.
pub fn parse_kube_topology(text: &str) -> Result<Declared, DeclaredError> {
    let docs =
        documents(text).map_err(|e| DeclaredError::file(format!("not YAML documents: {e}")))?;
    let mut labels: Option<(Vec<String>, &str)> = None;
    let mut nodes: Vec<Node> = Vec::new();
    for (k, doc) in docs.iter().enumerate() {
        let p = probe(doc);
        let place = DeclaredPlace::Document(k + 1);
        let at = |e: serde_norway::Error| DeclaredError::at(place.clone(), e.to_string());
        match (
            p.kind.as_deref(),
            p.api_version.as_deref().and_then(scheduler_of),
        ) {
            (Some("Topology"), Some(scheduler)) => {
                if labels.is_some() {
                    return Err(DeclaredError::at(place, "a second Topology"));
                }
                let t: TopologyObject = serde_norway::from_value(doc.clone()).map_err(at)?;
                if t.spec.levels.is_empty() {
                    return Err(DeclaredError::at(place, "a Topology of no levels"));
                }
                let names: Vec<String> = t.spec.levels.into_iter().map(|l| l.node_label).collect();
                if let Some(h) = names.iter().position(|l| l == HOSTNAME) {
                    if h + 1 != names.len() {
                        return Err(DeclaredError::at(
                            place,
                            format!("{HOSTNAME} is a level above others (it can only be the last)"),
                        ));
                    }
                }
                let mut unique = names.clone();
                unique.sort();
                unique.dedup();
                if unique.len() != names.len() {
                    return Err(DeclaredError::at(place, "a node label named twice"));
                }
                labels = Some((names, scheduler));
            }
            (Some("List" | "NodeList"), _) => {
                let list: NodeList = serde_norway::from_value(doc.clone()).map_err(at)?;
                nodes.extend(list.items);
            }
            (Some("Node"), _) => nodes.push(serde_norway::from_value(doc.clone()).map_err(at)?),
            _ => {}
        }
    }
    let (names, scheduler) =
        labels.ok_or_else(|| DeclaredError::file("no Kueue or KAI Scheduler Topology in it"))?;
    if nodes.is_empty() {
        return Err(DeclaredError::file(format!(
            "its Topology names the node labels {} but the file holds no nodes: append the \
             nodes (kubectl get nodes -o yaml) after a line `---`",
            names.join(", ")
        )));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = nodes
        .iter()
        .find(|n| !seen.insert(n.metadata.name.as_str()))
    {
        return Err(DeclaredError::file(format!(
            "node {} is in it twice",
            twice.metadata.name
        )));
    }
    let levels = (names.iter().filter(|l| *l != HOSTNAME))
        .map(|label| {
            let mut groups: BTreeMap<&str, Vec<String>> = BTreeMap::new();
            for n in &nodes {
                if let Some(value) = n.metadata.labels.get(label) {
                    groups
                        .entry(value)
                        .or_default()
                        .push(n.metadata.name.clone());
                }
            }
            DeclaredLevel {
                name: label.clone(),
                groups: (groups.into_iter())
                    .map(|(name, hosts)| DeclaredGroup {
                        name: name.to_string(),
                        hosts,
                    })
                    .collect(),
            }
        })
        .filter(|l| l.groups.len() >= 2)
        .collect();
    Ok(Declared {
        format: format!("{scheduler} Topology"),
        levels,
    })
}
