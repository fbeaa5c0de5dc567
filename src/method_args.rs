//! The flags of `cluster` that choose the clustering method and set its parameters.

use clap::{Args, ValueEnum};
use lgate_cluster::hdbscan::HdbscanParams;
use lgate_cluster::methods::{
    listed, DbscanParams, KmedoidsParams, Method, Param, ParamError, Problem, SsstreeParams,
};
use lgate_cluster::spectral::KernelScale;
use lgate_cluster::{AutoParams, ClusteringError, Linkage};

/// The clustering method and its parameters, as `cluster`'s flags give them.
#[derive(Debug, Clone, Args)]
pub struct MethodArgs {
    /// The algorithm.
    #[arg(long, default_value = "auto", value_name = "ALGO", value_parser = algo_names())]
    pub algo: String,
    /// What is clustered: the distance matrix, or (for a PLogP run, with --algo hdbscan,
    /// dbscan, kmeans or spectral) each rank's vector of L, o_s, o_r and g towards every rank
    /// (equation 3.5) in vector space (petal-clustering, linfa); --matrix then picks the
    /// message size, e.g. `t:1KiB` or `1KiB` [default: the smallest].
    #[arg(long, value_enum, default_value_t = Space::Matrix)]
    pub space: Space,
    /// auto: the least separation of a level (least median distance between two groups over
    /// the largest upper quartile inside a group).
    #[arg(long, default_value_t = AutoParams::default().min_ratio, value_name = "R", allow_negative_numbers = true)]
    min_ratio: f64,
    /// auto: the least gap between groups, as a share of the median distance.
    #[arg(long, default_value_t = AutoParams::default().min_gap, value_name = "G", allow_negative_numbers = true)]
    min_gap: f64,
    /// agglomerative: how clusters are joined.
    #[arg(long, value_enum, default_value_t = LinkageArg::Average)]
    linkage: LinkageArg,
    /// agglomerative, kmedoids, spectral, kmeans: the number of groups (kmedoids without it:
    /// by medoid silhouette; spectral and kmeans: from the eigengaps).
    #[arg(
        long,
        value_name = "K",
        allow_negative_numbers = true,
        conflicts_with = "height"
    )]
    k: Option<usize>,
    /// agglomerative: cut where merges pass this distance.
    #[arg(long, value_name = "H", allow_negative_numbers = true)]
    height: Option<f64>,
    /// components: join items closer than this.
    #[arg(long, value_name = "T", allow_negative_numbers = true)]
    threshold: Option<f64>,
    /// dbscan: the neighbourhood radius.
    #[arg(long, value_name = "E", allow_negative_numbers = true)]
    eps: Option<f64>,
    /// dbscan: items within eps (itself included) that make a core item.
    #[arg(
        long,
        default_value_t = DbscanParams::default().min_points,
        value_name = "M",
        allow_negative_numbers = true
    )]
    min_points: usize,
    /// kmedoids: the largest k tried when k is chosen by silhouette; spectral and kmeans: the
    /// eigengaps are first looked for among this many + 1 eigenvalues (the window doubles while
    /// its last eigenvalue is above one half).
    #[arg(
        long,
        default_value_t = KmedoidsParams::default().max_k,
        value_name = "K",
        allow_negative_numbers = true
    )]
    max_k: usize,
    /// hdbscan: the least ranks of a cluster.
    #[arg(
        long,
        default_value_t = HdbscanParams::default().min_cluster_size,
        value_name = "M",
        allow_negative_numbers = true
    )]
    min_cluster_size: usize,
    /// hdbscan: the neighbourhood of the core distance, the rank itself counted.
    #[arg(
        long,
        default_value_t = HdbscanParams::default().min_samples,
        value_name = "M",
        allow_negative_numbers = true
    )]
    min_samples: usize,
    /// ssstree: a new center opens at this share of twice the cluster's radius.
    #[arg(
        long,
        default_value_t = SsstreeParams::default().alpha,
        value_name = "A",
        allow_negative_numbers = true
    )]
    alpha: f64,
    /// ssstree: clusters with fewer items are not split.
    #[arg(
        long,
        default_value_t = SsstreeParams::default().min_children,
        value_name = "M",
        allow_negative_numbers = true
    )]
    min_children: usize,
    /// spectral, kmeans: one Gaussian kernel scale for every rank, in the matrix's unit
    /// [default: each rank's distance to its --scale-neighbour-th nearest rank].
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    scale: Option<f64>,
    /// spectral, kmeans: the neighbour whose distance is a rank's kernel scale (local scaling,
    /// Zelnik-Manor and Perona).
    #[arg(
        long,
        default_value_t = 7,
        value_name = "N",
        allow_negative_numbers = true
    )]
    scale_neighbour: usize,
    /// Try N values of the algorithm's main parameter across its range (the thesis's linear
    /// search: components --threshold and dbscan --eps between the least and largest distance,
    /// ssstree --alpha in (0, 5), kmedoids, agglomerative, spectral and kmeans --k in 2..=--max-k, hdbscan
    /// --min-cluster-size in 2..=P/2) and keep the value whose top-level partition has the best
    /// separation, as `auto` measures it.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub search: Option<usize>,
}

