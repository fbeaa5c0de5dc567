//! One clustering as `cluster` makes it: a method over each candidate matrix of a run (or the
//! one asked for), with its parameter searched or as given, the matrix that shows the most
//! levels kept; or a method over a PLogP run's feature vectors.

use std::path::Path;

use lgate_knobs::Knob;

use crate::input::{choose_by_sure_levels, ClusterInput, InputError};
use crate::methods::{self, Method, ParamError};
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
    /// Groupings of hosts the pairs between them nearly decide (not in the tree): each one's
    /// groups of items, and the pairs' Mann-Whitney z.
    pub doubted: Vec<(Vec<Vec<usize>>, f64)>,
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
        "feature vectors are clustered by hdbscan, dbscan (petal-clustering), kmeans or \
         spectral (linfa); the other methods work on the matrix"
    )]
    NotOnVectors,
}

/// Clusters each of `inputs` with `method` (its main parameter searched over `search` values
/// when given) and keeps the one that shows the most levels.
pub fn cluster_matrices(
    inputs: Vec<ClusterInput>,
    method: &Method,
    search: Option<usize>,
    resamples: Option<usize>,
) -> Result<Clustering, ClusteringError> {
    let mut searched = Vec::new();
    let mut outliers: Vec<(String, Vec<(usize, f64)>)> = Vec::new();
    let mut doubts = Vec::new();
    // With several candidates, `auto`'s levels are weighed by their confidence as `cluster`
    // will report it: the matrix with the most levels kept wins.
    let judge = method.auto().is_some() && search.is_none();
    let (input, tree, chose) = choose_by_sure_levels(inputs, |input| {
        let tree = fit_one(
            input,
            method,
            search,
            &mut searched,
            &mut outliers,
            &mut doubts,
        )?;
        let sure = (judge && input.dense().is_some())
            .then(|| {
                let slow = (outliers.last())
                    .filter(|(source, _)| *source == input.source)
                    .map_or(&[][..], |(_, s)| s.as_slice());
                let resamples = resamples
                    .unwrap_or_else(|| crate::confidence::default_resamples(input.items()));
                crate::confidence::sure_levels(input, &tree, slow, method, resamples)
            })
            .flatten();
        Ok::<_, ClusteringError>((tree, sure))
    })?;
    let kept = |source: &String| *source == input.source;
    let slow = (outliers.into_iter())
        .find_map(|(source, slow)| kept(&source).then_some(slow))
        .unwrap_or_default();
    let searched = (searched.into_iter()).find_map(|(source, line)| kept(&source).then_some(line));
    let doubts = (doubts.into_iter())
        .find_map(|(source, d)| kept(&source).then_some(d))
        .unwrap_or_default();
    let note = [chose, searched]
        .into_iter()
        .flatten()
        .chain(doubts.iter().map(|(d, _)| doubt_line(d)))
        .collect::<Vec<_>>()
        .join("\n");
    Ok(Clustering {
        input,
        tree,
        note: (!note.is_empty()).then_some(note),
        slow,
        doubted: (doubts.into_iter())
            .map(|(d, items)| (items, d.z))
            .collect(),
    })
}

/// The matrix `name` of a run or matrix file, or without a name the one `cluster` takes with
/// its defaults (a staged run's screening size that shows the most levels).
pub fn load_chosen(path: &Path, name: Option<&str>) -> Result<ClusterInput, InputError> {
    if name.is_some() {
        return crate::input::load_with_sizes(path, name);
    }
    let mut inputs = crate::input::load_candidates(path)?;
    if inputs.len() == 1 {
        Ok(inputs.remove(0))
    } else {
        Ok(default_clustering(path)?.0)
    }
}

/// The matrix `cluster` takes with its defaults (the best of a staged run's candidates) and
/// the hierarchy it finds there.
pub fn default_clustering(run: &Path) -> Result<(ClusterInput, crate::Tree), InputError> {
    let inputs = crate::input::load_candidates(run)?;
    let method = Method::default();
    let (input, tree, _) = choose_by_sure_levels(inputs, |i| {
        let (tree, slow) = i.auto(&crate::AutoParams::default())?;
        let resamples = crate::confidence::default_resamples(i.items());
        let sure = crate::confidence::sure_levels(i, &tree, &slow, &method, resamples);
        Ok::<_, InputError>((tree, sure))
    })?;
    Ok((input, tree))
}

