//! The one-page report of a run: a single HTML file with everything inlined (no network, no
//! scripts): the run's metadata, the heat map in rank order and in topology order, the PLogP
//! curves, the topology found with its separations, the slow ranks and pairs of report.json,
//! and the commands that produced it.

use std::fmt::Write as _;
use std::path::Path;

use base64::Engine as _;
use lgate_rundir::Report;
use lgate_topology::{OutlineOptions, Topology};
use serde_json::Value;

use crate::figure::{to_png, Figure, PlotError};
use crate::{Curves, Dendrogram, Heatmap};

/// Text safe inside HTML elements and attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A figure as an inlined PNG image.
fn img(figure: &impl Figure, alt: &str) -> Result<String, PlotError> {
    let png = to_png(figure)?;
    let (w, _) = figure.size();
    Ok(format!(
        "<img alt=\"{}\" style=\"max-width:100%;width:{w}px\" src=\"data:image/png;base64,{}\">",
        escape(alt),
        base64::engine::general_purpose::STANDARD.encode(png)
    ))
}

/// The message-protocol settings meta.json recorded (MPI_T control variables whose names
/// mark thresholds, and the transport's environment variables), as `name = value` pairs.
fn protocol_settings(mpi: &lgate_rundir::MpiInfo) -> Option<String> {
    let pairs: Vec<String> = (mpi.protocol().iter().map(|(k, v)| format!("{k} = {v}")))
        .chain(mpi.environment().iter().map(|(k, v)| format!("{k} = {v}")))
        .collect();
    (!pairs.is_empty()).then(|| pairs.join(", "))
}

fn row(out: &mut String, key: &str, value: &str) {
    let _ = writeln!(
        out,
        "<tr><th>{}</th><td>{}</td></tr>",
        escape(key),
        escape(value)
    );
}

/// The pair test's parameters, one row each (objects and lists as compact JSON).
fn parameters_table(html: &mut String, parameters: &Value) {
    let Some(map) = parameters.as_object().filter(|m| !m.is_empty()) else {
        return;
    };
    html.push_str("<h3>Test parameters</h3>\n<table>\n");
    for (key, value) in map {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        row(html, key, &text);
    }
    html.push_str("</table>\n");
}

/// The most ranks listed one by one in the placement table.
const PLACEMENT_ROWS: usize = 4096;

/// Where every rank ran (host, socket, core, CPUs), folded away: one row a rank.
fn placement_table(html: &mut String, ranks: &[lgate_rundir::RankInfo]) {
    if ranks.is_empty() {
        return;
    }
    let opt = |v: Option<usize>| v.map_or("-".to_string(), |v| v.to_string());
    let _ = writeln!(
        html,
        "<details><summary>Placement of the {} ranks (meta.json)</summary>\n<table>\n\
         <tr><th>rank</th><th>host</th><th>socket</th><th>NUMA node</th><th>core</th>\
         <th>CPU</th><th>CPUs allowed</th></tr>",
        ranks.len()
    );
    for r in ranks.iter().take(PLACEMENT_ROWS) {
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            r.rank,
            escape(&r.host),
            opt(r.socket),
            opt(r.numa),
            opt(r.core),
            opt(r.cpu),
            escape(r.cpuset.as_deref().unwrap_or("-"))
        );
    }
    html.push_str("</table>\n");
    if ranks.len() > PLACEMENT_ROWS {
        let _ = writeln!(
            html,
            "<p>The first {PLACEMENT_ROWS} ranks; meta.json holds all {}.</p>",
            ranks.len()
        );
    }
    html.push_str("</details>\n");
}

