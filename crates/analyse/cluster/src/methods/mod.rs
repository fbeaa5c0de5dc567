//! The clustering methods `cluster` chooses from: each a [`Method`] with its own parameters,
//! checked into a [`ClusterMethod`] that turns a distance matrix into one [`Tree`], and listed
//! in [`METHODS`].
//!
//! A new method is one module here (its parameters, their check into a type implementing
//! [`ClusterMethod`], its [`MethodSpec`]), one line in [`METHODS`] and one variant of
//! [`Method`].
//!
//! ```
//! use lgate_cluster::methods::{KmedoidsParams, Method, AgglomerativeParams};
//! use ndarray::Array2;
//!
//! let d = Array2::from_shape_fn((6, 6), |(i, j)| if i == j { 0.0 } else if i / 3 == j / 3 { 1.0 } else { 5.0 });
//! let kmedoids = Method::Kmedoids(KmedoidsParams { k: Some(2), ..KmedoidsParams::default() }).checked()?;
//! assert_eq!(kmedoids.fit(&d).ranks().len(), 6);
//! let needs_a_cut = Method::Agglomerative(AgglomerativeParams::default());
//! assert!(needs_a_cut.checked().is_err(), "needs k or height");
//! # Ok::<(), lgate_cluster::methods::ParamError>(())
//! ```

mod agglomerative;
mod auto;
mod components;
mod dbscan;
mod hdbscan;
mod kmeans;
mod kmedoids;
mod params;
mod spectral;
mod ssstree;

pub use agglomerative::AgglomerativeParams;
pub use components::ComponentsParams;
pub use dbscan::DbscanParams;
pub use kmedoids::KmedoidsParams;
use params::{check_k, positive_distance};
pub use params::{listed, Param, ParamError, Problem, Setting};
pub use ssstree::SsstreeParams;

use ndarray::Array2;

use crate::auto::{separation_of, AutoParams, Tree};
use crate::hdbscan::HdbscanParams;
use crate::spectral::SpectralParams;

/// A clustering method with its parameters checked.
pub trait ClusterMethod: Send + Sync + std::fmt::Debug {
    /// The method's name in the registry.
    fn name(&self) -> &'static str;
    /// Refuses parameters that do not fit `items` items (a k above it).
    fn check_items(&self, _items: usize) -> Result<(), ParamError> {
        Ok(())
    }
    /// The hierarchy of the items of the distance matrix `d`.
    fn fit(&self, d: &Array2<f64>) -> Tree;
    /// The hierarchy, and the items found slower towards every other item (with how many
    /// times slower) that the method set aside instead of making them a level.
    fn fit_with_outliers(&self, d: &Array2<f64>) -> (Tree, Vec<(usize, f64)>) {
        (self.fit(d), Vec::new())
    }
    /// The hierarchy of a run's ranks from its host blocks at screening size `k`, for the
    /// methods that work by hosts; `None` for those that need the dense matrix.
    fn fit_by_hosts(
        &self,
        _blocks: &lgate_tables::HostBlocks,
        _k: usize,
        _between: Option<&lgate_tables::BetweenPairs>,
    ) -> Option<Result<crate::HostClustering, crate::ByHostsError>> {
        None
    }
    /// The hierarchy of a dense matrix whose items are on `hosts`, by hosts, for the methods
    /// that work by hosts; `None` for the others (they cluster the matrix as it is).
    fn fit_dense_by_hosts(
        &self,
        _d: &Array2<f64>,
        _hosts: &crate::by_hosts::DenseHosts,
    ) -> Option<Result<crate::HostClustering, crate::ByHostsError>> {
        None
    }
    /// The hierarchy of the items as points (rows of `v`) in vector space, for the methods that
    /// work there (feature vectors); `None` for those that need a matrix.
    fn fit_vectors(&self, _v: &Array2<f64>) -> Option<Tree> {
        None
    }
    /// This method's main parameter as it is (`k = 4`); `None` for a method without one.
    fn setting(&self) -> Option<Setting> {
        None
    }
}

