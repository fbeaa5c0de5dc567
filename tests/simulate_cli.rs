//! End-to-end tests of `lgate-plogp simulate`: simulate, cluster and score through the binary,
//! the time estimate, models written and read back, and clean failures.

mod common;

use common::{assert_clean_failure, lgate_plogp_in, simulate_fram32, success};
use serde_json::Value;

#[test]
fn simulate_cluster_score() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |args: &[&str]| success(lgate_plogp_in(d, args));
    run(&[
        "simulate",
        "--plan",
        "full",
        "--preset",
        "fram",
        "--machine",
        "switch=2,node=2,socket=2,core=6",
        "--max-size",
        "4KiB",
        "--out",
        "sim",
    ]);
    for f in [
        "meta.json",
        "measurements.parquet",
        "report.json",
        "matrices/index.json",
    ] {
        assert!(d.join("sim").join(f).exists(), "{f}");
    }
    run(&["cluster", "sim", "--output", "found.json"]);
    let scores: Value = serde_json::from_str(&run(&[
        "score",
        "--truth",
        "sim",
        "--topology",
        "found.json",
        "--json",
    ]))
    .unwrap();
    let levels: Vec<(&str, f64)> = scores
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["level"].as_str().unwrap(), r["ari"].as_f64().unwrap()))
        .collect();
    for name in ["switch", "node", "socket", "core"] {
        let ari = levels.iter().find(|l| l.0 == name).map(|l| l.1);
        assert_eq!(ari, Some(1.0), "{name}: {levels:?}");
    }

    // The same command elsewhere gives the same bytes.
    let other = tempfile::tempdir().unwrap();
    success(lgate_plogp_in(
        other.path(),
        &[
            "simulate",
            "--plan",
            "full",
            "--preset",
            "fram",
            "--machine",
            "switch=2,node=2,socket=2,core=6",
            "--max-size",
            "4KiB",
            "--out",
            "sim",
        ],
    ));
    for f in [
        "meta.json",
        "measurements.parquet",
        "report.json",
        "matrices/t_0.csv",
    ] {
        assert_eq!(
            std::fs::read(d.join("sim").join(f)).unwrap(),
            std::fs::read(other.path().join("sim").join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn the_time_estimate_counts_concurrency() {
    let dir = tempfile::tempdir().unwrap();
    let estimate = |extra: &[&str]| {
        let mut args = vec![
            "simulate",
            "--plan",
            "full",
            "--preset",
            "betzy",
            "--machine",
            "node=8,socket=2,core=8",
            "--estimate-time",
        ];
        args.extend_from_slice(extra);
        let text = success(lgate_plogp_in(dir.path(), &args));
        assert!(text.contains("estimated wall time"), "{text}");
        let line = text
            .lines()
            .find(|l| l.starts_with("estimated wall time"))
            .unwrap();
        let at_once: f64 = line
            .rsplit('(')
            .next()
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        (text, at_once)
    };
    let (one, serial) = estimate(&[]);
    let (auto, parallel) = estimate(&["--topology", "auto"]);
    assert!((serial - 1.0).abs() < 0.05, "{one}");
    // Eight nodes: the 960 pairs inside them run eight at a time, the 7168 across them one at
    // a time (LGate's schedule), so the whole run gains a little.
    assert!(parallel > 1.05 && parallel < 8.0, "{auto}");
    assert!(
        std::fs::read_dir(dir.path()).unwrap().count() == 0,
        "an estimate writes nothing"
    );
}

#[test]
fn models_are_written_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = success(lgate_plogp_in(
        d,
        &[
            "simulate",
            "--plan",
            "full",
            "--preset",
            "arm1",
            "--placement",
            "block",
            "--artifacts",
            "bands,slow-node",
            "--print-model",
        ],
    ));
    let model: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(model["format"], "lgate-plogp-model");
    assert_eq!(model["placement"], "block");
    assert!(model["artifacts"]["slow_node"].is_object());
    assert!(model["artifacts"]["warmup"].is_null());
    std::fs::write(d.join("arm1.json"), &text).unwrap();
    let again = success(lgate_plogp_in(
        d,
        &["simulate", "--model", "arm1.json", "--print-model"],
    ));
    assert_eq!(again, text);
    success(lgate_plogp_in(
        d,
        &[
            "simulate",
            "--plan",
            "full",
            "--model",
            "arm1.json",
            "--max-size",
            "1KiB",
            "--out",
            "run",
            "--quiet",
        ],
    ));
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("run/meta.json")).unwrap()).unwrap();
    assert_eq!(meta["launcher"]["kind"], "simulated");
    assert_eq!(meta["ranks"].as_array().unwrap().len(), 96);
    assert!(meta["simulation"]["slow_node"].is_string());
}

