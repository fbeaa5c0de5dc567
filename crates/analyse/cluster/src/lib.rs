//! Clustering distance matrices between ranks into hierarchical machine topologies (cores,
//! sockets, nodes, switches). Nothing here needs MPI.
//!
//! ```
//! use lgate_cluster::{auto, topology_of, AutoParams};
//! use ndarray::Array2;
//!
//! // Two nodes of four ranks: 1-1.01 us inside, 3 us across.
//! let d = Array2::from_shape_fn((8, 8), |(i, j)| match (i == j, i / 4 == j / 4) {
//!     (true, _) => 0.0,
//!     (false, true) => 1.0 + 0.01 * ((i + j) % 2) as f64,
//!     (false, false) => 3.0,
//! });
//! let topology = topology_of(&auto(&d, &AutoParams::default()), 8, None)?;
//! assert_eq!(topology.levels().len(), 1);
//! assert_eq!(topology.levels()[0].groups, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
//! // A split of groups with no spread inside at all would have no (finite) separation.
//! assert!(topology.levels()[0].separation.unwrap() >= 2.5);
//! # Ok::<(), lgate_topology::TopologyError>(())
//! ```
#![deny(missing_docs)]

pub mod algorithms;
pub mod auto;
pub use auto::{alike, by_hosts, host_levels, screened_hosts, separation};
pub(crate) use auto::{apart, outliers};
pub mod clustering;
pub mod confidence;
pub mod features;
pub mod found;
pub mod hdbscan;
pub mod hwloc_export;
pub mod input;
pub mod linkage;
pub mod methods;
pub mod score;
pub mod spectral;
pub mod stored;
pub mod summary;
pub mod taking_turns;
pub mod tree;

#[cfg(test)]
mod test_matrices;

pub use auto::{auto, auto_with_outliers, separation_of, AutoParams, Tree, View};
pub use by_hosts::{auto_by_hosts, dense_by_hosts, ByHostsError, HostClustering};
pub use clustering::{
    cluster_features, cluster_matrices, default_clustering, load_chosen, Clustering,
    ClusteringError,
};
pub use found::{finished_topology, found_levels};
pub use hdbscan::{hdbscan, Hdbscan, HdbscanParams};
pub use hwloc_export::{host_distances, HostDistances};
pub use input::{
    choose_by_levels, choose_by_sure_levels, load, load_by_hosts, load_candidates, load_with_sizes,
    read_truth, ClusterInput, Distances, InputError, Truth, UnboundLevel,
};
pub use linkage::{profile_distances, Dendrogram, Linkage};
pub use outliers::slow_ranks;
pub use score::{accuracy, adjusted_rand_index, name_levels, score_levels, LevelScore, ScoreError};
pub use screened_hosts::ScreenedJudge;
pub use stored::default_topology;
pub use summary::ClusterSummary;

use lgate_topology::{default_level_name, Level, Topology, TopologyError, TopologyNode};

fn node_of(tree: &Tree) -> TopologyNode {
    match tree {
        Tree::Leaf(ranks) => {
            let mut r = ranks.clone();
            r.sort_unstable();
            TopologyNode::group(r)
        }
        Tree::Node {
            children,
            separation,
        } => {
            let mut kids: Vec<TopologyNode> = children.iter().map(node_of).collect();
            kids.sort_by_key(|k| k.ranks().into_iter().min());
            // A split of groups with no spread inside has no finite separation to write.
            TopologyNode::cluster(kids).with_height(separation.filter(|s| s.is_finite()))
        }
    }
}

/// The groups at depth `depth` (leaves above it persist) and the least separation of the splits
/// that made them.
fn groups_at(
    tree: &Tree,
    here: usize,
    depth: usize,
    out: &mut Vec<Vec<usize>>,
    separation: &mut Option<f64>,
) {
    match tree {
        Tree::Node {
            children,
            separation: s,
        } if here < depth => {
            if here + 1 == depth {
                if let Some(s) = s.filter(|s| s.is_finite()) {
                    *separation = Some(separation.map_or(s, |x: f64| x.min(s)));
                }
            }
            for c in children {
                groups_at(c, here + 1, depth, out, separation);
            }
        }
        t => {
            let mut r = t.ranks();
            r.sort_unstable();
            out.push(r);
        }
    }
}

/// The levels of `tree` below its top (0 for a leaf).
pub(crate) fn depth(tree: &Tree) -> usize {
    match tree {
        Tree::Leaf(_) => 0,
        Tree::Node { children, .. } => 1 + children.iter().map(depth).max().unwrap_or(0),
    }
}

/// The topology of a hierarchy over `ranks` ranks: its tree, and its levels (coarsest first,
/// named `level1`, `level2`, ...) with the separation of the weakest split that made each.
pub fn topology_of(
    tree: &Tree,
    ranks: usize,
    labels: Option<Vec<String>>,
) -> Result<Topology, TopologyError> {
    let topology = Topology::from_tree(node_of(tree), Some(ranks))?;
    let mut levels: Vec<Level> = Vec::new();
    for d in 1..=depth(tree) {
        let mut groups = Vec::new();
        let mut separation = None;
        groups_at(tree, 0, d, &mut groups, &mut separation);
        if groups.len() <= 1
            || levels
                .last()
                .is_some_and(|l| l.groups.len() == groups.len())
        {
            continue;
        }
        groups.sort_by_key(|g| g[0]);
        levels.push(Level {
            name: default_level_name(levels.len() + 1),
            groups,
            separation,
            confidence: None,
        });
    }
    let topology = topology.with_levels(levels)?;
    match labels {
        Some(l) => topology.with_labels(l),
        None => Ok(topology),
    }
}
