//! `components`: connected components of the graph joining items closer than a threshold.

use ndarray::Array2;

use super::{
    distance_range, linear, ClusterMethod, Method, MethodSpec, Param, ParamError, Problem, Setting,
};
use crate::algorithms::components;
use crate::auto::Tree;

/// The registry entry.
pub(super) const SPEC: MethodSpec = MethodSpec {
    name: "components",
    description: "Connected components below {threshold}",
    reads: &[Param::Threshold],
    default: || Method::Components(ComponentsParams::default()),
};

/// The parameters of connected components, unchecked.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ComponentsParams {
    /// Join items closer than this.
    pub threshold: Option<f64>,
}

impl ComponentsParams {
    /// The method, its parameters checked.
    pub(super) fn checked(&self) -> Result<Box<dyn ClusterMethod>, ParamError> {
        let t = self.threshold.ok_or(ParamError::Invalid {
            method: SPEC.name,
            problem: Problem::Needs(&[Param::Threshold]),
        })?;
        let t = super::positive_distance(SPEC.name, Param::Threshold, t)?;
        Ok(Box::new(Components(t)))
    }

    /// The thresholds a search of `steps` tries: across the distances of `d`.
    pub(super) fn candidates(&self, d: &Array2<f64>, steps: usize) -> Vec<Self> {
        let (lo, hi) = distance_range(d);
        (linear(lo, hi, steps).into_iter())
            .map(|t| ComponentsParams { threshold: Some(t) })
            .collect()
    }
}

/// Connected components below a threshold.
#[derive(Debug)]
struct Components(f64);

impl ClusterMethod for Components {
    fn name(&self) -> &'static str {
        SPEC.name
    }
    fn fit(&self, d: &Array2<f64>) -> Tree {
        components(d, self.0)
    }
    fn setting(&self) -> Option<Setting> {
        Some(Setting {
            param: Param::Threshold,
            value: format!("{:.4}", self.0),
        })
    }
}
