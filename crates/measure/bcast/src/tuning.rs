//! The decision table: per message-size range, the fastest correct broadcast of a benchmark
//! (the library's own among the candidates, so the table is never slower than the library where
//! it was measured), written as `bcast-tuning.json`, applied by [`broadcast_tuned`], and where
//! it can be, turned into an Open MPI `coll_tuned` dynamic rules file.

use std::collections::BTreeMap;

use lgate_topology::{Rank, Topology, TopologyNode};
use lgate_transport::Transport;

pub use lgate_rundir::bcast_tuning::{Tuning, TuningMachine, TuningRange, TUNING_FORMAT};

use crate::bench::{Candidate, Timing, LIBRARY};
use crate::{broadcast, prune_to_depth, AlgorithmError, BaseAlgorithm, BcastError, Plan};

/// How much slower than the fastest the library's broadcast may be and still be chosen.
pub const LIBRARY_TIE: f64 = 1.05;

/// A broadcast's name back as a candidate: `MPI_Bcast`, a base algorithm,
/// `magpie(BETWEEN/INSIDE)@DEPTH` or `interpipe:SEGMENT(BETWEEN/INSIDE)@DEPTH` over `tree`
/// pruned to DEPTH levels.
pub fn parse_candidate(name: &str, tree: Option<&TopologyNode>) -> Result<Candidate, TuningError> {
    let name = name.trim();
    if name == LIBRARY {
        return Ok(Candidate::Library);
    }
    // magpie(BETWEEN/INSIDE)@DEPTH or interpipe:SEGMENT(BETWEEN/INSIDE)@DEPTH
    let (rest, segment) = if let Some(rest) = name.strip_prefix("interpipe:") {
        let bad = || TuningError::NotInterpipe {
            name: name.to_string(),
        };
        let (segment, rest) = rest.split_once('(').ok_or_else(bad)?;
        let segment = crate::base::parse_size(segment)
            .filter(|&s| s > 0)
            .ok_or_else(bad)?;
        (rest, Some(segment))
    } else if let Some(rest) = name.strip_prefix("magpie(") {
        (rest, None)
    } else {
        return Ok(Candidate::Plan(Plan::Flat(name.parse::<BaseAlgorithm>()?)));
    };
    let bad = || TuningError::NotMagpie {
        name: name.to_string(),
    };
    let (algorithms, depth) = rest.split_once(")@").ok_or_else(bad)?;
    let (between, inside) = algorithms.split_once('/').ok_or_else(bad)?;
    let depth: usize = depth.parse().map_err(|_| bad())?;
    let tree = tree.ok_or_else(|| TuningError::NeedsTopology {
        name: name.to_string(),
    })?;
    let (tree, between, inside) = (
        prune_to_depth(tree, depth),
        between.parse()?,
        inside.parse()?,
    );
    Ok(Candidate::Plan(match segment {
        None => Plan::Magpie {
            tree,
            between,
            inside,
        },
        Some(segment) => Plan::Interpipe {
            tree,
            between,
            inside,
            segment,
        },
    }))
}

/// What the broadcasts add to a decision table ([`Tuning`], whose data `lgate-rundir`
/// holds): making it from a benchmark, reading it with its choices checked, its topology, the
/// Open MPI rules file, and writing both files.
pub trait BroadcastTable: Sized {
    /// The table of a benchmark's timings: at each measured size the fastest correct candidate
    /// by trimmed mean (MPI_Bcast when within [`LIBRARY_TIE`] of it); a size between two
    /// measured ones takes the choice of the one below.
    fn from_timings(
        timings: Vec<Timing>,
        ranks: usize,
        root: Rank,
        topology: Option<&TopologyNode>,
        machine: TuningMachine,
    ) -> Self;
    /// Reads a tuning file's text, checking its format, its topology and every choice.
    fn parse(text: &str) -> Result<Self, TuningError>;
    /// The topology the table's MagPIe choices use.
    fn tree(&self) -> Result<Option<TopologyNode>, TuningError>;
    /// An Open MPI `coll_tuned` dynamic rules file (format 1, for Open MPI 4) for a
    /// communicator of the measured size: per range the fastest correct candidate Open MPI has
    /// itself (its own default where MPI_Bcast won), so a MagPIe range gets the best of the
    /// rest. Use with `--mca coll_tuned_use_dynamic_rules 1 --mca
    /// coll_tuned_dynamic_rules_filename FILE`.
    fn openmpi_rules(&self) -> String;
    /// Writes the table (`bcast-tuning.json`) and its Open MPI rules file into `dir`, creating
    /// it, each file atomically; returns their paths.
    fn write_to(&self, dir: &std::path::Path) -> std::io::Result<[std::path::PathBuf; 2]>;
}

