//! The one-page report of a run: a single HTML file with everything inlined (no network, no
//! scripts), the answer first: the topology found with its separations, what changed since an
//! earlier run, the health of report.json; then the heat maps in rank and topology order and
//! the PLogP curves; then the hosts, the run's metadata and the commands that produced it.

use std::fmt::Write as _;
use std::path::Path;

use base64::Engine as _;
use lgate_rundir::Report;
use lgate_topology::{OutlineOptions, Topology};

use crate::figure::{to_png, Figure, PlotError};
use crate::{Curves, Dendrogram, Heatmap};

mod health;
mod run;

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

fn row(out: &mut String, key: &str, value: &str) {
    let _ = writeln!(
        out,
        "<tr><th>{}</th><td>{}</td></tr>",
        escape(key),
        escape(value)
    );
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
        "<h2>Distance matrix</h2>\n<p>{}: in rank order, then ordered by the topology above \
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
    slow: Option<&str>,
) -> Result<(), PlotError> {
    let _ = writeln!(
        html,
        "<h2>Distances by hosts</h2>\n<p>{}: the run has host blocks and no dense matrix. \
         The host x host medians of the pairs measured between each two hosts (the median \
         inside each host on the diagonal), then the pairs inside two hosts: the first and {}.</p>",
        escape(&input.source),
        match slow {
            Some(h) => format!("{}, which the health names slow", escape(h)),
            None => "the one slowest inside".to_string(),
        }
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
    let named = slow.and_then(|h| hosts.labels().iter().position(|l| l == h));
    // Else the highest median inside (the first of equals).
    let slowest = named.unwrap_or_else(|| {
        (0..n).fold(0, |best, x| {
            if hosts.get(x, x) > hosts.get(best, best) {
                x
            } else {
                best
            }
        })
    });
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
    let Ok(index) = lgate_rundir::RunDir::open(run).and_then(|r| r.read_matrices()) else {
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

/// The report of the run in `run` as HTML text: the answer first (the topology, what changed,
/// the health), then the pictures, then how the run was made.
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
         body {{ font-family: sans-serif; margin: 2em auto; padding: 0 1em; max-width: 1250px; color: #222; }}\n\
         table {{ display: block; max-width: 100%; overflow-x: auto; border-collapse: collapse; margin: 0.5em 0 1.5em; }}\n\
         th, td {{ text-align: left; padding: 0.2em 0.8em; border-bottom: 1px solid #ddd; vertical-align: top; overflow-wrap: break-word; }}\n\
         th {{ background: #f4f4f4; }}\n\
         pre {{ background: #f6f6f6; padding: 0.8em; overflow-x: auto; }}\n\
         img {{ max-width: 100%; height: auto; }}\n\
         .lead {{ font-size: 1.1em; }}\n\
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
             follows is of the matrices derived before; {}.</p>",
            escape(&meta.how_to_finish(run))
        );
    }
    lead(&mut html, &meta);

    // The answer: the topology's levels, what changed, the health; then the tree itself (on a
    // machine of a thousand hosts its outline alone is thousands of lines).
    topology_section(&mut html, run, inputs)?;
    if let Some(diff) = &inputs.diff {
        diff_section(&mut html, diff)?;
    }
    health::health_section(&mut html, report.as_ref(), run, inputs.topology)?;
    tree_section(&mut html, inputs.topology)?;

    // The pictures: heat maps, then the curves.
    if input.dense().is_none() {
        // The host the health names slowest, for its block beside the first host's.
        let slow = match &report {
            Some(Report::Staged(staged)) => staged.slow_hosts.first(),
            Some(r) => {
                let matrices = r.matrices();
                let default = matrices.get(1).or(matrices.first());
                default.and_then(|m| m.slow_hosts.first())
            }
            None => None,
        };
        host_heatmaps(
            &mut html,
            input,
            inputs.topology,
            slow.map(|h| h.host.as_str()),
        )?;
    } else {
        rank_heatmaps(&mut html, run, input, inputs.topology)?;
    }
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

    // How it was made.
    run::hosts_section(&mut html, &meta);
    run::run_section(&mut html, &meta, input);
    run::commands_section(&mut html, &meta, &inputs.command_line);
    html.push_str("</body>\n</html>\n");
    Ok(html)
}

/// One line over the report: how many ranks on how many hosts, the test, the plan.
fn lead(html: &mut String, meta: &lgate_rundir::RunMeta) {
    let hosts: std::collections::BTreeSet<&str> =
        meta.ranks.iter().map(|r| r.host.as_str()).collect();
    let plan = meta
        .schedule
        .plan
        .as_ref()
        .map_or(String::new(), |p| format!(", {} plan", p.name));
    let _ = writeln!(
        html,
        "<p class=\"lead\">{} ranks on {} host(s), {} test{plan}{}; {}.</p>",
        meta.ranks.len(),
        hosts.len(),
        escape(meta.test.name()),
        if meta.simulation.is_some() {
            ", simulated"
        } else {
            ""
        },
        format!("{:?}", meta.status).to_lowercase()
    );
}

/// How sure the clustering is of the topology as a whole, and the levels left undecided.
fn confidence_line(html: &mut String, topology: &Topology) {
    let Some(c) = topology.confidence() else {
        return;
    };
    let what = if topology.levels().is_empty() {
        "one group"
    } else {
        "these levels"
    };
    let _ = writeln!(
        html,
        "<p id=\"confidence\">Confidence: {} of {} resamples of the matrix (its measured noise \
         dealt out anew to every pair) gave {what}; a level's confidence is the share that gave \
         its groups.</p>",
        (c.same_levels * c.resamples as f64).round(),
        c.resamples
    );
    for u in &c.undecided {
        if let Some(z) = u.z {
            let _ = writeln!(
                html,
                "<p class=\"warn\">Undecided: {} groups of hosts, which the pairs measured \
                 between hosts nearly decide (Mann-Whitney z = {z:.1} of the 4 that decides): \
                 more repetitions of those pairs would decide them.</p>",
                u.groups
            );
            continue;
        }
        let what = match &u.name {
            Some(name) => format!("{name} ({} groups), found but not kept,", u.groups),
            None => format!("a level of {} groups, not found,", u.groups),
        };
        let _ = writeln!(
            html,
            "<p class=\"warn\">Undecided: {} came back in {:.0} % of the resamples: more \
             repetitions or sweeps would decide it.</p>",
            escape(&what),
            100.0 * u.share
        );
    }
}

/// The topology found: its levels with their groups and separations, the score against the
/// recorded placement, the outline and the dendrogram.
fn topology_section(html: &mut String, run: &Path, inputs: &ReportInputs) -> Result<(), PlotError> {
    let _ = writeln!(
        html,
        "<h2 id=\"topology\">Topology</h2>\n<p>{}</p>\n<table>\n<tr><th>level</th><th>groups</th>\
         <th>group sizes</th><th>separation</th><th>confidence</th></tr>",
        escape(&inputs.topology_source)
    );
    for level in inputs.topology.levels() {
        let mut sizes: Vec<usize> = level.groups.iter().map(|g| g.len()).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&level.name),
            level.groups.len(),
            sizes
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            level
                .separation
                .map_or("-".to_string(), |s| format!("{s:.3}")),
            level
                .confidence
                .map_or("-".to_string(), |c| format!("{c:.2}"))
        );
    }
    html.push_str("</table>\n");
    confidence_line(html, inputs.topology);
    score_against_placement(html, run, inputs.topology);
    Ok(())
}

/// The outline lines shown open; a longer outline is folded (a click opens it).
const OPEN_OUTLINE_LINES: usize = 40;

/// The topology's tree: its outline (folded when long) and its dendrogram.
fn tree_section(html: &mut String, topology: &Topology) -> Result<(), PlotError> {
    html.push_str("<h2 id=\"tree\">Topology tree</h2>\n");
    let outline = lgate_topology::outline(topology, OutlineOptions { max_depth: Some(3) });
    let lines = outline.lines().count();
    if lines > OPEN_OUTLINE_LINES {
        let _ = writeln!(
            html,
            "<details><summary>The outline, {lines} lines (open it)</summary><pre>{}</pre></details>",
            escape(&outline)
        );
    } else {
        let _ = writeln!(html, "<pre>{}</pre>", escape(&outline));
    }
    html.push_str(&img(
        &Dendrogram::new(topology, "the topology"),
        "dendrogram of the topology",
    )?);
    html.push('\n');
    Ok(())
}
