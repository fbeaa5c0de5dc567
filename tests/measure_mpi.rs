//! End-to-end tests of `lgate-plogp measure` under `mpirun --oversubscribe`.
#![cfg(feature = "mpi")]

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use common::{lgate_plogp_in, mpirun, success};

use serde_json::Value;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The run's journal, as the tool reads it, each entry as its JSON line says it.
fn journal(run: &Path) -> Vec<Value> {
    let read = lgate_rundir::RunDir::open(run)
        .unwrap()
        .read_journal()
        .unwrap();
    (read.entries.iter())
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

fn pairs(entries: &[Value]) -> Vec<(u64, u64, u64)> {
    let mut v: Vec<_> = entries
        .iter()
        .map(|e| {
            (
                e["sweep"].as_u64().unwrap(),
                e["i"].as_u64().unwrap(),
                e["j"].as_u64().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

fn all_pairs(n: u64) -> Vec<(u64, u64, u64)> {
    (0..n)
        .flat_map(|i| (i + 1..n).map(move |j| (0, i, j)))
        .collect()
}

/// meta.json's one host entry holds what this machine's /proc and /sys say: the CPU model,
/// the CPU count, every cache level with its size, and the frequency policy (unknown where
/// cpufreq is not exposed, as in most virtual machines).
fn check_host_facts(meta: &Value) {
    let hosts = meta["hosts"].as_array().expect("host facts");
    assert_eq!(hosts.len(), 1, "one host, one entry: {hosts:?}");
    let h = &hosts[0];
    assert_eq!(h["host"], meta["ranks"][0]["host"]);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    if let Some(model) = cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "model name").then(|| v.trim().to_string())
    }) {
        assert_eq!(h["cpu_model"], model.as_str());
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let count: usize = online
        .trim()
        .split(',')
        .map(|part| match part.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
            None => 1,
        })
        .sum();
    assert_eq!(h["threads"], count);
    let memory: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .map(|v| v.trim().trim_end_matches("kB").trim().parse().unwrap())
        .unwrap();
    assert_eq!(h["memory_kib"], memory);
    let caches = h["caches"].as_array().unwrap();
    let index = Path::new("/sys/devices/system/cpu/cpu0/cache");
    for entry in std::fs::read_dir(index).unwrap().flatten() {
        let dir = entry.path();
        if !dir
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("index")
        {
            continue;
        }
        let read = |f: &str| {
            std::fs::read_to_string(dir.join(f))
                .unwrap()
                .trim()
                .to_string()
        };
        let (level, kind, size) = (read("level"), read("type"), read("size"));
        let kib: u64 = size.trim_end_matches('K').parse().unwrap_or(0);
        assert!(
            caches
                .iter()
                .any(|c| c["level"].as_u64() == level.parse().ok()
                    && c["kind"] == kind.as_str()
                    && (kib == 0 || c["size_kib"] == kib)),
            "cache L{level} {kind} {size} not in {caches:?}"
        );
    }
    let policies = std::fs::read_dir("/sys/devices/system/cpu/cpufreq")
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_str().unwrap().starts_with("policy"))
                .count()
        })
        .unwrap_or(0);
    if policies == 0 {
        assert!(h["frequency"]["governor"].is_null(), "{h}");
        assert!(h["frequency"]["driver"].is_null(), "{h}");
    } else {
        let governor =
            std::fs::read_to_string("/sys/devices/system/cpu/cpufreq/policy0/scaling_governor")
                .unwrap_or_default();
        assert!(
            h["frequency"]["governor"]
                .as_str()
                .unwrap()
                .contains(governor.trim()),
            "{h}"
        );
    }
}

