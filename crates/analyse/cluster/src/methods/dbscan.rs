//! `dbscan`: DBSCAN on the matrix, or on feature vectors with petal-clustering.

use ndarray::Array2;

use super::{
    distance_range, linear, ClusterMethod, MethodParams, MethodSpec, Param, ParamError, Problem,
    Setting,
};
use crate::algorithms::dbscan;
use crate::auto::Tree;

/// The registry entry.
pub(super) const SPEC: MethodSpec = MethodSpec {
    name: "dbscan",
    description: "DBSCAN with {eps} and {min_points}",
    build,
    search: Some(search),
};

/// DBSCAN's radius and core size.
#[derive(Debug)]
struct Dbscan {
    eps: f64,
    min_points: usize,
}

fn build(p: &MethodParams) -> Result<Box<dyn ClusterMethod>, ParamError> {
    let eps = p.eps.ok_or(ParamError::Invalid {
        method: SPEC.name,
        problem: Problem::Needs(&[Param::Eps]),
    })?;
    let eps = super::positive_distance(SPEC.name, Param::Eps, eps)?;
    Ok(Box::new(Dbscan {
        eps,
        min_points: p.min_points,
    }))
}

fn search(p: &MethodParams, d: &Array2<f64>, steps: usize) -> Vec<MethodParams> {
    let (lo, hi) = distance_range(d);
    linear(lo, hi, steps)
        .into_iter()
        .map(|e| MethodParams {
            eps: Some(e),
            ..p.clone()
        })
        .collect()
}

impl ClusterMethod for Dbscan {
    fn name(&self) -> &'static str {
        SPEC.name
    }
    fn fit(&self, d: &Array2<f64>) -> Tree {
        dbscan(d, self.eps, self.min_points)
    }
    fn fit_vectors(&self, v: &Array2<f64>) -> Option<Tree> {
        Some(crate::features::dbscan_features(
            v,
            self.eps,
            self.min_points,
        ))
    }
    fn setting(&self) -> Option<Setting> {
        Some(Setting {
            param: Param::Eps,
            value: format!("{:.4}", self.eps),
        })
    }
}
