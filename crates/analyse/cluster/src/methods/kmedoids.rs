//! `kmedoids`: FasterPAM k-medoids with a given k, or the k with the best medoid silhouette.

use ndarray::Array2;

use super::{ClusterMethod, Method, MethodSpec, Param, ParamError, Setting};
use crate::algorithms::kmedoids;
use crate::auto::Tree;

/// The registry entry.
pub(super) const SPEC: MethodSpec = MethodSpec {
    name: "kmedoids",
    description: "FasterPAM k-medoids, {k} or chosen by medoid silhouette",
    reads: &[Param::K, Param::MaxK],
    default: || Method::Kmedoids(KmedoidsParams::default()),
};

/// The parameters of k-medoids, unchecked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KmedoidsParams {
    /// The number of groups (`None`: chosen by medoid silhouette).
    pub k: Option<usize>,
    /// The largest k tried when k is chosen (and by a search).
    pub max_k: usize,
}

impl Default for KmedoidsParams {
    /// k chosen by silhouette up to 16.
    fn default() -> Self {
        KmedoidsParams { k: None, max_k: 16 }
    }
}

impl KmedoidsParams {
    /// The method (k is checked against the items when they are known).
    pub(super) fn checked(&self) -> Result<Box<dyn ClusterMethod>, ParamError> {
        Ok(Box::new(Kmedoids(*self)))
    }

    /// The parameters a search of `steps` tries over `d`: k from 2 to max_k.
    pub(super) fn candidates(&self, d: &Array2<f64>, steps: usize) -> Vec<Self> {
        (super::agglomerative::search_k(self.max_k, d, steps).into_iter())
            .map(|k| KmedoidsParams {
                k: Some(k),
                ..*self
            })
            .collect()
    }
}

/// k-medoids and how k is found.
#[derive(Debug)]
struct Kmedoids(KmedoidsParams);

impl ClusterMethod for Kmedoids {
    fn name(&self) -> &'static str {
        SPEC.name
    }
    fn check_items(&self, items: usize) -> Result<(), ParamError> {
        super::check_k(SPEC.name, self.0.k, items)
    }
    fn fit(&self, d: &Array2<f64>) -> Tree {
        kmedoids(d, self.0.k, self.0.max_k)
    }
    fn setting(&self) -> Option<Setting> {
        Some(Setting {
            param: Param::K,
            value: self.0.k.unwrap_or(0).to_string(),
        })
    }
}