#[test]
fn bad_input_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("broken.json"), "{ not json").unwrap();
    std::fs::write(d.join("other.json"), r#"{"format": "something-else"}"#).unwrap();
    let mut wrong_link: Value = serde_json::from_str(&success(lgate_plogp_in(
        d,
        &["simulate", "--preset", "hpclab", "--print-model"],
    )))
    .unwrap();
    wrong_link["links"]["core"]["latency_us"] = Value::from(-1.0);
    std::fs::write(d.join("negative.json"), wrong_link.to_string()).unwrap();
    for (args, fragment) in [
        (
            vec!["simulate", "--preset", "cray"],
            "unknown preset `cray`",
        ),
        (vec!["simulate"], "--preset"),
        (
            vec![
                "simulate",
                "--plan",
                "full",
                "--preset",
                "betzy",
                "--machine",
                "rack=2,core=4",
            ],
            "no link for level `rack`",
        ),
        (
            vec!["simulate", "--preset", "betzy", "--machine", "node=two"],
            "not a whole number",
        ),
        (
            vec![
                "simulate",
                "--plan",
                "full",
                "--preset",
                "betzy",
                "--machine",
                "node=0,socket=2,core=4",
            ],
            "fan-out 0",
        ),
        (
            vec!["simulate", "--preset", "betzy", "--placement", "diagonal"],
            "unknown placement",
        ),
        (
            vec!["simulate", "--preset", "betzy", "--artifacts", "gremlins"],
            "unknown artifact",
        ),
        (
            vec!["simulate", "--preset", "betzy", "--noise=-1"],
            "noise.sigma",
        ),
        (
            vec![
                "simulate", "--preset", "hpclab", "--sizes", "1,2", "--out", "x",
            ],
            "--sizes must include 0",
        ),
        (
            vec![
                "simulate",
                "--plan",
                "full",
                "--preset",
                "hpclab",
                "--max-size",
                "1KiB",
                "--matrix-sizes",
                "1MiB",
                "--out",
                "x",
            ],
            "matrix size 1MiB is above",
        ),
        (
            vec!["simulate", "--model", "broken.json"],
            "broken.json: not JSON",
        ),
        (
            vec!["simulate", "--model", "other.json"],
            "`format` is \"something-else\"",
        ),
        (vec!["simulate", "--model", "negative.json"], "links.core"),
        (vec!["simulate", "--model", "missing.json"], "missing.json"),
    ] {
        let out = lgate_plogp_in(d, &args);
        assert_clean_failure(&out, fragment);
    }
    assert!(!d.join("x").exists(), "no run directory is left behind");

    success(lgate_plogp_in(
        d,
        &[
            "simulate",
            "--plan",
            "full",
            "--preset",
            "hpclab",
            "--max-size",
            "64",
            "--out",
            "run",
            "-q",
        ],
    ));
    let again = lgate_plogp_in(
        d,
        &[
            "simulate",
            "--plan",
            "full",
            "--preset",
            "hpclab",
            "--max-size",
            "64",
            "--out",
            "run",
        ],
    );
    assert_clean_failure(&again, "run");
}

