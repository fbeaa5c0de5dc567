//! report.json: what in the measurements deserves a look before clustering.
//!
//! - Slow pairs: a pair more than twice the median of its placement class (same socket, same
//!   host, different hosts) or beyond two robust standard deviations of it.
//! - Slow ranks: ranks whose pairs are slow against all partners: the median, over partners,
//!   of the pair's value over its class median is at least 2, or beyond two robust standard
//!   deviations of that median across ranks.
//! - Spread: how much repeated measurements of one pair vary next to how much pairs differ, for
//!   each t(m) matrix; when the first is as large as the second, clustering cannot be trusted.

use std::collections::BTreeMap;

use lgate_harness::stats::quantile_of_sorted;
use lgate_harness::Pair;
use lgate_rundir::RankInfo;
use serde_json::{json, Value};

use crate::outputs::{pair_class, Analysis, OutputOptions};

/// Flagged pairs listed in full at most; the count is always given.
const LISTED: usize = 100;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    quantile_of_sorted(v, 0.5)
}

/// 1.4826 times the median absolute deviation: a standard deviation that outliers do not sway.
fn robust_sigma(v: &[f64], center: f64) -> f64 {
    let mut dev: Vec<f64> = v.iter().map(|x| (x - center).abs()).collect();
    1.4826 * median(&mut dev)
}

/// Whether `x` stands out from a population with `center` and `sigma`: twice the center, or
/// two sigmas above it (and 10 % above it, so that a spread of nearly zero flags no noise).
fn stands_out(x: f64, center: f64, sigma: f64) -> Option<&'static str> {
    if center > 0.0 && x >= 2.0 * center {
        Some("at least twice the median")
    } else if x - center > 2.0 * sigma && x > 1.1 * center {
        Some("more than two standard deviations above the median")
    } else {
        None
    }
}

