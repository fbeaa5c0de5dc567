//! `auto` on the thesis's systems with every measurement artifact on (warm-up, spikes, a slow
//! first pair, diagonal bands, slow pairs) at three noise levels, 20 seeds each, with no slow
//! node, one and two: every level of the designed machine is recovered exactly (adjusted Rand
//! index 1) and no other level is claimed.
//!
//! ARM1 is a single node: one slow node slows the whole machine alike, and two cannot be.

use std::path::Path;

mod common;

use lgate_rundir::RunDir;
use lgate_simulate::model::Artifacts;
use lgate_simulate::{preset, SimulateOptions, Simulation};

const SEEDS: u64 = 20;
const NOISES: [f64; 3] = [0.05, 0.08, 0.15];

/// What is wrong with `auto` on one simulated run, if anything.
fn judge(name: &str, noise: f64, slow_nodes: usize, seed: u64, dir: &Path) -> Option<String> {
    let mut model = preset(name).unwrap();
    model.noise.sigma = noise;
    model.artifacts = Artifacts::all();
    match slow_nodes {
        0 => model.artifacts.slow_node = None,
        n => model.artifacts.slow_node.as_mut().unwrap().count = n,
    }
    model.check().unwrap();
    // Size 0 only: the default matrix is t(0).
    let mut options = SimulateOptions::new(&model, 0, seed);
    options.outputs.features = false;
    options.outputs.table = false;
    let path = dir.join(format!("{name}-{noise}-{slow_nodes}-{seed}"));
    let run = RunDir::create(&path, false).unwrap();
    Simulation::new(&model, &options)
        .unwrap()
        .write(&run)
        .unwrap();
    let what = format!("{name}, noise {noise}, {slow_nodes} slow node(s), seed {seed}");
    let error = common::recovery_error(&path, &what);
    std::fs::remove_dir_all(&path).unwrap();
    error
}

fn every_level_of(name: &str, slow_nodes: &[usize]) {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for noise in NOISES {
        for &slow in slow_nodes {
            for seed in 1..=SEEDS {
                failures.extend(judge(name, noise, slow, seed, dir.path()));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn fram_with_every_artifact_and_slow_nodes() {
    every_level_of("fram", &[0, 1, 2]);
}

#[test]
fn betzy_with_every_artifact_and_slow_nodes() {
    every_level_of("betzy", &[0, 1, 2]);
}

#[test]
fn arm1_with_every_artifact() {
    every_level_of("arm1", &[0, 1]);
}
