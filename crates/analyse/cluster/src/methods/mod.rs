//! The clustering methods `cluster` chooses from: each a type with checked parameters that
//! turns a distance matrix into one [`Tree`], listed in [`METHODS`].
//!
//! A new method is one module here (a type implementing [`ClusterMethod`] and a `build`
//! function that checks its parameters) and one line in [`METHODS`].
//!
//! ```
//! use lgate_cluster::methods::{method, MethodParams};
//! use ndarray::Array2;
//!
//! let d = Array2::from_shape_fn((6, 6), |(i, j)| if i == j { 0.0 } else if i / 3 == j / 3 { 1.0 } else { 5.0 });
//! let kmedoids = method("kmedoids", &MethodParams { k: Some(2), ..MethodParams::default() })?;
//! assert_eq!(kmedoids.fit(&d).ranks().len(), 6);
//! assert!(method("agglomerative", &MethodParams::default()).is_err(), "needs k or height");
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

use params::{check_k, positive_distance};
pub use params::{listed, refuse_unread, MethodParams, Param, ParamError, Problem, Setting};

use ndarray::Array2;

use crate::auto::{separation_of, AutoParams, Tree};

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

/// The settings a search of N steps tries for a method over a matrix: N values of its main
/// parameter.
pub type SearchSpace = fn(&MethodParams, &Array2<f64>, usize) -> Vec<MethodParams>;

/// A method's entry in the registry.
pub struct MethodSpec {
    /// The method's name.
    pub name: &'static str,
    /// What the method does, in one line, each parameter named as `{field}` (`{k}`).
    pub description: &'static str,
    /// The method with `params` checked.
    pub build: fn(&MethodParams) -> Result<Box<dyn ClusterMethod>, ParamError>,
    /// The methods a search of `N` steps tries, `N` values of the main parameter across its
    /// range over the matrix `d`; `None` for a method with no parameter to search.
    pub search: Option<SearchSpace>,
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

/// The method called `name` with `params` checked.
pub fn method(name: &str, params: &MethodParams) -> Result<Box<dyn ClusterMethod>, ParamError> {
    (spec(name)?.build)(params)
}

/// The thesis's linear parameter search: `steps` values of the method's main parameter across
/// its range; the one whose top-level partition has the best separation (as `auto` measures
/// it) wins. Returns its tree, its setting and that separation.
pub fn search(
    name: &str,
    params: &MethodParams,
    d: &Array2<f64>,
    steps: usize,
) -> Result<(Tree, Option<Setting>, f64), ParamError> {
    let spec = spec(name)?;
    let candidates = spec.search.ok_or(ParamError::Invalid {
        method: spec.name,
        problem: Problem::NothingToSearch,
    })?;
    let n = d.nrows();
    if n < 2 {
        // One rank (or none): one group, whatever the parameter.
        return Ok((Tree::Leaf((0..n).collect()), None, 0.0));
    }
    let separation = AutoParams::default();
    let mut best: Option<(f64, Tree, Option<Setting>)> = None;
    for candidate in candidates(params, d, steps.max(1)) {
        let method = (spec.build)(&candidate)?;
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
        method: spec.name,
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
        let given = MethodParams {
            k: Some(2),
            threshold: Some(2.0),
            eps: Some(2.0),
            ..MethodParams::default()
        };
        for spec in METHODS {
            let m = (spec.build)(&given).unwrap();
            assert_eq!(m.name(), spec.name);
            let mut ranks = m.fit(&d).ranks();
            ranks.sort_unstable();
            assert_eq!(ranks, (0..8).collect::<Vec<_>>(), "{}", spec.name);
            if spec.search.is_some() {
                let (tree, setting, s) = search(spec.name, &given, &d, 4).unwrap();
                assert_eq!(tree.ranks().len(), 8);
                let setting = setting.expect("a searched method has a main parameter");
                assert_eq!(m.setting().map(|s| s.param), Some(setting.param));
                assert!(!setting.value.is_empty());
                assert!(s >= 0.0);
            }
        }
        for (name, needs) in [
            ("agglomerative", &[Param::K, Param::Height][..]),
            ("components", &[Param::Threshold]),
            ("dbscan", &[Param::Eps]),
        ] {
            let err = method(name, &MethodParams::default()).unwrap_err();
            assert_eq!(
                err,
                ParamError::Invalid {
                    method: spec(name).unwrap().name,
                    problem: Problem::Needs(needs)
                }
            );
        }
        assert_eq!(
            method("agglomerative", &MethodParams::default())
                .unwrap_err()
                .to_string(),
            "agglomerative needs k or height"
        );
        assert!(method("spectre", &given)
            .unwrap_err()
            .to_string()
            .contains("auto, hdbscan"));
        assert!(
            search("auto", &given, &d, 3).unwrap_err()
                == ParamError::Invalid {
                    method: "auto",
                    problem: Problem::NothingToSearch
                }
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
