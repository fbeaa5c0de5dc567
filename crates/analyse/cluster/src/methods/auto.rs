//! `auto`: every level the data supports, found per subtree; nothing to give.

use ndarray::Array2;

use super::{ClusterMethod, Method, MethodSpec, Param, ParamError, Problem};
use crate::auto::{auto, auto_with_outliers, AutoParams, Tree};

/// The registry entry.
pub(super) const SPEC: MethodSpec = MethodSpec {
    name: "auto",
    description: "Every level the data supports, found per subtree; nothing to give",
    reads: &[Param::MinRatio, Param::MinGap],
    default: || Method::Auto(AutoParams::default()),
};

/// `auto` with its two thresholds.
#[derive(Debug)]
struct Auto(AutoParams);

/// `auto` with `p` checked.
pub(super) fn checked(p: &AutoParams) -> Result<Box<dyn ClusterMethod>, ParamError> {
    for (param, was, least) in [
        (Param::MinRatio, p.min_ratio, 1.0),
        (Param::MinGap, p.min_gap, 0.0),
    ] {
        if !(was.is_finite() && was >= least) {
            return Err(ParamError::Invalid {
                method: SPEC.name,
                problem: Problem::AtLeast { param, least, was },
            });
        }
    }
    Ok(Box::new(Auto(*p)))
}

impl ClusterMethod for Auto {
    fn name(&self) -> &'static str {
        SPEC.name
    }
    fn fit(&self, d: &Array2<f64>) -> Tree {
        auto(d, &self.0)
    }
    fn fit_with_outliers(&self, d: &Array2<f64>) -> (Tree, Vec<(usize, f64)>) {
        auto_with_outliers(d, &self.0)
    }
    fn fit_by_hosts(
        &self,
        blocks: &lgate_tables::HostBlocks,
        k: usize,
        between: Option<&lgate_tables::BetweenPairs>,
    ) -> Option<Result<crate::HostClustering, crate::ByHostsError>> {
        Some(crate::auto_by_hosts(blocks, k, between, &self.0))
    }
    fn fit_dense_by_hosts(
        &self,
        d: &Array2<f64>,
        hosts: &crate::by_hosts::DenseHosts,
    ) -> Option<Result<crate::HostClustering, crate::ByHostsError>> {
        Some(crate::dense_by_hosts(d, hosts, &self.0))
    }
}