impl BroadcastTable for Tuning {
    fn from_timings(
        timings: Vec<Timing>,
        ranks: usize,
        root: Rank,
        topology: Option<&TopologyNode>,
        machine: TuningMachine,
    ) -> Self {
        let mut by_size: BTreeMap<usize, Vec<&Timing>> = BTreeMap::new();
        for t in timings.iter().filter(|t| t.correct) {
            by_size.entry(t.size).or_default().push(t);
        }
        let sizes: Vec<usize> = by_size.keys().copied().collect();
        let ranges = by_size
            .iter()
            .enumerate()
            .map(|(k, (&size, list))| {
                let mut list = list.clone();
                list.sort_by(|a, b| a.trimmed_us.total_cmp(&b.trimmed_us));
                // The library's own broadcast wins ties: within LIBRARY_TIE of the fastest it
                // is chosen, as the choice that needs no trust in a few percent of noise.
                if let Some(k) = list.iter().position(|t| t.candidate == LIBRARY) {
                    if list[k].trimmed_us <= list[0].trimmed_us * LIBRARY_TIE {
                        let library = list.remove(k);
                        list.insert(0, library);
                    }
                }
                let lead = list
                    .get(1)
                    .map(|second| second.trimmed_us / list[0].trimmed_us.max(1e-9));
                TuningRange {
                    from_bytes: if k == 0 { 0 } else { size },
                    to_bytes: sizes.get(k + 1).copied(),
                    measured_bytes: size,
                    choice: list[0].candidate.clone(),
                    lead,
                }
            })
            .collect();
        Tuning {
            format: TUNING_FORMAT.into(),
            version: 1,
            ranks,
            root,
            topology: topology.and_then(|tree| {
                Topology::from_tree(tree.clone(), Some(ranks))
                    .ok()
                    .map(|t| lgate_topology::lgate::to_string(&t))
            }),
            machine,
            ranges,
            timings,
            rank_time: Vec::new(),
        }
    }

    fn parse(text: &str) -> Result<Self, TuningError> {
        // The data's own checks, without the (empty) path; then every choice.
        let tuning = Tuning::read_text(text, std::path::Path::new("")).map_err(|e| {
            TuningError::Invalid {
                problem: match e {
                    lgate_rundir::RunDirError::BadFile { message, .. } => message,
                    e => e.to_string(),
                },
            }
        })?;
        let tree = tuning.tree()?;
        for r in &tuning.ranges {
            parse_candidate(&r.choice, tree.as_ref())?;
        }
        Ok(tuning)
    }

    fn tree(&self) -> Result<Option<TopologyNode>, TuningError> {
        self.topology
            .as_deref()
            .map(|text| {
                lgate_topology::lgate::parse(text, Some(self.ranks))
                    .map(|t| t.tree().clone())
                    .map_err(|e| TuningError::Topology {
                        problem: e.to_string(),
                    })
            })
            .transpose()
    }

