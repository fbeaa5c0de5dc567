//! What the journal holds for each pair: the pair, and the result of its pair test (the
//! ping-pong's round trips, the PLogP procedures' timings), with the message sizes they are
//! measured at; and each test's parameters, as meta.json records them. The harness and the pair
//! tests write these; the derive stage and every reader read them.

use std::fmt;
use std::str::FromStr;

use lgate_stats::Summary;
use serde::{Deserialize, Serialize};

/// An unordered pair of ranks, stored with the sender `i` below the receiver `j`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Pair {
    /// The sender, the smaller rank.
    pub i: usize,
    /// The receiver, the larger rank.
    pub j: usize,
}

impl Pair {
    /// The pair of two different ranks, in either order.
    pub fn new(a: usize, b: usize) -> Self {
        assert_ne!(a, b, "a pair needs two ranks");
        Pair {
            i: a.min(b),
            j: a.max(b),
        }
    }

    /// Whether `rank` is one of the two.
    pub fn contains(&self, rank: usize) -> bool {
        self.i == rank || self.j == rank
    }
}

/// The round-trip times of one size, in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundTrips {
    /// Message size in bytes.
    pub size: usize,
    /// Round-trip time statistics, seconds.
    #[serde(flatten)]
    pub rtt: Summary,
}

/// The ping-pong result of one pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingPongResult {
    /// One entry per size, ascending.
    pub sizes: Vec<RoundTrips>,
}

/// The ping-pong test's parameters as a run records them (a staged run's screening test).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingPongParameters {
    /// The message sizes in bytes.
    pub sizes: Vec<usize>,
    /// Repetitions per size.
    pub reps: usize,
}

/// The parameters of the PLogP measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PLogPOptions {
    /// The base message sizes, ascending: 0 and powers of two up to the largest.
    pub sizes: Vec<usize>,
    /// Repetitions per size and procedure.
    pub reps: usize,
    /// The sender waits this many RTT(m) before timing the receive of o_r(m) (k).
    pub or_wait: f64,
    /// Relative tolerance of link saturation and of the adaptive refinement.
    pub epsilon: f64,
    /// g(m) by link saturation up to this size; derived from RTT above it.
    pub saturation_max_size: usize,
    /// The most messages one saturation batch sends.
    pub saturation_cap: usize,
    /// Samples of g(m) taken once saturation is reached.
    pub saturation_reps: usize,
    /// Measure midpoints where a size's values miss the linear interpolation of its neighbours.
    pub adaptive: bool,
    /// The most midpoints added per pair.
    pub adaptive_budget: usize,
    /// Midpoints stop when neighbouring sizes are this close (bytes).
    pub adaptive_min_gap: usize,
    /// Keep every repetition in the result.
    pub raw: bool,
    /// The pair test's time budget in seconds, shared evenly by the base sizes and their
    /// procedures: a procedure stops repeating (after at least 3 repetitions) and saturation
    /// stops doubling once its share is spent. `None`: every repetition, whatever it costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_s: Option<f64>,
}

impl PLogPOptions {
    /// Sizes 0 and 1 B to `max_size` in powers of two (`max_size` itself included).
    pub fn sizes_up_to(max_size: usize) -> Vec<usize> {
        let mut sizes = vec![0];
        let mut m = 1;
        while m < max_size {
            sizes.push(m);
            m *= 2;
        }
        if max_size > 0 {
            sizes.push(max_size);
        }
        sizes
    }

    /// The pair test's budget unless told otherwise, seconds.
    pub const DEFAULT_BUDGET_S: f64 = 0.3;

    /// The defaults of section 3.1.2 for sizes up to `max_size`: 32 repetitions, k = 1.3,
    /// epsilon 1 %, saturation up to 64 KiB and at most 37500 messages, adaptive on; and a
    /// budget of 0.3 s a pair.
    pub fn new(max_size: usize) -> Self {
        PLogPOptions {
            sizes: Self::sizes_up_to(max_size),
            reps: 32,
            or_wait: 1.3,
            epsilon: 0.01,
            saturation_max_size: 64 << 10,
            saturation_cap: 37_500,
            saturation_reps: 4,
            adaptive: true,
            adaptive_budget: 16,
            adaptive_min_gap: 32,
            raw: false,
            budget_s: Some(Self::DEFAULT_BUDGET_S),
        }
    }
}

/// What meta.json's test parameters say of an imported pair list or matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedParameters {
    /// The file imported.
    pub source: String,
    /// Its layout (`pairs`, `matrix`, ...).
    pub layout: String,
    /// Its ranks.
    pub ranks: usize,
    /// Its message sizes in bytes (`null` where it names none).
    pub sizes: Vec<Option<usize>>,
    /// The most repeats of one pair at any size.
    pub most_repeats_of_a_pair: usize,
    /// Whether it names the ranks' hosts.
    pub hosts_named: bool,
}