/// The ARI of every true level of a simulated staged run, clustered with the defaults.
fn staged_levels(d: &std::path::Path, args: &[&str]) -> Vec<(String, f64)> {
    let run = |a: &[&str]| success(lgate_plogp_in(d, a));
    let mut sim = vec!["simulate", "--out", "staged", "--force"];
    sim.extend_from_slice(args);
    run(&sim);
    run(&["cluster", "staged", "--output", "staged.json"]);
    let scores: Value = serde_json::from_str(&run(&[
        "score",
        "--truth",
        "staged",
        "--topology",
        "staged.json",
        "--json",
    ]))
    .unwrap();
    scores
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["level"].as_str().unwrap().to_string(),
                r["ari"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_staged_run_fills_what_it_did_not_measure_and_still_finds_every_level() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 256 ranks in 2 switches x 4 nodes x 2 sockets x 16 cores, every artifact (a slow node
    // too).
    let levels = staged_levels(
        d,
        &[
            "--preset",
            "fram",
            "--machine",
            "switch=2,node=4,socket=2,core=16",
            "--artifacts",
            "all",
        ],
    );
    for name in ["switch", "node", "socket"] {
        let ari = levels.iter().find(|l| l.0 == name).map(|l| l.1);
        assert_eq!(ari, Some(1.0), "{name}: {levels:?}");
    }
    let index: Value = serde_json::from_str(
        &std::fs::read_to_string(d.join("staged/matrices/index.json")).unwrap(),
    )
    .unwrap();
    // Inside each of 8 nodes every pair (8 x 496), between 28 pairs of nodes 4 each, and the
    // pairs refinement added where a pair of nodes' samples disagree (if any).
    let screen = std::fs::read_to_string(d.join("staged/screen.csv")).unwrap();
    let refined = screen.lines().filter(|l| l.contains(",refine,")).count() / 2;
    let measured = 8 * 496 + 28 * 4 + refined;
    assert_eq!(index["measured"]["measured_pairs"], measured);
    assert_eq!(index["measured"]["filled_pairs"], 256 * 255 / 2 - measured);
    assert_eq!(
        index["candidates"],
        serde_json::json!(["rtt:0", "rtt:64KiB"])
    );
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("staged/meta.json")).unwrap())
            .unwrap();
    assert_eq!(meta["schedule"]["plan"]["name"], "staged");
    let stages: Vec<&str> = meta["summary"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = ["hosts", "between", "refine", "alone", "sample"]
        .into_iter()
        .filter(|&s| s != "refine" || refined > 0)
        .collect();
    assert_eq!(stages, expected);
    assert!(d.join("staged/measurements.parquet").exists());

    // Plots and the report read a staged run, and say what share was filled.
    success(lgate_plogp_in(
        d,
        &["plot", "heatmap", "staged", "--output", "staged.png"],
    ));
    success(lgate_plogp_in(
        d,
        &["plot", "curves", "staged", "--output", "curves.png"],
    ));
    success(lgate_plogp_in(
        d,
        &["report", "staged", "--output", "staged.html"],
    ));
    let html = std::fs::read_to_string(d.join("staged.html")).unwrap();
    assert!(
        html.contains("of pairs not measured, filled from their hosts"),
        "plan row"
    );

    // The estimate lays out the stages; the full plan's is far longer.
    let staged = success(lgate_plogp_in(
        d,
        &["simulate", "--preset", "fram", "--estimate-time"],
    ));
    for line in [
        "stage hosts:",
        "stage between:",
        "stage sample:",
        "plan: staged",
    ] {
        assert!(staged.contains(line), "{staged}");
    }
    let full = success(lgate_plogp_in(
        d,
        &[
            "simulate",
            "--preset",
            "fram",
            "--estimate-time",
            "--plan",
            "full",
        ],
    ));
    assert!(full.contains("plan: full"), "{full}");
}

#[test]
fn health_names_a_slow_host_and_the_slow_first_pair_in_report_json_cluster_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    simulate_fram32(
        d,
        "4KiB",
        &[
            "--artifacts",
            "warmup,spikes,first-pair",
            "--slow-host",
            "fram-n3=1.3",
            "--out",
            "run",
        ],
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("run/report.json")).unwrap()).unwrap();
    let health: Vec<&str> = report["health"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(health.len(), 2, "{health:?}");
    assert!(
        health[0].starts_with("slow first pair in t:0"),
        "{health:?}"
    );
    let ratio = report["artifacts"][0]["ratio"].as_f64().unwrap();
    assert!((1.5..1.7).contains(&ratio), "the model's 1.6: {ratio}");
    assert!(
        health[1].starts_with("host fram-n3 is slow: its pairs take x1.2")
            || health[1].starts_with("host fram-n3 is slow: its pairs take x1.3"),
        "{health:?}"
    );
    assert!(
        health[1].contains("pairs inside its host at t:0"),
        "{health:?}"
    );
    let slow = &report["matrices"][1]["slow_hosts"];
    assert_eq!(slow.as_array().unwrap().len(), 1, "{slow}");
    // Noise of 5 % on every repetition, nothing made unstable.
    for u in report["unstable"].as_array().unwrap() {
        assert_eq!(u["unstable_hosts"].as_array().unwrap().len(), 0, "{u}");
    }
    let out = lgate_plogp_in(d, &["cluster", "run", "--output", "found.json"]);
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{summary}");
    assert!(
        summary.contains("  health: host fram-n3 is slow: its pairs take x1."),
        "{summary}"
    );
    assert!(summary.contains("  health: slow first pair"), "{summary}");
    success(lgate_plogp_in(d, &["report", "run", "--output", "r.html"]));
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    assert!(
        html.contains("<tr class=\"warn\"><td>fram-n3</td><td>8</td>"),
        "slow host row"
    );
    assert!(html.contains("<ul id=\"artifacts\">"));
    assert!(html.contains("alt=\"heat map of the repeat spread\""));
}

