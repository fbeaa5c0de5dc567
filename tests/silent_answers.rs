//! Inputs that once gave a wrong answer with exit 0 and no word (issue 47): a byte-order mark
//! that ate a rank, a pair of a rank with itself dropped silently, `--k 0` taken as one group,
//! a resume without its journal measuring everything again.

mod common;

use common::{lgate_plogp_in, success};

/// A 4 x 4 matrix of two pairs, as a spreadsheet saves it: headerless, with or without a
/// UTF-8 byte-order mark.
const MATRIX: &[u8] = b"0,1,5,5\n1,0,5,5\n5,5,0,1\n5,5,1,0\n";
const BOM: &[u8] = b"\xef\xbb\xbf";

fn with_bom(bytes: &[u8]) -> Vec<u8> {
    [BOM, bytes].concat()
}

#[test]
fn a_byte_order_mark_is_not_part_of_the_first_cell() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("plain.csv"), MATRIX).unwrap();
    std::fs::write(d.join("bom.csv"), with_bom(MATRIX)).unwrap();
    let plain = success(lgate_plogp_in(
        d,
        &["cluster", "plain.csv", "--format", "json"],
    ));
    let out = lgate_plogp_in(d, &["cluster", "bom.csv", "--format", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(stderr.contains("(4 ranks)"), "{stderr}");
    assert_eq!(success(out), plain, "the same answer as without the mark");

    // A pair list and a topology file, likewise.
    let pairs = b"i,j,value\n0,1,1\n0,2,5\n0,3,5\n1,2,5\n1,3,5\n2,3,1\n";
    std::fs::write(d.join("pairs.csv"), with_bom(pairs)).unwrap();
    success(lgate_plogp_in(
        d,
        &["import", "pairs", "pairs.csv", "-o", "run"],
    ));
    let topology = b"cluster {\n  group { 0-1 }\n  group { 2-3 }\n}\n";
    std::fs::write(d.join("t.lgate"), with_bom(topology)).unwrap();
    let shown = success(lgate_plogp_in(d, &["topology", "show", "t.lgate"]));
    assert!(shown.contains("4 ranks"), "{shown}");
}

#[test]
fn a_pair_of_a_rank_with_itself_is_said_to_be_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pairs = b"i,j,value\n0,0,0\n0,1,1\n0,2,5\n0,3,5\n1,2,5\n1,3,5\n2,3,1\n3,3,0\n";
    std::fs::write(d.join("pairs.csv"), pairs).unwrap();
    let out = lgate_plogp_in(d, &["import", "pairs", "pairs.csv", "-o", "run"]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        stderr.contains("2 line(s) pair a rank with itself (the first: line 2)"),
        "{stderr}"
    );
    success(out);
}

