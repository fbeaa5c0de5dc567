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

use lgate_matrix::DistanceMatrix;
use lgate_rundir::RankInfo;
use lgate_stats::quantile;
use serde_json::{json, Value};

use crate::params::Estimator;
use crate::size::MessageSize;
use lgate_stats::median;

/// Flagged pairs listed in full at most; the count is always given.
const LISTED: usize = 100;

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

/// Where two ranks sit relative to each other, from their placement. Ranks sharing a physical
/// core (SMT siblings, or ranks bound to one core) are a class of their own: sharing makes
/// them slower than other pairs of their socket, which is the core level, not a fault.
const CLASSES: [&str; 6] = [
    "different hosts",
    "same core",
    "same socket",
    "same host, other socket",
    "same host",
    "unknown placement",
];

/// A rank's place: small integers for its host, and its socket and core where known.
type Place = Option<(usize, Option<usize>, Option<usize>)>;

/// Per rank, its [`Place`], to classify pairs quickly.
fn placement_ids(ranks: &[usize], placement: &[RankInfo]) -> Vec<Place> {
    let mut hosts: BTreeMap<&str, usize> = BTreeMap::new();
    ranks
        .iter()
        .map(|&r| {
            placement.get(r).map(|info| {
                let next = hosts.len();
                (
                    *hosts.entry(info.host.as_str()).or_insert(next),
                    info.socket,
                    info.core,
                )
            })
        })
        .collect()
}

fn class_index(a: Place, b: Place) -> usize {
    match (a, b) {
        (Some((ha, ..)), Some((hb, ..))) if ha != hb => 0,
        (Some((_, Some(sa), Some(ca))), Some((_, Some(sb), Some(cb)))) if ca == cb && sa == sb => 1,
        (Some((_, Some(sa), _)), Some((_, Some(sb), _))) if sa == sb => 2,
        (Some((_, Some(_), _)), Some((_, Some(_), _))) => 3,
        (Some(_), Some(_)) => 4,
        _ => 5,
    }
}

/// The report of one matrix: classes, slow pairs, slow ranks.
fn matrix_report(
    name: &str,
    ranks: &[usize],
    ids: &[Place],
    placement: &[RankInfo],
    m: &DistanceMatrix,
) -> Value {
    let n = ranks.len();
    let mut by_class: Vec<Vec<f64>> = vec![Vec::new(); CLASSES.len()];
    for a in 0..n {
        for b in a + 1..n {
            by_class[class_index(ids[a], ids[b])].push(m.get(a, b));
        }
    }
    // (median, robust sigma, pairs) per class.
    let classes: Vec<(f64, f64, usize)> = by_class
        .iter_mut()
        .map(|v| {
            let center = median(v);
            (center, robust_sigma(v, center), v.len())
        })
        .collect();
    drop(by_class);
    let mut slow_pairs = Vec::new();
    let mut total = 0;
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); n];
    for a in 0..n {
        for b in a + 1..n {
            let c = class_index(ids[a], ids[b]);
            let (center, sigma, count) = classes[c];
            let v = m.get(a, b);
            if center > 0.0 {
                ratios[a].push(v / center);
                ratios[b].push(v / center);
            }
            if count >= 3 {
                if let Some(why) = stands_out(v, center, sigma) {
                    total += 1;
                    slow_pairs.push((v / center, a, b, c, why));
                    if slow_pairs.len() > 4 * LISTED {
                        slow_pairs.sort_by(|x, y| y.0.total_cmp(&x.0));
                        slow_pairs.truncate(LISTED);
                    }
                }
            }
        }
    }
    slow_pairs.sort_by(|x, y| y.0.total_cmp(&x.0));
    slow_pairs.truncate(LISTED);
    let scores: Vec<(usize, f64)> = ratios
        .into_iter()
        .enumerate()
        .filter(|(_, v)| !v.is_empty())
        .map(|(a, mut v)| (a, median(&mut v)))
        .collect();
    let mut all: Vec<f64> = scores.iter().map(|s| s.1).collect();
    let center = median(&mut all);
    let sigma = robust_sigma(&all, center);
    let slow_ranks: Vec<Value> = scores
        .iter()
        .filter_map(|&(a, score)| {
            let why = if score >= 2.0 {
                Some("its pairs are at least twice their class median")
            } else {
                stands_out(score, center, sigma).map(|_| "its pairs are more than two standard deviations slower than other ranks' pairs")
            }?;
            let r = ranks[a];
            Some(json!({"rank": r, "host": placement.get(r).map(|p| p.host.as_str()), "median_ratio": score, "why": why}))
        })
        .collect();
    json!({
        "matrix": name,
        "classes": classes.iter().enumerate().filter(|(_, c)| c.2 > 0).map(|(k, (m, s, n))| json!({"class": CLASSES[k], "pairs": n, "median_us": m, "robust_sigma_us": s})).collect::<Vec<_>>(),
        "slow_pairs_count": total,
        "slow_pairs": slow_pairs.iter().map(|&(ratio, a, b, c, why)| json!({"i": ranks[a], "j": ranks[b], "class": CLASSES[c], "value_us": m.get(a, b), "class_median_us": classes[c].0, "ratio": ratio, "why": why})).collect::<Vec<_>>(),
        "slow_ranks": slow_ranks,
    })
}

