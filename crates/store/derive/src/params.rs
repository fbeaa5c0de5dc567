//! PLogP parameters of a pair: the measured RTT, o_s, o_r and g, the derived g above the
//! saturation limit, the latency L, and their values between measured sizes.

use lgate_rundir::Pair;
use lgate_stats::Summary;
use serde::{Deserialize, Serialize};

use lgate_rundir::{Estimator, PairMeasurement};

/// A PLogP parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Parameter {
    /// Round-trip time RTT(m).
    Rtt,
    /// Send overhead o_s(m).
    Os,
    /// Receive overhead o_r(m).
    Or,
    /// Gap g(m).
    G,
    /// Latency L (one value per pair).
    L,
}

impl Parameter {
    /// Every parameter, in table order.
    pub const ALL: [Parameter; 5] = [Self::Rtt, Self::Os, Self::Or, Self::G, Self::L];

    /// The name used in tables: `rtt`, `os`, `or`, `g`, `L`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rtt => "rtt",
            Self::Os => "os",
            Self::Or => "or",
            Self::G => "g",
            Self::L => "L",
        }
    }
}

/// How a value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Method {
    /// Timed directly.
    Measured,
    /// g(m) by link saturation.
    Saturation,
    /// Computed from other parameters: g(m) = RTT(m) - RTT(0) + g(0), L = (RTT(0) - 2 g(0)) / 2.
    Derived,
}

impl Method {
    /// The name used in tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::Measured => "measured",
            Self::Saturation => "saturation",
            Self::Derived => "derived",
        }
    }
}

/// Why a journal entry's measurement does not give a pair's parameters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MeasurementError {
    /// No size 0 measured.
    #[error("the measurement has no size 0")]
    NoSizeZero,
    /// Size 0 without its saturation measurement.
    #[error("size 0 has no saturation measurement of g(0)")]
    NoGapAtZero,
    /// Sizes out of order.
    #[error("sizes are not ascending at {size} bytes")]
    NotAscending {
        /// The first size out of order.
        size: usize,
    },
}

/// The PLogP parameters of one pair in one sweep, at every measured size.
#[derive(Debug, Clone, PartialEq)]
pub struct PairParams {
    /// The sweep.
    pub sweep: u32,
    /// The pair.
    pub pair: Pair,
    /// Measured sizes, ascending, starting at 0.
    pub sizes: Vec<usize>,
    /// RTT(m) per size.
    pub rtt: Vec<Summary>,
    /// o_s(m) per size.
    pub os: Vec<Summary>,
    /// o_r(m) per size.
    pub or: Vec<Summary>,
    /// g(m) per size, and how it was obtained.
    pub g: Vec<(Summary, Method)>,
    /// L.
    pub latency: Summary,
    /// Whether every saturation settled within epsilon.
    pub saturation_converged: bool,
}

/// Applies `f` to every statistic of `s` (counts kept), clamping at zero.
fn map_stats(s: &Summary, f: impl Fn(f64) -> f64) -> Summary {
    Summary {
        min: f(s.min).max(0.0),
        p10: f(s.p10).max(0.0),
        median: f(s.median).max(0.0),
        p90: f(s.p90).max(0.0),
        mean: f(s.mean).max(0.0),
        max: f(s.max).max(0.0),
        ..*s
    }
}

impl PairParams {
    /// Derives g(m) above the saturation limit and L from a pair's measurement.
    ///
    /// Derived values apply the formula to each statistic of RTT(m) with the medians of RTT(0)
    /// and g(0), so their spread is RTT(m)'s; values below zero are clamped to zero.
    pub fn from_measurement(
        sweep: u32,
        pair: Pair,
        m: &PairMeasurement,
    ) -> Result<Self, MeasurementError> {
        let zero = m
            .sizes
            .first()
            .filter(|s| s.size == 0)
            .ok_or(MeasurementError::NoSizeZero)?;
        let g0 = zero
            .g
            .as_ref()
            .ok_or(MeasurementError::NoGapAtZero)?
            .gap
            .median;
        let rtt0 = zero.rtt.median;
        let mut out = PairParams {
            sweep,
            pair,
            sizes: Vec::with_capacity(m.sizes.len()),
            rtt: Vec::new(),
            os: Vec::new(),
            or: Vec::new(),
            g: Vec::new(),
            latency: map_stats(&zero.rtt, |rtt| (rtt - 2.0 * g0) / 2.0),
            saturation_converged: true,
        };
        for s in &m.sizes {
            if out.sizes.last().is_some_and(|&last| last >= s.size) {
                return Err(MeasurementError::NotAscending { size: s.size });
            }
            out.sizes.push(s.size);
            out.rtt.push(s.rtt);
            out.os.push(s.os);
            out.or.push(s.or);
            out.g.push(match &s.g {
                Some(sat) => {
                    out.saturation_converged &= sat.converged;
                    (sat.gap, Method::Saturation)
                }
                None => (map_stats(&s.rtt, |rtt| rtt - rtt0 + g0), Method::Derived),
            });
        }
        Ok(out)
    }

