//! The benchmark: every candidate broadcast at every message size, W warm-up rounds and up to N
//! timed rounds within a time budget, each round after a barrier, the round's time the slowest
//! rank's; every rank checks after every round that it holds exactly the root's bytes.

use std::time::{Duration, Instant};

use lgate_topology::{Rank, TopologyNode};
use lgate_transport::{gather_time_splits, Activity, RankClock, SubsetBarrier, Tag, Transport};

use crate::{broadcast, prune_to_depth, BaseAlgorithm, BcastError, Plan};
use lgate_stats::quantile_of_sorted as quantile;

/// The tag of the timings sent to rank 0.
const TIMINGS: Tag = Tag::BCAST_TIMINGS;

/// A broadcast that takes part in the benchmark.
#[derive(Debug, Clone, PartialEq)]
pub enum Candidate {
    /// The message library's own broadcast (MPI_Bcast).
    Library,
    /// One of this crate's plans.
    Plan(Plan),
}

impl Candidate {
    /// The name used in tables and tuning files.
    pub fn name(&self) -> String {
        match self {
            Candidate::Library => LIBRARY.to_string(),
            Candidate::Plan(p) => p.name(),
        }
    }
}

pub use lgate_rundir::bcast_tuning::{Timing, LIBRARY};

/// What to benchmark.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Message sizes in bytes.
    pub sizes: Vec<usize>,
    /// The broadcasts.
    pub candidates: Vec<Candidate>,
    /// Untimed rounds before the timed ones.
    pub warmup: usize,
    /// Timed rounds at most.
    pub rounds: usize,
    /// Timed rounds stop once they would take longer than this (at least 5 are run).
    pub budget: Duration,
    /// The root.
    pub root: Rank,
}

/// The root's bytes at a size: different for every root and size.
pub fn payload(root: Rank, len: usize) -> Vec<u8> {
    (0..len)
        .map(|k| ((k * 131 + root * 7 + len) % 251) as u8)
        .collect()
}

/// The statistics of round times in seconds.
fn timing(candidate: String, size: usize, mut rounds: Vec<f64>, correct: bool) -> Timing {
    rounds.sort_by(f64::total_cmp);
    let us = |s: f64| s * 1e6;
    let p90 = quantile(&rounds, 0.9);
    let kept: Vec<f64> = rounds.iter().copied().filter(|&x| x <= p90).collect();
    Timing {
        candidate,
        size,
        rounds: rounds.len(),
        min_us: us(rounds[0]),
        median_us: us(quantile(&rounds, 0.5)),
        p90_us: us(p90),
        mean_us: us(rounds.iter().sum::<f64>() / rounds.len() as f64),
        trimmed_us: us(kept.iter().sum::<f64>() / kept.len().max(1) as f64),
        correct,
    }
}

/// A barrier over all ranks: the library's if it has one, else a subset barrier.
fn barrier(t: &dyn Transport, all: &[Rank], id: u64) -> Result<(), BcastError> {
    if !t.library_barrier()? {
        let b = SubsetBarrier::new(all, t.rank()).expect("every rank is in the job");
        b.wait::<BcastError>(t, id, &mut || Ok(()))?;
    }
    Ok(())
}

/// One broadcast by a candidate; false when the candidate is the library's and there is none.
fn run_candidate(
    t: &dyn Transport,
    candidate: &Candidate,
    buf: &mut [u8],
    root: Rank,
) -> Result<bool, BcastError> {
    match candidate {
        Candidate::Library => Ok(t.library_broadcast(buf, root)?),
        Candidate::Plan(plan) => broadcast(t, buf, root, plan).map(|()| true),
    }
}

/// What a benchmark found, on rank 0.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchResult {
    /// The timings, in the order of sizes, then candidates.
    pub timings: Vec<Timing>,
    /// Per rank, its wall and CPU time broadcasting (busy) and between broadcasts (waiting:
    /// barriers, agreeing on round counts, collecting timings).
    pub rank_time: Vec<lgate_transport::TimeSplit>,
}

