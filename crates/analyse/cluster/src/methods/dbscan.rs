//! `dbscan`: DBSCAN on the matrix, or on feature vectors with petal-clustering.

use ndarray::Array2;

use super::{
    distance_range, linear, ClusterMethod, Method, MethodSpec, Param, ParamError, Problem, Setting,
};
use crate::algorithms::dbscan;
use crate::auto::Tree;

/// The registry entry.
pub(super) const SPEC: MethodSpec = MethodSpec {
    name: "dbscan",
    description: "DBSCAN with {eps} and {min_points}",
    reads: &[Param::Eps, Param::MinPoints],
    default: || Method::Dbscan(DbscanParams::default()),
};

/// The parameters of DBSCAN, unchecked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DbscanParams {
    /// The neighbourhood radius.
    pub eps: Option<f64>,
    /// Items within eps (itself included) that make a core item.
    pub min_points: usize,
}

impl Default for DbscanParams {
    /// No radius given, 2 items a core.
    fn default() -> Self {
        DbscanParams {
            eps: None,
            min_points: 2,
        }
    }
}

impl DbscanParams {
    /// The method, its parameters checked.
    pub(super) fn checked(&self) -> Result<Box<dyn ClusterMethod>, ParamError> {
        let eps = self.eps.ok_or(ParamError::Invalid {
            method: SPEC.name,
            problem: Problem::Needs(&[Param::Eps]),
        })?;
        let eps = super::positive_distance(SPEC.name, Param::Eps, eps)?;
        Ok(Box::new(Dbscan {
            eps,
            min_points: self.min_points,
        }))
    }

    /// The radii a search of `steps` tries: across the distances of `d`.
    pub(super) fn candidates(&self, d: &Array2<f64>, steps: usize) -> Vec<Self> {
        let (lo, hi) = distance_range(d);
        (linear(lo, hi, steps).into_iter())
            .map(|e| DbscanParams {
                eps: Some(e),
                ..*self
            })
            .collect()
    }
}

/// DBSCAN's radius and core size.
#[derive(Debug)]
struct Dbscan {
    eps: f64,
    min_points: usize,
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
