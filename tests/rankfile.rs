//! `topology rankfile` against Open MPI: a job launched with the rankfile runs where the file
//! says. (Rankfiles are Open MPI's; MPICH's hydra has none, so under MPICH this checks the
//! file alone.)

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{assert_clean_failure, lgate_plogp_in, success};

/// `mpirun OPTIONS -np 2 lgate-plogp measure` of one pair, into `out`.
fn measure(dir: &Path, options: &[&str], out: &str) -> Output {
    let (launcher, bind): (String, &[&str]) = match common::mpi() {
        common::Mpi::OpenMpi => ("mpirun".into(), &["--bind-to", "core"]),
        common::Mpi::Mpich => (common::hydra(), &["-bind-to", "core"]),
    };
    let bind: &[&str] = if options.is_empty() { bind } else { &[] };
    Command::new(&launcher)
        .args(bind)
        .args(options)
        .args(["-np", "2", env!("CARGO_BIN_EXE_lgate-plogp")])
        .args([
            "measure", "--plan", "full", "--test", "pingpong", "--sizes", "0", "--reps", "4",
            "--output", out, "--quiet",
        ])
        .current_dir(dir)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("the launcher runs")
}

/// Each rank's CPU in a run's meta.json.
fn cpus(run: &Path) -> Vec<u64> {
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("meta.json")).unwrap()).unwrap();
    meta["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cpu"].as_u64().unwrap())
        .collect()
}

#[test]
fn ranks_land_where_the_rankfile_puts_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = measure(d, &[], "run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let before = cpus(&d.join("run"));
    assert_ne!(before[0], before[1], "bound ranks have a CPU each");
    // Rank 1's group first: the next job's rank 0 goes where rank 1 ran, and back.
    std::fs::write(
        d.join("swap.lgate"),
        "cluster { group { 1 } group { 0 } }\n",
    )
    .unwrap();
    let text = success(lgate_plogp_in(
        d,
        &[
            "topology",
            "rankfile",
            "swap.lgate",
            "--run",
            "run",
            "-o",
            "rf.txt",
        ],
    ));
    assert!(text.is_empty(), "the file, not stdout");
    let file = std::fs::read_to_string(d.join("rf.txt")).unwrap();
    assert!(file.contains("rank 0="), "{file}");
    assert!(file.contains(&format!("slot={}\n", before[1])), "{file}");

    if common::mpi() == common::Mpi::OpenMpi {
        let out = measure(
            d,
            &["--mca", "rmaps_rank_file_physical", "1", "-rf", "rf.txt"],
            "run2",
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(cpus(&d.join("run2")), [before[1], before[0]], "{file}");
    }

    // A topology of another job, and one naming hosts the run does not know.
    std::fs::write(
        d.join("three.lgate"),
        "cluster { group { 0-1 } group { 2 } }\n",
    )
    .unwrap();
    assert_clean_failure(
        &lgate_plogp_in(d, &["topology", "rankfile", "three.lgate", "--run", "run"]),
        "three.lgate",
    );
    std::fs::write(
        d.join("elsewhere.json"),
        r#"{"format": "lgate-plogp-topology", "version": 1, "ranks": 2,
            "tree": {"children": [{"ranks": [0]}, {"ranks": [1]}]},
            "labels": ["nowhere-1", "nowhere-2"]}"#,
    )
    .unwrap();
    assert_clean_failure(
        &lgate_plogp_in(
            d,
            &["topology", "rankfile", "elsewhere.json", "--run", "run"],
        ),
        "is on host nowhere-1",
    );
}
