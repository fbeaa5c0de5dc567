//! Broadcasts built from point-to-point messages over the harness's [`Transport`]: the base
//! algorithms of the reference thesis's Table 6.1 (blocking, and non-blocking where sends can
//! start at once or overlap a receive) and MagPIe and Interpipe (Table 6.2) over topology trees
//! of any depth, from any root; the benchmark that times them against the library's own
//! broadcast ([`bench()`]) and the decision table made from it ([`Tuning`]).
//!
//! Every rank calls [`broadcast`] with the same plan and root; on return every rank's buffer
//! holds the root's bytes. Messages use the tag [`BCAST`], and each pair of ranks exchanges
//! them in the same order on both sides, so broadcasts may follow each other freely.
#![deny(missing_docs)]

mod base;
pub mod bench;
pub mod check;
mod hierarchy;
pub mod share;
pub mod tuning;

use lgate_topology::Rank;
use lgate_topology::TopologyNode;
use lgate_transport::{Tag, Transport, TransportError};

pub use base::{AlgorithmError, BaseAlgorithm};
pub use bench::{
    bench, default_candidates, share_from_rank0, BenchOptions, BenchResult, Candidate, Timing,
};
pub use hierarchy::{coordinator, prune_to_depth};
pub use tuning::{
    broadcast_tuned, parse_candidate, time_tuned, BroadcastTable, TunedTiming, Tuning, TuningError,
    TuningMachine, TuningRange,
};

/// The tag of broadcast messages.
pub const BCAST: Tag = Tag::BCAST;

/// An error of a broadcast.
#[derive(Debug, thiserror::Error)]
pub enum BcastError {
    /// The transport failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// A root outside the job.
    #[error("root {root} is not a rank of this job of {size} ranks")]
    BadRoot {
        /// The root asked for.
        root: Rank,
        /// The job's size.
        size: usize,
    },
    /// A message of another length than the algorithm expects: the ranks disagree about the
    /// buffer's length or the plan.
    #[error(
        "rank {rank} received {got} bytes from rank {from} where {expected} were due: do all \
         ranks broadcast the same length with the same plan?"
    )]
    Length {
        /// This rank.
        rank: Rank,
        /// The sender.
        from: Rank,
        /// Bytes due.
        expected: usize,
        /// Bytes received.
        got: usize,
    },
    /// A broadcast left this rank with other bytes than the root's.
    #[error("rank {rank}: wrong bytes after the broadcast")]
    WrongBytes {
        /// This rank.
        rank: Rank,
    },
    /// A segment size of zero.
    #[error("the segment size of a pipeline must be at least 1 byte")]
    ZeroSegment,
    /// A topology that does not hold every rank of the job exactly once.
    #[error("the topology must hold ranks 0 to {last} once each: {problem}", last = size - 1)]
    Topology {
        /// The job's size.
        size: usize,
        /// What is wrong.
        problem: String,
    },
}

/// An error unless a message from `from` brought the `expected` number of bytes.
pub(crate) fn check_length(
    t: &dyn Transport,
    from: Rank,
    expected: usize,
    got: usize,
) -> Result<(), BcastError> {
    if got == expected {
        Ok(())
    } else {
        Err(BcastError::Length {
            rank: t.rank(),
            from,
            expected,
            got,
        })
    }
}

/// How to broadcast: one base algorithm over all ranks, or MagPIe or Interpipe over a topology.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// One base algorithm over all ranks in rank order.
    Flat(BaseAlgorithm),
    /// MagPIe: at every cluster of the tree, the coordinators of its children (the root in the
    /// root's child, else the child's lowest rank) broadcast with `between`; inside every
    /// group, its ranks broadcast from their coordinator with `inside`.
    Magpie {
        /// The topology, pruned to the levels to use.
        tree: TopologyNode,
        /// The algorithm among coordinators.
        between: BaseAlgorithm,
        /// The algorithm inside groups.
        inside: BaseAlgorithm,
    },
    /// Interpipe: MagPIe over one segment of the message after another, so that groups pass
    /// on early segments while later ones still cross the links between them.
    Interpipe {
        /// The topology, pruned to the levels to use.
        tree: TopologyNode,
        /// The algorithm among coordinators.
        between: BaseAlgorithm,
        /// The algorithm inside groups.
        inside: BaseAlgorithm,
        /// Bytes per segment.
        segment: usize,
    },
}

impl Plan {
    /// A short name for tables: `binomial`, or `magpie(pipeline:8KiB/binomial)@2`.
    pub fn name(&self) -> String {
        match self {
            Plan::Flat(a) => a.to_string(),
            Plan::Magpie {
                tree,
                between,
                inside,
            } => format!("magpie({between}/{inside})@{}", tree.depth()),
            Plan::Interpipe {
                tree,
                between,
                inside,
                segment,
            } => format!(
                "interpipe:{}({between}/{inside})@{}",
                base::size_text(*segment),
                tree.depth()
            ),
        }
    }

    /// Checks that the plan can run on a job of `size` ranks.
    pub fn check(&self, size: usize) -> Result<(), BcastError> {
        let algorithms = match self {
            Plan::Flat(a) => vec![*a],
            Plan::Magpie {
                tree,
                between,
                inside,
            } => {
                hierarchy::check_tree(tree, size)?;
                vec![*between, *inside]
            }
            Plan::Interpipe {
                tree,
                between,
                inside,
                segment,
            } => {
                hierarchy::check_tree(tree, size)?;
                if *segment == 0 {
                    return Err(BcastError::ZeroSegment);
                }
                vec![*between, *inside]
            }
        };
        if algorithms.iter().any(|a| {
            matches!(
                a,
                BaseAlgorithm::Pipeline { segment: 0 }
                    | BaseAlgorithm::PipelineNonBlocking { segment: 0 }
            )
        }) {
            return Err(BcastError::ZeroSegment);
        }
        Ok(())
    }
}

/// Broadcasts `buf` from `root` to every rank of the job, as `plan` says. Every rank calls it
/// with the same plan, root and buffer length.
pub fn broadcast(
    t: &dyn Transport,
    buf: &mut [u8],
    root: Rank,
    plan: &Plan,
) -> Result<(), BcastError> {
    let size = t.size();
    if root >= size {
        return Err(BcastError::BadRoot { root, size });
    }
    plan.check(size)?;
    // Nothing to send: every rank has the same (empty) bytes already.
    if buf.is_empty() {
        return Ok(());
    }
    match plan {
        Plan::Flat(algorithm) => {
            let all: Vec<Rank> = (0..size).collect();
            base::run(t, &all, root, buf, *algorithm)
        }
        Plan::Magpie {
            tree,
            between,
            inside,
        } => hierarchy::magpie(t, tree, root, buf, *between, *inside),
        Plan::Interpipe {
            tree,
            between,
            inside,
            segment,
        } => buf
            .chunks_mut(*segment)
            .try_for_each(|part| hierarchy::magpie(t, tree, root, part, *between, *inside)),
    }
}