#[test]
fn zero_groups_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("m.csv"), MATRIX).unwrap();
    for algo in ["agglomerative", "kmedoids", "kmeans", "spectral"] {
        let out = lgate_plogp_in(d, &["cluster", "m.csv", "--algo", algo, "--k", "0"]);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(1), "{algo}: {stderr}");
        assert!(
            stderr.contains("--k must be at least 1"),
            "{algo}: {stderr}"
        );
    }
    // Negative numbers are read as numbers (not as unknown flags) and refused where they
    // mean nothing, never taken as singletons.
    for (args, says) in [
        (
            &["--algo", "agglomerative", "--k", "-1"][..],
            "invalid value '-1' for '--k <K>'",
        ),
        (
            &["--algo", "agglomerative", "--height", "-1"],
            "--height -1 must be a positive distance",
        ),
        (
            &["--algo", "dbscan", "--eps", "-2"],
            "--eps -2 must be a positive distance",
        ),
        (
            &["--algo", "components", "--threshold", "0"],
            "--threshold 0 must be a positive distance",
        ),
    ] {
        let mut all = vec!["cluster", "m.csv"];
        all.extend_from_slice(args);
        let out = lgate_plogp_in(d, &all);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert_ne!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn messages_say_what_the_file_is_and_where_to_go() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Semicolons, as spreadsheets in many locales save: the separator is named.
    std::fs::write(d.join("semi.csv"), b"0;1;5;5\n1;0;5;5\n5;5;0;1\n5;5;1;0\n").unwrap();
    std::fs::write(d.join("semi-pairs.csv"), b"i;j;value\n0;1;1\n").unwrap();
    for (args, says) in [
        (
            &["cluster", "semi.csv"][..],
            "semi.csv:1: cells separated by `;`",
        ),
        (
            &["import", "pairs", "semi-pairs.csv", "-o", "run"],
            "semi-pairs.csv:1: fields separated by `;`",
        ),
        (&["cluster", "-"], "standard input is not read"),
    ] {
        let out = lgate_plogp_in(d, args);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn force_replaces_a_run_whole() {
    // A staged run with its screening table, host blocks and report, replaced by a full run:
    // nothing of the first is left beside the second.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let machine = [
        "--preset",
        "fram",
        "--machine",
        "node=2,socket=2,core=2",
        "--quiet",
    ];
    let mut staged = vec!["simulate", "--output", "run"];
    staged.extend_from_slice(&machine);
    success(lgate_plogp_in(d, &staged));
    success(lgate_plogp_in(d, &["report", "run"]));
    for name in ["screen.csv", "hosts", "report.html"] {
        assert!(d.join("run").join(name).exists(), "{name}");
    }
    let mut full = vec!["simulate", "--plan", "full", "--force", "--output", "run"];
    full.extend_from_slice(&machine);
    success(lgate_plogp_in(d, &full));
    for name in ["screen.csv", "hosts", "report.html"] {
        assert!(
            !d.join("run").join(name).exists(),
            "{name} of the replaced run"
        );
    }
    assert!(d.join("run/measurements.parquet").is_file());
}

#[test]
fn a_resume_without_its_journal_is_refused_not_measured_again() {
    // Item 4: a finished run whose journal is gone measured everything again and then said
    // "120 pairs measured of 60".
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = [
        "measure", "--plan", "full", "--out", "run", "--reps", "2", "--quiet",
    ];
    success(common::mpirun(3, &args, d));
    let run = d.join("run");
    let meta = std::fs::read(run.join("meta.json")).unwrap();
    std::fs::remove_file(run.join("journal.bin")).unwrap();
    let out = common::mpirun(3, &["measure", "--resume", "run", "--quiet"], d);
    // Said once, by rank 0; mpirun adds its own lines about the exit status.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let said = "meta.json records 3 tests measured but";
    assert_eq!(stderr.matches(said).count(), 1, "{stderr}");
    assert!(stderr.contains("journal.bin holds 0"), "{stderr}");
    assert_eq!(
        std::fs::read(run.join("meta.json")).unwrap(),
        meta,
        "the refused resume leaves the run's record as it was"
    );
    assert!(!run.join("journal.bin").exists());
}

#[test]
fn counts_beyond_what_memory_and_time_allow_are_refused_in_one_line() {
    // Item 8: `simulate --reps 4000000000` aborted on a failed allocation with a backtrace and
    // left a directory with only a "running" meta.json.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let machine = ["--preset", "fram", "--machine", "node=2,socket=2,core=2"];
    let cases: [(&[&str], &str); 5] = [
        (
            &["--reps", "4000000000"],
            "--reps 4000000000 is more than this tool takes",
        ),
        (
            &["--screen-reps", "4000000000"],
            "--screen-reps 4000000000 is more",
        ),
        (&["--sweeps", "4000000000"], "--sweeps 4000000000 is more"),
        (
            &["--plan", "full", "--reps", "4000000000"],
            "32.0 GB of memory",
        ),
        (
            &["--machine", "node=2,socket=2,core=100000"],
            "a host of 200000 ranks is more than this tool takes",
        ),
    ];
    for (extra, says) in cases {
        let mut args = vec!["simulate", "--output", "run", "--quiet"];
        if !extra.contains(&"--machine") {
            args.extend_from_slice(&machine);
        } else {
            args.extend_from_slice(&machine[..2]);
        }
        args.extend_from_slice(extra);
        let out = lgate_plogp_in(d, &args);
        common::assert_clean_failure(&out, says);
        assert!(!d.join("run").exists(), "{extra:?} left a run directory");
    }
}

#[test]
fn host_names_the_tool_wrote_into_an_lgate_file_are_read_back() {
    // Item 6: `topology convert x.lgate --to slurm` said it needed host names that the tool
    // itself had written into the file.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    success(lgate_plogp_in(
        d,
        &[
            "simulate",
            "--preset",
            "fram",
            "--machine",
            "node=2,socket=1,core=2",
            "--output",
            "run",
            "--quiet",
        ],
    ));
    success(lgate_plogp_in(
        d,
        &["cluster", "run", "--output", "x.lgate", "--format", "lgate"],
    ));
    let lgate = std::fs::read_to_string(d.join("x.lgate")).unwrap();
    assert!(lgate.contains("# fram-n0"), "{lgate}");
    let slurm = success(lgate_plogp_in(
        d,
        &["topology", "convert", "x.lgate", "--to", "slurm"],
    ));
    assert!(slurm.contains("Nodes=fram-n[0-1]"), "{slurm}");
}

