//! `lgate-plogp report` opened in a real browser: Debian's Chromium, headless, loads the page
//! from a file with no network, logs no error, and the screenshot is not blank.

mod common;

use common::{lgate_plogp_in, simulate_fram32, success};
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
        7,
        "two heat maps of t(0), those of t(1KiB) and t(64KiB), curves, dendrogram, the \
         repeat spread"
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
        "Health (report.json)",
        "Commands",
        "Test parameters",
        "Placement of the 32 ranks",
        "t(m) at other sizes (2 of 2: t:1KiB, t:64KiB)",
        "Against the placement the run recorded",
    ] {
        assert!(dom.contains(section), "the loaded page has `{section}`");
    }
}

#[test]
fn a_host_with_another_governor_is_named_in_the_summary_report_json_and_the_report() {
    // Four simulated hosts, one set to `powersave` where the others run `performance`.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = lgate_plogp_in(
        d,
        &[
            "simulate",
            "--preset",
            "fram",
            "--machine",
            "node=4,socket=2,core=4",
            "--max-size",
            "1KiB",
            "--odd-host",
            "2:governor=powersave",
            "--out",
            "run",
        ],
    );
    assert!(out.status.success());
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(
        summary.contains("1 of 4 hosts differ from most")
            && summary.contains("fram-n2: governor powersave (performance on 3 of 4 hosts)"),
        "{summary}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("run/report.json")).unwrap()).unwrap();
    let odd = &report["hosts"]["odd"];
    assert_eq!(odd.as_array().unwrap().len(), 1, "{report:#}");
    assert_eq!(odd[0]["host"], "fram-n2");
    assert_eq!(odd[0]["fact"], "governor");
    assert_eq!(odd[0]["value"], "powersave");
    assert_eq!(odd[0]["usual"], "performance");
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("run/meta.json")).unwrap()).unwrap();
    assert_eq!(
        meta["hosts"].as_array().unwrap().len(),
        4,
        "one entry per host"
    );

    success(lgate_plogp_in(
        d,
        &["report", "run", "--output", "report.html"],
    ));
    let url = format!("file://{}", d.join("report.html").display());
    let dom = chromium(&["--dump-dom", &url]);
    assert!(dom.status.success());
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.contains("1 of 4 hosts differ from most"), "{dom}");
    assert!(dom.contains("fram-n2: governor powersave (performance on 3 of 4 hosts)"));
    // The facts table: one row for the three hosts alike, one for the odd host, marked.
    let table = &dom[dom.find("id=\"host-facts\"").expect("the facts table")..];
    let table = &table[..table.find("</table>").unwrap()];
    assert_eq!(table.matches("<tr").count(), 3, "{table}");
    assert!(
        table.contains("<td>fram-n0, fram-n1, fram-n3</td>"),
        "{table}"
    );
    assert!(
        table.contains("<tr class=\"warn\"><td>fram-n2</td>"),
        "{table}"
    );
}

#[test]
fn the_report_of_a_later_run_shows_what_changed_since_the_earlier() {
    // The same four hosts measured again with one link twice as slow.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    simulate_fram32(d, "1KiB", &["--out", "before"]);
    simulate_fram32(
        d,
        "1KiB",
        &["--rerun", "1", "--slow-link", "1:2=2", "--out", "after"],
    );
    success(lgate_plogp_in(
        d,
        &[
            "report",
            "after",
            "--since",
            "before",
            "--output",
            "report.html",
        ],
    ));
    let url = format!("file://{}", d.join("report.html").display());
    let dom = chromium(&["--dump-dom", &url]);
    assert!(dom.status.success());
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.contains("What changed since before"), "{dom}");
    assert!(
        dom.contains("<p id=\"diff-verdict\" class=\"warn\"><strong>changed: host pair fram-n1 - fram-n2</strong></p>"),
        "{dom}"
    );
    let table = &dom[dom.find("id=\"diff-changes\"").expect("the changes table")..];
    let table = &table[..table.find("</table>").unwrap()];
    assert_eq!(table.matches("<tr").count(), 2, "one change: {table}");
    assert!(
        table.contains("<td>host pair fram-n1 - fram-n2</td>"),
        "{table}"
    );
    assert!(dom.contains("alt=\"heat map of each pair's change over the noise\""));
    // Without --since there is no such section.
    success(lgate_plogp_in(
        d,
        &["report", "after", "--output", "alone.html"],
    ));
    let alone = std::fs::read_to_string(d.join("alone.html")).unwrap();
    assert!(!alone.contains("id=\"diff\""));
}