/// A host's comparable facts, as [`lgate_rundir::HostFacts::fields`] gives them.
type HostFields = Vec<(&'static str, String)>;

/// Hosts named one by one in a row of the facts table at most.
const HOSTS_NAMED: usize = 8;

/// What the hosts are (meta.json's `hosts`): the hosts that differ from most first, then a
/// table with a row per set of hosts with the same facts (one row when every host agrees),
/// then ranks whose placement their host's facts contradict.
fn hosts_section(html: &mut String, meta: &lgate_rundir::RunMeta) {
    html.push_str("<h2>Hosts (meta.json)</h2>\n");
    let hosts = &meta.hosts;
    if hosts.is_empty() {
        html.push_str(if meta.test.name == "imported" {
            "<p>An imported run has no host facts: the tool that measured it did not record \
             them.</p>\n"
        } else {
            "<p>This run recorded no host facts (it was written before they were kept).</p>\n"
        });
        return;
    }
    let odd = lgate_rundir::odd_hosts(hosts);
    if odd.is_empty() {
        let _ = writeln!(
            html,
            "<p>{} host(s); no host differs from the others in the facts below.</p>",
            hosts.len()
        );
    } else {
        let lines = lgate_rundir::odd_host_lines(&odd, hosts.len());
        let _ = writeln!(
            html,
            "<p class=\"warn\" id=\"odd-hosts\">{} of {} hosts differ from most: a slow host \
             above may be explained here.</p>\n<ul>",
            lines.len(),
            hosts.len()
        );
        for l in &lines {
            let _ = writeln!(html, "<li class=\"warn\">{}</li>", escape(l));
        }
        html.push_str("</ul>\n");
    }
    // Hosts with the same facts share a row, in order of their first host.
    let mut rows: Vec<(HostFields, Vec<&str>)> = Vec::new();
    for h in hosts {
        let fields = h.fields();
        match rows.iter_mut().find(|(f, _)| *f == fields) {
            Some((_, names)) => names.push(&h.host),
            None => rows.push((fields, vec![&h.host])),
        }
    }
    html.push_str("<table id=\"host-facts\">\n<tr><th>hosts</th>");
    for name in lgate_rundir::FACT_NAMES {
        let label = match name {
            "cpu_model" => "CPU model".to_string(),
            "smt" => "SMT".to_string(),
            "numa_nodes" => "NUMA nodes".to_string(),
            "memory_kib" => "memory (KiB)".to_string(),
            "min_khz" => "min (kHz)".to_string(),
            "max_khz" => "max (kHz)".to_string(),
            other => other.replace('_', " "),
        };
        let _ = write!(html, "<th>{label}</th>");
    }
    html.push_str("</tr>\n");
    let odd_hosts: std::collections::BTreeSet<&str> = odd.iter().map(|o| o.host.as_str()).collect();
    for (fields, names) in &rows {
        let shown = if names.len() <= HOSTS_NAMED {
            names.join(", ")
        } else {
            format!(
                "{}, ... ({} hosts)",
                names[..HOSTS_NAMED].join(", "),
                names.len()
            )
        };
        let class = if names.iter().any(|n| odd_hosts.contains(n)) {
            " class=\"warn\""
        } else {
            ""
        };
        let _ = write!(html, "<tr{class}><td>{}</td>", escape(&shown));
        for (_, value) in fields {
            let _ = write!(html, "<td>{}</td>", escape(value));
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</table>\n");
    let (mismatches, count) = lgate_rundir::placement_mismatches(&meta.ranks, hosts, 50);
    if count > 0 {
        let _ = writeln!(
            html,
            "<p class=\"warn\">{count} rank(s) have a recorded placement their host's facts \
             contradict:</p>\n<ul>"
        );
        for m in &mismatches {
            let _ = writeln!(html, "<li>{}</li>", escape(m));
        }
        html.push_str("</ul>\n");
    }
}

/// The most t(m) heat maps shown besides the default matrix's.
const OTHER_HEATMAPS: usize = 4;

/// The dense matrix's heat maps: in rank order, in topology order, and the run's other t(m).
fn rank_heatmaps(
    html: &mut String,
    run: &Path,
    input: &lgate_cluster::ClusterInput,
    topology: &Topology,
) -> Result<(), PlotError> {
    let _ = writeln!(
        html,
        "<h2>Distance matrix</h2>\n<p>{}: in rank order, then ordered by the topology below \
         with its group boundaries.</p>",
        escape(&input.source)
    );
    let matrix = input
        .need_dense("the report's heat maps")
        .map_err(|e| PlotError::Input(e.to_string()))?;
    let plain = Heatmap::new(matrix, &format!("{} (rank order)", input.source), "us")
        .with_note(input.filled_note());
    html.push_str(&img(&plain, "heat map in rank order")?);
    html.push('\n');
    let ordered = Heatmap::new(matrix, &format!("{} (topology order)", input.source), "us")
        .with_note(input.filled_note())
        .with_topology(topology)?;
    html.push_str(&img(&ordered, "heat map in topology order")?);
    html.push('\n');
    other_heatmaps(html, run, &input.source, topology)?;
    Ok(())
}

/// Host blocks' heat maps, no P x P picture: the host x host medians (ordered by the levels of
/// whole hosts), and the blocks of the first host and of the host slowest inside.
fn host_heatmaps(
    html: &mut String,
    input: &lgate_cluster::ClusterInput,
    topology: &Topology,
) -> Result<(), PlotError> {
    let _ = writeln!(
        html,
        "<h2>Distances by hosts</h2>\n<p>{}: the run has host blocks and no dense matrix. \
         The host x host medians of the pairs measured between each two hosts (the median \
         inside each host on the diagonal), then the pairs inside two hosts: the first and the \
         one slowest inside.</p>",
        escape(&input.source)
    );
    let Some(hosts) = input.host_matrix() else {
        return Ok(());
    };
    let mut figure = Heatmap::new(&hosts, &format!("{} (host x host)", input.source), "us")
        .with_items("host")
        .with_note(input.filled_note());
    if let Some(by_hosts) = input.hosts_topology(topology) {
        figure = figure.with_topology(&by_hosts)?;
    }
    html.push_str(&img(&figure, "heat map of the host x host medians")?);
    html.push('\n');
    let n = hosts.len();
    let slowest = (0..n)
        .max_by(|&a, &b| hosts.get(a, a).total_cmp(&hosts.get(b, b)))
        .unwrap_or(0);
    let mut shown = vec![0];
    if slowest != 0 {
        shown.push(slowest);
    }
    for x in shown {
        if let Some((name, block)) = input.host_block(x) {
            let title = format!("{name}: its {} ranks", block.len());
            html.push_str(&img(
                &Heatmap::new(&block, &title, "us"),
                &format!("heat map of host {name}"),
            )?);
            html.push('\n');
        }
    }
    Ok(())
}

/// Heat maps, in topology order, of the run's other t(m) matrices (at most
/// [`OTHER_HEATMAPS`], spread over the sizes), folded away.
fn other_heatmaps(
    html: &mut String,
    run: &Path,
    shown: &str,
    topology: &Topology,
) -> Result<(), PlotError> {
    let Ok(index) =
        lgate_rundir::RunDir::open(run).and_then(|r| lgate_rundir::MatrixIndex::read(&r))
    else {
        return Ok(());
    };
    // `shown` is the default matrix's source: `FILE (NAME)`.
    let names: Vec<String> = index
        .names()
        .into_iter()
        .filter(|n| n.starts_with("t:") && !shown.ends_with(&format!("({n})")))
        .map(String::from)
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    let step = names.len().div_ceil(OTHER_HEATMAPS).max(1);
    let picked: Vec<&String> = names.iter().step_by(step).collect();
    let _ = writeln!(
        html,
        "<details><summary>t(m) at other sizes ({} of {}: {})</summary>",
        picked.len(),
        names.len(),
        escape(
            &picked
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    );
    for name in picked {
        let input = lgate_cluster::load(run, Some(name))
            .map_err(|e| PlotError::Input(format!("{}: {e}", run.display())))?;
        let matrix = input
            .need_dense("a heat map")
            .map_err(|e| PlotError::Input(e.to_string()))?;
        let figure = Heatmap::new(matrix, &input.source, "us")
            .with_note(input.filled_note())
            .with_topology(topology)?;
        html.push_str(&img(&figure, &format!("heat map of {name}"))?);
        html.push('\n');
    }
    html.push_str("</details>\n");
    Ok(())
}

/// The topology scored against the placement the run recorded (hosts, sockets, cores; a
/// simulated machine's switches): per known level, the best-matching level and its adjusted
/// Rand index.
fn score_against_placement(html: &mut String, run: &Path, topology: &Topology) {
    let Ok(truth) = lgate_rundir::KnownPlacement::read(run) else {
        return;
    };
    match lgate_cluster::score::score_levels(&truth, topology) {
        Ok(rows) if !rows.is_empty() => {
            html.push_str(
                "<p>Against the placement the run recorded (1 is the same grouping, 0 no \
                 better than chance):</p>\n<table>\n<tr><th>recorded level</th><th>groups</th>\
                 <th>best match</th><th>ARI</th><th>accuracy</th></tr>\n",
            );
            for r in rows {
                let _ = writeln!(
                    html,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.1} %</td></tr>",
                    escape(&r.level),
                    r.groups,
                    escape(&r.best_match),
                    r.ari,
                    100.0 * r.accuracy
                );
            }
            html.push_str("</table>\n");
        }
        Ok(_) => {}
        Err(e) => {
            let _ = writeln!(
                html,
                "<p class=\"warn\">Not scored against the recorded placement: {}</p>",
                escape(&e.to_string())
            );
        }
    }
}

/// What the report needs besides the run.
pub struct ReportInputs<'a> {
    /// The topology to show and to order the heat map by (usually what `cluster` finds).
    pub topology: &'a Topology,
    /// How the topology was obtained, for people.
    pub topology_source: String,
    /// The matrix (or host blocks) the report draws: the one `cluster` chose.
    pub input: &'a lgate_cluster::ClusterInput,
    /// The command line that made the report.
    pub command_line: Vec<String>,
    /// What changed since an earlier run, when one is given.
    pub diff: Option<ReportDiff<'a>>,
}

/// The comparison with an earlier run that the report shows.
pub struct ReportDiff<'a> {
    /// The earlier run, as given.
    pub earlier: String,
    /// Whether anything changed beyond the noise.
    pub changed: bool,
    /// The verdict in one line.
    pub headline: String,
    /// The changes, worst first: what, relative change, z, matrix.
    pub changes: Vec<(String, f64, f64, String)>,
    /// `diff`'s summary for people.
    pub summary: String,
    /// The heat map of each pair's z.
    pub figure: Heatmap<'a>,
}

/// The health of the run from report.json: hosts slow with all their peers, unstable pairs and
/// hosts with a heat map of the repeat spread, and the known artifacts seen.
fn health_section(
    html: &mut String,
    report: Option<&Report>,
    run: &Path,
    topology: &Topology,
) -> Result<(), PlotError> {
    let Some(r) = report else {
        return Ok(());
    };
    html.push_str("<h2 id=\"health\">Health (report.json)</h2>\n");
    let matrices = r.matrices();
    let default = matrices.get(1).or(matrices.first());
    let slow = default.map_or(&[][..], |m| &m.slow_hosts[..]);
    if slow.is_empty() {
        let _ = writeln!(
            html,
            "<p id=\"slow-hosts\">No host is slow with all its peers in {}.</p>",
            escape(default.map_or("the default matrix", |m| m.matrix.as_str()))
        );
    } else {
        html.push_str(
            "<table id=\"slow-hosts\"><tr><th>slow host</th><th>ranks</th><th>factor</th><th>why</th></tr>\n",
        );
        for h in slow {
            let _ = writeln!(
                html,
                "<tr class=\"warn\"><td>{}</td><td>{}</td><td>x{:.2}</td><td>{}</td></tr>",
                escape(&h.host),
                h.ranks,
                defined(h.factor),
                escape(&h.why)
            );
        }
        html.push_str("</table>\n");
    }
    let artifacts = r.artifacts();
    if !artifacts.is_empty() {
        html.push_str("<ul id=\"artifacts\">\n");
        for a in artifacts {
            let _ = writeln!(
                html,
                "<li class=\"warn\">{} in {} (x{:.2} its class median): {}</li>",
                escape(a.name()),
                escape(a.matrix()),
                defined(a.ratio()),
                escape(a.why())
            );
        }
        html.push_str("</ul>\n");
    }
    let Some(first) = r.unstable().first() else {
        return Ok(());
    };
    let name = first.matrix.as_str();
    let hosts: Vec<String> = first
        .unstable_hosts
        .iter()
        .map(|h| format!("{} (x{:.1})", h.host, defined(h.median_spread_ratio)))
        .collect();
    let _ = writeln!(
        html,
        "<p id=\"unstable\"{}>{} unstable pair(s) in {name} (repeat spread at least 3 times \
         their class's){}.</p>",
        if hosts.is_empty() {
            ""
        } else {
            " class=\"warn\""
        },
        first.unstable_pairs_count,
        if hosts.is_empty() {
            "; no unstable host".to_string()
        } else {
            format!("; unstable hosts: {}", escape(&hosts.join(", ")))
        }
    );
    let spread_name = name.replacen("t:", "spread:", 1);
    if let Some(matrix) = lgate_cluster::load(run, Some(&spread_name))
        .ok()
        .and_then(|i| i.into_dense("").ok())
    {
        let figure = Heatmap::new(
            &matrix,
            &format!("{spread_name}: each pair's repeat spread (topology order)"),
            "us",
        )
        .with_topology(topology)?;
        html.push_str(&img(&figure, "heat map of the repeat spread")?);
        html.push('\n');
    }
    Ok(())
}

/// The section of the comparison with an earlier run.
fn diff_section(html: &mut String, diff: &ReportDiff) -> Result<(), PlotError> {
    let _ = writeln!(
        html,
        "<h2 id=\"diff\">What changed since {}</h2>\n<p id=\"diff-verdict\"{}><strong>{}</strong></p>",
        escape(&diff.earlier),
        if diff.changed { " class=\"warn\"" } else { "" },
        escape(&diff.headline)
    );
    if !diff.changes.is_empty() {
        html.push_str(
            "<table id=\"diff-changes\"><tr><th>what</th><th>change</th><th>z</th><th>matrix</th></tr>\n",
        );
        for (what, change, z, matrix) in diff.changes.iter().take(50) {
            let _ = writeln!(
                html,
                "<tr><td>{}</td><td>{:+.1} %</td><td>{:+.1}</td><td>{}</td></tr>",
                escape(what),
                100.0 * change,
                z,
                escape(matrix)
            );
        }
        html.push_str("</table>\n");
    }
    let alt = if diff.figure.items() == "host" {
        "heat map of the median change over the noise per two hosts"
    } else {
        "heat map of each pair's change over the noise"
    };
    html.push_str(&img(&diff.figure, alt)?);
    let _ = writeln!(html, "\n<pre>{}</pre>", escape(&diff.summary));
    Ok(())
}

/// A number of report.json as the page prints it: an undefined one (null) as 0.
fn defined(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        0.0
    }
}

