//! `cluster --format hwloc-distances` against Debian's hwloc: the file it writes is added to a
//! machine's XML with `hwloc-annotate` and read back with `lstopo --distances` equal to the
//! run's matrix, CPU by CPU (scripts/setup installs hwloc).

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use common::{assert_clean_failure, lgate_plogp_in, success};

/// Runs an hwloc tool in `dir`; its standard output.
fn hwloc(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program} runs (scripts/setup installs hwloc): {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The distances `lstopo -i XML --distances -p` shows: value by (OS index, OS index).
fn read_back(dir: &Path, xml: &str) -> HashMap<(usize, usize), u64> {
    let text = hwloc(dir, "lstopo", &["-i", xml, "--distances", "-p"]);
    let mut lines = text
        .lines()
        .skip_while(|l| !l.contains("latency matrix (name lgate-plogp"));
    lines.next().expect("our distances are in the XML");
    let header: Vec<usize> = lines
        .next()
        .expect("a header row")
        .split_whitespace()
        .skip(1)
        .map(|c| c.parse().unwrap())
        .collect();
    let mut out = HashMap::new();
    for line in lines.take(header.len()) {
        let mut cells = line.split_whitespace().map(|c| c.parse::<u64>().unwrap());
        let row = cells.next().unwrap() as usize;
        for (&column, value) in header.iter().zip(cells) {
            out.insert((row, column), value);
        }
    }
    out
}

/// The run's matrix in nanoseconds by pair of CPUs, from its CSV and meta.json.
fn matrix_by_cpu(run: &Path, file: &str) -> HashMap<(usize, usize), u64> {
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("meta.json")).unwrap()).unwrap();
    let cpu: Vec<usize> = meta["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cpu"].as_u64().unwrap() as usize)
        .collect();
    let csv = std::fs::read_to_string(run.join("matrices").join(file)).unwrap();
    let mut out = HashMap::new();
    for (i, line) in csv.lines().skip(1).enumerate() {
        for (j, cell) in line.split(',').skip(1).enumerate() {
            let us: f64 = cell.parse().unwrap();
            let ns = if i == j { 0.0 } else { us * 1000.0 };
            out.insert((cpu[i], cpu[j]), ns.round() as u64);
        }
    }
    out
}

/// Loads `d.txt` into `xml` with hwloc-annotate and checks that lstopo reads back the run's matrix.
fn assert_loads_as(d: &Path, xml: &str, run: &str, matrix: &str) {
    hwloc(
        d,
        "hwloc-annotate",
        &[xml, "out.xml", "root", "distances", "d.txt"],
    );
    assert_eq!(read_back(d, "out.xml"), matrix_by_cpu(&d.join(run), matrix));
}

#[test]
fn a_simulated_host_with_smt_siblings_loads_pu_by_pu() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // One host of 2 sockets x 2 cores: the simulation puts ranks 0-3 on CPUs 0, 2, 1, 3.
    success(lgate_plogp_in(
        d,
        &[
            "simulate",
            "--preset",
            "fram",
            "--machine",
            "node=1,socket=2,core=2",
            "--plan",
            "full",
            "--max-size",
            "1KiB",
            "--output",
            "sim",
            "--quiet",
        ],
    ));
    // A machine whose logical order is not the OS order: each core's PUs are 0,2 and 1,3.
    hwloc(
        d,
        "lstopo",
        &[
            "--input",
            "pack:1 core:2 pu:2(indexes=0,2,1,3)",
            "--of",
            "xml",
            "m.xml",
        ],
    );
    success(lgate_plogp_in(
        d,
        &[
            "cluster",
            "sim",
            "--matrix",
            "t:0",
            "--format",
            "hwloc-distances",
            "--hwloc-xml",
            "m.xml",
            "--output",
            "d.txt",
        ],
    ));
    assert_loads_as(d, "m.xml", "sim", "t_0.csv");

    // Bad inputs: one line each, nothing written.
    std::fs::write(d.join("empty.xml"), "<topology/>").unwrap();
    for (args, fragment) in [
        (
            vec![
                "cluster",
                "sim",
                "--format",
                "hwloc-distances",
                "-o",
                "x.txt",
            ],
            "needs --hwloc-xml",
        ),
        (
            vec![
                "cluster",
                "sim",
                "--format",
                "hwloc-distances",
                "--hwloc-xml",
                "empty.xml",
                "-o",
                "x.txt",
            ],
            "lists no PU",
        ),
        (
            vec![
                "cluster",
                "sim",
                "--format",
                "hwloc-distances",
                "--hwloc-xml",
                "m.xml",
                "--host",
                "elsewhere",
                "-o",
                "x.txt",
            ],
            "no rank ran on host elsewhere",
        ),
        (
            vec!["cluster", "sim", "--hwloc-xml", "m.xml", "-o", "x.txt"],
            "go with --format hwloc-distances",
        ),
    ] {
        assert_clean_failure(&lgate_plogp_in(d, &args), fragment);
    }
    assert!(!d.join("x.txt").exists());
}

#[test]
fn a_measured_run_annotates_this_machine() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Two ranks bound to a core each, so that each has a PU of its own.
    let (launcher, bind): (String, &[&str]) = match common::mpi() {
        common::Mpi::OpenMpi => ("mpirun".into(), &["--bind-to", "core"]),
        common::Mpi::Mpich => (common::hydra(), &["-bind-to", "core"]),
    };
    let out = Command::new(&launcher)
        .args(bind)
        .args(["-np", "2", env!("CARGO_BIN_EXE_lgate-plogp")])
        .args([
            "measure", "--plan", "full", "--test", "pingpong", "--sizes", "0", "--reps", "8",
            "--output", "run", "--quiet",
        ])
        .current_dir(d)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("the launcher runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    hwloc(d, "lstopo", &["--of", "xml", "machine.xml"]);
    success(lgate_plogp_in(
        d,
        &[
            "cluster",
            "run",
            "--format",
            "hwloc-distances",
            "--hwloc-xml",
            "machine.xml",
            "--output",
            "d.txt",
        ],
    ));
    assert_loads_as(d, "machine.xml", "run", "rtt_0.csv");
}
