//! Outputs that must not change by accident: a fixed simulated run (its matrices, index and
//! report) and what `cluster`, `score` and `topology convert` make of it and of a fixed matrix
//! file, compared byte for byte with `fixtures/golden/`. A deliberate change regenerates them
//! with `LGATE_UPDATE_FIXTURES=1 cargo test --release --test golden_outputs`, and the diff
//! shows what changed.

mod common;

use std::path::{Path, PathBuf};

use common::{lgate_plogp_in, success};

fn golden_dir() -> PathBuf {
    package_dir().join("fixtures/golden")
}

/// Compares `produced` with the golden file `name`, or replaces the golden file when asked.
fn check(name: &str, produced: &[u8], mismatches: &mut Vec<String>) {
    let path = golden_dir().join(name);
    if std::env::var_os("LGATE_UPDATE_FIXTURES").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, produced).unwrap();
        return;
    }
    match std::fs::read(&path) {
        Ok(expected) if expected == produced => {}
        Ok(_) => mismatches.push(format!("{name} differs from {}", path.display())),
        Err(e) => mismatches.push(format!("{}: {e}", path.display())),
    }
}

fn file(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn a_fixed_run_and_matrix_give_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    success(lgate_plogp_in(
        d,
        &[&common::GOLDEN_SIM[..], &["--out", "sim"]].concat(),
    ));
    let mut mismatches = Vec::new();
    let sim = d.join("sim");
    let index: serde_json::Value =
        serde_json::from_slice(&file(&sim, "matrices/index.json")).unwrap();
    for m in index["matrices"].as_array().unwrap() {
        let name = format!("matrices/{}", m["file"].as_str().unwrap());
        check(&format!("sim/{name}"), &file(&sim, &name), &mut mismatches);
    }
    for name in ["matrices/index.json", "report.json"] {
        check(&format!("sim/{name}"), &file(&sim, name), &mut mismatches);
    }

    let clusterings: &[(&str, &[&str])] = &[
        ("auto", &[]),
        ("auto-latency", &["--matrix", "latency"]),
        ("hdbscan", &["--algo", "hdbscan"]),
        ("kmedoids-4", &["--algo", "kmedoids", "--k", "4"]),
        ("kmedoids", &["--algo", "kmedoids"]),
        ("agglomerative-4", &["--algo", "agglomerative", "--k", "4"]),
        (
            "agglomerative-ward",
            &["--algo", "agglomerative", "--linkage", "ward", "--k", "8"],
        ),
        (
            "components",
            &["--algo", "components", "--threshold", "1.0"],
        ),
        ("dbscan", &["--algo", "dbscan", "--eps", "1.0"]),
        ("ssstree", &["--algo", "ssstree"]),
        ("search-kmedoids", &["--algo", "kmedoids", "--search", "6"]),
        (
            "search-components",
            &["--algo", "components", "--search", "5"],
        ),
        ("search-hdbscan", &["--algo", "hdbscan", "--search", "4"]),
        ("search-ssstree", &["--algo", "ssstree", "--search", "4"]),
        (
            "features-hdbscan",
            &["--space", "features", "--algo", "hdbscan"],
        ),
        ("spectral", &["--algo", "spectral"]),
        ("spectral-4", &["--algo", "spectral", "--k", "4"]),
        ("kmeans", &["--algo", "kmeans"]),
        ("search-spectral", &["--algo", "spectral", "--search", "6"]),
        (
            "features-kmeans",
            &["--space", "features", "--algo", "kmeans"],
        ),
        (
            "features-spectral",
            &["--space", "features", "--algo", "spectral"],
        ),
    ];
    for (name, extra) in clusterings {
        for format in ["json", "lgate", "newick", "slurm"] {
            let out = format!("{name}.{format}");
            let mut args = vec!["cluster", "sim", "--quiet", "--format", format, "--output"];
            args.push(&out);
            args.extend_from_slice(extra);
            success(lgate_plogp_in(d, &args));
            check(&format!("cluster/{out}"), &file(d, &out), &mut mismatches);
        }
    }
    // The schedulers' other formats, of the default clustering.
    for format in [
        "slurm-block",
        "slurm-yaml",
        "k8s-labels",
        "kueue-topology",
        "kai-topology",
        "volcano-hypernodes",
        "topograph-model",
    ] {
        let out = format!("auto.{format}");
        success(lgate_plogp_in(
            d,
            &[
                "cluster", "sim", "--quiet", "--format", format, "--output", &out,
            ],
        ));
        check(&format!("cluster/{out}"), &file(d, &out), &mut mismatches);
    }
    // A bare matrix file (no run directory): the CSV reader's path.
    std::fs::copy(sim.join("matrices/t_1024.csv"), d.join("t.csv")).unwrap();
    let on_csv = [
        "auto",
        "hdbscan",
        "kmedoids-4",
        "agglomerative-4",
        "search-kmedoids",
        "spectral",
        "kmeans",
    ];
    for (name, extra) in clusterings.iter().filter(|(n, _)| on_csv.contains(n)) {
        let out = format!("csv-{name}.json");
        let mut args = vec!["cluster", "t.csv", "--quiet", "--output", &out];
        args.extend_from_slice(extra);
        success(lgate_plogp_in(d, &args));
        check(&format!("cluster/{out}"), &file(d, &out), &mut mismatches);
    }
    let score = success(lgate_plogp_in(
        d,
        &[
            "score",
            "--topology",
            "auto.json",
            "--truth",
            "sim",
            "--json",
        ],
    ));
    check("score/auto.json", score.as_bytes(), &mut mismatches);
    let score = success(lgate_plogp_in(
        d,
        &["score", "--topology", "hdbscan.json", "--truth", "sim"],
    ));
    check("score/hdbscan.txt", score.as_bytes(), &mut mismatches);
    for to in ["lgate", "json", "newick"] {
        let text = success(lgate_plogp_in(
            d,
            &["topology", "convert", "auto.json", "--to", to],
        ));
        check(
            &format!("convert/auto.{to}"),
            text.as_bytes(),
            &mut mismatches,
        );
    }
    assert!(
        mismatches.is_empty(),
        "outputs changed (if on purpose, regenerate with LGATE_UPDATE_FIXTURES=1):\n{}",
        mismatches.join("\n")
    );
}

