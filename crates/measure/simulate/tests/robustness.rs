//! `auto` on the thesis's systems with every measurement artifact on (warm-up, spikes, a slow
//! first pair, diagonal bands, slow pairs) at three noise levels, 20 seeds each, with no slow
//! node, one and two: every level of the designed machine is recovered exactly (adjusted Rand
//! index 1) and no other level is claimed.
//!
//! ARM1 is a single node: one slow node slows the whole machine alike, and two cannot be.

use std::path::Path;

mod common;

use lgate_rundir::RunDir;
use lgate_simulate::model::{parse_levels, Artifacts, MachineModel, Placement};
use lgate_simulate::{preset, SimulateOptions, Simulation};

const SEEDS: u64 = 20;
const NOISES: [f64; 3] = [0.05, 0.08, 0.15];

/// What is wrong with `auto` on one simulated run, if anything.
fn judge(name: &str, noise: f64, slow_nodes: usize, seed: u64, dir: &Path) -> Option<String> {
    let mut model = preset(name).unwrap();
    match slow_nodes {
        0 => model.artifacts.slow_node = None,
        n => model.artifacts.slow_node.as_mut().unwrap().count = n,
    }
    judge_model(model, name, noise, slow_nodes, seed, dir)
}

/// What is wrong with `auto` on one run of `model` with every artifact on (the slow node as
/// the model has it), if anything.
fn judge_model(
    model: MachineModel,
    name: &str,
    noise: f64,
    slow_nodes: usize,
    seed: u64,
    dir: &Path,
) -> Option<String> {
    let path = dir.join(format!("{name}-{noise}-{slow_nodes}-{seed}"));
    write_run(model, noise, true, seed, &path);
    let what = format!("{name}, noise {noise}, {slow_nodes} slow node(s), seed {seed}");
    let error = common::recovery_error(&path, &what);
    std::fs::remove_dir_all(&path).unwrap();
    error
}

/// Writes a run of `model` at `noise` and `seed` to `path` (t(0) only), with every artifact
/// on, the slow node only when `slow_node` (and the model has one).
fn write_run(mut model: MachineModel, noise: f64, slow_node: bool, seed: u64, path: &Path) {
    model.noise.sigma = noise;
    let slow_node = model.artifacts.slow_node.filter(|_| slow_node);
    model.artifacts = Artifacts {
        slow_node,
        ..Artifacts::all()
    };
    model.check().unwrap();
    // Size 0 only: the default matrix is t(0).
    let mut options = SimulateOptions::new(&model, 0, seed);
    options.outputs.features = false;
    options.outputs.table = false;
    let run = RunDir::create(path, false).unwrap();
    Simulation::new(&model, &options)
        .unwrap()
        .write(&run)
        .unwrap();
}

fn every_level_of(name: &str, slow_nodes: &[usize]) {
    every_level_at(name, &NOISES, slow_nodes);
}

