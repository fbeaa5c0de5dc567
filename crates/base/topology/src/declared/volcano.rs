//! Volcano's HyperNodes (`topology.volcano.sh`): each a group of nodes or of HyperNodes at a
//! tier, tier 1 the nearest, as `--format volcano-hypernodes` writes them or `kubectl get
//! hypernodes -o yaml` prints them.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use super::{documents, Declared, DeclaredError, DeclaredGroup, DeclaredLevel, DeclaredPlace};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Probe {
    api_version: Option<String>,
    kind: Option<String>,
}

#[derive(Debug, Deserialize)]
struct HyperNodeList {
    items: Vec<HyperNode>,
}

#[derive(Debug, Deserialize)]
struct HyperNode {
    metadata: Name,
    spec: HyperNodeSpec,
}

#[derive(Debug, Deserialize)]
struct Name {
    name: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HyperNodeSpec {
    tier: u32,
    #[serde(default)]
    tier_name: Option<String>,
    #[serde(default)]
    members: Vec<Member>,
}

#[derive(Debug, Deserialize)]
struct Member {
    #[serde(rename = "type")]
    kind: MemberKind,
    selector: Selector,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
enum MemberKind {
    Node,
    HyperNode,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Selector {
    #[serde(default)]
    exact_match: Option<Name>,
    #[serde(default)]
    regex_match: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    label_match: Option<serde::de::IgnoredAny>,
}

fn is_volcano(p: &Probe) -> bool {
    p.api_version
        .as_deref()
        .is_some_and(|v| v.starts_with("topology.volcano.sh/"))
}

fn probe(doc: &serde_norway::Value) -> Option<Probe> {
    serde_norway::from_value(doc.clone()).ok()
}

/// Whether `text` holds Volcano HyperNodes (documents, or a list of them).
pub fn is_volcano_hypernodes(text: &str) -> bool {
    documents(text).is_ok_and(|docs| {
        docs.iter().filter_map(probe).any(|p| {
            matches!(p.kind.as_deref(), Some("HyperNode"))
                || (matches!(p.kind.as_deref(), Some("HyperNodeList" | "List")) && is_volcano(&p))
        }) || docs.iter().any(|d| {
            serde_norway::from_value::<HyperNodeList>(d.clone()).is_ok_and(|l| !l.items.is_empty())
        })
    })
}

/// Reads the topology Volcano HyperNodes declare: a level per tier (the highest first), each
/// HyperNode a group of the nodes below it; tiers of one HyperNode are left out. Members are
/// read by exact name; a member chosen by pattern or label needs the cluster's nodes and is an
/// error here.
pub fn parse_volcano_hypernodes(text: &str) -> Result<Declared, DeclaredError> {
    let docs =
        documents(text).map_err(|e| DeclaredError::file(format!("not YAML documents: {e}")))?;
    let mut nodes: Vec<HyperNode> = Vec::new();
    for (k, doc) in docs.iter().enumerate() {
        let at = |e: serde_norway::Error| {
            DeclaredError::at(DeclaredPlace::Document(k + 1), e.to_string())
        };
        match probe(doc).and_then(|p| p.kind) {
            Some(kind) if kind == "HyperNode" => {
                nodes.push(serde_norway::from_value(doc.clone()).map_err(at)?)
            }
            _ => {
                if let Ok(list) = serde_norway::from_value::<HyperNodeList>(doc.clone()) {
                    nodes.extend(list.items);
                }
            }
        }
    }
    if nodes.is_empty() {
        return Err(DeclaredError::file("no Volcano HyperNode in it"));
    }
    let index: HashMap<&str, usize> = (nodes.iter().enumerate())
        .map(|(k, n)| (n.metadata.name.as_str(), k))
        .collect();
    if index.len() != nodes.len() {
        return Err(DeclaredError::file("a HyperNode name is used twice"));
    }
    for n in &nodes {
        for m in &n.spec.members {
            let s = &m.selector;
            if s.exact_match.is_none() {
                let how = if s.regex_match.is_some() {
                    "regexMatch"
                } else if s.label_match.is_some() {
                    "labelMatch"
                } else {
                    "no selector"
                };
                return Err(DeclaredError::file(format!(
                    "HyperNode {}: a member chosen by {how}, which needs the cluster's nodes; \
                     only exactMatch members are read",
                    n.metadata.name
                )));
            }
        }
    }
    // Each HyperNode's nodes, through the HyperNodes below it (a lower tier each step).
    let mut hosts: Vec<Option<Vec<String>>> = vec![None; nodes.len()];
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by_key(|&k| nodes[k].spec.tier);
    for &k in &order {
        let n = &nodes[k];
        let mut mine = Vec::new();
        for m in &n.spec.members {
            let name = &m.selector.exact_match.as_ref().expect("checked above").name;
            match m.kind {
                MemberKind::Node => mine.push(name.clone()),
                MemberKind::HyperNode => {
                    let c = *index.get(name.as_str()).ok_or_else(|| {
                        DeclaredError::file(format!(
                            "HyperNode {}: its member HyperNode {name} is not in the file",
                            n.metadata.name
                        ))
                    })?;
                    if nodes[c].spec.tier >= n.spec.tier {
                        return Err(DeclaredError::file(format!(
                            "HyperNode {} (tier {}): its member {name} is of tier {}, not below it",
                            n.metadata.name, n.spec.tier, nodes[c].spec.tier
                        )));
                    }
                    mine.extend(hosts[c].iter().flatten().cloned());
                }
            }
        }
        mine.sort();
        mine.dedup();
        hosts[k] = Some(mine);
    }
    let mut tiers: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (k, n) in nodes.iter().enumerate() {
        tiers.entry(n.spec.tier).or_default().push(k);
    }
    let mut levels = Vec::new();
    for (tier, members) in tiers.into_iter().rev() {
        let mut groups: Vec<DeclaredGroup> = (members.iter())
            .map(|&k| DeclaredGroup {
                name: nodes[k].metadata.name.clone(),
                hosts: hosts[k].clone().unwrap_or_default(),
            })
            .filter(|g| !g.hosts.is_empty())
            .collect();
        groups.sort_by(|a, b| a.name.cmp(&b.name));
        let mut all: Vec<&String> = groups.iter().flat_map(|g| &g.hosts).collect();
        let count = all.len();
        all.sort();
        all.dedup();
        if all.len() != count {
            return Err(DeclaredError::file(format!(
                "tier {tier}: a node under two HyperNodes of the tier"
            )));
        }
        if groups.len() >= 2 {
            let name = (members.iter())
                .find_map(|&k| nodes[k].spec.tier_name.clone())
                .unwrap_or_else(|| format!("tier{tier}"));
            levels.push(DeclaredLevel { name, groups });
        }
    }
    Ok(Declared {
        format: "Volcano HyperNodes".into(),
        levels,
    })
}