/// How much repeats of one pair vary next to how much pairs differ, for t(m).
#[derive(Debug, Clone, Copy)]
pub struct Spread {
    /// The matrix size.
    pub size: MessageSize,
    /// The median over pairs of a pair's repeat spread: the p10-p90 range of L, plus half
    /// those of o_s and o_r, plus that of g, at the first measured size at or above the size.
    pub repeat_us: f64,
    /// The p10-p90 range of the pairs' t(m).
    pub between_us: f64,
}

impl Spread {
    /// The spread from each pair's repeat spread and t(m) (both reordered).
    pub fn of(size: MessageSize, repeat: &mut [f64], times: &mut [f64]) -> Spread {
        Spread {
            size,
            repeat_us: median(repeat),
            between_us: quantile(times, 0.9) - quantile(times, 0.1),
        }
    }

    fn to_json(self) -> Value {
        json!({
            "matrix": format!("t:{}", self.size),
            "repeat_spread_us": self.repeat_us,
            "between_pairs_spread_us": self.between_us,
            "overlap": self.repeat_us >= self.between_us,
        })
    }
}

/// What the report is made from.
pub struct ReportInputs<'a> {
    /// The tested ranks, the rows of the matrices.
    pub ranks: &'a [usize],
    /// Where every rank ran.
    pub placement: &'a [RankInfo],
    /// What each host is (meta.json's `hosts`).
    pub hosts: &'a [lgate_rundir::HostFacts],
    /// The statistic the matrices hold.
    pub estimator: Estimator,
    /// The latency matrix.
    pub latency: &'a DistanceMatrix,
    /// The t(m) matrices.
    pub times: Vec<(MessageSize, &'a DistanceMatrix)>,
    /// The spread of each t(m).
    pub spreads: Vec<Spread>,
    /// Pair measurements, all sweeps.
    pub pairs: usize,
    /// Pairs whose L came out as zero: {sweep, i, j}.
    pub not_positive: Vec<Value>,
    /// Pairs whose link saturation did not settle.
    pub unconverged: usize,
}

