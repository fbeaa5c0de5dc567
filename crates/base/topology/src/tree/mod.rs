//! The topology model: a tree of clusters with groups of ranks at the leaves, and its levels.

use crate::error::{Location, Problem, TopologyError};
use crate::ranks::{sorted_rank_list, Rank};

mod levels;
mod validate;

use levels::{levels_of_tree, tree_of_levels};
pub(crate) use validate::check_rank_count;
use validate::{check_size, check_unlisted, validate_levels, validate_tree};

/// A node of a topology tree: a cluster of subtrees, or a group of ranks at a leaf.
#[derive(Debug, Clone, PartialEq)]
pub enum TopologyNode {
    /// Ranks that belong together at some level, split further into children.
    Cluster {
        /// The subtrees, in file order.
        children: Vec<TopologyNode>,
        /// How distinct the split below this node is (for example a merge distance), if known.
        height: Option<f64>,
    },
    /// Ranks that are not split further.
    Group {
        /// The ranks, in file order.
        ranks: Vec<Rank>,
        /// How far apart the ranks inside the group are, if known.
        height: Option<f64>,
    },
}

impl TopologyNode {
    /// A cluster of the given subtrees, without a height.
    pub fn cluster(children: Vec<TopologyNode>) -> Self {
        TopologyNode::Cluster {
            children,
            height: None,
        }
    }

    /// A group of the given ranks, without a height.
    pub fn group(ranks: Vec<Rank>) -> Self {
        TopologyNode::Group {
            ranks,
            height: None,
        }
    }

    /// The same node with its height set.
    pub fn with_height(mut self, value: Option<f64>) -> Self {
        match &mut self {
            TopologyNode::Cluster { height, .. } | TopologyNode::Group { height, .. } => {
                *height = value
            }
        }
        self
    }

    /// The node's height, if known.
    pub fn height(&self) -> Option<f64> {
        match self {
            TopologyNode::Cluster { height, .. } | TopologyNode::Group { height, .. } => *height,
        }
    }

    /// Whether this is a group (a leaf).
    pub fn is_group(&self) -> bool {
        matches!(self, TopologyNode::Group { .. })
    }

    /// The subtrees of a cluster; empty for a group.
    pub fn children(&self) -> &[TopologyNode] {
        match self {
            TopologyNode::Cluster { children, .. } => children,
            TopologyNode::Group { .. } => &[],
        }
    }

    /// Every rank under this node, in file order.
    pub fn ranks(&self) -> Vec<Rank> {
        let mut out = Vec::new();
        self.for_each_group(&mut |ranks| out.extend_from_slice(ranks));
        out
    }

    /// The number of ranks under this node.
    pub fn rank_count(&self) -> usize {
        let mut n = 0;
        self.for_each_group(&mut |ranks| n += ranks.len());
        n
    }

    /// The leaf groups under this node, in file order.
    pub fn groups(&self) -> Vec<&[Rank]> {
        let mut out = Vec::new();
        self.collect_groups(&mut out);
        out
    }

    /// The leaf groups under this node in file order, each as its ranks sorted; empty groups
    /// left out.
    pub fn sorted_groups(&self) -> Vec<Vec<Rank>> {
        self.groups()
            .into_iter()
            .filter(|g| !g.is_empty())
            .map(|g| {
                let mut g = g.to_vec();
                g.sort_unstable();
                g
            })
            .collect()
    }

    fn collect_groups<'a>(&'a self, out: &mut Vec<&'a [Rank]>) {
        match self {
            TopologyNode::Group { ranks, .. } => out.push(ranks),
            TopologyNode::Cluster { children, .. } => {
                for child in children {
                    child.collect_groups(out);
                }
            }
        }
    }

    fn for_each_group(&self, f: &mut impl FnMut(&[Rank])) {
        match self {
            TopologyNode::Group { ranks, .. } => f(ranks),
            TopologyNode::Cluster { children, .. } => {
                for child in children {
                    child.for_each_group(f);
                }
            }
        }
    }

    /// The number of edges from this node down to its deepest group.
    pub fn depth(&self) -> usize {
        match self {
            TopologyNode::Group { .. } => 0,
            TopologyNode::Cluster { children, .. } => {
                1 + children.iter().map(TopologyNode::depth).max().unwrap_or(0)
            }
        }
    }

    /// The same tree with every height removed (formats without heights read back this).
    pub fn without_heights(&self) -> TopologyNode {
        match self {
            TopologyNode::Group { ranks, .. } => TopologyNode::group(ranks.clone()),
            TopologyNode::Cluster { children, .. } => {
                TopologyNode::cluster(children.iter().map(Self::without_heights).collect())
            }
        }
    }

    /// The largest rank under this node.
    pub fn max_rank(&self) -> Option<Rank> {
        let mut max = None;
        self.for_each_group(&mut |ranks| {
            if let Some(&m) = ranks.iter().max() {
                max = Some(max.map_or(m, |x: Rank| x.max(m)));
            }
        });
        max
    }
}

