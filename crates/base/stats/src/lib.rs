//! Quantiles and medians, defined once for every lgate-plogp crate: the q-quantile of n values
//! interpolates linearly between the order statistics around position q (n - 1), as NumPy's
//! default does. Timing summaries, the report's robust spreads, the clustering thresholds, the
//! broadcast statistics and the plots' bands all use these.
//!
//! ```
//! let mut v = vec![4.0, 1.0, 3.0, 2.0];
//! assert_eq!(lgate_stats::median(&mut v), 2.5);
//! assert_eq!(lgate_stats::quantile_of_sorted(&[1.0, 2.0, 3.0, 4.0], 0.9), 3.7);
//! ```
#![deny(missing_docs)]

pub mod aggregate;
pub mod clustered;
pub mod summary;

pub use clustered::{mann_whitney_z_clustered, ClusteredZ};

pub use summary::{warmup_length, Summary};

/// The p10-p90 range of a normal distribution, in standard deviations.
pub const P10_P90_SIGMAS: f64 = 2.563;

/// The q-quantile of sorted values, interpolating linearly; NaN for no values.
pub fn quantile_of_sorted(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let pos = q * (n - 1) as f64;
            let lo = pos.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
        }
    }
}

/// The q-quantile of unsorted values as [`quantile_of_sorted`] gives it, in linear time (two
/// order statistics by selection, no sort); the values are reordered. NaN for no values.
pub fn quantile(values: &mut [f64], q: f64) -> f64 {
    let n = values.len();
    if n < 2 {
        return values.first().copied().unwrap_or(f64::NAN);
    }
    let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = pos.floor() as usize;
    let (_, &mut a, above) = values.select_nth_unstable_by(lo, f64::total_cmp);
    let frac = pos - lo as f64;
    if frac == 0.0 || above.is_empty() {
        return a;
    }
    let b = above.iter().copied().fold(f64::INFINITY, f64::min);
    a + (b - a) * frac
}

/// The median of unsorted values (reordered); NaN for no values.
pub fn median(values: &mut [f64]) -> f64 {
    quantile(values, 0.5)
}

/// The median absolute deviation from the median of unsorted values (reordered); NaN for none.
pub fn mad(values: &mut [f64]) -> f64 {
    let center = median(values);
    let mut dev: Vec<f64> = values.iter().map(|x| (x - center).abs()).collect();
    median(&mut dev)
}

/// The value at quantile `q` of unsorted values by nearest rank (no interpolation: always one
/// of the values), as a colour scale's clipping point needs; the values are reordered.
pub fn quantile_nearest_rank(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let pos = ((values.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
    let (_, x, _) = values.select_nth_unstable_by(pos, f64::total_cmp);
    *x
}

/// The 10th, 50th and 90th percentiles of values, which are sorted in place.
pub fn p10_median_p90(values: &mut [f64]) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (
        quantile_of_sorted(values, 0.1),
        quantile_of_sorted(values, 0.5),
        quantile_of_sorted(values, 0.9),
    )
}

/// The most repetitions of one measurement a run takes (`--reps`, `--screen-reps`): a pair's
/// samples at one size are held together, 8 bytes each, and each takes at least a round trip.
pub const MAX_REPETITIONS: usize = 1 << 20;

/// The most sweeps (repetitions of the whole plan) a run takes (`--sweeps`): each sweep keeps
/// its own result for every pair it measures.
pub const MAX_SWEEPS: u32 = 1000;

/// A count of repetitions or sweeps this tool refuses; the caller names the field or flag it
/// came from (the message reads after it: "must be at least 1", "5000 is more ...").
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CountError {
    /// Below one.
    #[error("must be at least 1")]
    Zero,
    /// More repetitions than a pair's samples at one size can hold.
    #[error(
        "{given} is more than this tool takes ({MAX_REPETITIONS} at most): a pair's samples at \
         one size would take {:.1} GB of memory, and at 1 us a repetition at least {:.0} s of \
         each pair's time",
        *given as f64 * 8.0 / 1e9,
        *given as f64 * 1e-6
    )]
    Repetitions {
        /// The count given.
        given: usize,
    },
    /// More sweeps than a run keeps.
    #[error(
        "{given} is more than this tool takes ({MAX_SWEEPS} at most): each sweep measures the \
         whole plan again and keeps every result; for a long watch, run `measure` again and \
         compare the runs with `diff`"
    )]
    Sweeps {
        /// The count given.
        given: u32,
    },
}

/// Checks a count of repetitions: at least 1, at most [`MAX_REPETITIONS`]; the error says
/// what the count would cost.
pub fn check_repetitions(reps: usize) -> Result<(), CountError> {
    match reps {
        0 => Err(CountError::Zero),
        r if r > MAX_REPETITIONS => Err(CountError::Repetitions { given: r }),
        _ => Ok(()),
    }
}

/// Checks a count of sweeps: at least 1, at most [`MAX_SWEEPS`].
pub fn check_sweeps(sweeps: u32) -> Result<(), CountError> {
    match sweeps {
        0 => Err(CountError::Zero),
        s if s > MAX_SWEEPS => Err(CountError::Sweeps { given: s }),
        _ => Ok(()),
    }
}

