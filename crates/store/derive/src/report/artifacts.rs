//! Unstable pairs and hosts, and the known artifacts of a measurement: the slow first pair,
//! bands of pairs measured slower together.

use super::*;
use lgate_knobs::Knob;

/// Unstable pairs and hosts of one spread matrix: pairs whose repeat spread is at least
/// [`UNSTABLE_PAIR`] times their class's median spread; hosts whose ranks' median spread
/// ratio is at least [`UNSTABLE_HOST`] times the other hosts' median.
pub(super) fn unstable(
    name: &str,
    ranks: &[usize],
    ids: &[Place],
    placement: &[RankInfo],
    m: &DistanceMatrix,
) -> UnstableReport {
    let n = ranks.len();
    let centers: Vec<f64> = class_stats(ids, m).iter().map(|c| c.0).collect();
    let mut pairs = Vec::new();
    let mut count = 0;
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); n];
    for a in 0..n {
        for b in a + 1..n {
            let c = class_index(ids[a], ids[b]);
            if centers[c] <= 0.0 {
                continue;
            }
            let r = m.get(a, b) / centers[c];
            ratios[a].push(r);
            ratios[b].push(r);
            if r >= UNSTABLE_PAIR {
                count += 1;
                pairs.push((r, a, b));
                if pairs.len() > 4 * LISTED {
                    pairs.sort_by(|x: &(f64, usize, usize), y| y.0.total_cmp(&x.0));
                    pairs.truncate(LISTED);
                }
            }
        }
    }
    pairs.sort_by(|x, y| y.0.total_cmp(&x.0));
    pairs.truncate(LISTED);
    let mut by_host: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (a, mut v) in ratios.into_iter().enumerate() {
        if v.is_empty() {
            continue;
        }
        if let Some(p) = placement.get(ranks[a]) {
            by_host
                .entry(p.host.clone())
                .or_default()
                .push(median(&mut v));
        }
    }
    // Against the other hosts: with few hosts one host's pairs are much of their class, and
    // move its median.
    let scores: Vec<(String, f64)> = by_host
        .into_iter()
        .map(|(h, mut v)| (h, median(&mut v)))
        .collect();
    let typical = median(&mut scores.iter().map(|x| x.1).collect::<Vec<_>>());
    let unstable_hosts: Vec<UnstableHost> = scores
        .into_iter()
        .filter(|(_, r)| typical > 0.0 && *r >= UNSTABLE_HOST * typical)
        .map(|(host, r)| UnstableHost {
            host,
            median_spread_ratio: r / typical,
        })
        .collect();
    UnstableReport {
        matrix: name.to_string(),
        unstable_hosts,
        unstable_pairs: pairs
            .iter()
            .map(|&(r, a, b)| UnstablePair {
                i: ranks[a],
                j: ranks[b],
                spread_ratio: r,
                spread_us: m.get(a, b),
            })
            .collect(),
        unstable_pairs_count: count,
    }
}

/// A pair is unstable when its repeat spread is this many times its class's median.
pub const UNSTABLE_PAIR: f64 = 3.0;
/// A host is unstable when its ranks' median spread ratio is this much.
pub const UNSTABLE_HOST: f64 = 2.0;
/// The slow first pair: ranks 0 and 1 at least this many times their class median.
pub const FIRST_PAIR: f64 = 1.3;

/// The known artifacts seen in one matrix: the slow first pair.
pub(super) fn artifacts(
    name: &str,
    ranks: &[usize],
    ids: &[Place],
    m: &DistanceMatrix,
    report: &MatrixReport,
) -> Vec<Artifact> {
    let mut out = Vec::new();
    let (Some(a), Some(b)) = (
        ranks.iter().position(|&r| r == 0),
        ranks.iter().position(|&r| r == 1),
    ) else {
        return out;
    };
    let class = CLASSES[class_index(ids[a], ids[b])];
    let Some(c) = report.classes.iter().find(|c| c.class == class) else {
        return out;
    };
    let (center, sigma) = (defined(c.median_us), defined(c.robust_sigma_us));
    let slow_rank = report.slow_ranks.iter().any(|s| s.rank == 0 || s.rank == 1);
    let v = m.get(a, b);
    if center > 0.0
        && v >= FIRST_PAIR * center
        && stands_out(v, center, sigma).is_some()
        && !slow_rank
    {
        out.push(Artifact::SlowFirstPair {
            matrix: name.to_string(),
            pairs: vec![[0, 1]],
            ratio: v / center,
            why: format!(
                "ranks 0 and 1, measured first, stand out from their class while neither rank \
                 is slow (thesis section 5.1.1): a warm-up of the whole job, not the machine; \
                 measure with more {}, or take the pair again",
                Knob::Sweeps
            ),
        });
    }
    out
}

