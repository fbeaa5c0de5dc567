//! report.json: what in the measurements deserves a look before clustering.
//!
//! - Slow pairs: a pair more than twice the median of its placement class (same socket, same
//!   host, different hosts) or beyond two robust standard deviations of it.
//! - Slow ranks: ranks whose pairs are slow against all partners: the median, over partners,
//!   of the pair's value over its class median is at least 2, or beyond two robust standard
//!   deviations of that median across ranks.
//! - Slow hosts: hosts whose ranks are slow against all partners: the median of their ranks'
//!   median ratios stands out from the other hosts' (twice, or two robust standard deviations
//!   and 10 %), with the factor.
//! - Spread: how much repeated measurements of one pair vary next to how much pairs differ, for
//!   each t(m) matrix; when the first is as large as the second, clustering cannot be trusted.
//! - Unstable pairs and hosts: a pair whose repeat spread is at least 3 times its class's
//!   median spread; a host whose ranks' median spread ratio is at least 2 times the hosts'.
//! - Known artifacts: the slow first pair (ranks 0 and 1 measured first, thesis section
//!   5.1.1): the pair at least 1.3 times its class median, standing out, while neither rank is
//!   slow.
//!
//! Cost: besides the matrices, one f64 per pair for the duration of each matrix's ranks and
//! hosts (134 MB at 4096 ranks).

use lgate_knobs::Knob;
use std::collections::BTreeMap;

use lgate_matrix::DistanceMatrix;
use lgate_rundir::report::{
    Artifact, ClassStats, HealthReport, HostsReport, MatrixReport, SlowPair, SpreadReport,
    SweepPairRef, UnstableHost, UnstablePair, UnstableReport,
};
use lgate_rundir::{Estimator, MessageSize, RankInfo};
use lgate_stats::{median, quantile};

use crate::slow::{judge, Evidence, Rows, Slow};

mod artifacts;

use artifacts::{artifacts, bands, unstable};
pub use artifacts::{BAND_FACTOR, FIRST_PAIR, UNSTABLE_HOST, UNSTABLE_PAIR};

/// Flagged pairs listed in full at most; the count is always given.
const LISTED: usize = 100;

/// A number as the report's lines print it: an undefined one as 0.
fn defined(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        0.0
    }
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

/// Per placement class of pairs: the median of the matrix's values, their robust standard
/// deviation, and the pair count.
fn class_stats(ids: &[Place], m: &DistanceMatrix) -> Vec<(f64, f64, usize)> {
    let n = ids.len();
    let mut by_class: Vec<Vec<f64>> = vec![Vec::new(); CLASSES.len()];
    for a in 0..n {
        for b in a + 1..n {
            by_class[class_index(ids[a], ids[b])].push(m.get(a, b));
        }
    }
    by_class
        .iter_mut()
        .map(|v| {
            let center = median(v);
            (center, robust_sigma(v, center), v.len())
        })
        .collect()
}

