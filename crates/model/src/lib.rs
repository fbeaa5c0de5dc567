//! The description of a simulated machine: its levels, how ranks are placed on them, the PLogP
//! parameters of a link between two ranks by the level at which they part, and the noise and
//! artifacts of measuring it. Written and read as JSON (`lgate-plogp-model`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

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

/// The PLogP parameters of a link, in microseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// L.
    pub latency_us: f64,
    /// g(m) in the eager protocol.
    pub g_us: Piecewise,
    /// o_s(m) in the eager protocol.
    pub os_us: Piecewise,
    /// o_r(m).
    pub or_us: Piecewise,
    /// What the rendezvous handshake adds to o_s(m) and g(m) above the eager limit.
    pub rendezvous_us: f64,
    /// The sigma of a fixed log-normal factor each pair of items parting here draws once (0:
    /// every pair alike): cores of one CCD that sit farther apart on its ring or mesh.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spread: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Link {
    /// A link whose g, o_s and o_r grow linearly: a fixed cost plus bytes over a bandwidth
    /// (bytes per microsecond, that is MB/s).
    pub fn linear(
        latency_us: f64,
        (g0, g_bw): (f64, f64),
        (os0, os_bw): (f64, f64),
        (or0, or_bw): (f64, f64),
        rendezvous_us: f64,
    ) -> Link {
        let line = |a: f64, bw: f64| Piecewise(vec![(0.0, a), (1048576.0, a + 1048576.0 / bw)]);
        Link {
            latency_us,
            g_us: line(g0, g_bw),
            os_us: line(os0, os_bw),
            or_us: line(or0, or_bw),
            rendezvous_us,
            spread: 0.0,
        }
    }

    /// The link with pairs spread by a fixed log-normal factor of `sigma` each.
    pub fn spread(mut self, sigma: f64) -> Link {
        self.spread = sigma;
        self
    }

    /// The true (noise-free) parameters at `m` bytes, microseconds.
    pub fn at(&self, m: usize, eager_limit: usize) -> TrueParams {
        let x = m as f64;
        let step = if m > eager_limit {
            self.rendezvous_us
        } else {
            0.0
        };
        let g = self.g_us.at(x) + step;
        let g0 = self.g_us.at(0.0);
        TrueParams {
            rtt: 2.0 * self.latency_us + g + g0,
            os: self.os_us.at(x) + step,
            or: self.or_us.at(x),
            g,
        }
    }
}

/// Noise-free parameters of a link at one size, microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrueParams {
    /// RTT(m) = 2 L + g(m) + g(0) (m bytes out, an empty reply back).
    pub rtt: f64,
    /// o_s(m).
    pub os: f64,
    /// o_r(m).
    pub or: f64,
    /// g(m).
    pub g: f64,
}

/// A piecewise-linear function of the message size: points (bytes, microseconds), ascending,
/// extended beyond the last point along the last segment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Piecewise(pub Vec<(f64, f64)>);

impl Piecewise {
    /// The value at `x` bytes.
    pub fn at(&self, x: f64) -> f64 {
        let p = &self.0;
        match p.len() {
            0 => 0.0,
            1 => p[0].1,
            n => {
                let k = p.partition_point(|&(px, _)| px <= x).clamp(1, n - 1);
                let ((x0, y0), (x1, y1)) = (p[k - 1], p[k]);
                y0 + (y1 - y0) * (x - x0) / (x1 - x0)
            }
        }
    }
}

/// Noise of every sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Noise {
    /// The sigma of multiplicative log-normal noise (0: none).
    pub sigma: f64,
    /// The jitter of a batch of messages (operating-system noise), microseconds: it decides
    /// how many messages link saturation needs before its estimate settles, and so the
    /// estimated run time; the simulated values do not depend on it.
    #[serde(default = "default_batch_jitter")]
    pub batch_jitter_us: f64,
}

fn default_batch_jitter() -> f64 {
    1.0
}

/// Measurement artifacts, each off when absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Artifacts {
    /// The first samples of a pair's first size are slow.
    #[serde(default)]
    pub warmup: Option<Warmup>,
    /// Single samples much slower than the rest (operating-system noise).
    #[serde(default)]
    pub spikes: Option<Spikes>,
    /// Ranks 0 and 1 measure slow (section 5.1.1).
    #[serde(default)]
    pub first_pair: Option<Factor>,
    /// Diagonal bands: pairs (i, i + d) for a few offsets d measure slow (section 5.1.2).
    #[serde(default)]
    pub bands: Option<Counted>,
    /// A few random pairs measure slow.
    #[serde(default)]
    pub slow_pairs: Option<Counted>,
    /// Every pair with a rank on one node measures slow.
    #[serde(default)]
    pub slow_node: Option<SlowNode>,
}

/// The names of the artifacts, as `--artifacts` takes them.
pub const ARTIFACTS: [&str; 6] = [
    "warmup",
    "spikes",
    "first-pair",
    "bands",
    "slow-pairs",
    "slow-node",
];

/// An artifact name that is not one of [`ARTIFACTS`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown artifact `{0}`: expected none, all, or some of {list}", list = ARTIFACTS.join(", "))]
pub struct UnknownArtifact(pub String);

