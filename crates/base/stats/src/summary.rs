//! Summaries of repeated timings, as the studies of MPI benchmarking and run-time variability
//! advise (a TU Wien thesis on the causes of run-time variability, an RWTH thesis on node-level
//! performance variation): warm-up detected per series, outliers counted and dropped, robust
//! quantiles reported.

use serde::{Deserialize, Serialize};

use crate::{quantile, quantile_of_sorted};

/// The summary of one series of repeated measurements (seconds, or any one unit).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Smallest kept sample.
    pub min: f64,
    /// 10th percentile of the kept samples.
    pub p10: f64,
    /// Median of the kept samples.
    pub median: f64,
    /// 90th percentile of the kept samples.
    pub p90: f64,
    /// Mean of the kept samples.
    pub mean: f64,
    /// Largest kept sample.
    pub max: f64,
    /// Samples kept: all but the warm-up and the outliers.
    pub count: usize,
    /// Leading samples treated as warm-up and left out.
    pub warmup: usize,
    /// Samples after the warm-up at least twice the median, left out.
    pub outliers: usize,
}

/// The least warm-up, as the TU Wien variability study's rule has it, while samples allow.
const MIN_WARMUP: usize = 10;
/// How close to its final value the running minimum must be for the warm-up to have ended, as
/// a share of the median.
const WARMUP_TOLERANCE: f64 = 0.1;
/// A sample at least this many times the median is an outlier.
const OUTLIER_FACTOR: f64 = 2.0;

/// The number of leading samples that are warm-up.
///
/// The warm-up ends at the first index w >= 10 from which the running minimum no longer drops
/// by more than 10 % of the median (outliers are only ever slow, so the running minimum is a
/// robust, online-computable signal). At least two thirds of the samples are always kept, so
/// that short series keep a usable median (at 32 repetitions the cap is still 10).
pub fn warmup_length(samples: &[f64]) -> usize {
    let n = samples.len();
    if n < 4 {
        return 0;
    }
    let cap = n / 3;
    if cap <= MIN_WARMUP {
        // Short series: the cap decides, whatever the samples.
        return cap;
    }
    let median = quantile(&mut samples.to_vec(), 0.5);
    let final_min = samples.iter().copied().fold(f64::INFINITY, f64::min);
    let mut running_min = f64::INFINITY;
    let mut settled = n;
    for (k, &x) in samples.iter().enumerate() {
        running_min = running_min.min(x);
        if running_min - final_min <= WARMUP_TOLERANCE * median {
            settled = k;
            break;
        }
    }
    settled.max(MIN_WARMUP).min(cap)
}

fn sorted(samples: &[f64]) -> Vec<f64> {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

impl Summary {
    /// Summarises a series in the order it was measured; `None` when it is empty.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        Self::after_warmup(samples, warmup_length(samples))
    }

    /// Summarises a series that needs no warm-up rule (it was taken once warm, as the samples
    /// of a saturated link are); outliers are still dropped.
    pub fn of_steady(samples: &[f64]) -> Option<Summary> {
        Self::after_warmup(samples, 0)
    }

    fn after_warmup(samples: &[f64], warmup: usize) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        let after = sorted(&samples[warmup..]);
        let median_all = quantile_of_sorted(&after, 0.5);
        // The samples are sorted, so those kept are a prefix.
        let count = if median_all <= 0.0 {
            after.len()
        } else {
            after.partition_point(|&x| x < OUTLIER_FACTOR * median_all)
        };
        let kept = &after[..count];
        let outliers = after.len() - count;
        let q = |p| quantile_of_sorted(kept, p);
        Some(Summary {
            min: kept[0],
            p10: q(0.1),
            median: q(0.5),
            p90: q(0.9),
            mean: kept.iter().sum::<f64>() / kept.len() as f64,
            max: kept[kept.len() - 1],
            count: kept.len(),
            warmup,
            outliers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_of_sorted(&v, 0.5), 2.5);
        assert_eq!(quantile_of_sorted(&v, 0.0), 1.0);
        assert_eq!(quantile_of_sorted(&v, 1.0), 4.0);
        assert!((quantile_of_sorted(&v, 0.1) - 1.3).abs() < 1e-12);
    }

    #[test]
    fn quantile_of_unsorted_values_matches_sorting() {
        let v: Vec<f64> = (0..101).map(|k| ((k * 37) % 101) as f64 * 0.5).collect();
        for q in [0.0, 0.1, 0.25, 0.5, 0.9, 1.0] {
            for len in [1, 2, 7, 100, 101] {
                let mut s = v[..len].to_vec();
                s.sort_by(f64::total_cmp);
                let mut u = v[..len].to_vec();
                assert_eq!(quantile(&mut u, q), quantile_of_sorted(&s, q), "{q} {len}");
            }
        }
        assert!(quantile(&mut [], 0.5).is_nan());
    }

    #[test]
    fn a_long_slow_start_is_warm_up() {
        // 60 slow samples falling towards 1.0, then 200 at 1.0 with noise.
        let mut s: Vec<f64> = (0..60).map(|k| 13.0 - k as f64 * 0.19).collect();
        s.extend((0..200).map(|k| 1.0 + 0.01 * ((k * 7) % 5) as f64));
        let w = warmup_length(&s);
        assert!((59..=61).contains(&w), "{w}");
        let sum = Summary::of(&s).unwrap();
        assert_eq!(sum.warmup, w);
        assert!(sum.median < 1.05 && sum.max < 1.1, "{sum:?}");
    }

    #[test]
    fn a_steady_series_loses_only_the_minimum_warm_up() {
        let s = vec![2.0; 32];
        assert_eq!(warmup_length(&s), 10);
        let sum = Summary::of(&s).unwrap();
        assert_eq!((sum.count, sum.outliers, sum.median), (22, 0, 2.0));
        // Short series keep at least two thirds.
        assert_eq!(warmup_length(&[5.0, 1.0, 1.0, 1.0, 1.0, 1.0]), 2);
        assert_eq!(warmup_length(&[1.0, 1.0]), 0);
    }

    #[test]
    fn outliers_are_counted_and_dropped() {
        let mut s = vec![1.0; 30];
        s[20] = 5.0;
        s[25] = 2.0;
        let sum = Summary::of(&s).unwrap();
        assert_eq!(sum.outliers, 2);
        assert_eq!(sum.max, 1.0);
        assert_eq!(sum.count, 30 - sum.warmup - 2);
        assert!(Summary::of(&[]).is_none());
    }
}