/// A clustering method and its parameters, unchecked.
#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    /// Every level the data supports.
    Auto(AutoParams),
    /// HDBSCAN.
    Hdbscan(HdbscanParams),
    /// Agglomerative clustering.
    Agglomerative(AgglomerativeParams),
    /// Connected components below a threshold.
    Components(ComponentsParams),
    /// DBSCAN.
    Dbscan(DbscanParams),
    /// FasterPAM k-medoids.
    Kmedoids(KmedoidsParams),
    /// The Sparse Spatial Selection tree.
    Ssstree(SsstreeParams),
    /// Spectral clustering.
    Spectral(SpectralParams),
    /// K-means of each rank's row or feature vector.
    Kmeans(SpectralParams),
}

impl Default for Method {
    /// `auto` with its defaults, as `cluster` runs it.
    fn default() -> Self {
        Method::Auto(AutoParams::default())
    }
}

impl Method {
    /// The method's registry entry.
    pub fn spec(&self) -> &'static MethodSpec {
        match self {
            Method::Auto(_) => &auto::SPEC,
            Method::Hdbscan(_) => &hdbscan::SPEC,
            Method::Agglomerative(_) => &agglomerative::SPEC,
            Method::Components(_) => &components::SPEC,
            Method::Dbscan(_) => &dbscan::SPEC,
            Method::Kmedoids(_) => &kmedoids::SPEC,
            Method::Ssstree(_) => &ssstree::SPEC,
            Method::Spectral(_) => &spectral::SPEC,
            Method::Kmeans(_) => &kmeans::SPEC,
        }
    }

    /// The method called `name` with its default parameters.
    pub fn named(name: &str) -> Result<Method, ParamError> {
        Ok((spec(name)?.default)())
    }

    /// The method's name (`auto`, `kmedoids`, ...).
    pub fn name(&self) -> &'static str {
        self.spec().name
    }

    /// `auto`'s parameters, when this is `auto`.
    pub fn auto(&self) -> Option<&AutoParams> {
        match self {
            Method::Auto(p) => Some(p),
            _ => None,
        }
    }

    /// The method with its parameters checked, or what is wrong with them.
    pub fn checked(&self) -> Result<Box<dyn ClusterMethod>, ParamError> {
        match self {
            Method::Auto(p) => auto::checked(p),
            Method::Hdbscan(p) => hdbscan::checked(p),
            Method::Agglomerative(p) => p.checked(),
            Method::Components(p) => p.checked(),
            Method::Dbscan(p) => p.checked(),
            Method::Kmedoids(p) => p.checked(),
            Method::Ssstree(p) => p.checked(),
            Method::Spectral(p) => spectral::checked_method(p),
            Method::Kmeans(p) => kmeans::checked_method(p),
        }
    }

    /// The methods a search of `steps` tries over `d`: `steps` values of the main parameter
    /// across its range; an error for a method with no parameter to search.
    pub fn candidates(&self, d: &Array2<f64>, steps: usize) -> Result<Vec<Method>, ParamError> {
        Ok(match self {
            Method::Auto(_) => {
                return Err(ParamError::Invalid {
                    method: self.name(),
                    problem: Problem::NothingToSearch,
                })
            }
            Method::Hdbscan(p) => (hdbscan::candidates(p, d, steps).into_iter())
                .map(Method::Hdbscan)
                .collect(),
            Method::Agglomerative(p) => (p.candidates(d, steps).into_iter())
                .map(Method::Agglomerative)
                .collect(),
            Method::Components(p) => (p.candidates(d, steps).into_iter())
                .map(Method::Components)
                .collect(),
            Method::Dbscan(p) => (p.candidates(d, steps).into_iter())
                .map(Method::Dbscan)
                .collect(),
            Method::Kmedoids(p) => (p.candidates(d, steps).into_iter())
                .map(Method::Kmedoids)
                .collect(),
            Method::Ssstree(p) => (p.candidates(d, steps).into_iter())
                .map(Method::Ssstree)
                .collect(),
            Method::Spectral(p) => (spectral::candidates(self.name(), p, d, steps)?.into_iter())
                .map(Method::Spectral)
                .collect(),
            Method::Kmeans(p) => (spectral::candidates(self.name(), p, d, steps)?.into_iter())
                .map(Method::Kmeans)
                .collect(),
        })
    }
}

/// A method's entry in the registry: what `--algo` lists.
#[derive(Debug)]
pub struct MethodSpec {
    /// The method's name.
    pub name: &'static str,
    /// What the method does, in one line, each parameter named as `{field}` (`{k}`).
    pub description: &'static str,
    /// The parameters the method reads.
    pub reads: &'static [Param],
    /// The method with its default parameters.
    pub default: fn() -> Method,
}

