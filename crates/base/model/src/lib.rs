//! The description of a simulated machine: its levels, how ranks are placed on them, the PLogP
//! parameters of a link between two ranks by the level at which they part, and the noise and
//! artifacts of measuring it. Written and read as JSON (`lgate-plogp-model`).

use lgate_knobs::Knob;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

mod artifacts;
mod link;

pub use artifacts::*;
pub use link::*;

/// The value of a model file's `format` field.
pub const MODEL_FORMAT: &str = "lgate-plogp-model";
/// The version of model files this build reads and writes.
pub const MODEL_VERSION: u64 = 1;

/// A simulated machine and how measuring it behaves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineModel {
    /// Always [`MODEL_FORMAT`].
    pub format: String,
    /// [`MODEL_VERSION`].
    pub version: u64,
    /// A short name, such as `betzy`.
    pub name: String,
    /// Where the figures come from.
    #[serde(default)]
    pub description: String,
    /// The levels from the top down, each with its fan-out.
    pub levels: Vec<Level>,
    /// How ranks are dealt to cores.
    pub placement: Placement,
    /// Messages above this size (bytes) use the rendezvous protocol.
    pub eager_limit_bytes: usize,
    /// The link between two ranks, by the name of the level at which they part: `core` for
    /// two cores of one socket, `socket` for two sockets of one node, `node` for two nodes of
    /// one switch, and so on.
    pub links: BTreeMap<String, Link>,
    /// Noise of every sample.
    pub noise: Noise,
    /// Measurement artifacts; those left out (null) are off.
    #[serde(default)]
    pub artifacts: Artifacts,
    /// Repetitions per measurement unless given.
    pub reps: usize,
}

/// One level of the machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Level {
    /// Its name: `switch`, `node`, `socket`, `core`, ...
    pub name: String,
    /// How many of it each item of the level above holds.
    pub fanout: Fanout,
}

/// How many items of a level each item of the level above holds: the same number for all, or
/// a list taken in turn (item k of the level above holds `list[k % len]`), for machines whose
/// parts differ: a hybrid CPU's 8 P-cores of 2 threads and 2 E-core clusters of 4
/// (`cpu=2x8/4x2`), or a node with fewer cores (`core=16x7/8`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Fanout {
    /// The same number under every item above.
    Each(usize),
    /// A number per item above, in turn.
    InTurn(Vec<usize>),
}

impl Fanout {
    /// How many items the `k`-th item of the level above holds.
    pub fn of(&self, k: usize) -> usize {
        match self {
            Fanout::Each(n) => *n,
            Fanout::InTurn(list) => list.get(k % list.len().max(1)).copied().unwrap_or(0),
        }
    }

    /// Whether some item holds none, or the list is empty.
    fn has_zero(&self) -> bool {
        match self {
            Fanout::Each(n) => *n == 0,
            Fanout::InTurn(list) => list.is_empty() || list.contains(&0),
        }
    }
}

impl From<usize> for Fanout {
    fn from(n: usize) -> Self {
        Fanout::Each(n)
    }
}

impl fmt::Display for Fanout {
    /// `16`, or runs written `NxCOUNT` separated by `/`: `2x8/4x2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fanout::Each(n) => write!(f, "{n}"),
            Fanout::InTurn(list) => {
                let mut runs: Vec<(usize, usize)> = Vec::new();
                for &n in list {
                    match runs.last_mut() {
                        Some((m, count)) if *m == n => *count += 1,
                        _ => runs.push((n, 1)),
                    }
                }
                let parts: Vec<String> = runs
                    .iter()
                    .map(|&(n, c)| {
                        if c == 1 {
                            n.to_string()
                        } else {
                            format!("{n}x{c}")
                        }
                    })
                    .collect();
                f.write_str(&parts.join("/"))
            }
        }
    }
}

/// How ranks are dealt to cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Consecutive ranks on consecutive cores: a node's ranks fill its first socket first.
    Block,
    /// Nodes filled in turn, and within a node consecutive ranks dealt round-robin over the
    /// level below the node (sockets): Open MPI's and Intel MPI's habit.
    RoundRobin,
    /// A seeded random permutation of the cores.
    Random,
}

impl Placement {
    /// The name users type.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Block => "block",
            Placement::RoundRobin => "round-robin",
            Placement::Random => "random",
        }
    }
}

/// A placement name that is not one of block, round-robin and random.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown placement `{0}`: expected block, round-robin or random")]
pub struct UnknownPlacement(pub String);

impl FromStr for Placement {
    type Err = UnknownPlacement;

    fn from_str(s: &str) -> Result<Self, UnknownPlacement> {
        [Placement::Block, Placement::RoundRobin, Placement::Random]
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownPlacement(s.to_string()))
    }
}

