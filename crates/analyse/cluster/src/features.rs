//! Clustering in vector space: each rank's PLogP feature vector (equation 3.5 of the reference
//! thesis), its (L, o_s(m), o_r(m), g(m)) towards every rank, clustered with petal-clustering.

use std::path::Path;

use lgate_knobs::Knob;
use ndarray::Array2;
use petal_clustering::{Dbscan, Fit, HDbscan};
use petal_neighbors::distance::Euclidean;

use crate::algorithms::tree_of_labels;
use crate::auto::Tree;
use crate::input::{load, ClusterInput, InputError};

/// The ranks' feature vectors at one message size, and where they came from.
#[derive(Debug, Clone)]
pub struct FeatureVectors {
    /// One row per tested rank: 4 values (L, o_s, o_r, g) per rank of the matrices, in us.
    pub vectors: Array2<f64>,
    /// The matrix the vectors were built beside (the latency matrix), for ranks and hosts.
    pub input: ClusterInput,
}

/// Builds the feature vectors of a run at `size` (as the matrices name it: `0`, `1KiB`, ...;
/// default the smallest). A rank's entry towards itself, not measured, is the least value of its
/// row for each parameter, as in the run's `features` matrices.
pub fn feature_vectors(run: &Path, size: Option<&str>) -> Result<FeatureVectors, InputError> {
    let size = match size {
        Some(s) => s.to_string(),
        None => {
            // The smallest size with an o_s matrix.
            let index = lgate_rundir::RunDir::open(run)?.read_matrices()?;
            index
                .matrices
                .iter()
                .filter(|m| m.kind() == "os")
                .min_by_key(|m| m.size_bytes.unwrap_or(usize::MAX))
                .and_then(|m| m.name.strip_prefix("os:"))
                .ok_or_else(|| InputError::Invalid {
                    path: run.join(lgate_rundir::MATRIX_INDEX_FILE),
                    message: "no o_s matrices: measure this run again with this version to cluster in feature space".into(),
                })?
                .to_string()
        }
    };
    let latency = load(run, Some("latency"))?;
    let dense = |name: &str| -> Result<lgate_matrix::DistanceMatrix, InputError> {
        Ok(load(run, Some(name))?
            .need_dense(&format!("{} features", Knob::Space))?
            .clone())
    };
    let parts = [
        latency
            .need_dense(&format!("{} features", Knob::Space))?
            .clone(),
        dense(&format!("os:{size}"))?,
        dense(&format!("or:{size}"))?,
        dense(&format!("g:{size}"))?,
    ];
    let n = latency.items();
    let mut vectors = Array2::zeros((n, 4 * n));
    for (q, m) in parts.iter().enumerate() {
        for i in 0..n {
            let row_min = (0..n)
                .filter(|&k| k != i)
                .map(|k| m.get(i, k))
                .fold(f64::INFINITY, f64::min);
            for k in 0..n {
                vectors[[i, 4 * k + q]] = if k == i {
                    if row_min.is_finite() {
                        row_min
                    } else {
                        0.0
                    }
                } else {
                    m.get(i, k)
                };
            }
        }
    }
    Ok(FeatureVectors {
        vectors,
        input: latency,
    })
}

/// HDBSCAN on the vectors (petal-clustering, Euclidean); noise ranks are groups of their own.
pub fn hdbscan_features(v: &Array2<f64>, min_cluster_size: usize, min_samples: usize) -> Tree {
    let mut model = HDbscan {
        min_cluster_size: min_cluster_size.max(2),
        min_samples: min_samples.max(1),
        ..HDbscan::default()
    };
    labels_of(v.nrows(), model.fit(v, None).0)
}

/// DBSCAN on the vectors (petal-clustering, Euclidean); noise ranks are groups of their own.
pub fn dbscan_features(v: &Array2<f64>, eps: f64, min_points: usize) -> Tree {
    let mut model = Dbscan::new(eps, min_points.max(1), Euclidean::default());
    labels_of(v.nrows(), model.fit(v, None).0)
}

fn labels_of(n: usize, clusters: std::collections::HashMap<usize, Vec<usize>>) -> Tree {
    let mut labels = vec![None; n];
    for (g, members) in clusters.values().enumerate() {
        for &i in members {
            labels[i] = Some(g);
        }
    }
    tree_of_labels(&labels)
}