#[test]
fn bands_at_rank_offsets_are_named_and_none_is_invented() {
    // fram's 128 ranks with the preset's three bands (8 % slower pairs i, i + d) drawn by
    // the seed, beside every other artifact; and the same machines without bands.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (seed, offsets) in [
        ("3", vec![50, 93, 108]),
        ("4", vec![42, 87, 95]),
        ("5", vec![14, 64]),
    ] {
        for artifacts in ["all", "warmup,spikes,first-pair,slow-pairs,slow-node"] {
            success(lgate_plogp_in(
                d,
                &[
                    "simulate",
                    "--preset",
                    "fram",
                    "--plan",
                    "full",
                    "--max-size",
                    "1KiB",
                    "--seed",
                    seed,
                    "--artifacts",
                    artifacts,
                    "--quiet",
                    "--force",
                    "--out",
                    "run",
                ],
            ));
            let read = |f: &str| -> Value {
                serde_json::from_str(&std::fs::read_to_string(d.join("run").join(f)).unwrap())
                    .unwrap()
            };
            let (report, meta) = (read("report.json"), read("meta.json"));
            let mut found: Vec<u64> = report["artifacts"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|a| a["artifact"] == "band")
                .map(|a| a["offset"].as_u64().unwrap())
                .collect();
            found.sort_unstable();
            let mut drawn: Vec<u64> = meta["simulation"]["band_offsets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o.as_u64().unwrap())
                .collect();
            drawn.sort_unstable();
            if artifacts == "all" {
                assert_eq!(drawn, offsets, "the seed's bands");
                assert_eq!(found, offsets, "seed {seed}: {:#}", report["artifacts"]);
            } else {
                assert!(found.is_empty(), "seed {seed} without bands: {found:?}");
            }
        }
    }
}

