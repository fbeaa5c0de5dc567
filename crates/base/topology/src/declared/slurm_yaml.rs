//! Slurm's `topology.yaml` (Slurm 24.11 and later): a list of named topologies, each a tree of
//! switches, a set of blocks, or flat.

use serde::Deserialize;

use super::slurm_conf::{block_levels, tree_levels, Below};
use super::{Declared, DeclaredError, DeclaredGroup, DeclaredLevel, DeclaredPlace};
use crate::export::expand_hostlist;

/// One topology of the file.
#[derive(Debug, Deserialize)]
struct YamlTopology {
    topology: String,
    #[serde(default)]
    cluster_default: bool,
    tree: Option<YamlTree>,
    block: Option<YamlBlock>,
}

#[derive(Debug, Deserialize)]
struct YamlTree {
    switches: Vec<YamlSwitch>,
}

#[derive(Debug, Deserialize)]
struct YamlSwitch {
    switch: String,
    children: Option<Names>,
    nodes: Option<Names>,
}

#[derive(Debug, Deserialize)]
struct YamlBlock {
    blocks: Vec<YamlBlockEntry>,
    /// Slurm's planning aggregate sizes, in nodes.
    #[serde(default)]
    block_sizes: Vec<usize>,
}

#[derive(Debug, Deserialize)]
struct YamlBlockEntry {
    block: String,
    nodes: Names,
}

/// A hostlist expression (`n[01-04],m1`) or a list of them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Names {
    One(String),
    Many(Vec<String>),
}

impl Names {
    fn expand(&self, what: &str) -> Result<Vec<String>, String> {
        let lists: Vec<&str> = match self {
            Names::One(s) => vec![s.as_str()],
            Names::Many(v) => v.iter().map(String::as_str).collect(),
        };
        let mut out = Vec::new();
        for list in lists {
            out.extend(expand_hostlist(list).map_err(|e| format!("{what}: {list}: {e}"))?);
        }
        if out.is_empty() {
            return Err(format!("{what} is empty"));
        }
        Ok(out)
    }
}

/// Whether `text` looks like a Slurm `topology.yaml` (a list entry with `topology:`).
pub fn is_slurm_yaml(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim_start();
        l.strip_prefix("- ")
            .unwrap_or(l)
            .trim_start()
            .starts_with("topology:")
    })
}

