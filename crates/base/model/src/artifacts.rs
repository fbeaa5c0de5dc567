//! The noise and artifacts of measuring a simulated machine: repetitions' spread, warm-up,
//! spikes, slow pairs and nodes, bands.

use serde::{Deserialize, Serialize};

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
