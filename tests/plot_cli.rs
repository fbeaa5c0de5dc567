//! End-to-end tests of `lgate-plogp plot` and `lgate-plogp report`: files written by
//! extension, and clean failures.

mod common;

use common::{assert_clean_failure, lgate_plogp_in, success};

#[test]
fn plots_by_extension_and_clean_failures() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    success(lgate_plogp_in(
        d,
        &[
            "simulate",
            "--plan",
            "full",
            "--preset",
            "arm1",
            "--max-size",
            "4KiB",
            "--out",
            "run",
            "--quiet",
        ],
    ));
    success(lgate_plogp_in(
        d,
        &["cluster", "run", "--output", "found.json"],
    ));
    for (args, file, magic) in [
        (
            vec![
                "plot",
                "heatmap",
                "run",
                "--topology",
                "found.json",
                "-o",
                "h.png",
            ],
            "h.png",
            None,
        ),
        (
            vec![
                "plot", "heatmap", "run", "--matrix", "latency", "-o", "h.svg",
            ],
            "h.svg",
            Some("<svg"),
        ),
        (
            vec!["plot", "curves", "run", "-o", "c.svg"],
            "c.svg",
            Some("<svg"),
        ),
        (
            vec!["plot", "curves", "run", "--pairs", "0-1,0-2", "-o", "p.png"],
            "p.png",
            None,
        ),
        (
            vec!["plot", "dendrogram", "run", "-o", "d.png"],
            "d.png",
            None,
        ),
        (
            vec!["plot", "dendrogram", "found.json", "-o", "d.svg"],
            "d.svg",
            Some("<svg"),
        ),
        (
            vec!["report", "run", "-o", "r.html"],
            "r.html",
            Some("<!DOCTYPE html>"),
        ),
    ] {
        success(lgate_plogp_in(d, &args));
        let bytes = std::fs::read(d.join(file)).unwrap();
        match magic {
            Some(text) => assert!(String::from_utf8_lossy(&bytes).contains(text), "{file}"),
            None => assert_eq!(bytes[..4], [0x89, b'P', b'N', b'G'], "{file} is a PNG"),
        }
    }
    std::fs::write(d.join("m.csv"), "0,1\n1,0\n").unwrap();
    for (args, fragment) in [
        (
            vec!["plot", "heatmap", "run", "-o", "h.pdf"],
            "must end in .png or .svg",
        ),
        (
            vec!["plot", "heatmap", "nowhere", "-o", "fail.png"],
            "nowhere",
        ),
        (
            vec!["plot", "heatmap", "run", "--clip", "0.2", "-o", "fail.png"],
            "--clip",
        ),
        (
            vec![
                "plot",
                "heatmap",
                "run",
                "--topology",
                "missing.json",
                "-o",
                "fail.png",
            ],
            "missing.json",
        ),
        (
            vec!["plot", "curves", "m.csv", "-o", "fail-c.png"],
            "measurements.parquet",
        ),
        (
            vec![
                "plot",
                "curves",
                "run",
                "--pairs",
                "0-0",
                "-o",
                "fail-c.png",
            ],
            "not a pair",
        ),
        (
            vec![
                "plot",
                "curves",
                "run",
                "--pairs",
                "0-500",
                "-o",
                "fail-c.png",
            ],
            "pair 0-500 is not in",
        ),
        (
            vec!["report", "m.csv", "-o", "r.html"],
            "not a run directory",
        ),
        // An existing picture is replaced only with --force.
        (
            vec!["plot", "heatmap", "run", "-o", "h.png"],
            "exists; give --force",
        ),
    ] {
        assert_clean_failure(&lgate_plogp_in(d, &args), fragment);
    }
    assert!(!d.join("h.pdf").exists());
    // Without --output, a run's pictures and report go into the run directory; a matrix file
    // has no default.
    for (args, file) in [
        (vec!["plot", "heatmap", "run"], "run/heatmap.png"),
        (vec!["plot", "curves", "run"], "run/curves.png"),
        (vec!["plot", "dendrogram", "run"], "run/dendrogram.png"),
        (vec!["report", "run"], "run/report.html"),
    ] {
        success(lgate_plogp_in(d, &args));
        assert!(d.join(file).is_file(), "{file}");
    }
    assert_clean_failure(
        &lgate_plogp_in(d, &["plot", "heatmap", "m.csv"]),
        "give --output FILE",
    );
    assert_clean_failure(
        &lgate_plogp_in(d, &["report", "run"]),
        "exists; give --force",
    );
    let forced = lgate_plogp_in(d, &["plot", "heatmap", "run", "-o", "h.png", "--force"]);
    assert!(forced.status.success());
}

#[test]
fn a_report_says_its_plan_and_a_simulated_clock_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    success(lgate_plogp_in(
        d,
        &[
            "simulate",
            "--preset",
            "betzy",
            "--machine",
            "node=2,socket=2,core=4",
            "--max-size",
            "4KiB",
            "-o",
            "run",
            "--quiet",
        ],
    ));
    success(lgate_plogp_in(d, &["report", "run"]));
    let html = std::fs::read_to_string(d.join("run/report.html")).unwrap();
    // The staged plan's choices as words, not a JSON object.
    assert!(
        html.contains(
            "<td>staged (alone 8, concurrency unbounded, confidence 512, pairs between 4,"
        ),
        "{html:.3000}"
    );
    assert!(!html.contains("{&quot;") && !html.contains("{\""));
    // A simulation's clock starts at zero: the report says so rather than show 1970 bare.
    assert!(html.contains("the simulated clock starts at zero"));
    assert!(html.contains("simulated wall time"));
}