/// The whole report.
pub fn report(inputs: &ReportInputs) -> Value {
    let ids = placement_ids(inputs.ranks, inputs.placement);
    let mut matrices = vec![matrix_report(
        "latency",
        inputs.ranks,
        &ids,
        inputs.placement,
        inputs.latency,
    )];
    for (size, m) in &inputs.times {
        matrices.push(matrix_report(
            &format!("t:{size}"),
            inputs.ranks,
            &ids,
            inputs.placement,
            m,
        ));
    }
    let mut warnings = Vec::new();
    // With one pair there is nothing to tell apart, and nothing to warn about.
    for s in inputs.spreads.iter().filter(|_| inputs.ranks.len() > 2) {
        if s.repeat_us >= s.between_us {
            warnings.push(format!(
                "at {}, repeated measurements of one pair vary as much as pairs differ \
                 ({:.3} us against {:.3} us): clustering this size is unreliable; measure with \
                 more --reps or --sweeps",
                s.size, s.repeat_us, s.between_us
            ));
        }
    }
    if !inputs.not_positive.is_empty() {
        warnings.push(format!(
            "{} pair(s) have g(0) >= RTT(0) / 2, so L came out as 0: their saturation estimate \
             is suspect",
            inputs.not_positive.len()
        ));
    }
    if inputs.unconverged > 0 {
        warnings.push(format!(
            "{} pair(s) stopped link saturation (at 37500 messages or a 50 ms batch) \
             before g(m) settled within epsilon; their g(m) is the last estimate",
            inputs.unconverged
        ));
    }
    let hosts = hosts_report(inputs.placement, inputs.hosts);
    for line in hosts["odd_lines"].as_array().into_iter().flatten() {
        warnings.push(format!(
            "host facts differ from most hosts' ({}): a slow host may be explained by them",
            line.as_str().unwrap_or_default()
        ));
    }
    if let Some(n) = hosts["placement_mismatches_count"]
        .as_u64()
        .filter(|&n| n > 0)
    {
        warnings.push(format!(
            "{n} rank(s) have a recorded placement their host's facts contradict (see \
             hosts.placement_mismatches)"
        ));
    }
    let mut not_positive = inputs.not_positive.clone();
    let not_positive_count = not_positive.len();
    not_positive.truncate(LISTED);
    json!({
        "estimator": inputs.estimator.name(),
        "ranks": inputs.ranks.len(),
        "pairs": inputs.pairs,
        "matrices": matrices,
        "spread": inputs.spreads.iter().map(|s| s.to_json()).collect::<Vec<_>>(),
        "latency_not_positive_count": not_positive_count,
        "latency_not_positive": not_positive,
        "saturation_not_converged": inputs.unconverged,
        "hosts": hosts,
        "warnings": warnings,
    })
}

/// The hosts' part of the report: how many hosts ran ranks and how many recorded facts, the
/// facts in which some hosts differ from most (`odd`, and one line per host in `odd_lines`),
/// and ranks whose placement contradicts their host's facts.
pub(crate) fn hosts_report(placement: &[RankInfo], hosts: &[lgate_rundir::HostFacts]) -> Value {
    let mut names: Vec<&str> = placement.iter().map(|r| r.host.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let odd = lgate_rundir::odd_hosts(hosts);
    let lines = lgate_rundir::odd_host_lines(&odd, hosts.len());
    let (mismatches, count) = lgate_rundir::placement_mismatches(placement, hosts, LISTED);
    json!({
        "count": names.len(),
        "with_facts": hosts.len(),
        "odd": odd,
        "odd_lines": lines,
        "placement_mismatches_count": count,
        "placement_mismatches": mismatches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_sharing_a_core_are_their_own_class_not_slow_socket_pairs() {
        // Eight ranks on one socket, two per core: core siblings 3.5x slower than the rest.
        let placement: Vec<RankInfo> = (0..8)
            .map(|r| RankInfo {
                rank: r,
                host: "h".into(),
                pid: None,
                cpu: Some(r),
                cpuset: None,
                core: Some(r / 2),
                socket: Some(0),
                numa: None,
                governor: None,
                machine: None,
                extra: Default::default(),
            })
            .collect();
        let values = ndarray::Array2::from_shape_fn((8, 8), |(i, j)| match (i, j) {
            (i, j) if i == j => 0.0,
            (i, j) if i / 2 == j / 2 => 3.5,
            _ => 1.0,
        });
        let m = DistanceMatrix::new(values, None).unwrap();
        let ranks: Vec<usize> = (0..8).collect();
        let ids = placement_ids(&ranks, &placement);
        let report = matrix_report("t", &ranks, &ids, &placement, &m);
        assert_eq!(report["slow_pairs_count"], 0, "{report}");
        let classes: Vec<&str> = report["classes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["class"].as_str().unwrap())
            .collect();
        assert_eq!(classes, ["same core", "same socket"]);
        // Without core ids, the siblings are the socket's slow pairs, as before.
        let unplaced: Vec<RankInfo> = placement
            .iter()
            .cloned()
            .map(|p| RankInfo { core: None, ..p })
            .collect();
        let ids = placement_ids(&ranks, &unplaced);
        let report = matrix_report("t", &ranks, &ids, &unplaced, &m);
        assert_eq!(report["slow_pairs_count"], 4, "{report}");
    }

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
