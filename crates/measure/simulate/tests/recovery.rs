//! Simulated runs of the thesis's systems: `auto` on the default matrix recovers every level of
//! the designed machine exactly and claims none it does not have; a slow node is flagged in
//! report.json without becoming a level; the same seed gives the same bytes.

use std::path::Path;

mod common;

use lgate_rundir::RunDir;
use lgate_simulate::model::SlowNode;
use lgate_simulate::{preset, MachineModel, SimulateOptions, Simulation};

/// Simulates `model` into `dir/name` with sizes up to 64 KiB (the default matrix is t(0)).
fn simulate(model: &MachineModel, dir: &Path, name: &str, seed: u64) -> std::path::PathBuf {
    let options = SimulateOptions::new(model, 64 << 10, seed);
    let path = dir.join(name);
    let run = RunDir::create(&path, false).unwrap();
    Simulation::new(model, &options)
        .unwrap()
        .write(&run)
        .unwrap();
    path
}

fn assert_recovered(run: &Path, what: &str) {
    if let Some(error) = common::recovery_error(run, what) {
        panic!("{error}");
    }
}

#[test]
fn every_preset_is_recovered_at_the_thesis_repetitions() {
    let dir = tempfile::tempdir().unwrap();
    for name in lgate_simulate::PRESETS {
        for seed in [1, 2] {
            let model = preset(name).unwrap();
            let run = simulate(&model, dir.path(), &format!("{name}-{seed}"), seed);
            assert_recovered(&run, &format!("{name}, seed {seed}"));
        }
    }
}

#[test]
fn placements_change_the_pattern_not_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    for placement in ["block", "round-robin", "random"] {
        let mut model = preset("fram").unwrap();
        model.placement = placement.parse().unwrap();
        let run = simulate(&model, dir.path(), placement, 3);
        assert_recovered(&run, &format!("fram, {placement} placement"));
    }
}

#[test]
fn a_slow_node_is_reported_and_is_not_a_level() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = preset("betzy")
        .unwrap()
        .with_machine("node=4,socket=2,core=16")
        .unwrap();
    model.artifacts.slow_node = Some(SlowNode {
        node: Some(2),
        count: 1,
        factor: 1.4,
    });
    let run = simulate(&model, dir.path(), "slow-node", 4);
    assert_recovered(&run, "betzy with a slow node");

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("report.json")).unwrap()).unwrap();
    let latency = &report["matrices"][0];
    assert_eq!(latency["matrix"], "latency");
    // The node is one slow host, which explains its 32 ranks: none of them is listed apart.
    let slow: Vec<&str> = latency["slow_hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(slow, ["betzy-n2"], "{latency:#}");
    let factor = latency["slow_hosts"][0]["factor"].as_f64().unwrap();
    assert!((1.3..1.5).contains(&factor), "the model's 1.4: {factor}");
    assert_eq!(
        latency["slow_ranks"].as_array().unwrap().len(),
        0,
        "{latency:#}"
    );
    let meta = RunDir::open(&run).unwrap().read_meta().unwrap();
    assert_eq!(
        meta.simulation.unwrap().slow_node.as_deref(),
        Some("betzy-n2")
    );
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let model = preset("fram")
        .unwrap()
        .with_machine("switch=2,node=2,socket=2,core=4")
        .unwrap();
    let a = simulate(&model, dir.path(), "a", 9);
    let b = simulate(&model, dir.path(), "b", 9);
    let c = simulate(&model, dir.path(), "c", 10);
    let files = |run: &Path| {
        let mut out = Vec::new();
        for sub in ["", "matrices"] {
            for e in std::fs::read_dir(run.join(sub)).unwrap() {
                let p = e.unwrap().path();
                if p.is_file() {
                    out.push((
                        p.strip_prefix(run).unwrap().to_path_buf(),
                        std::fs::read(&p).unwrap(),
                    ));
                }
            }
        }
        out.sort();
        out
    };
    let (fa, fb, fc) = (files(&a), files(&b), files(&c));
    assert!(
        fa.len() > 10,
        "{:?}",
        fa.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    assert_eq!(fa.len(), fb.len());
    for ((pa, ba), (pb, bb)) in fa.iter().zip(&fb) {
        assert_eq!(pa, pb);
        assert!(
            ba == bb,
            "{} differs between two runs of seed 9",
            pa.display()
        );
    }
    let t0 = |f: &[(std::path::PathBuf, Vec<u8>)]| {
        f.iter()
            .find(|(p, _)| p.ends_with("t_0.csv"))
            .unwrap()
            .1
            .clone()
    };
    assert_ne!(t0(&fa), t0(&fc), "another seed, other noise");
}

#[test]
fn a_thousand_ranks_drawn_from_pools_are_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let model = preset("betzy")
        .unwrap()
        .with_machine("node=8,socket=2,core=64")
        .unwrap();
    let mut options = SimulateOptions::new(&model, 1 << 10, 6);
    options.sizes = vec![0, 1 << 10];
    options.outputs.features = false;
    options.outputs.table = false;
    let path = dir.path().join("betzy-1024");
    let run = RunDir::create(&path, false).unwrap();
    let sim = Simulation::new(&model, &options).unwrap();
    sim.write(&run).unwrap();
    assert!(!path.join("measurements.parquet").exists(), "--no-table");
    assert_recovered(&path, "betzy, 1024 ranks");
}
