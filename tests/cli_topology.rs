//! End-to-end tests of `lgate-plogp topology`: the real binary on real files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn lgate_plogp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lgate-plogp"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn fixture(name: &str) -> PathBuf {
    package_dir().join("fixtures/topology").join(name)
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

/// A failure prints exactly one line naming the file, exits 1 and never panics.
fn assert_clean_failure(out: &Output, file: &Path, fragment: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    let prefix = format!("lgate-plogp: error: {}", file.display());
    assert!(stderr.starts_with(&prefix), "names the file: {stderr}");
    assert!(stderr.contains(fragment), "says {fragment:?}: {stderr}");
    assert!(out.stdout.is_empty(), "nothing on stdout");
}

#[test]
fn malformed_inputs_each_get_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str, &str)] = &[
        (
            "dup.lgate",
            "cluster {\n group { 0-3 }\n group { 3 }\n}\n",
            ":3:10: rank 3 is listed twice (first at 2:10)",
        ),
        (
            "empty-group.lgate",
            "cluster {\n group { }\n}\n",
            ":2:2: empty group",
        ),
        (
            "empty-cluster.lgate",
            "cluster { cluster { } group { 0 } }",
            ":1:11: empty cluster",
        ),
        (
            "unclosed.lgate",
            "cluster {\n group { 0-3 }\n",
            "`{` opened at 1:9 is never closed",
        ),
        (
            "extra-close.lgate",
            "cluster { group { 0 } }\n}\n",
            ":2:1: `}` closes nothing",
        ),
        (
            "reversed.lgate",
            "group { 9-2 }",
            "range 9-2 runs backwards",
        ),
        (
            "keyword.lgate",
            "cluster { grp { 0 } }",
            "unknown keyword `grp`",
        ),
        (
            "comma.lgate",
            "group { 0,,1 }",
            "expected a rank after `,`, found `,`",
        ),
        (
            "two-trees.lgate",
            "group { 0 }\ngroup { 1 }",
            ":2:1: unexpected `group` after the end",
        ),
        ("empty.lgate", "# nothing here\n\n", "the file is empty"),
        ("binary.lgate", "\u{1}\u{2}", "cannot tell the format"),
        (
            "huge.lgate",
            "group { 0-99999999999 }",
            "is beyond the largest topology this build reads (2097152 ranks",
        ),
        (
            "syntax.json",
            "{\"format\": \"lgate-plogp-topology\",\n \"version\": 1,, }",
            ":2:15: key must be a string",
        ),
        (
            "tag.json",
            r#"{"format": "other", "version": 1, "ranks": 1}"#,
            "at format: `format` is \"other\"",
        ),
        (
            "version.json",
            r#"{"format": "lgate-plogp-topology", "version": 9, "ranks": 1}"#,
            "version 9 is not supported",
        ),
        (
            "mixed.json",
            r#"{"format": "lgate-plogp-topology", "version": 1, "ranks": 2, "tree": {"children": [{"ranks": [0]}], "ranks": [1]}}"#,
            "at tree: a node has both children and ranks",
        ),
        (
            "nest.json",
            r#"{"format": "lgate-plogp-topology", "version": 1, "ranks": 4, "levels": [{"name": "node", "groups": [[0, 1], [2, 3]]}, {"name": "socket", "groups": [[0], [1, 2], [3]]}]}"#,
            "group {1,2} of level `socket` spans several groups of level `node`",
        ),
        (
            "labels.json",
            r#"{"format": "lgate-plogp-topology", "version": 1, "ranks": 2, "labels": ["a"], "tree": {"ranks": [0, 1]}}"#,
            "1 labels for 2 ranks",
        ),
        (
            "unclosed.nwk",
            "((0,1),(2,3);",
            "`(` opened at 1:1 is never closed",
        ),
        (
            "taxon.nwk",
            "((0,1),(two,3));",
            "`two` is not a rank number",
        ),
        (
            "dup.nwk",
            "((0,1),(1,3));",
            "rank 1 is listed twice (first at 1:5)",
        ),
    ];
    // Inputs sized to exhaust memory or the stack: refused at once, before allocating.
    let json = |ranks: &str| {
        format!(
            r#"{{"format":"lgate-plogp-topology","version":1,"ranks":{ranks},"levels":[{{"name":"a","groups":[[0,1]]}}]}}"#
        )
    };
    let hostile = [
        (
            "max.json".to_string(),
            json("18446744073709551615"),
            "rank count 18446744073709551615 is beyond the largest topology this build reads",
        ),
        (
            "tera.json".to_string(),
            json("1099511627776"),
            "rank count 1099511627776 is beyond",
        ),
        (
            "giga.json".to_string(),
            json("1000000000"),
            "rank count 1000000000 is beyond",
        ),
        (
            "range.lgate".to_string(),
            "group { 4-16777215 }".to_string(),
            ":1:11: rank 16777215 is beyond",
        ),
        (
            "deep.lgate".to_string(),
            "cluster { ".repeat(30_000),
            "clusters nested more than 1024 deep",
        ),
        (
            "deep.nwk".to_string(),
            "(".repeat(100_000),
            "clusters nested more than 1024 deep",
        ),
        (
            "seven".to_string(),
            "7\n".to_string(),
            "expected `(` opening a Newick tree of ranks, found `7` alone",
        ),
    ];
    let cases = cases
        .iter()
        .map(|&(n, t, f)| (n.to_string(), t.to_string(), f))
        .chain(hostile);
    for (name, text, fragment) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        for cmd in ["check", "show"] {
            let out = lgate_plogp(&["topology", cmd, path.to_str().unwrap()]);
            assert_clean_failure(&out, &path, fragment);
        }
    }
}