/// The report of the run in `run` as HTML text.
pub fn report_html(run: &Path, inputs: &ReportInputs) -> Result<String, PlotError> {
    let meta = lgate_rundir::RunMeta::read(&run.join(lgate_rundir::META_FILE))
        .map_err(|e| PlotError::Input(e.to_string()))?;
    let report: Option<Report> = Report::read(run).ok();
    let input = inputs.input;
    let title = format!("lgate-plogp report: {}", run.display());

    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{}</title>\n<style>\n\
         body {{ font-family: sans-serif; margin: 2em auto; max-width: 1250px; color: #222; }}\n\
         table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; }}\n\
         th, td {{ text-align: left; padding: 0.2em 0.8em; border-bottom: 1px solid #ddd; vertical-align: top; overflow-wrap: anywhere; }}\n\
         th {{ background: #f4f4f4; white-space: nowrap; overflow-wrap: normal; }}\n\
         pre {{ background: #f6f6f6; padding: 0.8em; overflow-x: auto; }}\n\
         .warn {{ color: #a33; }}\n\
         </style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );

    if meta.status == lgate_rundir::RunStatus::Running {
        let _ = writeln!(
            html,
            "<p class=\"warn\"><strong>This run has not finished.</strong> Its meta.json says \
             <code>running</code>: it is still measuring, or it stopped before its end. What \
             follows is of the matrices derived before; <code>mpirun -np N lgate-plogp measure \
             --resume {}</code> finishes it.</p>",
            escape(&run.display().to_string())
        );
    }

    // The run.
    html.push_str("<h2>The run</h2>\n<table>\n");
    row(&mut html, "tool", &meta.tool);
    row(
        &mut html,
        "status",
        &format!("{:?}", meta.status).to_lowercase(),
    );
    let simulated = meta.simulation.is_some();
    let span = format!("{} / {}", meta.start, meta.end.as_deref().unwrap_or("-"));
    if simulated {
        row(
            &mut html,
            "started / ended",
            &format!("{span} (the simulated clock starts at zero, 1970-01-01)"),
        );
    } else {
        row(&mut html, "started / ended", &span);
    }
    let hosts: std::collections::BTreeSet<&str> =
        meta.ranks.iter().map(|r| r.host.as_str()).collect();
    row(
        &mut html,
        "ranks",
        &format!(
            "{} on {} host(s); {} tested",
            meta.ranks.len(),
            hosts.len(),
            meta.schedule.tested_ranks.len()
        ),
    );
    row(&mut html, "test", &meta.test.name);
    row(
        &mut html,
        "schedule",
        &format!(
            "topology {}, {} sweep(s), seed {}, {} pairs per sweep",
            meta.schedule.topology_source,
            meta.schedule.sweeps,
            meta.schedule.seed,
            meta.schedule.pairs_per_sweep
        ),
    );
    if let Some(plan) = &meta.schedule.plan {
        let mut text = plan.name.clone();
        if let Some(parameters) = plan.parameters.as_object().filter(|p| !p.is_empty()) {
            let said: Vec<String> = parameters
                .iter()
                .map(|(key, value)| {
                    let value = match value {
                        // The one optional choice: the most pair tests at once.
                        serde_json::Value::Null if key == "concurrency" => "unbounded".into(),
                        serde_json::Value::Null => "-".into(),
                        serde_json::Value::String(v) => v.clone(),
                        v => v.to_string(),
                    };
                    format!("{} {value}", key.replace('_', " "))
                })
                .collect();
            text.push_str(&format!(" ({})", said.join(", ")));
        }
        if let Some(note) = input.filled_note() {
            text.push_str(&format!("; {note} (matrices/measured.csv)"));
        }
        for note in &plan.notes {
            text.push_str(&format!("; {note}"));
        }
        row(&mut html, "plan", &text);
    }
    row(&mut html, "launcher", &meta.launcher.kind);
    if let Some(v) = &meta.mpi.library_version {
        row(&mut html, "MPI library", v);
    }
    if let Some(settings) = protocol_settings(&meta.mpi) {
        row(&mut html, "MPI protocol settings", &settings);
    }
    if let Some(s) = &meta.summary {
        row(
            &mut html,
            if simulated {
                "simulated wall time"
            } else {
                "wall time"
            },
            &format!(
                "{:.2} s, pair tests {:.1} % of it",
                s.wall_s,
                100.0 * (1.0 - s.overhead_share)
            ),
        );
    }
    if let Some(sim) = &meta.simulation {
        row(
            &mut html,
            "simulated machine",
            &format!(
                "{} ({}), artifacts: {}",
                sim["model"]["name"].as_str().unwrap_or("?"),
                sim["machine"].as_str().unwrap_or("?"),
                sim["artifacts"]
            ),
        );
    }
    if let Some(k) = &meta.system.kernel {
        row(&mut html, "kernel", k);
    }
    html.push_str("</table>\n");
    parameters_table(&mut html, &meta.test.parameters);
    placement_table(&mut html, &meta.ranks);

    if let Some(diff) = &inputs.diff {
        diff_section(&mut html, diff)?;
    }

    // Heat maps.
    if input.dense().is_none() {
        host_heatmaps(&mut html, input, inputs.topology)?;
    } else {
        rank_heatmaps(&mut html, run, input, inputs.topology)?;
    }

    // Curves.
    html.push_str("<h2>PLogP parameters against message size</h2>\n");
    match Curves::of_run(run, None) {
        Ok(curves) => {
            html.push_str(&img(&curves, "PLogP curves")?);
            html.push('\n');
        }
        Err(e) => {
            let _ = writeln!(
                html,
                "<p class=\"warn\">No curves: {}</p>",
                escape(&e.to_string())
            );
        }
    }

    // The topology.
    let _ = writeln!(
        html,
        "<h2>Topology</h2>\n<p>{}</p>\n<table>\n<tr><th>level</th><th>groups</th>\
         <th>group sizes</th><th>separation</th></tr>",
        escape(&inputs.topology_source)
    );
    for level in inputs.topology.levels() {
        let mut sizes: Vec<usize> = level.groups.iter().map(|g| g.len()).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&level.name),
            level.groups.len(),
            sizes
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            level
                .separation
                .map_or("-".to_string(), |s| format!("{s:.3}"))
        );
    }
    html.push_str("</table>\n");
    score_against_placement(&mut html, run, inputs.topology);
    html.push_str(&img(
        &Dendrogram::new(inputs.topology, "the topology"),
        "dendrogram of the topology",
    )?);
    let outline = lgate_topology::outline(inputs.topology, OutlineOptions { max_depth: Some(3) });
    let _ = writeln!(html, "\n<pre>{}</pre>", escape(&outline));

    // Health: slow hosts, unstable pairs and hosts, known artifacts; then slow ranks and pairs.
    health_section(&mut html, report.as_ref(), run, inputs.topology)?;
    html.push_str("<h2>Slow ranks and pairs (report.json)</h2>\n");
    match &report {
        None => html.push_str("<p class=\"warn\">The run has no readable report.json.</p>\n"),
        Some(r) => {
            for w in r.warnings() {
                let _ = writeln!(html, "<p class=\"warn\">{}</p>", escape(w));
            }
            for m in r.matrices() {
                let (ranks, pairs) = (&m.slow_ranks, &m.slow_pairs);
                let _ = writeln!(
                    html,
                    "<h3>{}</h3>\n<p>{} slow rank(s), {} slow pair(s)</p>",
                    escape(&m.matrix),
                    ranks.len(),
                    m.slow_pairs_count
                );
                if !ranks.is_empty() {
                    html.push_str(
                        "<table><tr><th>rank</th><th>host</th><th>median ratio</th><th>why</th></tr>\n",
                    );
                    for s in ranks.iter().take(50) {
                        let _ = writeln!(
                            html,
                            "<tr><td>{}</td><td>{}</td><td>{:.2}</td><td>{}</td></tr>",
                            s.rank,
                            escape(s.host.as_deref().unwrap_or("")),
                            defined(s.median_ratio),
                            escape(&s.why)
                        );
                    }
                    html.push_str("</table>\n");
                }
                if !pairs.is_empty() {
                    html.push_str(
                        "<table><tr><th>pair</th><th>class</th><th>value (us)</th>\
                         <th>class median (us)</th><th>ratio</th></tr>\n",
                    );
                    for s in pairs.iter().take(20) {
                        let _ = writeln!(
                            html,
                            "<tr><td>{}-{}</td><td>{}</td><td>{:.4}</td><td>{:.4}</td><td>{:.2}</td></tr>",
                            s.i,
                            s.j,
                            escape(&s.class),
                            defined(s.value_us),
                            defined(s.class_median_us),
                            defined(s.ratio)
                        );
                    }
                    html.push_str("</table>\n");
                }
            }
        }
    }

    hosts_section(&mut html, &meta);

    // How it was made.
    let quote = |args: &[String]| {
        args.iter()
            .map(|a| {
                if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$\\".contains(c)) {
                    format!("'{}'", a.replace('\'', "'\\''"))
                } else {
                    a.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    // The launcher's own line when it was recorded (mpirun -np 64 ... or srun ...), else
    // the rank's with the launcher it ran under.
    let run_line = match &meta.launcher.command_line {
        Some(line) if !line.trim().is_empty() => line.trim().to_string(),
        _ => match meta.launcher.kind.as_str() {
            "slurm" => format!("srun -n {} {}", meta.ranks.len(), quote(&meta.command_line)),
            "mpirun" => format!(
                "mpirun -np {} {}",
                meta.ranks.len(),
                quote(&meta.command_line)
            ),
            _ => quote(&meta.command_line),
        },
    };
    let _ = writeln!(
        html,
        "<h2>Commands</h2>\n<pre>{}\n{}</pre>",
        escape(&format!("# the run\n{run_line}")),
        escape(&format!("# this report\n{}", quote(&inputs.command_line)))
    );
    html.push_str("</body>\n</html>\n");
    Ok(html)
}
