//! What `cluster` and `score` read: a run directory or a matrix file, and known placements.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lgate_knobs::Knob;
use lgate_matrix::{read_matrix, DistanceMatrix};
pub use lgate_rundir::KnownPlacement as Truth;
use lgate_rundir::MessageSize;
use lgate_tables::{HostBlocks, RunHosts, DENSE_LIMIT};

mod load;

pub(crate) use load::measured_mask;
pub use load::{
    choose_by_levels, choose_by_sure_levels, load, load_by_hosts, load_candidates, load_with_sizes,
    read_truth,
};

/// An error of reading the input of a clustering.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The matrix file is unusable.
    #[error(transparent)]
    Matrix(#[from] lgate_matrix::ReadError),
    /// The run directory is unusable.
    #[error(transparent)]
    RunDir(#[from] lgate_rundir::RunDirError),
    /// The clustering does not make a topology of the job.
    #[error(transparent)]
    Topology(#[from] lgate_topology::TopologyError),
    /// A staged run's host blocks could not be clustered.
    #[error("{input}: {error}")]
    ByHosts {
        /// What was read.
        input: String,
        /// What is wrong.
        error: crate::ByHostsError,
    },
    /// The input has host blocks and no dense matrix, which this needs.
    #[error(
        "{input}: holds host blocks and no dense matrix (a staged run above {limit} ranks); \
         {what} needs the dense matrix: measure or simulate with {dense}, or cluster with \
         {algo} auto, which works by hosts",
        limit = DENSE_LIMIT,
        dense = Knob::Dense,
        algo = Knob::Algo
    )]
    NoDense {
        /// What was read.
        input: String,
        /// What needs the dense matrix.
        what: String,
    },
    /// Something else, said in full.
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The file or folder.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// What a clustering reads: a dense matrix, or a staged run's host blocks at one size.
#[derive(Debug, Clone)]
pub enum Distances {
    /// A dense matrix over the input's items.
    Dense(DistanceMatrix),
    /// Host blocks (each host's pairs, the host x host medians), at position `k` of their
    /// screening sizes; the items are the run's ranks.
    ByHosts {
        /// The blocks, shared by the inputs of every size.
        blocks: Arc<HostBlocks>,
        /// The screening size's position.
        k: usize,
        /// The pairs measured between hosts (`hosts/between.parquet`), which decide the levels
        /// above the host with the medians; `None` when the run has none.
        between: Option<Arc<lgate_tables::BetweenPairs>>,
    },
}

/// Distances ready to cluster.
#[derive(Debug, Clone)]
pub struct ClusterInput {
    /// The distances, over the items.
    pub distances: Distances,
    /// The rank of each item (a run's tested ranks; the row index for a plain matrix).
    pub ranks: Vec<usize>,
    /// The number of ranks of the job (more than the items when a run tested a share).
    pub job_size: usize,
    /// The host of each rank of the job, when known.
    pub hosts: Option<Vec<String>>,
    /// What was read, for people: the file and the matrix name.
    pub source: String,
    /// The run's matrix read (`rtt:0`, ...); `None` for a matrix file.
    pub matrix: Option<String>,
    /// Things the user should know.
    pub warnings: Vec<String>,
    /// The placement a run recorded (none for a plain matrix), to name the levels found.
    pub placement: Option<Truth>,
    /// For a staged run: pairs filled in (not measured), and all pairs.
    pub filled: Option<(usize, usize)>,
    /// For a dense matrix with filled pairs: the file that tells them (1 measured, 0 filled,
    /// in the matrix's order), each filled pair holding the median of the measured pairs
    /// between its ranks' hosts.
    pub mask: Option<PathBuf>,
    /// For a run's screening size: the other sizes' matrices over the same items, in the same
    /// order (their pairs between hosts decide levels above the host too).
    pub other_sizes: Vec<Arc<ndarray::Array2<f64>>>,
    /// For a staged run's screening size: each measured pair's tests there (items `i < j`),
    /// from its screening table, when some pair was tested more than once.
    pub tests: Option<Arc<crate::by_hosts::PairTests>>,
}

impl ClusterInput {
    /// The dense matrix, when the input has one.
    pub fn dense(&self) -> Option<&DistanceMatrix> {
        match &self.distances {
            Distances::Dense(m) => Some(m),
            Distances::ByHosts { .. } => None,
        }
    }

    /// The dense matrix, or an error saying that `what` needs it.
    pub fn need_dense(&self, what: &str) -> Result<&DistanceMatrix, InputError> {
        self.dense().ok_or_else(|| self.no_dense(what))
    }

    /// The dense matrix, taken out, or an error saying that `what` needs it.
    pub fn into_dense(self, what: &str) -> Result<DistanceMatrix, InputError> {
        match self.distances {
            Distances::Dense(m) => Ok(m),
            Distances::ByHosts { .. } => Err(InputError::NoDense {
                input: self.source,
                what: what.to_string(),
            }),
        }
    }

    /// The error saying that `what` needs a dense matrix this input does not have.
    pub fn no_dense(&self, what: &str) -> InputError {
        InputError::NoDense {
            input: self.source.clone(),
            what: what.to_string(),
        }
    }

    /// The number of items clustered.
    pub fn items(&self) -> usize {
        match &self.distances {
            Distances::Dense(m) => m.len(),
            Distances::ByHosts { blocks, .. } => blocks.index.ranks,
        }
    }

    /// `auto` with `params` on this input (by hosts for host blocks): the hierarchy and the
    /// items found slow.
    pub fn auto(
        &self,
        params: &crate::AutoParams,
    ) -> Result<(crate::Tree, Vec<(usize, f64)>), InputError> {
        let found = match &self.distances {
            Distances::Dense(m) => match self.dense_hosts() {
                Some(hosts) => crate::dense_by_hosts(m.values(), &hosts, params),
                None => return Ok(crate::auto_with_outliers(m.values(), params)),
            },
            Distances::ByHosts { blocks, k, between } => {
                crate::auto_by_hosts(blocks, *k, between.as_deref(), params)
            }
        };
        found
            .map(|c| (c.tree, c.slow))
            .map_err(|error| InputError::ByHosts {
                input: self.source.clone(),
                error,
            })
    }

    /// For a dense matrix whose items are on two or more known hosts: each item's host and the
    /// pairs measured (read from the run's mask when pairs were filled in), so that `auto`
    /// works by hosts. `None` for a matrix file, one host, or filled pairs that cannot be told.
    pub fn dense_hosts(&self) -> Option<crate::by_hosts::DenseHosts> {
        let Distances::Dense(_) = &self.distances else {
            return None;
        };
        let hosts = self.hosts.as_ref()?;
        let mut names: Vec<String> = Vec::new();
        let mut ids: std::collections::HashMap<&str, usize> = Default::default();
        let mut host_of = Vec::with_capacity(self.ranks.len());
        for &r in &self.ranks {
            let name = hosts.get(r)?;
            let id = *ids.entry(name).or_insert_with(|| {
                names.push(name.clone());
                names.len() - 1
            });
            host_of.push(id);
        }
        if names.len() < 2 {
            return None;
        }
        let measured = match self.filled {
            Some((filled, _)) if filled > 0 => {
                Some(measured_mask(self.mask.as_deref()?, self.ranks.len())?)
            }
            _ => None,
        };
        Some(crate::by_hosts::DenseHosts {
            host_of,
            names,
            measured,
            other_sizes: self.other_sizes.clone(),
            tests: self.tests.clone(),
        })
    }

    /// The matrix a heat map of this input draws, its title and what a row is: the dense
    /// matrix (ranks), or for host blocks the host x host medians (hosts; never a P x P picture).
    pub fn picture(&self) -> Option<(std::borrow::Cow<'_, DistanceMatrix>, String, &'static str)> {
        match &self.distances {
            Distances::Dense(m) => {
                Some((std::borrow::Cow::Borrowed(m), self.source.clone(), "rank"))
            }
            Distances::ByHosts { .. } => Some((
                std::borrow::Cow::Owned(self.host_matrix()?),
                format!("{} (host x host)", self.source),
                "host",
            )),
        }
    }

    /// `topology` over the items of [`ClusterInput::picture`]: itself, or for host blocks its
    /// levels of whole hosts (`None` when it has none).
    pub fn picture_topology(
        &self,
        topology: &lgate_topology::Topology,
    ) -> Option<lgate_topology::Topology> {
        match &self.distances {
            Distances::Dense(_) => Some(topology.clone()),
            Distances::ByHosts { .. } => self.hosts_topology(topology),
        }
    }

    /// For host blocks: the host x host matrix of medians (the median inside each host on the
    /// diagonal), labelled by host name.
    pub fn host_matrix(&self) -> Option<DistanceMatrix> {
        let Distances::ByHosts { blocks, k, .. } = &self.distances else {
            return None;
        };
        let h = blocks.index.hosts.len();
        let mut values = blocks
            .links
            .matrix(*k, h)
            .mapv(|x| if x.is_finite() { x } else { 0.0 });
        // Each host's own median inside on the diagonal, as the report says it is.
        for (x, block) in blocks.blocks.iter().enumerate().take(h) {
            if let Some(m) = crate::by_hosts::block_median(&block.values[*k]) {
                values[[x, x]] = m;
            }
        }
        let labels = blocks.index.hosts.iter().map(|x| x.name.clone()).collect();
        DistanceMatrix::new(values, Some(labels)).ok()
    }

    /// For host blocks: host `x`'s block (a pair not measured holds the median of those
    /// measured), labelled by rank, with the host's name.
    pub fn host_block(&self, x: usize) -> Option<(String, DistanceMatrix)> {
        let Distances::ByHosts { blocks, k, .. } = &self.distances else {
            return None;
        };
        let host = blocks.index.hosts.get(x)?;
        let values = crate::by_hosts::filled_block(&blocks.blocks[x].values[*k]);
        let labels = host.ranks.iter().map(|r| r.to_string()).collect();
        Some((
            host.name.clone(),
            DistanceMatrix::new(values, Some(labels)).ok()?,
        ))
    }

    /// For host blocks: the levels of `topology` (over the run's ranks) made of whole hosts, as
    /// a topology over the hosts; `None` when no level is.
    pub fn hosts_topology(
        &self,
        topology: &lgate_topology::Topology,
    ) -> Option<lgate_topology::Topology> {
        let Distances::ByHosts { blocks, .. } = &self.distances else {
            return None;
        };
        let host_of = blocks.index.host_of();
        let h = blocks.index.hosts.len();
        let levels: Vec<lgate_topology::Level> = topology
            .levels()
            .iter()
            .filter_map(|level| {
                let mut owner = vec![usize::MAX; h];
                let mut groups: Vec<Vec<usize>> = Vec::new();
                for (g, ranks) in level.groups.iter().enumerate() {
                    let mut hosts: Vec<usize> = Vec::new();
                    for &r in ranks {
                        let x = *host_of.get(r)? as usize;
                        if x >= h || (owner[x] != usize::MAX && owner[x] != g) {
                            return None;
                        }
                        if owner[x] == usize::MAX {
                            owner[x] = g;
                            hosts.push(x);
                        }
                    }
                    groups.push(hosts);
                }
                // Whole hosts: every rank of each host in its group.
                let whole = groups.iter().zip(&level.groups).all(|(hosts, ranks)| {
                    hosts
                        .iter()
                        .map(|&x| blocks.index.hosts[x].ranks.len())
                        .sum::<usize>()
                        == ranks.len()
                });
                (whole && groups.len() > 1 && groups.len() < h).then(|| lgate_topology::Level {
                    name: level.name.clone(),
                    groups,
                    separation: level.separation,
                    confidence: level.confidence,
                })
            })
            .collect();
        if levels.is_empty() {
            return None;
        }
        lgate_topology::Topology::from_levels(h, levels).ok()
    }

    /// A line saying what share of the pairs was filled in, when some were.
    pub fn filled_note(&self) -> Option<String> {
        self.filled.filter(|&(f, _)| f > 0).map(|(f, total)| {
            format!(
                "{:.1}% of pairs not measured, filled from their hosts' pairs",
                100.0 * f as f64 / total.max(1) as f64
            )
        })
    }
}

impl ClusterInput {
    /// The topology of a hierarchy over this input's items: items renumbered as the ranks they
    /// stand for, labelled with the hosts (or the matrix's labels), its levels named after the
    /// run's placement where they match it.
    /// A level that splits ranks which may have run on the same CPUs is left out
    /// ([`ClusterInput::placed_topology`] says which).
    pub fn topology(&self, tree: &crate::Tree) -> Result<lgate_topology::Topology, InputError> {
        Ok(self.placed_topology(tree)?.0)
    }

    /// [`ClusterInput::topology`], and the levels it left out because they split two ranks of
    /// one host that were not bound apart (their allowed CPUs overlap): where such ranks ran
    /// changed as the scheduler moved them, so their distances show no structure of the
    /// machine. Per level left out: its name, its groups, and the two ranks it split.
    pub fn placed_topology(
        &self,
        tree: &crate::Tree,
    ) -> Result<(lgate_topology::Topology, Vec<UnboundLevel>), InputError> {
        let tree = tree.to_ranks(&self.ranks);
        let labels = self
            .hosts
            .clone()
            .or_else(|| self.dense().map(|m| m.labels().to_vec()));
        let topology = crate::topology_of(&tree, self.job_size, labels)?;
        let Some(placement) = &self.placement else {
            return Ok((topology, Vec::new()));
        };
        let n = topology.ranks();
        let mut left_out = Vec::new();
        let kept: Vec<lgate_topology::Level> = (topology.levels().iter())
            .filter(
                |level| match placement.split_of_shared_cpus(&level.labels(n)) {
                    Some(ranks) => {
                        left_out.push(UnboundLevel {
                            name: level.name.clone(),
                            groups: level.groups.len(),
                            ranks,
                            same_cpus: placement.same_cpus(ranks.0, ranks.1),
                        });
                        false
                    }
                    None => true,
                },
            )
            .cloned()
            .collect();
        let topology = if left_out.is_empty() {
            topology
        } else {
            topology.keeping_levels(kept)?
        };
        Ok((crate::score::name_levels(topology, placement)?, left_out))
    }
}

/// A level a clustering made and [`ClusterInput::placed_topology`] left out: it split ranks
/// that were free to run on the same CPUs.
#[derive(Debug, Clone, PartialEq)]
pub struct UnboundLevel {
    /// The level's name as the clustering gave it.
    pub name: String,
    /// Its groups.
    pub groups: usize,
    /// Two ranks of one host it put apart although they could run on the same CPUs.
    pub ranks: (usize, usize),
    /// Whether those two were bound to the very same CPUs (taking turns on them), not left
    /// free to move.
    pub same_cpus: bool,
}

impl ClusterInput {
    /// The levels of `topology` (a clustering of this input) whose groups do not stand apart
    /// in the matrix as `auto` requires of a level: (name, how far apart they stand: the least
    /// median between groups over the upper quartile inside, 0 when that is not even 1). For
    /// the algorithms that keep any split they make, so that a weak answer is said.
    /// Host blocks have none to say: their levels are `auto`'s.
    pub fn weak_levels(&self, topology: &lgate_topology::Topology) -> Vec<(String, f64)> {
        let Some(matrix) = self.dense() else {
            return Vec::new();
        };
        let params = crate::AutoParams::default();
        topology
            .levels()
            .iter()
            .filter_map(|level| {
                // Items the level leaves out are groups of their own.
                let labels = level.labels_of(&self.ranks, self.job_size.max(topology.ranks()));
                let s = crate::separation_of(matrix.values(), &labels, &params);
                // The ratio alone, without the gaps a level needs besides.
                let plain = crate::AutoParams {
                    min_ratio: 1.0,
                    min_gap: 0.0,
                    ..params
                };
                (s <= 0.0).then(|| {
                    let ratio = crate::separation_of(matrix.values(), &labels, &plain);
                    (level.name.clone(), ratio)
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tree;

    fn input(source: &str) -> ClusterInput {
        let values = ndarray::Array2::from_shape_fn((4, 4), |(i, j)| {
            if i == j {
                0.0
            } else if i / 2 == j / 2 {
                1.0
            } else {
                5.0
            }
        });
        ClusterInput {
            distances: Distances::Dense(DistanceMatrix::new(values, None).unwrap()),
            ranks: (0..4).collect(),
            job_size: 4,
            hosts: None,
            source: source.into(),
            matrix: None,
            warnings: Vec::new(),
            placement: None,
            filled: None,
            mask: None,
            other_sizes: Vec::new(),
            tests: None,
        }
    }

    fn pairs(separation: f64) -> Tree {
        Tree::Node {
            children: vec![Tree::Leaf(vec![0, 1]), Tree::Leaf(vec![2, 3])],
            separation: Some(separation),
        }
    }

    #[test]
    fn of_equal_levels_the_clearer_matrix_is_kept() {
        let inputs = vec![input("m (rtt:0)"), input("m (rtt:64KiB)")];
        let (kept, _, note) = choose_by_levels(inputs, |i| {
            Ok::<_, InputError>(pairs(if i.source.contains("rtt:0") { 1.3 } else { 7.0 }))
        })
        .unwrap();
        assert_eq!(kept.source, "m (rtt:64KiB)");
        assert!(note.unwrap().contains("rtt:0 1, rtt:64KiB 1"));
        // More levels still win over a clearer split.
        let inputs = vec![input("m (rtt:0)"), input("m (rtt:64KiB)")];
        let (kept, _, _) = choose_by_levels(inputs, |i| {
            Ok::<_, InputError>(if i.source.contains("rtt:0") {
                pairs(1.3)
            } else {
                Tree::Leaf((0..4).collect())
            })
        })
        .unwrap();
        assert_eq!(kept.source, "m (rtt:0)");
    }

    #[test]
    fn the_weakest_split_is_the_least_separation_anywhere() {
        let tree = Tree::Node {
            children: vec![pairs(3.0), pairs(2.0)],
            separation: Some(9.0),
        };
        assert_eq!(tree.weakest_separation(), Some(2.0));
        assert_eq!(Tree::Leaf(vec![0]).weakest_separation(), None);
    }
}
