//! `lgate-plogp report` opened in a real browser: Debian's Chromium, headless, loads the page
//! from a file with no network, logs no error, the screenshot is not blank, and at 1400 px
//! the page does not scroll sideways, shows the topology in its first screen and has no
//! empty section.

mod common;

use common::{lgate_plogp_in, simulate_fram32, success};
use std::process::{Command, Output};

/// A small simulated run with every pair measured (the full plan), two hosts of 16 ranks.
const BETZY_FULL: &[&str] = &[
    "simulate",
    "--plan",
    "full",
    "--preset",
    "betzy",
    "--machine",
    "node=2,socket=2,core=8",
    "--max-size",
    "64KiB",
    "--quiet",
];

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
    success(lgate_plogp_in(d, &[BETZY_FULL, &["--out", "run"]].concat()));
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
    // Tall enough to hold the heat maps, which come after the topology and the health.
    let out = chromium(&[
        "--window-size=1280,6000",
        &format!("--screenshot={}", shot.display()),
        &url,
    ]);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {log}");
    for bad in ["CONSOLE", "Uncaught", "net::ERR", "Not allowed to load"] {
        assert!(!log.contains(bad), "the page logged `{bad}`: {log}");
    }
    let image = image::open(&shot).expect("a PNG screenshot").to_rgb8();
    assert_eq!((image.width(), image.height()), (1280, 6000));
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

/// Measures the report at `path` as laid out in a 1400 x 900 window: a copy with a script
/// that writes, into the page, the page's width against the window's, where the topology's
/// table ends, and each heading with nothing under it. The report itself holds no script.
fn layout_at_1400(path: &std::path::Path) -> (f64, f64, f64, f64, Vec<String>) {
    const PROBE: &str = r##"<script>
window.addEventListener("load", () => {
  const root = document.documentElement;
  const table = document.querySelector("#topology ~ table");
  const health = document.getElementById("health");
  const empty = [];
  const heads = Array.from(document.querySelectorAll("h2, h3, h4"));
  for (const h of heads) {
    const rank = Number(h.tagName[1]);
    let e = h.nextElementSibling, content = false;
    while (e && !/^H[1-4]$/.test(e.tagName)) {
      if (e.textContent.trim() !== "" || e.querySelector("img") || e.tagName === "IMG") content = true;
      e = e.nextElementSibling;
    }
    const sub = e && /^H[2-4]$/.test(e.tagName) && Number(e.tagName[1]) > rank;
    if (!content && !sub) empty.push(h.textContent);
  }
  const out = document.createElement("pre");
  out.id = "layout";
  out.textContent = JSON.stringify({
    page: root.scrollWidth, window: root.clientWidth,
    topology: table ? table.getBoundingClientRect().bottom : -1,
    health: health ? health.getBoundingClientRect().top : -1,
    empty: empty,
  });
  document.body.appendChild(out);
});
</script></body>"##;
    let html = std::fs::read_to_string(path).unwrap();
    assert!(!html.contains("<script"), "the report holds no script");
    let probe = path.with_extension("probe.html");
    std::fs::write(&probe, html.replace("</body>", PROBE)).unwrap();
    let out = chromium(&[
        "--window-size=1400,900",
        "--virtual-time-budget=5000",
        "--dump-dom",
        &format!("file://{}", probe.display()),
    ]);
    let dom = String::from_utf8_lossy(&out.stdout);
    let at = dom.find("<pre id=\"layout\">").expect("the probe ran") + 17;
    let text = &dom[at..at + dom[at..].find("</pre>").unwrap()];
    let v: serde_json::Value = serde_json::from_str(&text.replace("&quot;", "\"")).unwrap();
    let empty = (v["empty"].as_array().unwrap().iter())
        .map(|h| h.as_str().unwrap().to_string())
        .collect();
    (
        v["page"].as_f64().unwrap(),
        v["window"].as_f64().unwrap(),
        v["topology"].as_f64().unwrap(),
        v["health"].as_f64().unwrap(),
        empty,
    )
}

#[test]
fn at_1400_px_the_report_fits_the_window_shows_the_topology_and_health_first_and_no_empty_section()
{
    // A staged run of the default machine (one odd host, so the facts table is widest) and
    // a full run: both plans' health sections differ.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    success(lgate_plogp_in(
        d,
        &[
            "simulate",
            "--preset",
            "fram",
            "--odd-host",
            "1:governor=powersave",
            "--out",
            "staged",
            "--quiet",
        ],
    ));
    success(lgate_plogp_in(
        d,
        &[BETZY_FULL, &["--out", "full"]].concat(),
    ));
    for run in ["staged", "full"] {
        success(lgate_plogp_in(
            d,
            &["report", run, "--output", &format!("{run}.html")],
        ));
        let (page, window, topology, health, empty) =
            layout_at_1400(&d.join(format!("{run}.html")));
        assert!(
            page <= window,
            "{run}: the page is {page} px wide in a {window} px window"
        );
        assert!(
            topology > 0.0 && topology <= 900.0,
            "{run}: the topology's table ends at {topology} px, below the first screen"
        );
        // The health comes before the tree's outline and dendrogram (at a thousand hosts the
        // outline alone was thousands of lines above it).
        assert!(
            health > topology && health <= 900.0,
            "{run}: the health starts at {health} px, below the first screen"
        );
        assert!(
            empty.is_empty(),
            "{run}: sections with nothing under them: {empty:?}"
        );
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
    // The facts table: one column for the three hosts alike, one for the odd host, marked,
    // and its odd value marked in the governor's row.
    let table = &dom[dom.find("id=\"host-facts\"").expect("the facts table")..];
    let table = &table[..table.find("</table>").unwrap()];
    assert!(
        table.contains("<tr><th>hosts</th><th>fram-n0, fram-n1, fram-n3</th><th class=\"warn\">fram-n2</th></tr>"),
        "{table}"
    );
    assert!(
        table.contains(
            "<tr><th>governor</th><td>performance</td><td class=\"warn\">powersave</td></tr>"
        ),
        "{table}"
    );
    assert_eq!(
        table.matches("<tr").count(),
        1 + lgate_rundir::FACT_NAMES.len(),
        "a row a fact: {table}"
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