/// Every file of the run directory `run` but meta.json (it holds the time and the machine),
/// compared under `prefix/`.
fn check_run(run: &Path, prefix: &str, mismatches: &mut Vec<String>) {
    let mut files = Vec::new();
    let mut stack = vec![run.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(!files.is_empty(), "{} holds no files", run.display());
    for path in files {
        let name = path
            .strip_prefix(run)
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        if name == "meta.json" {
            continue;
        }
        check(&format!("{prefix}/{name}"), &file(run, &name), mismatches);
    }
}

#[test]
fn a_staged_run_and_imports_give_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut mismatches = Vec::new();
    // The staged plan (the default): screening, filled matrices, mask, interference, health.
    success(lgate_plogp_in(
        d,
        &[
            "simulate",
            "--preset",
            "fram",
            "--machine",
            "switch=2,node=2,socket=2,core=2",
            "--max-size",
            "4KiB",
            "--seed",
            "7",
            "--slow-host",
            "1=1.5",
            "--out",
            "staged",
        ],
    ));
    check_run(&d.join("staged"), "staged", &mut mismatches);
    for format in ["json", "lgate"] {
        let out = format!("staged-auto.{format}");
        success(lgate_plogp_in(
            d,
            &[
                "cluster", "staged", "--quiet", "--format", format, "--output", &out,
            ],
        ));
        check(&format!("cluster/{out}"), &file(d, &out), &mut mismatches);
    }
    // A pair list with hosts, sizes and repeats.
    let mut csv = String::from("i,j,host_i,host_j,size,value\n");
    for size in [0, 1024] {
        for i in 0..6 {
            for j in i + 1..6 {
                let base = if i / 3 == j / 3 { 1.0 } else { 4.0 } + size as f64 / 1024.0;
                for rep in 0..3 {
                    let value = base + 0.01 * ((i * 7 + j * 3 + rep) % 5) as f64;
                    csv.push_str(&format!("{i},{j},h{},h{},{size},{value}\n", i / 3, j / 3));
                }
            }
        }
    }
    std::fs::write(d.join("pairs.csv"), csv).unwrap();
    success(lgate_plogp_in(
        d,
        &["import", "pairs", "pairs.csv", "-o", "pairs"],
    ));
    check_run(&d.join("pairs"), "pairs", &mut mismatches);
    // mpiGraph's output.
    std::fs::copy(
        package_dir().join("fuzz/seeds/mpigraph_output/four-ranks.out"),
        d.join("mg.out"),
    )
    .unwrap();
    success(lgate_plogp_in(
        d,
        &["import", "mpigraph", "mg.out", "-o", "mpigraph"],
    ));
    check_run(&d.join("mpigraph"), "mpigraph", &mut mismatches);
    assert!(
        mismatches.is_empty(),
        "outputs changed (if on purpose, regenerate with LGATE_UPDATE_FIXTURES=1):\n{}",
        mismatches.join("\n")
    );
}

/// The package's directory as cargo gives it to this run (a binary left by a checkout elsewhere
/// that shares the target directory still holds that checkout's path), else as built.
fn package_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
        || env!("CARGO_MANIFEST_DIR").into(),
        std::path::PathBuf::from,
    )
}