/// What is wrong with a model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The model file could not be read.
    #[error("{path}: {message}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The model file is not JSON.
    #[error("{path}: not JSON: {message}")]
    NotJson {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// The model file's `format` is not [`MODEL_FORMAT`].
    #[error("{path}: `format` is {}, expected \"{MODEL_FORMAT}\"", found.as_ref().map_or("missing".to_string(), |f| format!("{f:?}")))]
    Format {
        /// The file.
        path: PathBuf,
        /// Its `format`, if it has one.
        found: Option<String>,
    },
    /// The model file's fields do not make a model.
    #[error("{path}: {message}")]
    Fields {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// The model file describes no machine.
    #[error("{path}: {problem}")]
    InFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with its machine.
        problem: Box<ModelError>,
    },
    /// A model of another version.
    #[error("model version {0} is not supported (this build reads version {MODEL_VERSION})")]
    Version(u64),
    /// No levels.
    #[error("the machine has no levels")]
    NoLevels,
    /// A level of fan-out 0.
    #[error("level `{0}` has fan-out 0")]
    ZeroFanout(String),
    /// A level named twice.
    #[error("level `{0}` appears twice")]
    LevelTwice(String),
    /// A level name of other characters than letters, digits, - and _.
    #[error("level name `{0}`: use letters, digits, - and _")]
    LevelName(String),
    /// A level without a link.
    #[error("no link for level `{0}`: `links.{0}` gives the parameters between two ranks that part at that level")]
    NoLink(String),
    /// A link's parameters are wrong.
    #[error("links.{level}: {problem}")]
    Link {
        /// The link's level.
        level: String,
        /// What is wrong.
        problem: String,
    },
    /// Too few or too many ranks.
    #[error("the machine must have between 2 and 1048576 ranks")]
    Ranks,
    /// Batch jitter negative or not finite.
    #[error("noise.batch_jitter_us must be finite and not negative")]
    Jitter,
    /// Noise sigma out of range.
    #[error("noise.sigma {0} is not between 0 and 2")]
    Sigma(f64),
    /// No repetitions.
    #[error("reps must be at least 1")]
    Reps,
    /// An artifact that speeds up.
    #[error("artifact factor {0} must be at least 1 (artifacts slow down)")]
    ArtifactFactor(f64),
    /// A spike rate that is not a probability.
    #[error("spike rate {0} is not a probability")]
    SpikeRate(f64),
    /// No slow node, or all of them.
    #[error(
        "{count} slow node(s) on a machine of {nodes} node(s): at least one, and fewer than all"
    )]
    SlowNodes {
        /// Slow nodes asked for.
        count: usize,
        /// Nodes of the machine.
        nodes: usize,
    },
    /// Slow nodes past the machine's last.
    #[error("the slow nodes are {first} to {last}, but the machine has {nodes} node(s)")]
    SlowNodesPast {
        /// The first slow node.
        first: usize,
        /// The last slow node.
        last: usize,
        /// Nodes of the machine.
        nodes: usize,
    },
    /// A `--machine` part that is not `LEVEL=FANOUT`.
    #[error("`{0}` in {machine}: expected LEVEL=FANOUT, as in node=4,socket=2,core=16", machine = Knob::Machine)]
    MachinePart(String),
    /// A `--machine` fan-out that is not a whole number.
    #[error("`{fanout}` in {machine}: `{word}` is not a whole number of {level}s (a fan-out is N, or runs such as 2x8/4x2 taken in turn)", machine = Knob::Machine)]
    MachineNumber {
        /// The fan-out.
        fanout: String,
        /// The word that is not a number.
        word: String,
        /// The level.
        level: String,
    },
    /// A `--machine` run of too many items.
    #[error("`{0}` in {machine}: too many", machine = Knob::Machine)]
    MachineTooMany(String),
}

/// The one field of a model file read before the rest: which format it claims.
#[derive(Deserialize)]
struct FormatField {
    format: Option<String>,
}

