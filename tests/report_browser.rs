//! `lgate-plogp report` opened in a real browser: Debian's Chromium, headless, loads the page
//! from a file with no network, logs no error, and the screenshot is not blank.

mod common;

use common::{lgate_plogp_in, success};
use std::process::{Command, Output};

fn chromium(args: &[&str]) -> Output {
    Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(args)
        .output()
        .expect("Debian's chromium is installed (scripts/setup installs it)")
}

#[test]
fn the_report_loads_in_a_headless_browser() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    success(lgate_plogp_in(
        d,
        &[
            "simulate",
            "--plan",
            "full",
            "--preset",
            "betzy",
            "--machine",
            "node=2,socket=2,core=8",
            "--max-size",
            "64KiB",
            "--out",
            "run",
            "--quiet",
        ],
    ));
    success(lgate_plogp_in(
        d,
        &["report", "run", "--output", "report.html"],
    ));
    let html = std::fs::read_to_string(d.join("report.html")).unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no network"
    );
    assert_eq!(
        html.matches("<img").count(),
        6,
        "two heat maps of t(0), those of t(1KiB) and t(64KiB), curves, dendrogram"
    );

    let url = format!("file://{}", d.join("report.html").display());
    let shot = d.join("shot.png");
    let out = chromium(&[
        "--window-size=1280,2000",
        &format!("--screenshot={}", shot.display()),
        &url,
    ]);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {log}");
    for bad in ["CONSOLE", "Uncaught", "net::ERR", "Not allowed to load"] {
        assert!(!log.contains(bad), "the page logged `{bad}`: {log}");
    }
    let image = image::open(&shot).expect("a PNG screenshot").to_rgb8();
    assert_eq!((image.width(), image.height()), (1280, 2000));
    let white = image
        .pixels()
        .filter(|p| p.0.iter().all(|&c| c > 245))
        .count();
    let share = 1.0 - white as f64 / (image.width() * image.height()) as f64;
    assert!(
        share > 0.2,
        "only {:.1} % of the screenshot is not white",
        share * 100.0
    );
    // The heat map's colours are there, not only text.
    let coloured = image
        .pixels()
        .filter(|p| {
            let [r, g, b] = p.0;
            r.max(g).max(b) - r.min(g).min(b) > 60
        })
        .count();
    assert!(coloured > 50_000, "{coloured} coloured pixels");

    let dom = chromium(&["--dump-dom", &url]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    for section in [
        "The run",
        "Distance matrix",
        "PLogP parameters",
        "Topology",
        "Slow ranks",
        "Commands",
        "Test parameters",
        "Placement of the 32 ranks",
        "t(m) at other sizes (2 of 2: t:1KiB, t:64KiB)",
        "Against the placement the run recorded",
    ] {
        assert!(dom.contains(section), "the loaded page has `{section}`");
    }
}
