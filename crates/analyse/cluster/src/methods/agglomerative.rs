//! `agglomerative`: average, single, complete or Ward linkage, cut by a count or a height.

use ndarray::Array2;

use super::{integers, ClusterMethod, Method, MethodSpec, Param, ParamError, Problem, Setting};
use crate::algorithms::agglomerative;
use crate::auto::Tree;
use crate::linkage::Linkage;

/// The registry entry.
pub(super) const SPEC: MethodSpec = MethodSpec {
    name: "agglomerative",
    description: "Average, single, complete or Ward linkage, cut by {k} or {height}",
    reads: &[Param::Linkage, Param::K, Param::Height, Param::MaxK],
    default: || Method::Agglomerative(AgglomerativeParams::default()),
};

/// The parameters of agglomerative clustering, unchecked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgglomerativeParams {
    /// How clusters are joined.
    pub linkage: Linkage,
    /// The number of groups.
    pub k: Option<usize>,
    /// Cut where merges pass this distance.
    pub height: Option<f64>,
    /// The largest k a search tries.
    pub max_k: usize,
}

impl Default for AgglomerativeParams {
    /// Average linkage, no cut given, a search up to 16 groups.
    fn default() -> Self {
        AgglomerativeParams {
            linkage: Linkage::Average,
            k: None,
            height: None,
            max_k: 16,
        }
    }
}

impl AgglomerativeParams {
    /// The method, its parameters checked.
    pub(super) fn checked(&self) -> Result<Box<dyn ClusterMethod>, ParamError> {
        if self.k.is_none() && self.height.is_none() {
            return Err(ParamError::Invalid {
                method: SPEC.name,
                problem: Problem::Needs(&[Param::K, Param::Height]),
            });
        }
        let height = (self.height)
            .map(|h| super::positive_distance(SPEC.name, Param::Height, h))
            .transpose()?;
        Ok(Box::new(Agglomerative {
            linkage: self.linkage,
            k: self.k,
            height,
        }))
    }

    /// The parameters a search of `steps` tries over `d`: k from 2 to max_k (and below the
    /// item count), no height.
    pub(super) fn candidates(&self, d: &Array2<f64>, steps: usize) -> Vec<Self> {
        search_k(self.max_k, d, steps)
            .into_iter()
            .map(|k| AgglomerativeParams {
                k: Some(k),
                height: None,
                ..*self
            })
            .collect()
    }
}

/// The k from 2 to `max_k` (and below the item count of `d`) that a search of `steps` tries.
pub(super) fn search_k(max_k: usize, d: &Array2<f64>, steps: usize) -> Vec<usize> {
    let n = d.nrows();
    integers(2, max_k.min(n.saturating_sub(1)).max(2), steps)
}

/// Agglomerative clustering and where its dendrogram is cut.
#[derive(Debug)]
struct Agglomerative {
    linkage: Linkage,
    k: Option<usize>,
    height: Option<f64>,
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
