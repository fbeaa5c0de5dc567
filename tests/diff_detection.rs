//! `diff` names a host 1.1x, a link 1.2x and a rank 1.5x slower in at least 19 of 20 seed pairs
//! of simulated runs, and two runs of an unchanged machine report a change in at most 1 of 20:
//! the fram and betzy presets with the staged plan (the default), and fram with `--plan full`.
//! betzy with `--plan full` (11 s a pair) and the rates at other factors are in
//! `benches/diff-detection.sh`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use serde_json::Value;

const SEEDS: u64 = 20;

/// The machines and plans every case is checked on.
const RUNS: [(&str, &str); 3] = [("fram", "staged"), ("betzy", "staged"), ("fram", "full")];

fn simulate(dir: &Path, out: &str, (preset, plan): (&str, &str), seed: u64, extra: &[&str]) {
    let seed = seed.to_string();
    let status = Command::new(env!("CARGO_BIN_EXE_lgate-plogp"))
        .current_dir(dir)
        .args([
            "simulate", "--preset", preset, "--plan", plan, "--seed", &seed,
        ])
        .args(["--output", out, "--quiet", "--force"])
        .args(extra)
        .status()
        .expect("the binary runs");
    assert!(status.success());
}

fn diff(dir: &Path, before: &Path, topology: bool) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lgate-plogp"));
    cmd.current_dir(dir)
        .arg("diff")
        .arg(before)
        .args(["after", "--format", "json"]);
    if !topology {
        cmd.arg("--no-topology");
    }
    let out = cmd.output().expect("the binary runs");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// The runs every case compares with, made once for the four tests (each in turn would make
/// the same 60 runs, 1 GB): under the target's temporary directory, one directory per process
/// of this test binary, removed by the last test to finish; one a failed run left is removed by
/// the next run.
fn befores() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("diff-detection");
        for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
            let pid = entry.file_name().to_string_lossy().parse::<u32>().ok();
            if pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists()) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let dir = root.join(std::process::id().to_string());
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
}

/// The unchanged run of kind `k` (an index into [`RUNS`]) and `seed`, made by the first test
/// that needs it while the others wait for it.
fn before(k: usize, seed: u64) -> &'static Path {
    static MADE: [[OnceLock<PathBuf>; SEEDS as usize]; RUNS.len()] =
        [const { [const { OnceLock::new() }; SEEDS as usize] }; RUNS.len()];
    MADE[k][seed as usize - 1].get_or_init(|| {
        let name = format!("{}-{}-{seed}", RUNS[k].0, RUNS[k].1);
        simulate(befores(), &name, RUNS[k], seed, &[]);
        befores().join(name)
    })
}

/// The tests that compare with [`before`] runs: the last to finish removes them.
const TESTS: usize = 4;

/// Called by each test when it is done with the [`before`] runs.
fn done_with_befores() {
    static DONE: AtomicUsize = AtomicUsize::new(0);
    if DONE.fetch_add(1, Ordering::SeqCst) + 1 == TESTS {
        let _ = std::fs::remove_dir_all(befores());
    }
}

/// The hosts of a run, in rank order.
fn hosts(run: &Path) -> Vec<String> {
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("meta.json")).unwrap()).unwrap();
    let mut hosts: Vec<String> = Vec::new();
    for r in meta["ranks"].as_array().unwrap() {
        let h = r["host"].as_str().unwrap().to_string();
        if !hosts.contains(&h) {
            hosts.push(h);
        }
    }
    hosts
}

/// Over every run kind and seed: the seed pairs whose diff `hit` says yes to, out of 20, with
/// the after run made by `extra` (and `--rerun 1`).
fn count(extra: &[&str], topology: bool, hit: impl Fn(&Value, &[String]) -> bool) {
    for (k, run) in RUNS.into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut hits = Vec::new();
        for seed in 1..=SEEDS {
            let before = before(k, seed);
            simulate(d, "after", run, seed, &[&["--rerun", "1"], extra].concat());
            let json = diff(d, before, topology);
            if hit(&json, &hosts(before)) {
                hits.push(seed);
            }
        }
        eprintln!("{run:?} {extra:?}: {} of {SEEDS} ({hits:?})", hits.len());
        if extra.is_empty() {
            assert!(
                hits.len() <= 1,
                "{run:?}: an unchanged machine changed in {hits:?}"
            );
        } else {
            assert!(
                hits.len() >= 19,
                "{run:?} {extra:?}: named in {} of {SEEDS}",
                hits.len()
            );
        }
    }
    done_with_befores();
}

fn named(json: &Value, kind: &str, matches: impl Fn(&Value) -> bool) -> bool {
    json["changes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["kind"] == kind && matches(c))
}

#[test]
fn an_unchanged_machine_reports_no_change() {
    count(&[], true, |json, _| json["changed"] == true);
}

#[test]
fn a_host_ten_percent_slower_is_named() {
    count(&["--slow-host", "1=1.1"], false, |json, hosts| {
        named(json, "host", |c| c["name"] == hosts[1].as_str())
    });
}

#[test]
fn a_link_twenty_percent_slower_is_named() {
    count(&["--slow-link", "0:2=1.2"], false, |json, hosts| {
        named(json, "host pair", |c| {
            let mut h: Vec<&str> = (c["hosts"].as_array().unwrap().iter())
                .map(|h| h.as_str().unwrap())
                .collect();
            h.sort_unstable();
            h == [hosts[0].as_str(), hosts[2].as_str()]
        })
    });
}

#[test]
fn a_rank_half_again_slower_is_named() {
    count(&["--slow-rank", "5=1.5"], false, |json, _| {
        named(json, "rank", |c| c["ranks"] == serde_json::json!([5]))
    });
}