impl Artifacts {
    /// Every artifact, with the parameters this build uses when a model does not give them.
    pub fn all() -> Artifacts {
        Artifacts {
            warmup: Some(Warmup {
                samples: 4,
                factor: 3.0,
            }),
            spikes: Some(Spikes {
                rate: 0.02,
                factor: 4.0,
            }),
            first_pair: Some(Factor { factor: 1.6 }),
            bands: Some(Counted {
                count: 3,
                factor: 1.08,
            }),
            slow_pairs: Some(Counted {
                count: 4,
                factor: 2.5,
            }),
            slow_node: Some(SlowNode {
                node: None,
                count: 1,
                factor: 1.4,
            }),
        }
    }

    /// Keeps only the artifacts named in `names` (see [`ARTIFACTS`]), with this model's
    /// parameters where it has them and [`Artifacts::all`]'s otherwise.
    pub fn only(&self, names: &[String]) -> Result<Artifacts, UnknownArtifact> {
        if let Some(n) = names.iter().find(|n| !ARTIFACTS.contains(&n.as_str())) {
            return Err(UnknownArtifact(n.clone()));
        }
        let on = |name: &str| names.iter().any(|n| n == name);
        let d = Artifacts::all();
        Ok(Artifacts {
            warmup: on("warmup").then(|| self.warmup.or(d.warmup)).flatten(),
            spikes: on("spikes").then(|| self.spikes.or(d.spikes)).flatten(),
            first_pair: on("first-pair")
                .then(|| self.first_pair.or(d.first_pair))
                .flatten(),
            bands: on("bands").then(|| self.bands.or(d.bands)).flatten(),
            slow_pairs: on("slow-pairs")
                .then(|| self.slow_pairs.or(d.slow_pairs))
                .flatten(),
            slow_node: on("slow-node")
                .then(|| self.slow_node.or(d.slow_node))
                .flatten(),
        })
    }

    /// The names of the artifacts that are on.
    pub fn names(&self) -> Vec<&'static str> {
        let on = [
            self.warmup.is_some(),
            self.spikes.is_some(),
            self.first_pair.is_some(),
            self.bands.is_some(),
            self.slow_pairs.is_some(),
            self.slow_node.is_some(),
        ];
        ARTIFACTS
            .iter()
            .zip(on)
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect()
    }
}

/// Slow first samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Warmup {
    /// How many samples are slow.
    pub samples: usize,
    /// How much slower the first is; the following ones approach 1 linearly.
    pub factor: f64,
}

/// Rare slow samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spikes {
    /// The probability of a sample being a spike.
    pub rate: f64,
    /// How much slower a spike is.
    pub factor: f64,
}

/// A slowdown.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Factor {
    /// How much slower.
    pub factor: f64,
}

/// A number of slow things.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counted {
    /// How many.
    pub count: usize,
    /// How much slower.
    pub factor: f64,
}

/// Slow nodes: every pair with a rank on one of them measures slow.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlowNode {
    /// The first slow node (0-based, in machine order); the others follow it. Chosen from the
    /// seed when absent.
    #[serde(default)]
    pub node: Option<usize>,
    /// How many nodes are slow.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub count: usize,
    /// How much slower their pairs are.
    pub factor: f64,
}

fn one() -> usize {
    1
}

fn is_one(n: &usize) -> bool {
    *n == 1
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
    #[error("`{0}` in --machine: expected LEVEL=FANOUT, as in node=4,socket=2,core=16")]
    MachinePart(String),
    /// A `--machine` fan-out that is not a whole number.
    #[error("`{fanout}` in --machine: `{word}` is not a whole number of {level}s (a fan-out is N, or runs such as 2x8/4x2 taken in turn)")]
    MachineNumber {
        /// The fan-out.
        fanout: String,
        /// The word that is not a number.
        word: String,
        /// The level.
        level: String,
    },
    /// A `--machine` run of too many items.
    #[error("`{0}` in --machine: too many")]
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

impl Link {
    fn check(&self) -> Result<(), String> {
        let finite = |x: f64| x.is_finite() && x >= 0.0;
        if !finite(self.latency_us) || !finite(self.rendezvous_us) {
            return Err("latency_us and rendezvous_us must be finite and not negative".into());
        }
        if !finite(self.spread) || self.spread > 1.0 {
            return Err("spread must be between 0 and 1".into());
        }
        for (name, f) in [
            ("g_us", &self.g_us),
            ("os_us", &self.os_us),
            ("or_us", &self.or_us),
        ] {
            if f.0.is_empty() {
                return Err(format!("{name} has no points"));
            }
            if f.0.iter().any(|&(x, y)| !finite(x) || !finite(y)) {
                return Err(format!("{name}: points must be finite and not negative"));
            }
            if f.0.windows(2).any(|w| w[1].0 <= w[0].0) {
                return Err(format!("{name}: sizes must ascend"));
            }
            // Extended past the last point, the function must stay non-negative up to 1 GiB.
            if f.at((1u64 << 30) as f64) < 0.0 {
                return Err(format!("{name} falls below zero at large sizes"));
            }
        }
        Ok(())
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