/// One flat partition of all ranks: the groups at one level of the hierarchy.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    /// What the level is, such as `node` or `socket`.
    pub name: String,
    /// The groups; every rank is in exactly one of them.
    pub groups: Vec<Vec<Rank>>,
    /// How distinct the groups are (between-group over within-group spread), if known.
    pub separation: Option<f64>,
    /// The share of resamples of the measurements in which this level's groups came back, if
    /// estimated.
    pub confidence: Option<f64>,
}

impl Level {
    /// A level without a separation score.
    pub fn new(name: impl Into<String>, groups: Vec<Vec<Rank>>) -> Self {
        Level {
            name: name.into(),
            groups,
            separation: None,
            confidence: None,
        }
    }

    /// The group index of each of `of` (ranks of a job of `size`); a rank the level leaves
    /// out is a group of its own, numbered after the level's groups.
    pub fn labels_of(&self, of: &[Rank], size: usize) -> Vec<usize> {
        let by_rank = self.labels(size);
        let mut fresh = self.groups.len();
        of.iter()
            .map(|&r| match by_rank.get(r) {
                Some(&g) if g != usize::MAX => g,
                _ => {
                    fresh += 1;
                    fresh - 1
                }
            })
            .collect()
    }

    /// The group index of every rank `0..ranks`.
    pub fn labels(&self, ranks: usize) -> Vec<usize> {
        let mut labels = vec![usize::MAX; ranks];
        for (g, group) in self.groups.iter().enumerate() {
            for &r in group {
                if r < ranks {
                    labels[r] = g;
                }
            }
        }
        labels
    }
}

/// The most ranks a topology may have: 2^21 (2 097 152), far past any job this tool can
/// measure (a dense distance matrix of that size holds 4.4 * 10^12 cells); rank counts are
/// checked against it before anything of their size is allocated.
pub const MAX_RANKS: usize = 1 << 21;

/// The most ranks times levels (or tree depth) a topology may have: 2^21, so reading any
/// topology takes well under a second and 1 GiB (each level holds a group for every rank it
/// leaves alone): 1 048 576 ranks with 2 levels, 65 536 ranks with 32.
pub const MAX_RANK_LEVELS: usize = 1 << 21;

/// The most ranks times levels a topology may leave out: 2^15 (32 768). A left-out rank is a
/// group of its own in every level, and a node of the tree when the topology is given as
/// levels, each held as a list of its own: about eight times a listed rank, and written out
/// in full by every format. A few bytes may name a rank near [`MAX_RANKS`] and leave out all
/// the others: found by fuzzing, 1.8 million left out took 135 MB and 0.26 s to read, 75 000
/// left out of one JSON level 0.45 s to read, write as LGate and read back (fuzz build).
pub const MAX_UNLISTED_RANK_LEVELS: usize = 1 << 15;

/// Reads a rank number written in a topology file, refusing ranks past [`MAX_RANKS`].
pub(crate) fn parse_rank(text: &str) -> Result<Rank, Problem> {
    let too_many = || Problem::TooManyRanks {
        what: "rank",
        value: text.to_string(),
        limit: MAX_RANKS,
    };
    if !text.bytes().all(|b| b.is_ascii_digit()) || text.is_empty() {
        return Err(Problem::NotARank(text.to_string()));
    }
    match text.parse::<Rank>() {
        Ok(r) if r < MAX_RANKS => Ok(r),
        _ => Err(too_many()),
    }
}

/// The deepest nesting a topology file may have: machines have a handful of levels, and
/// trees from clustering a few more; deeper files are refused before they exhaust the stack.
pub const MAX_DEPTH: usize = 1024;

