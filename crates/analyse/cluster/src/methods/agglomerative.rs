//! `agglomerative`: average, single, complete or Ward linkage, cut by a count or a height.

use ndarray::Array2;

use super::{
    integers, ClusterMethod, MethodParams, MethodSpec, Param, ParamError, Problem, Setting,
};
use crate::algorithms::agglomerative;
use crate::auto::Tree;
use crate::linkage::Linkage;

/// The registry entry.
pub(super) const SPEC: MethodSpec = MethodSpec {
    name: "agglomerative",
    description: "Average, single, complete or Ward linkage, cut by {k} or {height}",
    build,
    search: Some(search),
};

/// Agglomerative clustering and where its dendrogram is cut.
#[derive(Debug)]
struct Agglomerative {
    linkage: Linkage,
    k: Option<usize>,
    height: Option<f64>,
}

fn build(p: &MethodParams) -> Result<Box<dyn ClusterMethod>, ParamError> {
    if p.k.is_none() && p.height.is_none() {
        return Err(ParamError::Invalid {
            method: SPEC.name,
            problem: Problem::Needs(&[Param::K, Param::Height]),
        });
    }
    let height = (p.height)
        .map(|h| super::positive_distance(SPEC.name, Param::Height, h))
        .transpose()?;
    Ok(Box::new(Agglomerative {
        linkage: p.linkage,
        k: p.k,
        height,
    }))
}

/// The k from 2 to max_k (and below the item count) that a search tries.
pub(super) fn search(p: &MethodParams, d: &Array2<f64>, steps: usize) -> Vec<MethodParams> {
    let n = d.nrows();
    integers(2, p.max_k.min(n.saturating_sub(1)).max(2), steps)
        .into_iter()
        .map(|k| MethodParams {
            k: Some(k),
            height: None,
            ..p.clone()
        })
        .collect()
}

impl ClusterMethod for Agglomerative {
    fn name(&self) -> &'static str {
        SPEC.name
    }
    fn check_items(&self, items: usize) -> Result<(), ParamError> {
        super::check_k(SPEC.name, self.k, items)
    }
    fn fit(&self, d: &Array2<f64>) -> Tree {
        agglomerative(d, self.linkage, self.k, self.height)
    }
    fn setting(&self) -> Option<Setting> {
        Some(Setting {
            param: Param::K,
            value: self.k.unwrap_or(0).to_string(),
        })
    }
}
