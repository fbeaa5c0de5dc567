//! `lgate-plogp import`: every mmpi `.dat` of the shared datasets, and the same pairs as a
//! Parquet pair list, become runs that `cluster` recovers exactly as it recovers the same data
//! given as a matrix; mpiGraph's output becomes a run with its hosts; malformed lists and
//! outputs are refused with one line naming the file and the line. (mpiGraph on the emulated
//! cluster, imported and clustered: tests/testbed.rs.)

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

/// The pairs of a run's default matrix as a Parquet pair list (`i`, `j`, `host_i`, `host_j`,
/// `value`), each pair once in each order so that repeats are exercised.
fn parquet_pairs(run: &Path, out: &Path) {
    use lgate_derive::table::{Column, Table};
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("matrices/index.json")).unwrap())
            .unwrap();
    let file = index["matrices"][0]["file"].as_str().unwrap();
    let matrix = lgate_matrix::read_matrix(&run.join("matrices").join(file)).unwrap();
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("meta.json")).unwrap()).unwrap();
    let host = |r: usize| meta["ranks"][r]["host"].as_str().unwrap().to_string();
    let v = matrix.matrix.values();
    let n = v.nrows();
    let (mut i, mut j, mut hi, mut hj, mut value) = (vec![], vec![], vec![], vec![], vec![]);
    for a in 0..n {
        for b in 0..n {
            if a != b {
                i.push(a as i64);
                j.push(b as i32);
                hi.push(host(a));
                hj.push(host(b));
                value.push(v[[a, b]]);
            }
        }
    }
    let table = Table::new()
        .with("I", Column::Int64(i))
        .with("j", Column::Int32(j))
        .with("host_i", Column::Text(hi))
        .with("host_j", Column::Text(hj))
        .with("value", Column::Float64(value));
    std::fs::write(out, table.to_parquet().unwrap()).unwrap();
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
        // `sizes` said "a run written with --no-table", a flag never given: an import has no
        // PLogP curves, and says so.
        let out = lgate_plogp_in(dir.path(), &["sizes", &run]);
        assert!(!out.status.success());
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains("only a PLogP run writes them"), "{said}");
        assert!(!said.contains("--no-table"), "{said}");
        let from_run = success(lgate_plogp_in(dir.path(), &["cluster", &run, "--quiet"]));
        let matrix = dat.with_extension("rtt_us.csv");
        let from_matrix = success(lgate_plogp_in(
            dir.path(),
            &["cluster", matrix.to_str().unwrap(), "--quiet"],
        ));
        assert_eq!(levels(&from_run), levels(&from_matrix), "{}", dat.display());
        // The same pairs as Parquet: the same run, the same topology.
        let parquet = dir.path().join(format!("pairs{k}.parquet"));
        parquet_pairs(&dir.path().join(&run), &parquet);
        let from_parquet = format!("parquet{k}");
        let out = lgate_plogp_in(
            dir.path(),
            &[
                "import",
                "pairs",
                parquet.to_str().unwrap(),
                "--output",
                &from_parquet,
            ],
        );
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{said}");
        assert!(said.contains("(parquet)"), "{said}");
        let again = success(lgate_plogp_in(
            dir.path(),
            &["cluster", &from_parquet, "--quiet"],
        ));
        assert_eq!(levels(&again), levels(&from_matrix), "{}", dat.display());
        let meta = |r: &str| -> Value {
            serde_json::from_str(
                &std::fs::read_to_string(dir.path().join(r).join("meta.json")).unwrap(),
            )
            .unwrap()
        };
        assert_eq!(meta(&run)["ranks"], meta(&from_parquet)["ranks"]);
    }
}

#[test]
fn parquet_pair_lists_are_checked_like_csv_ones() {
    use lgate_derive::table::{Column, Table};
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, table: Table| {
        std::fs::write(dir.path().join(name), table.to_parquet().unwrap()).unwrap();
    };
    // Pair 0-2 missing.
    write(
        "gap.parquet",
        Table::new()
            .with("i", Column::Int32(vec![0, 1]))
            .with("j", Column::Int32(vec![1, 2]))
            .with("value", Column::Float64(vec![1.0, 2.0])),
    );
    // A negative distance on the second row.
    write(
        "negative.parquet",
        Table::new()
            .with("i", Column::Int32(vec![0, 0, 1]))
            .with("j", Column::Int32(vec![1, 2, 2]))
            .with("value", Column::Float64(vec![1.0, -2.0, 2.0])),
    );
    // No value column.
    write(
        "columns.parquet",
        Table::new()
            .with("i", Column::Int32(vec![0]))
            .with("j", Column::Int32(vec![1]))
            .with("latency", Column::Float64(vec![1.0])),
    );
    // A rank that is not a whole number.
    write(
        "rank.parquet",
        Table::new()
            .with("i", Column::Float64(vec![0.5]))
            .with("j", Column::Int32(vec![1]))
            .with("value", Column::Float64(vec![1.0])),
    );
    let mut truncated = Table::new()
        .with("i", Column::Int32(vec![0]))
        .with("j", Column::Int32(vec![1]))
        .with("value", Column::Float64(vec![1.0]))
        .to_parquet()
        .unwrap();
    truncated.truncate(truncated.len() / 2);
    std::fs::write(dir.path().join("cut.parquet"), truncated).unwrap();
    for (file, says) in [
        (
            "gap.parquet",
            "1 of 3 pairs of 3 ranks have no value (first: 0-2)",
        ),
        (
            "negative.parquet",
            "negative.parquet:2, column 3: -2 is not a distance",
        ),
        ("columns.parquet", "no `value` column"),
        (
            "rank.parquet",
            "rank.parquet:1, column 1: `0.5` is not a number",
        ),
        ("cut.parquet", "cut.parquet: not a readable Parquet file"),
    ] {
        let out = lgate_plogp_in(dir.path(), &["import", "pairs", file, "-o", "run"]);
        assert_clean_failure(&out, says);
        assert!(!dir.path().join("run").exists(), "{file}: nothing written");
    }
}

