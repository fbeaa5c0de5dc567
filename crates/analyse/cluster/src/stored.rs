//! Cluster once: a run's clustering computed as `cluster` computes it, stored in the run
//! directory with what it came from (`lgate_rundir::clustered`), and reused by `cluster`,
//! `report` and the exports while the run, the options and the binary are unchanged.

use std::path::{Path, PathBuf};

use lgate_rundir::clustered::{self, ClusteredEntry, ClusteredKey};
use lgate_topology::Topology;

use crate::clustering::{cluster_features, cluster_matrices, ClusteringError};
use crate::input::{load_by_hosts, load_candidates, load_with_sizes, ClusterInput};
use crate::methods::Method;
use crate::summary::ClusterSummary;

/// The options of one clustering, as `cluster`'s flags give them.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterOptions {
    /// The run's matrix (`None`: the one `cluster` chooses).
    pub matrix: Option<String>,
    /// A staged run's host blocks even when it has dense matrices.
    pub by_hosts: bool,
    /// The PLogP parameters per rank (feature vectors) instead of the distances.
    pub features: bool,
    /// The method and its parameters.
    pub method: Method,
    /// Searches the method's parameter over this many values.
    pub search: Option<usize>,
    /// Resamples for the levels' confidence (`None`: by the input's size).
    pub resamples: Option<usize>,
}

impl Default for ClusterOptions {
    /// `cluster`'s defaults.
    fn default() -> Self {
        ClusterOptions {
            matrix: None,
            by_hosts: false,
            features: false,
            method: Method::default(),
            search: None,
            resamples: None,
        }
    }
}

/// A clustering as `cluster` writes it.
#[derive(Debug)]
pub struct Finished {
    /// What was clustered.
    pub input: ClusterInput,
    /// The topology, levels named and their confidence told.
    pub topology: Topology,
    /// The summary `cluster` prints (empty when not asked for).
    pub summary: String,
}

/// A stored clustering found unchanged.
#[derive(Debug)]
pub struct Reused {
    /// Its topology.
    pub topology: Topology,
    /// Its entry: the matrix, the source, the hosts, the summary.
    pub entry: ClusteredEntry,
    /// The file its topology was read from.
    pub file: PathBuf,
}

/// Clusters the run directory or matrix file `path` with `opts` as `cluster` does, with its
/// summary when `summary` asks for it (the summary measures every level's separation again).
pub fn compute(
    path: &Path,
    opts: &ClusterOptions,
    summary: bool,
) -> Result<Finished, ClusteringError> {
    let method = &opts.method;
    let c = if opts.features {
        let size = (opts.matrix.as_deref()).map(|s| s.rsplit(':').next().unwrap_or(s));
        cluster_features(path, size, method)?
    } else {
        let inputs = match &opts.matrix {
            _ if opts.by_hosts => load_by_hosts(path, opts.matrix.as_deref())?,
            Some(name) => vec![load_with_sizes(path, Some(name))?],
            None => load_candidates(path)?,
        };
        cluster_matrices(inputs, method, opts.search, opts.resamples)?
    };
    let resamples =
        (opts.resamples).unwrap_or_else(|| crate::confidence::default_resamples(c.input.items()));
    let (topology, unbound, turns) = crate::finished_topology(&c, method, resamples)?;
    let summary = if !summary {
        String::new()
    } else {
        ClusterSummary {
            input: &c.input,
            topology: &topology,
            method,
            note: c.note.as_deref(),
            items: c.input.items(),
            slow: &c.slow,
            health: ClusterSummary::health_of(path),
            unbound: &unbound,
            turns: turns.as_ref(),
            resamples,
        }
        .to_string()
    };
    Ok(Finished {
        input: c.input,
        topology,
        summary,
    })
}

/// What a clustering of the run `run` with `opts` is computed from, now.
pub fn key(run: &Path, opts: &ClusterOptions) -> ClusteredKey {
    ClusteredKey {
        tool: clustered::tool_stamp(),
        options: format!("{opts:?}"),
        inputs: clustered::run_stamps(run),
    }
}

/// The stored clustering of the run directory `path` with `opts`, when the run, the options
/// and the binary are as they were (`None` for a matrix file, or nothing stored that fits).
pub fn reuse(path: &Path, opts: &ClusterOptions) -> Option<Reused> {
    if !path.is_dir() {
        return None;
    }
    let (entry, file) = clustered::find(path, &key(path, opts))?;
    let text = std::fs::read_to_string(&file).ok()?;
    let (topology, _) =
        lgate_topology::format::parse(&text, Some(lgate_topology::TopologyFormat::Json), None)
            .ok()?;
    Some(Reused {
        topology,
        entry,
        file,
    })
}

/// [`compute`], and the result stored in the run directory `path` for the next command
/// (quietly not, when the folder cannot be written: a run read from a shared place); the
/// summary is made when `summary` asks for it or the result is stored.
pub fn compute_and_store(
    path: &Path,
    opts: &ClusterOptions,
    summary: bool,
) -> Result<Finished, ClusteringError> {
    let key = path.is_dir().then(|| key(path, opts));
    let finished = compute(path, opts, summary || key.is_some())?;
    if let Some(key) = key {
        let entry = ClusteredEntry {
            key,
            topology_file: String::new(),
            matrix: finished.input.matrix.clone(),
            source: finished.input.source.clone(),
            hosts: finished.input.hosts.clone(),
            summary: finished.summary.clone(),
        };
        let text = lgate_topology::format::to_string(
            &finished.topology,
            lgate_topology::TopologyFormat::Json,
        );
        let _ = clustered::store(path, entry, &text);
    }
    Ok(finished)
}

/// The topology `cluster` writes with its defaults for a run directory (the best of its
/// candidate matrices, levels named after the run's placement, each level's confidence told
/// and the undecided ones not kept): the one it stored when the run is unchanged, else
/// computed now and stored.
pub fn default_topology(run: &Path) -> Result<lgate_topology::Topology, ClusteringError> {
    let opts = ClusterOptions::default();
    if let Some(r) = reuse(run, &opts) {
        return Ok(r.topology);
    }
    Ok(compute_and_store(run, &opts, false)?.topology)
}
