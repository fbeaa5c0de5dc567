//! MagPIe over a topology tree of any depth: coordinators of the children of each cluster
//! broadcast among themselves, then each child broadcasts inside from its coordinator.

use lgate_topology::Rank;
use lgate_topology::TopologyNode;
use lgate_transport::Transport;

use crate::base::{self, BaseAlgorithm};
use crate::BcastError;

/// The rank of `node` that takes part for it at its parent's level: `root` if the node holds
/// it, else the node's lowest rank.
pub fn coordinator(node: &TopologyNode, root: Rank) -> Rank {
    let ranks = node.ranks();
    if ranks.contains(&root) {
        root
    } else {
        ranks.into_iter().min().unwrap_or(root)
    }
}

/// The tree with every subtree below `depth` cluster levels merged into one group, so that
/// MagPIe uses only the top `depth` levels (0: one group of all ranks).
pub fn prune_to_depth(tree: &TopologyNode, depth: usize) -> TopologyNode {
    match tree {
        TopologyNode::Cluster { children, .. } if depth > 0 => TopologyNode::cluster(
            children
                .iter()
                .map(|c| prune_to_depth(c, depth - 1))
                .collect(),
        ),
        _ => {
            let mut ranks = tree.ranks();
            ranks.sort_unstable();
            TopologyNode::group(ranks)
        }
    }
}

/// Checks that the tree holds ranks `0..size` once each.
pub(crate) fn check_tree(tree: &TopologyNode, size: usize) -> Result<(), BcastError> {
    let problem = |problem: String| BcastError::Topology { size, problem };
    let mut seen = vec![false; size];
    for r in tree.ranks() {
        match seen.get_mut(r) {
            None => return Err(problem(format!("it names rank {r}"))),
            Some(true) => return Err(problem(format!("rank {r} is in it twice"))),
            Some(s) => *s = true,
        }
    }
    if let Some(r) = seen.iter().position(|&s| !s) {
        return Err(problem(format!("rank {r} is missing")));
    }
    Ok(())
}

/// MagPIe from `root` over `node`: this rank takes part where it is a coordinator, then goes
/// down into the child that holds it.
pub(crate) fn magpie(
    t: &dyn Transport,
    node: &TopologyNode,
    root: Rank,
    buf: &mut [u8],
    between: BaseAlgorithm,
    inside: BaseAlgorithm,
) -> Result<(), BcastError> {
    match node {
        TopologyNode::Group { ranks, .. } => {
            let mut members = ranks.clone();
            members.sort_unstable();
            base::run(t, &members, root, buf, inside)
        }
        TopologyNode::Cluster { children, .. } => {
            let me = t.rank();
            let coordinators: Vec<Rank> = children.iter().map(|c| coordinator(c, root)).collect();
            // In the children's (topology) order: a chain among them follows the machine.
            base::run(t, &coordinators, root, buf, between)?;
            match children
                .iter()
                .zip(&coordinators)
                .find(|(c, _)| c.ranks().contains(&me))
            {
                Some((child, &coordinator)) => magpie(t, child, coordinator, buf, between, inside),
                None => Ok(()),
            }
        }
    }
}
