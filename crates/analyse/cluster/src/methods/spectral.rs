//! `spectral`: Ng, Jordan and Weiss's spectral clustering on linfa, k given or from the
//! eigengaps, the same inside every group.

use linfa::ParamGuard;
use ndarray::Array2;

use super::{ClusterMethod, Method, MethodSpec, Param, ParamError, Problem, Setting};
use crate::auto::Tree;
use crate::spectral::{
    euclidean_distances, spectral, SpectralError, SpectralParams, SpectralValidParams,
};

/// The registry entry.
pub(super) const SPEC: MethodSpec = MethodSpec {
    name: "spectral",
    description:
        "Spectral clustering (Ng, Jordan, Weiss) of a Gaussian affinity, {k} or by eigengap",
    reads: READS,
    default: || Method::Spectral(SpectralParams::default()),
};

/// What `spectral` and `kmeans` read.
pub(super) const READS: &[Param] = &[Param::K, Param::MaxK, Param::Scale, Param::ScaleNeighbour];

/// Spectral clustering with checked parameters.
#[derive(Debug)]
struct Spectral(SpectralValidParams);

/// Spectral clustering with `p` checked.
pub(super) fn checked_method(p: &SpectralParams) -> Result<Box<dyn ClusterMethod>, ParamError> {
    Ok(Box::new(Spectral(checked(SPEC.name, p)?)))
}

/// `p` checked by linfa's [`ParamGuard`], errors naming the parameter of `method`.
pub(super) fn checked(
    method: &'static str,
    p: &SpectralParams,
) -> Result<SpectralValidParams, ParamError> {
    p.clone().check().map_err(|e| ParamError::Invalid {
        method,
        problem: problem_of(&e),
    })
}

/// The parameters a search of `steps` tries over `d` with `method` (`spectral` or `kmeans`):
/// k from 2 to max_k.
pub(super) fn candidates(
    method: &'static str,
    p: &SpectralParams,
    d: &Array2<f64>,
    steps: usize,
) -> Result<Vec<SpectralParams>, ParamError> {
    let max_k = checked(method, p)?.max_k();
    Ok(
        (super::agglomerative::search_k(max_k, d, steps).into_iter())
            .map(|k| p.clone().k(Some(k)))
            .collect(),
    )
}

/// A spectral parameter error as the methods name it, by parameter.
fn problem_of(e: &SpectralError) -> Problem {
    match *e {
        SpectralError::NoGroups => Problem::AtLeast {
            param: Param::K,
            least: 1.0,
            was: 0.0,
        },
        SpectralError::MoreGroupsThanItems { k, items } => Problem::MoreGroupsThanItems {
            param: Param::K,
            k,
            items,
        },
        SpectralError::MaxKTooSmall(was) => Problem::AtLeast {
            param: Param::MaxK,
            least: 2.0,
            was: was as f64,
        },
        SpectralError::BadScale(was) => Problem::NotAScale {
            param: Param::Scale,
            was,
        },
        SpectralError::NoNeighbour => Problem::AtLeast {
            param: Param::ScaleNeighbour,
            least: 1.0,
            was: 0.0,
        },
    }
}

impl ClusterMethod for Spectral {
    fn name(&self) -> &'static str {
        SPEC.name
    }
    fn check_items(&self, items: usize) -> Result<(), ParamError> {
        super::check_k(SPEC.name, self.0.k(), items)
    }
    fn fit(&self, d: &Array2<f64>) -> Tree {
        spectral(d, &self.0)
    }
    fn fit_vectors(&self, v: &Array2<f64>) -> Option<Tree> {
        Some(spectral(&euclidean_distances(v), &self.0))
    }
    fn setting(&self) -> Option<Setting> {
        Some(Setting {
            param: Param::K,
            value: self.0.k().unwrap_or(0).to_string(),
        })
    }
}