#[test]
fn a_sweep_finds_the_bad_pairs_the_samples_miss_and_retests_them_alone() {
    // fram, 8 hosts of 8 ranks: its four slow pairs of cores (the preset's artifact, 2.5x) and
    // one more made 2x slower. The default plan samples 4 of each 64 pairs between two hosts
    // and finds none of them; the sweep screens all 1792, retests the slow ones alone beside
    // a usual pair and names all five in the health, and no other pair.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let simulate = |out: &str, extra: &[&str]| {
        let mut args = vec![
            "simulate",
            "--preset",
            "fram",
            "--machine",
            "switch=2,node=4,socket=2,core=4",
            "--slow-pair",
            "3:45=2",
            "--seed",
            "1",
            "--quiet",
            "--out",
            out,
        ];
        args.extend_from_slice(extra);
        success(lgate_plogp_in(d, &args));
        let text = std::fs::read_to_string(d.join(out).join("report.json")).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()
    };
    let confirmed = |report: &Value| -> Vec<(u64, u64)> {
        let mut pairs: Vec<(u64, u64)> = (report["slow_pairs"].as_array().into_iter().flatten())
            .filter(|p| p["confirmed"] == true)
            .map(|p| (p["i"].as_u64().unwrap(), p["j"].as_u64().unwrap()))
            .collect();
        pairs.sort_unstable();
        pairs
    };
    let sampled = simulate("staged", &[]);
    assert_eq!(confirmed(&sampled), [], "{sampled:#}");
    let swept = simulate("sweep", &["--sweep"]);
    assert_eq!(swept["tests"]["between"], 1792, "{:#}", swept["tests"]);
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("sweep/meta.json")).unwrap()).unwrap();
    let mut truth: Vec<(u64, u64)> = (meta["simulation"]["slow_pairs"].as_array().unwrap())
        .iter()
        .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
        .collect();
    truth.push((3, 45));
    truth.sort_unstable();
    assert_eq!(confirmed(&swept), truth, "{:#}", swept["slow_pairs"]);
    let health = swept["health"].to_string();
    assert!(
        health.contains("pair 3-45 (fram-n0 - fram-n5) is slow"),
        "{health}"
    );

    // More ranks than a sweep takes: one line, and nothing written.
    let big = lgate_plogp_in(
        d,
        &[
            "simulate",
            "--preset",
            "fram",
            "--machine",
            "node=130,socket=2,core=16",
            "--sweep",
            "--quiet",
            "--out",
            "big",
        ],
    );
    assert_clean_failure(&big, "--sweep tests every pair between hosts");
    assert!(!d.join("big").exists());
    // A pair of one rank is refused by the flag's parser (exit 2, as clap's), a rank the
    // machine does not have by the simulation (exit 1); neither writes anything.
    let same = lgate_plogp_in(
        d,
        &[
            "simulate",
            "--preset",
            "fram",
            "--slow-pair",
            "3:3=2",
            "--out",
            "x",
        ],
    );
    assert_eq!(same.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&same.stderr).contains("a pair joins two different ranks"));
    let outside = lgate_plogp_in(
        d,
        &[
            "simulate",
            "--preset",
            "fram",
            "--slow-pair",
            "3:999=2",
            "--out",
            "x",
        ],
    );
    assert_clean_failure(&outside, "--slow-pair 3:999=2: no rank 999");
    assert!(!d.join("x").exists());
}

#[test]
fn a_slow_pair_the_staged_plan_never_tests_is_said() {
    // `--slow-pair 3:100=2` on simulated fram gave a run identical to one without it, and no
    // word that the staged plan never tested that pair.
    let dir = tempfile::tempdir().unwrap();
    let run = |pair: &str| {
        common::lgate_plogp_in(
            dir.path(),
            &[
                "simulate",
                "--preset",
                "fram",
                "--slow-pair",
                pair,
                "--out",
                "run",
                "--force",
                "--quiet",
            ],
        )
    };
    let out = run("3:100=2");
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("--slow-pair 3:100=2: the staged plan did not test this pair"),
        "{said}"
    );
    // A pair inside a host is screened: nothing to warn of.
    let out = run("0:1=2");
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
}
