//! `lgate-plogp bcast` under mpirun: every broadcast from every root on 2 to 8 ranks, flat and
//! over 2-level topologies, delivers the root's bytes; the benchmark writes a decision table
//! and an Open MPI rules file that `bcast run` and Open MPI accept; bad inputs fail cleanly.
#![cfg(feature = "mpi")]

mod common;

use common::{mpirun, success};
use serde_json::Value;

/// Taken by each test for its whole run: each starts up to 8 ranks on this 2-core machine,
/// and side by side on a busy machine they took minutes.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The lock of [`ONE_AT_A_TIME`], also after another test failed holding it.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Groups of `per` consecutive ranks, in LGate format.
fn two_levels(n: usize, per: usize) -> String {
    let groups: Vec<String> = (0..n)
        .step_by(per)
        .map(|a| format!("  group {{ {}-{} }}\n", a, (a + per).min(n) - 1))
        .collect();
    format!("cluster {{\n{}}}\n", groups.concat())
}

#[test]
fn every_broadcast_delivers_from_every_root_on_2_to_8_ranks() {
    let _turn = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    for n in 2..=8 {
        let flat = success(mpirun(n, &["bcast", "check"], dir.path()));
        assert!(flat.contains("every rank held the root's bytes"), "{flat}");
        let file = dir.path().join(format!("t{n}.lgate"));
        std::fs::write(&file, two_levels(n, if n > 4 { 3 } else { 2 })).unwrap();
        let grouped = success(mpirun(
            n,
            &["bcast", "check", "--topology", file.to_str().unwrap()],
            dir.path(),
        ));
        assert!(grouped.contains(&format!("x {n} roots")), "{grouped}");
    }
}

#[test]
fn bench_writes_a_table_that_run_and_open_mpi_accept() {
    let _turn = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let topology = dir.path().join("t.lgate");
    std::fs::write(&topology, two_levels(4, 2)).unwrap();
    let out = dir.path().join("tuning");
    let table = success(mpirun(
        4,
        &[
            "bcast",
            "bench",
            "--topology",
            topology.to_str().unwrap(),
            "--sizes",
            "0,1000,65537",
            "--algos",
            "binomial,pipeline:8KiB,magpie(flat/binomial)@1,MPI_Bcast",
            "--warmup",
            "3",
            "--rounds",
            "20",
            "--budget",
            "100ms",
            "--out",
            out.to_str().unwrap(),
            "-q",
        ],
        dir.path(),
    ));
    assert!(table.contains("MPI_Bcast_us"), "{table}");
    let tuning: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("bcast-tuning.json")).unwrap())
            .unwrap();
    assert_eq!(tuning["format"], "lgate-bcast-tuning");
    assert_eq!(tuning["ranks"], 4);
    assert_eq!(tuning["ranges"].as_array().unwrap().len(), 3);
    let timings = tuning["timings"].as_array().unwrap();
    assert_eq!(timings.len(), 3 * 4, "{timings:?}");
    assert!(timings.iter().all(|t| t["correct"] == true));
    // The plot of the results.
    let png = dir.path().join("bcast.png");
    success(common::lgate_plogp_in(
        dir.path(),
        &[
            "plot",
            "bcast",
            out.join("bcast-tuning.json").to_str().unwrap(),
            "--output",
            png.to_str().unwrap(),
        ],
    ));
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    // The tuned broadcast runs, and Open MPI takes the rules file.
    let ran = success(mpirun(
        4,
        &[
            "bcast",
            "run",
            "--tuning",
            out.join("bcast-tuning.json").to_str().unwrap(),
            "--size",
            "70000",
            "--rounds",
            "5",
            "--root",
            "3",
        ],
        dir.path(),
    ));
    assert!(ran.contains("5 rounds"), "{ran}");
    let rules = out.join("openmpi-bcast-rules.conf");
    if common::mpi() != common::Mpi::OpenMpi {
        // The rules file is Open MPI's (coll/tuned); other MPIs have no such file.
        common::skip(
            "bcast_mpi: Open MPI taking the rules file",
            "built against another MPI, which reads no coll/tuned rules",
        );
        return;
    }
    let with_rules = common::mpirun_with(
        4,
        &[
            "--mca",
            "coll_tuned_use_dynamic_rules",
            "1",
            "--mca",
            "coll_tuned_dynamic_rules_filename",
            rules.to_str().unwrap(),
        ],
        &[
            "bcast",
            "bench",
            "--sizes",
            "1000,65537",
            "--algos",
            "MPI_Bcast",
            "--warmup",
            "2",
            "--rounds",
            "5",
            "-q",
            "--out",
            dir.path().join("with-rules").to_str().unwrap(),
        ],
        dir.path(),
    );
    success(with_rules);
}

#[test]
fn bad_inputs_stop_every_rank_with_one_message() {
    let _turn = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let missing = mpirun(2, &["bcast", "run", "--tuning", "no-such.json"], dir.path());
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(stderr.contains("no-such.json"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    let topology = dir.path().join("t.lgate");
    std::fs::write(&topology, two_levels(3, 2)).unwrap();
    let wrong = mpirun(
        2,
        &["bcast", "check", "--topology", topology.to_str().unwrap()],
        dir.path(),
    );
    assert!(!wrong.status.success());
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(stderr.contains("--topology"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    let bad_algo = mpirun(2, &["bcast", "bench", "--algos", "tree"], dir.path());
    assert!(!bad_algo.status.success());
    assert!(String::from_utf8_lossy(&bad_algo.stderr).contains("`tree` is not a broadcast"));
}