#[test]
fn rank_count_bounds_the_file() {
    let file = fixture("four-groups.lgate");
    let out = lgate_plogp(&["topology", "check", file.to_str().unwrap(), "--ranks", "20"]);
    assert_clean_failure(&out, &file, ":9:24: rank 23 is beyond the rank count 20");
    let out = lgate_plogp(&["topology", "check", file.to_str().unwrap(), "--ranks", "34"]);
    assert!(stdout(&out).contains("ranks 32,33 are not listed"));
}

#[test]
fn unreadable_paths() {
    let missing = Path::new("/nonexistent/topology.lgate");
    let out = lgate_plogp(&["topology", "show", missing.to_str().unwrap()]);
    assert_clean_failure(&out, missing, "No such file");
    let dir = tempfile::tempdir().unwrap();
    let out = lgate_plogp(&["topology", "check", dir.path().to_str().unwrap()]);
    assert_clean_failure(&out, dir.path(), "directory");
}

#[test]
fn usage_errors_exit_2() {
    let file = fixture("four-groups.lgate");
    let out = lgate_plogp(&[
        "topology",
        "convert",
        file.to_str().unwrap(),
        "--to",
        "yaml",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("possible values: lgate, json, newick"));
}

#[test]
fn fixtures_are_what_the_tool_writes() {
    let update = std::env::var_os("LGATE_UPDATE_FIXTURES").is_some();
    for name in ["four-groups", "unbalanced", "one-group"] {
        let source = fixture(&format!("{name}.lgate"));
        for (to, ext) in [("json", "json"), ("newick", "nwk")] {
            let out = lgate_plogp(&["topology", "convert", source.to_str().unwrap(), "--to", to]);
            let written = stdout(&out);
            let golden = fixture(&format!("{name}.{ext}"));
            if update {
                std::fs::write(&golden, &written).unwrap();
            }
            let expected = std::fs::read_to_string(&golden).unwrap_or_else(|e| {
                panic!("{}: {e} (set LGATE_UPDATE_FIXTURES=1)", golden.display())
            });
            assert_eq!(written, expected, "{} is out of date", golden.display());
            // Each converted file reads back to the same LGate file.
            let back = lgate_plogp(&[
                "topology",
                "convert",
                golden.to_str().unwrap(),
                "--to",
                "lgate",
            ]);
            let canonical = lgate_plogp(&[
                "topology",
                "convert",
                source.to_str().unwrap(),
                "--to",
                "lgate",
            ]);
            assert_eq!(stdout(&back), stdout(&canonical));
        }
    }
}

#[test]
fn show_draws_the_tree_and_levels() {
    let out = lgate_plogp(&[
        "topology",
        "show",
        fixture("unbalanced.lgate").to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert!(text.starts_with("15 ranks, 4 groups, 2 levels\n"), "{text}");
    assert!(
        text.contains("├─ cluster 0-7  (8 ranks)\n│  ├─ group 0-3  (4 ranks)\n"),
        "{text}"
    );
    assert!(text.contains("└─ group 14  (1 rank)\n"), "{text}");
    assert!(
        text.contains("level1  3 groups of 1-8 ranks (8, 6, 1)"),
        "{text}"
    );
    assert!(
        text.contains("level2  4 groups of 1-6 ranks (4, 4, 6, 1)"),
        "{text}"
    );
    let out = lgate_plogp(&[
        "topology",
        "show",
        fixture("one-group.lgate").to_str().unwrap(),
    ]);
    assert_eq!(
        stdout(&out),
        "16 ranks, 1 group, 0 levels\ngroup 0-15  (16 ranks)\n"
    );
}

#[test]
fn convert_writes_atomically_and_reads_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("t.json");
    std::fs::write(&out_path, "old contents").unwrap();
    let source = fixture("four-groups.lgate");
    let convert = |extra: &[&str]| {
        let mut args = vec![
            "topology",
            "convert",
            source.to_str().unwrap(),
            "--to",
            "json",
            "--output",
            out_path.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        lgate_plogp(&args)
    };
    // An existing file is replaced only with --force.
    let refused = convert(&[]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("exists; give --force"));
    assert_eq!(std::fs::read_to_string(&out_path).unwrap(), "old contents");
    let out = convert(&["--force"]);
    assert!(out.status.success());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    assert_eq!(json["format"], "lgate-plogp-topology");
    assert_eq!(json["ranks"], 32);
    assert_eq!(json["levels"].as_array().unwrap().len(), 2);

    // A failed conversion leaves the old file alone and no temporary files behind.
    let bad = dir.path().join("bad.lgate");
    std::fs::write(&bad, "cluster {").unwrap();
    let out = lgate_plogp(&[
        "topology",
        "convert",
        bad.to_str().unwrap(),
        "--to",
        "json",
        "--output",
        out_path.to_str().unwrap(),
        "--force",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(std::fs::read_to_string(&out_path)
        .unwrap()
        .contains("lgate-plogp-topology"));
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["bad.lgate", "t.json"]);

    // An output folder that does not exist is a clean error.
    let nowhere = dir.path().join("missing/out.json");
    let out = lgate_plogp(&[
        "topology",
        "convert",
        source.to_str().unwrap(),
        "--to",
        "json",
        "--output",
        nowhere.to_str().unwrap(),
    ]);
    assert_clean_failure(&out, &nowhere, "does not exist; create it first");

    // `-` reads stdin.
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_lgate-plogp"))
        .args(["topology", "convert", "-", "--to", "newick"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"cluster { group { 0-1 } group { 2 } }")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(stdout(&out), "((0,1),(2));\n");
}

#[test]
fn convert_writes_slurm_from_a_topology_with_host_labels() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hosts.json");
    std::fs::write(
        &file,
        r#"{"format": "lgate-plogp-topology", "version": 1, "ranks": 4,
            "tree": {"children": [{"ranks": [0, 1]}, {"ranks": [2, 3]}]},
            "labels": ["n1", "n1", "n2", "n2"]}"#,
    )
    .unwrap();
    let out = lgate_plogp(&[
        "topology",
        "convert",
        file.to_str().unwrap(),
        "--to",
        "slurm",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Both hosts under one switch, named as a Slurm hostlist.
    assert!(text.contains("SwitchName=s0 Nodes=n[1-2]\n"), "{text}");
    // Without labels there are no hosts to name: one clear line.
    let plain = fixture("four-groups.lgate");
    let out = lgate_plogp(&[
        "topology",
        "convert",
        plain.to_str().unwrap(),
        "--to",
        "slurm",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("needs host names"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// The package's directory as cargo gives it to this run (a binary left by a checkout elsewhere
/// that shares the target directory still holds that checkout's path), else as built.
fn package_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
        || env!("CARGO_MANIFEST_DIR").into(),
        std::path::PathBuf::from,
    )
}
