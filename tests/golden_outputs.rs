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
        &[
            "simulate",
            "--plan",
            "full",
            "--preset",
            "fram",
            "--machine",
            "switch=2,node=2,socket=2,core=2",
            "--max-size",
            "4KiB",
            "--seed",
            "7",
            "--out",
            "sim",
        ],
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

/// The package's directory as cargo gives it to this run (a binary left by a checkout elsewhere
/// that shares the target directory still holds that checkout's path), else as built.
fn package_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
        || env!("CARGO_MANIFEST_DIR").into(),
        std::path::PathBuf::from,
    )
}
