//! `hdbscan`: HDBSCAN on the matrix, its condensed tree the hierarchy; on feature vectors,
//! petal-clustering's HDBSCAN.

use ndarray::Array2;

use super::{integers, ClusterMethod, MethodParams, MethodSpec, Param, ParamError, Setting};
use crate::auto::Tree;
use crate::hdbscan::{hdbscan, HdbscanParams};

/// The registry entry.
pub(super) const SPEC: MethodSpec = MethodSpec {
    name: "hdbscan",
    description: "HDBSCAN on the matrix; the condensed tree is the hierarchy",
    build,
    search: Some(search),
};

/// HDBSCAN with its two sizes.
#[derive(Debug)]
struct Hdbscan(HdbscanParams);

fn build(p: &MethodParams) -> Result<Box<dyn ClusterMethod>, ParamError> {
    Ok(Box::new(Hdbscan(HdbscanParams {
        min_cluster_size: p.min_cluster_size,
        min_samples: p.min_samples,
    })))
}

fn search(p: &MethodParams, d: &Array2<f64>, steps: usize) -> Vec<MethodParams> {
    integers(2, (d.nrows() / 2).max(2), steps)
        .into_iter()
        .map(|m| MethodParams {
            min_cluster_size: m,
            ..p.clone()
        })
        .collect()
}

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