/// What meta.json's test parameters say of an imported mpiGraph run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MpiGraphParameters {
    /// The file imported.
    pub source: String,
    /// `mpigraph`.
    pub layout: String,
    /// Its ranks (one a host).
    pub ranks: usize,
    /// Its message size in bytes.
    pub message_bytes: usize,
    /// Its iterations.
    pub times: usize,
    /// Its window of messages in flight.
    pub window: usize,
    /// The table (`Send` or `Recv`) the distances come from.
    pub distance_from: String,
    /// The mean send bandwidth, MB/s.
    pub send_mean_mb_per_s: f64,
    /// The mean receive bandwidth, MB/s.
    pub recv_mean_mb_per_s: f64,
}

impl PingPongResult {
    /// The value a staged plan chooses its follow-up by: the median round trip at the largest
    /// size, in seconds.
    pub fn screening_value(&self) -> Option<f64> {
        self.sizes.last().map(|s| s.rtt.median)
    }

    /// The median round trip at the smallest size, in seconds, when the test had more than
    /// one size: the latency that tells apart what bandwidth does not (a non-blocking
    /// fabric's hops).
    pub fn smallest_screening_value(&self) -> Option<f64> {
        match self.sizes.as_slice() {
            [first, _, ..] => Some(first.rtt.median),
            _ => None,
        }
    }
}

/// g(m) found by link saturation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    /// Seconds per message once the link is saturated.
    #[serde(flatten)]
    pub gap: Summary,
    /// Messages per batch at saturation.
    pub messages: usize,
    /// Whether the per-message time settled within epsilon before the cap.
    pub converged: bool,
}

/// Every repetition of one size, seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RawSamples {
    /// RTT(m) samples.
    pub rtt: Vec<f64>,
    /// o_s(m) samples.
    pub os: Vec<f64>,
    /// o_r(m) samples.
    pub or: Vec<f64>,
    /// g(m) samples (saturation only).
    pub g: Vec<f64>,
}

/// What the PLogP procedures measured at one message size, in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeResult {
    /// Message size in bytes.
    pub size: usize,
    /// Round-trip time: m bytes out, an empty reply back.
    pub rtt: Summary,
    /// Send overhead: the time of a synchronous send.
    pub os: Summary,
    /// Receive overhead: the time of a receive whose message has arrived.
    pub or: Summary,
    /// The gap by link saturation (sizes up to the saturation limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub g: Option<Saturation>,
    /// Whether the adaptive refinement added this size.
    #[serde(default)]
    pub adaptive: bool,
    /// Every repetition, with `--raw`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<RawSamples>,
}

/// The PLogP measurement of one pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairMeasurement {
    /// The sender's clock overhead, subtracted from every timed sample.
    pub clock_overhead_s: f64,
    /// One entry per size, ascending.
    pub sizes: Vec<SizeResult>,
}

/// What one pair test measured of a pair: the result of one of the pair tests (in JSON, the
/// test's own record as it is: a PLogP measurement has the clock's overhead, a ping-pong result
/// has not).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PairResult {
    /// The PLogP procedures' timings.
    PLogP(PairMeasurement),
    /// The ping-pong's round trips.
    PingPong(PingPongResult),
}

impl PairResult {
    /// The test's name, as meta.json's `test.name` says it.
    pub fn test_name(&self) -> &'static str {
        match self {
            PairResult::PLogP(_) => "plogp",
            PairResult::PingPong(_) => "pingpong",
        }
    }

    /// The ping-pong result, if it is one.
    pub fn pingpong(&self) -> Option<&PingPongResult> {
        match self {
            PairResult::PingPong(r) => Some(r),
            PairResult::PLogP(_) => None,
        }
    }

    /// The PLogP measurement, if it is one.
    pub fn plogp(&self) -> Option<&PairMeasurement> {
        match self {
            PairResult::PLogP(m) => Some(m),
            PairResult::PingPong(_) => None,
        }
    }
}

impl<'de> Deserialize<'de> for PairResult {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        // The record once, read as the test its fields say it is, so that an error names that
        // test's field rather than "no variant matched".
        let record = serde_json::Value::deserialize(d)?;
        if record.get("clock_overhead_s").is_some() {
            PairMeasurement::deserialize(record)
                .map(PairResult::PLogP)
                .map_err(|e| D::Error::custom(format!("not a PLogP measurement: {e}")))
        } else {
            PingPongResult::deserialize(record)
                .map(PairResult::PingPong)
                .map_err(|e| D::Error::custom(format!("not a ping-pong result: {e}")))
        }
    }
}

impl From<PairMeasurement> for PairResult {
    fn from(m: PairMeasurement) -> Self {
        PairResult::PLogP(m)
    }
}

impl From<PingPongResult> for PairResult {
    fn from(r: PingPongResult) -> Self {
        PairResult::PingPong(r)
    }
}

/// Which statistic of the repetitions stands for a value in matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Estimator {
    /// The smallest kept repetition.
    Min,
    /// The 10th percentile.
    P10,
    /// The median (the default: robust to the slow outliers timing has).
    Median,
    /// The 90th percentile.
    P90,
    /// The mean.
    Mean,
}

impl Estimator {
    /// Every estimator.
    pub const ALL: [Estimator; 5] = [Self::Min, Self::P10, Self::Median, Self::P90, Self::Mean];