/// Every method, in the order they are documented.
pub static METHODS: &[MethodSpec] = &[
    auto::SPEC,
    hdbscan::SPEC,
    agglomerative::SPEC,
    components::SPEC,
    dbscan::SPEC,
    kmedoids::SPEC,
    ssstree::SPEC,
    spectral::SPEC,
    kmeans::SPEC,
];

/// The registry entry of the method called `name`.
pub fn spec(name: &str) -> Result<&'static MethodSpec, ParamError> {
    METHODS
        .iter()
        .find(|m| m.name == name)
        .ok_or_else(|| ParamError::UnknownMethod {
            name: name.to_string(),
            known: METHODS
                .iter()
                .map(|m| m.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Refuses each of the parameters `given` (those without a default) that `method` does not
/// read: it would be ignored without a word.
pub fn refuse_unread(method: &Method, given: &[Param]) -> Result<(), ParamError> {
    let reads = method.spec().reads;
    match given.iter().find(|p| !reads.contains(p)) {
        None => Ok(()),
        Some(&param) => Err(ParamError::NotTaken {
            param,
            takers: (METHODS.iter())
                .filter(|m| m.reads.contains(&param))
                .map(|m| m.name)
                .collect(),
            method: method.name().to_string(),
        }),
    }
}

/// The thesis's linear parameter search: `steps` values of the method's main parameter across
/// its range; the one whose top-level partition has the best separation (as `auto` measures
/// it) wins. Returns its tree, its setting and that separation.
pub fn search(
    method: &Method,
    d: &Array2<f64>,
    steps: usize,
) -> Result<(Tree, Option<Setting>, f64), ParamError> {
    let n = d.nrows();
    if n < 2 && method.auto().is_none() {
        // One rank (or none): one group, whatever the parameter.
        return Ok((Tree::Leaf((0..n).collect()), None, 0.0));
    }
    let candidates = method.candidates(d, steps.max(1))?;
    let separation = AutoParams::default();
    let mut best: Option<(f64, Tree, Option<Setting>)> = None;
    for candidate in candidates {
        let method = candidate.checked()?;
        if method.check_items(n).is_err() {
            // A k above the rank count is no candidate.
            continue;
        }
        let tree = method.fit(d);
        let s = separation_of(d, &top_labels(&tree, n), &separation);
        if best.as_ref().is_none_or(|b| s > b.0) {
            best = Some((s, tree, method.setting()));
        }
    }
    let (s, tree, setting) = best.ok_or(ParamError::Invalid {
        method: method.name(),
        problem: Problem::SearchFoundNothing,
    })?;
    Ok((tree, setting, s))
}

/// `steps` values strictly between `a` and `b`, evenly spaced.
fn linear(a: f64, b: f64, steps: usize) -> Vec<f64> {
    (1..=steps)
        .map(|k| a + (b - a) * k as f64 / (steps + 1) as f64)
        .collect()
}

/// Up to `steps` whole numbers from `a` to `b`, evenly spaced.
fn integers(a: usize, b: usize, steps: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..steps)
        .map(|k| a + (b.saturating_sub(a)) * k / steps.max(2).saturating_sub(1).max(1))
        .collect();
    v.dedup();
    v
}

/// The least and the largest positive distance of `d`.
fn distance_range(d: &Array2<f64>) -> (f64, f64) {
    d.iter()
        .copied()
        .filter(|&x| x > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(a, b), x| (a.min(x), b.max(x)))
}

/// The top-level partition of a tree, one label per item.
fn top_labels(tree: &Tree, n: usize) -> Vec<usize> {
    let mut labels = vec![0; n];
    if let Tree::Node { children, .. } = tree {
        for (g, c) in children.iter().enumerate() {
            for r in c.ranks() {
                labels[r] = g;
            }
        }
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each registry entry's method, given the parameters it needs for two groups.
    fn given(spec: &MethodSpec) -> Method {
        let spectral = SpectralParams::new().k(Some(2));
        match spec.name {
            "auto" => Method::default(),
            "hdbscan" => Method::Hdbscan(HdbscanParams::default()),
            "agglomerative" => Method::Agglomerative(AgglomerativeParams {
                k: Some(2),
                ..AgglomerativeParams::default()
            }),
            "components" => Method::Components(ComponentsParams {
                threshold: Some(2.0),
            }),
            "dbscan" => Method::Dbscan(DbscanParams {
                eps: Some(2.0),
                ..DbscanParams::default()
            }),
            "kmedoids" => Method::Kmedoids(KmedoidsParams {
                k: Some(2),
                ..KmedoidsParams::default()
            }),
            "ssstree" => Method::Ssstree(SsstreeParams::default()),
            "spectral" => Method::Spectral(spectral),
            "kmeans" => Method::Kmeans(spectral),
            other => panic!("no method of the tests is called {other}"),
        }
    }

    #[test]
    fn every_method_checks_its_parameters_and_fits() {
        let d = Array2::from_shape_fn((8, 8), |(i, j)| {
            if i == j {
                0.0
            } else if i / 4 == j / 4 {
                1.0
            } else {
                4.0
            }
        });
        for spec in METHODS {
            assert_eq!(Method::named(spec.name).unwrap().name(), spec.name);
            let given = given(spec);
            assert_eq!(given.name(), spec.name);
            let m = given.checked().unwrap();
            assert_eq!(m.name(), spec.name);
            let mut ranks = m.fit(&d).ranks();
            ranks.sort_unstable();
            assert_eq!(ranks, (0..8).collect::<Vec<_>>(), "{}", spec.name);
            if given.auto().is_none() {
                let (tree, setting, s) = search(&given, &d, 4).unwrap();
                assert_eq!(tree.ranks().len(), 8);
                let setting = setting.expect("a searched method has a main parameter");
                assert_eq!(m.setting().map(|s| s.param), Some(setting.param));
                assert!(!setting.value.is_empty());
                assert!(s >= 0.0);
            }
        }
        for (method, needs) in [
            (
                Method::Agglomerative(AgglomerativeParams::default()),
                &[Param::K, Param::Height][..],
            ),
            (
                Method::Components(ComponentsParams::default()),
                &[Param::Threshold],
            ),
            (Method::Dbscan(DbscanParams::default()), &[Param::Eps]),
        ] {
            let err = method.checked().unwrap_err();
            assert_eq!(
                err,
                ParamError::Invalid {
                    method: method.name(),
                    problem: Problem::Needs(needs)
                }
            );
        }
        assert_eq!(
            (Method::Agglomerative(AgglomerativeParams::default()).checked())
                .unwrap_err()
                .to_string(),
            "agglomerative needs k or height"
        );
        assert!(spec("spectre")
            .unwrap_err()
            .to_string()
            .contains("auto, hdbscan"));
        assert!(
            search(&Method::default(), &d, 3).unwrap_err()
                == ParamError::Invalid {
                    method: "auto",
                    problem: Problem::NothingToSearch
                }
        );
        let bad_scale =
            Method::Kmeans(SpectralParams::new().scale(crate::spectral::KernelScale::Fixed(-1.0)));
        assert_eq!(
            search(&bad_scale, &d, 3).unwrap_err().to_string(),
            "kmeans scale must be a positive number in the distances' unit (it was -1)"
        );
    }

    #[test]
    fn a_parameter_the_method_does_not_read_is_refused_with_its_takers() {
        let kmedoids = Method::Kmedoids(KmedoidsParams::default());
        assert_eq!(refuse_unread(&kmedoids, &[Param::K]), Ok(()));
        assert_eq!(
            refuse_unread(&Method::default(), &[Param::K]),
            Err(ParamError::NotTaken {
                param: Param::K,
                takers: vec!["agglomerative", "kmedoids", "spectral", "kmeans"],
                method: "auto".into(),
            })
        );
        let err = refuse_unread(&kmedoids, &[Param::K, Param::Eps]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "eps is a parameter of dbscan; kmedoids does not take it"
        );
    }

    #[test]
    fn every_parameter_a_description_names_is_a_field() {
        for spec in METHODS {
            let mut rest = spec.description;
            while let Some(open) = rest.find('{') {
                let close = rest[open..].find('}').expect("a closed name") + open;
                let name = &rest[open + 1..close];
                assert!(
                    Param::ALL.iter().any(|p| p.field() == name),
                    "{}: `{name}`",
                    spec.name
                );
                rest = &rest[close + 1..];
            }
            assert!(!spec.description.contains("--"), "{}", spec.name);
        }
    }
}