/// The default name of the level at 1-based depth `depth`, coarsest first.
pub fn default_level_name(depth: usize) -> String {
    format!("level{depth}")
}

/// A validated topology: the tree, its rank count, optional rank labels and its levels.
///
/// Every rank of the tree is below the rank count and appears once; ranks `0..ranks` that the
/// tree does not list are singleton groups in every level.
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    ranks: usize,
    labels: Option<Vec<String>>,
    tree: TopologyNode,
    levels: Vec<Level>,
    outliers: Vec<Outlier>,
    confidence: Option<Confidence>,
}

/// How sure the clustering is of the topology as a whole, from resamples of its measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct Confidence {
    /// The resamples clustered.
    pub resamples: usize,
    /// The share of them that gave exactly these levels (one group when there are none).
    pub same_levels: f64,
    /// Levels the resamples made that the topology does not hold: undecided by the evidence.
    pub undecided: Vec<UndecidedLevel>,
}

/// A level that some resamples of the measurements made and the topology does not hold.
#[derive(Debug, Clone, PartialEq)]
pub struct UndecidedLevel {
    /// Its groups.
    pub groups: usize,
    /// The share of resamples that made it.
    pub share: f64,
    /// Its name when the clustering found it but too few resamples gave it back to keep it.
    pub name: Option<String>,
    /// Its groups' ranks (empty when the file that held it did not say).
    pub members: Vec<Vec<Rank>>,
    /// For a grouping of hosts that the pairs measured between hosts nearly decide (not a
    /// resample's level): their Mann-Whitney z (4 decides).
    pub z: Option<f64>,
}

/// A rank measured slower towards every other rank (a slow node, a busy core): reported beside
/// the levels instead of making one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outlier {
    /// The rank.
    pub rank: Rank,
    /// How many times the usual distance its distances are.
    pub slowness: f64,
}

impl Topology {
    /// One group per host, in the order hosts first appear; a single host is one group. `hosts` holds each rank's host.
    pub fn one_group_per_host(hosts: &[String]) -> Result<Self, TopologyError> {
        let mut order: Vec<&str> = Vec::new();
        let mut groups: Vec<Vec<Rank>> = Vec::new();
        for (rank, host) in hosts.iter().enumerate() {
            match order.iter().position(|h| h == host) {
                Some(k) => groups[k].push(rank),
                None => {
                    order.push(host);
                    groups.push(vec![rank]);
                }
            }
        }
        let tree = if groups.len() == 1 {
            TopologyNode::group(groups.pop().expect("one group"))
        } else {
            TopologyNode::cluster(groups.into_iter().map(TopologyNode::group).collect())
        };
        Self::from_tree(tree, Some(hosts.len()))
    }

    /// Validates a tree and derives its levels; the rank count defaults to the largest rank + 1.
    pub fn from_tree(tree: TopologyNode, ranks: Option<usize>) -> Result<Self, TopologyError> {
        validate_tree(&tree, ranks)?;
        let ranks = ranks.unwrap_or_else(|| tree.max_rank().map_or(0, |m| m + 1));
        check_size(ranks, tree.depth(), "tree")?;
        // Validated: the tree lists each rank once, all below `ranks`.
        let unlisted = ranks - tree.rank_count();
        check_unlisted(unlisted, ranks, tree.depth(), "tree")?;
        let levels = levels_of_tree(&tree, ranks);
        Ok(Topology {
            ranks,
            labels: None,
            tree,
            levels,
            outliers: Vec::new(),
            confidence: None,
        })
    }

    /// Builds the tree of nested levels (coarsest first); ranks a level leaves out are singletons.
    pub fn from_levels(ranks: usize, levels: Vec<Level>) -> Result<Self, TopologyError> {
        check_rank_count(Some(ranks))?;
        check_size(ranks, levels.len(), "levels")?;
        // Before the singletons are filled in (repeated ranks are refused later): the most any
        // level leaves out.
        let unlisted = levels
            .iter()
            .map(|l| ranks.saturating_sub(l.groups.iter().map(Vec::len).sum()))
            .max()
            .unwrap_or(0);
        check_unlisted(unlisted, ranks, levels.len(), "levels")?;
        let levels = validate_levels(ranks, levels)?;
        let tree = tree_of_levels(ranks, &levels);
        Ok(Topology {
            ranks,
            labels: None,
            tree,
            levels,
            outliers: Vec::new(),
            confidence: None,
        })
    }