fn every_level_at(name: &str, noises: &[f64], slow_nodes: &[usize]) {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for &noise in noises {
        for &slow in slow_nodes {
            for seed in 1..=SEEDS {
                failures.extend(judge(name, noise, slow, seed, dir.path()));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// A one-node machine of `levels` from the top down, each level's link (ranks parting there)
/// one of ARM1's: `links[k]` names the ARM1 link of level k (`socket` 0.83 us at t(0), `numa`
/// 0.48, `core` 0.34), ranks placed `placement`, no slow node (one node is slowed alike).
fn one_node(levels: &str, links: &[&str], placement: Placement) -> MachineModel {
    let arm1 = preset("arm1").unwrap();
    let mut model = arm1.clone();
    model.levels = parse_levels(levels).unwrap();
    model.links = model
        .levels
        .iter()
        .zip(links)
        .map(|(l, from)| (l.name.clone(), arm1.links[*from].clone()))
        .collect();
    model.placement = placement;
    model.artifacts.slow_node = None;
    model.check().unwrap();
    model
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

#[test]
fn the_hybrid_preset_with_every_artifact() {
    // Its core level holds 8 SMT pairs beside 8 singletons (E-cores without a sibling), its
    // module level the same 8 pairs beside 2 modules of 4 E-cores: a level that parts some
    // groups of the coarser one into single ranks, which no group's own split can find.
    every_level_of("hybrid", &[0, 1]);
}

#[test]
fn a_hybrid_cpu_whose_e_core_modules_do_not_show() {
    // The hybrid preset as it was before its modules showed: 8 P-core SMT pairs (0.48 us at
    // RTT(0)) beside 8 E-cores, all other cores 1.26 us apart; its SMT level, pairs beside
    // singletons, exactly.
    let model = one_node("core=16,smt=2x8/1x8", &["socket", "core"], Placement::Block);
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for noise in NOISES {
        for seed in 1..=SEEDS {
            let path = dir.path().join(format!("hybrid-flat-{noise}-{seed}"));
            write_run(model.clone(), noise, false, seed, &path);
            let what = format!("hybrid without modules, noise {noise}, seed {seed}");
            failures.extend(common::recovery_error(&path, &what));
            std::fs::remove_dir_all(&path).unwrap();
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn the_chiplet_preset_with_every_artifact() {
    // 4 CCDs of 3 cores: a slow pair inside a CCD leaves it one pair its third core holds
    // together, a rank slow towards both others is a singleton.
    every_level_of("chiplet", &[0, 1]);
}

#[test]
fn the_zen4_preset_with_every_artifact() {
    // SMT siblings barely nearer than the nearest other cores of their CCD (1.1-1.25x at
    // t(0), where the CCD's pairs spread by their places on its ring).
    every_level_at("zen4", &NOISES[..2], &[0, 1]);
}

#[test]
fn the_zen4_preset_at_the_highest_noise() {
    // At noise 0.15 one seed of 20 (12) leaves both CCDs' siblings 1.12-1.17x below their
    // nearest cores at 6.4-7.4 times the noise, short of the 1.4 the narrow rule asks: 19 of
    // 20, as issue 48 asks of the new presets, each with and without a slow node.
    let dir = tempfile::tempdir().unwrap();
    for slow in [0, 1] {
        let failures: Vec<String> = (1..=SEEDS)
            .filter_map(|seed| judge("zen4", NOISES[2], slow, seed, dir.path()))
            .collect();
        assert!(failures.len() <= 1, "{failures:#?}");
    }
}

#[test]
fn a_hybrid_node_of_smt_p_cores_and_e_core_clusters() {
    // 8 P-cores of two threads, then 2 clusters of 4 E-cores: 24 ranks, one level of 10
    // groups of 2 and 4 (SMT siblings and E-core clusters at 0.34 us, 0.83 us between them),
    // every artifact on. A slow pair (2.5x) that falls on an SMT pair measures it as far apart
    // as any two cores: no measurement says those two belong together, and the level must hold
    // them as two singletons (as E-cores without an SMT sibling would be), not lose the level.
    let model = one_node(
        "cluster=10,cpu=2x8/4x2",
        &["socket", "core"],
        Placement::Block,
    );
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for noise in NOISES {
        for seed in 1..=SEEDS {
            let path = dir.path().join(format!("hybrid-{noise}-{seed}"));
            write_run(model.clone(), noise, false, seed, &path);
            let expected = lgate_cluster::read_truth(&path)
                .unwrap()
                .levels
                .into_iter()
                .find(|(name, _)| name == "cluster")
                .unwrap()
                .1;
            let expected = common::without_slow_pairs(&path, expected);
            let what = format!("hybrid, noise {noise}, seed {seed}");
            failures.extend(common::level_error(&path, &expected, &what));
            std::fs::remove_dir_all(&path).unwrap();
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn a_two_ccd_node_with_smt() {
    // A 16-core desktop part: 2 CCDs of 8 cores of two threads, 32 ranks, every artifact on:
    // the CCDs (0.83 us between them) and the cores inside (SMT siblings 0.34 us apart, 0.48 us
    // between cores of one CCD), both exactly; an SMT pair that a slow pair falls on is two
    // singletons, as in the hybrid node above. At noise 0.15 (seed 12) one CCD's siblings
    // measure 0.36-0.38 us against 0.46-0.49: a gap under a fifth of the CCD's median, found
    // because it is 10 times the noise of the distances between cores.
    let model = one_node(
        "ccd=2,core=8,smt=2",
        &["socket", "numa", "core"],
        Placement::Block,
    );
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for noise in NOISES {
        for seed in 1..=SEEDS {
            let path = dir.path().join(format!("two-ccd-{noise}-{seed}"));
            write_run(model.clone(), noise, false, seed, &path);
            let truth: Vec<(String, Vec<usize>)> = lgate_cluster::read_truth(&path)
                .unwrap()
                .levels
                .into_iter()
                .filter(|(name, _)| name == "ccd" || name == "core")
                .map(|(name, labels)| {
                    let labels = common::without_slow_pairs(&path, labels);
                    (name, labels)
                })
                .collect();
            assert_eq!(truth.len(), 2);
            let what = format!("two CCDs, noise {noise}, seed {seed}");
            failures.extend(common::levels_error(&path, &truth, &what));
            std::fs::remove_dir_all(&path).unwrap();
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