    fn openmpi_rules(&self) -> String {
        let mut lines = Vec::new();
        for r in &self.ranges {
            let best = self
                .timings
                .iter()
                .filter(|t| t.correct && t.size == r.measured_bytes)
                .filter_map(|t| openmpi_algorithm(&t.candidate).map(|a| (t, a)))
                .min_by(|a, b| a.0.trimmed_us.total_cmp(&b.0.trimmed_us));
            let ((id, fan, segment), name) = match best {
                Some((t, a)) => (a, t.candidate.clone()),
                None => ((0, 0, 0), LIBRARY.to_string()),
            };
            lines.push(format!(
                "{} {id} {fan} {segment} # from {} bytes: {name}",
                r.from_bytes, r.from_bytes
            ));
        }
        format!(
            "# Open MPI coll_tuned dynamic rules for MPI_Bcast, written by lgate-plogp bcast bench\n\
             1 # number of collectives\n\
             7 # collective id: bcast\n\
             1 # number of communicator sizes\n\
             {} # communicator size\n\
             {} # number of message sizes\n\
             {}\n",
            self.ranks,
            lines.len(),
            lines.join("\n")
        )
    }

    fn write_to(&self, dir: &std::path::Path) -> std::io::Result<[std::path::PathBuf; 2]> {
        let named = |e: std::io::Error, p: &std::path::Path| {
            std::io::Error::new(e.kind(), format!("{}: {e}", p.display()))
        };
        std::fs::create_dir_all(dir).map_err(|e| named(e, dir))?;
        let json = dir.join(Tuning::FILES[0]);
        let text = serde_json::to_string_pretty(self).expect("the table serialises");
        lgate_output::write_atomic(&json, text.as_bytes()).map_err(|e| named(e, &json))?;
        let rules = dir.join(Tuning::FILES[1]);
        lgate_output::write_atomic(&rules, self.openmpi_rules().as_bytes())
            .map_err(|e| named(e, &rules))?;
        Ok([json, rules])
    }
}

/// Open MPI's bcast algorithm number, fan-out and segment size for a candidate it has.
fn openmpi_algorithm(name: &str) -> Option<(u32, u32, usize)> {
    if name == LIBRARY {
        return Some((0, 0, 0));
    }
    Some(match name.parse::<BaseAlgorithm>().ok()? {
        BaseAlgorithm::Flat => (1, 0, 0),
        BaseAlgorithm::Chain => (2, 1, 0),
        BaseAlgorithm::Pipeline { segment } => (3, 0, segment),
        BaseAlgorithm::SplitBinary => (4, 0, 0),
        BaseAlgorithm::Binary => (5, 0, 0),
        BaseAlgorithm::Binomial => (6, 0, 0),
        BaseAlgorithm::ScatterAllgather => (9, 0, 0),
        // Open MPI's linear and pipeline broadcasts start their sends at once already.
        BaseAlgorithm::FlatNonBlocking => (1, 0, 0),
        BaseAlgorithm::PipelineNonBlocking { segment } => (3, 0, segment),
        BaseAlgorithm::BinomialNonBlocking => (6, 0, 0),
    })
}

/// The broadcasts `--algos` names (`magpie` for every MagPIe combination over `tree`), or the
/// default set without a list.
pub fn candidates_named(
    names: Option<&[String]>,
    tree: Option<&TopologyNode>,
    segments: &[usize],
) -> Result<Vec<Candidate>, TuningError> {
    let Some(names) = names else {
        return Ok(crate::bench::default_candidates(tree, segments));
    };
    let mut out = Vec::new();
    for name in names {
        if name == "magpie" {
            if tree.is_none() {
                return Err(TuningError::MagpieWithoutTopology);
            }
            out.extend(crate::bench::magpie_candidates(tree, segments));
        } else {
            out.push(parse_candidate(name, tree)?);
        }
    }
    Ok(out)
}