    /// The same topology with its slow ranks, in rank order.
    pub fn with_outliers(mut self, mut outliers: Vec<Outlier>) -> Result<Self, TopologyError> {
        if let Some(o) = outliers
            .iter()
            .find(|o| o.rank >= self.ranks || !(o.slowness.is_finite() && o.slowness >= 1.0))
        {
            return Err(TopologyError::at(
                Location::Path("outliers".into()),
                Problem::BadOutlier {
                    rank: o.rank,
                    slowness: o.slowness,
                    ranks: self.ranks,
                },
            ));
        }
        outliers.sort_by_key(|o| o.rank);
        outliers.dedup_by_key(|o| o.rank);
        self.outliers = outliers;
        Ok(self)
    }

    /// The ranks measured slower towards every other rank, in rank order.
    pub fn outliers(&self) -> &[Outlier] {
        &self.outliers
    }

    /// The topology of only `levels` (some of this one's, nested as they were), with this one's
    /// labels, outliers and confidence.
    pub fn keeping_levels(&self, levels: Vec<Level>) -> Result<Self, TopologyError> {
        let mut kept =
            Topology::from_levels(self.ranks, levels)?.with_outliers(self.outliers.clone())?;
        kept.labels = self.labels.clone();
        kept.confidence = self.confidence.clone();
        Ok(kept)
    }

    /// The same topology with its confidence as a whole; its levels' own shares are theirs.
    pub fn with_confidence(mut self, confidence: Option<Confidence>) -> Self {
        self.confidence = confidence;
        self
    }

    /// How sure the clustering was of the topology, when it was estimated.
    pub fn confidence(&self) -> Option<&Confidence> {
        self.confidence.as_ref()
    }

    /// The same topology with one label (host name, CPU) per rank.
    pub fn with_labels(mut self, labels: Vec<String>) -> Result<Self, TopologyError> {
        if labels.len() != self.ranks {
            return Err(TopologyError::at(
                Location::Path("labels".into()),
                Problem::LabelCount {
                    labels: labels.len(),
                    ranks: self.ranks,
                },
            ));
        }
        self.labels = Some(labels);
        Ok(self)
    }

    /// The same topology with named levels; their groups must be the tree's levels.
    pub fn with_levels(mut self, levels: Vec<Level>) -> Result<Self, TopologyError> {
        let levels = validate_levels(self.ranks, levels)?;
        if levels.len() != self.levels.len() {
            return Err(TopologyError::at(
                Location::Path("levels".into()),
                Problem::LevelsDisagree(format!(
                    "the tree has {} level(s), `levels` lists {}",
                    self.levels.len(),
                    levels.len()
                )),
            ));
        }
        for (i, (given, derived)) in levels.iter().zip(&self.levels).enumerate() {
            if let Some(rank) = first_difference(self.ranks, given, derived) {
                return Err(TopologyError::at(
                    Location::Path(format!("levels[{i}]")),
                    Problem::LevelsDisagree(format!(
                        "level `{}` groups rank {rank} with {{{}}}, the tree with {{{}}}",
                        given.name,
                        sorted_rank_list(group_of(given, rank)),
                        sorted_rank_list(group_of(derived, rank)),
                    )),
                ));
            }
        }
        self.levels = levels;
        Ok(self)
    }

    /// The number of ranks.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// One label per rank, if known.
    pub fn labels(&self) -> Option<&[String]> {
        self.labels.as_deref()
    }

    /// The tree.
    pub fn tree(&self) -> &TopologyNode {
        &self.tree
    }

    /// The levels, coarsest first; empty when the tree puts all ranks in one group.
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// Ranks below the rank count that the tree does not list.
    pub fn missing_ranks(&self) -> Vec<Rank> {
        let mut seen = vec![false; self.ranks];
        for r in self.tree.ranks() {
            seen[r] = true;
        }
        (0..self.ranks).filter(|&r| !seen[r]).collect()
    }
}

fn group_of(level: &Level, rank: Rank) -> &[Rank] {
    level
        .groups
        .iter()
        .find(|g| g.contains(&rank))
        .map_or(&[], Vec::as_slice)
}

