//! The hierarchy a clustering finds, over the items of a distance matrix: the one tree type
//! every method returns.

use ndarray::Array2;

/// A hierarchy found by a clustering: groups of ranks at the leaves.
#[derive(Debug, Clone, PartialEq)]
pub enum Tree {
    /// Ranks not split further.
    Leaf(Vec<usize>),
    /// A split into children, with its separation when known.
    Node {
        /// The parts.
        children: Vec<Tree>,
        /// The separation of the split.
        separation: Option<f64>,
    },
}

impl Tree {
    /// The same tree with each item `i` renumbered as `ranks[i]`.
    pub fn to_ranks(&self, ranks: &[usize]) -> Tree {
        match self {
            Tree::Leaf(items) => Tree::Leaf(items.iter().map(|&i| ranks[i]).collect()),
            Tree::Node {
                children,
                separation,
            } => Tree::Node {
                children: children.iter().map(|c| c.to_ranks(ranks)).collect(),
                separation: *separation,
            },
        }
    }
}

impl Tree {
    /// Every rank under this tree.
    pub fn ranks(&self) -> Vec<usize> {
        match self {
            Tree::Leaf(r) => r.clone(),
            Tree::Node { children, .. } => children.iter().flat_map(Tree::ranks).collect(),
        }
    }

    /// Every rank under this tree, children in order, with the number of the child of the
    /// root it is under (0 for every rank of a leaf).
    pub fn ranks_by_child(&self) -> (Vec<usize>, Vec<usize>) {
        match self {
            Tree::Leaf(r) => (r.clone(), vec![0; r.len()]),
            Tree::Node { children, .. } => {
                let (mut ranks, mut labels) = (Vec::new(), Vec::new());
                for (k, child) in children.iter().enumerate() {
                    let of = child.ranks();
                    labels.extend(std::iter::repeat_n(k, of.len()));
                    ranks.extend(of);
                }
                (ranks, labels)
            }
        }
    }

    /// The least separation of the splits in this tree that have one (`None` when none has).
    pub fn weakest_separation(&self) -> Option<f64> {
        match self {
            Tree::Leaf(_) => None,
            Tree::Node {
                children,
                separation,
            } => children
                .iter()
                .filter_map(Tree::weakest_separation)
                .chain(*separation)
                .reduce(f64::min),
        }
    }
}

pub(crate) fn sub_matrix(d: &Array2<f64>, members: &[usize]) -> Array2<f64> {
    Array2::from_shape_fn((members.len(), members.len()), |(a, b)| {
        d[[members[a], members[b]]]
    })
}
