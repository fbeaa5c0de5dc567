//! A machine's topology as its site declares it: which hosts share each switch, block or
//! domain, level by level, read from Slurm's `topology.conf` (tree or block), Slurm's
//! `topology.yaml`, Kubernetes node labels (topograph's keys), topograph's model file, Kueue,
//! KAI and Volcano objects, or a topology of ranks whose
//! levels hold whole hosts (that last one by the caller, who knows the ranks' hosts).

mod k8s;
mod kube_topology;
mod slurm_conf;
mod slurm_yaml;
mod topograph;
mod volcano;

pub use k8s::{is_k8s_nodes, parse_k8s_nodes};
pub use kube_topology::{is_kube_topology, parse_kube_topology};
pub use slurm_conf::{is_slurm_conf, parse_slurm_conf};
pub use slurm_yaml::{is_slurm_yaml, parse_slurm_yaml};
#[cfg(test)]
pub(crate) use topograph::expand_topograph_nodes;
pub use topograph::{is_topograph_model, parse_topograph_model};
pub use volcano::{is_volcano_hypernodes, parse_volcano_hypernodes};

/// Why a declared topology could not be read: where in the file, and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}{problem}")]
pub struct DeclaredError {
    /// Where the problem is.
    pub place: DeclaredPlace,
    /// What is wrong there.
    pub problem: String,
}

/// Where in a declared file a problem is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeclaredPlace {
    /// The file as a whole.
    File,
    /// A line (1-based) of a Slurm `topology.conf`.
    Line(usize),
    /// A document (1-based) of a YAML stream.
    Document(usize),
    /// A named topology of a Slurm `topology.yaml`.
    Topology(String),
}

impl std::fmt::Display for DeclaredPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeclaredPlace::File => Ok(()),
            DeclaredPlace::Line(n) => write!(f, "line {n}: "),
            DeclaredPlace::Document(k) => write!(f, "document {k}: "),
            DeclaredPlace::Topology(name) => write!(f, "topology {name}: "),
        }
    }
}

impl DeclaredError {
    /// A problem of the file as a whole.
    pub(crate) fn file(problem: impl Into<String>) -> Self {
        DeclaredError {
            place: DeclaredPlace::File,
            problem: problem.into(),
        }
    }

    /// A problem at `place`.
    pub(crate) fn at(place: DeclaredPlace, problem: impl Into<String>) -> Self {
        DeclaredError {
            place,
            problem: problem.into(),
        }
    }
}

/// One group of hosts of a declared level (a switch, a block).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredGroup {
    /// Its name in the file (`s1`, `b0`).
    pub name: String,
    /// Its hosts.
    pub hosts: Vec<String>,
}

/// One level of a declared topology: a partition of some hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredLevel {
    /// `tier1` (the leaf switches), `tier2`, ..., or `block`.
    pub name: String,
    /// Its groups.
    pub groups: Vec<DeclaredGroup>,
}

/// A declared topology: its levels, coarsest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// What it was read from (`Slurm topology.conf (tree)`).
    pub format: String,
    /// The levels with two groups or more, coarsest first.
    pub levels: Vec<DeclaredLevel>,
}

impl Declared {
    /// Every host any level names, sorted.
    pub fn hosts(&self) -> Vec<String> {
        let mut h: Vec<String> = (self.levels.iter())
            .flat_map(|l| l.groups.iter().flat_map(|g| g.hosts.iter().cloned()))
            .collect();
        h.sort();
        h.dedup();
        h
    }
}

/// Reads a declared topology of hosts when `text` is one of the host formats (Slurm
/// `topology.conf` or `topology.yaml`, a Kueue or KAI Scheduler Topology with its nodes,
/// Volcano HyperNodes, a topograph model, Kubernetes nodes); `None` when it is none of them.
/// Errors say where and what. A byte-order mark at the start (an editor's) is not part of it.
pub fn parse_host_declared(text: &str) -> Option<Result<Declared, DeclaredError>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if is_slurm_conf(text) {
        Some(parse_slurm_conf(text))
    } else if is_slurm_yaml(text) {
        Some(parse_slurm_yaml(text))
    } else if is_kube_topology(text) {
        Some(parse_kube_topology(text))
    } else if is_volcano_hypernodes(text) {
        Some(parse_volcano_hypernodes(text))
    } else if is_topograph_model(text) {
        Some(parse_topograph_model(text))
    } else if is_k8s_nodes(text) {
        Some(parse_k8s_nodes(text))
    } else {
        None
    }
}

/// The documents of a YAML stream (a JSON document is one), each as a YAML value; empty
/// documents left out.
fn documents(text: &str) -> Result<Vec<serde_norway::Value>, String> {
    use serde::Deserialize;
    serde_norway::Deserializer::from_str(text)
        .map(|doc| serde_norway::Value::deserialize(doc).map_err(|e| e.to_string()))
        .filter(|doc| !matches!(doc, Ok(serde_norway::Value::Null)))
        .collect()
}

#[cfg(test)]
mod bom_tests {
    use super::*;

    #[test]
    fn a_byte_order_mark_before_a_declared_file_is_not_part_of_it() {
        for text in [
            "SwitchName=s0 Nodes=h[0-1]\n",
            "- topology: t\n  cluster_default: true\n  tree:\n    switches:\n      - switch: s0\n        nodes: h[0-1]\n",
        ] {
            let plain = parse_host_declared(text).expect("a declared file").unwrap();
            let marked = parse_host_declared(&format!("\u{feff}{text}"))
                .expect("a declared file with a BOM")
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(plain.hosts(), marked.hosts());
        }
    }
}
