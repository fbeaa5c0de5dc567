//! The inputs a new user tried that once misled or crashed the tool (issue 17), each with the
//! exit code and the words it gets now: matrices in the layouts people write, `.npy` arrays of
//! the wrong kind, runs that have not finished, outputs that cannot be written. Topology files
//! have their own table (`tests/cli_topology.rs`), outputs that would replace an input theirs
//! (`tests/cluster_cli.rs`), and every reader is fuzzed (`crates/store/inputs`).

mod common;

use std::path::Path;

use common::{lgate_plogp_in, success};

/// One hostile input: the command, its exit code, and a fragment of its standard error.
struct Case {
    what: &'static str,
    args: Vec<String>,
    code: i32,
    says: &'static str,
}

fn case(what: &'static str, args: &[&str], code: i32, says: &'static str) -> Case {
    Case {
        what,
        args: args.iter().map(|s| s.to_string()).collect(),
        code,
        says,
    }
}

/// The bytes of `array` as a `.npy` file.
fn npy<A: ndarray_npy::WritableElement, D: ndarray::Dimension>(
    array: ndarray::Array<A, D>,
) -> Vec<u8> {
    use ndarray_npy::WriteNpyExt;
    let mut out = Vec::new();
    array.write_npy(&mut out).unwrap();
    out
}