/// Runs the benchmark on this rank; rank 0 returns the result, the others `None`. `progress`
/// sees each timing on rank 0 as it is made.
pub fn bench(
    t: &dyn Transport,
    options: &BenchOptions,
    progress: &mut dyn FnMut(&Timing),
) -> Result<Option<BenchResult>, BcastError> {
    let (size, rank, root) = (t.size(), t.rank(), options.root);
    if root >= size {
        return Err(BcastError::BadRoot { root, size });
    }
    for c in &options.candidates {
        if let Candidate::Plan(p) = c {
            p.check(size)?;
        }
    }
    let all: Vec<Rank> = (0..size).collect();
    let agree = Plan::Flat(BaseAlgorithm::Binomial);
    let mut barrier_id = 0u64;
    let mut next_barrier = |t: &dyn Transport| {
        barrier_id += 1;
        barrier(t, &all, barrier_id)
    };
    let mut out = Vec::new();
    let mut clock = RankClock::start(t.cpu_scope());
    for &len in &options.sizes {
        let expected = payload(root, len);
        let mut buf = vec![0u8; len];
        for candidate in &options.candidates {
            let reset = |buf: &mut Vec<u8>| {
                if rank == root {
                    buf.copy_from_slice(&expected);
                } else {
                    buf.fill(0xee);
                }
            };
            reset(&mut buf);
            clock.charge(Activity::Waiting);
            if !run_candidate(t, candidate, &mut buf, root)? {
                // No library broadcast on this transport: the same on every rank.
                continue;
            }
            clock.charge(Activity::Busy);
            let mut correct = buf == expected;
            let started = Instant::now();
            for _ in 0..options.warmup {
                next_barrier(t)?;
                clock.charge(Activity::Waiting);
                run_candidate(t, candidate, &mut buf, root)?;
                clock.charge(Activity::Busy);
            }
            // The root decides how many timed rounds fit in the budget, from the warm-up.
            let per_round = started.elapsed().as_secs_f64() / (options.warmup + 1) as f64;
            let fit = (options.budget.as_secs_f64() / per_round.max(1e-9)) as usize;
            let mut count = (fit.clamp(5, options.rounds.max(1)) as u64).to_le_bytes();
            broadcast(t, &mut count, root, &agree)?;
            let rounds = u64::from_le_bytes(count) as usize;
            let mut times = Vec::with_capacity(rounds + 1);
            for _ in 0..rounds {
                reset(&mut buf);
                next_barrier(t)?;
                clock.charge(Activity::Waiting);
                let s = Instant::now();
                run_candidate(t, candidate, &mut buf, root)?;
                times.push(s.elapsed().as_secs_f64());
                clock.charge(Activity::Busy);
                correct &= buf == expected;
            }
            // Rank 0 gathers every rank's round times and verdict.
            times.push(if correct { 1.0 } else { 0.0 });
            if rank != 0 {
                let bytes: Vec<u8> = times.iter().flat_map(|x| x.to_le_bytes()).collect();
                t.send(0, TIMINGS, &bytes)?;
                continue;
            }
            let mut slowest = times[..rounds].to_vec();
            let mut bytes = vec![0u8; 8 * (rounds + 1)];
            for from in 1..size {
                let got = t.recv(from, TIMINGS, &mut bytes)?;
                crate::check_length(t, from, bytes.len(), got)?;
                let theirs: Vec<f64> = bytes
                    .chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
                    .collect();
                for (s, x) in slowest.iter_mut().zip(&theirs) {
                    *s = s.max(*x);
                }
                correct &= theirs[rounds] == 1.0;
            }
            let timing = timing(candidate.name(), len, slowest, correct);
            progress(&timing);
            out.push(timing);
        }
    }
    clock.charge(Activity::Waiting);
    let rank_time = gather_time_splits(t, clock.totals())?;
    Ok((rank == 0).then_some(BenchResult {
        timings: out,
        rank_time,
    }))
}