/// One candidate clustered by `method`: its tree, with what the search said, the slow items
/// and the groupings in doubt kept per source.
fn fit_one(
    input: &ClusterInput,
    method: &Method,
    search: Option<usize>,
    searched: &mut Vec<(String, String)>,
    outliers: &mut Vec<(String, Vec<(usize, f64)>)>,
    doubts: &mut Vec<(String, Doubted)>,
) -> Result<Tree, ClusteringError> {
    let Some(matrix) = input.dense() else {
        if search.is_some() {
            return Err(input.no_dense(&Knob::Search.to_string()).into());
        }
        let name = method.name();
        let method = method.checked()?;
        let crate::Distances::ByHosts { blocks, k, between } = &input.distances else {
            unreachable!("an input without a dense matrix has host blocks")
        };
        let found = method
            .fit_by_hosts(blocks, *k, between.as_deref())
            .ok_or_else(|| input.no_dense(&format!("{} {name}", Knob::Algo)))?
            .map_err(|error| InputError::ByHosts {
                input: input.source.clone(),
                error,
            })?;
        outliers.push((input.source.clone(), found.slow));
        doubts.push((
            input.source.clone(),
            doubted_of(found.doubts, found.doubted),
        ));
        return Ok(found.tree);
    };
    let d = matrix.values();
    Ok::<_, ClusteringError>(match search {
        Some(steps) => {
            let (t, setting, s) = methods::search(method, d, steps)?;
            let setting = setting.map_or("nothing (one rank)".into(), |s| s.to_string());
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
            let method = method.checked()?;
            method
                .check_items(d.nrows())
                .map_err(|error| ClusteringError::ParamFor {
                    input: input.source.clone(),
                    error,
                })?;
            let by_hosts =
                (input.dense_hosts()).and_then(|hosts| method.fit_dense_by_hosts(d, &hosts));
            match by_hosts {
                Some(found) => {
                    let found = found.map_err(|error| InputError::ByHosts {
                        input: input.source.clone(),
                        error,
                    })?;
                    outliers.push((input.source.clone(), found.slow));
                    doubts.push((
                        input.source.clone(),
                        doubted_of(found.doubts, found.doubted),
                    ));
                    found.tree
                }
                None => {
                    let (tree, slow) = method.fit_with_outliers(d);
                    outliers.push((input.source.clone(), slow));
                    tree
                }
            }
        }
    })
}

/// The groupings of hosts the pairs nearly decide, each with its groups' items.
type Doubted = Vec<(crate::host_levels::Doubt, Vec<Vec<usize>>)>;

/// `doubts` paired with their groups' items.
fn doubted_of(doubts: Vec<crate::host_levels::Doubt>, items: Vec<Vec<Vec<usize>>>) -> Doubted {
    doubts.into_iter().zip(items).collect()
}

/// What a grouping of hosts the pairs nearly decide would take, for people.
fn doubt_line(d: &crate::host_levels::Doubt) -> String {
    let decide = crate::host_levels::Z_DECIDE;
    let what = match (d.every_pair, d.z_most < decide) {
        (true, true) => format!(
            "every pair between two of its hosts was measured, and so few cannot reach {decide} \
             in this group alone (at most z = {:.1}); with sibling groups of the same shape \
             their combined z decides: more repetitions of each pair ({}) sharpen them, \
             more ranks per host add pairs",
            d.z_most,
            Knob::ScreenReps.in_command()
        ),
        (true, false) => format!(
            "every pair between two of its hosts was measured: more repetitions of each ({}) \
             would sharpen them",
            Knob::ScreenReps.in_command()
        ),
        (false, _) => format!(
            "about {} pairs between each two hosts would decide it ({} {})",
            d.pairs_needed,
            Knob::PairsBetween.in_command(),
            d.pairs_needed
        ),
    };
    format!(
        "undecided: {} hosts in {} groups, nearer inside than across by their pairs, but not \
         surely (Mann-Whitney z = {:.1}, {decide} decides; {} pairs between two hosts): {what}",
        d.hosts, d.groups, d.z, d.pairs
    )
}

/// Clusters the PLogP run `run`'s feature vectors at message size `size` (default: the
/// smallest) with `method`.
pub fn cluster_features(
    run: &Path,
    size: Option<&str>,
    method: &Method,
) -> Result<Clustering, ClusteringError> {
    let fv = crate::features::feature_vectors(run, size)?;
    let method = method.checked()?;
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
        doubted: Vec::new(),
    })
}
