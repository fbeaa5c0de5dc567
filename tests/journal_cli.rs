//! Rank 0's record of the tests (issue 60): a binary journal by default, JSON lines on
//! request, printed and converted by `lgate-plogp journal`, resumed in the format it has.
#![cfg(feature = "mpi")]

mod common;

use common::{assert_clean_failure, lgate_plogp_in, mpirun, success};

/// The JSON lines `journal` prints for `input`, parsed.
fn lines(dir: &std::path::Path, input: &str) -> Vec<serde_json::Value> {
    success(lgate_plogp_in(dir, &["journal", input]))
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn a_staged_run_keeps_a_binary_journal_that_prints_and_converts_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    success(mpirun(4, &["measure", "--output", "run", "--quiet"], d));
    let bin = d.join("run/journal.bin");
    assert!(bin.is_file() && !d.join("run/journal.jsonl").exists());
    let entries = lines(d, "run");
    // Every pair of the 4 ranks screened, each with its stage and two screening sizes.
    let screened = entries.iter().filter(|e| e["stage"] == "hosts").count();
    assert_eq!(screened, 6, "{entries:?}");
    for e in entries.iter().filter(|e| e["stage"] == "hosts") {
        assert_eq!(
            e["result"]["sizes"].as_array().map(Vec::len),
            Some(2),
            "{e}"
        );
    }
    let bytes = std::fs::metadata(&bin).unwrap().len() as usize;
    let full = entries.iter().filter(|e| e["stage"] == "sample").count();
    assert!(
        bytes <= 8 + 64 * (entries.len() - full) + 4096 * full,
        "{bytes} bytes for {} tests ({full} full)",
        entries.len()
    );
    // To JSON lines and back: the same bytes, since a record read and written again is itself.
    success(lgate_plogp_in(d, &["journal", "run", "-o", "j.jsonl"]));
    success(lgate_plogp_in(
        d,
        &["journal", "j.jsonl", "-o", "again.bin"],
    ));
    assert_eq!(
        std::fs::read(d.join("again.bin")).unwrap(),
        std::fs::read(&bin).unwrap()
    );
    assert_eq!(lines(d, "j.jsonl"), entries);
    // An existing output is kept without --force; the run's own journal is never an output.
    let out = lgate_plogp_in(d, &["journal", "run", "-o", "again.bin"]);
    assert_clean_failure(&out, "again.bin: exists");
    let out = lgate_plogp_in(d, &["journal", "run", "-o", "run/journal.jsonl", "--force"]);
    assert_clean_failure(&out, "belongs to the run");
}

#[test]
fn json_lines_on_request_and_a_crashed_run_resumes_in_its_own_format() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = [
        "measure",
        "--plan",
        "full",
        "--output",
        "run",
        "--reps",
        "2",
        "--journal",
        "json",
        "--quiet",
        "--stop-after",
        "2",
    ];
    let crashed = mpirun(3, &args, d);
    assert!(!crashed.status.success(), "the crash stops the job");
    let jsonl = d.join("run/journal.jsonl");
    // Where the job stopped before its journal (not as --stop-after stops it), its words.
    let kept = std::fs::read_to_string(&jsonl)
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e}; the job said: {}",
                jsonl.display(),
                String::from_utf8_lossy(&crashed.stderr)
            )
        })
        .lines()
        .count();
    assert!(kept >= 2, "{kept} lines kept");
    // Resumed without --journal: it goes on in JSON lines, and every pair is there once.
    success(mpirun(3, &["measure", "--resume", "run", "--quiet"], d));
    assert!(!d.join("run/journal.bin").exists());
    let entries: Vec<serde_json::Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut pairs: Vec<(u64, u64)> = (entries.iter())
        .map(|e| (e["i"].as_u64().unwrap(), e["j"].as_u64().unwrap()))
        .collect();
    pairs.sort_unstable();
    assert_eq!(pairs, vec![(0, 1), (0, 2), (1, 2)]);
    assert_eq!(lines(d, "run"), entries);
}

#[test]
fn a_journal_that_is_not_one_is_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("journal.bin"), b"not a journal\n").unwrap();
    let out = lgate_plogp_in(d, &["journal", "journal.bin"]);
    assert_clean_failure(
        &out,
        "journal.bin:1: does not start as a binary journal does",
    );
    // A record of an unknown kind, after a good header.
    std::fs::write(d.join("odd.bin"), b"LGJRNL1\n\x03\x0f\x00\x01").unwrap();
    let out = lgate_plogp_in(d, &["journal", "odd.bin"]);
    assert_clean_failure(&out, "odd.bin:1: record at byte 8: ");
    let out = lgate_plogp_in(d, &["journal", "missing"]);
    assert_clean_failure(&out, "missing: no such run directory or journal file");
    // A record cut short at the end is what a crash leaves: left out, and said.
    std::fs::write(d.join("torn.bin"), b"LGJRNL1\n\x40\x01").unwrap();
    let out = lgate_plogp_in(d, &["journal", "torn.bin"]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cut short"));
}
