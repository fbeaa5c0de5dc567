//! `kmedoids`: FasterPAM k-medoids with a given k, or the k with the best medoid silhouette.

use ndarray::Array2;

use super::{ClusterMethod, MethodParams, MethodSpec, Param, ParamError, Setting};
use crate::algorithms::kmedoids;
use crate::auto::Tree;

/// The registry entry.
pub(super) const SPEC: MethodSpec = MethodSpec {
    name: "kmedoids",
    description: "FasterPAM k-medoids, {k} or chosen by medoid silhouette",
    build,
    search: Some(super::agglomerative::search),
};

/// k-medoids and how k is found.
#[derive(Debug)]
struct Kmedoids {
    k: Option<usize>,
    max_k: usize,
}

fn build(p: &MethodParams) -> Result<Box<dyn ClusterMethod>, ParamError> {
    Ok(Box::new(Kmedoids {
        k: p.k,
        max_k: p.max_k,
    }))
}

impl ClusterMethod for Kmedoids {
    fn name(&self) -> &'static str {
        SPEC.name
    }
    fn check_items(&self, items: usize) -> Result<(), ParamError> {
        super::check_k(SPEC.name, self.k, items)
    }
    fn fit(&self, d: &Array2<f64>) -> Tree {
        kmedoids(d, self.k, self.max_k)
    }
    fn setting(&self) -> Option<Setting> {
        Some(Setting {
            param: Param::K,
            value: self.k.unwrap_or(0).to_string(),
        })
    }
}
