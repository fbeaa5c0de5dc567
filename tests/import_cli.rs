//! `lgate-plogp import pairs`: every mmpi `.dat` of the shared datasets becomes a run that
//! `cluster` recovers exactly as it recovers the same data given as a matrix; malformed lists
//! are refused with one line naming the file and the line.

mod common;

use std::path::{Path, PathBuf};

use common::{assert_clean_failure, lgate_plogp_in, success};
use serde_json::Value;

fn datasets() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/datasets")
}

/// The groups of each level of a `cluster` JSON output, coarsest first.
fn levels(json: &str) -> Vec<Vec<Vec<u64>>> {
    let v: Value = serde_json::from_str(json).unwrap();
    v["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            l["groups"]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| {
                    g.as_array()
                        .unwrap()
                        .iter()
                        .map(|r| r.as_u64().unwrap())
                        .collect()
                })
                .collect()
        })
        .collect()
}

fn dat_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            dat_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "dat") {
            out.push(p);
        }
    }
}

#[test]
fn every_mmpi_dat_clusters_as_its_matrix_does() {
    let mut files = Vec::new();
    dat_files(&datasets().join("mmpi"), &mut files);
    files.sort();
    assert_eq!(files.len(), 3, "{files:?}");
    let dir = tempfile::tempdir().unwrap();
    for (k, dat) in files.iter().enumerate() {
        let run = format!("run{k}");
        let out = lgate_plogp_in(
            dir.path(),
            &["import", "pairs", dat.to_str().unwrap(), "--output", &run],
        );
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{said}");
        assert!(said.contains("(mmpi-dat)"), "{said}");
        let meta: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(&run).join("meta.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(meta["status"], "complete");
        assert!(
            meta["ranks"][0]["host"].as_str().unwrap().len() > 3,
            "host names kept"
        );
        let from_run = success(lgate_plogp_in(dir.path(), &["cluster", &run, "--quiet"]));
        let matrix = dat.with_extension("rtt_us.csv");
        let from_matrix = success(lgate_plogp_in(
            dir.path(),
            &["cluster", matrix.to_str().unwrap(), "--quiet"],
        ));
        assert_eq!(levels(&from_run), levels(&from_matrix), "{}", dat.display());
    }
}

#[test]
fn a_csv_pair_list_with_repeats_and_sizes_becomes_a_run() {
    let dir = tempfile::tempdir().unwrap();
    // Two hosts of two ranks, three repeats of each pair at two sizes.
    let mut csv = String::from("i,j,host_i,host_j,size,value\n");
    for size in [0, 1024] {
        for i in 0..4 {
            for j in i + 1..4 {
                let base = if i / 2 == j / 2 { 1.0 } else { 4.0 } + size as f64 / 1024.0;
                for rep in 0..3 {
                    csv.push_str(&format!(
                        "{i},{j},h{},h{},{size},{}\n",
                        i / 2,
                        j / 2,
                        base + 0.01 * rep as f64
                    ));
                }
            }
        }
    }
    std::fs::write(dir.path().join("pairs.csv"), csv).unwrap();
    let out = lgate_plogp_in(dir.path(), &["import", "pairs", "pairs.csv", "-o", "run"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names = common::matrix_names(&dir.path().join("run"));
    assert_eq!(
        names,
        ["imported:0", "spread:0", "imported:1KiB", "spread:1KiB"]
    );
    success(lgate_plogp_in(
        dir.path(),
        &["report", "run", "--output", "report.html"],
    ));
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("An imported run has no host facts"));
    let topology = success(lgate_plogp_in(dir.path(), &["cluster", "run", "--quiet"]));
    assert_eq!(levels(&topology), [vec![vec![0, 1], vec![2, 3]]]);
}

#[test]
fn malformed_and_incomplete_lists_are_refused_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "bad.csv",
            "i,j,value\n0,1,1.0\n0,2,oops\n1,2,1\n",
            "bad.csv:3, column 3: `oops` is not a number",
        ),
        (
            "gap.csv",
            "i,j,value\n0,1,1.0\n0,2,1.0\n",
            "1 of 3 pairs of 3 ranks have no value",
        ),
        (
            "cut.dat",
            "h 000 h 001 1.0 0.1\nh 000 h\n",
            "cut.dat:2: 3 field(s)",
        ),
        ("head.csv", "a,b,c\n0,1,2\n", "the header has no `i` column"),
    ];
    for (file, text, says) in cases {
        std::fs::write(dir.path().join(file), text).unwrap();
        let out = lgate_plogp_in(dir.path(), &["import", "pairs", file, "-o", "run"]);
        assert_clean_failure(&out, says);
        assert!(!dir.path().join("run").exists(), "{file}: nothing written");
    }
    let out = lgate_plogp_in(dir.path(), &["import", "pairs", "missing.csv", "-o", "run"]);
    assert_clean_failure(&out, "missing.csv");
}
