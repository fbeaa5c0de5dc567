//! End-to-end tests of `lgate-plogp diff` on simulated pairs of runs: the same machine measured
//! again, a slower node, a slower link, another rank order, more noise, another topology; the
//! exit codes a cron job reads; and clean failures.

mod common;

use std::path::Path;
use std::process::Output;

use common::{assert_clean_failure_with, lgate_plogp_in, simulate_fram32, success, FRAM_32};
use serde_json::Value;

/// fram with four nodes of two sockets of four cores, every artifact of the preset, the full
/// plan: 496 pairs, a tenth of a second each run.
fn simulate(dir: &Path, out: &str, extra: &[&str]) {
    let mut args = extra.to_vec();
    args.extend_from_slice(&["--output", out]);
    simulate_fram32(dir, "64KiB", &args);
}

/// The arguments of [`simulate`], for runs that must fail.
fn machine() -> Vec<&'static str> {
    let mut args = FRAM_32.to_vec();
    args.extend(["--max-size", "64KiB"]);
    args
}

/// fram with two switches of four hosts each, every pair measured (`--plan full`, up to 1 KiB),
/// written to `DIR/run`.
fn simulate_two_switches(dir: &Path) {
    success(lgate_plogp_in(
        dir,
        &[
            "simulate",
            "--preset",
            "fram",
            "--machine",
            "switch=2,node=4,socket=2,core=4",
            "--plan",
            "full",
            "--max-size",
            "1KiB",
            "--quiet",
            "--output",
            "run",
        ],
    ));
}

fn diff(dir: &Path, a: &str, b: &str, extra: &[&str]) -> (Output, Value) {
    let mut args = vec!["diff", a, b, "--format", "json"];
    args.extend_from_slice(extra);
    let out = lgate_plogp_in(dir, &args);
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, json)
}

