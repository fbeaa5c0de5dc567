//! The one-page report of a run: a single HTML file with everything inlined (no network, no
//! scripts): the run's metadata, the heat map in rank order and in topology order, the PLogP
//! curves, the topology found with its separations, the slow ranks and pairs of report.json,
//! and the commands that produced it.

use std::fmt::Write as _;
use std::path::Path;

use base64::Engine as _;
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
fn protocol_settings(
    mpi: &std::collections::BTreeMap<String, serde_json::Value>,
) -> Option<String> {
    let cvars = mpi.get("control_variables")?;
    let mut pairs: Vec<String> = Vec::new();
    for key in ["protocol", "environment"] {
        if let Some(map) = cvars.get(key).and_then(|v| v.as_object()) {
            pairs.extend(map.iter().map(|(k, v)| match v.as_str() {
                Some(text) => format!("{k} = {text}"),
                None => format!("{k} = {v}"),
            }));
        }
    }
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

/// What the report needs besides the run.
pub struct ReportInputs<'a> {
    /// The topology to show and to order the heat map by (usually what `cluster` finds).
    pub topology: &'a Topology,
    /// How the topology was obtained, for people.
    pub topology_source: String,
    /// The command line that made the report.
    pub command_line: Vec<String>,
}

/// The report of the run in `run` as HTML text.
pub fn report_html(run: &Path, inputs: &ReportInputs) -> Result<String, PlotError> {
    let input_err = |e: String| PlotError::Input(format!("{}: {e}", run.display()));
    let meta = lgate_rundir::RunMeta::read(&run.join(lgate_rundir::META_FILE))
        .map_err(|e| PlotError::Input(e.to_string()))?;
    let report: Option<Value> = std::fs::read_to_string(run.join("report.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let (input, _) =
        lgate_cluster::default_clustering(run).map_err(|e| input_err(e.to_string()))?;
    let title = format!("lgate-plogp report: {}", run.display());

    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{}</title>\n<style>\n\
         body {{ font-family: sans-serif; margin: 2em auto; max-width: 1250px; color: #222; }}\n\
         table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; }}\n\
         th, td {{ text-align: left; padding: 0.2em 0.8em; border-bottom: 1px solid #ddd; vertical-align: top; overflow-wrap: anywhere; }}\n\
         th {{ background: #f4f4f4; }}\n\
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
             follows is of the matrices derived before; <code>lgate-plogp measure --resume \
             --out {}</code> finishes it.</p>",
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
    row(
        &mut html,
        "started / ended",
        &format!("{} / {}", meta.start, meta.end.as_deref().unwrap_or("-")),
    );
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
    row(
        &mut html,
        "test",
        &format!("{} {}", meta.test.name, meta.test.parameters),
    );
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
        let mut text = format!("{} {}", plan.name, plan.parameters);
        if let Some(note) = input.filled_note() {
            text.push_str(&format!("; {note} (matrices/measured.csv)"));
        }
        for note in &plan.notes {
            text.push_str(&format!("; {note}"));
        }
        row(&mut html, "plan", &text);
    }
    row(&mut html, "launcher", &meta.launcher.kind);
    if let Some(v) = meta.mpi.get("library_version") {
        row(
            &mut html,
            "MPI library",
            v.as_str().unwrap_or(&v.to_string()),
        );
    }
    if let Some(settings) = protocol_settings(&meta.mpi) {
        row(&mut html, "MPI protocol settings", &settings);
    }
    if let Some(s) = &meta.summary {
        row(
            &mut html,
            "wall time",
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

    // Heat maps.
    let _ = writeln!(
        html,
        "<h2>Distance matrix</h2>\n<p>{}: in rank order, then ordered by the topology below \
         with its group boundaries.</p>",
        escape(&input.source)
    );
    let plain = Heatmap::new(
        &input.matrix,
        &format!("{} (rank order)", input.source),
        "us",
    )
    .with_note(input.filled_note());
    html.push_str(&img(&plain, "heat map in rank order")?);
    html.push('\n');
    let ordered = Heatmap::new(
        &input.matrix,
        &format!("{} (topology order)", input.source),
        "us",
    )
    .with_note(input.filled_note())
    .with_topology(inputs.topology)?;
    html.push_str(&img(&ordered, "heat map in topology order")?);
    html.push('\n');

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
    html.push_str(&img(
        &Dendrogram::new(inputs.topology, "the topology"),
        "dendrogram of the topology",
    )?);
    let outline = lgate_topology::outline(inputs.topology, OutlineOptions { max_depth: Some(3) });
    let _ = writeln!(html, "\n<pre>{}</pre>", escape(&outline));

    // Slow ranks and pairs.
    html.push_str("<h2>Slow ranks and pairs (report.json)</h2>\n");
    match &report {
        None => html.push_str("<p class=\"warn\">The run has no readable report.json.</p>\n"),
        Some(r) => {
            for w in r["warnings"].as_array().into_iter().flatten() {
                let _ = writeln!(
                    html,
                    "<p class=\"warn\">{}</p>",
                    escape(w.as_str().unwrap_or(""))
                );
            }
            for m in r["matrices"].as_array().into_iter().flatten() {
                let name = m["matrix"].as_str().unwrap_or("?");
                let ranks = m["slow_ranks"].as_array().cloned().unwrap_or_default();
                let pairs = m["slow_pairs"].as_array().cloned().unwrap_or_default();
                let _ = writeln!(
                    html,
                    "<h3>{}</h3>\n<p>{} slow rank(s), {} slow pair(s)</p>",
                    escape(name),
                    ranks.len(),
                    m["slow_pairs_count"]
                );
                if !ranks.is_empty() {
                    html.push_str(
                        "<table><tr><th>rank</th><th>host</th><th>median ratio</th><th>why</th></tr>\n",
                    );
                    for s in ranks.iter().take(50) {
                        let _ = writeln!(
                            html,
                            "<tr><td>{}</td><td>{}</td><td>{:.2}</td><td>{}</td></tr>",
                            s["rank"],
                            escape(s["host"].as_str().unwrap_or("")),
                            s["median_ratio"].as_f64().unwrap_or(0.0),
                            escape(s["why"].as_str().unwrap_or(""))
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
                            s["i"],
                            s["j"],
                            escape(s["class"].as_str().unwrap_or("")),
                            s["value_us"].as_f64().unwrap_or(0.0),
                            s["class_median_us"].as_f64().unwrap_or(0.0),
                            s["ratio"].as_f64().unwrap_or(0.0)
                        );
                    }
                    html.push_str("</table>\n");
                }
            }
        }
    }

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
    let _ = writeln!(
        html,
        "<h2>Commands</h2>\n<pre>{}\n{}</pre>",
        escape(&format!("# the run\n{}", quote(&meta.command_line))),
        escape(&format!("# this report\n{}", quote(&inputs.command_line)))
    );
    html.push_str("</body>\n</html>\n");
    Ok(html)
}
