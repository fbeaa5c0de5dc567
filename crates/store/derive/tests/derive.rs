//! The derive stage on runs measured in-process: PLogP with raw samples, ping-pong with its
//! matrices, a corrupted journal named in the error, a finished run derived twice alike.

use lgate_derive::{derive, OutputOptions};
use lgate_harness::{run, InProcessWorld, PingPong, ProgressStyle, RunOptions};
use lgate_plogp_bench::{MessageSize, PLogP, PLogPOptions};
use lgate_rundir::{MatrixIndex, RunDir};

fn options(dir: &std::path::Path) -> RunOptions {
    RunOptions {
        progress: ProgressStyle::Quiet,
        seed: Some(3),
        ..RunOptions::new(dir.join("run"))
    }
}

#[test]
fn plogp_runs_derive_tables_raw_samples_matrices_and_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options(dir.path());
    let plogp = PLogPOptions {
        reps: 4,
        adaptive: false,
        raw: true,
        ..PLogPOptions::new(1024)
    };
    InProcessWorld::new(3).run(|t| {
        let mut test = PLogP::new(plogp.clone()).unwrap();
        run(&t, &mut test, &opts).unwrap()
    });
    let rd = RunDir::open(&dir.path().join("run")).unwrap();
    let outputs = OutputOptions {
        matrix_sizes: OutputOptions::default_matrix_sizes(1024),
        ..OutputOptions::default()
    };
    let files = derive(&rd, &outputs).unwrap();
    for f in [
        "measurements.parquet",
        "raw.parquet",
        "matrices/",
        "report.json",
    ] {
        assert!(files.iter().any(|x| x == f), "{f} in {files:?}");
    }
    let raw = std::fs::metadata(rd.file("raw.parquet")).unwrap().len();
    assert!(raw > 1000, "raw.parquet has the repetitions: {raw} bytes");
    let index = MatrixIndex::read(&rd).unwrap();
    assert!(index.find("t:1KiB").is_some(), "{:?}", index.names());
    // Deriving again gives the same matrices.
    let first = std::fs::read(rd.file("matrices/t_1024.csv")).unwrap();
    derive(&rd, &outputs).unwrap();
    assert_eq!(
        std::fs::read(rd.file("matrices/t_1024.csv")).unwrap(),
        first
    );
}

#[test]
fn ping_pong_runs_derive_rtt_matrices() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options(dir.path());
    InProcessWorld::new(4).run(|t| {
        let mut test = PingPong::new(vec![0, 1024, 4096], 4).unwrap();
        run(&t, &mut test, &opts).unwrap()
    });
    let rd = RunDir::open(&dir.path().join("run")).unwrap();
    let outputs = OutputOptions {
        matrix_sizes: OutputOptions::default_matrix_sizes(4096),
        ..OutputOptions::default()
    };
    let files = derive(&rd, &outputs).unwrap();
    assert_eq!(files, ["pingpong.csv", "matrices/"]);
    let index = MatrixIndex::read(&rd).unwrap();
    assert_eq!(index.names(), ["rtt:0", "rtt:1KiB"]);
    assert_eq!(index.default_matrix().unwrap().name, "rtt:0");
    let m = lgate_matrix::read_matrix(&rd.file("matrices/rtt_1024.csv")).unwrap();
    assert_eq!(m.matrix.len(), 4);
    let v = m.matrix.values();
    for i in 0..4 {
        for j in 0..4 {
            assert_eq!(v[[i, j]], v[[j, i]]);
            assert!(i == j || v[[i, j]] > 0.0, "{i}-{j}: {}", v[[i, j]]);
        }
    }
    // A size the run did not measure (but below its largest) is refused, by name.
    let missing = OutputOptions {
        matrix_sizes: vec![MessageSize(0), MessageSize(2048)],
        ..OutputOptions::default()
    };
    let err = derive(&rd, &missing).unwrap_err().to_string();
    assert!(err.contains("2KiB"), "{err}");
}

#[test]
fn a_corrupted_journal_entry_is_named() {
    let dir = tempfile::tempdir().unwrap();
    // JSON lines, to corrupt by text.
    let opts = RunOptions {
        journal: lgate_rundir::JournalFormat::Json,
        ..options(dir.path())
    };
    let plogp = PLogPOptions {
        reps: 2,
        adaptive: false,
        ..PLogPOptions::new(16)
    };
    InProcessWorld::new(2).run(|t| {
        let mut test = PLogP::new(plogp.clone()).unwrap();
        run(&t, &mut test, &opts).unwrap()
    });
    let rd = RunDir::open(&dir.path().join("run")).unwrap();
    let journal = rd.file(lgate_rundir::JOURNAL_JSON_FILE);
    let text = std::fs::read_to_string(&journal).unwrap();
    std::fs::write(&journal, text.replace("\"sizes\":", "\"sizes_gone\":")).unwrap();
    let outputs = OutputOptions {
        matrix_sizes: vec![MessageSize(0)],
        ..OutputOptions::default()
    };
    let err = derive(&rd, &outputs).unwrap_err().to_string();
    assert!(
        err.contains("journal.jsonl") && err.contains("pair 0-1") && err.contains("not a PLogP"),
        "{err}"
    );
}

/// Every file of a run directory but meta.json, by name.
fn files_of(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                if name != "meta.json" {
                    out.insert(name, std::fs::read(&path).unwrap());
                }
            }
        }
    }
    out
}

#[test]
fn a_staged_journal_read_a_line_at_a_time_derives_what_it_derives_whole() {
    let dir = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        topology: lgate_harness::TopologySource::Auto,
        plan: lgate_harness::PlanKind::Staged(lgate_harness::StagedPlanOptions {
            screen_sizes: vec![0, 1024],
            screen_reps: 4,
            ..Default::default()
        }),
        ..options(dir.path())
    };
    let plogp = PLogPOptions {
        reps: 4,
        adaptive: false,
        ..PLogPOptions::new(1024)
    };
    let hosts: Vec<String> = (0..6).map(|r| format!("h{}", r / 2)).collect();
    InProcessWorld::new(6).with_hosts(hosts).run(|t| {
        let mut test = PLogP::new(plogp.clone()).unwrap();
        run(&t, &mut test, &opts).unwrap()
    });
    let streamed = dir.path().join("run");
    let whole = dir.path().join("whole");
    let copied = std::process::Command::new("cp")
        .args(["-r", streamed.to_str().unwrap(), whole.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(copied.success());
    let outputs = OutputOptions {
        matrix_sizes: OutputOptions::default_matrix_sizes(1024),
        ..OutputOptions::default()
    };
    let rd = RunDir::open(&streamed).unwrap();
    let files = derive(&rd, &outputs).unwrap();
    assert!(files.iter().any(|f| f == "hosts/"), "{files:?}");
    let wd = RunDir::open(&whole).unwrap();
    let meta = wd.read_meta().unwrap();
    let journal = wd.read_journal().unwrap();
    lgate_derive::write_staged_outputs(&wd, &meta, &journal.entries, &outputs).unwrap();
    let (a, b) = (files_of(&streamed), files_of(&whole));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (name, bytes) in &a {
        assert!(bytes == &b[name], "{name} differs");
    }
    // The alone tests were compared with their pairs' side-by-side tests.
    let report = lgate_rundir::Report::read(&streamed).unwrap();
    let lgate_rundir::Report::Staged(staged) = report else {
        panic!("a staged report")
    };
    assert!(staged.tests["alone"] > 0, "{:?}", staged.tests);
    assert!(!staged.interference.is_empty(), "{:?}", staged.interference);
}
