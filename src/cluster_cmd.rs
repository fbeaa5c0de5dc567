//! `lgate-plogp cluster` and `lgate-plogp score`.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use lgate_cluster::methods::{self, MethodParams};
use lgate_cluster::{AutoParams, Linkage, Tree};

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
    /// The algorithm.
    #[arg(long, default_value = "auto", value_name = "ALGO", value_parser = algo_names())]
    algo: String,
    /// What is clustered: the distance matrix, or (for a PLogP run, with --algo hdbscan,
    /// dbscan, kmeans or spectral) each rank's vector of L, o_s, o_r and g towards every rank
    /// (equation 3.5) in vector space (petal-clustering, linfa); --matrix then picks the
    /// message size, e.g. `t:1KiB` or `1KiB` [default: the smallest].
    #[arg(long, value_enum, default_value_t = Space::Matrix)]
    space: Space,
    /// auto: the least separation of a level (least median distance between two groups over
    /// the largest upper quartile inside a group).
    #[arg(long, default_value_t = AutoParams::default().min_ratio, value_name = "R")]
    min_ratio: f64,
    /// auto: the least gap between groups, as a share of the median distance.
    #[arg(long, default_value_t = AutoParams::default().min_gap, value_name = "G")]
    min_gap: f64,
    /// agglomerative: how clusters are joined.
    #[arg(long, value_enum, default_value_t = LinkageArg::Average)]
    linkage: LinkageArg,
    /// agglomerative, kmedoids, spectral, kmeans: the number of groups (kmedoids without it:
    /// by medoid silhouette; spectral and kmeans: from the eigengaps).
    #[arg(long, value_name = "K")]
    k: Option<usize>,
    /// agglomerative: cut where merges pass this distance.
    #[arg(long, value_name = "H")]
    height: Option<f64>,
    /// components: join items closer than this.
    #[arg(long, value_name = "T")]
    threshold: Option<f64>,
    /// dbscan: the neighbourhood radius.
    #[arg(long, value_name = "E")]
    eps: Option<f64>,
    /// dbscan: items within eps (itself included) that make a core item.
    #[arg(long, default_value_t = 2, value_name = "M")]
    min_points: usize,
    /// kmedoids: the largest k tried when k is chosen by silhouette; spectral and kmeans: the
    /// eigengaps are first looked for among this many + 1 eigenvalues (the window doubles while
    /// its last eigenvalue is above one half).
    #[arg(long, default_value_t = 16, value_name = "K")]
    max_k: usize,
    /// hdbscan: the least ranks of a cluster.
    #[arg(long, default_value_t = 4, value_name = "M")]
    min_cluster_size: usize,
    /// hdbscan: the neighbourhood of the core distance, the rank itself counted.
    #[arg(long, default_value_t = 4, value_name = "M")]
    min_samples: usize,
    /// ssstree: a new center opens at this share of twice the cluster's radius.
    #[arg(long, default_value_t = 0.5, value_name = "A")]
    alpha: f64,
    /// ssstree: clusters with fewer items are not split.
    #[arg(long, default_value_t = 2, value_name = "M")]
    min_children: usize,
    /// spectral, kmeans: one Gaussian kernel scale for every rank, in the matrix's unit
    /// [default: each rank's distance to its --scale-neighbour-th nearest rank].
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    scale: Option<f64>,
    /// spectral, kmeans: the neighbour whose distance is a rank's kernel scale (local scaling,
    /// Zelnik-Manor and Perona).
    #[arg(long, default_value_t = 7, value_name = "N")]
    scale_neighbour: usize,
    /// Try N values of the algorithm's main parameter across its range (the thesis's linear
    /// search: components --threshold and dbscan --eps between the least and largest distance,
    /// ssstree --alpha in (0, 5), kmedoids, agglomerative, spectral and kmeans --k in 2..=--max-k, hdbscan
    /// --min-cluster-size in 2..=P/2) and keep the value whose top-level partition has the best
    /// separation, as `auto` measures it.
    #[arg(long, value_name = "N")]
    search: Option<usize>,
    /// The output format: json, lgate, newick, or Slurm's files of the levels at and above
    /// hosts: slurm (topology.conf, topology/tree), slurm-block (topology/block) or slurm-yaml
    /// (topology.yaml); or hwloc-distances: the matrix itself for one host's ranks, for
    /// hwloc-annotate (needs --hwloc-xml; nothing is clustered).
    #[arg(long, default_value = "json", value_name = "FORMAT", value_parser = clap::builder::PossibleValuesParser::new(lgate_topology::export::names().into_iter().chain([HWLOC_DISTANCES])))]
    format: String,
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
    /// No summary on stderr.
    #[arg(long, short)]
    quiet: bool,
}