/// Broadcasts `buf` from `root` with the choice the table makes for its length; the library's
/// broadcast falls back to a binomial tree on a transport without one.
pub fn broadcast_tuned(
    t: &dyn Transport,
    buf: &mut [u8],
    root: Rank,
    tuning: &Tuning,
) -> Result<(), BcastError> {
    let choice = &tuning.range_for(buf.len()).choice;
    let tree = tuning.tree().map_err(|problem| BcastError::Topology {
        size: t.size(),
        problem: problem.to_string(),
    })?;
    let candidate =
        parse_candidate(choice, tree.as_ref()).map_err(|problem| BcastError::Topology {
            size: t.size(),
            problem: problem.to_string(),
        })?;
    match candidate {
        Candidate::Library => {
            if !t.library_broadcast(buf, root)? {
                broadcast(t, buf, root, &Plan::Flat(BaseAlgorithm::Binomial))?;
            }
            Ok(())
        }
        Candidate::Plan(plan) => broadcast(t, buf, root, &plan),
    }
}

/// Why a broadcast's name or a tuning file cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TuningError {
    /// A base algorithm that cannot be read.
    #[error(transparent)]
    Algorithm(#[from] AlgorithmError),
    /// `interpipe:` not followed by SEGMENT(BETWEEN/INSIDE)@DEPTH.
    #[error("`{name}` is not interpipe:SEGMENT(BETWEEN/INSIDE)@DEPTH")]
    NotInterpipe {
        /// The name given.
        name: String,
    },
    /// `magpie(` not followed by BETWEEN/INSIDE)@DEPTH.
    #[error("`{name}` is not magpie(BETWEEN/INSIDE)@DEPTH")]
    NotMagpie {
        /// The name given.
        name: String,
    },
    /// A hierarchical broadcast without a topology to follow.
    #[error("`{name}` needs a topology")]
    NeedsTopology {
        /// The name given.
        name: String,
    },
    /// Every MagPIe combination asked for without a topology.
    #[error("magpie needs a topology")]
    MagpieWithoutTopology,
    /// A tuning file's data that does not hold together.
    #[error("{problem}")]
    Invalid {
        /// What is wrong.
        problem: String,
    },
    /// A tuning file's topology that cannot be read.
    #[error("its topology: {problem}")]
    Topology {
        /// What is wrong with it, as the topology reader says.
        problem: String,
    },
}

/// What timing the tuned broadcast found: the slowest round on this rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TunedTiming {
    /// Rounds run.
    pub rounds: usize,
    /// The slowest round on this rank.
    pub slowest: std::time::Duration,
}

impl TunedTiming {
    /// What `bcast run` says: the choice of `tuning` for `size` (as people write it) and how
    /// it went on this rank.
    pub fn line(&self, tuning: &Tuning, len: usize, size: &str) -> String {
        format!(
            "{} at {size}: {} rounds, slowest on rank 0 {:.1} us",
            tuning.range_for(len).choice,
            self.rounds,
            self.slowest.as_secs_f64() * 1e6
        )
    }
}

/// Broadcasts `len` bytes from `root` `rounds` times (at least once) with the table's choice,
/// each round after a barrier, and checks every rank's bytes after each.
pub fn time_tuned(
    t: &dyn Transport,
    tuning: &Tuning,
    len: usize,
    root: Rank,
    rounds: usize,
) -> Result<TunedTiming, BcastError> {
    let expected = crate::bench::payload(root, len);
    let mut buf = vec![0u8; len];
    let mut slowest = std::time::Duration::ZERO;
    for _ in 0..rounds.max(1) {
        if t.rank() == root {
            buf.copy_from_slice(&expected);
        } else {
            buf.fill(0);
        }
        t.library_barrier()?;
        let s = std::time::Instant::now();
        broadcast_tuned(t, &mut buf, root, tuning)?;
        slowest = slowest.max(s.elapsed());
        if buf != expected {
            return Err(BcastError::WrongBytes { rank: t.rank() });
        }
    }
    Ok(TunedTiming {
        rounds: rounds.max(1),
        slowest,
    })
}
