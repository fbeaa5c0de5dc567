//! `spectral`: Ng, Jordan and Weiss's spectral clustering on linfa, k given or from the
//! eigengaps, the same inside every group.

use linfa::ParamGuard;
use ndarray::Array2;

use super::{ClusterMethod, MethodParams, MethodSpec, Param, ParamError, Problem, Setting};
use crate::auto::Tree;
use crate::spectral::{euclidean_distances, spectral, SpectralError, SpectralValidParams};

/// The registry entry.
pub(super) const SPEC: MethodSpec = MethodSpec {
    name: "spectral",
    description:
        "Spectral clustering (Ng, Jordan, Weiss) of a Gaussian affinity, {k} or by eigengap",
    build,
    search: Some(super::agglomerative::search),
};

/// Spectral clustering with checked parameters.
#[derive(Debug)]
struct Spectral(SpectralValidParams);

fn build(p: &MethodParams) -> Result<Box<dyn ClusterMethod>, ParamError> {
    Ok(Box::new(Spectral(checked(SPEC.name, p)?)))
}

/// The spectral parameters of `p`, checked by linfa's [`ParamGuard`].
pub(super) fn checked(
    method: &'static str,
    p: &MethodParams,
) -> Result<SpectralValidParams, ParamError> {
    p.spectral().check().map_err(|e| ParamError::Invalid {
        method,
        problem: problem_of(&e),
    })
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
