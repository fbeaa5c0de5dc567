//! The clustering methods behind `cluster --algo`: each a type with checked parameters that
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
//! assert!(method("agglomerative", &MethodParams::default()).is_err(), "needs --k or --height");
//! # Ok::<(), lgate_cluster::methods::ParamError>(())
//! ```

mod agglomerative;
mod auto;
mod components;
mod dbscan;
mod hdbscan;
mod kmeans;
mod kmedoids;
mod spectral;
mod ssstree;

use ndarray::Array2;

use crate::auto::{separation_of, AutoParams, Tree};
use crate::linkage::Linkage;

/// Every setting any method takes, as `cluster`'s flags give them; each method reads its own.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodParams {
    /// auto: the least separation of a level.
    pub min_ratio: f64,
    /// auto: the least gap between groups, as a share of the median distance.
    pub min_gap: f64,
    /// agglomerative: how clusters are joined.
    pub linkage: Linkage,
    /// agglomerative, kmedoids: the number of groups.
    pub k: Option<usize>,
    /// agglomerative: cut where merges pass this distance.
    pub height: Option<f64>,
    /// components: join items closer than this.
    pub threshold: Option<f64>,
    /// dbscan: the neighbourhood radius.
    pub eps: Option<f64>,
    /// dbscan: items within eps (itself included) that make a core item.
    pub min_points: usize,
    /// kmedoids: the largest k tried when k is chosen by silhouette; spectral, kmeans: the
    /// first window of eigengaps.
    pub max_k: usize,
    /// hdbscan: the least ranks of a cluster.
    pub min_cluster_size: usize,
    /// hdbscan: the neighbourhood of the core distance, the rank itself counted.
    pub min_samples: usize,
    /// ssstree: a new center opens at this share of twice the cluster's radius.
    pub alpha: f64,
    /// ssstree: clusters with fewer items are not split.
    pub min_children: usize,
    /// spectral, kmeans: one Gaussian kernel scale for every rank, in the distances' unit.
    pub scale: Option<f64>,
    /// spectral, kmeans: without `scale`, each rank's scale is its distance to this nearest
    /// other rank.
    pub scale_neighbour: usize,
}

impl MethodParams {
    /// The parameters `spectral` and `kmeans` read, unchecked.
    pub fn spectral(&self) -> crate::spectral::SpectralParams {
        crate::spectral::SpectralParams::new()
            .k(self.k)
            .max_k(self.max_k)
            .scale(match self.scale {
                Some(s) => crate::spectral::KernelScale::Fixed(s),
                None => crate::spectral::KernelScale::Neighbour(self.scale_neighbour),
            })
    }
}

impl Default for MethodParams {
    fn default() -> Self {
        MethodParams {
            min_ratio: AutoParams::default().min_ratio,
            min_gap: AutoParams::default().min_gap,
            linkage: Linkage::Average,
            k: None,
            height: None,
            threshold: None,
            eps: None,
            min_points: 2,
            max_k: 16,
            min_cluster_size: 4,
            min_samples: 4,
            alpha: 0.5,
            min_children: 2,
            scale: None,
            scale_neighbour: 7,
        }
    }
}

/// A parameter a method needs and was not given, or one it cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// No method has this name.
    #[error("no clustering method `{name}`; the methods are {known}")]
    UnknownMethod {
        /// The name asked for.
        name: String,
        /// The names there are.
        known: String,
    },
    /// A parameter is missing or out of range.
    #[error("--algo {method} {message}")]
    Invalid {
        /// The method.
        method: &'static str,
        /// What is wrong, e.g. `needs --k or --height`.
        message: String,
    },
    /// A parameter given to a method that does not read it (it would be ignored).
    #[error("{flag} is a parameter of --algo {takers}; --algo {method} does not take it")]
    NotTaken {
        /// The flag that sets it.
        flag: &'static str,
        /// The methods that take it, listed.
        takers: String,
        /// The method chosen.
        method: String,
    },
}

/// Whether a parameter without a default was given.
type Given = fn(&MethodParams) -> bool;