#[test]
fn the_docs_write_times_as_the_readme_says() {
    // Item 11: the README says times are written `us` everywhere, and the docs wrote `µs`.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    let readme = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        readme.contains("written `us`"),
        "the README says how times are written"
    );
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<usize> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.contains("µs"))
            .map(|(k, _)| k + 1)
            .collect();
        assert!(
            lines.is_empty(),
            "{}: µs on lines {lines:?}",
            path.display()
        );
    }
}

#[test]
fn a_resume_under_several_ranks_says_each_thing_once() {
    // Item 9: `--resume` under `-np 2` printed its output twice.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = ["measure", "--out", "run", "--screen-reps", "2", "--quiet"];
    success(common::mpirun(2, &args, d));
    let out = common::mpirun(2, &["measure", "--resume", "run"], d);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "",
        "nothing on stdout"
    );
    for once in [
        "pair tests to run",
        "nothing left to measure",
        "wrote run/",
        "job: ",
    ] {
        assert_eq!(stderr.matches(once).count(), 1, "{once:?} once: {stderr}");
    }
}

#[test]
fn a_resume_repeats_the_launch_or_is_refused() {
    // Item 3: the interrupt hint left out the launcher's options, and a resume without the
    // binding was taken silently, overwriting the placement.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = [
        "measure",
        "--plan",
        "full",
        "--out",
        "run",
        "--reps",
        "2",
        "--stop-after",
        "2",
    ];
    let out = common::mpirun_bound(4, &args, d);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "--stop-after stops the run: {stderr}"
    );
    let hint = stderr
        .lines()
        .find(|l| l.contains("continue it with:"))
        .unwrap_or_else(|| panic!("a hint to continue: {stderr}"));
    assert!(
        hint.contains("--bind-to core:overload-allowed") && hint.ends_with("measure --resume run"),
        "the hint repeats the launch: {hint}"
    );
    let meta = std::fs::read(d.join("run/meta.json")).unwrap();
    // Unbound now: refused, naming the difference.
    let out = common::mpirun(4, &["measure", "--resume", "run", "--quiet"], d);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let said = "cannot resume with the ranks placed otherwise: rank 0 ran on";
    assert_eq!(stderr.matches(said).count(), 1, "{stderr}");
    assert!(stderr.contains("launch it as the run was"), "{stderr}");
    assert_eq!(std::fs::read(d.join("run/meta.json")).unwrap(), meta);
    // Launched as it was: resumed.
    success(common::mpirun_bound(
        4,
        &["measure", "--resume", "run", "--quiet"],
        d,
    ));
}