fn changes(json: &Value) -> Vec<(String, String)> {
    json["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap().to_string(),
                c["name"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn simulated_changes_are_found_and_unchanged_machines_pass() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    simulate(d, "before", &[]);
    // The same machine measured again: other noise, the same slow pairs and artifacts.
    simulate(d, "again", &["--rerun", "1"]);
    let (out, json) = diff(d, "before", "again", &[]);
    assert_eq!(out.status.code(), Some(0), "{json:#}");
    assert_eq!(json["changed"], false);
    assert!(changes(&json).is_empty(), "{json:#}");
    assert_eq!(json["ranks"]["matched"], 32);
    assert_eq!(json["ranks"]["matched_by"], "host and CPU");
    for level in json["topology"].as_array().unwrap() {
        assert_eq!(level["changed"], false, "{level}");
    }

    // One node 15 % slower: that host, and nothing else (its ranks and links are explained).
    simulate(
        d,
        "slow-node",
        &["--rerun", "1", "--slow-host", "fram-n2=1.15"],
    );
    let (out, json) = diff(d, "before", "slow-node", &[]);
    assert_eq!(out.status.code(), Some(1), "{json:#}");
    assert_eq!(
        changes(&json),
        vec![("host".to_string(), "fram-n2".to_string())],
        "{json:#}"
    );
    let c = &json["changes"][0];
    let change = c["change"].as_f64().unwrap();
    // The machine's median moves a little with the node's pairs (44 % of all): against it the
    // node is 12-16 % slower.
    assert!((0.12..0.16).contains(&change), "{c}");

    // One link twice as slow: that host pair.
    simulate(d, "slow-link", &["--rerun", "1", "--slow-link", "0:3=2"]);
    let (out, json) = diff(d, "before", "slow-link", &[]);
    assert_eq!(out.status.code(), Some(1), "{json:#}");
    assert_eq!(
        changes(&json),
        vec![("host pair".to_string(), "fram-n0 - fram-n3".to_string())],
        "{json:#}"
    );
    let change = json["changes"][0]["change"].as_f64().unwrap();
    assert!((0.8..1.2).contains(&change), "{json:#}");

    // The ranks numbered otherwise on the same cores: matched by host and CPU, no change.
    simulate(d, "renumbered", &["--rerun", "1", "--placement", "random"]);
    let (out, json) = diff(d, "before", "renumbered", &[]);
    assert_eq!(out.status.code(), Some(0), "{json:#}");
    assert!(changes(&json).is_empty(), "{json:#}");

    // Twice the noise: no change in the values, a noise change over the whole machine.
    simulate(d, "noisier", &["--rerun", "1", "--noise", "0.1"]);
    let (out, json) = diff(d, "before", "noisier", &[]);
    assert_eq!(out.status.code(), Some(0), "{json:#}");
    assert!(changes(&json).is_empty(), "{json:#}");
    let spread = json["spread_changes"].as_array().unwrap();
    let t0 = spread
        .iter()
        .find(|s| s["name"] == "all pairs" && s["matrix"] == "t:0")
        .unwrap_or_else(|| panic!("no noise change of t:0 in {spread:?}"));
    let ratio = t0["ratio"].as_f64().unwrap();
    assert!((1.7..2.3).contains(&ratio), "{t0}");

    // Another topology on the same hosts (four sockets of two cores): the socket level changed.
    let mut args = machine();
    args[4] = "node=4,socket=4,core=2";
    args.extend_from_slice(&["--rerun", "1", "--output", "resocketed"]);
    success(lgate_plogp_in(d, &args));
    let (out, json) = diff(d, "before", "resocketed", &[]);
    assert_eq!(out.status.code(), Some(1), "{json:#}");
    let levels = json["topology"].as_array().unwrap();
    let level = |name: &str| levels.iter().find(|l| l["level"] == name).unwrap();
    assert_eq!(level("node")["changed"], false, "{levels:?}");
    let socket = level("socket");
    assert_eq!(socket["changed"], true, "{levels:?}");
    assert_eq!(
        (socket["groups_a"].as_u64(), socket["groups_b"].as_u64()),
        (Some(8), Some(16))
    );
    assert_eq!(socket["split"], 8);

    // The text for people says the same, worst first, and ends with the verdict.
    let text = success(lgate_plogp_in(d, &["diff", "before", "again"]));
    assert!(
        text.ends_with("verdict: no change beyond the noise\n"),
        "{text}"
    );
    let out = lgate_plogp_in(d, &["diff", "before", "slow-node"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("host fram-n2: +1"), "{text}");
    assert!(text.ends_with("verdict: changed\n"), "{text}");
    // A larger least change hides the slow node.
    let (out, _) = diff(d, "before", "slow-node", &["--min-change", "0.3"]);
    assert_eq!(out.status.code(), Some(0));

    // The picture: the slow node's rows and columns red, the rest near white.
    success(lgate_plogp_in(
        d,
        &["plot", "diff", "before", "slow-node", "-o", "d.png"],
    ));
    let png = image::open(d.join("d.png")).unwrap().to_rgb8();
    // The matrix square's pixel of the pair of ranks (row, col): 32 ranks over 760 pixels
    // from (70, 56), ranks in host order (fram-n2 holds ranks 16-23).
    let pixel = |row: u32, col: u32| {
        let at = |r: u32| (f64::from(r) + 0.5) * 760.0 / 32.0;
        *png.get_pixel(70 + at(col) as u32, 56 + at(row) as u32)
    };
    let red = pixel(19, 3);
    assert!(
        red[0] > 150 && red[1] < 150 && red[2] < 150,
        "n2 - n0 is red: {red:?}"
    );
    let plain = pixel(11, 3);
    assert!(
        plain.0.iter().all(|&c| c > 200),
        "n1 - n0 is near white: {plain:?}"
    );
    let svg = success(lgate_plogp_in(
        d,
        &["plot", "diff", "before", "slow-node", "-o", "d.svg"],
    ));
    assert!(svg.is_empty());
    assert!(std::fs::read_to_string(d.join("d.svg"))
        .unwrap()
        .contains("<svg"));
}

#[test]
fn a_whole_machine_twice_as_slow_is_a_change_carried_by_every_host() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    simulate(d, "before", &[]);
    let mut args = vec!["--rerun", "1"];
    for h in 0..4 {
        args.push("--slow-host");
        args.push(["0=1.5", "1=1.5", "2=1.5", "3=1.5"][h]);
    }
    // Every pair touches two slowed hosts or one twice: 1.5 * 1.5 = 2.25 between hosts, 1.5
    // inside: the median pair is 2.25 times as slow.
    simulate(d, "slower", &args);
    let (out, json) = diff(d, "before", "slower", &[]);
    assert_eq!(out.status.code(), Some(1), "{json:#}");
    let machine = json["machine"].as_array().unwrap();
    let t0 = machine.iter().find(|m| m["matrix"] == "t:0").unwrap();
    assert_eq!(t0["changed"], true, "{t0}");
    // Against the machine nothing stands out.
    assert!(changes(&json).is_empty(), "{json:#}");
}

#[test]
fn bad_input_is_a_one_line_error_and_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    simulate(d, "run", &[]);
    let check = |args: &[&str], fragment: &str| {
        assert_clean_failure_with(&lgate_plogp_in(d, args), 2, fragment);
    };
    check(&["diff", "run", "missing"], "missing");
    check(&["diff", "run", "run", "--threshold", "0"], "--threshold");
    check(&["diff", "run", "run", "--threshold", "NaN"], "--threshold");
    check(
        &["diff", "run", "run", "--machine-change", "0.5"],
        "--machine-change",
    );
    check(
        &["diff", "run", "run", "--matrices", "nothing"],
        "none of the matrices nothing",
    );
    std::fs::write(d.join("bad.csv"), "rank,0,1\n0,0,x\n1,1,0\n").unwrap();
    check(&["diff", "run", "bad.csv"], "bad.csv");
    // A matrix file of other hosts matches nothing.
    std::fs::write(d.join("other.csv"), "rank,a,b\na,0,1\nb,1,0\n").unwrap();
    check(&["diff", "run", "other.csv"], "in common");
    // Declared files that are empty, broken or list no nodes were read as matrices ("no rows
    // of numbers").
    std::fs::write(d.join("empty.yaml"), "").unwrap();
    check(
        &["diff", "run", "empty.yaml"],
        "empty.yaml: not a Slurm topology.conf",
    );
    std::fs::write(d.join("garbage.conf"), "garbage\n").unwrap();
    check(
        &["diff", "run", "garbage.conf"],
        "garbage.conf: not a Slurm topology.conf",
    );
    std::fs::write(d.join("nodes.json"), "{\"items\": []}").unwrap();
    check(
        &["diff", "run", "nodes.json"],
        "a Kubernetes node list without nodes",
    );
    // The "after" runs of simulate: a host or link that does not exist, a bad factor.
    let mut args = machine();
    args.extend(["--slow-host", "9=1.1", "--output", "x"]);
    assert_clean_failure_with(&lgate_plogp_in(d, &args), 1, "--slow-host 9: no such host");
    for (flag, value, says) in [
        ("--slow-link", "0:0=2", "two different hosts"),
        ("--slow-link", "0=2", "HOST:HOST=FACTOR"),
        ("--slow-host", "1=0", "positive"),
        ("--slow-host", "1=x", "HOST=FACTOR"),
    ] {
        let mut args = machine();
        args.extend([flag, value, "--output", "x"]);
        let out = lgate_plogp_in(d, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert!(stderr.contains(says), "{flag} {value}: {stderr}");
    }
    assert!(!d.join("x").exists());
    // A run compared with itself: nothing changed.
    let (out, json) = diff(d, "run", "run", &[]);
    assert_eq!(out.status.code(), Some(0), "{json:#}");
}

#[test]
fn matrix_files_with_host_labels_compare_by_host() {
    // Ten ranks on five hosts, as matrix files whose labels are the hosts; in the later file
    // the ranks are listed in another order and the links of host c are twice as slow.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let write = |name: &str, hosts: &[&str], slow: &str| {
        let mut text = format!("host,{}\n", hosts.join(","));
        for (i, hi) in hosts.iter().enumerate() {
            let row: Vec<String> = hosts
                .iter()
                .enumerate()
                .map(|(j, hj)| {
                    if i == j {
                        return "0".to_string();
                    }
                    // A little spread between pairs alike, the noise a matrix file has.
                    let jitter = 1.0 + 0.01 * ((i * 7 + j * 7) % 5) as f64;
                    let base = if hi == hj { 0.5 } else { 2.0 } * jitter;
                    let v = if *hi == slow || *hj == slow {
                        base * 2.0
                    } else {
                        base
                    };
                    format!("{v:.4}")
                })
                .collect();
            text.push_str(&format!("{hi},{}\n", row.join(",")));
        }
        std::fs::write(d.join(name), text).unwrap();
    };
    let order = ["a", "a", "b", "b", "c", "c", "d", "d", "e", "e"];
    let other = ["c", "c", "e", "e", "a", "a", "d", "d", "b", "b"];
    write("before.csv", &order, "");
    write("same.csv", &other, "");
    write("after.csv", &other, "c");
    let (out, json) = diff(d, "before.csv", "same.csv", &["--no-topology"]);
    assert_eq!(out.status.code(), Some(0), "{json:#}");
    assert_eq!(json["ranks"]["matched_by"], "host and local rank");
    assert_eq!(json["ranks"]["matched"], 10);
    assert_eq!(json["matrices"][0]["noise_a"], "pair spread");
    let (out, json) = diff(d, "before.csv", "after.csv", &["--no-topology"]);
    assert_eq!(out.status.code(), Some(1), "{json:#}");
    assert_eq!(
        changes(&json),
        vec![("host".to_string(), "c".to_string())],
        "{json:#}"
    );
}

#[test]
fn runs_kept_as_host_blocks_compare_without_a_dense_matrix() {
    // 40 hosts of 128 ranks (5120, above the dense limit): the staged runs keep host blocks
    // only, and diff compares the pairs each measured.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |out: &str, extra: &[&str]| {
        let mut args = vec![
            "simulate",
            "--preset",
            "betzy",
            "--machine",
            "node=40,socket=2,core=64",
            "--quiet",
            "--output",
            out,
        ];
        args.extend_from_slice(extra);
        success(lgate_plogp_in(d, &args));
    };
    run("before", &[]);
    assert!(d.join("before/hosts/index.json").is_file());
    assert!(!d.join("before/matrices").exists(), "no dense matrices");
    run("again", &["--rerun", "1"]);
    let (out, json) = diff(d, "before", "again", &[]);
    assert_eq!(out.status.code(), Some(0), "{json:#}");
    assert!(changes(&json).is_empty(), "{json:#}");
    assert_eq!(json["ranks"]["matched"], 5120);
    // Other noise was drawn: the same machine, not the same numbers.
    let machine = json["machine"].as_array().unwrap();
    assert!(
        machine.iter().all(|m| m["pairs"].as_u64() > Some(300_000)),
        "{json:#}"
    );

    run("slow-node", &["--rerun", "1", "--slow-host", "5=1.15"]);
    let (out, json) = diff(d, "before", "slow-node", &[]);
    assert_eq!(out.status.code(), Some(1), "{json:#}");
    assert_eq!(
        changes(&json),
        vec![("host".to_string(), "betzy-n05".to_string())],
        "{json:#}"
    );
    // Its picture is host by host (a 5120 x 5120 one would not scale), and so is the report's.
    success(lgate_plogp_in(
        d,
        &["plot", "diff", "before", "slow-node", "-o", "d.png"],
    ));
    assert!(std::fs::metadata(d.join("d.png")).unwrap().len() > 1000);
    let args = ["report", "slow-node", "--since", "before", "-o", "r.html"];
    success(lgate_plogp_in(d, &args));
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    assert!(html.contains("median change over the noise per two hosts"));

    run("slow-link", &["--rerun", "1", "--slow-link", "2:7=2"]);
    let (out, json) = diff(d, "before", "slow-link", &[]);
    assert_eq!(out.status.code(), Some(1), "{json:#}");
    assert_eq!(
        changes(&json),
        vec![("host pair".to_string(), "betzy-n02 - betzy-n07".to_string())],
        "{json:#}"
    );
    let change = json["changes"][0]["change"].as_f64().unwrap();
    assert!((0.8..1.2).contains(&change), "{json:#}");
}

