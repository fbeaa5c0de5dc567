//! What meta.json keeps of a run written by `simulate`: the machine model and what was drawn
//! from the seed (its keys sorted in the file).

use lgate_model::MachineModel;
use serde::{Deserialize, Serialize};

/// A simulated run's record: the model, and the artifacts and slow parts drawn from the seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimulationRecord {
    /// The machine model.
    pub model: MachineModel,
    /// The model in words.
    pub machine: String,
    /// Repetitions of each measurement.
    pub reps: usize,
    /// The artifacts drawn into the measurements.
    pub artifacts: Vec<String>,
    /// The band each rank's measurements were shifted by (the `bands` artifact).
    pub band_offsets: Vec<usize>,
    /// The pairs of ranks made slow, as rank pairs.
    pub slow_pairs: Vec<[usize; 2]>,
    /// The first slow node's host, if any.
    pub slow_node: Option<String>,
    /// Every slow node's host.
    pub slow_nodes: Vec<String>,
    /// Hosts and links made slower (`simulate`'s slow hosts and links).
    pub degraded: Vec<DegradedRecord>,
    /// Ranks made slower in all their pairs.
    pub slow_ranks: Vec<SlowRankRecord>,
    /// Single pairs made slower.
    pub slow_rank_pairs: Vec<SlowPairRecord>,
    /// Which measurement of the same machine this is.
    pub rerun: u64,
    /// How the run's times were made.
    pub times: String,
}

/// A host, or a link between two, made slower.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DegradedRecord {
    /// The host, or the link's two hosts.
    pub hosts: Vec<String>,
    /// How many times as long its pairs take.
    pub factor: f64,
}

/// A rank made slower in all its pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowRankRecord {
    /// The rank.
    pub rank: usize,
    /// How many times as long its pairs take.
    pub factor: f64,
}

/// One pair of ranks made slower.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowPairRecord {
    /// The two ranks, the smaller first.
    pub ranks: [usize; 2],
    /// How many times as long the pair takes.
    pub factor: f64,
}
