//! `lgate-plogp cluster` and `lgate-plogp score`.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use lgate_cluster::algorithms;
use lgate_cluster::{auto, topology_of, AutoParams, Linkage, Tree};
use lgate_topology::{format, Topology, TopologyFormat};

use crate::output::write_output;

/// Options of `cluster`.
#[derive(Debug, Clone, Args)]
pub struct ClusterArgs {
    /// A run directory of `measure`, or a distance matrix: CSV (square, with or without a header
    /// row and a label column, or the lower triangle only) or .npy.
    #[arg(value_name = "RUN_OR_MATRIX")]
    input: PathBuf,
    /// The matrix of a run: latency, rtt:0, t:1KiB, features:0, ... (`t` and `features` alone
    /// take the smallest size) [default: t].
    #[arg(long, value_name = "NAME")]
    matrix: Option<String>,
    /// The algorithm.
    #[arg(long, value_enum, default_value_t = Algo::Auto)]
    algo: Algo,
    /// What is clustered: the distance matrix, or (for a PLogP run, with --algo hdbscan or
    /// dbscan) each rank's vector of L, o_s, o_r and g towards every rank (equation 3.5) in
    /// vector space with petal-clustering; --matrix then picks the message size, e.g. `t:1KiB`
    /// or `1KiB` [default: the smallest].
    #[arg(long, value_enum, default_value_t = Space::Matrix)]
    space: Space,
    /// auto: the least separation of a level (least distance between groups over the 95th
    /// percentile inside them).
    #[arg(long, default_value_t = AutoParams::default().min_ratio, value_name = "R")]
    min_ratio: f64,
    /// auto: the least gap between groups, as a share of the median distance.
    #[arg(long, default_value_t = AutoParams::default().min_gap, value_name = "G")]
    min_gap: f64,
    /// agglomerative: how clusters are joined.
    #[arg(long, value_enum, default_value_t = LinkageArg::Average)]
    linkage: LinkageArg,
    /// agglomerative, kmedoids: the number of groups (kmedoids without it: by medoid
    /// silhouette).
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
    /// kmedoids: the largest k tried when k is chosen by silhouette.
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
    /// Try N values of the algorithm's main parameter across its range (the thesis's linear
    /// search: components --threshold and dbscan --eps between the least and largest distance,
    /// ssstree --alpha in (0, 5), kmedoids and agglomerative --k in 2..=--max-k, hdbscan
    /// --min-cluster-size in 2..=P/2) and keep the value whose top-level partition has the best
    /// separation, as `auto` measures it.
    #[arg(long, value_name = "N")]
    search: Option<usize>,
    /// The output format (slurm: a topology.conf of the levels at and above hosts).
    #[arg(long, value_enum, default_value_t = OutFormat::Json)]
    format: OutFormat,
    /// Write here instead of stdout (replaced atomically).
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// No summary on stderr.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Algo {
    /// Every level the data supports, found per subtree; nothing to give.
    Auto,
    /// HDBSCAN on the matrix; the condensed tree is the hierarchy.
    Hdbscan,
    /// Average, single, complete or Ward linkage, cut by --k or --height.
    Agglomerative,
    /// Connected components below --threshold.
    Components,
    /// DBSCAN with --eps and --min-points.
    Dbscan,
    /// FasterPAM k-medoids, --k or chosen by medoid silhouette.
    Kmedoids,
    /// Sparse Spatial Selection tree, --alpha and --min-children.
    Ssstree,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OutFormat {
    Json,
    Lgate,
    Newick,
    Slurm,
}

impl ClusterArgs {
    fn tree(&self, d: &ndarray::Array2<f64>) -> Result<Tree> {
        Ok(match self.algo {
            Algo::Auto => auto(
                d,
                &AutoParams {
                    min_ratio: self.min_ratio,
                    min_gap: self.min_gap,
                    ..AutoParams::default()
                },
            ),
            Algo::Hdbscan => {
                lgate_cluster::hdbscan(
                    d,
                    lgate_cluster::HdbscanParams {
                        min_cluster_size: self.min_cluster_size,
                        min_samples: self.min_samples,
                    },
                )
                .tree
            }
            Algo::Agglomerative => {
                if self.k.is_none() && self.height.is_none() {
                    bail!("--algo agglomerative needs --k or --height");
                }
                let linkage = match self.linkage {
                    LinkageArg::Single => Linkage::Single,
                    LinkageArg::Complete => Linkage::Complete,
                    LinkageArg::Average => Linkage::Average,
                    LinkageArg::Ward => Linkage::Ward,
                };
                algorithms::agglomerative(d, linkage, self.k, self.height)
            }
            Algo::Components => {
                let t = self
                    .threshold
                    .context("--algo components needs --threshold")?;
                algorithms::components(d, t)
            }
            Algo::Dbscan => {
                let eps = self.eps.context("--algo dbscan needs --eps")?;
                algorithms::dbscan(d, eps, self.min_points)
            }
            Algo::Kmedoids => algorithms::kmedoids(d, self.k, self.max_k),
            Algo::Ssstree => algorithms::ssstree(d, self.alpha, self.min_children),
        })
    }
}

/// The top-level partition of a tree, one label per item.
fn top_labels(tree: &Tree, n: usize) -> Vec<usize> {
    let mut labels = vec![0; n];
    if let Tree::Node { children, .. } = tree {
        for (g, c) in children.iter().enumerate() {
            for r in c.ranks() {
                labels[r] = g;
            }
        }
    }
    labels
}

impl ClusterArgs {
    /// The values `--search` tries, as the arguments that set them.
    fn search_space(&self, d: &ndarray::Array2<f64>, steps: usize) -> Result<Vec<ClusterArgs>> {
        let n = d.nrows();
        let (lo, hi) = d
            .iter()
            .copied()
            .filter(|&x| x > 0.0)
            .fold((f64::INFINITY, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
        let steps = steps.max(1);
        let linear = |a: f64, b: f64| -> Vec<f64> {
            (1..=steps)
                .map(|k| a + (b - a) * k as f64 / (steps + 1) as f64)
                .collect()
        };
        let integers = |a: usize, b: usize| -> Vec<usize> {
            let mut v: Vec<usize> = (0..steps)
                .map(|k| a + (b.saturating_sub(a)) * k / steps.max(2).saturating_sub(1).max(1))
                .collect();
            v.dedup();
            v
        };
        let base = || ClusterArgs {
            search: None,
            ..self.clone()
        };
        Ok(match self.algo {
            Algo::Auto => {
                bail!("--search needs an algorithm with a parameter; auto has none to search")
            }
            Algo::Components => linear(lo, hi)
                .into_iter()
                .map(|t| ClusterArgs {
                    threshold: Some(t),
                    ..base()
                })
                .collect(),
            Algo::Dbscan => linear(lo, hi)
                .into_iter()
                .map(|e| ClusterArgs {
                    eps: Some(e),
                    ..base()
                })
                .collect(),
            Algo::Ssstree => linear(0.0, 5.0)
                .into_iter()
                .map(|a| ClusterArgs { alpha: a, ..base() })
                .collect(),
            Algo::Kmedoids | Algo::Agglomerative => {
                integers(2, self.max_k.min(n.saturating_sub(1)).max(2))
                    .into_iter()
                    .map(|k| ClusterArgs {
                        k: Some(k),
                        height: None,
                        ..base()
                    })
                    .collect()
            }
            Algo::Hdbscan => integers(2, (n / 2).max(2))
                .into_iter()
                .map(|m| ClusterArgs {
                    min_cluster_size: m,
                    ..base()
                })
                .collect(),
        })
    }

    /// The tree of the searched value with the best separation, and a line saying which.
    fn searched_tree(&self, d: &ndarray::Array2<f64>, steps: usize) -> Result<(Tree, String)> {
        let n = d.nrows();
        let params = AutoParams::default();
        let mut best: Option<(f64, Tree, String)> = None;
        for candidate in self.search_space(d, steps)? {
            let tree = candidate.tree(d)?;
            let s = lgate_cluster::separation_of(d, &top_labels(&tree, n), &params);
            let what = match self.algo {
                Algo::Components => {
                    format!("--threshold {:.4}", candidate.threshold.unwrap_or(0.0))
                }
                Algo::Dbscan => format!("--eps {:.4}", candidate.eps.unwrap_or(0.0)),
                Algo::Ssstree => format!("--alpha {:.3}", candidate.alpha),
                Algo::Hdbscan => format!("--min-cluster-size {}", candidate.min_cluster_size),
                _ => format!("--k {}", candidate.k.unwrap_or(0)),
            };
            if best.as_ref().is_none_or(|b| s > b.0) {
                best = Some((s, tree, what));
            }
        }
        let (s, tree, what) = best.context("--search found nothing to try")?;
        Ok((
            tree,
            format!(
                "search: {what} gave the best separation ({s:.3}; 0 means no value made a level)"
            ),
        ))
    }
}

/// Re-numbers a tree's items as the ranks they stand for.
fn to_ranks(tree: &Tree, ranks: &[usize]) -> Tree {
    match tree {
        Tree::Leaf(items) => Tree::Leaf(items.iter().map(|&i| ranks[i]).collect()),
        Tree::Node {
            children,
            separation,
        } => Tree::Node {
            children: children.iter().map(|c| to_ranks(c, ranks)).collect(),
            separation: *separation,
        },
    }
}

/// Runs `cluster`.
pub fn run(args: ClusterArgs) -> Result<()> {
    if args.space == Space::Features {
        return run_features(&args);
    }
    let input = lgate_cluster::load(&args.input, args.matrix.as_deref())?;
    let items = input.matrix.len();
    let (tree, searched) = match args.search {
        Some(steps) => {
            let (t, line) = args.searched_tree(input.matrix.values(), steps)?;
            (t, Some(line))
        }
        None => (args.tree(input.matrix.values())?, None),
    };
    emit(&args, &input, &tree, searched.as_deref(), items)
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
    let tree = match args.algo {
        Algo::Hdbscan => lgate_cluster::features::hdbscan_features(
            &fv.vectors,
            args.min_cluster_size,
            args.min_samples,
        ),
        Algo::Dbscan => {
            let eps = args
                .eps
                .context("--algo dbscan needs --eps (a distance between feature vectors, in us)")?;
            lgate_cluster::features::dbscan_features(&fv.vectors, eps, args.min_points)
        }
        _ => bail!(
            "--space features runs --algo hdbscan or dbscan (petal-clustering); the other \
             algorithms work on the matrix"
        ),
    };
    let items = fv.input.matrix.len();
    emit(
        args,
        &fv.input,
        &tree,
        Some("space: features (L, o_s, o_r, g towards every rank)"),
        items,
    )
}

/// The topology `cluster` finds with its defaults on a run's default matrix, its levels named
/// after the run's placement where they match it.
pub fn default_topology(run: &std::path::Path) -> Result<Topology> {
    let input = lgate_cluster::load(run, None)?;
    let tree = lgate_cluster::auto(input.matrix.values(), &AutoParams::default());
    let tree = to_ranks(&tree, &input.ranks);
    let labels = input
        .hosts
        .clone()
        .or_else(|| Some(input.matrix.labels().to_vec()));
    name_levels(topology_of(&tree, input.job_size, labels)?, run)
}

/// Writes the topology of a clustering, and the summary on stderr.
fn emit(
    args: &ClusterArgs,
    input: &lgate_cluster::ClusterInput,
    tree: &Tree,
    searched: Option<&str>,
    items: usize,
) -> Result<()> {
    let tree = to_ranks(tree, &input.ranks);
    let labels = input
        .hosts
        .clone()
        .or_else(|| Some(input.matrix.labels().to_vec()));
    let topology = topology_of(&tree, input.job_size, labels)?;
    let topology = if args.input.is_dir() {
        name_levels(topology, &args.input)?
    } else {
        topology
    };
    let text = match args.format {
        OutFormat::Json => format::to_string(&topology, TopologyFormat::Json),
        OutFormat::Lgate => format::to_string(&topology, TopologyFormat::Lgate),
        OutFormat::Newick => format::to_string(&topology, TopologyFormat::Newick),
        OutFormat::Slurm => {
            let hosts = input.hosts.as_deref().with_context(|| {
                format!(
                    "{}: --format slurm needs host names, which a run directory has and a matrix file does not",
                    args.input.display()
                )
            })?;
            slurm_topology(&topology, hosts, &input.source)
        }
    };
    write_output(args.output.as_deref(), &text)?;
    if !args.quiet {
        for w in &input.warnings {
            eprintln!("warning: {w}");
        }
        if let Some(line) = searched {
            eprintln!("{line}");
        }
        let algo = args
            .algo
            .to_possible_value()
            .map_or(String::new(), |v| v.get_name().to_string());
        let mut s = format!(
            "cluster: {} ({items} ranks), {algo}: {} level(s)",
            input.source,
            topology.levels().len()
        );
        s.push('\n');
        if topology.levels().is_empty() {
            s.push_str("  one group: the distances show no structure at these thresholds\n");
        } else {
            s.push_str(&lgate_topology::level_summary(&topology));
        }
        eprint!("{s}");
    }
    Ok(())
}

/// Names each level after the placement a run recorded (node, socket, core, ...) when its groups
/// are exactly that placement's.
fn name_levels(topology: Topology, run: &std::path::Path) -> Result<Topology> {
    let truth = lgate_cluster::read_truth(run)?;
    let n = topology.ranks();
    let mut levels = topology.levels().to_vec();
    for level in &mut levels {
        let found = level.labels(n);
        if let Some((name, _)) = truth.levels.iter().find(|(_, t)| {
            t.len() == n && lgate_cluster::adjusted_rand_index(t, &found) >= 1.0 - 1e-12
        }) {
            level.name = name.clone();
        }
    }
    Ok(topology.with_levels(levels)?)
}

/// A Slurm topology.conf of the levels that hold whole hosts: leaf switches over hosts, then a
/// switch per coarser group over the switches below it.
fn slurm_topology(topology: &Topology, hosts: &[String], source: &str) -> String {
    let host_levels: Vec<&lgate_topology::Level> = topology
        .levels()
        .iter()
        .filter(|l| {
            l.groups.iter().all(|g| {
                // A group holds whole hosts: no host has ranks outside it.
                g.iter().all(|&r| {
                    hosts
                        .iter()
                        .enumerate()
                        .filter(|(_, h)| **h == hosts[r])
                        .all(|(q, _)| g.contains(&q))
                })
            })
        })
        .filter(|l| {
            let mut distinct: Vec<&String> = hosts.iter().collect();
            distinct.sort();
            distinct.dedup();
            l.groups.len() < distinct.len()
        })
        .collect();
    let hosts_of = |g: &[usize]| -> Vec<String> {
        let mut h: Vec<String> = g.iter().map(|&r| hosts[r].clone()).collect();
        h.sort();
        h.dedup();
        h
    };
    let mut out = format!(
        "# Slurm topology.conf written by lgate-plogp {} from {source}\n",
        env!("CARGO_PKG_VERSION")
    );
    if host_levels.is_empty() {
        let all: Vec<usize> = (0..hosts.len()).collect();
        let _ = writeln!(out, "SwitchName=s0 Nodes={}", hosts_of(&all).join(","));
        return out;
    }
    let depth = host_levels.len();
    for (k, level) in host_levels.iter().enumerate().rev() {
        for (g, group) in level.groups.iter().enumerate() {
            let name = format!("s{k}_{g}");
            if k + 1 == depth {
                let _ = writeln!(out, "SwitchName={name} Nodes={}", hosts_of(group).join(","));
            } else {
                let below: Vec<String> = host_levels[k + 1]
                    .groups
                    .iter()
                    .enumerate()
                    .filter(|(_, h)| h.iter().all(|r| group.contains(r)))
                    .map(|(h, _)| format!("s{}_{h}", k + 1))
                    .collect();
                let _ = writeln!(out, "SwitchName={name} Switches={}", below.join(","));
            }
        }
    }
    let top: Vec<String> = (0..host_levels[0].groups.len())
        .map(|g| format!("s0_{g}"))
        .collect();
    let _ = writeln!(out, "SwitchName=root Switches={}", top.join(","));
    out
}

/// Options of `score`.
#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// Known placement: a run directory (or its meta.json), or a JSON object with `levels`
    /// mapping a level name to one label per rank.
    #[arg(long, value_name = "RUN_OR_FILE")]
    truth: PathBuf,
    /// The topology to judge (LGate, JSON or Newick).
    #[arg(long, value_name = "FILE")]
    topology: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `score`.
pub fn score(args: ScoreArgs) -> Result<()> {
    let truth = lgate_cluster::read_truth(&args.truth)?;
    let (topology, _) = format::read_file(&args.topology, None)?;
    let n = truth.levels.first().map_or(topology.ranks(), |l| l.1.len());
    if truth.levels.iter().any(|l| l.1.len() != n) || topology.ranks() > n {
        bail!(
            "{}: the topology has {} ranks, the truth {n}",
            args.topology.display(),
            topology.ranks()
        );
    }
    // Over the truth's ranks, keeping the file's level names where the levels are the same.
    let named = topology.levels().to_vec();
    let topology = Topology::from_tree(topology.tree().clone(), Some(n))?;
    let levels: Vec<_> = topology
        .levels()
        .iter()
        .map(|l| {
            let mut l = l.clone();
            if let Some(same) = named.iter().find(|m| m.groups == l.groups) {
                l.name = same.name.clone();
            }
            l
        })
        .collect();
    let topology = topology.with_levels(levels)?;
    let mut found: Vec<(String, Vec<usize>)> = topology
        .levels()
        .iter()
        .map(|l| (l.name.clone(), l.labels(n)))
        .collect();
    found.push(("(one group)".into(), vec![0; n]));
    // A level of one rank per group (cores, when each rank has its own) is matched by the
    // leaves themselves.
    found.push(("(one rank each)".into(), (0..n).collect()));
    let mut rows = Vec::new();
    for (name, labels) in &truth.levels {
        let (best, ari) = found
            .iter()
            .map(|(f, l)| (f, lgate_cluster::adjusted_rand_index(labels, l)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .expect("one level at least");
        let acc = lgate_cluster::accuracy(
            labels,
            &found.iter().find(|(f, _)| f == best).expect("found").1,
        );
        let groups = labels.iter().max().map_or(0, |&m| m + 1);
        rows.push(serde_json::json!({"level": name, "groups": groups, "best_match": best, "ari": ari, "accuracy": acc}));
    }
    let text = if args.json {
        format!("{:#}\n", serde_json::Value::from(rows))
    } else {
        let mut t = format!(
            "{:<24} {:>7}  {:<14} {:>6} {:>9}\n",
            "true level", "groups", "best match", "ARI", "accuracy"
        );
        for r in &rows {
            let _ = writeln!(
                t,
                "{:<24} {:>7}  {:<14} {:>6.3} {:>8.1}%",
                r["level"].as_str().unwrap_or(""),
                r["groups"].as_u64().unwrap_or(0),
                r["best_match"].as_str().unwrap_or(""),
                r["ari"].as_f64().unwrap_or(0.0),
                100.0 * r["accuracy"].as_f64().unwrap_or(0.0)
            );
        }
        t
    };
    write_output(None, &text)
}