#[test]
fn an_mpigraph_output_becomes_a_run_and_broken_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    // Two hosts of two ranks.
    // mpiGraph 1.5's output for 4 ranks on one host (`mpirun -np 4 mpiGraph 65536 10 10`).
    let four = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/mpigraph_output/four-ranks.out"),
    )
    .unwrap();
    let text = four
        .replace("vm:2", "b:2")
        .replace("vm:3", "b:3")
        .replace("vm:", "a:");
    std::fs::write(dir.path().join("mg.out"), &text).unwrap();
    let out = lgate_plogp_in(dir.path(), &["import", "mpigraph", "mg.out", "-o", "run"]);
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    assert!(said.contains("4 ranks on 2 host(s)"), "{said}");
    assert_eq!(
        common::matrix_names(&dir.path().join("run")),
        ["imported:64KiB", "recv:64KiB", "send:64KiB"]
    );
    // The cell as written (the matrix readers average an asymmetric matrix).
    let cell = |name: &str, i: usize, j: usize| -> f64 {
        let text = std::fs::read_to_string(dir.path().join("run/matrices").join(name)).unwrap();
        let row = text.lines().nth(i + 1).unwrap();
        row.split(',').nth(j + 1).unwrap().parse().unwrap()
    };
    // 64 KiB at 6766.566 MB/s (rank 0 from 1) and 4150.684 (rank 1 from 0): the mean
    // bandwidth's time, and each direction's own.
    let us = |mb: f64| 65536.0 / 1048576.0 / mb * 1e6;
    let d = cell("imported_65536.csv", 0, 1);
    assert!((d - us((6766.566 + 4150.684) / 2.0)).abs() < 1e-3, "{d}");
    assert_eq!(cell("imported_65536.csv", 1, 0), d);
    assert!((cell("recv_65536.csv", 1, 0) - us(4150.684)).abs() < 1e-3);
    assert!((cell("recv_65536.csv", 0, 1) - us(6766.566)).abs() < 1e-3);
    assert!((cell("send_65536.csv", 0, 3) - us(6768.618)).abs() < 1e-3);
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run/meta.json")).unwrap())
            .unwrap();
    assert_eq!(meta["ranks"][2]["host"], "b");
    assert_eq!(meta["test"]["parameters"]["window"], 10);
    // The other tools read it as a run: report, plot, the hosts' topology for Slurm.
    success(lgate_plogp_in(
        dir.path(),
        &["report", "run", "-o", "r.html"],
    ));
    success(lgate_plogp_in(
        dir.path(),
        &[
            "cluster",
            "run",
            "--format",
            "slurm",
            "--quiet",
            "-o",
            "topo.conf",
        ],
    ));
    // `--from send` makes the default distance from the Send table.
    success(lgate_plogp_in(
        dir.path(),
        &[
            "import", "mpigraph", "mg.out", "-o", "run", "--force", "--from", "send",
        ],
    ));
    let d = cell("imported_65536.csv", 0, 1);
    assert!((d - us((2719.898 + 6682.591) / 2.0)).abs() < 1e-3, "{d}");

    let cut: String = text.lines().take(18).collect::<Vec<_>>().join("\n");
    for (file, content, says) in [
        (
            "cut.out",
            cut.as_str(),
            "cut.out:18: the Send table has 3 of 4 rows",
        ),
        (
            "nan.out",
            &text.replace("5393.697", "nan") as &str,
            "nan.out:25, column 4: NaN is not a bandwidth",
        ),
        (
            "pairs.out",
            "i,j,value\n0,1,1\n",
            "pairs.out:1: not mpiGraph's output",
        ),
    ] {
        std::fs::write(dir.path().join(file), content).unwrap();
        let out = lgate_plogp_in(dir.path(), &["import", "mpigraph", file, "-o", "bad"]);
        assert_clean_failure(&out, says);
        assert!(!dir.path().join("bad").exists(), "{file}: nothing written");
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
