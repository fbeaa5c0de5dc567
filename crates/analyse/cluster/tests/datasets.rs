//! The public datasets in `shared/datasets`: `auto` finds every level of every file exactly
//! (adjusted Rand index 1), no level on the flat files, and none of the levels the numbers do
//! not show. A clustering change that breaks one of them is a regression.

use std::path::PathBuf;

use lgate_cluster::{adjusted_rand_index, auto, topology_of, AutoParams};
use serde_json::Value;

fn datasets() -> PathBuf {
    package_dir().join("../../../../shared/datasets")
}

/// The datasets' truth.json: one entry per file.
fn truth() -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(datasets().join("truth.json"))
            .expect("shared/datasets beside the checkout"),
    )
    .unwrap()
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
    let truth = truth();
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

/// A part of a real machine: the logical CPUs `cpus` of the file `file` (`n` CPUs), with the
/// levels they hold (name, one label per CPU taken).
struct Part {
    name: &'static str,
    file: &'static str,
    cpus: Vec<usize>,
    levels: Vec<(&'static str, Vec<usize>)>,
}

/// Machines of other shapes made of the real measurements: fewer cores per CCX, a CCD cut
/// short, cores without their SMT sibling beside cores with one (as a hybrid part has them),
/// sockets of unequal size. Each keeps the real numbers of the pairs it holds.
fn parts() -> Vec<Part> {
    let threads = |cores: &[usize], half: usize| -> Vec<usize> {
        cores
            .iter()
            .copied()
            .chain(cores.iter().map(|c| c + half))
            .collect()
    };
    let per_core = |cores: &[usize], f: &dyn Fn(usize) -> usize| -> Vec<usize> {
        cores.iter().chain(cores).map(|&c| f(c)).collect()
    };
    // 12-core parts of four 3-core CCXs: the first 3 cores of each of the first four CCXs of
    // the EPYC 7742 (Zen 2) and of the 1950X (Zen 1, two dies).
    let zen2: Vec<usize> = (0..4).flat_map(|x| x * 4..x * 4 + 3).collect();
    let zen1 = zen2.clone();
    // A Zen 3 part of one 8-core CCD and one of 3 cores (the 5950X's).
    let zen3: Vec<usize> = (0..11).collect();
    // Broadwell: 8 cores with both threads, 6 cores with one on socket 0 and 6 on socket 1.
    let p: Vec<usize> = (0..8).collect();
    let hybrid: Vec<usize> = threads(&p, 28).into_iter().chain(8..20).collect();
    let hybrid_smt: Vec<usize> = (0..16).map(|i| i % 8).chain(8..20).collect();
    let hybrid_socket: Vec<usize> = (0..28).map(|i| usize::from(i >= 22)).collect();
    let one_socket: Vec<usize> = threads(&p, 28).into_iter().chain(8..14).collect();
    vec![
        Part {
            name: "Zen 2, 4 CCXs of 3 cores",
            file: "core-to-core/dual-amd-epyc-7742.csv",
            cpus: threads(&zen2, 128),
            levels: vec![
                ("smt", per_core(&zen2, &|c| c)),
                ("ccx", per_core(&zen2, &|c| c / 4)),
            ],
        },
        Part {
            name: "Zen 1, 2 dies of 2 CCXs of 3 cores",
            file: "core-to-core/amd-threadripper-1950x.csv",
            cpus: threads(&zen1, 16),
            levels: vec![
                ("smt", per_core(&zen1, &|c| c)),
                ("ccx", per_core(&zen1, &|c| c / 4)),
                ("die", per_core(&zen1, &|c| c / 8)),
            ],
        },
        Part {
            name: "Zen 3, CCDs of 8 and 3 cores",
            file: "core-to-core/amd-ryzen9-5950x.csv",
            cpus: threads(&zen3, 16),
            levels: vec![
                ("smt", per_core(&zen3, &|c| c)),
                ("ccd", per_core(&zen3, &|c| c / 8)),
            ],
        },
        Part {
            name: "Broadwell, 8 cores of two threads and 6 of one, one socket",
            file: "core-to-core/dual-intel-xeon-e5-2680v4.csv",
            cpus: one_socket,
            levels: vec![("smt", (0..16).map(|i| i % 8).chain(8..14).collect())],
        },
        Part {
            name: "Broadwell, sockets of 22 and 6 threads",
            file: "core-to-core/dual-intel-xeon-e5-2680v4.csv",
            cpus: hybrid,
            levels: vec![("smt", hybrid_smt), ("socket", hybrid_socket)],
        },
    ]
}

#[test]
fn auto_recovers_every_level_of_parts_of_real_machines() {
    let mut failures = Vec::new();
    for part in parts() {
        let read = lgate_matrix::read_matrix(&datasets().join(part.file)).unwrap();
        let all = read.matrix.values();
        let n = part.cpus.len();
        let d = ndarray::Array2::from_shape_fn((n, n), |(i, j)| all[[part.cpus[i], part.cpus[j]]]);
        let tree = auto(&d, &AutoParams::default());
        let topology = topology_of(&tree, n, None).unwrap();
        let found: Vec<Vec<usize>> = topology.levels().iter().map(|l| l.labels(n)).collect();
        for (level, truth) in &part.levels {
            let best = found
                .iter()
                .map(|f| adjusted_rand_index(truth, f))
                .fold(0.0, f64::max);
            if best < 1.0 {
                failures.push(format!("{}: level {level} best ARI {best:.3}", part.name));
            }
        }
        if found.len() != part.levels.len() {
            failures.push(format!(
                "{}: {} levels found, {} expected",
                part.name,
                found.len(),
                part.levels.len()
            ));
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

/// The top-level partition of a tree, one label per item.
fn top_level(tree: &lgate_cluster::Tree, n: usize) -> Vec<usize> {
    let mut labels = vec![0; n];
    if let lgate_cluster::Tree::Node { children, .. } = tree {
        for (g, c) in children.iter().enumerate() {
            for r in c.ranks() {
                labels[r] = g;
            }
        }
    }
    labels
}

/// With the true k of each level, spectral clustering recovers every level k-medoids recovers
/// with the same k (adjusted Rand index 1), and K-means of the rows every one but the EPYC's
/// SMT siblings (the README explains why); K-means alone also finds the
/// 1950X's dies and the EPYC's sockets, which neither of the others does.
#[test]
fn spectral_and_kmeans_with_the_true_k_recover_what_kmedoids_recovers() {
    use lgate_cluster::methods::{KmedoidsParams, Method};
    use lgate_cluster::spectral::SpectralParams;
    let truth = truth();
    let mut failures = Vec::new();
    let mut table = String::new();
    for entry in truth.as_array().unwrap() {
        let file = entry["file"].as_str().unwrap();
        let read = lgate_matrix::read_matrix(&datasets().join(file)).unwrap();
        let d = read.matrix.values();
        let n = d.nrows();
        for (name, v) in entry["levels"].as_object().unwrap() {
            let truth = labels(v);
            let k = truth.iter().max().unwrap() + 1;
            let with_k = SpectralParams::new().k(Some(k));
            let ari = |method: Method| {
                let tree = method.checked().unwrap().fit(d);
                adjusted_rand_index(&truth, &top_level(&tree, n))
            };
            let (medoids, spectral, kmeans) = (
                ari(Method::Kmedoids(KmedoidsParams {
                    k: Some(k),
                    ..KmedoidsParams::default()
                })),
                ari(Method::Spectral(with_k.clone())),
                ari(Method::Kmeans(with_k)),
            );
            table.push_str(&format!(
                "{file} {name} k={k}: kmedoids {medoids:.3} spectral {spectral:.3} kmeans {kmeans:.3}\n"
            ));
            // K-means of the rows compares each rank's whole profile: two SMT siblings differ
            // from two cores of one CCX in 4 of 256 entries, under the noise of the other 252,
            // and 128 groups of two are many local minima (README, spectral and kmeans).
            let profile_blind = name.starts_with("core(SMT") && file.contains("epyc-7742");
            for (algo, ari) in [("spectral", spectral), ("kmeans", kmeans)] {
                if algo == "kmeans" && profile_blind {
                    continue;
                }
                if medoids >= 1.0 && ari < 1.0 {
                    failures.push(format!("{file}: {name} (k = {k}): {algo} ARI {ari:.3}"));
                }
            }
        }
    }
    eprint!("{table}");
    for (file, level) in [
        ("amd-threadripper-1950x", "die"),
        ("dual-amd-epyc-7742", "socket"),
    ] {
        let line = table
            .lines()
            .find(|l| l.contains(file) && l.contains(level))
            .unwrap();
        assert!(line.ends_with("kmeans 1.000"), "{line}");
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Without k, spectral clustering reads every level from the eigengaps but the two that only
/// rows compared whole show (the 1950X's dies, the EPYC's sockets; README), claims no level the
/// numbers do not show, and makes one group of the flat files.
#[test]
fn spectral_without_k_finds_the_levels_from_the_eigengaps() {
    use lgate_cluster::methods::Method;
    let truth = truth();
    let mut failures = Vec::new();
    for entry in truth.as_array().unwrap() {
        let file = entry["file"].as_str().unwrap();
        let read = lgate_matrix::read_matrix(&datasets().join(file)).unwrap();
        let n = read.matrix.len();
        let tree =
            (Method::named("spectral").unwrap().checked().unwrap()).fit(read.matrix.values());
        let topology = topology_of(&tree, n, None).unwrap();
        let found: Vec<Vec<usize>> = topology.levels().iter().map(|l| l.labels(n)).collect();
        let expected = entry["levels"].as_object().unwrap();
        if expected.is_empty() && !found.is_empty() {
            failures.push(format!("{file}: flat, but {} levels found", found.len()));
        }
        for (name, v) in expected {
            let rows_only = (file.contains("1950x") && name == "die")
                || (file.contains("epyc-7742") && name == "socket");
            let best = found
                .iter()
                .map(|f| adjusted_rand_index(&labels(v), f))
                .fold(0.0, f64::max);
            if best < 1.0 && !rows_only {
                failures.push(format!("{file}: level {name} best ARI {best:.3}"));
            }
        }
        if let Some(unseen) = entry.get("unobservable_levels").and_then(Value::as_object) {
            for (name, v) in unseen {
                if found
                    .iter()
                    .any(|f| adjusted_rand_index(&labels(v), f) > 0.99)
                {
                    failures.push(format!("{file}: claims the unobservable level {name}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