/// The first rank whose group differs between two partitions of `0..ranks`, if any.
fn first_difference(ranks: usize, a: &Level, b: &Level) -> Option<Rank> {
    let (la, lb) = (a.labels(ranks), b.labels(ranks));
    // Two partitions are equal when the label maps are a bijection on each other. Labels are
    // group indices (usize::MAX for a rank a level leaves out), so the maps are vectors: hash
    // maps took a third of reading a JSON topology of 16 000 ranks.
    const UNSET: usize = usize::MAX;
    let mut forward = vec![UNSET; a.groups.len()];
    let mut backward = vec![UNSET; b.groups.len()];
    (0..ranks).find(|&r| {
        let (x, y) = (la[r], lb[r]);
        if x >= forward.len() || y >= backward.len() {
            return x != y;
        }
        if forward[x] == UNSET {
            forward[x] = y;
        }
        if backward[y] == UNSET {
            backward[y] = x;
        }
        forward[x] != y || backward[y] != x
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(r: std::ops::Range<usize>) -> TopologyNode {
        TopologyNode::group(r.collect())
    }
    fn c(children: Vec<TopologyNode>) -> TopologyNode {
        TopologyNode::cluster(children)
    }

    fn four_groups() -> TopologyNode {
        c(vec![
            c(vec![c(vec![g(0..8)]), c(vec![g(8..16)])]),
            c(vec![c(vec![g(16..24)]), c(vec![g(24..32)])]),
        ])
    }

    #[test]
    fn levels_of_figure_3_4() {
        let t = Topology::from_tree(four_groups(), None).unwrap();
        assert_eq!(t.ranks(), 32);
        let levels = t.levels();
        assert_eq!(levels.len(), 2, "the single-child clusters repeat a level");
        assert_eq!(
            levels[0].groups,
            vec![(0..16).collect::<Vec<_>>(), (16..32).collect()]
        );
        assert_eq!(levels[1].groups.len(), 4);
        assert_eq!(levels[1].name, "level2");
    }

    #[test]
    fn flat_tree_has_no_levels() {
        let t = Topology::from_tree(g(0..8), None).unwrap();
        assert!(t.levels().is_empty());
        let t = Topology::from_tree(c(vec![g(0..8)]), None).unwrap();
        assert!(t.levels().is_empty());
    }

    #[test]
    fn unbalanced_leaf_persists_into_finer_levels() {
        let tree = c(vec![g(0..4), c(vec![g(4..6), g(6..8)])]);
        let t = Topology::from_tree(tree, None).unwrap();
        assert_eq!(t.levels().len(), 2);
        assert_eq!(
            t.levels()[1].groups,
            vec![vec![0, 1, 2, 3], vec![4, 5], vec![6, 7]]
        );
    }

    #[test]
    fn missing_ranks_are_singletons() {
        let t = Topology::from_tree(c(vec![g(0..2), g(2..4)]), Some(6)).unwrap();
        assert_eq!(t.missing_ranks(), vec![4, 5]);
        assert_eq!(
            t.levels()[0].groups,
            vec![vec![0, 1], vec![2, 3], vec![4], vec![5]]
        );
    }

    #[test]
    fn a_few_bytes_may_not_leave_out_millions_of_ranks() {
        // `( (1842007,28) )` in Newick: 2 ranks listed of 1 842 008 (found by fuzzing: 0.5 s
        // and 135 MB to read before it was refused).
        let sparse = c(vec![g(28..29), g(1_842_007..1_842_008)]);
        let e = Topology::from_tree(sparse, None).unwrap_err();
        assert!(
            matches!(
                e.problem(),
                Some(Problem::TooManyUnlisted {
                    unlisted: 1_842_006,
                    ranks: 1_842_008,
                    levels: 1,
                    ..
                })
            ),
            "{e}"
        );
        // Left-out ranks times levels at the limit are read; one more is refused.
        let limit = MAX_UNLISTED_RANK_LEVELS;
        let two_levels = || c(vec![c(vec![g(0..1), g(1..2)]), g(2..4)]);
        assert_eq!(two_levels().depth(), 2);
        assert!(Topology::from_tree(two_levels(), Some(4 + limit / 2)).is_ok());
        let e = Topology::from_tree(two_levels(), Some(4 + limit / 2 + 1));
        assert!(matches!(
            e.unwrap_err().problem(),
            Some(Problem::TooManyUnlisted { levels: 2, .. })
        ));
        // Given as levels, the level leaving out most counts.
        let ranks = 4 + limit;
        let levels = vec![Level::new("node", vec![vec![0, 1], vec![2, 3]])];
        assert!(Topology::from_levels(ranks, levels.clone()).is_ok());
        assert!(matches!(
            Topology::from_levels(ranks + 1, levels)
                .unwrap_err()
                .problem(),
            Some(Problem::TooManyUnlisted { levels: 1, .. })
        ));
    }

    #[test]
    fn levels_round_trip_through_tree() {
        let levels = vec![
            Level::new("node", vec![(0..8).collect(), (8..12).collect()]),
            Level::new(
                "socket",
                vec![(0..4).collect(), (4..8).collect(), (8..12).collect()],
            ),
            Level::new(
                "core",
                vec![
                    vec![0, 1],
                    vec![2, 3],
                    (4..8).collect(),
                    vec![8, 9],
                    vec![10, 11],
                ],
            ),
        ];
        let t = Topology::from_levels(12, levels.clone()).unwrap();
        assert_eq!(t.levels(), &levels[..]);
        // Keeping some levels keeps the labels and slow ranks too.
        let marked = (t.clone())
            .with_labels((0..12).map(|r| format!("cpu{r}")).collect())
            .unwrap()
            .with_outliers(vec![Outlier {
                rank: 3,
                slowness: 1.5,
            }])
            .unwrap();
        let socket = marked.keeping_levels(levels[..1].to_vec()).unwrap();
        assert_eq!(socket.levels(), &levels[..1]);
        assert_eq!(socket.labels(), marked.labels());
        assert_eq!(socket.outliers(), marked.outliers());
        assert!(marked
            .keeping_levels(Vec::new())
            .unwrap()
            .levels()
            .is_empty());
        let again = Topology::from_tree(t.tree().clone(), Some(12)).unwrap();
        let again = again.with_levels(levels.clone()).unwrap();
        assert_eq!(again.levels(), &levels[..]);
        // The unsplit socket 4-7 is a leaf right under its node.
        assert_eq!(t.tree().children()[0].children()[1], g(4..8));
    }

    #[test]
    fn levels_must_nest_and_say_something() {
        let bad = vec![
            Level::new("a", vec![vec![0, 1], vec![2, 3]]),
            Level::new("b", vec![vec![0], vec![1, 2], vec![3]]),
        ];
        let err = Topology::from_levels(4, bad).unwrap_err();
        assert!(matches!(
            err.problem(),
            Some(Problem::LevelsNotNested { .. })
        ));
        let err =
            Topology::from_levels(4, vec![Level::new("all", vec![vec![0, 1, 2, 3]])]).unwrap_err();
        assert!(matches!(err.problem(), Some(Problem::TrivialLevel(_))));
        let twice = vec![
            Level::new("a", vec![vec![0, 1], vec![2, 3]]),
            Level::new("b", vec![vec![1, 0], vec![2, 3]]),
        ];
        let err = Topology::from_levels(4, twice).unwrap_err();
        assert!(matches!(err.problem(), Some(Problem::RepeatedLevel { .. })));
    }

    #[test]
    fn with_levels_rejects_other_groups() {
        let t = Topology::from_tree(c(vec![g(0..2), g(2..4)]), None).unwrap();
        let err = t
            .with_levels(vec![Level::new("x", vec![vec![0, 2], vec![1, 3]])])
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("groups rank 1 with {1,3}, the tree with {0,1}"),
            "{err}"
        );
    }

    #[test]
    fn tree_validation_names_the_node() {
        let err = Topology::from_tree(c(vec![g(0..2), c(vec![g(1..3)])]), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "at tree.children[1].children[0].ranks[0]: rank 1 is listed twice (first at tree.children[0].ranks[1])"
        );
        let err = Topology::from_tree(g(0..4), Some(3)).unwrap_err();
        assert!(matches!(
            err.problem(),
            Some(Problem::RankOutOfRange { rank: 3, ranks: 3 })
        ));
        let err = Topology::from_tree(c(vec![]), None).unwrap_err();
        assert_eq!(err.problem(), Some(&Problem::EmptyCluster));
        let err = Topology::from_tree(g(0..1).with_height(Some(f64::NAN)), None).unwrap_err();
        assert!(matches!(err.problem(), Some(Problem::NonFiniteHeight(_))));
    }
}
