//! Writing a topology for the programs that consume it: one [`TopologyWriter`] per format,
//! listed in [`WRITERS`]. `cluster --format` and `topology convert --to` both take their
//! choices from this list.
//!
//! A new format is one module here implementing [`TopologyWriter`] and one line in
//! [`WRITERS`].
//!
//! ```
//! use lgate_topology::export::{writer, ExportContext};
//! use lgate_topology::{Topology, TopologyNode};
//!
//! let tree = TopologyNode::cluster(vec![TopologyNode::group(vec![0, 1, 2]), TopologyNode::group(vec![3, 4, 5])]);
//! let topology = Topology::from_tree(tree, Some(6)).unwrap();
//! let text = writer("lgate").unwrap().write(&topology, &ExportContext::default()).unwrap();
//! assert!(text.contains("group { 0-2 }"), "{text}");
//! assert!(writer("slurm").unwrap().write(&topology, &ExportContext::default()).is_err(), "no hosts");
//! ```

mod formats;
mod host_levels;
mod hostlist;
mod k8s;
mod kai;
mod kueue;
mod rankfile;
mod slurm;
mod topograph;
mod volcano;

use crate::tree::Topology;

pub use formats::{JsonWriter, LgateWriter, NewickWriter};
pub use hostlist::{expand_hostlist, hostlist};
pub use k8s::{K8sLabelsWriter, FABRIC_TIER};
pub use kai::{KaiTopologyWriter, KAI_API_VERSION};
pub use kueue::{KueueTopologyWriter, KUEUE_API_VERSION, KUEUE_MAX_LEVELS, TOPOLOGY_OBJECT_NAME};
pub use rankfile::{rankfile, Place, RankfileError};
pub use slurm::{SlurmBlockWriter, SlurmWriter, SlurmYamlWriter};
pub use topograph::TopographModelWriter;
pub use volcano::{hypernode_name, VolcanoHyperNodesWriter, VOLCANO_API_VERSION};

/// What a writer may need beyond the topology.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExportContext<'a> {
    /// The host of each rank of the job, when known (a run directory has them).
    pub hosts: Option<&'a [String]>,
    /// Where the topology came from, for a header line (a file, a run's matrix).
    pub source: &'a str,
}

/// Why a topology cannot be written in a format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    /// The format needs the ranks' host names and none were given.
    #[error("the {format} format needs host names, which a run directory has and a matrix file or a topology without labels does not")]
    NeedsHosts {
        /// The format.
        format: &'static str,
    },
    /// The format holds fewer levels than the topology has.
    #[error("the {format} format holds at most {most} levels (node labels), and this topology needs {levels}")]
    TooManyLevels {
        /// The format.
        format: &'static str,
        /// Levels needed, the host's own included.
        levels: usize,
        /// Levels the format holds.
        most: usize,
    },
    /// The host list does not cover the topology's ranks.
    #[error("{hosts} host names for a topology of {ranks} ranks")]
    HostCount {
        /// Host names given.
        hosts: usize,
        /// Ranks of the topology.
        ranks: usize,
    },
}

/// A topology file format that can be written.
pub trait TopologyWriter: Sync {
    /// The format's name as users type it (`lgate`, `json`, `newick`, `slurm`, ...).
    fn name(&self) -> &'static str;
    /// What the format is and who reads it, in one line.
    fn description(&self) -> &'static str;
    /// The topology in this format.
    fn write(&self, topology: &Topology, context: &ExportContext) -> Result<String, ExportError>;
}

/// Every writer, in the order they are documented.
pub static WRITERS: &[&dyn TopologyWriter] = &[
    &LgateWriter,
    &JsonWriter,
    &NewickWriter,
    &SlurmWriter,
    &SlurmBlockWriter,
    &SlurmYamlWriter,
    &K8sLabelsWriter,
    &KueueTopologyWriter,
    &KaiTopologyWriter,
    &VolcanoHyperNodesWriter,
    &TopographModelWriter,
];

/// The writer of the format called `name`.
pub fn writer(name: &str) -> Option<&'static dyn TopologyWriter> {
    WRITERS
        .iter()
        .copied()
        .find(|w| w.name().eq_ignore_ascii_case(name))
}

/// The names of every format that can be written.
pub fn names() -> Vec<&'static str> {
    WRITERS.iter().map(|w| w.name()).collect()
}

/// A YAML double-quoted string (host names may look like numbers to YAML).
fn yaml_quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// 2 switches x 2 leaves x 2 hosts (`n00`-`n07`) of 2 ranks, and the ranks' hosts: the
/// machine the schedulers' writers are tested on.
#[cfg(test)]
pub(crate) fn two_switches() -> (Topology, Vec<String>) {
    use crate::tree::Level;
    let hosts: Vec<String> = (0..16).map(|r| format!("n{:02}", r / 2)).collect();
    let topology = Topology::from_levels(
        16,
        vec![
            Level::new("switch", vec![(0..8).collect(), (8..16).collect()]),
            Level::new(
                "leaf",
                (0..4).map(|l| (4 * l..4 * l + 4).collect()).collect(),
            ),
            Level::new("host", (0..8).map(|h| vec![2 * h, 2 * h + 1]).collect()),
        ],
    )
    .expect("a valid topology");
    (topology, hosts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TopologyNode;

    #[test]
    fn every_writer_is_found_by_its_name_and_writes() {
        let tree = TopologyNode::cluster(vec![
            TopologyNode::group(vec![0, 1]),
            TopologyNode::group(vec![2, 3]),
        ]);
        let topology = Topology::from_tree(tree, Some(4)).unwrap();
        let hosts: Vec<String> = ["a", "a", "b", "b"].iter().map(|h| h.to_string()).collect();
        let context = ExportContext {
            hosts: Some(&hosts),
            source: "test",
        };
        for w in WRITERS {
            assert_eq!(writer(w.name()).unwrap().name(), w.name());
            assert!(!w.description().is_empty());
            let text = w.write(&topology, &context).unwrap();
            assert!(!text.is_empty(), "{}", w.name());
        }
        assert!(writer("yaml").is_none());
        assert_eq!(
            names(),
            [
                "lgate",
                "json",
                "newick",
                "slurm",
                "slurm-block",
                "slurm-yaml",
                "k8s-labels",
                "kueue-topology",
                "kai-topology",
                "volcano-hypernodes",
                "topograph-model"
            ]
        );
    }
}
