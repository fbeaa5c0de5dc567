//! The public datasets in `shared/datasets`: `auto` finds every level of every file exactly
//! (adjusted Rand index 1), no level on the flat files, and none of the levels the numbers do
//! not show. A clustering change that breaks one of them is a regression.

use std::path::PathBuf;

use lgate_cluster::{adjusted_rand_index, auto, topology_of, AutoParams};
use serde_json::Value;

fn datasets() -> PathBuf {
    package_dir().join("../../../shared/datasets")
}

fn labels(v: &Value) -> Vec<usize> {
    let list = v.get("labels").unwrap_or(v);
    list.as_array()
        .expect("a list of labels")
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

#[test]
fn auto_recovers_every_level_of_every_dataset() {
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(datasets().join("truth.json"))
            .expect("shared/datasets beside the checkout"),
    )
    .unwrap();
    let mut failures = Vec::new();
    for entry in truth.as_array().unwrap() {
        let file = entry["file"].as_str().unwrap();
        let read = lgate_matrix::read_matrix(&datasets().join(file)).unwrap();
        let n = read.matrix.len();
        assert_eq!(n as u64, entry["n"].as_u64().unwrap(), "{file}");
        let tree = auto(read.matrix.values(), &AutoParams::default());
        let topology = topology_of(&tree, n, None).unwrap();
        let found: Vec<Vec<usize>> = topology.levels().iter().map(|l| l.labels(n)).collect();
        let expected = entry["levels"].as_object().unwrap();
        for (name, v) in expected {
            let truth = labels(v);
            let best = found
                .iter()
                .map(|f| adjusted_rand_index(&truth, f))
                .fold(0.0, f64::max);
            if best < 1.0 {
                failures.push(format!("{file}: level {name} best ARI {best:.3}"));
            }
        }
        if found.len() != expected.len() {
            failures.push(format!(
                "{file}: {} levels found ({:?} groups), {} expected",
                found.len(),
                topology
                    .levels()
                    .iter()
                    .map(|l| l.groups.len())
                    .collect::<Vec<_>>(),
                expected.len()
            ));
        }
        if let Some(unseen) = entry.get("unobservable_levels").and_then(Value::as_object) {
            for (name, v) in unseen {
                let truth = labels(v);
                if found.iter().any(|f| adjusted_rand_index(&truth, f) > 0.99) {
                    failures.push(format!("{file}: claims the unobservable level {name}"));
                }
            }
        }
        for level in topology.levels() {
            assert!(
                level.separation.unwrap() >= AutoParams::default().min_ratio,
                "{file}: {level:?}"
            );
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The package's directory as cargo gives it to this run (a binary left by a checkout elsewhere
/// that shares the target directory still holds that checkout's path), else as built.
fn package_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
        || env!("CARGO_MANIFEST_DIR").into(),
        std::path::PathBuf::from,
    )
}
