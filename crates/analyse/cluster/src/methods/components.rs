//! `components`: connected components of the graph joining items closer than a threshold.

use ndarray::Array2;

use super::{
    distance_range, linear, ClusterMethod, MethodParams, MethodSpec, Param, ParamError, Problem,
    Setting,
};
use crate::algorithms::components;
use crate::auto::Tree;

/// The registry entry.
pub(super) const SPEC: MethodSpec = MethodSpec {
    name: "components",
    description: "Connected components below {threshold}",
    build,
    search: Some(search),
};

/// Connected components below a threshold.
#[derive(Debug)]
struct Components(f64);

fn build(p: &MethodParams) -> Result<Box<dyn ClusterMethod>, ParamError> {
    let t = p.threshold.ok_or(ParamError::Invalid {
        method: SPEC.name,
        problem: Problem::Needs(&[Param::Threshold]),
    })?;
    let t = super::positive_distance(SPEC.name, Param::Threshold, t)?;
    Ok(Box::new(Components(t)))
}

fn search(p: &MethodParams, d: &Array2<f64>, steps: usize) -> Vec<MethodParams> {
    let (lo, hi) = distance_range(d);
    linear(lo, hi, steps)
        .into_iter()
        .map(|t| MethodParams {
            threshold: Some(t),
            ..p.clone()
        })
        .collect()
}

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
