//! `hdbscan`: HDBSCAN on the matrix, its condensed tree the hierarchy; on feature vectors,
//! petal-clustering's HDBSCAN.

use ndarray::Array2;

use super::{integers, ClusterMethod, Method, MethodSpec, Param, ParamError, Setting};
use crate::auto::Tree;
use crate::hdbscan::{hdbscan, HdbscanParams};

/// The registry entry.
pub(super) const SPEC: MethodSpec = MethodSpec {
    name: "hdbscan",
    description: "HDBSCAN on the matrix; the condensed tree is the hierarchy",
    reads: &[Param::MinClusterSize, Param::MinSamples],
    default: || Method::Hdbscan(HdbscanParams::default()),
};

/// HDBSCAN with `p` (any sizes will do).
pub(super) fn checked(p: &HdbscanParams) -> Result<Box<dyn ClusterMethod>, ParamError> {
    Ok(Box::new(Hdbscan(*p)))
}

/// The parameters a search of `steps` tries over `d`: the least cluster from 2 to half the
/// items.
pub(super) fn candidates(p: &HdbscanParams, d: &Array2<f64>, steps: usize) -> Vec<HdbscanParams> {
    integers(2, (d.nrows() / 2).max(2), steps)
        .into_iter()
        .map(|m| HdbscanParams {
            min_cluster_size: m,
            ..*p
        })
        .collect()
}

/// HDBSCAN with its two sizes.
#[derive(Debug)]
struct Hdbscan(HdbscanParams);

impl ClusterMethod for Hdbscan {
    fn name(&self) -> &'static str {
        SPEC.name
    }
    fn fit(&self, d: &Array2<f64>) -> Tree {
        // A split by density alone is kept only if its parts stand apart: so that a flat
        // matrix is one group.
        crate::apart::prune_weak_splits(d, hdbscan(d, self.0).tree)
    }
    fn fit_vectors(&self, v: &Array2<f64>) -> Option<Tree> {
        Some(crate::features::hdbscan_features(
            v,
            self.0.min_cluster_size,
            self.0.min_samples,
        ))
    }
    fn setting(&self) -> Option<Setting> {
        Some(Setting {
            param: Param::MinClusterSize,
            value: self.0.min_cluster_size.to_string(),
        })
    }
}