/// The `--algo` choices, with their help, from the clustering crate's registry.
fn algo_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        lgate_cluster::methods::METHODS
            .iter()
            .map(|m| clap::builder::PossibleValue::new(m.name).help(described(m.description))),
    )
}

/// A method's description with each `{field}` named by its flag.
fn described(description: &str) -> String {
    Param::ALL.iter().fold(description.to_string(), |d, &p| {
        d.replace(&format!("{{{}}}", p.field()), &flag(p))
    })
}

/// The flag of `cluster` that sets a method parameter (clap names it from the field).
pub fn flag(p: Param) -> String {
    crate::knob_names::long(p.field())
}

/// A clustering's error as `cluster` says it: each method parameter named by its flag.
pub fn said(e: ClusteringError) -> anyhow::Error {
    match e {
        ClusteringError::Param(e) => anyhow::anyhow!(param_said(&e)),
        ClusteringError::ParamFor { input, error } => {
            anyhow::anyhow!("{input}: {}", param_said(&error))
        }
        ClusteringError::NotOnVectors => anyhow::anyhow!(
            "--space features runs --algo hdbscan, dbscan (petal-clustering), kmeans or \
             spectral (linfa); the other algorithms work on the matrix"
        ),
        e => e.into(),
    }
}

/// A method's parameter error, each parameter named by its flag.
pub fn param_said(e: &ParamError) -> String {
    match e {
        ParamError::UnknownMethod { .. } => e.to_string(),
        ParamError::Invalid { method, problem } => {
            format!("--algo {method} {}", problem_said(problem))
        }
        ParamError::NotTaken {
            param,
            takers,
            method,
        } => format!(
            "{} is a parameter of --algo {}; --algo {method} does not take it",
            flag(*param),
            listed(takers, |t| t.to_string(), "and")
        ),
    }
}