/// The parameters without a default, the flag that sets each, and the methods that read it:
/// given to another method they would be ignored without a word, so they are refused.
const WITHOUT_DEFAULT: &[(&str, Given, &[&str])] = &[
    (
        "--k",
        |p| p.k.is_some(),
        &["agglomerative", "kmedoids", "spectral", "kmeans"],
    ),
    ("--scale", |p| p.scale.is_some(), &["spectral", "kmeans"]),
    ("--height", |p| p.height.is_some(), &["agglomerative"]),
    ("--threshold", |p| p.threshold.is_some(), &["components"]),
    ("--eps", |p| p.eps.is_some(), &["dbscan"]),
];

/// Refuses a parameter without a default that the method `name` does not read.
pub fn refuse_unread(name: &str, params: &MethodParams) -> Result<(), ParamError> {
    for &(flag, given, takers) in WITHOUT_DEFAULT {
        if given(params) && !takers.contains(&name) {
            return Err(ParamError::NotTaken {
                flag,
                takers: match takers.split_last() {
                    Some((last, [])) => last.to_string(),
                    Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
                    None => String::new(),
                },
                method: name.to_string(),
            });
        }
    }
    Ok(())
}

/// A clustering method with its parameters checked.
pub trait ClusterMethod: Send + Sync + std::fmt::Debug {
    /// The method's name as `--algo` takes it.
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
    /// work there (`--space features`); `None` for those that need a matrix.
    fn fit_vectors(&self, _v: &Array2<f64>) -> Option<Tree> {
        None
    }
    /// The flags that set this method's main parameter as it is, e.g. `--k 4`.
    fn setting(&self) -> String {
        String::new()
    }
}

/// The settings `--search N` tries for a method over a matrix: N values of its main parameter.
pub type SearchSpace = fn(&MethodParams, &Array2<f64>, usize) -> Vec<MethodParams>;

/// A method's entry in the registry.
pub struct MethodSpec {
    /// The name `--algo` takes.
    pub name: &'static str,
    /// What the method does, in one line (the `--algo` help).
    pub description: &'static str,
    /// The method with `params` checked.
    pub build: fn(&MethodParams) -> Result<Box<dyn ClusterMethod>, ParamError>,
    /// The methods `--search N` tries, `N` values of the main parameter across its range
    /// over the matrix `d`; `None` for a method with no parameter to search.
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
) -> Result<(Tree, String, f64), ParamError> {
    let spec = spec(name)?;
    let candidates = spec.search.ok_or(ParamError::Invalid {
        method: spec.name,
        message: "has no parameter to search (--search needs one)".into(),
    })?;
    let n = d.nrows();
    if n < 2 {
        // One rank (or none): one group, whatever the parameter.
        return Ok((
            Tree::Leaf((0..n).collect()),
            "nothing (one rank)".into(),
            0.0,
        ));
    }
    let separation = AutoParams::default();
    let mut best: Option<(f64, Tree, String)> = None;
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
        message: "--search found nothing to try".into(),
    })?;
    Ok((tree, setting, s))
}

/// Refuses a number of groups above the item count.
/// A distance given on the command line (`--height`, `--eps`, `--threshold`): a positive
/// number, or the error naming `flag`.
fn positive_distance(method: &'static str, flag: &str, x: f64) -> Result<f64, ParamError> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(ParamError::Invalid {
            method,
            message: format!("{flag} {x} must be a positive distance (in the matrix's unit)"),
        })
    }
}

fn check_k(method: &'static str, k: Option<usize>, items: usize) -> Result<(), ParamError> {
    match k {
        // 0 groups would put every rank in one.
        Some(0) => Err(ParamError::Invalid {
            method,
            message: "--k must be at least 1".into(),
        }),
        Some(k) if k > items => Err(ParamError::Invalid {
            method,
            message: format!("--k {k} is more groups than the {items} ranks"),
        }),
        _ => Ok(()),
    }
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
                assert!(setting.starts_with("--"), "{setting}");
                assert!(s >= 0.0);
            }
        }
        for (name, says) in [
            ("agglomerative", "needs --k or --height"),
            ("components", "needs --threshold"),
            ("dbscan", "needs --eps"),
        ] {
            let err = method(name, &MethodParams::default())
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{err}");
        }
        assert!(method("spectre", &given)
            .unwrap_err()
            .to_string()
            .contains("auto, hdbscan"));
        assert!(
            search("auto", &given, &d, 3)
                .unwrap_err()
                .to_string()
                .contains("nothing to search")
                || search("auto", &given, &d, 3).is_err()
        );
    }
}
