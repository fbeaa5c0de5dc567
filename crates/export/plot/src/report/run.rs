//! The report's sections about how the run was made: the run's metadata, the test's
//! parameters, where the ranks ran, the hosts' facts, the MPI settings and the commands.

use std::fmt::Write as _;

use serde_json::Value;

use super::{escape, row};

/// The run's metadata table, the test's parameters, the placement and the MPI settings.
pub(super) fn run_section(
    html: &mut String,
    meta: &lgate_rundir::RunMeta,
    input: &lgate_cluster::ClusterInput,
) {
    html.push_str("<h2 id=\"run\">The run</h2>\n<table>\n");
    row(html, "tool", &meta.tool);
    row(html, "status", &format!("{:?}", meta.status).to_lowercase());
    let simulated = meta.simulation.is_some();
    let span = format!("{} / {}", meta.start, meta.end.as_deref().unwrap_or("-"));
    if simulated {
        row(
            html,
            "started / ended",
            &format!("{span} (the simulated clock starts at zero, 1970-01-01)"),
        );
    } else {
        row(html, "started / ended", &span);
    }
    let hosts: std::collections::BTreeSet<&str> =
        meta.ranks.iter().map(|r| r.host.as_str()).collect();
    row(
        html,
        "ranks",
        &format!(
            "{} on {} host(s); {} tested",
            meta.ranks.len(),
            hosts.len(),
            meta.schedule.tested_ranks.len()
        ),
    );
    row(html, "test", meta.test.name());
    row(
        html,
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
        text.push_str(&format!(" ({})", plan.parameters));
        if let Some(note) = input.filled_note() {
            text.push_str(&format!("; {note} (matrices/measured.csv)"));
        }
        for note in &plan.notes {
            text.push_str(&format!("; {note}"));
        }
        row(html, "plan", &text);
    }
    row(html, "launcher", &meta.launcher.kind);
    if let Some(v) = &meta.mpi.library_version {
        row(html, "MPI library", v);
    }
    if let Some(s) = &meta.summary {
        row(
            html,
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
        let text = format!(
            "{} ({}), artifacts: {}",
            sim.model.name,
            sim.machine,
            serde_json::to_string(&sim.artifacts).unwrap_or_default()
        );
        row(html, "simulated machine", &text);
    }
    if let Some(k) = &meta.system.kernel {
        row(html, "kernel", k);
    }
    html.push_str("</table>\n");
    parameters_table(html, &meta.test);
    placement_table(html, &meta.ranks);
    protocol_table(html, &meta.mpi);
}

/// The message-protocol settings meta.json recorded (MPI_T control variables whose names
/// mark thresholds, and the transport's environment variables), as (name, value) pairs.
fn protocol_settings(mpi: &lgate_rundir::MpiInfo) -> Vec<(String, String)> {
    (mpi.protocol()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string())))
    .chain(
        mpi.environment()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    )
    .collect()
}

/// The MPI library's message-protocol settings, one row each, folded away.
fn protocol_table(html: &mut String, mpi: &lgate_rundir::MpiInfo) {
    let settings = protocol_settings(mpi);
    if settings.is_empty() {
        return;
    }
    let _ = writeln!(
        html,
        "<details><summary>MPI protocol settings ({})</summary>\n<table>",
        settings.len()
    );
    for (name, value) in &settings {
        row(html, name, value);
    }
    html.push_str("</table>\n</details>\n");
}

/// The pair test's parameters, one row each (objects and lists as compact JSON).
fn parameters_table(html: &mut String, test: &lgate_rundir::TestInfo) {
    let parameters = test.parameters();
    if parameters.is_empty() {
        return;
    }
    html.push_str("<h3>Test parameters</h3>\n<table>\n");
    for (key, value) in &parameters {
        let text = match value {
            Value::String(s) => s.clone(),
            // A list with a space after each comma, so that a long one wraps.
            Value::Array(items) => items
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", "),
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
/// table with a column per set of hosts with the same facts (one when every host agrees),
/// then ranks whose placement their host's facts contradict.
pub(super) fn hosts_section(html: &mut String, meta: &lgate_rundir::RunMeta) {
    html.push_str("<h2>Hosts (meta.json)</h2>\n");
    let hosts = &meta.hosts;
    if hosts.is_empty() {
        html.push_str(if meta.test.name() == "imported" {
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
    // Hosts with the same facts share a column, in order of their first host; a row a fact.
    let mut sets: Vec<(HostFields, Vec<&str>)> = Vec::new();
    for h in hosts {
        let fields = h.fields();
        match sets.iter_mut().find(|(f, _)| *f == fields) {
            Some((_, names)) => names.push(&h.host),
            None => sets.push((fields, vec![&h.host])),
        }
    }
    let odd_hosts: std::collections::BTreeSet<&str> = odd.iter().map(|o| o.host.as_str()).collect();
    let warn = |odd: bool| if odd { " class=\"warn\"" } else { "" };
    html.push_str("<table id=\"host-facts\">\n<tr><th>hosts</th>");
    for (_, names) in &sets {
        let shown = if names.len() <= HOSTS_NAMED {
            names.join(", ")
        } else {
            format!(
                "{}, ... ({} hosts)",
                names[..HOSTS_NAMED].join(", "),
                names.len()
            )
        };
        let odd = names.iter().any(|n| odd_hosts.contains(n));
        let _ = write!(html, "<th{}>{}</th>", warn(odd), escape(&shown));
    }
    html.push_str("</tr>\n");
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
        let _ = write!(html, "<tr><th>{label}</th>");
        for (fields, names) in &sets {
            let value = (fields.iter().find(|(f, _)| *f == name)).map_or("", |(_, v)| v.as_str());
            // A value of an odd host that most hosts do not share is marked.
            let differs = odd
                .iter()
                .any(|o| names.contains(&o.host.as_str()) && o.fact == name);
            let _ = write!(html, "<td{}>{}</td>", warn(differs), escape(value));
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

/// How the run and the report were made, as commands to repeat them.
pub(super) fn commands_section(
    html: &mut String,
    meta: &lgate_rundir::RunMeta,
    command_line: &[String],
) {
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
        escape(&format!("# this report\n{}", quote(command_line)))
    );
}