#[test]
fn sizes_prints_latency_and_bandwidth_per_size_as_osu_and_mpigraph_users_read_them() {
    // Item 12: a size/latency table on stdout, bandwidth in MB/s or another unit.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    common::simulate_fram32(d, "1MiB", &["--out", "run"]);
    let text = success(lgate_plogp_in(d, &["sizes", "run"]));
    assert!(
        text.contains("latency (us)") && text.contains("bandwidth (MB/s)"),
        "{text}"
    );
    // One block per placement class of the simulated machine.
    for class in ["same socket", "same node", "different node"] {
        assert!(text.contains(&format!("# {class}: ")), "{class}: {text}");
    }

    // The same numbers for programs: latency is RTT/2 and bandwidth size/g, in the unit asked.
    let rows = |units: &str| -> Vec<Vec<String>> {
        success(lgate_plogp_in(
            d,
            &["sizes", "run", "--format", "csv", "--units", units],
        ))
        .lines()
        .map(|l| l.split(',').map(String::from).collect())
        .collect()
    };
    let mb = rows("MB/s");
    let gbit = rows("Gbit/s");
    assert_eq!(
        mb[0].join(","),
        "line,pairs,size_bytes,latency_us,bandwidth_mb_per_s,rtt_us,os_us,or_us,g_us"
    );
    assert_eq!(gbit[0][4], "bandwidth_gbit_per_s");
    let sizes: std::collections::BTreeSet<&str> = mb[1..].iter().map(|r| r[2].as_str()).collect();
    assert_eq!(
        sizes.len(),
        22,
        "0 and 21 powers of two up to 1MiB: {sizes:?}"
    );
    let num = |s: &str| s.parse::<f64>().unwrap();
    let mut streams = 0;
    for (a, b) in mb[1..].iter().zip(&gbit[1..]) {
        assert_eq!(num(&a[3]), num(&a[5]) / 2.0, "latency is RTT/2: {a:?}");
        if a[2] == "0" {
            assert_eq!(a[4], "", "no bandwidth at 0 bytes");
            continue;
        }
        let (m, g) = (num(&a[2]), num(&a[8]));
        assert!((num(&a[4]) - m / g).abs() <= 1e-9 * num(&a[4]), "{a:?}");
        assert!((num(&b[4]) - num(&a[4]) * 8.0 / 1000.0).abs() <= 1e-9 * num(&b[4]));
        streams += 1;
    }
    assert!(streams > 0);
    // Bandwidth grows with the size until the link is full: 1 MiB streams faster than 1 byte.
    let at = |size: &str| {
        (mb[1..].iter())
            .find(|r| r[0] == "different node" && r[2] == size)
            .map(|r| num(&r[4]))
            .unwrap()
    };
    assert!(
        at("1048576") > 100.0 * at("1"),
        "{} vs {}",
        at("1048576"),
        at("1")
    );

    let json = success(lgate_plogp_in(d, &["sizes", "run", "--format", "json"]));
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["bandwidth_unit"], "MB/s");
    assert_eq!(json["lines"].as_array().unwrap().len(), 3);

    // A unit it does not know is refused, naming the ones it does.
    let out = lgate_plogp_in(d, &["sizes", "run", "--units", "kB/s"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("MB/s, MiB/s, GB/s, Gbit/s"));
}

/// Rewrites every rank's allowed CPUs in `run`'s meta.json by `cpuset(rank's record)`.
fn set_cpusets(run: &std::path::Path, cpuset: impl Fn(&serde_json::Value) -> String) {
    let path = run.join("meta.json");
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let sets: Vec<String> = meta["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(&cpuset)
        .collect();
    for (r, set) in meta["ranks"].as_array_mut().unwrap().iter_mut().zip(sets) {
        r["cpuset"] = set.into();
    }
    std::fs::write(&path, serde_json::to_string_pretty(&meta).unwrap()).unwrap();
}

/// `cluster RUN`: the names of the levels found and the summary.
fn levels_found(d: &std::path::Path, run: &str) -> (Vec<String>, String) {
    let out = lgate_plogp_in(d, &["cluster", run, "--output", &format!("{run}.json")]);
    let summary = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{summary}");
    let topology: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join(format!("{run}.json"))).unwrap())
            .unwrap();
    let names = (topology["levels"].as_array().unwrap().iter())
        .map(|l| l["name"].as_str().unwrap().to_string())
        .collect();
    (names, summary)
}