/// The report of one matrix: classes, slow pairs, slow ranks.
fn matrix_report(
    name: &str,
    ranks: &[usize],
    ids: &[Place],
    placement: &[RankInfo],
    m: &DistanceMatrix,
) -> MatrixReport {
    let n = ranks.len();
    let classes = class_stats(ids, m);
    let mut slow_pairs = Vec::new();
    let mut total = 0;
    let mut evidence = Vec::with_capacity(n * n.saturating_sub(1) / 2);
    for a in 0..n {
        for b in a + 1..n {
            let c = class_index(ids[a], ids[b]);
            let (center, sigma, count) = classes[c];
            let v = m.get(a, b);
            evidence.extend(crate::slow::Evidence::new(a, b, c, v, f64::NAN));
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
    let hosts: Vec<Option<&str>> = (ranks.iter())
        .map(|&r| placement.get(r).map(|p| p.host.as_str()))
        .collect();
    let rows = crate::slow::Rows {
        rank: ranks,
        host: &hosts,
    };
    let slow = crate::slow::judge(&evidence, CLASSES.len(), 0, rows, name);
    MatrixReport {
        classes: classes
            .iter()
            .enumerate()
            .filter(|(_, c)| c.2 > 0)
            .map(|(k, &(median_us, robust_sigma_us, pairs))| ClassStats {
                class: CLASSES[k].to_string(),
                median_us,
                pairs,
                robust_sigma_us,
            })
            .collect(),
        matrix: name.to_string(),
        slow_hosts: slow.hosts,
        slow_pairs: slow_pairs
            .iter()
            .map(|&(ratio, a, b, c, why)| SlowPair {
                class: CLASSES[c].to_string(),
                class_median_us: classes[c].0,
                i: ranks[a],
                j: ranks[b],
                ratio,
                value_us: m.get(a, b),
                why: why.to_string(),
            })
            .collect(),
        slow_pairs_count: total,
        slow_ranks: slow.ranks,
    }
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

    fn to_report(self) -> SpreadReport {
        SpreadReport {
            between_pairs_spread_us: self.between_us,
            matrix: format!("t:{}", self.size),
            overlap: self.repeat_us >= self.between_us,
            repeat_spread_us: self.repeat_us,
        }
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
    /// Each pair's repeat spread of t(m), per matrix size (none for a plan that keeps none).
    pub spread_matrices: Vec<(MessageSize, &'a DistanceMatrix)>,
    /// Pair measurements, all sweeps.
    pub pairs: usize,
    /// Pairs whose L came out as zero: {sweep, i, j}.
    pub not_positive: Vec<SweepPairRef>,
    /// Pairs whose link saturation did not settle.
    pub unconverged: usize,
}

/// The whole report.
pub fn report(inputs: &ReportInputs) -> HealthReport {
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
    // The warnings about the machine's health, also kept apart for `cluster`'s summary.
    let mut health = Vec::new();
    let default_matrix = matrices.len().min(2) - 1;
    let seen_artifacts = seen_artifacts(inputs, &ids, &matrices[default_matrix]);
    for a in &seen_artifacts {
        health.push(format!(
            "{} in {} (x{:.2} its class median): {}",
            a.name(),
            a.matrix(),
            defined(a.ratio()),
            a.why()
        ));
    }
    let unstable: Vec<UnstableReport> = inputs
        .spread_matrices
        .iter()
        .map(|(size, m)| {
            unstable(
                &format!("t:{size}"),
                inputs.ranks,
                &ids,
                inputs.placement,
                m,
            )
        })
        .collect();
    for u in unstable.iter().take(1) {
        let hosts: Vec<&str> = u.unstable_hosts.iter().map(|h| h.host.as_str()).collect();
        if !hosts.is_empty() {
            health.push(format!(
                "{} host(s) measure unstably in {} (their pairs' repeat spread at least {} \
                 times their class's): {}",
                hosts.len(),
                u.matrix,
                UNSTABLE_HOST,
                hosts.join(", ")
            ));
        }
    }
    let default = &matrices[default_matrix];
    health.extend(crate::slow::health_lines(&crate::slow::Slow {
        hosts: default.slow_hosts.clone(),
        ranks: default.slow_ranks.clone(),
    }));
    warnings.extend(health.iter().cloned());
    let hosts = hosts_report(inputs.placement, inputs.hosts);
    warnings.extend(measurement_warnings(inputs, &hosts));
    let mut not_positive = inputs.not_positive.clone();
    let not_positive_count = not_positive.len();
    not_positive.truncate(LISTED);
    HealthReport {
        artifacts: seen_artifacts,
        estimator: inputs.estimator,
        health,
        hosts,
        latency_not_positive: not_positive,
        latency_not_positive_count: not_positive_count,
        levels: None,
        matrices,
        pairs: inputs.pairs,
        ranks: inputs.ranks.len(),
        saturation_not_converged: inputs.unconverged,
        spread: inputs.spreads.iter().map(|s| s.to_report()).collect(),
        unstable,
        warnings,
    }
}

/// The artifacts of the measurement seen in the first t(m) matrix (`default`, its report): the
/// slow first pair, and bands of offsets whose pairs stand out, slow ranks and hosts left out.
fn seen_artifacts(inputs: &ReportInputs, ids: &[Place], default: &MatrixReport) -> Vec<Artifact> {
    let mut seen_artifacts = Vec::new();
    if let Some((size, m)) = inputs.times.first() {
        seen_artifacts = artifacts(&format!("t:{size}"), inputs.ranks, ids, m, default);
        // Slow ranks, and the ranks of slow hosts.
        let report = default;
        let slow_hosts: Vec<&str> = report.slow_hosts.iter().map(|h| h.host.as_str()).collect();
        let slow: Vec<usize> = report
            .slow_ranks
            .iter()
            .map(|s| s.rank)
            .chain(inputs.ranks.iter().copied().filter(|&r| {
                inputs
                    .placement
                    .get(r)
                    .is_some_and(|p| slow_hosts.contains(&p.host.as_str()))
            }))
            .collect();
        seen_artifacts.extend(bands(&format!("t:{size}"), inputs.ranks, ids, m, &slow));
    }
    seen_artifacts
}

/// The warnings about the measurement itself: repeats that vary as much as pairs differ, L of
/// 0, saturations that did not settle, hosts whose facts differ or contradict their ranks'
/// placement.
fn measurement_warnings(inputs: &ReportInputs, hosts: &HostsReport) -> Vec<String> {
    let mut warnings = Vec::new();
    // With one pair there is nothing to tell apart, and nothing to warn about.
    for s in inputs.spreads.iter().filter(|_| inputs.ranks.len() > 2) {
        if s.repeat_us >= s.between_us {
            warnings.push(format!(
                "at {}, repeated measurements of one pair vary as much as pairs differ \
                 ({:.3} us against {:.3} us): clustering this size is unreliable; measure with \
                 more {} or {}",
                s.size,
                s.repeat_us,
                s.between_us,
                Knob::Reps,
                Knob::Sweeps
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
    for line in &hosts.odd_lines {
        warnings.push(format!(
            "host facts differ from most hosts' ({line}): a slow host may be explained by them"
        ));
    }
    if let Some(n) = Some(hosts.placement_mismatches_count).filter(|&n| n > 0) {
        warnings.push(format!(
            "{n} rank(s) have a recorded placement their host's facts contradict (see \
             hosts.placement_mismatches)"
        ));
    }
    warnings
}

/// What is slow in a staged run, each size judged on its measured pairs (inside each host,
/// and those screened between hosts, with their repetitions' spread), each host, link and
/// rank kept at the size where it stands out most.
pub(crate) fn slow_in_blocks(by: &crate::host_blocks::ByHosts, placement: &[RankInfo]) -> Slow {
    let index = &by.blocks.index;
    let ranks: Vec<usize> = (0..index.ranks).collect();
    let ids = placement_ids(&ranks, placement);
    let host_of = index.host_of();
    let hosts: Vec<Option<&str>> = (host_of.iter())
        .map(|&h| index.hosts.get(h as usize).map(|e| e.name.as_str()))
        .collect();
    let rows = Rows {
        rank: &ranks,
        host: &hosts,
    };
    let mut slow = Slow::default();
    for (k, &bytes) in index.sizes.iter().enumerate() {
        let mut evidence = Vec::new();
        for (host, block) in index.hosts.iter().zip(&by.blocks.blocks) {
            let m = &block.values[k];
            for (a, &i) in host.ranks.iter().enumerate() {
                for (b, &j) in host.ranks.iter().enumerate().skip(a + 1) {
                    let c = class_index(ids[i], ids[j]);
                    evidence.extend(Evidence::new(i, j, c, m[[a, b]], f64::NAN));
                }
            }
        }
        let b = &by.between;
        for n in 0..b.i.len() {
            let (i, j) = (b.i[n] as usize, b.j[n] as usize);
            let sd = (b.p90_us[k][n] - b.p10_us[k][n]) / lgate_stats::P10_P90_SIGMAS;
            let c = class_index(ids[i], ids[j]);
            evidence.extend(Evidence::new(i, j, c, b.rtt_us[k][n], sd));
        }
        let name = format!("rtt:{}", MessageSize(bytes));
        slow.merge(judge(&evidence, CLASSES.len(), 0, rows, &name));
    }
    slow
}

/// The hosts' part of the report: how many hosts ran ranks and how many recorded facts, the
/// facts in which some hosts differ from most (`odd`, and one line per host in `odd_lines`),
/// and ranks whose placement contradicts their host's facts.
pub(crate) fn hosts_report(
    placement: &[RankInfo],
    hosts: &[lgate_rundir::HostFacts],
) -> HostsReport {
    let mut names: Vec<&str> = placement.iter().map(|r| r.host.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let odd = lgate_rundir::odd_hosts(hosts);
    let lines = lgate_rundir::odd_host_lines(&odd, hosts.len());
    let (mismatches, count) = lgate_rundir::placement_mismatches(placement, hosts, LISTED);
    HostsReport {
        count: names.len(),
        odd,
        odd_lines: lines,
        placement_mismatches: mismatches,
        placement_mismatches_count: count,
        with_facts: hosts.len(),
    }
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
        assert_eq!(report.slow_pairs_count, 0, "{report:?}");
        let classes: Vec<&str> = report.classes.iter().map(|c| c.class.as_str()).collect();
        assert_eq!(classes, ["same core", "same socket"]);
        // Without core ids, the siblings are the socket's slow pairs, as before.
        let unplaced: Vec<RankInfo> = placement
            .iter()
            .cloned()
            .map(|p| RankInfo { core: None, ..p })
            .collect();
        let ids = placement_ids(&ranks, &unplaced);
        let report = matrix_report("t", &ranks, &ids, &unplaced, &m);
        assert_eq!(report.slow_pairs_count, 4, "{report:?}");
    }

    /// Ranks on hosts of four, one socket each.
    fn hosts_of_four(ranks: usize) -> Vec<RankInfo> {
        (0..ranks)
            .map(|r| RankInfo {
                rank: r,
                host: format!("h{}", r / 4),
                pid: None,
                cpu: Some(r % 4),
                cpuset: None,
                core: Some(r % 4),
                socket: Some(0),
                numa: None,
                governor: None,
                machine: None,
                extra: Default::default(),
            })
            .collect()
    }

    #[test]
    fn a_noisy_host_and_a_noisy_pair_are_unstable() {
        let placement = hosts_of_four(32);
        let ranks: Vec<usize> = (0..32).collect();
        let ids = placement_ids(&ranks, &placement);
        // Repeat spread 0.1 us everywhere, 0.35 us for pairs with a rank on h2, 0.5 for 0-5.
        let spread = ndarray::Array2::from_shape_fn((32, 32), |(i, j)| match (i, j) {
            (i, j) if i == j => 0.0,
            (0, 5) | (5, 0) => 0.5,
            (i, j) if i / 4 == 2 || j / 4 == 2 => 0.35,
            _ => 0.1,
        });
        let m = DistanceMatrix::new(spread, None).unwrap();
        let u = unstable("t:0", &ranks, &ids, &placement, &m);
        let hosts: Vec<&str> = u.unstable_hosts.iter().map(|h| h.host.as_str()).collect();
        assert_eq!(hosts, ["h2"], "{u:#?}");
        // 0-5 (5x) first, then every pair of h2 (3.5x): 6 inside, 4 x 28 with the others.
        assert_eq!((u.unstable_pairs[0].i, u.unstable_pairs[0].j), (0, 5));
        assert_eq!(u.unstable_pairs_count, 1 + 6 + 4 * 28, "{u:#?}");
    }

    #[test]
    fn a_slow_host_is_named_with_its_factor_and_two_hosts_by_their_inside_pairs() {
        let placement = hosts_of_four(16);
        let ranks: Vec<usize> = (0..16).collect();
        let ids = placement_ids(&ranks, &placement);
        let values = ndarray::Array2::from_shape_fn((16, 16), |(i, j)| {
            let base = match (i, j) {
                (i, j) if i == j => 0.0,
                (i, j) if i / 4 == j / 4 => 0.3,
                _ => 1.0,
            };
            if i / 4 == 1 || j / 4 == 1 {
                base * 1.4
            } else {
                base
            }
        });
        let m = DistanceMatrix::new(values, None).unwrap();
        let report = matrix_report("t:0", &ranks, &ids, &placement, &m);
        let slow = &report.slow_hosts;
        assert_eq!(slow.len(), 1, "{report:#?}");
        assert_eq!(slow[0].host, "h1");
        assert_eq!(slow[0].ranks, 4);
        let factor = slow[0].factor;
        assert!((1.3..1.5).contains(&factor), "{factor}");
        // Two hosts: the pairs inside each tell which one is slow.
        let ranks: Vec<usize> = (0..8).collect();
        let ids = placement_ids(&ranks, &placement[..8]);
        let sub =
            DistanceMatrix::new(m.values().slice(ndarray::s![..8, ..8]).to_owned(), None).unwrap();
        let report = matrix_report("t:0", &ranks, &ids, &placement[..8], &sub);
        let slow: Vec<&str> = report.slow_hosts.iter().map(|h| h.host.as_str()).collect();
        assert_eq!(slow, ["h1"], "{report:#?}");
        // Two hosts of one rank each: their one pair cannot tell which one is slow.
        let ranks = vec![0, 4];
        let ids = placement_ids(&ranks, &placement);
        let pair = DistanceMatrix::new(
            ndarray::Array2::from_shape_fn((2, 2), |(i, j)| if i == j { 0.0 } else { 1.4 }),
            None,
        )
        .unwrap();
        let report = matrix_report("t:0", &ranks, &ids, &placement, &pair);
        assert!(report.slow_hosts.is_empty(), "{report:#?}");
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

    /// A staged run of `h` hosts of 4 ranks: inside each host 1 us, 4 pairs screened between
    /// each two hosts at `m(a, b)` us, at two sizes (the second twice the first), each value
    /// off by up to 2 % from pair to pair.
    fn staged(
        h: usize,
        m: impl Fn(usize, usize) -> f64,
    ) -> (crate::host_blocks::ByHosts, Vec<RankInfo>) {
        use lgate_tables::{BetweenPairs, HostBlock, HostEntry, HostIndex};
        let placement = hosts_of_four(4 * h);
        let hosts = (0..h)
            .map(|x| HostEntry {
                name: format!("h{x}"),
                ranks: (4 * x..4 * x + 4).collect(),
            })
            .collect();
        let wiggle = |i: usize, j: usize| 1.0 + 0.02 * (((i * 7 + j * 3) % 5) as f64 / 2.0 - 1.0);
        let block = |x: usize| HostBlock {
            values: [1.0, 2.0]
                .iter()
                .map(|f| {
                    ndarray::Array2::from_shape_fn((4, 4), |(a, b)| {
                        f * wiggle(4 * x + a, 4 * x + b) * m(x, x)
                    })
                })
                .collect(),
        };
        let mut between = BetweenPairs {
            rtt_us: vec![Vec::new(), Vec::new()],
            p10_us: vec![Vec::new(), Vec::new()],
            p90_us: vec![Vec::new(), Vec::new()],
            ..BetweenPairs::default()
        };
        for a in 0..h {
            for b in a + 1..h {
                for k in 0..4 {
                    let (i, j) = (4 * a + k, 4 * b + (k + 1) % 4);
                    between.host_i.push(a as u32);
                    between.host_j.push(b as u32);
                    between.i.push(i as u32);
                    between.j.push(j as u32);
                    between.sweeps.push(1);
                    for (s, f) in [1.0, 2.0].into_iter().enumerate() {
                        let v = f * m(a, b) * wiggle(i, j);
                        between.rtt_us[s].push(v);
                        between.p10_us[s].push(0.99 * v);
                        between.p90_us[s].push(1.01 * v);
                    }
                }
            }
        }
        let by = crate::host_blocks::ByHosts {
            blocks: lgate_tables::HostBlocks {
                index: HostIndex::new(4 * h, Estimator::Median, vec![0, 65536], hosts),
                blocks: (0..h).map(block).collect(),
                links: Default::default(),
            },
            between,
            measured: 0,
        };
        (by, placement)
    }

    #[test]
    fn a_staged_runs_slow_host_is_named_once() {
        // Six hosts in two leaves (10 us inside a leaf, 30 across, 1 inside a host); h4's
        // pairs 1.6 times slower, inside it too.
        let m = |a: usize, b: usize| {
            let base = match (a == b, a / 3 == b / 3) {
                (true, _) => 1.0,
                (_, true) => 10.0,
                _ => 30.0,
            };
            base * if a == 4 || b == 4 { 1.6 } else { 1.0 }
        };
        let (by, placement) = staged(6, m);
        let slow = slow_in_blocks(&by, &placement);
        assert_eq!(slow.hosts.len(), 1, "{slow:?}");
        assert_eq!(slow.hosts[0].host, "h4");
        assert!((slow.hosts[0].factor - 1.6).abs() < 0.05, "{slow:?}");
        assert_eq!(slow.hosts[0].ranks, 4);
        assert!(slow.ranks.is_empty(), "{slow:?}");
        // No host stands out: none; two hosts cannot tell which one is slow.
        let even = |a: usize, b: usize| if a / 3 == b / 3 { 10.0 } else { 30.0 };
        let (by, placement) = staged(6, even);
        assert_eq!(slow_in_blocks(&by, &placement), Slow::default());
        let (by, placement) = staged(2, m);
        assert!(slow_in_blocks(&by, &placement).hosts.is_empty());
    }
}