/// The z of a one-sided Mann-Whitney test that `y` is larger than `x` (normal approximation,
/// ties counted half).
pub fn mann_whitney_z(x: &[f64], y: &[f64]) -> f64 {
    let (n1, n2) = (x.len() as f64, y.len() as f64);
    let mut all: Vec<(f64, bool)> = (x.iter().map(|&v| (v, false)))
        .chain(y.iter().map(|&v| (v, true)))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    // The rank sum of y, ties given their mean rank.
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let mean_rank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum += mean_rank * all[i..=j].iter().filter(|v| v.1).count() as f64;
        i = j + 1;
    }
    let u = rank_sum - n2 * (n2 + 1.0) / 2.0;
    let sd = (n1 * n2 * (n1 + n2 + 1.0) / 12.0).sqrt();
    if sd > 0.0 {
        (u - n1 * n2 / 2.0) / sd
    } else {
        0.0
    }
}

/// The z a standard normal value exceeds with probability `p` (0 < p < 1): Acklam's rational
/// approximation of the inverse normal distribution, relative error below 1.2e-9.
pub fn normal_upper_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    // The lower-tail quantile of 1 - p, negated symmetry aside.
    let q = 1.0 - p;
    let low = 0.02425;
    let tail = |t: f64| {
        let r = (-2.0 * t.ln()).sqrt();
        (((((C[0] * r + C[1]) * r + C[2]) * r + C[3]) * r + C[4]) * r + C[5])
            / ((((D[0] * r + D[1]) * r + D[2]) * r + D[3]) * r + 1.0)
    };
    if !(p > 0.0 && p < 1.0) {
        return f64::NAN;
    }
    if q < low {
        tail(q)
    } else if q > 1.0 - low {
        -tail(p)
    } else {
        let r = q - 0.5;
        let t = r * r;
        (((((A[0] * t + A[1]) * t + A[2]) * t + A[3]) * t + A[4]) * t + A[5]) * r
            / (((((B[0] * t + B[1]) * t + B[2]) * t + B[3]) * t + B[4]) * t + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_normal_quantile_is_the_tables() {
        for (p, z) in [
            (0.5, 0.0),
            (0.025, 1.959964),
            (0.001_349_898, 3.000000),
            (1e-6, 4.753424),
        ] {
            let q = normal_upper_quantile(p);
            assert!((q - z).abs() < 1e-5, "{p}: {q}");
            assert!((normal_upper_quantile(1.0 - p) + z).abs() < 1e-5, "{p}");
        }
        assert!(normal_upper_quantile(0.0).is_nan());
    }

    #[test]
    fn mann_whitney_z_is_zero_for_equal_samples_and_grows_with_separation() {
        assert_eq!(mann_whitney_z(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]), 0.0);
        let x: Vec<f64> = (0..20).map(f64::from).collect();
        let y: Vec<f64> = (100..120).map(f64::from).collect();
        // Complete separation of 20 and 20: U = 400, z = 200 / sqrt(400 * 41 / 12) = 5.41.
        assert!((mann_whitney_z(&x, &y) - 5.41).abs() < 0.01);
        assert!(mann_whitney_z(&y, &x) < -5.0);
    }

    #[test]
    fn quantiles_interpolate_and_selection_matches_sorting() {
        assert!(quantile_of_sorted(&[], 0.5).is_nan());
        assert!(median(&mut []).is_nan());
        assert_eq!(quantile_of_sorted(&[7.0], 0.3), 7.0);
        assert_eq!(quantile_of_sorted(&[1.0, 2.0, 3.0], 0.25), 1.5);
        let mut seed = 12345u64;
        for n in 1..60 {
            let values: Vec<f64> = (0..n)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (seed >> 33) as f64 / 1e3
                })
                .collect();
            let mut sorted = values.clone();
            sorted.sort_by(f64::total_cmp);
            for q in [0.0, 0.1, 0.25, 0.5, 0.9, 1.0] {
                let mut v = values.clone();
                assert_eq!(
                    quantile(&mut v, q),
                    quantile_of_sorted(&sorted, q),
                    "n {n} q {q}"
                );
            }
        }
        let mut v = vec![3.0, 1.0, 2.0, 5.0, 4.0];
        assert_eq!(p10_median_p90(&mut v), (1.4, 3.0, 4.6));
        assert_eq!(quantile_nearest_rank(&mut v, 0.9), 5.0);
        assert_eq!(quantile_nearest_rank(&mut v, 0.3), 2.0);
    }

    #[test]
    fn counts_are_bounded_with_their_cost_said() {
        assert!(check_repetitions(1).is_ok());
        assert!(check_repetitions(MAX_REPETITIONS).is_ok());
        assert_eq!(check_repetitions(0), Err(CountError::Zero));
        assert_eq!(CountError::Zero.to_string(), "must be at least 1");
        let e = check_repetitions(4_000_000_000).unwrap_err().to_string();
        assert!(e.starts_with("4000000000 is more"), "{e}");
        assert!(e.contains("32.0 GB"), "{e}");
        assert!(check_sweeps(MAX_SWEEPS).is_ok());
        assert_eq!(check_sweeps(0), Err(CountError::Zero));
        assert!(check_sweeps(MAX_SWEEPS + 1)
            .unwrap_err()
            .to_string()
            .contains("1000 at most"));
    }
}
