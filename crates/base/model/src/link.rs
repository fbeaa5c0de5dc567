//! A link's PLogP parameters by message size, as the model gives them.

use serde::{Deserialize, Serialize};

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

impl Link {
    pub(crate) fn check(&self) -> Result<(), String> {
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