    /// The statistics of a parameter at measured size index `k`.
    pub fn stats(&self, p: Parameter, k: usize) -> &Summary {
        match p {
            Parameter::Rtt => &self.rtt[k],
            Parameter::Os => &self.os[k],
            Parameter::Or => &self.or[k],
            Parameter::G => &self.g[k].0,
            Parameter::L => &self.latency,
        }
    }

    /// A parameter at any size up to the largest measured, interpolating linearly between
    /// measured sizes.
    pub fn value(&self, p: Parameter, size: usize, e: Estimator) -> Option<f64> {
        if p == Parameter::L {
            return Some(e.of(&self.latency));
        }
        let k = self.sizes.partition_point(|&s| s < size);
        if k == self.sizes.len() {
            return None;
        }
        if self.sizes[k] == size {
            return Some(e.of(self.stats(p, k)));
        }
        let (a, b) = (self.sizes[k - 1], self.sizes[k]);
        let (va, vb) = (e.of(self.stats(p, k - 1)), e.of(self.stats(p, k)));
        Some(va + (vb - va) * (size - a) as f64 / (b - a) as f64)
    }

    /// Equation 3.3: t(m) = L + (o_s(m) + o_r(m)) / 2 + g(m).
    pub fn time(&self, size: usize, e: Estimator) -> Option<f64> {
        let v = |p| self.value(p, size, e);
        Some(v(Parameter::L)? + (v(Parameter::Os)? + v(Parameter::Or)?) / 2.0 + v(Parameter::G)?)
    }

    /// The repeat spread of t(m) in seconds: the p10-p90 ranges of L's repetitions, half of
    /// o_s's and o_r's, and g's, at the first measured size at or above `size`.
    pub fn repeat_spread(&self, size: usize) -> f64 {
        let range = |s: &Summary| s.p90 - s.p10;
        let k = self
            .sizes
            .partition_point(|&m| m < size)
            .min(self.sizes.len() - 1);
        range(&self.latency) + (range(&self.os[k]) + range(&self.or[k])) / 2.0 + range(&self.g[k].0)
    }

    /// The largest measured size.
    pub fn max_size(&self) -> usize {
        *self.sizes.last().expect("size 0 at least")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lgate_rundir::{Saturation, SizeResult};

    fn flat(x: f64) -> Summary {
        Summary::of_steady(&[x]).unwrap()
    }

    fn size(m: usize, rtt: f64, os: f64, or: f64, g: Option<f64>) -> SizeResult {
        SizeResult {
            size: m,
            rtt: flat(rtt),
            os: flat(os),
            or: flat(or),
            g: g.map(|g| Saturation {
                gap: flat(g),
                messages: 10,
                converged: true,
            }),
            adaptive: false,
            raw: None,
        }
    }

    #[test]
    fn derives_l_and_g_and_interpolates() {
        let m = PairMeasurement {
            clock_overhead_s: 0.0,
            sizes: vec![
                size(0, 10.0, 1.0, 1.0, Some(2.0)),
                size(100, 12.0, 2.0, 3.0, Some(3.0)),
                size(200, 20.0, 4.0, 5.0, None),
            ],
        };
        let p = PairParams::from_measurement(0, Pair::new(0, 1), &m).unwrap();
        let e = Estimator::Median;
        assert_eq!(p.value(Parameter::L, 0, e), Some(3.0), "(10 - 2 x 2) / 2");
        assert_eq!(p.value(Parameter::G, 200, e), Some(12.0), "20 - 10 + 2");
        assert_eq!(p.g[2].1, Method::Derived);
        assert_eq!(p.value(Parameter::Os, 50, e), Some(1.5));
        assert_eq!(p.value(Parameter::G, 150, e), Some(7.5));
        assert_eq!(p.value(Parameter::Rtt, 201, e), None);
        // t(100) = L + (os + or) / 2 + g = 3 + 2.5 + 3.
        assert_eq!(p.time(100, e), Some(8.5));
    }

    #[test]
    fn size_zero_with_saturation_is_required() {
        let m = PairMeasurement {
            clock_overhead_s: 0.0,
            sizes: vec![size(1, 1.0, 1.0, 1.0, Some(1.0))],
        };
        assert!(PairParams::from_measurement(0, Pair::new(0, 1), &m).is_err());
    }
}