/// Reads a Slurm `topology.yaml`: the levels of every tree and block topology in it (named
/// after their topology when there are several), the cluster default's first. Errors say the
/// line or the topology and the problem.
pub fn parse_slurm_yaml(text: &str) -> Result<Declared, DeclaredError> {
    let mut topologies: Vec<YamlTopology> = serde_norway::from_str(text)
        .map_err(|e| DeclaredError::file(format!("not a Slurm topology.yaml: {e}")))?;
    topologies.sort_by_key(|t| !t.cluster_default);
    let shaped = topologies
        .iter()
        .filter(|t| t.tree.is_some() || t.block.is_some())
        .count();
    let mut levels = Vec::new();
    for t in &topologies {
        let bad = |e: String| DeclaredError::at(DeclaredPlace::Topology(t.topology.clone()), e);
        let mut these: Vec<DeclaredLevel> = match (&t.tree, &t.block) {
            (Some(_), Some(_)) => return Err(bad("both tree: and block:".into())),
            (None, None) => continue,
            (Some(tree), None) => {
                let mut switches = Vec::new();
                for s in &tree.switches {
                    let what = |key: &str| format!("switch {} {key}", s.switch);
                    let below = match (&s.nodes, &s.children) {
                        (Some(n), None) => Below::Hosts(n.expand(&what("nodes")).map_err(bad)?),
                        (None, Some(c)) => {
                            Below::Switches(c.expand(&what("children")).map_err(bad)?)
                        }
                        _ => {
                            return Err(bad(format!(
                                "switch {} needs nodes: or children:, not both",
                                s.switch
                            )))
                        }
                    };
                    if switches.iter().any(|(name, _)| name == &s.switch) {
                        return Err(bad(format!("switch {} is declared twice", s.switch)));
                    }
                    switches.push((s.switch.clone(), below));
                }
                tree_levels(&switches).map_err(bad)?
            }
            (None, Some(block)) => {
                let mut groups = Vec::new();
                for b in &block.blocks {
                    groups.push(DeclaredGroup {
                        name: b.block.clone(),
                        hosts: b
                            .nodes
                            .expand(&format!("block {} nodes", b.block))
                            .map_err(bad)?,
                    });
                }
                block_levels(groups, &block.block_sizes).map_err(bad)?
            }
        };
        if shaped > 1 {
            for l in &mut these {
                l.name = format!("{}: {}", t.topology, l.name);
            }
        }
        levels.append(&mut these);
    }
    if shaped == 0 {
        return Err(DeclaredError::file("no topology with tree: or block:"));
    }
    Ok(Declared {
        format: "Slurm topology.yaml".into(),
        levels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "---\n\
        - topology: fabric\n  cluster_default: true\n  tree:\n    switches:\n\
        \x20     - switch: s1\n        nodes: n[01-02]\n\
        \x20     - switch: s2\n        nodes: [n03, n04]\n\
        \x20     - switch: root\n        children: s[1-2]\n\
        - topology: nvl\n  cluster_default: false\n  block:\n    block_sizes: [2]\n    blocks:\n\
        \x20     - block: b0\n        nodes: n[01,03]\n\
        \x20     - block: b1\n        nodes: n[02,04]\n\
        - topology: none\n  flat: true\n";

    #[test]
    fn every_tree_and_block_topology_gives_its_levels() {
        assert!(is_slurm_yaml(FILE));
        let d = parse_slurm_yaml(FILE).unwrap();
        let names: Vec<&str> = d.levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["fabric: tier1", "nvl: block"]);
        assert_eq!(d.levels[0].groups[1].hosts, ["n03", "n04"]);
        assert_eq!(d.levels[1].groups[0].hosts, ["n01", "n03"]);
    }

    #[test]
    fn what_lgate_plogp_writes_is_read_back() {
        use crate::export::{writer, ExportContext};
        use crate::{Level, Topology};
        let hosts: Vec<String> = (0..8).map(|r| format!("n{:02}", r / 2)).collect();
        let topology = Topology::from_levels(
            8,
            vec![
                Level::new("switch", vec![(0..4).collect(), (4..8).collect()]),
                Level::new("host", (0..4).map(|h| vec![2 * h, 2 * h + 1]).collect()),
            ],
        )
        .unwrap();
        let context = ExportContext {
            hosts: Some(&hosts),
            source: "test",
        };
        let text = writer("slurm-yaml")
            .unwrap()
            .write(&topology, &context)
            .unwrap();
        let d = parse_slurm_yaml(&text).unwrap();
        let tier1 = &d.levels[0];
        assert_eq!(tier1.groups.len(), 2, "{text}");
        assert_eq!(tier1.groups[0].hosts, ["n00", "n01"]);
    }

    #[test]
    fn a_bad_file_says_where_and_what() {
        for (text, problem) in [
            (
                "- topology: t\n  tree:\n    switches:\n      - switch: a\n",
                "topology t: switch a needs",
            ),
            (
                "- topology: t\n  flat: true\n",
                "no topology with tree: or block:",
            ),
            ("- topology: t\n  tree: [\n", "not a Slurm topology.yaml:"),
            (
                "- topology: t\n  block:\n    blocks:\n      - block: b\n        nodes: n[1-\n",
                "topology t: block b nodes: n[1-:",
            ),
        ] {
            let e = parse_slurm_yaml(text).unwrap_err();
            assert!(e.to_string().starts_with(problem), "{text:?}: {e}");
        }
    }
}