/// Offsets with at least this many pairs are judged for bands.
const BAND_PAIRS: usize = 8;
/// A band is an offset whose pairs' median ratio is this many times that of the offsets two
/// below and two above ...
pub const BAND_FACTOR: f64 = 1.04;
/// ... and stands this many robust standard deviations above the offsets' usual such ratio.
const BAND_SIGMAS: f64 = 5.0;

/// Bands at fixed rank offsets (thesis section 5.1.2): pairs (i, i + d) slower than their
/// class, as a spike over the offsets d - 2 and d + 2 (a level boundary moves the median of an
/// offset's pairs as a step, not a spike; two apart keeps the parity a round-robin placement
/// gives the sockets). Pairs with a slow rank or a rank of a slow host are left out, and out
/// of the class medians: a slow node's share of an offset's pairs passes one half near some
/// offsets, which moves their median as a spike.
/// Judged when every rank was tested; one offset's pairs at a time.
pub(super) fn bands(
    name: &str,
    ranks: &[usize],
    ids: &[Place],
    m: &DistanceMatrix,
    slow: &[usize],
) -> Vec<Artifact> {
    let n = ranks.len();
    if ranks.iter().enumerate().any(|(k, &r)| k != r) || n < BAND_PAIRS + 4 {
        return Vec::new();
    }
    let mut is_slow = vec![false; n];
    for &r in slow.iter().filter(|&&r| r < n) {
        is_slow[r] = true;
    }
    // Class medians without the slow ranks, which can be half a class and move its median.
    let mut by_class: Vec<Vec<f64>> = vec![Vec::new(); CLASSES.len()];
    for a in (0..n).filter(|&a| !is_slow[a]) {
        for b in (a + 1..n).filter(|&b| !is_slow[b]) {
            by_class[class_index(ids[a], ids[b])].push(m.get(a, b));
        }
    }
    let centers: Vec<f64> = by_class.iter_mut().map(|v| median(v)).collect();
    drop(by_class);
    let mut buffer = Vec::with_capacity(n);
    // Per offset d (index d): the median ratio of its pairs to their class medians.
    let mut by_offset = vec![f64::NAN; n - BAND_PAIRS + 1];
    for (d, slot) in by_offset.iter_mut().enumerate().skip(1) {
        buffer.clear();
        buffer.extend(
            (0..n - d)
                .filter(|&a| !is_slow[a] && !is_slow[a + d])
                .filter_map(|a| {
                    let c = centers[class_index(ids[a], ids[a + d])];
                    (c > 0.0).then(|| m.get(a, a + d) / c)
                }),
        );
        if buffer.len() >= BAND_PAIRS {
            *slot = median(&mut buffer);
        }
    }
    let spikes: Vec<(usize, f64)> = (3..by_offset.len().saturating_sub(2))
        .filter_map(|d| {
            let around = by_offset[d - 2].max(by_offset[d + 2]);
            let x = by_offset[d] / around;
            x.is_finite().then_some((d, x))
        })
        .collect();
    let mut all: Vec<f64> = spikes.iter().map(|s| s.1).collect();
    if all.len() < 5 {
        return Vec::new();
    }
    let center = median(&mut all);
    let sigma = robust_sigma(&all, center);
    spikes
        .into_iter()
        .filter(|&(_, x)| x >= BAND_FACTOR * center && x - center > BAND_SIGMAS * sigma)
        .map(|(d, x)| Artifact::Band {
            matrix: name.to_string(),
            offset: d,
            over_neighbours: x,
            pairs: n - d,
            ratio: by_offset[d],
            why: format!(
                "the pairs of ranks {d} apart (i, i + {d}) are slower than their class and \
                     than the pairs {} and {} apart (thesis section 5.1.2): a band of the \
                     schedule or the network's routing, not a level",
                d - 2,
                d + 2
            ),
        })
        .collect()
}
