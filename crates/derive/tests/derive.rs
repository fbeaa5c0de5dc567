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
    let opts = options(dir.path());
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
    let journal = rd.file(lgate_rundir::JOURNAL_FILE);
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
