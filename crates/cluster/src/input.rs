//! What `cluster` and `score` read: a run directory or a matrix file, and known placements.

use std::path::{Path, PathBuf};

use lgate_matrix::{read_matrix, DistanceMatrix};
use serde_json::Value;

/// An error of reading the input of a clustering.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The matrix file is unusable.
    #[error(transparent)]
    Matrix(#[from] lgate_matrix::ReadError),
    /// The run directory is unusable.
    #[error(transparent)]
    RunDir(#[from] lgate_rundir::RunDirError),
    /// Something else, said in full.
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The file or folder.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// A distance matrix ready to cluster.
#[derive(Debug, Clone)]
pub struct ClusterInput {
    /// The distances, over the matrix's items.
    pub matrix: DistanceMatrix,
    /// The rank of each item (a run's tested ranks; the row index for a plain matrix).
    pub ranks: Vec<usize>,
    /// The number of ranks of the job (more than the items when a run tested a share).
    pub job_size: usize,
    /// The host of each rank of the job, when known.
    pub hosts: Option<Vec<String>>,
    /// What was read, for people: the file and the matrix name.
    pub source: String,
    /// Things the user should know.
    pub warnings: Vec<String>,
}

/// Reads a run directory (choosing `matrix`, default `t`) or a matrix file.
///
/// Matrix names are those of `matrices/index.json` (`latency`, `rtt:0`, `t:1KiB`,
/// `features:0`, ...); `t` and `features` alone take the smallest size.
pub fn load(path: &Path, matrix: Option<&str>) -> Result<ClusterInput, InputError> {
    let invalid = |p: &Path, message: String| InputError::Invalid {
        path: p.to_path_buf(),
        message,
    };
    if !path.is_dir() {
        if matrix.is_some() {
            return Err(invalid(
                path,
                "--matrix picks a matrix of a run directory; this is a file".into(),
            ));
        }
        let read = read_matrix(path)?;
        let n = read.matrix.len();
        return Ok(ClusterInput {
            ranks: (0..n).collect(),
            job_size: n,
            hosts: None,
            source: path.display().to_string(),
            warnings: read.warnings,
            matrix: read.matrix,
        });
    }
    let run = lgate_rundir::RunDir::open(path)?;
    let meta = run.read_meta()?;
    let index_path = run.file("matrices/index.json");
    let index: Value = std::fs::read_to_string(&index_path)
        .map_err(|e| {
            invalid(
                &index_path,
                format!("{e}: this run has no distance matrices (a ping-pong run?); measure with the PLogP test"),
            )
        })
        .and_then(|t| serde_json::from_str(&t).map_err(|e| invalid(&index_path, format!("not JSON: {e}"))))?;
    let entries = index["matrices"]
        .as_array()
        .ok_or_else(|| invalid(&index_path, "no `matrices` list".into()))?;
    let name = matrix.unwrap_or("t");
    let chosen = entries
        .iter()
        .find(|e| e["name"] == name)
        .or_else(|| {
            // `t` and `features` alone: the smallest size.
            entries
                .iter()
                .filter(|e| {
                    e["name"]
                        .as_str()
                        .is_some_and(|n| n.split(':').next() == Some(name))
                })
                .min_by_key(|e| e["size_bytes"].as_u64().unwrap_or(0))
        })
        .ok_or_else(|| {
            let names: Vec<&str> = entries.iter().filter_map(|e| e["name"].as_str()).collect();
            invalid(
                &index_path,
                format!("no matrix `{name}`; this run has {}", names.join(", ")),
            )
        })?;
    let file = run
        .file("matrices")
        .join(chosen["file"].as_str().unwrap_or_default());
    let read = read_matrix(&file)?;
    let ranks = read
        .matrix
        .labels()
        .iter()
        .map(|l| l.parse::<usize>().ok().filter(|&r| r < meta.ranks.len()))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| {
            invalid(
                &file,
                format!(
                    "its labels are not ranks of the run's {} ranks",
                    meta.ranks.len()
                ),
            )
        })?;
    Ok(ClusterInput {
        matrix: read.matrix,
        ranks,
        job_size: meta.ranks.len(),
        hosts: Some(meta.ranks.iter().map(|r| r.host.clone()).collect()),
        source: format!(
            "{} ({})",
            file.display(),
            chosen["name"].as_str().unwrap_or(name)
        ),
        warnings: read.warnings,
    })
}

/// Known placement: named levels of labels, one label per rank.
#[derive(Debug, Clone, PartialEq)]
pub struct Truth {
    /// Level name and one label per rank, coarsest first when known.
    pub levels: Vec<(String, Vec<usize>)>,
}

fn labels_of(values: impl Iterator<Item = String>) -> Vec<usize> {
    let mut ids: Vec<String> = Vec::new();
    values
        .map(|v| match ids.iter().position(|x| *x == v) {
            Some(k) => k,
            None => {
                ids.push(v);
                ids.len() - 1
            }
        })
        .collect()
}

/// Reads known placement: a run directory or its meta.json (levels `node` from hosts, `socket`
/// and `core` within hosts, and any extra placement field such as a simulated `switch`), or a
/// JSON object with `levels` mapping a level name to one label per rank.
pub fn read_truth(path: &Path) -> Result<Truth, InputError> {
    let invalid = |message: String| InputError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let meta_path = if path.is_dir() {
        path.join(lgate_rundir::META_FILE)
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&meta_path).map_err(|e| InputError::Invalid {
        path: meta_path.clone(),
        message: e.to_string(),
    })?;
    let value: Value =
        serde_json::from_str(&text).map_err(|e| invalid(format!("not JSON: {e}")))?;
    if value.get("format").and_then(Value::as_str) == Some(lgate_rundir::RUN_FORMAT) {
        let meta = lgate_rundir::RunMeta::read(&meta_path)?;
        let mut levels = Vec::new();
        let extra: std::collections::BTreeSet<String> = meta
            .ranks
            .iter()
            .flat_map(|r| r.extra.keys().cloned())
            .collect();
        for key in extra {
            levels.push((
                key.clone(),
                labels_of(
                    meta.ranks
                        .iter()
                        .map(|r| r.extra.get(&key).map_or(String::new(), |v| v.to_string())),
                ),
            ));
        }
        levels.push((
            "node".into(),
            labels_of(meta.ranks.iter().map(|r| r.host.clone())),
        ));
        if meta.ranks.iter().all(|r| r.socket.is_some()) {
            levels.push((
                "socket".into(),
                labels_of(
                    meta.ranks
                        .iter()
                        .map(|r| format!("{}/{:?}", r.host, r.socket)),
                ),
            ));
        }
        if meta.ranks.iter().all(|r| r.numa.is_some()) {
            let numa = labels_of(
                meta.ranks
                    .iter()
                    .map(|r| format!("{}/{:?}", r.host, r.numa)),
            );
            // Only where NUMA nodes are not simply the sockets.
            if levels.last().is_none_or(|(_, socket)| *socket != numa) {
                levels.push(("numa".into(), numa));
            }
        }
        if meta.ranks.iter().all(|r| r.cpu.is_some()) {
            levels.push((
                "core".into(),
                labels_of(meta.ranks.iter().map(|r| format!("{}/{:?}", r.host, r.cpu))),
            ));
        }
        return Ok(Truth { levels });
    }
    let levels = value
        .get("levels")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            invalid(
                "expected a run's meta.json or an object with `levels`: {name: [label per rank]}"
                    .into(),
            )
        })?;
    let mut out = Vec::new();
    for (name, v) in levels {
        let list = v
            .get("labels")
            .unwrap_or(v)
            .as_array()
            .ok_or_else(|| invalid(format!("levels.{name} is not a list")))?;
        let labels = list
            .iter()
            .map(|x| match x {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
            .collect::<Option<Vec<String>>>()
            .ok_or_else(|| invalid(format!("levels.{name} holds something other than labels")))?;
        out.push((name.clone(), labels_of(labels.into_iter())));
    }
    Ok(Truth { levels: out })
}