/// What is wrong with a parameter, the parameter named by its flag.
fn problem_said(p: &Problem) -> String {
    match *p {
        Problem::Needs(params) => format!("needs {}", listed(params, |p| flag(*p), "or")),
        Problem::AtLeast { param, least, was } => {
            format!("{} must be at least {least} (it was {was})", flag(param))
        }
        Problem::NotADistance { param, was } => format!(
            "{} {was} must be a positive distance (in the matrix's unit)",
            flag(param)
        ),
        Problem::NotAScale { param, was } => format!(
            "{} must be a positive number in the distances' unit (it was {was})",
            flag(param)
        ),
        Problem::MoreGroupsThanItems { param, k, items } => {
            format!("{} {k} is more groups than the {items} ranks", flag(param))
        }
        Problem::NothingToSearch => "has no parameter to search (--search needs one)".into(),
        Problem::SearchFoundNothing => "--search found nothing to try".into(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Space {
    /// The distance matrix.
    Matrix,
    /// The PLogP feature vectors of a run.
    Features,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LinkageArg {
    Single,
    Complete,
    Average,
    Ward,
}

impl MethodArgs {
    /// The method `--algo` names with the parameters its flags give; an error for a flag
    /// without a default that the method does not read (it would be ignored without a word).
    pub fn method(&self) -> Result<Method, ParamError> {
        let mut method = Method::named(&self.algo)?;
        match &mut method {
            Method::Auto(p) => {
                p.min_ratio = self.min_ratio;
                p.min_gap = self.min_gap;
            }
            Method::Hdbscan(p) => {
                p.min_cluster_size = self.min_cluster_size;
                p.min_samples = self.min_samples;
            }
            Method::Agglomerative(p) => {
                p.linkage = match self.linkage {
                    LinkageArg::Single => Linkage::Single,
                    LinkageArg::Complete => Linkage::Complete,
                    LinkageArg::Average => Linkage::Average,
                    LinkageArg::Ward => Linkage::Ward,
                };
                p.k = self.k;
                p.height = self.height;
                p.max_k = self.max_k;
            }
            Method::Components(p) => p.threshold = self.threshold,
            Method::Dbscan(p) => {
                p.eps = self.eps;
                p.min_points = self.min_points;
            }
            Method::Kmedoids(p) => {
                p.k = self.k;
                p.max_k = self.max_k;
            }
            Method::Ssstree(p) => {
                p.alpha = self.alpha;
                p.min_children = self.min_children;
            }
            Method::Spectral(p) | Method::Kmeans(p) => {
                *p = p
                    .clone()
                    .k(self.k)
                    .max_k(self.max_k)
                    .scale(match self.scale {
                        Some(s) => KernelScale::Fixed(s),
                        None => KernelScale::Neighbour(self.scale_neighbour),
                    });
            }
        }
        lgate_cluster::methods::refuse_unread(&method, &self.given())?;
        Ok(method)
    }

    /// The parameters without a default that the flags give.
    fn given(&self) -> Vec<Param> {
        [
            (Param::K, self.k.is_some()),
            (Param::Height, self.height.is_some()),
            (Param::Threshold, self.threshold.is_some()),
            (Param::Eps, self.eps.is_some()),
            (Param::Scale, self.scale.is_some()),
        ]
        .into_iter()
        .filter_map(|(p, given)| given.then_some(p))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        method: MethodArgs,
    }

    /// `report`, `diff` and `plot` look up the clustering `cluster` stored with its defaults by
    /// the library's defaults: the flags' defaults must be those, for every method.
    #[test]
    fn the_flags_defaults_are_the_librarys() {
        let flags = Flags::parse_from(["cluster"]);
        assert_eq!(flags.method.method(), Ok(Method::default()));
        assert_eq!(flags.method.algo, "auto");
        assert_eq!(flags.method.space, Space::Matrix);
        for m in lgate_cluster::methods::METHODS {
            let flags = Flags::parse_from(["cluster", "--algo", m.name]);
            assert_eq!(flags.method.method(), Ok((m.default)()), "{}", m.name);
        }
    }

    /// Every method parameter is named by a flag `cluster` has, and every description's
    /// parameters by theirs.
    #[test]
    fn every_parameter_has_its_flag() {
        use clap::CommandFactory;
        let command = Flags::command();
        let longs: Vec<String> = (command.get_arguments())
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect();
        for p in Param::ALL {
            assert!(longs.contains(&flag(p)), "{p}: {}", flag(p));
        }
        for m in lgate_cluster::methods::METHODS {
            assert!(!described(m.description).contains('{'), "{}", m.name);
        }
        assert_eq!(
            described(
                lgate_cluster::methods::spec("agglomerative")
                    .unwrap()
                    .description
            ),
            "Average, single, complete or Ward linkage, cut by --k or --height"
        );
    }

    #[test]
    fn a_parameter_error_names_the_flags() {
        let flags = Flags::parse_from(["cluster", "--algo", "agglomerative"]);
        let e = flags.method.method().unwrap().checked().unwrap_err();
        assert_eq!(param_said(&e), "--algo agglomerative needs --k or --height");
        let flags = Flags::parse_from(["cluster", "--k", "3"]);
        let e = flags.method.method().unwrap_err();
        assert_eq!(
            param_said(&e),
            "--k is a parameter of --algo agglomerative, kmedoids, spectral and kmeans; \
             --algo auto does not take it"
        );
    }

    /// Each flag reaches the parameter of its name in the method it is given to.
    #[test]
    fn the_flags_reach_their_methods() {
        use lgate_cluster::methods::{AgglomerativeParams, DbscanParams};
        let flags = Flags::parse_from([
            "cluster",
            "--algo",
            "agglomerative",
            "--k",
            "3",
            "--linkage",
            "ward",
        ]);
        assert_eq!(
            flags.method.method(),
            Ok(Method::Agglomerative(AgglomerativeParams {
                linkage: Linkage::Ward,
                k: Some(3),
                ..AgglomerativeParams::default()
            }))
        );
        let flags = Flags::parse_from([
            "cluster",
            "--algo",
            "dbscan",
            "--eps",
            "2.5",
            "--min-points",
            "3",
        ]);
        assert_eq!(
            flags.method.method(),
            Ok(Method::Dbscan(DbscanParams {
                eps: Some(2.5),
                min_points: 3
            }))
        );
        let flags =
            Flags::parse_from(["cluster", "--algo", "kmeans", "--scale", "0.5", "--k", "2"]);
        let Ok(Method::Kmeans(p)) = flags.method.method() else {
            panic!("kmeans")
        };
        assert_eq!(
            p,
            lgate_cluster::spectral::SpectralParams::new()
                .k(Some(2))
                .scale(KernelScale::Fixed(0.5))
        );
        let flags = Flags::parse_from(["cluster", "--min-ratio", "1.5"]);
        assert_eq!(
            flags
                .method
                .method()
                .ok()
                .as_ref()
                .and_then(Method::auto)
                .map(|p| p.min_ratio),
            Some(1.5)
        );
    }
}