impl MachineModel {
    /// Reads and checks a model file.
    pub fn read(path: &Path) -> Result<MachineModel, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|e| ModelError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Self::parse(&text, path)
    }

    /// Checks the text of a model file; `path` names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<MachineModel, ModelError> {
        let path = path.to_path_buf();
        let probe: FormatField = serde_json::from_str(text).map_err(|e| ModelError::NotJson {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if probe.format.as_deref() != Some(MODEL_FORMAT) {
            return Err(ModelError::Format {
                path,
                found: probe.format,
            });
        }
        let model: MachineModel = serde_json::from_str(text).map_err(|e| ModelError::Fields {
            path: path.clone(),
            message: e.to_string(),
        })?;
        model.check().map_err(|e| ModelError::InFile {
            path,
            problem: Box::new(e),
        })?;
        Ok(model)
    }

    /// The model as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("models serialise") + "\n"
    }

    /// The number of ranks: the items of the last level.
    pub fn ranks(&self) -> usize {
        self.item_counts().last().copied().unwrap_or(0)
    }

    /// How many items each level has in the whole machine (saturating at `usize::MAX`).
    pub fn item_counts(&self) -> Vec<usize> {
        let mut counts = Vec::with_capacity(self.levels.len());
        let mut above = 1usize;
        for l in &self.levels {
            let n = match &l.fanout {
                Fanout::Each(n) => above.saturating_mul(*n),
                Fanout::InTurn(_) if above <= MAX_ITEMS => {
                    (0..above).fold(0usize, |acc, k| acc.saturating_add(l.fanout.of(k)))
                }
                Fanout::InTurn(list) => {
                    above.saturating_mul(list.iter().copied().min().unwrap_or(0))
                }
            };
            counts.push(n);
            above = n;
        }
        counts
    }

    /// Replaces the levels by a description such as `switch=2,node=4,socket=2,core=16`.
    pub fn with_machine(mut self, description: &str) -> Result<Self, ModelError> {
        self.levels = parse_levels(description)?;
        self.check()?;
        Ok(self)
    }

    /// Checks that the model describes a machine: levels with fan-outs, a link for each level
    /// with finite, non-negative, ascending parameters, and sane noise.
    pub fn check(&self) -> Result<(), ModelError> {
        if self.version != MODEL_VERSION {
            return Err(ModelError::Version(self.version));
        }
        if self.levels.is_empty() {
            return Err(ModelError::NoLevels);
        }
        let mut seen = std::collections::BTreeSet::new();
        for l in &self.levels {
            if l.fanout.has_zero() {
                return Err(ModelError::ZeroFanout(l.name.clone()));
            }
            if !seen.insert(l.name.as_str()) {
                return Err(ModelError::LevelTwice(l.name.clone()));
            }
            if l.name.is_empty()
                || !l
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(ModelError::LevelName(l.name.clone()));
            }
            let Some(link) = self.links.get(&l.name) else {
                return Err(ModelError::NoLink(l.name.clone()));
            };
            link.check().map_err(|problem| ModelError::Link {
                level: l.name.clone(),
                problem,
            })?;
        }
        if !self.item_counts().iter().all(|&n| n <= MAX_ITEMS) || self.ranks() < 2 {
            return Err(ModelError::Ranks);
        }
        if !(self.noise.batch_jitter_us >= 0.0 && self.noise.batch_jitter_us.is_finite()) {
            return Err(ModelError::Jitter);
        }
        if !(self.noise.sigma >= 0.0 && self.noise.sigma <= 2.0) {
            return Err(ModelError::Sigma(self.noise.sigma));
        }
        if self.reps == 0 {
            return Err(ModelError::Reps);
        }
        let a = &self.artifacts;
        let factors = [
            a.warmup.map(|w| w.factor),
            a.spikes.map(|s| s.factor),
            a.first_pair.map(|f| f.factor),
            a.bands.map(|b| b.factor),
            a.slow_pairs.map(|s| s.factor),
            a.slow_node.map(|s| s.factor),
        ];
        if let Some(f) = factors
            .iter()
            .flatten()
            .find(|f| !(f.is_finite() && **f >= 1.0))
        {
            return Err(ModelError::ArtifactFactor(*f));
        }
        if let Some(s) = a.spikes {
            if !(0.0..=1.0).contains(&s.rate) {
                return Err(ModelError::SpikeRate(s.rate));
            }
        }
        if let Some(s) = a.slow_node {
            let nodes = self.node_count();
            if s.count == 0 || (nodes >= 2 && s.count >= nodes) || (nodes < 2 && s.count > 1) {
                return Err(ModelError::SlowNodes {
                    count: s.count,
                    nodes,
                });
            }
            if let Some(k) = s.node {
                if k + s.count > nodes {
                    return Err(ModelError::SlowNodesPast {
                        first: k,
                        last: k + s.count - 1,
                        nodes,
                    });
                }
            }
        }
        Ok(())
    }

    /// The index of the node level (`node` or `host`), if the machine has one.
    pub fn node_level(&self) -> Option<usize> {
        self.levels
            .iter()
            .position(|l| l.name == "node" || l.name == "host")
    }

    /// How many nodes the machine has (1 without a node level).
    pub fn node_count(&self) -> usize {
        match self.node_level() {
            Some(k) => self.item_counts()[k],
            None => 1,
        }
    }
}