#[test]
fn a_run_agrees_with_the_topology_cluster_wrote_from_it_one_rank_a_host() {
    // Hosts of one rank: the topology's host level has one host a group and nothing inside
    // a group to judge it by; it is named so, and the switches level is judged (exit 0).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = [
        "simulate",
        "--preset",
        "fram",
        "--machine",
        "switch=2,node=4,socket=1,core=1",
        "--plan",
        "full",
        "--max-size",
        "1KiB",
        "--quiet",
        "--output",
        "run",
    ];
    success(lgate_plogp_in(d, &args));
    success(lgate_plogp_in(
        d,
        &["cluster", "run", "--output", "topo.json", "--quiet"],
    ));
    let out = lgate_plogp_in(d, &["diff", "run", "topo.json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("one host a group, the hosts themselves"),
        "{text}"
    );
    assert!(!text.contains("NOT SEEN"), "{text}");
    assert!(
        text.contains("verdict: the run agrees with the declared topology"),
        "{text}"
    );
}

#[test]
fn a_topology_of_one_hosts_ranks_is_told_to_use_diff_or_score() {
    // One host: no level holds whole hosts, so there is nothing for the declared check to
    // compare; said in words, with what would compare (exit 2, as a file it cannot check).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = [
        "simulate",
        "--preset",
        "fram",
        "--machine",
        "switch=1,node=1,socket=2,core=4",
        "--plan",
        "full",
        "--max-size",
        "1KiB",
        "--quiet",
        "--output",
        "run",
    ];
    success(lgate_plogp_in(d, &args));
    success(lgate_plogp_in(
        d,
        &["cluster", "run", "--output", "topo.json", "--quiet"],
    ));
    let out = lgate_plogp_in(d, &["diff", "run", "topo.json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("all on one host"), "{err}");
    assert!(err.contains("score --truth RUN"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn groups_declared_apart_that_measure_as_one_are_named() {
    // fram with two switches of four hosts each: a switch declared as two leaves, a host
    // declared alone on a third, blocks of one switch that no aggregate joins (BlockSizes=)
    // each differ (exit 1) and are named; blocks that an aggregate joins agree (exit 0).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    simulate_two_switches(d);
    let cases = [
        (
            "split.conf",
            "SwitchName=s0a Nodes=fram-n[0-1]\nSwitchName=s0b Nodes=fram-n[2-3]\n\
             SwitchName=s1 Nodes=fram-n[4-7]\n",
            Some("s0a and s0b: declared apart, measured as one group"),
        ),
        (
            "alone.conf",
            "SwitchName=s0 Nodes=fram-n[0-3]\nSwitchName=s1 Nodes=fram-n[4-6]\n\
             SwitchName=s2 Nodes=fram-n7\n",
            Some("s1 and s2: declared apart, measured as one group"),
        ),
        (
            "across.conf",
            "BlockName=b0 Nodes=fram-n[0-1]\nBlockName=b1 Nodes=fram-n[4-5]\n\
             BlockName=b2 Nodes=fram-n[2-3]\nBlockName=b3 Nodes=fram-n[6-7]\nBlockSizes=2,4\n",
            Some("b0 and b2: declared apart, measured as one group"),
        ),
        (
            "blocks.conf",
            "BlockName=b0 Nodes=fram-n[0-1]\nBlockName=b1 Nodes=fram-n[2-3]\n\
             BlockName=b2 Nodes=fram-n[4-5]\nBlockName=b3 Nodes=fram-n[6-7]\nBlockSizes=2,4\n",
            None,
        ),
    ];
    for (name, text, named) in cases {
        std::fs::write(d.join(name), text).unwrap();
        let out = lgate_plogp_in(d, &["diff", "run", name]);
        let text = String::from_utf8_lossy(&out.stdout);
        match named {
            Some(line) => {
                assert_eq!(out.status.code(), Some(1), "{name}: {text}");
                assert!(text.contains(line), "{name}: {text}");
            }
            None => {
                assert_eq!(out.status.code(), Some(0), "{name}: {text}");
                assert!(
                    text.contains("level aggregate of 4 nodes"),
                    "{name}: {text}"
                );
                assert!(!text.contains("measured as one"), "{name}: {text}");
            }
        }
    }
    // The aggregate across the switches is not seen either.
    let out = lgate_plogp_in(d, &["diff", "run", "across.conf"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("the run does not show level(s) aggregate of 4 nodes"),
        "{text}"
    );
    // Two hosts swapped in a tree and in a block topology of one topology.yaml: two hosts.
    std::fs::write(
        d.join("both.yaml"),
        "- topology: fabric\n  cluster_default: true\n  tree:\n    switches:\n\
         \x20     - switch: s0\n        nodes: fram-n[0-2],fram-n5\n\
         \x20     - switch: s1\n        nodes: [fram-n3, fram-n4, fram-n6, fram-n7]\n\
         - topology: blocks\n  cluster_default: false\n  block:\n    blocks:\n\
         \x20     - block: b0\n        nodes: fram-n[0-2],fram-n5\n\
         \x20     - block: b1\n        nodes: [fram-n3, fram-n4, fram-n6, fram-n7]\n",
    )
    .unwrap();
    let out = lgate_plogp_in(d, &["diff", "run", "both.yaml"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("verdict: 2 host(s) measured elsewhere than declared"),
        "{text}"
    );
}

#[test]
fn the_schedulers_objects_read_back_as_agreeing_and_name_a_moved_host() {
    // fram with two switches of four hosts each: Kueue's and KAI's Topology with the node
    // labels, Volcano's HyperNodes and topograph's model, written by `cluster` from the run, agree with it (exit
    // 0); with fram-n3 and fram-n5 swapped in the file, both are named (exit 1).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    simulate_two_switches(d);
    for (format, kind) in [
        ("kueue-topology", "Kueue Topology"),
        ("kai-topology", "KAI Scheduler Topology"),
        ("volcano-hypernodes", "Volcano HyperNodes"),
        ("topograph-model", "topograph model"),
    ] {
        let file = format!("{format}.yaml");
        let out = lgate_plogp_in(
            d,
            &["cluster", "run", "--format", format, "-o", &file, "-q"],
        );
        assert!(
            out.status.success(),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (out, json) = diff(d, "run", &file, &[]);
        assert_eq!(out.status.code(), Some(0), "{format}: {json:#}");
        assert_eq!(json["format"], kind, "{json:#}");
        assert_eq!(json["levels"].as_array().unwrap().len(), 1, "{json:#}");
        let text = std::fs::read_to_string(d.join(&file)).unwrap();
        // topograph's model writes each switch's hosts as one compact range.
        let swapped = if format == "topograph-model" {
            text.replace("\"fram-n[0-3]\"", "\"fram-n[0-2]\"\n  - \"fram-n5\"")
                .replace("\"fram-n[4-7]\"", "\"fram-n[3-4]\"\n  - \"fram-n[6-7]\"")
        } else {
            text.replace("fram-n3\"", "SWAP\"")
                .replace("fram-n5\"", "fram-n3\"")
                .replace("SWAP\"", "fram-n5\"")
        };
        assert_ne!(swapped, text, "{format}: the hosts are named in quotes");
        let moved = format!("moved-{file}");
        std::fs::write(d.join(&moved), swapped).unwrap();
        let (out, json) = diff(d, "run", &moved, &[]);
        assert_eq!(out.status.code(), Some(1), "{format}: {json:#}");
        let hosts: Vec<&str> = (json["levels"][0]["misplaced"].as_array().unwrap().iter())
            .map(|m| m["host"].as_str().unwrap())
            .collect();
        assert_eq!(hosts, ["fram-n3", "fram-n5"], "{format}: {json:#}");
    }
}

#[test]
fn a_declared_topology_is_checked_host_by_host() {
    // fram with two switches of four hosts each, every pair measured: a topology.conf with
    // fram-n3 and fram-n5 swapped names both (exit 1), the right one agrees (exit 0).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    simulate_two_switches(d);
    let write = |name: &str, text: &str| std::fs::write(d.join(name), text).unwrap();
    write(
        "right.conf",
        "SwitchName=s0 Nodes=fram-n[0-3]\nSwitchName=s1 Nodes=fram-n[4-7]\nSwitchName=top Switches=s[0-1]\n",
    );
    write(
        "swapped.conf",
        "SwitchName=s0 Nodes=fram-n[0-2],fram-n5\nSwitchName=s1 Nodes=fram-n[3-4],fram-n[6-7]\n",
    );
    let out = lgate_plogp_in(d, &["diff", "run", "right.conf"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("level tier1 (2 groups: s0, s1)"), "{text}");
    assert!(
        text.contains("verdict: the run agrees with the declared topology"),
        "{text}"
    );

    let (out, json) = diff(d, "run", "swapped.conf", &[]);
    assert_eq!(out.status.code(), Some(1), "{json:#}");
    let level = &json["levels"][0];
    assert_eq!(level["seen"], true, "{json:#}");
    let moved: Vec<(&str, &str, &str)> = level["misplaced"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            assert!(m["z"].as_f64().unwrap() >= 3.0, "{m}");
            (
                m["host"].as_str().unwrap(),
                m["declared"].as_str().unwrap(),
                m["nearer"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        moved,
        [("fram-n3", "s1", "s0"), ("fram-n5", "s0", "s1")],
        "{json:#}"
    );

    // The same swap in a Slurm topology.yaml and in Kubernetes node labels (topograph's keys).
    write(
        "swapped.yaml",
        "- topology: fabric\n  cluster_default: true\n  tree:\n    switches:\n\
         \x20     - switch: s0\n        nodes: fram-n[0-2],fram-n5\n\
         \x20     - switch: s1\n        nodes: [fram-n3, fram-n4, fram-n6, fram-n7]\n",
    );
    let node = |h: usize, leaf: &str| {
        format!(
            "{{\"kind\": \"Node\", \"metadata\": {{\"name\": \"fram-n{h}\", \"labels\": \
             {{\"fabric.topograph.run/tier-0\": \"{leaf}\", \"kubernetes.io/os\": \"linux\"}}}}}}"
        )
    };
    let items: Vec<String> = (0..8)
        .map(|h| node(h, if [0, 1, 2, 5].contains(&h) { "a" } else { "b" }))
        // Kubernetes' full node names stand for the run's host names.
        .map(|n| n.replace("fram-n7\"", "fram-n7.cluster.local\""))
        .collect();
    write(
        "swapped-labels.json",
        &format!("{{\"kind\": \"List\", \"items\": [{}]}}", items.join(", ")),
    );
    for (file, level) in [
        ("swapped.yaml", "tier1"),
        ("swapped-labels.json", "fabric.topograph.run/tier-0"),
    ] {
        let (out, json) = diff(d, "run", file, &[]);
        assert_eq!(out.status.code(), Some(1), "{file}: {json:#}");
        let level_json = &json["levels"][0];
        assert_eq!(level_json["level"], level, "{json:#}");
        let hosts: Vec<&str> = (level_json["misplaced"].as_array().unwrap().iter())
            .map(|m| m["host"].as_str().unwrap())
            .collect();
        assert_eq!(hosts, ["fram-n3", "fram-n5"], "{file}: {json:#}");
    }
    // The labels `cluster --format k8s-labels` writes agree with the run they came from.
    let out = lgate_plogp_in(
        d,
        &[
            "cluster",
            "run",
            "--format",
            "k8s-labels",
            "-o",
            "labels.yaml",
            "-q",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let labels = std::fs::read_to_string(d.join("labels.yaml")).unwrap();
    assert!(labels.contains("fabric.topograph.run/tier-0"), "{labels}");
    let out = lgate_plogp_in(d, &["diff", "run", "labels.yaml"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}\n{labels}");

    // Bad declared files: one line naming the file and the problem, exit 2.
    write(
        "no-labels.json",
        "{\"kind\": \"List\", \"items\": [{\"metadata\": {\"name\": \"fram-n0\"}}]}",
    );
    write(
        "broken-labels.yaml",
        "kind: List\nitems:\n  - metadata: [\n",
    );
    write(
        "unknown.conf",
        "SwitchName=s0 Nodes=fram-n[0-3],gpu9\nSwitchName=s1 Nodes=fram-n[4-7]\n",
    );
    write(
        "broken.conf",
        "SwitchName=s0 Nodes=fram-n[0-3\nSwitchName=s1 Nodes=fram-n[4-7]\n",
    );
    for (file, problem) in [
        ("unknown.conf", "host gpu9 is not a host of the run"),
        ("broken.conf", "line 1: Nodes=fram-n[0-3:"),
        (
            "no-labels.json",
            "none of its 1 nodes carries a topology label",
        ),
        ("broken-labels.yaml", "not a Kubernetes node list:"),
    ] {
        let out = lgate_plogp_in(d, &["diff", "run", file]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(file) && stderr.contains(problem),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
    }
}
