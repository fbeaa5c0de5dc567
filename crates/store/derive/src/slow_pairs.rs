//! Pairs of ranks slow against the other pairs between the same two groups, and whether they
//! stayed slow when retested alone (the staged plan's alone stage; after `--sweep`, the slow
//! pairs each beside a usual pair of their groups): a pair slow only side by side was slowed
//! by the others' traffic, one slow alone too has a bad link, port or cable.

use std::collections::HashMap;

use lgate_rundir::{MessageSize, RankInfo, RetestedPair, RoundTrips, SLOW_PAIR_FACTOR};

use crate::host_blocks::ByHosts;

/// Per pair tested alone, the median over its sweeps of its round trip at the largest
/// screening size, seconds.
fn alone_values(
    alone: &[(u32, lgate_rundir::Pair, Vec<RoundTrips>)],
    bytes: usize,
) -> HashMap<(usize, usize), f64> {
    let mut all: HashMap<(usize, usize), Vec<f64>> = HashMap::new();
    for (_, pair, trips) in alone {
        if let Some(t) = trips.iter().find(|t| t.size == bytes) {
            if t.rtt.median.is_finite() {
                all.entry((pair.i, pair.j)).or_default().push(t.rtt.median);
            }
        }
    }
    (all.into_iter())
        .map(|(k, mut v)| (k, lgate_stats::median(&mut v)))
        .collect()
}

/// The pairs between groups tested alone whose screening side by side took at least
/// [`SLOW_PAIR_FACTOR`] times the median of their two groups' pairs, at the largest screening
/// size; each confirmed when alone it takes that many times the usual pairs of its groups
/// retested alone (the median side by side when none was), slowest first.
pub(crate) fn slow_pairs(
    by: &ByHosts,
    alone: &[(u32, lgate_rundir::Pair, Vec<RoundTrips>)],
    placement: &[RankInfo],
) -> Vec<RetestedPair> {
    let index = &by.blocks.index;
    let Some(k) = index.sizes.len().checked_sub(1) else {
        return Vec::new();
    };
    let bytes = index.sizes[k];
    let quiet = alone_values(alone, bytes);
    if quiet.is_empty() {
        return Vec::new();
    }
    let b = &by.between;
    // The tested-alone pairs between groups: side by side value (us) and their groups.
    let mut side: HashMap<(usize, usize), (f64, u32, u32)> = HashMap::new();
    for n in 0..b.i.len() {
        let key = (b.i[n] as usize, b.j[n] as usize);
        if quiet.contains_key(&key) {
            side.insert(key, (b.rtt_us[k][n], b.host_i[n], b.host_j[n]));
        }
    }
    let links = &by.blocks.links;
    let usual: HashMap<(u32, u32), f64> = (0..links.len())
        .map(|n| {
            let (a, c) = (links.host_i[n], links.host_j[n]);
            ((a.min(c), a.max(c)), links.median_us[k][n])
        })
        .collect();
    // Per pair of groups, the alone values (us) of its usual pairs.
    let mut usual_alone: HashMap<(u32, u32), Vec<f64>> = HashMap::new();
    let mut slow = Vec::new();
    for (&(i, j), &(side_us, ha, hb)) in &side {
        let groups = (ha.min(hb), ha.max(hb));
        let Some(&usual_us) = usual.get(&groups) else {
            continue;
        };
        let alone_us = quiet[&(i, j)] * 1e6;
        if side_us >= SLOW_PAIR_FACTOR * usual_us && usual_us > 0.0 {
            slow.push((i, j, groups, side_us, usual_us, alone_us));
        } else {
            usual_alone.entry(groups).or_default().push(alone_us);
        }
    }
    let host = |r: usize| placement.get(r).map(|x| x.host.clone());
    let mut out: Vec<RetestedPair> = (slow.into_iter())
        .map(|(i, j, groups, side_by_side_us, usual_us, alone_us)| {
            let usual_alone_us = (usual_alone.get_mut(&groups))
                .filter(|v| !v.is_empty())
                .map_or(f64::NAN, |v| lgate_stats::median(v));
            let reference = if usual_alone_us.is_finite() {
                usual_alone_us
            } else {
                usual_us
            };
            let factor = alone_us / reference;
            RetestedPair {
                i,
                j,
                host_i: host(i),
                host_j: host(j),
                size: MessageSize(bytes).to_string(),
                side_by_side_us,
                usual_us,
                alone_us,
                usual_alone_us,
                factor,
                confirmed: factor >= SLOW_PAIR_FACTOR,
            }
        })
        .collect();
    out.sort_by(|x, y| {
        y.factor
            .total_cmp(&x.factor)
            .then((x.i, x.j).cmp(&(y.i, y.j)))
    });
    out
}

/// A line of the run's health per slow pair that stayed slow alone.
pub(crate) fn slow_pair_lines(pairs: &[RetestedPair]) -> Vec<String> {
    (pairs.iter().filter(|p| p.confirmed))
        .map(|p| {
            let on = match (&p.host_i, &p.host_j) {
                (Some(a), Some(b)) => format!(" ({a} - {b})"),
                _ => String::new(),
            };
            format!(
                "pair {}-{}{on} is slow: {:.2}x the usual pair of its hosts alone, {:.2}x side \
                 by side, at {}: a bad link, port or cable",
                p.i,
                p.j,
                p.factor,
                p.side_by_side_us / p.usual_us,
                p.size
            )
        })
        .collect()
}
