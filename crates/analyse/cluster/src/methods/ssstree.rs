//! `ssstree`: the Sparse Spatial Selection tree of Figure 2.5 of the reference thesis.

use ndarray::Array2;

use super::{linear, ClusterMethod, MethodParams, MethodSpec, Param, ParamError, Setting};
use crate::algorithms::ssstree;
use crate::auto::Tree;

/// The registry entry.
pub(super) const SPEC: MethodSpec = MethodSpec {
    name: "ssstree",
    description: "Sparse Spatial Selection tree, {alpha} and {min_children}",
    build,
    search: Some(search),
};

/// SSSTree's opening share and least cluster to split.
#[derive(Debug)]
struct Ssstree {
    alpha: f64,
    min_children: usize,
}

fn build(p: &MethodParams) -> Result<Box<dyn ClusterMethod>, ParamError> {
    Ok(Box::new(Ssstree {
        alpha: p.alpha,
        min_children: p.min_children,
    }))
}

fn search(p: &MethodParams, _d: &Array2<f64>, steps: usize) -> Vec<MethodParams> {
    linear(0.0, 5.0, steps)
        .into_iter()
        .map(|a| MethodParams {
            alpha: a,
            ..p.clone()
        })
        .collect()
}

impl ClusterMethod for Ssstree {
    fn name(&self) -> &'static str {
        SPEC.name
    }
    fn fit(&self, d: &Array2<f64>) -> Tree {
        ssstree(d, self.alpha, self.min_children)
    }
    fn setting(&self) -> Option<Setting> {
        Some(Setting {
            param: Param::Alpha,
            value: format!("{:.3}", self.alpha),
        })
    }
}
