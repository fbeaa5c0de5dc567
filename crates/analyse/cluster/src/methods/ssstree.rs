//! `ssstree`: the Sparse Spatial Selection tree of Figure 2.5 of the reference thesis.

use ndarray::Array2;

use super::{linear, ClusterMethod, Method, MethodSpec, Param, ParamError, Setting};
use crate::algorithms::ssstree;
use crate::auto::Tree;

/// The registry entry.
pub(super) const SPEC: MethodSpec = MethodSpec {
    name: "ssstree",
    description: "Sparse Spatial Selection tree, {alpha} and {min_children}",
    reads: &[Param::Alpha, Param::MinChildren],
    default: || Method::Ssstree(SsstreeParams::default()),
};

/// The parameters of the SSSTree, unchecked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SsstreeParams {
    /// A new center opens at this share of twice the cluster's radius.
    pub alpha: f64,
    /// Clusters with fewer items are not split.
    pub min_children: usize,
}

impl Default for SsstreeParams {
    /// The thesis's alpha of 0.5; clusters of 2 items split.
    fn default() -> Self {
        SsstreeParams {
            alpha: 0.5,
            min_children: 2,
        }
    }
}

impl SsstreeParams {
    /// The method (any alpha and size will do).
    pub(super) fn checked(&self) -> Result<Box<dyn ClusterMethod>, ParamError> {
        Ok(Box::new(Ssstree(*self)))
    }

    /// The parameters a search of `steps` tries: alpha across (0, 5).
    pub(super) fn candidates(&self, _d: &Array2<f64>, steps: usize) -> Vec<Self> {
        (linear(0.0, 5.0, steps).into_iter())
            .map(|a| SsstreeParams { alpha: a, ..*self })
            .collect()
    }
}

/// SSSTree's opening share and least cluster to split.
#[derive(Debug)]
struct Ssstree(SsstreeParams);

impl ClusterMethod for Ssstree {
    fn name(&self) -> &'static str {
        SPEC.name
    }
    fn fit(&self, d: &Array2<f64>) -> Tree {
        ssstree(d, self.0.alpha, self.0.min_children)
    }
    fn setting(&self) -> Option<Setting> {
        Some(Setting {
            param: Param::Alpha,
            value: format!("{:.3}", self.0.alpha),
        })
    }
}