/// The most items a level may have (the most ranks a machine may have).
const MAX_ITEMS: usize = 1 << 20;

/// Parses `switch=2,node=4,socket=2,core=16`; a fan-out may be a list taken in turn over the
/// items of the level above, with `NxCOUNT` for runs: `cluster=10,cpu=2x8/4x2`.
pub fn parse_levels(description: &str) -> Result<Vec<Level>, ModelError> {
    description
        .split(',')
        .map(|part| {
            let (name, n) = part
                .split_once('=')
                .ok_or_else(|| ModelError::MachinePart(part.to_string()))?;
            let name = name.trim();
            let number = |x: &str| {
                x.trim()
                    .parse::<usize>()
                    .map_err(|_| ModelError::MachineNumber {
                        fanout: n.to_string(),
                        word: x.to_string(),
                        level: name.to_string(),
                    })
            };
            let fanout = if n.contains('/') || n.contains('x') {
                let mut list = Vec::new();
                for run in n.split('/') {
                    let (each, count) = match run.split_once('x') {
                        Some((e, c)) => (number(e)?, number(c)?),
                        None => (number(run)?, 1),
                    };
                    if count > MAX_ITEMS {
                        return Err(ModelError::MachineTooMany(run.to_string()));
                    }
                    list.extend(std::iter::repeat_n(each, count));
                }
                Fanout::InTurn(list)
            } else {
                Fanout::Each(number(n)?)
            };
            Ok(Level {
                name: name.to_string(),
                fanout,
            })
        })
        .collect()
}

impl fmt::Display for MachineModel {
    /// `switch=2,node=4,socket=2,core=16`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .levels
            .iter()
            .map(|l| format!("{}={}", l.name, l.fanout))
            .collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piecewise_interpolates_and_extends() {
        let f = Piecewise(vec![(0.0, 1.0), (10.0, 2.0), (20.0, 4.0)]);
        assert_eq!(f.at(0.0), 1.0);
        assert_eq!(f.at(5.0), 1.5);
        assert_eq!(f.at(15.0), 3.0);
        assert_eq!(f.at(30.0), 6.0, "extended along the last segment");
        assert_eq!(Piecewise(vec![(0.0, 7.0)]).at(99.0), 7.0);
    }

    #[test]
    fn rendezvous_adds_a_step() {
        let link = Link::linear(1.0, (0.1, 1000.0), (0.2, 1000.0), (0.3, 1000.0), 2.0);
        let eager = link.at(1000, 1000);
        let rndv = link.at(1001, 1000);
        assert!((eager.g - 1.1).abs() < 1e-12);
        assert!((rndv.g - eager.g - 2.0).abs() < 0.01);
        assert!((rndv.os - eager.os - 2.0).abs() < 0.01);
        assert!((rndv.or - eager.or).abs() < 0.01);
        assert!(
            (link.at(0, 1000).rtt - (2.0 + 0.2)).abs() < 1e-12,
            "2 L + 2 g(0)"
        );
    }

    #[test]
    fn levels_parse_with_clear_errors() {
        let l = parse_levels("switch=2,node=4,socket=2,core=16").unwrap();
        assert_eq!(l.len(), 4);
        assert_eq!(
            l[3],
            Level {
                name: "core".into(),
                fanout: Fanout::Each(16)
            }
        );
        let e = parse_levels("node4").unwrap_err();
        assert_eq!(e, ModelError::MachinePart("node4".into()));
        assert!(e.to_string().contains("LEVEL=FANOUT"), "{e}");
        let e = parse_levels("node=q").unwrap_err();
        assert!(
            matches!(&e, ModelError::MachineNumber { word, level, .. } if word == "q" && level == "node"),
            "{e:?}"
        );
        assert!(e.to_string().contains("not a whole number"), "{e}");
        assert!(parse_levels("node=x")
            .unwrap_err()
            .to_string()
            .contains("not a whole number"));
    }

    #[test]
    fn fan_outs_of_zero_or_not_a_number_are_told() {
        assert!(parse_levels("core=2x0")
            .map(|l| l[0].fanout.has_zero())
            .unwrap());
        assert!(parse_levels("core=2xq")
            .unwrap_err()
            .to_string()
            .contains("not a whole number"));
    }

    #[test]
    fn artifacts_are_chosen_by_name() {
        let none = Artifacts::default();
        let some = none.only(&["bands".into(), "slow-node".into()]).unwrap();
        assert_eq!(some.names(), ["bands", "slow-node"]);
        assert!(none
            .only(&["gremlins".into()])
            .unwrap_err()
            .to_string()
            .contains("unknown artifact `gremlins`"));
        assert_eq!(Artifacts::all().names().len(), ARTIFACTS.len());
    }
}
