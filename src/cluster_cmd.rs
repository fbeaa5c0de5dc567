//! `lgate-plogp cluster` and `lgate-plogp score`.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::method_args::{MethodArgs, Space};
use crate::output::write_output;

/// Options of `cluster`.
#[derive(Debug, Clone, Args)]
pub struct ClusterArgs {
    /// A run directory of `measure`, or a distance matrix: CSV (square, with or without a header
    /// row and a label column, or the lower triangle only) or .npy.
    #[arg(value_name = "RUN_OR_MATRIX")]
    input: PathBuf,
    /// The matrix of a run: latency, rtt:0, t:1KiB, features:0, ... (`t` and `features` alone
    /// take the smallest size) [default: t; rtt for a ping-pong run].
    #[arg(long, value_name = "NAME")]
    matrix: Option<String>,
    /// A staged run: cluster its host blocks (each host's block alone, the host x host medians
    /// and the pairs between hosts) even when it has dense matrices, which are clustered by
    /// hosts too but with the levels inside hosts from the whole matrix; runs above 4096 ranks
    /// have host blocks only.
    #[arg(long)]
    by_hosts: bool,
    #[command(flatten)]
    method: MethodArgs,
    /// The output format: json, lgate, newick, or Slurm's files of the levels at and above
    /// hosts: slurm (topology.conf, topology/tree), slurm-block (topology/block) or slurm-yaml
    /// (topology.yaml); k8s-labels: Kubernetes node labels in topograph's keys; or
    /// hwloc-distances: the matrix itself for one host's ranks, for hwloc-annotate (needs
    /// --hwloc-xml; nothing is clustered). Several formats from one clustering: FORMAT=FILE,
    /// repeated (`--format slurm=topology.conf --format k8s-labels=labels.yaml`); a format
    /// without =FILE goes to --output.
    #[arg(long, default_value = "json", value_name = "FORMAT[=FILE]")]
    format: Vec<String>,
    /// With --format hwloc-distances: the host's `lstopo --of xml`, the file hwloc-annotate
    /// reads (it gives the logical index of each rank's CPU).
    #[arg(long, value_name = "FILE")]
    hwloc_xml: Option<PathBuf>,
    /// With --format hwloc-distances: the host whose ranks are written [default: the run's only
    /// host].
    #[arg(long, value_name = "NAME")]
    host: Option<String>,
    /// Write here instead of stdout (replaced atomically).
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Replace the output if it exists (never one of the inputs).
    #[arg(long)]
    force: bool,
    /// auto: resamples of the matrix clustered again to tell how sure each level is (0: none)
    /// [default: 20 up to 128 ranks, 8 up to 512, else 0; at most 1000].
    #[arg(long, value_name = "N", value_parser = resamples_parser)]
    resamples: Option<usize>,
    /// No summary on stderr.
    #[arg(long, short)]
    quiet: bool,
}

/// The `--format` that writes hwloc's distances instead of a topology.
const HWLOC_DISTANCES: &str = "hwloc-distances";

/// Runs `cluster`.
pub fn run(args: ClusterArgs) -> Result<()> {
    let m = &args.method;
    let method = (m.method()).map_err(|e| anyhow::anyhow!(crate::method_args::param_said(&e)))?;
    let targets = targets(&args)?;
    let hwloc = targets.iter().any(|t| t.0 == HWLOC_DISTANCES);
    if hwloc && targets.len() > 1 {
        bail!("--format {HWLOC_DISTANCES} writes a matrix, not a topology: give it alone");
    }
    if !hwloc && (args.hwloc_xml.is_some() || args.host.is_some()) {
        bail!("--hwloc-xml and --host go with --format {HWLOC_DISTANCES}");
    }
    let mut inputs: Vec<&std::path::Path> = vec![&args.input];
    inputs.extend(args.hwloc_xml.as_deref());
    for out in targets.iter().filter_map(|t| t.1.as_deref()) {
        crate::output::check_output(out, &inputs, args.force)?;
    }
    if hwloc {
        return hwloc_distances(&args, targets[0].1.as_deref());
    }
    if m.space == Space::Features {
        if !args.input.is_dir() {
            bail!(
                "{}: --space features clusters a PLogP run directory, not a matrix file",
                args.input.display()
            );
        }
        if m.search.is_some() {
            bail!("--search works on the distance matrix, not with --space features");
        }
    }
    let opts = lgate_cluster::stored::ClusterOptions {
        matrix: args.matrix.clone(),
        by_hosts: args.by_hosts,
        features: m.space == Space::Features,
        method,
        search: m.search,
        resamples: args.resamples,
    };
    let (topology, hosts, source, summary, reused) =
        match lgate_cluster::stored::reuse(&args.input, &opts) {
            Some(r) => (
                r.topology,
                r.entry.hosts,
                r.entry.source,
                r.entry.summary,
                Some(r.file),
            ),
            None => {
                let f = lgate_cluster::stored::compute_and_store(&args.input, &opts, !args.quiet)
                    .map_err(crate::method_args::said)?;
                (f.topology, f.input.hosts, f.input.source, f.summary, None)
            }
        };
    let context = lgate_topology::export::ExportContext {
        hosts: hosts.as_deref(),
        source: &source,
    };
    for (format, output) in &targets {
        let writer = lgate_topology::export::writer(format)
            .with_context(|| format!("unknown --format {format}"))?;
        let text = writer
            .write(&topology, &context)
            .with_context(|| args.input.display().to_string())?;
        write_output(output.as_deref(), &text)?;
    }
    if !args.quiet {
        eprint!("{summary}");
        if let Some(file) = reused {
            eprintln!(
                "  (the clustering stored in {}: the same run, options and binary)",
                file.display()
            );
        }
    }
    Ok(())
}