#[test]
fn four_ranks_measure_every_pair_with_complete_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let out = mpirun(
        4,
        &[
            "measure", "--plan", "full", "--test", "pingpong", "--out", "run", "--reps", "8",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let run = dir.path().join("run");
    assert_eq!(pairs(&journal(&run)), all_pairs(4), "every pair once");
    // Rank 0's stderr is a pipe here: progress comes as lines, the first saying the job's size.
    assert!(
        stderr(&out).contains("measure: 6 pair tests to run"),
        "{}",
        stderr(&out)
    );

    let meta = read_json(&run.join("meta.json"));
    assert_eq!(meta["format"], "lgate-plogp-run");
    assert_eq!(meta["status"], "complete");
    assert_eq!(meta["test"]["name"], "pingpong");
    assert_eq!(meta["test"]["parameters"]["reps"], 8);
    assert_eq!(meta["schedule"]["pairs_per_sweep"], 6);
    assert!(meta["schedule"]["seed"].is_u64());
    assert_eq!(meta["launcher"]["kind"], "mpirun");
    let library = meta["mpi"]["library_version"].as_str().unwrap();
    match common::mpi() {
        common::Mpi::OpenMpi => {
            assert!(meta["launcher"]["environment"]["OMPI_COMM_WORLD_SIZE"] == "4");
            assert!(library.contains("Open MPI"), "{library}");
        }
        common::Mpi::Mpich => {
            assert!(meta["launcher"]["environment"]["PMI_SIZE"] == "4");
            assert!(library.contains("MPICH"), "{library}");
        }
    }
    // The eager and rendezvous thresholds that explain steps in the curves, by the library's
    // own names (Open MPI's btl_*_eager_limit, MPICH's CH4_*_EAGER_MAX_MSG_SIZE, ...).
    let protocol = meta["mpi"]["control_variables"]["protocol"]
        .as_object()
        .unwrap_or_else(|| panic!("no protocol settings: {}", meta["mpi"]));
    assert!(
        protocol.keys().any(|k| k.to_lowercase().contains("eager")),
        "{protocol:?}"
    );
    assert!(meta["system"]["kernel"].is_string());
    assert!(meta["start"].is_string() && meta["end"].is_string());
    let ranks = meta["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 4);
    for (k, r) in ranks.iter().enumerate() {
        assert_eq!(r["rank"], k);
        for field in ["host", "pid", "cpu", "cpuset", "core", "socket", "numa"] {
            assert!(!r[field].is_null(), "rank {k} lacks {field}: {r}");
        }
    }
    check_host_facts(&meta);
    let summary = &meta["summary"];
    assert_eq!(summary["pairs_measured"], 6);
    let share = summary["overhead_share"].as_f64().unwrap();
    assert!((0.0..1.0).contains(&share), "{summary}");

    let csv = std::fs::read_to_string(run.join("pingpong.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 6 * 22, "a row per pair and size");
    for line in csv.lines().skip(1) {
        let median: f64 = line.split(',').nth(6).unwrap().parse().unwrap();
        assert!(median > 0.0 && median.is_finite(), "{line}");
    }
    let err = stderr(&out);
    assert!(err.contains("measured 6 pairs in"), "{err}");
    assert!(err.contains("the harness took"), "{err}");
    // The whole job by phase, from rank 0's start to the last file.
    let job = err
        .lines()
        .find(|l| l.starts_with("job: "))
        .expect("a job line");
    for phase in [
        "MPI start-up",
        "placement, host facts and plan",
        "measuring",
        "deriving",
    ] {
        assert!(job.contains(phase), "{job}");
    }
    // Every rank's waiting and testing time, and the waiting share in the summary.
    let times = summary["rank_time"].as_array().unwrap();
    assert_eq!(times.len(), 4, "{summary}");
    for (k, t) in times.iter().enumerate() {
        assert_eq!(t["rank"], k);
        assert!(t["testing_s"].as_f64().unwrap() > 0.0, "{t}");
        assert!(t["waiting_cpu_s"].as_f64().unwrap() >= 0.0, "{t}");
    }
    assert!(err.contains("while waiting for their next test"), "{err}");
    assert!(
        err.contains("frequency governor"),
        "the host's facts: {err}"
    );
    // Open MPI's switch for its own waits, set for ranks that share a CPU; MPICH has none
    // (pair tests wait outside MPI under both).
    let yield_when_idle = &meta["mpi"]["control_variables"]["mpi_yield_when_idle"];
    match common::mpi() {
        common::Mpi::OpenMpi => assert_eq!(yield_when_idle["set_by"], "lgate-plogp"),
        common::Mpi::Mpich => assert!(yield_when_idle.is_null(), "{yield_when_idle}"),
    }

    // A ping-pong run has matrices too (RTT(m) at the default matrix sizes), and `cluster`
    // reads them with nothing given.
    let names = common::matrix_names(&run);
    assert_eq!(names, ["rtt:0", "rtt:1KiB", "rtt:64KiB", "rtt:1MiB"]);
    let clustered = lgate_plogp_in(dir.path(), &["cluster", "run", "--quiet"]);
    let topology = success(clustered);
    assert!(
        topology.contains("\"format\": \"lgate-plogp-topology\""),
        "{topology}"
    );
}

#[test]
fn six_ranks_in_three_groups_run_groups_at_the_same_time() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("three.lgate"),
        "cluster { group { 0,1 } group { 2,3 } group { 4,5 } }\n",
    )
    .unwrap();
    let out = mpirun(
        6,
        &[
            "measure",
            "--plan",
            "full",
            "--out",
            "run",
            "--topology",
            "three.lgate",
            "--reps",
            "64",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let run = dir.path().join("run");
    let entries = journal(&run);
    assert_eq!(pairs(&entries), all_pairs(6));
    let meta = read_json(&run.join("meta.json"));
    assert_eq!(meta["schedule"]["topology_source"], "three.lgate");
    assert_eq!(
        meta["schedule"]["topology"]["levels"][0]["groups"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    // The three pairs inside groups all overlap in time: they start together.
    let inside: Vec<(f64, f64)> = entries
        .iter()
        .filter(|e| e["i"].as_u64().unwrap() / 2 == e["j"].as_u64().unwrap() / 2)
        .map(|e| (e["start_s"].as_f64().unwrap(), e["end_s"].as_f64().unwrap()))
        .collect();
    assert_eq!(inside.len(), 3);
    let latest_start = inside.iter().map(|p| p.0).fold(f64::MIN, f64::max);
    let earliest_end = inside.iter().map(|p| p.1).fold(f64::MAX, f64::min);
    assert!(
        latest_start < earliest_end,
        "group pairs ran one after another: {inside:?}"
    );
}

#[test]
fn a_crashed_run_resumes_without_measuring_twice() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "measure", "--plan", "full", "--out", "run", "--reps", "4", "--seed", "5",
    ];
    let mut crash = args.to_vec();
    crash.extend(["--stop-after", "2"]);
    let out = mpirun(4, &crash, dir.path());
    assert!(!out.status.success(), "the crash stops the job");
    let run = dir.path().join("run");
    assert!(
        run.join("journal.bin").exists(),
        "the crashed run kept its journal: {}",
        stderr(&out)
    );
    let before = pairs(&journal(&run));
    assert_eq!(before.len(), 2, "{}", stderr(&out));
    assert_eq!(read_json(&run.join("meta.json"))["status"], "running");

    // Other parameters are refused, the flag named, once.
    let out = mpirun(
        4,
        &["measure", "--resume", "run", "--reps", "5"],
        dir.path(),
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("cannot resume with other parameters: reps (--reps): 4 in the run, 5 now"),
        "{err}"
    );
    assert_eq!(err.matches("lgate-plogp: error:").count(), 1, "{err}");

    // The run's own flags need not be given again (its plan, test, sizes and repetitions).
    let out = mpirun(4, &["measure", "--resume", "run"], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("measured 4 pairs (resumed: 2 measured before)"),
        "{}",
        stderr(&out)
    );
    let after = journal(&run);
    assert_eq!(pairs(&after), all_pairs(4));
    let kept: BTreeSet<_> = pairs(&after[..2]).into_iter().collect();
    assert_eq!(
        kept,
        before.into_iter().collect(),
        "the first results are kept as they were"
    );
    let meta = read_json(&run.join("meta.json"));
    assert_eq!(meta["status"], "complete");
    assert_eq!(meta["schedule"]["seed"], 5);
}

#[test]
fn setup_errors_are_one_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let out = mpirun(1, &["measure", "--out", "run"], dir.path());
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("needs at least 2 ranks"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("mpirun -np 4"), "says how to launch");

    std::fs::write(
        dir.path().join("short.lgate"),
        "cluster { group { 0,1 } group { 2 } }",
    )
    .unwrap();
    let out = mpirun(
        4,
        &["measure", "--out", "run2", "--topology", "short.lgate"],
        dir.path(),
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert_eq!(
        err.matches("lgate-plogp: error:").count(),
        1,
        "rank 0 alone reports: {err}"
    );
    assert!(err.contains("leaves out ranks 3 of the job's 4"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let out = mpirun(
        2,
        &[
            "measure",
            "--test",
            "pingpong",
            "--out",
            "run3",
            "--reps",
            "2",
            "--sizes",
            "0",
            "--progress",
            "bar",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // Asked for, the bar is drawn with terminal codes through mpirun's pipe.
    assert!(stderr(&out).contains("\x1b["), "{:?}", stderr(&out));
    assert!(
        !stderr(&out).contains("pair tests to run"),
        "no lines with the bar"
    );
    let out = mpirun(
        2,
        &[
            "measure", "--test", "pingpong", "--out", "run3", "--reps", "2", "--sizes", "0",
        ],
        dir.path(),
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("already holds a run"),
        "{}",
        stderr(&out)
    );
    // A full plan's ping-pong matrices follow its --sizes: the usual sizes it measured...
    let out = mpirun(
        2,
        &[
            "measure",
            "--test",
            "pingpong",
            "--plan",
            "full",
            "--out",
            "run4",
            "--reps",
            "2",
            "--sizes",
            "0,1KiB,4MiB",
            "--quiet",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        common::matrix_names(&dir.path().join("run4")),
        ["rtt:0", "rtt:1KiB"]
    );
    // ... else its smallest and largest; a matrix size it does not measure is refused before
    // measuring, by rank 0 alone.
    let out = mpirun(
        2,
        &[
            "measure", "--plan", "full", "--test", "pingpong", "--out", "run5", "--reps", "2",
            "--sizes", "8,512", "--quiet",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        common::matrix_names(&dir.path().join("run5")),
        ["rtt:8B", "rtt:512B"]
    );
    let out = mpirun(
        2,
        &[
            "measure",
            "--test",
            "pingpong",
            "--out",
            "run6",
            "--sizes",
            "0,4MiB",
            "--matrix-sizes",
            "1KiB",
        ],
        dir.path(),
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert_eq!(
        err.matches("matrix size 1KiB was not measured (the ping-pong measured 0, 4MiB)")
            .count(),
        1,
        "{err}"
    );
    assert!(!dir.path().join("run6").exists());
}

#[test]
fn staged_plan_screens_groups_samples_between_and_fills_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("three.lgate"),
        "cluster { group { 0,1 } group { 2,3 } group { 4,5 } }\n",
    )
    .unwrap();
    let out = mpirun(
        6,
        &[
            "measure",
            "--out",
            "run",
            "--topology",
            "three.lgate",
            "--max-size",
            "4KiB",
            "--reps",
            "8",
            "--pairs-between",
            "2",
            // Exact counts: refinement follows the values measured (simulate_cli covers it).
            "--refine",
            "0",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    for stage in ["hosts", "between", "alone", "sample"] {
        assert!(err.contains(&format!("stage {stage}")), "{err}");
    }
    let run = dir.path().join("run");
    let entries = journal(&run);
    let of = |stage: &str| entries.iter().filter(|e| e["stage"] == stage).count();
    assert_eq!(of("hosts"), 3, "one pair inside each group");
    assert_eq!(of("between"), 3 * 2, "K = 2 pairs for each pair of groups");
    assert!(of("sample") >= 2, "{}", of("sample"));
    assert_eq!(
        of("hosts") + of("between") + of("alone") + of("sample"),
        entries.len()
    );

    let meta = read_json(&run.join("meta.json"));
    assert_eq!(meta["schedule"]["plan"]["name"], "staged");
    assert_eq!(meta["schedule"]["plan"]["parameters"]["pairs_between"], 2);
    let index = read_json(&run.join("matrices/index.json"));
    assert_eq!(index["default"], "rtt:64KiB");
    assert_eq!(index["measured"]["measured_pairs"], 9);
    assert_eq!(index["measured"]["filled_pairs"], 6);
    let mask = std::fs::read_to_string(run.join("matrices/measured.csv")).unwrap();
    let ones = mask
        .lines()
        .skip(1)
        .flat_map(|l| l.split(',').skip(1))
        .filter(|v| *v == "1")
        .count();
    assert_eq!(ones, 2 * 9, "the mask marks each measured pair twice");
    let report = read_json(&run.join("report.json"));
    assert_eq!(report["pairs"]["filled"], 6);
    assert!(
        run.join("measurements.parquet").exists(),
        "the sample's PLogP table"
    );

    // cluster takes the screening matrix and says what share was filled.
    let out = lgate_plogp_in(dir.path(), &["cluster", "run", "-o", "topology.json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("rtt:64KiB"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("40.0% of the pairs (6 of 15) were not measured"),
        "{}",
        stderr(&out)
    );
    // measure recorded what cluster finds with its defaults, confidence and all.
    assert!(
        err.contains("as `cluster` finds them with its defaults"),
        "{err}"
    );
    let topology = read_json(&dir.path().join("topology.json"));
    let found = &report["levels"];
    assert!(
        found["matrix"].as_str().unwrap().contains("rtt:"),
        "{found}"
    );
    let (levels, want) = (
        found["levels"].as_array().unwrap(),
        topology["levels"].as_array().unwrap(),
    );
    assert_eq!(levels.len(), want.len(), "{found} against {topology}");
    for (l, w) in levels.iter().zip(want) {
        assert_eq!(l["name"], w["name"]);
        assert_eq!(l["groups"], w["groups"].as_array().unwrap().len());
        assert_eq!(l["confidence"], w["confidence"]);
    }
    assert!(found["resamples"].as_u64().unwrap() > 0, "{found}");
}

#[test]
fn a_dry_run_prints_the_plan_and_its_cost_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("two.lgate"),
        "cluster { group { 0,1 } group { 2,3 } }\n",
    )
    .unwrap();
    let out = mpirun(
        4,
        &[
            "measure",
            "--dry-run",
            "--out",
            "run",
            "--topology",
            "two.lgate",
            "--max-size",
            "4KiB",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "plan: staged, 2 group(s)",
        "stage hosts:   2 screening tests",
        "stage between: 4 screening tests in 1 rounds",
        "calibration, the screening test:",
        "inside a host",
        "between hosts",
        "estimated wall time:",
        "the whole job: about",
        "deriving about",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
    assert_eq!(
        text.matches("plan: staged").count(),
        1,
        "rank 0 alone prints"
    );
    assert!(!dir.path().join("run").exists(), "nothing is written");
    let full = mpirun(
        4,
        &[
            "measure",
            "--dry-run",
            "--plan",
            "full",
            "--max-size",
            "4KiB",
        ],
        dir.path(),
    );
    assert!(full.status.success(), "{}", stderr(&full));
    assert!(String::from_utf8_lossy(&full.stdout).contains("plan: full, 6 pair tests per sweep"));
}

#[test]
fn a_sweep_screens_every_pair_between_groups_once_over_real_mpi() {
    // 6 ranks in two groups of 3: the sweep screens all 9 pairs between them (the default
    // samples 4), rank by rank in 5 rounds, and says so in the dry run.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("two.lgate"),
        "cluster { group { 0-2 } group { 3-5 } }\n",
    )
    .unwrap();
    let measure = |extra: &[&str]| {
        let mut args = vec![
            "measure",
            "--topology",
            "two.lgate",
            "--sweep",
            "--screen-size",
            "4KiB",
            "--max-size",
            "4KiB",
            "--samples",
            "0",
            "--quiet",
        ];
        args.extend_from_slice(extra);
        mpirun(6, &args, dir.path())
    };
    let dry = measure(&["--dry-run"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(
        text.contains("stage between: 9 screening tests in 5 rounds (the sweep"),
        "{text}"
    );
    let out = measure(&["--out", "run"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run = dir.path().join("run");
    let between: Vec<(u64, u64)> = (journal(&run).iter())
        .filter(|e| e["stage"] == "between")
        .map(|e| (e["i"].as_u64().unwrap(), e["j"].as_u64().unwrap()))
        .collect();
    let mut expected: Vec<(u64, u64)> = (0..3).flat_map(|i| (3..6).map(move |j| (i, j))).collect();
    let mut got = between.clone();
    got.sort_unstable();
    expected.sort_unstable();
    assert_eq!(got, expected, "every pair between the groups once");
    let report = read_json(&run.join("report.json"));
    assert_eq!(report["tests"]["between"], 9, "{report:#}");
}

#[test]
fn an_interrupted_run_says_what_it_kept_and_how_to_continue() {
    let dir = tempfile::tempdir().unwrap();
    // Rank 0 says it when the signal reaches it; a launcher may kill the ranks before their
    // last words are forwarded (seen 1 time in 3 beside two CPU-bound processes), so up to
    // three runs are interrupted and one must say it. The command is also said up front.
    let mut said = None;
    for attempt in 0..3 {
        let name = format!("run{attempt}");
        // Long enough to be interrupted: 28 pairs of a PLogP test with every repetition.
        let mut child = common::launch(
            8,
            &[],
            &[
                "measure",
                "--plan",
                "full",
                "--out",
                &name,
                "--max-size",
                "64KiB",
                "--reps",
                "64",
                "--pair-budget",
                "0",
            ],
            dir.path(),
        );
        let journal_file = dir.path().join(&name).join("journal.bin");
        let started = std::time::Instant::now();
        while (lgate_rundir::read_journal(&journal_file)).map_or(true, |j| j.entries.is_empty()) {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(300),
                "no pair measured in 300 s"
            );
            assert!(child.try_wait().unwrap().is_none(), "the run ended early");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        // Ctrl-C: the launcher passes the signal on to the ranks.
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let out = child.wait_with_output().unwrap();
        assert!(!out.status.success());
        let err = stderr(&out);
        // The launch as it was made, its options included, then the resume.
        let resume = format!("{} measure --resume {name}", common::launch_line(8, false));
        assert!(
            err.contains(&format!(
                "measure: writing {name}/ (8 ranks); if it is interrupted, continue it with: \
                 {resume}"
            )),
            "{err}"
        );
        if err.contains("lgate-plogp: interrupted: ") {
            assert!(
                err.contains(&format!("pair tests are kept in {name}/journal.bin")),
                "{err}"
            );
            assert!(err.contains(&resume), "{err}");
            said = Some(name);
            break;
        }
    }
    let name = said.expect("one of three interrupted runs says what it kept");
    // The run continues with that command alone; a flag that changes the test is refused.
    assert!(!journal(&dir.path().join(&name)).is_empty());
    let out = mpirun(
        8,
        &["measure", "--resume", &name, "--pair-budget", "0.05"],
        dir.path(),
    );
    assert!(!out.status.success(), "the budget is a test parameter");
    assert!(stderr(&out).contains("--pair-budget"), "{}", stderr(&out));
}