fn set_status(run: &Path, from: &str, to: &str) {
    let meta = run.join("meta.json");
    let text = std::fs::read_to_string(&meta).unwrap();
    assert!(text.contains(from), "{text}");
    std::fs::write(&meta, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn every_hostile_input_gets_its_exit_code_and_message() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let write = |name: &str, bytes: &[u8]| std::fs::write(d.join(name), bytes).unwrap();

    // Matrices as people write them.
    write("triangle-with-diagonal.csv", b"0\n1.5,0\n2,3,0\n");
    write("triangle-not-zero.csv", b"1.5\n2,3\n");
    write("spaces.csv", b"0 1 5 5\n1 0 5 5\n5 5 0 1\n5 5 1 0\n");
    write(
        "tabs.csv",
        b"# from numpy.savetxt\n0\t1\t5\n1\t0\t5\n5\t5\t0\n",
    );
    write("quoted.csv", b"\"0\",\"1.5\"\n\"1.5\",\"0\"\n");
    write("huge.csv", b"0,1e400\n1e400,0\n");
    write("comments.csv", b"# latency matrix\n# (none measured)\n");
    write("one-d.npy", &npy(ndarray::Array1::<f64>::zeros(9)));
    write(
        "three-d.npy",
        &npy(ndarray::Array3::<f64>::zeros((2, 2, 2))),
    );
    write("ints.npy", &npy(ndarray::Array2::<i64>::zeros((2, 2))));
    let whole = npy(ndarray::Array2::<f64>::zeros((3, 3)));
    write("truncated.npy", &whole[..whole.len() - 72 + 40]);

    // A simulated run, and copies of it: not finished, and without its matrices.
    let run = d.join("run");
    success(lgate_plogp_in(
        d,
        &[
            "simulate",
            "--preset",
            "fram",
            "--machine",
            "node=2,socket=2,core=2",
            "--out",
            "run",
            "--quiet",
        ],
    ));
    let copy = |name: &str| {
        let to = d.join(name);
        let status = std::process::Command::new("cp")
            .args(["-r", run.to_str().unwrap(), to.to_str().unwrap()])
            .status()
            .unwrap();
        assert!(status.success());
        to
    };
    let running = copy("running");
    set_status(
        &running,
        "\"status\": \"complete\"",
        "\"status\": \"running\"",
    );
    let stopped = copy("stopped");
    set_status(
        &stopped,
        "\"status\": \"complete\"",
        "\"status\": \"running\"",
    );
    // Stopped before deriving: neither the matrices nor the host blocks are there.
    std::fs::remove_dir_all(stopped.join("matrices")).unwrap();
    std::fs::remove_dir_all(stopped.join("hosts")).unwrap();
    let underived = copy("underived");
    std::fs::remove_dir_all(underived.join("matrices")).unwrap();
    std::fs::remove_dir_all(underived.join("hosts")).unwrap();
    // The host blocks alone (a staged run above 4096 ranks) are clustered by hosts.
    let hosts_only = copy("hosts-only");
    std::fs::remove_dir_all(hosts_only.join("matrices")).unwrap();
    std::fs::create_dir(d.join("out")).unwrap();

    let cases = [
        case("a lower triangle with its diagonal", &["cluster", "triangle-with-diagonal.csv"], 0, "lower triangle and diagonal only; mirrored"),
        case("a lower triangle whose diagonal is not 0", &["cluster", "triangle-not-zero.csv"], 1, "triangle-not-zero.csv:1, column 1: row 1 of this lower triangle ends in 1.5, not 0"),
        case("space-separated cells", &["cluster", "spaces.csv"], 0, "(4 ranks)"),
        case("tab-separated cells under a comment", &["cluster", "tabs.csv"], 0, "(3 ranks)"),
        case("quoted numbers", &["cluster", "quoted.csv"], 0, "(2 ranks)"),
        case("a number past f64", &["cluster", "huge.csv"], 1, "huge.csv:1, column 2: `1e400` is beyond the largest number a distance can have"),
        case("comments only", &["cluster", "comments.csv"], 1, "comments.csv:1: no rows of numbers: the file is empty, or holds only comments"),
        case("a 1-D .npy", &["cluster", "one-d.npy"], 1, "one-d.npy: not a 2-D float64 or float32 .npy array: a 1-D array of shape"),
        case("a 3-D .npy", &["cluster", "three-d.npy"], 1, "a 3-D array of shape"),
        case("an integer .npy", &["cluster", "ints.npy"], 1, "it holds `<i8` values: a distance matrix is float64"),
        case("a truncated .npy", &["cluster", "truncated.npy"], 1, "truncated: its header declares 3 x 3 <f8 (72 bytes of data), but 40 bytes follow"),
        case("a report into a folder", &["report", "run", "--output", "out/"], 1, "out/: is a folder; --output takes a file name"),
        case("a report into a folder that does not exist", &["report", "run", "--output", "nowhere/r.html"], 1, "the folder nowhere does not exist"),
        case("a plot into a folder", &["plot", "heatmap", "run", "--output", "out"], 1, "out: is a folder"),
        case("clustering a run not finished", &["cluster", "running"], 0, "the run has not finished (meta.json says `running`"),
        case("clustering a run stopped before deriving", &["cluster", "stopped"], 1, "stopped/matrices/index.json: not found: the run has not finished (meta.json says `running`"),
        case("reporting a run stopped before deriving", &["report", "stopped", "--output", "stopped.html"], 1, "a simulated run is not resumed: `lgate-plogp simulate --force --output stopped` with its options writes it again"),
        case("clustering a run whose matrices were deleted", &["cluster", "underived"], 1, "underived/matrices/index.json: not found: this run has no distance matrices yet"),
        case("clustering a run with host blocks only", &["cluster", "hosts-only"], 0, "clustered by hosts"),
        case("clustering host blocks with a method that needs the dense matrix", &["cluster", "hosts-only", "--algo", "hdbscan"], 1, "--algo hdbscan needs the dense matrix: measure or simulate with --dense"),
    ];
    let mut wrong = Vec::new();
    for c in &cases {
        let args: Vec<&str> = c.args.iter().map(String::as_str).collect();
        let out = lgate_plogp_in(d, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let ok = out.status.code() == Some(c.code)
            && !stderr.contains("panicked")
            && (stderr.contains(c.says) || c.code == 0 && stdout.contains(c.says))
            // A failure is one line.
            && (c.code == 0 || stderr.lines().count() == 1 && stderr.starts_with("lgate-plogp: error: "));
        if !ok {
            wrong.push(format!(
                "{} (`lgate-plogp {}`): exit {:?}, expected {} saying {:?}\nstderr: {stderr}stdout: {}",
                c.what,
                c.args.join(" "),
                out.status.code(),
                c.code,
                c.says,
                stdout.lines().take(5).collect::<Vec<_>>().join("\n")
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
    assert!(
        !d.join("stopped.html").exists(),
        "no report of a failed command"
    );

    // The report of a run not finished says so at the top.
    success(lgate_plogp_in(
        d,
        &["report", "running", "--output", "running.html"],
    ));
    let html = std::fs::read_to_string(d.join("running.html")).unwrap();
    assert!(
        html.contains("This run has not finished."),
        "the report says so"
    );
    success(lgate_plogp_in(
        d,
        &["report", "run", "--output", "run.html"],
    ));
    let html = std::fs::read_to_string(d.join("run.html")).unwrap();
    assert!(!html.contains("has not finished"), "only then");
}
