//! The report's health section: slow hosts, known artifacts, slow ranks and pairs, unstable
//! pairs and hosts, from the run's report.json.

use std::fmt::Write as _;
use std::path::Path;

use lgate_rundir::Report;
use lgate_topology::Topology;

use super::{defined, escape, img};
use crate::figure::PlotError;
use crate::Heatmap;

/// The health of the run from report.json: hosts slow with all their peers, unstable pairs and
/// hosts with a heat map of the repeat spread, and the known artifacts seen.
pub(super) fn health_section(
    html: &mut String,
    report: Option<&Report>,
    run: &Path,
    topology: &Topology,
) -> Result<(), PlotError> {
    html.push_str("<h2 id=\"health\">Health (report.json)</h2>\n");
    let Some(r) = report else {
        html.push_str("<p class=\"warn\">The run has no readable report.json.</p>\n");
        return Ok(());
    };
    if let Report::Staged(staged) = r {
        staged_health(html, staged);
        return Ok(());
    }
    let matrices = r.matrices();
    let default = matrices.get(1).or(matrices.first());
    let slow = default.map_or(&[][..], |m| &m.slow_hosts[..]);
    slow_hosts_table(
        html,
        slow,
        default.map_or("the default matrix", |m| m.matrix.as_str()),
    );
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
    slow_ranks_and_pairs(html, r);
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

/// What a staged run's report.json holds: how much testing side by side slowed the pairs
/// against testing them alone, per stage and size, and the tests per stage.
/// The hosts slow with all their peers, or a line saying none is (in `matrix`).
fn slow_hosts_table(html: &mut String, slow: &[lgate_rundir::report::SlowHost], matrix: &str) {
    if slow.is_empty() {
        let _ = writeln!(
            html,
            "<p id=\"slow-hosts\">No host is slow with all its peers in {}.</p>",
            escape(matrix)
        );
        return;
    }
    html.push_str(
        "<table id=\"slow-hosts\"><tr><th>slow host</th><th>ranks</th><th>factor</th>\
         <th>z</th><th>why</th></tr>\n",
    );
    for h in slow {
        let _ = writeln!(
            html,
            "<tr class=\"warn\"><td>{}</td><td>{}</td><td>x{:.2}</td><td>{:.1}</td><td>{}</td></tr>",
            escape(&h.host),
            h.ranks,
            defined(h.factor),
            defined(h.z),
            escape(&h.why)
        );
    }
    html.push_str("</table>\n");
}

/// The slow ranks (the first 50), as a table with the HTML id `id`; nothing when none is.
fn slow_ranks_table(html: &mut String, ranks: &[lgate_rundir::report::SlowRank], id: Option<&str>) {
    if ranks.is_empty() {
        return;
    }
    let id = id.map(|i| format!(" id=\"{i}\"")).unwrap_or_default();
    let _ = writeln!(
        html,
        "<table{id}><tr><th>slow rank</th><th>host</th><th>factor</th><th>z</th><th>why</th></tr>"
    );
    for r in ranks.iter().take(50) {
        // Reports written before a rank's factor was kept hold its median ratio.
        let factor = if r.factor > 0.0 {
            r.factor
        } else {
            r.median_ratio
        };
        let _ = writeln!(
            html,
            "<tr class=\"warn\"><td>{}</td><td>{}</td><td>x{:.2}</td><td>{:.1}</td><td>{}</td></tr>",
            r.rank,
            escape(r.host.as_deref().unwrap_or("")),
            defined(factor),
            defined(r.z),
            escape(&r.why)
        );
    }
    html.push_str("</table>\n");
}

fn staged_health(html: &mut String, staged: &lgate_rundir::StagedReport) {
    let p = &staged.pairs;
    let measured = if p.filled == 0 {
        format!("it measured all {} pairs", p.measured)
    } else {
        format!(
            "it measured {} of {} pairs and filled the other {} from their groups' medians",
            p.measured, p.total, p.filled
        )
    };
    let _ = writeln!(
        html,
        "<p>The staged run {measured}; hosts and ranks are judged on them, each at the \
         screening size where it stands out most.</p>"
    );
    slow_hosts_table(html, &staged.slow_hosts, "the screening");
    slow_ranks_table(html, &staged.slow_ranks, Some("slow-ranks"));
    if !staged.interference.is_empty() {
        html.push_str(
            "<p>Pairs tested side by side against alone (the median ratio of their round \
             trips; near 1, testing several pairs at once did not bias them):</p>\n\
             <table id=\"interference\"><tr><th>stage</th><th>size</th>\
             <th>side by side / alone</th><th>pairs</th></tr>\n",
        );
        for (stage, sizes) in &staged.interference {
            for (size, i) in sizes {
                let _ = writeln!(
                    html,
                    "<tr><td>{}</td><td>{}</td><td>{:.3}</td><td>{}</td></tr>",
                    escape(stage),
                    escape(size),
                    defined(i.median_ratio_side_by_side_to_alone),
                    i.pairs
                );
            }
        }
        html.push_str("</table>\n");
    }
    let tests: Vec<String> = (staged.tests.iter())
        .map(|(stage, n)| format!("{stage} {n}"))
        .collect();
    let _ = writeln!(
        html,
        "<p>Tests per stage: {}.</p>",
        escape(&tests.join(", "))
    );
}

/// report.json's slow ranks and pairs per screened matrix, or a line saying there are none.
fn slow_ranks_and_pairs(html: &mut String, r: &Report) {
    html.push_str("<h3 id=\"slow\">Slow ranks and pairs</h3>\n");
    let (warnings, matrices) = (r.warnings(), r.matrices());
    if warnings.is_empty() && matrices.is_empty() {
        html.push_str("<p>report.json screened no matrix for slow ranks and pairs.</p>\n");
        return;
    }
    for w in warnings {
        let _ = writeln!(html, "<p class=\"warn\">{}</p>", escape(w));
    }
    for m in matrices {
        let (ranks, pairs) = (&m.slow_ranks, &m.slow_pairs);
        let _ = writeln!(
            html,
            "<h4>{}</h4>\n<p>{} slow rank(s), {} slow pair(s)</p>",
            escape(&m.matrix),
            ranks.len(),
            m.slow_pairs_count
        );
        slow_ranks_table(html, ranks, None);
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