    /// Every estimator's name, as users type it.
    pub const NAMES: [&'static str; 5] = ["min", "p10", "median", "p90", "mean"];

    /// The estimator's name as users type it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Min => "min",
            Self::P10 => "p10",
            Self::Median => "median",
            Self::P90 => "p90",
            Self::Mean => "mean",
        }
    }

    /// The statistic of a summary.
    pub fn of(self, s: &Summary) -> f64 {
        match self {
            Self::Min => s.min,
            Self::P10 => s.p10,
            Self::Median => s.median,
            Self::P90 => s.p90,
            Self::Mean => s.mean,
        }
    }
}

impl fmt::Display for Estimator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An estimator name that is not one of [`Estimator::NAMES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown estimator `{0}`: expected min, p10, median, p90 or mean")]
pub struct UnknownEstimator(pub String);

impl FromStr for Estimator {
    type Err = UnknownEstimator;

    fn from_str(s: &str) -> Result<Self, UnknownEstimator> {
        Self::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| UnknownEstimator(s.to_string()))
    }
}

/// A message size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MessageSize(pub usize);

/// A message size that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// The text does not start with a whole number.
    #[error("`{0}` is not a size such as 64, 4KiB or 1MiB")]
    NotASize(String),
    /// The unit is not one of B, KiB, MiB, GiB.
    #[error("`{unit}` in `{text}` is not a size unit (B, KiB, MiB, GiB)")]
    Unit {
        /// The unit as written.
        unit: String,
        /// The whole text.
        text: String,
    },
    /// The size does not fit in memory addresses.
    #[error("`{0}` is too large")]
    TooLarge(String),
}

impl MessageSize {
    /// The sizes of a list, in bytes.
    pub fn bytes(sizes: &[MessageSize]) -> Vec<usize> {
        sizes.iter().map(|s| s.0).collect()
    }
}

impl fmt::Display for MessageSize {
    /// `0`, `100B`, `4KiB`, `1MiB`: the largest binary unit that divides the size.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        match n {
            0 => f.write_str("0"),
            n if n % (1 << 30) == 0 => write!(f, "{}GiB", n >> 30),
            n if n % (1 << 20) == 0 => write!(f, "{}MiB", n >> 20),
            n if n % (1 << 10) == 0 => write!(f, "{}KiB", n >> 10),
            n => write!(f, "{n}B"),
        }
    }
}

impl FromStr for MessageSize {
    type Err = SizeError;

    /// Parses `64`, `64B`, `4KiB`, `1MiB`, `1GiB` (also `k`, `K`, `KB`, `M`, `MB`: all powers
    /// of 1024).
    fn from_str(text: &str) -> Result<Self, SizeError> {
        let t = text.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (number, unit) = t.split_at(split);
        let number: usize = number
            .parse()
            .map_err(|_| SizeError::NotASize(text.to_string()))?;
        let factor: usize = match unit.trim() {
            "" | "B" | "b" => 1,
            "k" | "K" | "KB" | "KiB" | "kiB" => 1 << 10,
            "M" | "MB" | "MiB" => 1 << 20,
            "G" | "GB" | "GiB" => 1 << 30,
            other => {
                return Err(SizeError::Unit {
                    unit: other.to_string(),
                    text: text.to_string(),
                })
            }
        };
        number
            .checked_mul(factor)
            .map(MessageSize)
            .ok_or_else(|| SizeError::TooLarge(text.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_and_parse() {
        for (n, s) in [
            (0, "0"),
            (100, "100B"),
            (1024, "1KiB"),
            (65536, "64KiB"),
            (1 << 20, "1MiB"),
            (1536, "1536B"),
        ] {
            assert_eq!(MessageSize(n).to_string(), s);
            assert_eq!(s.parse::<MessageSize>(), Ok(MessageSize(n)));
        }
        assert_eq!("2M".parse::<MessageSize>(), Ok(MessageSize(2 << 20)));
        assert!("1.5MiB".parse::<MessageSize>().is_err());
        assert!("4 parsecs"
            .parse::<MessageSize>()
            .unwrap_err()
            .to_string()
            .contains("not a size unit"));
        assert!(matches!(
            "99999999999999999999G".parse::<MessageSize>(),
            Err(SizeError::NotASize(_))
        ));
        assert!(matches!(
            "99999999999G".parse::<MessageSize>(),
            Err(SizeError::TooLarge(_))
        ));
    }

    #[test]
    fn estimators_read_and_write_their_names() {
        for (e, name) in Estimator::ALL.into_iter().zip(Estimator::NAMES) {
            assert_eq!(e.name(), name);
            assert_eq!(name.parse::<Estimator>(), Ok(e));
            assert_eq!(serde_json::to_string(&e).unwrap(), format!("\"{name}\""));
        }
        assert!("average"
            .parse::<Estimator>()
            .unwrap_err()
            .to_string()
            .contains("average"));
    }

    #[test]
    fn a_pair_is_ordered() {
        assert_eq!(Pair::new(5, 2), Pair { i: 2, j: 5 });
        assert!(Pair::new(5, 2).contains(5) && !Pair::new(5, 2).contains(3));
    }
}
