//! Clustering by hosts finds what the dense path finds: on every preset, and on machines of
//! up to 4096 ranks, with every measurement artifact on (a slow node among them), the levels
//! `auto` finds by hosts (each host's block, the host x host medians) equal, group for group
//! (adjusted Rand index 1 at every level), those it finds on the dense matrices a staged run
//! fills from the same pairs; and so do the slow ranks of the slow node.

use lgate_cluster::{adjusted_rand_index, choose_by_levels, load_by_hosts, load_candidates};
use lgate_cluster::{AutoParams, InputError};
use lgate_harness::StagedPlanOptions;
use lgate_harness::TopologySource;
use lgate_rundir::RunDir;
use lgate_simulate::model::Artifacts;
use lgate_simulate::{preset, SimulateOptions, Simulation};
use lgate_topology::Topology;

/// The topology and slow ranks `auto` finds on `inputs`, keeping the size with most levels.
fn found(inputs: Vec<lgate_cluster::ClusterInput>) -> (Topology, Vec<usize>) {
    let mut slow = Vec::new();
    let (input, tree, _) = choose_by_levels(inputs, |i| {
        let (tree, s) = i.auto(&AutoParams::default())?;
        slow.push((i.source.clone(), s));
        Ok::<_, InputError>(tree)
    })
    .unwrap();
    let slow = (slow.into_iter())
        .find(|(source, _)| *source == input.source)
        .map(|(_, s)| s.iter().map(|&(r, _)| input.ranks[r]).collect())
        .unwrap_or_default();
    (input.topology(&tree).unwrap(), slow)
}

/// Simulates a staged run of `name` shaped `machine` (or the preset's own) with every artifact,
/// clusters it both ways, and says what differs.
fn compare(name: &str, machine: Option<&str>, seed: u64) -> Option<String> {
    let mut model = preset(name).unwrap();
    if let Some(m) = machine {
        model = model.with_machine(m).unwrap();
    }
    let slow_node = model.artifacts.slow_node.is_some() || model.levels.len() > 2;
    model.artifacts = Artifacts {
        slow_node: Artifacts::all().slow_node.filter(|_| slow_node),
        ..Artifacts::all()
    };
    let mut options = SimulateOptions::new(&model, 4 << 10, seed);
    options.plan = Some(StagedPlanOptions::default());
    options.topology = TopologySource::Auto;
    options.outputs.features = false;
    let dir = tempfile::tempdir().unwrap();
    let run = RunDir::create(&dir.path().join("run"), false).unwrap();
    Simulation::new(&model, &options)
        .unwrap()
        .write(&run)
        .unwrap();
    let path = dir.path().join("run");
    let (dense, dense_slow) = found(load_candidates(&path).unwrap());
    let (hosts, hosts_slow) = found(load_by_hosts(&path, None).unwrap());
    let what = format!(
        "{name} {} seed {seed}",
        machine.unwrap_or("(the preset's machine)")
    );
    let (a, b) = (dense.levels(), hosts.levels());
    if a.is_empty() && name != "hpclab" {
        return Some(format!("{what}: the dense path found no level"));
    }
    if a.len() != b.len() {
        return Some(format!(
            "{what}: dense {} levels {:?}, by hosts {} {:?}",
            a.len(),
            a.iter().map(|l| l.groups.len()).collect::<Vec<_>>(),
            b.len(),
            b.iter().map(|l| l.groups.len()).collect::<Vec<_>>()
        ));
    }
    let n = dense.ranks();
    for (x, y) in a.iter().zip(b) {
        let ari = adjusted_rand_index(
            &x.labels_of(&(0..n).collect::<Vec<_>>(), n),
            &y.labels_of(&(0..n).collect::<Vec<_>>(), n),
        );
        if ari < 1.0 {
            return Some(format!("{what}: level {} has ARI {ari}", x.name));
        }
    }
    // The slow node's ranks are found both ways (by hosts may find more: ranks slow inside
    // their host).
    if let Some(r) = dense_slow.iter().find(|r| !hosts_slow.contains(r)) {
        return Some(format!(
            "{what}: rank {r} slow on the dense path, not by hosts"
        ));
    }
    None
}

#[test]
fn every_preset_is_clustered_alike_by_hosts() {
    let mut failures = Vec::new();
    for name in lgate_simulate::PRESETS {
        for seed in 1..=3 {
            failures.extend(compare(name, None, seed));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn machines_up_to_4096_ranks_are_clustered_alike_by_hosts() {
    let mut failures = Vec::new();
    for (name, machine) in [
        ("fram", "switch=4,node=4,socket=2,core=16"),
        ("betzy", "node=8,socket=2,core=64"),
        ("betzy", "node=32,socket=2,core=64"),
        ("fram", "switch=2,node=16,socket=2,core=16"),
    ] {
        failures.extend(compare(name, Some(machine), 1));
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
