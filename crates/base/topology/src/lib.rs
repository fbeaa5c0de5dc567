//! Hierarchical machine topologies for lgate-plogp.
//!
//! A [`Topology`] is a tree whose inner nodes are clusters and whose leaves are groups of MPI
//! ranks, together with its [`Level`]s: flat partitions of all ranks, coarsest first. It reads
//! and writes three formats ([`TopologyFormat`]): the LGate topology file, the
//! `lgate-plogp-topology` JSON document and Newick.
//!
//! ```
//! use lgate_topology::{format, TopologyFormat};
//!
//! let text = "cluster {\n cluster { group { 0-3 } group { 4-7 } }\n cluster { group { 8-15 } }\n}\n";
//! let (topology, found) = format::parse(text, None, None)?;
//! assert_eq!(found, TopologyFormat::Lgate);
//! assert_eq!(topology.ranks(), 16);
//! // Two levels: the two clusters, then the three groups.
//! assert_eq!(topology.levels().len(), 2);
//! assert_eq!(topology.levels()[1].groups[2], (8..16).collect::<Vec<_>>());
//! assert_eq!(format::to_string(&topology, TopologyFormat::Newick),
//!            "(((0,1,2,3),(4,5,6,7)),((8,9,10,11,12,13,14,15)));\n");
//! # Ok::<(), lgate_topology::TopologyError>(())
//! ```
#![deny(missing_docs)]

pub mod declared;
pub mod error;
pub mod export;
pub mod format;
pub mod json;
pub mod judge;
pub mod lgate;
pub mod newick;
pub mod outline;
pub mod ranks;
pub mod tree;

pub use error::{Location, Problem, TopologyError};
pub use format::TopologyFormat;
pub use outline::{level_summary, outline, size_summary, OutlineOptions};
pub use ranks::{sorted_rank_list, Rank, RankList};
pub use tree::{
    default_level_name, Confidence, Level, Outlier, Topology, TopologyNode, UndecidedLevel,
};
