//! One clustering as `cluster` makes it: a method over each candidate matrix of a run (or the
//! one asked for), with its parameter searched or as given, the matrix that shows the most
//! levels kept; or a method over a PLogP run's feature vectors.

use std::path::Path;

use crate::input::{choose_by_levels, ClusterInput, InputError};
use crate::methods::{self, MethodParams, ParamError};
use crate::Tree;

/// A clustering and what was clustered.
#[derive(Debug, Clone)]
pub struct Clustering {
    /// The matrix (or the feature vectors' run) clustered.
    pub input: ClusterInput,
    /// The hierarchy over its items.
    pub tree: Tree,
    /// What choosing the matrix and searching the parameter said, for people.
    pub note: Option<String>,
    /// Items the method set aside as slow towards every other, with how many times slower.
    pub slow: Vec<(usize, f64)>,
}

/// Why a clustering could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ClusteringError {
    /// The input is unusable.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The method or its parameters are.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// The parameters do not fit this input (a k above its ranks).
    #[error("{input}: {error}")]
    ParamFor {
        /// What was read.
        input: String,
        /// What is wrong.
        error: ParamError,
    },
    /// The method works on the matrix, not on feature vectors.
    #[error(
        "--space features runs --algo hdbscan, dbscan (petal-clustering), kmeans or spectral \
         (linfa); the other algorithms work on the matrix"
    )]
    NotOnVectors,
}

/// Clusters each of `inputs` with the method `algo` (its main parameter searched over `search`
/// values when given) and keeps the one that shows the most levels.
pub fn cluster_matrices(
    inputs: Vec<ClusterInput>,
    algo: &str,
    params: &MethodParams,
    search: Option<usize>,
) -> Result<Clustering, ClusteringError> {
    let mut searched = Vec::new();
    let mut outliers = Vec::new();
    let (input, tree, chose) = choose_by_levels(inputs, |input| {
        let Some(matrix) = input.dense() else {
            if search.is_some() {
                return Err(input.no_dense("--search").into());
            }
            let method = methods::method(algo, params)?;
            let crate::Distances::ByHosts { blocks, k } = &input.distances else {
                unreachable!("an input without a dense matrix has host blocks")
            };
            let found = method
                .fit_by_hosts(blocks, *k)
                .ok_or_else(|| input.no_dense(&format!("--algo {algo}")))?
                .map_err(|error| InputError::ByHosts {
                    input: input.source.clone(),
                    error,
                })?;
            outliers.push((input.source.clone(), found.slow));
            return Ok(found.tree);
        };
        let d = matrix.values();
        Ok::<_, ClusteringError>(match search {
            Some(steps) => {
                let (t, setting, s) = methods::search(algo, params, d, steps)?;
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
                let method = methods::method(algo, params)?;
                method
                    .check_items(d.nrows())
                    .map_err(|error| ClusteringError::ParamFor {
                        input: input.source.clone(),
                        error,
                    })?;
                let (tree, slow) = method.fit_with_outliers(d);
                outliers.push((input.source.clone(), slow));
                tree
            }
        })
    })?;
    let kept = |source: &String| *source == input.source;
    let slow = (outliers.into_iter())
        .find_map(|(source, slow)| kept(&source).then_some(slow))
        .unwrap_or_default();
    let searched = (searched.into_iter()).find_map(|(source, line)| kept(&source).then_some(line));
    let note = [chose, searched]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n");
    Ok(Clustering {
        input,
        tree,
        note: (!note.is_empty()).then_some(note),
        slow,
    })
}

/// Clusters the PLogP run `run`'s feature vectors at message size `size` (default: the
/// smallest) with the method `algo`.
pub fn cluster_features(
    run: &Path,
    size: Option<&str>,
    algo: &str,
    params: &MethodParams,
) -> Result<Clustering, ClusteringError> {
    let fv = crate::features::feature_vectors(run, size)?;
    let method = methods::method(algo, params)?;
    method
        .check_items(fv.vectors.nrows())
        .map_err(|error| ClusteringError::ParamFor {
            input: run.display().to_string(),
            error,
        })?;
    let tree = method
        .fit_vectors(&fv.vectors)
        .ok_or(ClusteringError::NotOnVectors)?;
    Ok(Clustering {
        input: fv.input,
        tree,
        note: Some("space: features (L, o_s, o_r, g towards every rank)".to_string()),
        slow: Vec::new(),
    })
}
