//! A tree's levels (its groups at each depth) and the tree of nested levels.

use super::*;

/// The partition at every depth of the tree, dropping one-group and repeated partitions.
pub(super) fn levels_of_tree(tree: &TopologyNode, ranks: usize) -> Vec<Level> {
    let mut levels: Vec<Level> = Vec::new();
    let missing = {
        let mut seen = vec![false; ranks];
        for r in tree.ranks() {
            seen[r] = true;
        }
        (0..ranks).filter(|&r| !seen[r]).collect::<Vec<_>>()
    };
    for depth in 1..=tree.depth() {
        let mut groups = Vec::new();
        groups_at_depth(tree, 0, depth, &mut groups);
        groups.extend(missing.iter().map(|&r| vec![r]));
        if groups.len() <= 1 {
            continue;
        }
        // Levels nest, so a repeated partition has as many groups as the one above it.
        if levels
            .last()
            .is_some_and(|l| l.groups.len() == groups.len())
        {
            continue;
        }
        levels.push(Level::new(default_level_name(levels.len() + 1), groups));
    }
    levels
}

fn groups_at_depth(node: &TopologyNode, here: usize, depth: usize, out: &mut Vec<Vec<Rank>>) {
    match node {
        TopologyNode::Cluster { children, .. } if here < depth => {
            for child in children {
                groups_at_depth(child, here + 1, depth, out);
            }
        }
        _ => {
            let mut ranks = node.ranks();
            ranks.sort_unstable();
            out.push(ranks);
        }
    }
}

/// The smallest tree whose levels are the given validated levels.
pub(super) fn tree_of_levels(ranks: usize, levels: &[Level]) -> TopologyNode {
    if levels.is_empty() {
        return TopologyNode::group((0..ranks).collect());
    }
    let labels: Vec<Vec<usize>> = levels.iter().map(|l| l.labels(ranks)).collect();
    let nesting = LevelNesting {
        levels,
        // children[k][g]: the groups of level k + 1 inside group g of level k.
        children: (0..levels.len() - 1)
            .map(|k| {
                let mut kids = vec![Vec::new(); levels[k].groups.len()];
                for (g, group) in levels[k + 1].groups.iter().enumerate() {
                    kids[labels[k][group[0]]].push(g);
                }
                kids
            })
            .collect(),
        // group_size[k][r]: the size of rank r's group at level k.
        group_size: labels
            .iter()
            .zip(levels)
            .map(|(l, level)| l.iter().map(|&g| level.groups[g].len()).collect())
            .collect(),
    };
    TopologyNode::cluster(
        (0..levels[0].groups.len())
            .map(|g| nesting.node(0, g))
            .collect(),
    )
}

/// Validated levels with the lookups needed to turn them into a tree.
struct LevelNesting<'a> {
    levels: &'a [Level],
    children: Vec<Vec<Vec<usize>>>,
    group_size: Vec<Vec<usize>>,
}

impl LevelNesting<'_> {
    /// The subtree for group `g` of level `k`: a leaf when no finer level splits it.
    fn node(&self, k: usize, g: usize) -> TopologyNode {
        let group = &self.levels[k].groups[g];
        let split_later = self.group_size[k + 1..]
            .iter()
            .any(|sizes| sizes[group[0]] != group.len());
        if !split_later {
            return TopologyNode::group(group.clone());
        }
        TopologyNode::cluster(
            self.children[k][g]
                .iter()
                .map(|&h| self.node(k + 1, h))
                .collect(),
        )
    }
}