/// The candidates of a default benchmark: every base algorithm over all ranks (pipelines with
/// each segment size); with a topology, MagPIe at every depth with a flat, binomial or pipeline
/// broadcast among coordinators and a binomial or pipeline one inside groups, and Interpipe
/// with each segment size; and MPI_Bcast.
pub fn default_candidates(tree: Option<&TopologyNode>, segments: &[usize]) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = BaseAlgorithm::all(segments)
        .into_iter()
        .map(|a| Candidate::Plan(Plan::Flat(a)))
        .collect();
    out.extend(magpie_candidates(tree, segments));
    out.push(Candidate::Library);
    out
}

/// The MagPIe candidates of [`default_candidates`].
pub fn magpie_candidates(tree: Option<&TopologyNode>, segments: &[usize]) -> Vec<Candidate> {
    let Some(tree) = tree else {
        return Vec::new();
    };
    let pipelines = segments
        .iter()
        .map(|&segment| BaseAlgorithm::Pipeline { segment });
    let between: Vec<BaseAlgorithm> = [BaseAlgorithm::Flat, BaseAlgorithm::Binomial]
        .into_iter()
        .chain(pipelines.clone())
        .collect();
    let inside: Vec<BaseAlgorithm> = std::iter::once(BaseAlgorithm::Binomial)
        .chain(pipelines)
        .collect();
    let mut out = Vec::new();
    for depth in 1..=tree.depth() {
        let pruned = prune_to_depth(tree, depth);
        for &b in &between {
            for &i in &inside {
                out.push(Candidate::Plan(Plan::Magpie {
                    tree: pruned.clone(),
                    between: b,
                    inside: i,
                }));
            }
        }
        // Interpipe: segments of MagPIe with a flat or binomial step between coordinators.
        for &segment in segments {
            for b in [BaseAlgorithm::Flat, BaseAlgorithm::Binomial] {
                out.push(Candidate::Plan(Plan::Interpipe {
                    tree: pruned.clone(),
                    between: b,
                    inside: BaseAlgorithm::Binomial,
                    segment,
                }));
            }
        }
    }
    out
}

/// Gives every rank rank 0's bytes (of any length, known to rank 0 only); `None` on rank 0
/// stands for a failure there, which the others learn as `Ok(None)` so they can stop quietly.
pub fn share_from_rank0(
    t: &dyn Transport,
    bytes: Option<Vec<u8>>,
) -> Result<Option<Vec<u8>>, BcastError> {
    let plan = Plan::Flat(BaseAlgorithm::Binomial);
    let mut len = bytes
        .as_ref()
        .map_or(u64::MAX, |b| b.len() as u64)
        .to_le_bytes();
    broadcast(t, &mut len, 0, &plan)?;
    let len = u64::from_le_bytes(len);
    if len == u64::MAX {
        return Ok(None);
    }
    let mut buf = bytes.unwrap_or_else(|| vec![0; len as usize]);
    broadcast(t, &mut buf, 0, &plan)?;
    Ok(Some(buf))
}

impl BenchResult {
    /// The decision table of this benchmark of `ranks` ranks broadcasting from `root` over
    /// `topology`, on `hosts` with the MPI library `library`, with every rank's time.
    pub fn into_tuning(
        self,
        ranks: usize,
        root: usize,
        topology: Option<&lgate_topology::TopologyNode>,
        hosts: &[String],
        library: String,
    ) -> crate::Tuning {
        use crate::BroadcastTable;
        let machine = crate::TuningMachine {
            hosts: hosts.to_vec(),
            library,
        };
        let mut tuning = crate::Tuning::from_timings(self.timings, ranks, root, topology, machine);
        tuning.rank_time = lgate_transport::rank_times(self.rank_time);
        tuning
    }
}