/// The `--algo` choices, with their help, from the clustering crate's registry.
fn algo_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        lgate_cluster::methods::METHODS
            .iter()
            .map(|m| clap::builder::PossibleValue::new(m.name).help(m.description)),
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Space {
    /// The distance matrix.
    Matrix,
    /// The PLogP feature vectors of a run.
    Features,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LinkageArg {
    Single,
    Complete,
    Average,
    Ward,
}

impl ClusterArgs {
    /// The method's parameters as the flags give them.
    fn params(&self) -> MethodParams {
        MethodParams {
            min_ratio: self.min_ratio,
            min_gap: self.min_gap,
            linkage: match self.linkage {
                LinkageArg::Single => Linkage::Single,
                LinkageArg::Complete => Linkage::Complete,
                LinkageArg::Average => Linkage::Average,
                LinkageArg::Ward => Linkage::Ward,
            },
            k: self.k,
            height: self.height,
            threshold: self.threshold,
            eps: self.eps,
            min_points: self.min_points,
            max_k: self.max_k,
            min_cluster_size: self.min_cluster_size,
            min_samples: self.min_samples,
            alpha: self.alpha,
            min_children: self.min_children,
            scale: self.scale,
            scale_neighbour: self.scale_neighbour,
        }
    }
}

/// The method flags without a default, and the methods that take them: given to another
/// method they would be ignored without a word, so they are refused.
const METHOD_FLAGS: &[(&str, &[&str])] = &[
    ("--k", &["agglomerative", "kmedoids", "spectral", "kmeans"]),
    ("--scale", &["spectral", "kmeans"]),
    ("--height", &["agglomerative"]),
    ("--threshold", &["components"]),
    ("--eps", &["dbscan"]),
];

/// Refuses a method flag the chosen `--algo` does not take.
fn check_method_flags(args: &ClusterArgs) -> Result<()> {
    let given = [
        args.k.is_some(),
        args.scale.is_some(),
        args.height.is_some(),
        args.threshold.is_some(),
        args.eps.is_some(),
    ];
    for (&(flag, methods), given) in METHOD_FLAGS.iter().zip(given) {
        if given && !methods.contains(&args.algo.as_str()) {
            bail!(
                "{flag} is a parameter of --algo {}; --algo {} does not take it",
                match methods.split_last() {
                    Some((last, [])) => last.to_string(),
                    Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
                    None => String::new(),
                },
                args.algo
            );
        }
    }
    Ok(())
}

/// The `--format` that writes hwloc's distances instead of a topology.
const HWLOC_DISTANCES: &str = "hwloc-distances";

/// Runs `cluster`.
pub fn run(args: ClusterArgs) -> Result<()> {
    check_method_flags(&args)?;
    let hwloc = args.format == HWLOC_DISTANCES;
    if !hwloc && (args.hwloc_xml.is_some() || args.host.is_some()) {
        bail!("--hwloc-xml and --host go with --format {HWLOC_DISTANCES}");
    }
    let mut inputs: Vec<&std::path::Path> = vec![&args.input];
    inputs.extend(args.hwloc_xml.as_deref());
    if let Some(out) = args.output.as_deref() {
        crate::output::check_output(out, &inputs, args.force)?;
    }
    if hwloc {
        return hwloc_distances(&args);
    }
    if args.space == Space::Features {
        return run_features(&args);
    }
    let inputs = match &args.matrix {
        Some(name) => vec![lgate_cluster::load(&args.input, Some(name))?],
        None => lgate_cluster::load_candidates(&args.input)?,
    };
    let mut searched = Vec::new();
    let mut outliers = Vec::new();
    let (input, tree, chose) = lgate_cluster::choose_by_levels(inputs, |input| {
        let d = input.matrix.values();
        Ok::<_, anyhow::Error>(match args.search {
            Some(steps) => {
                let (t, setting, s) = methods::search(&args.algo, &args.params(), d, steps)?;
                searched.push((
                    input.source.clone(),
                    format!(
                        "search: {setting} gave the best separation ({s:.3}; 0 means no value \
                         made a level)"
                    ),
                ));
                t
            }
            None => {
                let method = methods::method(&args.algo, &args.params())?;
                method
                    .check_items(d.nrows())
                    .with_context(|| input.source.clone())?;
                let (tree, slow) = method.fit_with_outliers(d);
                outliers.push((input.source.clone(), slow));
                tree
            }
        })
    })?;
    let outliers = outliers
        .into_iter()
        .find(|(source, _)| *source == input.source)
        .map(|(_, slow)| slow)
        .unwrap_or_default();
    let searched = searched
        .into_iter()
        .find(|(source, _)| *source == input.source)
        .map(|(_, line)| line);
    let note = [chose, searched]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n");
    let items = input.matrix.len();
    emit(
        &args,
        &input,
        &tree,
        (!note.is_empty()).then_some(note.as_str()),
        items,
        &outliers,
    )
}

/// Writes hwloc's distances between the ranks of one host of a run (`--format
/// hwloc-distances`).
fn hwloc_distances(args: &ClusterArgs) -> Result<()> {
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
    let pus = lgate_matrix::hwloc::pus_in_logical_order(&xml)
        .with_context(|| xml_path.display().to_string())?;
    let input = lgate_cluster::load(run, args.matrix.as_deref())?;
    let meta = lgate_rundir::RunMeta::read(&run.join(lgate_rundir::META_FILE))?;
    let host_of = |rank: usize| meta.ranks.get(rank).map(|r| r.host.as_str());
    let mut hosts: Vec<&str> = input.ranks.iter().filter_map(|&r| host_of(r)).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let host = match (&args.host, hosts.as_slice()) {
        (Some(h), _) if hosts.contains(&h.as_str()) => h.as_str(),
        (Some(h), _) => bail!(
            "{}: no rank ran on host {h} (the run's hosts: {})",
            run.display(),
            hosts.join(", ")
        ),
        (None, [only]) => only,
        (None, _) => bail!(
            "{}: the run spans {} hosts ({}); choose one with --host",
            run.display(),
            hosts.len(),
            hosts.join(", ")
        ),
    };
    let items: Vec<usize> = (0..input.ranks.len())
        .filter(|&i| host_of(input.ranks[i]) == Some(host))
        .collect();
    let mut floating = Vec::new();
    let cpus = items
        .iter()
        .map(|&i| {
            let rank = input.ranks[i];
            let info = meta.ranks.get(rank);
            if info
                .and_then(|x| x.cpuset.as_deref())
                .is_some_and(|set| set.contains([',', '-']))
            {
                floating.push(rank);
            }
            info.and_then(|x| x.cpu)
                .with_context(|| format!("{}: meta.json has no CPU for rank {rank}", run.display()))
        })
        .collect::<Result<Vec<usize>>>()?;
    let matrix_name = input
        .source
        .rsplit_once(" (")
        .map_or(input.source.as_str(), |(_, name)| {
            name.trim_end_matches(')')
        });
    let text = lgate_matrix::hwloc::distances_file(
        &format!("lgate-plogp {matrix_name}"),
        &input.matrix,
        &items,
        &cpus,
        &pus,
    )
    .with_context(|| format!("{}: host {host}", run.display()))?;
    write_output(args.output.as_deref(), &text)?;
    if !args.quiet {
        eprintln!(
            "hwloc distances of the {} ranks on {host} from {}, in ns; add them with: \
             hwloc-annotate {} OUT.xml root distances {}",
            items.len(),
            input.source,
            xml_path.display(),
            args.output
                .as_deref()
                .map_or("FILE".to_string(), |p| p.display().to_string())
        );
        if !floating.is_empty() {
            eprintln!(
                "warning: ranks {} could run on several CPUs (not bound): their PU is the CPU \
                 each started on; bind ranks (mpirun --bind-to core) for distances between PUs",
                lgate_topology::sorted_rank_list(&floating)
            );
        }
    }
    Ok(())
}

/// Clusters a run's feature vectors (`--space features`).
fn run_features(args: &ClusterArgs) -> Result<()> {
    if !args.input.is_dir() {
        bail!(
            "{}: --space features clusters a PLogP run directory, not a matrix file",
            args.input.display()
        );
    }
    if args.search.is_some() {
        bail!("--search works on the distance matrix, not with --space features");
    }
    let size = args
        .matrix
        .as_deref()
        .map(|m| m.rsplit(':').next().unwrap_or(m));
    let fv = lgate_cluster::features::feature_vectors(&args.input, size)?;
    let method = methods::method(&args.algo, &args.params())?;
    method
        .check_items(fv.vectors.nrows())
        .with_context(|| args.input.display().to_string())?;
    let tree = method.fit_vectors(&fv.vectors).with_context(|| {
        "--space features runs --algo hdbscan, dbscan (petal-clustering), kmeans or spectral \
         (linfa); the other algorithms work on the matrix"
    })?;
    let items = fv.input.matrix.len();
    emit(
        args,
        &fv.input,
        &tree,
        Some("space: features (L, o_s, o_r, g towards every rank)"),
        items,
        &[],
    )
}

/// Writes the topology of a clustering with the slow items the method set aside (item, how
/// many times slower), and the summary on stderr.
fn emit(
    args: &ClusterArgs,
    input: &lgate_cluster::ClusterInput,
    tree: &Tree,
    searched: Option<&str>,
    items: usize,
    slow: &[(usize, f64)],
) -> Result<()> {
    let topology = input.topology(tree)?.with_outliers(
        slow.iter()
            .map(|&(i, f)| lgate_topology::Outlier {
                rank: input.ranks[i],
                slowness: f,
            })
            .collect(),
    )?;
    let writer = lgate_topology::export::writer(&args.format)
        .with_context(|| format!("unknown --format {}", args.format))?;
    let context = lgate_topology::export::ExportContext {
        hosts: input.hosts.as_deref(),
        source: &input.source,
    };
    let text = writer
        .write(&topology, &context)
        .with_context(|| args.input.display().to_string())?;
    write_output(args.output.as_deref(), &text)?;
    if !args.quiet {
        for w in &input.warnings {
            eprintln!("warning: {w}");
        }
        if let Some(line) = searched {
            eprintln!("{line}");
        }
        let algo = &args.algo;
        let levels = topology.levels().len();
        let mut s = format!(
            "cluster: {} ({items} ranks), {algo}: {levels} {}",
            input.source,
            if levels == 1 { "level" } else { "levels" }
        );
        s.push('\n');
        if topology.levels().is_empty() {
            s.push_str("  one group: the distances show no structure at these thresholds\n");
        } else {
            s.push_str(&lgate_topology::level_summary(&topology));
        }
        // auto keeps only levels that stand apart; the other algorithms keep what they make.
        if algo != "auto" {
            for (name, separation) in input.weak_levels(&topology) {
                s.push_str(&if separation > 0.0 {
                    format!(
                        "  weak: the groups of {name} barely stand apart (separation \
                         {separation:.2}, below the 1.2 auto asks of a level): the algorithm's \
                         parameters made this split more than the distances do\n"
                    )
                } else {
                    format!(
                        "  weak: {name} is no level auto would make (mostly single ranks, fewer \
                         than two groups of two, or groups wider inside than apart)\n"
                    )
                });
            }
        }
        eprint!("{s}");
        {
            if !slow.is_empty() {
                let ranks: Vec<usize> = slow.iter().map(|&(i, _)| input.ranks[i]).collect();
                let mut hosts: Vec<&str> = match &input.hosts {
                    Some(h) => ranks
                        .iter()
                        .filter_map(|&r| h.get(r))
                        .map(|h| h.as_str())
                        .collect(),
                    None => Vec::new(),
                };
                hosts.sort_unstable();
                hosts.dedup();
                let (lo, hi) = slow.iter().fold((f64::MAX, 0.0f64), |(lo, hi), &(_, f)| {
                    (lo.min(f), hi.max(f))
                });
                let on = if hosts.is_empty() {
                    String::new()
                } else {
                    format!(" (on {})", hosts.join(", "))
                };
                eprintln!(
                    "  slow ranks: {}{on}, {lo:.2}-{hi:.2}x the usual distance towards every \
                     other rank; their pairs were scaled down before clustering (outliers in \
                     the JSON topology)",
                    lgate_topology::sorted_rank_list(&ranks),
                );
            }
        }
        for line in health_lines(&args.input) {
            eprintln!("  health: {line}");
        }
    }
    Ok(())
}

/// The health a run's report.json found (slow hosts, unstable hosts, known artifacts), one
/// line each; none for a matrix file or a run without report.json.
fn health_lines(input: &std::path::Path) -> Vec<String> {
    if !input.join(lgate_rundir::files::REPORT_FILE).is_file() {
        return Vec::new();
    }
    match lgate_rundir::Report::read(input) {
        Ok(report) => report.health().to_vec(),
        Err(e) => vec![format!("{e} (the run's health is not shown)")],
    }
}