/// `score --truth RUN`'s recorded levels.
fn recorded_levels(d: &std::path::Path, run: &str) -> Vec<String> {
    let table = success(lgate_plogp_in(
        d,
        &[
            "score",
            "--truth",
            run,
            "--topology",
            &format!("{run}.json"),
        ],
    ));
    table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

#[test]
fn a_level_inside_hosts_is_named_and_kept_only_where_the_ranks_were_bound_apart() {
    // Item 2: unbound ranks share their CPUs, so where each started is no placement, and a
    // split between them is the scheduler's, not the machine's.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for run in ["one-cpu", "socket-bound", "unbound"] {
        common::simulate_fram32(d, "1KiB", &["--out", run]);
    }
    // As simulated: each rank on a CPU of its own.
    let (levels, _) = levels_found(d, "one-cpu");
    assert_eq!(levels, ["node", "socket"]);
    assert_eq!(recorded_levels(d, "one-cpu"), ["node", "socket", "core"]);

    // Bound to their socket's CPUs: the socket is a placement, the core is not.
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("one-cpu/meta.json")).unwrap())
            .unwrap();
    let socket_cpus = |r: &serde_json::Value| -> String {
        let cpus: Vec<String> = (meta["ranks"].as_array().unwrap().iter())
            .filter(|o| o["host"] == r["host"] && o["socket"] == r["socket"])
            .map(|o| o["cpu"].to_string())
            .collect();
        cpus.join(",")
    };
    set_cpusets(&d.join("socket-bound"), socket_cpus);
    let (levels, summary) = levels_found(d, "socket-bound");
    assert_eq!(levels, ["node", "socket"], "{summary}");
    assert!(!summary.contains("left out"), "{summary}");
    assert_eq!(recorded_levels(d, "socket-bound"), ["node", "socket"]);

    // Free on all of their host's CPUs: no level inside a host is structure, and none is
    // named after a placement the run did not pin.
    set_cpusets(&d.join("unbound"), |_| "0-7".into());
    let (levels, summary) = levels_found(d, "unbound");
    assert_eq!(levels, ["node"], "{summary}");
    assert!(
        summary.contains("left out: level2 (8 groups) puts ranks")
            && summary.contains("not bound apart")
            && summary.contains("--bind-to core"),
        "{summary}"
    );
    assert_eq!(recorded_levels(d, "unbound"), ["node"]);
}

#[test]
fn unbound_ranks_on_one_host_give_no_level_and_no_core() {
    // Item 2 as the user met it: `mpirun -np 4 lgate-plogp measure` unbound on two cores.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = common::mpirun(4, &["measure", "--out", "run", "--quiet"], d);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("run/meta.json")).unwrap()).unwrap();
    let sets: Vec<&str> = (meta["ranks"].as_array().unwrap().iter())
        .map(|r| r["cpuset"].as_str().unwrap_or("-"))
        .collect();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 || sets.iter().all(|s| !s.contains(['-', ','])) {
        common::skip(
            "silent_answers::unbound_ranks_on_one_host_give_no_level_and_no_core",
            &format!(
                "{cpus} CPU(s), or the launcher bound every rank to one CPU ({sets:?}): no \
                 unbound ranks to measure"
            ),
        );
        return;
    }
    let (levels, summary) = levels_found(d, "run");
    assert!(levels.is_empty(), "{levels:?}: {summary}");
    assert!(!recorded_levels(d, "run").contains(&"core".to_string()));
}

/// A negative number given to a numeric flag reaches the check that says what the flag takes,
/// instead of being read as an unknown flag (`unexpected argument '-1'`).
#[test]
fn negative_numbers_reach_the_flags_own_checks() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("m.csv"), MATRIX).unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "simulate", "--preset", "fram", "--noise", "-1", "--output", "sim",
            ],
            "noise",
        ),
        (
            &[
                "simulate", "--preset", "fram", "--fast", "-0.5", "--output", "sim",
            ],
            "--fast",
        ),
        (
            &[
                "plot", "heatmap", "m.csv", "--clip", "-1", "--output", "h.png",
            ],
            "--clip",
        ),
        (
            &["diff", "m.csv", "m.csv", "--threshold", "-2"],
            "--threshold",
        ),
    ];
    for (args, says) in cases {
        let out = lgate_plogp_in(d, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // `diff` keeps 1 for "changed": its errors exit 2.
        let code = if args[0] == "diff" { 2 } else { 1 };
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("unexpected argument"),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains(says), "{args:?} names {says}: {stderr}");
        assert!(!d.join("sim").exists(), "{args:?} left a folder");
        assert!(!d.join("h.png").exists(), "{args:?} left a picture");
    }
}

#[test]
fn a_flag_that_would_be_ignored_or_cost_without_bound_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("m.csv"), MATRIX).unwrap();
    let cases: [(&[&str], &str); 2] = [
        (
            &[
                "cluster",
                "m.csv",
                "--algo",
                "agglomerative",
                "--k",
                "2",
                "--height",
                "1",
            ],
            "cannot be used with",
        ),
        (
            &["cluster", "m.csv", "--resamples", "1000000"],
            "at most 1000",
        ),
    ];
    for (args, says) in cases {
        let out = lgate_plogp_in(d, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?} says {says}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?} wrote a topology");
    }
    // No resamples asked for: said so, whatever the run's mask.
    let out = lgate_plogp_in(d, &["cluster", "m.csv", "--resamples", "0"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("confidence: not estimated (--resamples 0)"),
        "{stderr}"
    );
}
