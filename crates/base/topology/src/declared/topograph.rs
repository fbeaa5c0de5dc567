//! topograph's model file (`pkg/models`): a `switches` map (each switch's child switches) and a
//! `blocks` list (each block's nodes, on the leaf switch it names), as `--format
//! topograph-model` writes it or as topograph's own model fixtures are written.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use super::slurm_conf::{tree_levels, Below};
use super::{Declared, DeclaredError, DeclaredGroup, DeclaredLevel};

#[derive(Debug, Deserialize)]
struct Model {
    #[serde(default)]
    switches: BTreeMap<String, Option<Switch>>,
    blocks: Vec<Block>,
}

#[derive(Debug, Default, Deserialize)]
struct Switch {
    #[serde(default)]
    switches: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Block {
    #[serde(default)]
    switch: Option<String>,
    #[serde(default)]
    nodes: Vec<String>,
}

/// The most node names a model's ranges may expand to (topograph's own limit is 500 000).
const MOST_NODES: usize = 500_000;

/// Whether `text` is a topograph model: one YAML mapping with a `blocks` list of entries with
/// `nodes`, and no `apiVersion` (a Kubernetes object) or `topology` (Slurm).
pub fn is_topograph_model(text: &str) -> bool {
    let Ok(docs) = super::documents(text) else {
        return false;
    };
    let [doc] = docs.as_slice() else {
        return false;
    };
    let Some(map) = doc.as_mapping() else {
        return false;
    };
    map.get("apiVersion").is_none()
        && map.get("topology").is_none()
        && (map.get("blocks").and_then(|b| b.as_sequence()))
            .is_some_and(|b| b.iter().any(|e| e.get("nodes").is_some()))
}

/// Node names as topograph expands them: an entry `prefix[ranges]` (ranges `lo-hi` or single
/// numbers, comma-separated; a range padded to its low end's width) is its names, any other
/// entry one name.
pub(crate) fn expand_topograph_nodes(entries: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for entry in entries {
        let bracketed = (entry.strip_suffix(']'))
            .and_then(|e| e.split_once('['))
            .filter(|(_, ranges)| !ranges.contains(['[', ']']));
        let Some((prefix, ranges)) = bracketed else {
            out.push(entry.clone());
            continue;
        };
        for part in ranges.split(',') {
            let Some((lo, hi)) = part.split_once('-') else {
                out.push(format!("{prefix}{part}"));
                continue;
            };
            let number = |s: &str| {
                (s.parse::<u64>().ok()).ok_or_else(|| format!("{entry}: `{s}` is not a number"))
            };
            let (first, last) = (number(lo)?, number(hi)?);
            if last < first {
                return Err(format!("{entry}: the range {part} runs backwards"));
            }
            if last - first >= (MOST_NODES - out.len().min(MOST_NODES)) as u64 {
                return Err(format!("more than {MOST_NODES} node names"));
            }
            let width = lo.len();
            out.extend((first..=last).map(|i| format!("{prefix}{i:0width$}")));
        }
        if out.len() > MOST_NODES {
            return Err(format!("more than {MOST_NODES} node names"));
        }
    }
    Ok(out)
}

/// Reads the topology a topograph model declares: a level per height of its switch tree (as
/// Slurm's tree), and its blocks as a finer level when they part the leaf switches' nodes.
/// Errors say what is wrong, as topograph would refuse the model.
pub fn parse_topograph_model(text: &str) -> Result<Declared, DeclaredError> {
    let model: Model = serde_norway::from_str(text)
        .map_err(|e| DeclaredError::file(format!("not a topograph model: {e}")))?;
    let bad = |m: String| DeclaredError::file(m);
    let mut switches: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, switch) in &model.switches {
        if name.trim().is_empty()
            || switch
                .iter()
                .flat_map(|s| &s.switches)
                .any(|c| c.trim().is_empty())
        {
            return Err(bad("a switch without a name".into()));
        }
        let Some(switch) = switch else {
            return Err(bad(format!("switch {name} has an empty definition")));
        };
        switches.insert(name.clone(), switch.switches.clone());
    }
    // Leaf switches named only as a parent's child exist without an entry of their own.
    let children: Vec<String> = switches.values().flatten().cloned().collect();
    for child in children {
        switches.entry(child).or_default();
    }
    let mut nodes_of: HashMap<&str, Vec<String>> = HashMap::new();
    let mut blocks: Vec<(bool, Vec<String>)> = Vec::new();
    let mut block_of: HashMap<String, usize> = HashMap::new();
    for (k, block) in model.blocks.iter().enumerate() {
        let nodes = expand_topograph_nodes(&block.nodes).map_err(bad)?;
        if nodes.is_empty() {
            return Err(bad(format!("block {} declares no node", k + 1)));
        }
        for n in &nodes {
            if let Some(other) = block_of.insert(n.clone(), k) {
                return Err(bad(format!(
                    "node {n} is in block {} and block {}",
                    other + 1,
                    k + 1
                )));
            }
        }
        if nodes.iter().any(|n| n.trim().is_empty()) {
            return Err(bad(format!("block {} names a node without a name", k + 1)));
        }
        if let Some(s) = &block.switch {
            if !switches.contains_key(s) {
                return Err(bad(format!("block {} names no known switch {s}", k + 1)));
            }
            nodes_of.entry(s).or_default().extend(nodes.iter().cloned());
        }
        blocks.push((block.switch.is_some(), nodes));
    }
    let mut tree: Vec<(String, Below)> = Vec::new();
    for (name, children) in &switches {
        let nodes = nodes_of.remove(name.as_str()).unwrap_or_default();
        let below = match (children.is_empty(), nodes.is_empty()) {
            (true, _) => Below::Hosts(nodes),
            (false, true) => Below::Switches(children.clone()),
            (false, false) => {
                return Err(bad(format!(
                "switch {name} has both switches and nodes; only nodes on leaf switches are read"
            )))
            }
        };
        tree.push((name.clone(), below));
    }
    let mut levels = tree_levels(&tree).map_err(bad)?;
    // Leaf switches without nodes are no group.
    for level in &mut levels {
        level.groups.retain(|g| !g.hosts.is_empty());
    }
    levels.retain(|l| l.groups.len() >= 2);
    // The blocks, when they part the nodes more finely than the leaf switches do.
    let finest = levels.last().map_or(0, |l| l.groups.len());
    let nested = levels.is_empty() || blocks.iter().all(|(on_switch, _)| *on_switch);
    if blocks.len() >= 2 && blocks.len() > finest && nested {
        levels.push(DeclaredLevel {
            name: "block".into(),
            groups: (blocks.into_iter().enumerate())
                .map(|(k, (_, hosts))| DeclaredGroup {
                    name: format!("block{}", k + 1),
                    hosts,
                })
                .collect(),
        });
    }
    Ok(Declared {
        format: "topograph model".into(),
        levels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// topograph's own fixture `tests/models/small-tree.yaml`, as its docs show it.
    const SMALL_TREE: &str = "switches:\n  S1:\n    switches:\n    - S2\n    - S3\nblocks:\n\
        - switch: S2\n  nodes: [\"I[21-22]\", \"I25\"]\n  annotations:\n    \
        accelerator.topology.test/domain: nvl2\n- switch: S3\n  nodes: [\"I[34-36]\"]\n";

    #[test]
    fn topographs_small_tree_reads_as_two_leaves() {
        assert!(is_topograph_model(SMALL_TREE));
        let d = parse_topograph_model(SMALL_TREE).unwrap();
        assert_eq!(d.levels.len(), 1);
        let groups: Vec<(&str, &[String])> = (d.levels[0].groups.iter())
            .map(|g| (g.name.as_str(), g.hosts.as_slice()))
            .collect();
        assert_eq!(
            groups,
            [
                ("S2", &["I21".to_string(), "I22".into(), "I25".into()][..]),
                ("S3", &["I34".to_string(), "I35".into(), "I36".into()][..])
            ]
        );
    }

    #[test]
    fn blocks_finer_than_their_switch_are_a_level() {
        let text = "switches:\n  core:\n    switches: [leaf]\nblocks:\n- switch: leaf\n  \
                    nodes: [\"n[1-2]\"]\n- switch: leaf\n  nodes: [n3]\n";
        let d = parse_topograph_model(text).unwrap();
        assert_eq!(d.levels.len(), 1, "{d:?}");
        assert_eq!(d.levels[0].name, "block");
        assert_eq!(d.levels[0].groups[1].hosts, ["n3"]);
        let blocks_only = "blocks:\n- nodes: [\"gpu[001-002]\"]\n- nodes: [gpu003]\n";
        let d = parse_topograph_model(blocks_only).unwrap();
        assert_eq!(d.levels[0].groups[0].hosts, ["gpu001", "gpu002"]);
    }

    #[test]
    fn a_bad_model_says_what_is_wrong() {
        let err = |t: &str| parse_topograph_model(t).unwrap_err().to_string();
        assert!(err("switches:\n  a:\nblocks:\n- nodes: [n1]\n").contains("empty definition"));
        assert!(err("blocks:\n- nodes: []\n").contains("declares no node"));
        assert!(err("blocks:\n- nodes: [n1]\n- nodes: [\"n[1-2]\"]\n").contains("node n1"));
        assert!(err("blocks:\n- switch: x\n  nodes: [n1]\n").contains("no known switch x"));
        assert!(err("blocks:\n- nodes: [\"n[0-99999999999]\"]\n").contains("more than"));
        assert!(err("blocks:\n- nodes: [\"n[5-1]\"]\n").contains("backwards"));
        assert!(err(
            "switches:\n  a:\n    switches: [b]\n  b:\n    switches: [a]\nblocks:\n- switch: a\n  nodes: [n1]\n"
        )
        .contains("both switches and nodes"));
        assert!(
            err("switches:\n  ? ''\n  : {}\nblocks:\n- nodes: [n1]\n").contains("without a name")
        );
        assert!(err("blocks:\n- nodes: ['']\n").contains("without a name"));
        assert!(!is_topograph_model("topology: x\nblocks:\n- nodes: [n1]\n"));
    }
}
