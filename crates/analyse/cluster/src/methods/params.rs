//! The methods' parameters, named by field: what is wrong with them, and the value a search
//! settles on. The binary names the flag that sets each [`Param`].

/// One parameter of a method, by the name of its field in the method's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Param {
    /// `min_ratio`.
    MinRatio,
    /// `min_gap`.
    MinGap,
    /// `linkage`.
    Linkage,
    /// `k`.
    K,
    /// `height`.
    Height,
    /// `threshold`.
    Threshold,
    /// `eps`.
    Eps,
    /// `min_points`.
    MinPoints,
    /// `max_k`.
    MaxK,
    /// `min_cluster_size`.
    MinClusterSize,
    /// `min_samples`.
    MinSamples,
    /// `alpha`.
    Alpha,
    /// `min_children`.
    MinChildren,
    /// `scale`.
    Scale,
    /// `scale_neighbour`.
    ScaleNeighbour,
}

impl Param {
    /// Every parameter.
    pub const ALL: [Param; 15] = [
        Param::MinRatio,
        Param::MinGap,
        Param::Linkage,
        Param::K,
        Param::Height,
        Param::Threshold,
        Param::Eps,
        Param::MinPoints,
        Param::MaxK,
        Param::MinClusterSize,
        Param::MinSamples,
        Param::Alpha,
        Param::MinChildren,
        Param::Scale,
        Param::ScaleNeighbour,
    ];

    /// The field's name in the methods' parameters.
    pub fn field(self) -> &'static str {
        match self {
            Param::MinRatio => "min_ratio",
            Param::MinGap => "min_gap",
            Param::Linkage => "linkage",
            Param::K => "k",
            Param::Height => "height",
            Param::Threshold => "threshold",
            Param::Eps => "eps",
            Param::MinPoints => "min_points",
            Param::MaxK => "max_k",
            Param::MinClusterSize => "min_cluster_size",
            Param::MinSamples => "min_samples",
            Param::Alpha => "alpha",
            Param::MinChildren => "min_children",
            Param::Scale => "scale",
            Param::ScaleNeighbour => "scale_neighbour",
        }
    }
}

impl std::fmt::Display for Param {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.field())
    }
}

/// `a`, `a or b`, `a, b or c`: the items named by `name`, joined with `last`.
pub fn listed<T>(items: &[T], name: impl Fn(&T) -> String, last: &str) -> String {
    let names: Vec<String> = items.iter().map(name).collect();
    match names.split_last() {
        Some((one, [])) => one.clone(),
        Some((one, rest)) => format!("{} {last} {one}", rest.join(", ")),
        None => String::new(),
    }
}

/// What is wrong with a method's parameters.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Problem {
    /// None of the parameters the method needs one of was given.
    #[error("needs {}", listed(.0, |p| p.to_string(), "or"))]
    Needs(&'static [Param]),
    /// A parameter below its least value.
    #[error("{param} must be at least {least} (it was {was})")]
    AtLeast {
        /// The parameter.
        param: Param,
        /// Its least value.
        least: f64,
        /// The value given.
        was: f64,
    },
    /// A distance that is zero, negative or not finite.
    #[error("{param} {was} must be a positive distance (in the matrix's unit)")]
    NotADistance {
        /// The parameter.
        param: Param,
        /// The value given.
        was: f64,
    },
    /// A kernel scale that is zero, negative or not finite.
    #[error("{param} must be a positive number in the distances' unit (it was {was})")]
    NotAScale {
        /// The parameter.
        param: Param,
        /// The value given.
        was: f64,
    },
    /// More groups asked for than there are items.
    #[error("{param} {k} is more groups than the {items} ranks")]
    MoreGroupsThanItems {
        /// The parameter (the number of groups).
        param: Param,
        /// The number asked for.
        k: usize,
        /// The items there are.
        items: usize,
    },
    /// A parameter search asked of a method that has none to search.
    #[error("has no parameter to search")]
    NothingToSearch,
    /// A parameter search whose every candidate was refused.
    #[error("found nothing to try in its search")]
    SearchFoundNothing,
}

/// A method that does not exist, or parameters it cannot use.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
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
    #[error("{method} {problem}")]
    Invalid {
        /// The method.
        method: &'static str,
        /// What is wrong.
        problem: Problem,
    },
    /// A parameter given to a method that does not read it (it would be ignored).
    #[error("{param} is a parameter of {}; {method} does not take it", listed(takers, |t| t.to_string(), "and"))]
    NotTaken {
        /// The parameter.
        param: Param,
        /// The methods that take it.
        takers: Vec<&'static str>,
        /// The method chosen.
        method: String,
    },
}

/// The value of a method's main parameter, as a search settled on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// The parameter.
    pub param: Param,
    /// Its value, written as the method reads it.
    pub value: String,
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} = {}", self.param, self.value)
    }
}

/// A distance parameter (`height`, `eps`, `threshold`): a positive number, or the error
/// naming it.
pub(super) fn positive_distance(
    method: &'static str,
    param: Param,
    x: f64,
) -> Result<f64, ParamError> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(ParamError::Invalid {
            method,
            problem: Problem::NotADistance { param, was: x },
        })
    }
}

/// Refuses a number of groups of zero or above the item count.
pub(super) fn check_k(
    method: &'static str,
    k: Option<usize>,
    items: usize,
) -> Result<(), ParamError> {
    let problem = match k {
        // 0 groups would put every rank in one.
        Some(0) => Problem::AtLeast {
            param: Param::K,
            least: 1.0,
            was: 0.0,
        },
        Some(k) if k > items => Problem::MoreGroupsThanItems {
            param: Param::K,
            k,
            items,
        },
        _ => return Ok(()),
    };
    Err(ParamError::Invalid { method, problem })
}