/// The report of one matrix: classes, slow pairs, slow ranks.
fn matrix_report(
    name: &str,
    analysis: &Analysis,
    placement: &[RankInfo],
    value: &dyn Fn(Pair) -> f64,
) -> Value {
    let mut pairs: Vec<(Pair, &'static str, f64)> = Vec::new();
    for (a, &x) in analysis.ranks.iter().enumerate() {
        for &y in &analysis.ranks[a + 1..] {
            let p = Pair::new(x, y);
            pairs.push((p, pair_class(placement, p), value(p)));
        }
    }
    let mut classes: BTreeMap<&str, (f64, f64, usize)> = BTreeMap::new();
    let mut by_class: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for &(_, c, v) in &pairs {
        by_class.entry(c).or_default().push(v);
    }
    for (c, v) in &mut by_class {
        let m = median(v);
        classes.insert(c, (m, robust_sigma(v, m), v.len()));
    }
    let mut slow_pairs = Vec::new();
    let mut ratios: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for &(p, c, v) in &pairs {
        let (m, s, n) = classes[c];
        if m > 0.0 {
            ratios.entry(p.i).or_default().push(v / m);
            ratios.entry(p.j).or_default().push(v / m);
        }
        if n >= 3 {
            if let Some(why) = stands_out(v, m, s) {
                slow_pairs.push(json!({"i": p.i, "j": p.j, "class": c, "value_us": v, "class_median_us": m, "ratio": v / m, "why": why}));
            }
        }
    }
    let mut scores: Vec<(usize, f64)> = ratios
        .into_iter()
        .map(|(r, mut v)| (r, median(&mut v)))
        .collect();
    let mut all: Vec<f64> = scores.iter().map(|s| s.1).collect();
    let center = median(&mut all);
    let sigma = robust_sigma(&all, center);
    scores.sort_by_key(|s| s.0);
    let slow_ranks: Vec<Value> = scores
        .iter()
        .filter_map(|&(r, score)| {
            let why = if score >= 2.0 {
                Some("its pairs are at least twice their class median")
            } else {
                stands_out(score, center, sigma).map(|_| "its pairs are more than two standard deviations slower than other ranks' pairs")
            }?;
            Some(json!({"rank": r, "host": placement.get(r).map(|p| p.host.as_str()), "median_ratio": score, "why": why}))
        })
        .collect();
    let total = slow_pairs.len();
    slow_pairs.sort_by(|a, b| {
        b["ratio"]
            .as_f64()
            .unwrap_or(0.0)
            .total_cmp(&a["ratio"].as_f64().unwrap_or(0.0))
    });
    slow_pairs.truncate(LISTED);
    json!({
        "matrix": name,
        "classes": classes.iter().map(|(c, (m, s, n))| json!({"class": c, "pairs": n, "median_us": m, "robust_sigma_us": s})).collect::<Vec<_>>(),
        "slow_pairs_count": total,
        "slow_pairs": slow_pairs,
        "slow_ranks": slow_ranks,
    })
}

/// How much repeats of one pair vary next to how much pairs differ, for t(m): the repeat
/// spread of a pair is the p10-p90 range of L, plus half those of o_s and o_r, plus that of g,
/// at the first measured size at or above `size` (the median over pairs is reported); the
/// spread between pairs is the p10-p90 range of the pairs' t(m).
fn spread(analysis: &Analysis, size: usize, e: crate::params::Estimator) -> Value {
    let range = |s: &lgate_harness::Summary| s.p90 - s.p10;
    let mut repeat = Vec::new();
    let mut values = Vec::new();
    for p in &analysis.pairs {
        let k = p
            .sizes
            .partition_point(|&s| s < size)
            .min(p.sizes.len() - 1);
        let r = range(&p.latency) + (range(&p.os[k]) + range(&p.or[k])) / 2.0 + range(&p.g[k].0);
        repeat.push(r * 1e6);
        values.push(p.time(size, e).unwrap_or(0.0) * 1e6);
    }
    let within = median(&mut repeat);
    values.sort_by(f64::total_cmp);
    let between = quantile_of_sorted(&values, 0.9) - quantile_of_sorted(&values, 0.1);
    json!({
        "matrix": format!("t:{}", crate::size::MessageSize(size)),
        "repeat_spread_us": within,
        "between_pairs_spread_us": between,
        "overlap": within >= between,
    })
}

/// The whole report.
pub fn report(analysis: &Analysis, placement: &[RankInfo], options: &OutputOptions) -> Value {
    let e = options.estimator;
    let lookup: BTreeMap<Pair, Vec<&crate::params::PairParams>> =
        analysis.pairs.iter().fold(BTreeMap::new(), |mut m, p| {
            m.entry(p.pair).or_default().push(p);
            m
        });
    let across_sweeps = |p: Pair, f: &dyn Fn(&crate::params::PairParams) -> f64| {
        let mut v: Vec<f64> = lookup[&p].iter().map(|pp| f(pp)).collect();
        median(&mut v)
    };
    let mut matrices = vec![matrix_report("latency", analysis, placement, &|p| {
        across_sweeps(p, &|pp| e.of(&pp.latency) * 1e6)
    })];
    let mut spreads = Vec::new();
    let mut warnings = Vec::new();
    for size in &options.matrix_sizes {
        let m = size.0;
        matrices.push(matrix_report(
            &format!("t:{size}"),
            analysis,
            placement,
            &|p| across_sweeps(p, &|pp| pp.time(m, e).unwrap_or(0.0) * 1e6),
        ));
        let s = spread(analysis, m, e);
        if s["overlap"] == true {
            warnings.push(format!(
                "at {size}, repeated measurements of one pair vary as much as pairs differ \
                 ({:.3} us against {:.3} us): clustering this size is unreliable; measure with \
                 more --reps or --sweeps",
                s["repeat_spread_us"].as_f64().unwrap_or(0.0),
                s["between_pairs_spread_us"].as_f64().unwrap_or(0.0)
            ));
        }
        spreads.push(s);
    }
    let not_positive: Vec<Value> = analysis
        .pairs
        .iter()
        .filter(|p| p.latency.median <= 0.0)
        .map(|p| json!({"sweep": p.sweep, "i": p.pair.i, "j": p.pair.j}))
        .collect();
    if !not_positive.is_empty() {
        warnings.push(format!(
            "{} pair(s) have g(0) >= RTT(0) / 2, so L came out as 0: their saturation estimate \
             is suspect",
            not_positive.len()
        ));
    }
    let unconverged = analysis
        .pairs
        .iter()
        .filter(|p| !p.saturation_converged)
        .count();
    if unconverged > 0 {
        warnings.push(format!(
            "{unconverged} pair(s) stopped link saturation (at 37500 messages or a 50 ms batch) \
             before g(m) settled within epsilon; their g(m) is the last estimate"
        ));
    }
    json!({
        "estimator": e.name(),
        "ranks": analysis.ranks.len(),
        "pairs": analysis.pairs.len(),
        "matrices": matrices,
        "spread": spreads,
        "latency_not_positive": not_positive,
        "saturation_not_converged": unconverged,
        "warnings": warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outstanding_values() {
        assert_eq!(stands_out(2.0, 1.0, 0.1), Some("at least twice the median"));
        assert!(stands_out(1.5, 1.0, 0.1).is_some());
        assert!(
            stands_out(1.05, 1.0, 0.0).is_none(),
            "no flag for noise when the spread is nil"
        );
        assert!(stands_out(1.1, 1.0, 0.2).is_none());
        let v = [1.0, 1.0, 1.1, 0.9, 10.0];
        assert!((robust_sigma(&v, 1.0) - 1.4826 * 0.1).abs() < 1e-9);
    }
}
