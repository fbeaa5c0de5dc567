//! `kmeans`: K-means (linfa-clustering) of each rank's vector: its row of the matrix, or its
//! PLogP feature vector (`--space features`); k given or from the eigengaps as `spectral`
//! reads them, the same inside every group.

use ndarray::Array2;

use super::spectral::checked;
use super::{ClusterMethod, Method, MethodSpec, Param, ParamError, Setting};
use crate::auto::Tree;
use crate::spectral::{euclidean_distances, kmeans, SpectralParams, SpectralValidParams};

/// The registry entry.
pub(super) const SPEC: MethodSpec = MethodSpec {
    name: "kmeans",
    description: "K-means of each rank's row (or feature vector), {k} or by eigengap",
    reads: super::spectral::READS,
    default: || Method::Kmeans(SpectralParams::default()),
};

/// K-means with checked parameters.
#[derive(Debug)]
struct Kmeans(SpectralValidParams);

/// K-means with `p` checked.
pub(super) fn checked_method(p: &SpectralParams) -> Result<Box<dyn ClusterMethod>, ParamError> {
    Ok(Box::new(Kmeans(checked(SPEC.name, p)?)))
}

impl ClusterMethod for Kmeans {
    fn name(&self) -> &'static str {
        SPEC.name
    }
    fn check_items(&self, items: usize) -> Result<(), ParamError> {
        super::check_k(SPEC.name, self.0.k(), items)
    }
    fn fit(&self, d: &Array2<f64>) -> Tree {
        kmeans(d, d, true, &self.0)
    }
    fn fit_vectors(&self, v: &Array2<f64>) -> Option<Tree> {
        Some(kmeans(&euclidean_distances(v), v, false, &self.0))
    }
    fn setting(&self) -> Option<Setting> {
        Some(Setting {
            param: Param::K,
            value: self.0.k().unwrap_or(0).to_string(),
        })
    }
}