/// Each `--format` with the file it goes to (`None`: `--output`, or stdout).
fn targets(args: &ClusterArgs) -> Result<Vec<(String, Option<PathBuf>)>> {
    let names = lgate_topology::export::names();
    let mut out = Vec::new();
    for f in &args.format {
        let (name, file) = match f.split_once('=') {
            Some((name, file)) if !file.is_empty() => (name, Some(PathBuf::from(file))),
            Some(_) => bail!("--format {f}: FORMAT=FILE needs a file after ="),
            None => (f.as_str(), args.output.clone()),
        };
        if name != HWLOC_DISTANCES && !names.contains(&name) {
            bail!(
                "--format {name}: not a format; one of {}, {HWLOC_DISTANCES}",
                names.join(", ")
            );
        }
        out.push((name.to_string(), file));
    }
    let to_output = args.format.iter().filter(|f| !f.contains('=')).count();
    if to_output > 1 {
        bail!("--format: one format at most without =FILE (it goes to --output or stdout)");
    }
    Ok(out)
}

/// Writes hwloc's distances between the ranks of one host of a run (`--format
/// hwloc-distances`).
fn hwloc_distances(args: &ClusterArgs, output: Option<&std::path::Path>) -> Result<()> {
    let run = &args.input;
    if !run.is_dir() {
        bail!(
            "{}: --format {HWLOC_DISTANCES} needs a run directory (its meta.json has the CPU \
             each rank ran on)",
            run.display()
        );
    }
    let xml_path = args.hwloc_xml.as_deref().with_context(|| {
        format!(
            "--format {HWLOC_DISTANCES} needs --hwloc-xml FILE: the host's `lstopo --of xml`, \
             which names each CPU by the logical index the distances file uses"
        )
    })?;
    let xml = std::fs::read_to_string(xml_path)
        .with_context(|| format!("{}: cannot read it", xml_path.display()))?;
    let host = args.host.as_deref();
    let d = lgate_cluster::host_distances(run, args.matrix.as_deref(), &xml, xml_path, host)?;
    write_output(output, &d.text)?;
    if !args.quiet {
        eprintln!(
            "hwloc distances of the {} ranks on {} from {}, in ns; add them with: \
             hwloc-annotate {} OUT.xml root distances {}",
            d.ranks,
            d.host,
            d.source,
            xml_path.display(),
            output.map_or("FILE".to_string(), |p| p.display().to_string())
        );
        if !d.floating.is_empty() {
            eprintln!(
                "warning: ranks {} could run on several CPUs (not bound): their PU is the CPU \
                 each started on; bind ranks (mpirun --bind-to core) for distances between PUs",
                lgate_topology::sorted_rank_list(&d.floating)
            );
        }
    }
    Ok(())
}

/// The most resamples `--resamples` takes: each clusters the whole matrix again.
const MAX_RESAMPLES: usize = 1000;

/// `--resamples`: a whole number up to [`MAX_RESAMPLES`].
fn resamples_parser(text: &str) -> Result<usize, String> {
    let n: usize = (text.parse()).map_err(|_| format!("`{text}` is not a whole number"))?;
    if n > MAX_RESAMPLES {
        return Err(format!(
            "at most {MAX_RESAMPLES}: each resample clusters the whole matrix again (20 tell a \
             level's confidence to 5 %)"
        ));
    }
    Ok(n)
}
