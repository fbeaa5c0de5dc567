//! How sure `auto` is of the levels it found: a residual bootstrap of the distance matrix.
//!
//! The levels found split the pairs into blocks (the pairs between two groups of the finest
//! level, or inside one). A pair's residual is its distance over its block's centre: its
//! median, or its least where the blocks of its class agree on their least better (a floor
//! with delays above it, as on a busy machine). A resample keeps every block's centre and gives
//! each pair a residual drawn, with replacement, from the residuals of the pairs of its class
//! (the pairs that share the same number of levels), so
//! the noise the measurements showed is dealt out anew while the structure stays. `auto` then
//! clusters each resample. A level's confidence is the share of resamples in which its groups
//! came back exactly; the topology's is the share that gave exactly its levels (for one group:
//! no level at all). Levels that resamples made and the topology does not hold are undecided:
//! the evidence almost shows them. Residuals are ratios, since measured latencies vary in
//! proportion to their size; slow ranks are divided out first, as `auto` does.

use std::collections::HashMap;

use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::Serialize;

use crate::auto::{auto, AutoParams, Tree};

/// The most items clustered again by default: each resample costs what the clustering does
/// (0.08 s at 256 ranks here), so above this confidence is estimated only when asked for.
pub const DEFAULT_MAX_ITEMS: usize = 512;

/// The resamples made by default for a matrix of `items`: 20 up to 128, 8 up to
/// [`DEFAULT_MAX_ITEMS`], none above.
pub fn default_resamples(items: usize) -> usize {
    match items {
        0..=128 => 20,
        129..=DEFAULT_MAX_ITEMS => 8,
        _ => 0,
    }
}
/// A level the resamples made at least this often is reported as undecided.
pub const UNDECIDED_SHARE: f64 = 0.2;
/// A level found is reported as decided at this confidence or more.
pub const DECIDED: f64 = 0.9;
/// The least share of `resamples` resamples that must give a level found back for it to be
/// kept: more often present than not, at 95 % one-sided (0.5 + 1.645 standard errors of a share
/// of 0.5). 14 of 20 resamples, 7 of 8. A level given back less often is reported undecided.
pub fn kept_share(resamples: usize) -> f64 {
    0.5 + 1.645 * 0.5 / (resamples.max(1) as f64).sqrt()
}

/// How sure the clustering is of its levels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stability {
    /// Resamples clustered.
    pub resamples: usize,
    /// Per level found (coarsest first): the share of resamples with exactly its groups.
    pub levels: Vec<f64>,
    /// The share of resamples with exactly the levels found (none, for one group).
    pub same_levels: f64,
    /// Levels the resamples made at least [`UNDECIDED_SHARE`] of the time that were not
    /// found: (groups, share), most often first.
    pub undecided: Vec<(usize, f64)>,
    /// The levels judged, as canonical labels over the matrix's items, coarsest first.
    #[serde(skip)]
    pub level_labels: Vec<Vec<usize>>,
    /// The undecided levels' labels, in `undecided`'s order.
    #[serde(skip)]
    undecided_labels: Vec<Vec<usize>>,
    /// Each resample's levels.
    #[serde(skip)]
    found: Vec<Vec<Vec<usize>>>,
}

/// Labels renumbered by first appearance, so that equal partitions compare equal.
fn canonical(labels: &[usize]) -> Vec<usize> {
    let mut ids: HashMap<usize, usize> = HashMap::new();
    labels
        .iter()
        .map(|&l| {
            let next = ids.len();
            *ids.entry(l).or_insert(next)
        })
        .collect()
}

/// The levels of `tree` (over `n` items) as canonical labels, coarsest first.
fn levels_of(tree: &Tree, n: usize) -> Vec<Vec<usize>> {
    match crate::topology_of(tree, n, None) {
        Ok(t) => t.levels().iter().map(|l| canonical(&l.labels(n))).collect(),
        Err(_) => Vec::new(),
    }
}

/// The stability of `levels` (per level, one label per item of `d`, coarsest first) found by
/// `auto` with `params` in `d`, whose `slow` items were divided out, over `resamples`
/// residual-bootstrap resamples drawn from `seed`.
pub fn stability(
    d: &Array2<f64>,
    levels: &[Vec<usize>],
    slow: &[(usize, f64)],
    params: &AutoParams,
    resamples: usize,
    seed: u64,
) -> Stability {
    let fit = |r: &[Array2<f64>]| auto(&r[0], params);
    stability_kept(&[d], levels, slow, &fit, (resamples, seed), &|_| true, None)
}

/// Which pairs of a matrix were measured, and how the others were filled: each with the
/// median of the measured pairs between the same two groups.
#[derive(Debug, Clone, Copy)]
pub struct Fill<'a> {
    /// Per pair, whether it was measured.
    pub measured: &'a Array2<bool>,
    /// Per item, its group (its host).
    pub groups: &'a [usize],
}

/// [`stability`] of the matrix `sizes[0]`, with `fit` clustering each resample (`auto`, or
/// `auto` by hosts), counting only the resamples' levels that `keep` (labels per item)
/// accepts, as the topology kept only such levels. The same items' matrices at other sizes
/// (`sizes[1..]`) are resampled with it, each pair drawing one pair's residuals at every size,
/// and `fit` takes them all (the first clustered).
pub fn stability_kept(
    sizes: &[&Array2<f64>],
    levels: &[Vec<usize>],
    slow: &[(usize, f64)],
    fit: &(dyn Fn(&[Array2<f64>]) -> Tree + Sync),
    (resamples, seed): (usize, u64),
    keep: &(dyn Fn(&[usize]) -> bool + Sync),
    fill: Option<Fill>,
) -> Stability {
    let n = sizes.first().map_or(0, |d| d.nrows());
    // Only measured pairs are evidence; filled ones are made again from them.
    let measured = |a: usize, b: usize| fill.is_none_or(|f| f.measured[[a, b]]);
    // Slow items divided out of every size (as found on the first).
    let ms: Vec<std::borrow::Cow<'_, Array2<f64>>> = (sizes.iter())
        .map(|&d| match slow.is_empty() {
            true => std::borrow::Cow::Borrowed(d),
            false => std::borrow::Cow::Owned(crate::outliers::without_slowness(d, slow)),
        })
        .collect();
    let levels: Vec<Vec<usize>> = levels.iter().map(|l| canonical(l)).collect();
    let finest: Vec<usize> = levels.last().cloned().unwrap_or_else(|| vec![0; n]);
    let class = |a: usize, b: usize| levels.iter().filter(|l| l[a] == l[b]).count();
    let block = |a: usize, b: usize| {
        let (x, y) = (finest[a], finest[b]);
        (x.min(y), x.max(y))
    };
    let usable = |v: f64| v.is_finite() && v > 0.0;
    // Per size, block centres ([`centres`]); then per class, each pair's residuals (ratios to
    // its block's centre) at every size, NaN where it has none.
    let centre: Vec<HashMap<(usize, usize), f64>> = (ms.iter())
        .map(|m| {
            let mut values: Blocks = HashMap::new();
            for a in 0..n {
                for b in (a + 1..n).filter(|&b| measured(a, b) && usable(m[[a, b]])) {
                    let e = values
                        .entry(block(a, b))
                        .or_insert((class(a, b), Vec::new()));
                    e.1.push(m[[a, b]]);
                }
            }
            centres(values)
        })
        .collect();
    let residual = |s: usize, a: usize, b: usize| {
        let v = ms[s][[a, b]];
        match centre[s].get(&block(a, b)) {
            Some(&mid) if mid > 0.0 && usable(v) => v / mid,
            _ => f64::NAN,
        }
    };
    let mut pools: Vec<Vec<Vec<f64>>> = vec![Vec::new(); levels.len() + 1];
    for a in 0..n {
        for b in (a + 1..n).filter(|&b| measured(a, b)) {
            let r: Vec<f64> = (0..ms.len()).map(|s| residual(s, a, b)).collect();
            if r[0].is_finite() {
                pools[class(a, b)].push(r);
            }
        }
    }
    let found: Vec<Vec<Vec<usize>>> = (0..resamples)
        .into_par_iter()
        .map(|k| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_add(k as u64));
            let mut rs = vec![Array2::<f64>::zeros((n, n)); ms.len()];
            for a in 0..n {
                for b in (a + 1..n).filter(|&b| measured(a, b)) {
                    let pool = &pools[class(a, b)];
                    let drawn = (!pool.is_empty()).then(|| &pool[rng.random_range(0..pool.len())]);
                    for (s, r) in rs.iter_mut().enumerate() {
                        let v = match (centre[s].get(&block(a, b)), drawn) {
                            (Some(&mid), Some(res)) if res[s].is_finite() => mid * res[s],
                            _ => ms[s][[a, b]],
                        };
                        r[[a, b]] = v;
                        r[[b, a]] = v;
                    }
                }
            }
            if let Some(f) = fill {
                for (r, m) in rs.iter_mut().zip(&ms) {
                    refill(r, m, f);
                }
            }
            let mut found = levels_of(&fit(&rs), n);
            found.retain(|l| keep(l));
            found
        })
        .collect();
    judge(found, levels, resamples, &[])
}

/// The blocks of a matrix: per block (the two groups of the finest level it lies between), its
/// class and its pairs' values.
type Blocks = HashMap<(usize, usize), (usize, Vec<f64>)>;

/// One block's class, size, median and least.
struct BlockSummary {
    class: usize,
    pairs: usize,
    median: f64,
    least: f64,
}

/// Each block's centre: its median, or its least where the blocks of its class agree better on
/// their least than on their median (their logarithms' median absolute deviation). Latencies
/// measured on a busy machine are a floor with delays above it: where whole tests were slowed,
/// a block's median moves with how many of its pairs were, its least does not, and the
/// residuals that the resamples deal out are then those delays; where the noise is alike both
/// ways the two are about as steady.
fn centres(blocks: Blocks) -> HashMap<(usize, usize), f64> {
    let summary: Vec<((usize, usize), BlockSummary)> = (blocks.into_iter())
        .map(|(k, (class, mut v))| {
            let least = v.iter().copied().fold(f64::INFINITY, f64::min);
            let pairs = v.len();
            let median = lgate_stats::median(&mut v);
            (
                k,
                BlockSummary {
                    class,
                    pairs,
                    median,
                    least,
                },
            )
        })
        .collect();
    let classes: std::collections::BTreeSet<usize> = summary.iter().map(|s| s.1.class).collect();
    let by_least: std::collections::HashSet<usize> = (classes.into_iter())
        .filter(|&c| {
            let of = |pick: fn(&BlockSummary) -> f64| -> Vec<f64> {
                (summary.iter())
                    .filter(|(_, s)| s.class == c && s.pairs >= 2)
                    .map(|(_, s)| pick(s).ln())
                    .collect()
            };
            let (mut mid, mut least) = (of(|s| s.median), of(|s| s.least));
            mid.len() >= BLOCKS_TO_CHOOSE
                && lgate_stats::mad(&mut least) < lgate_stats::mad(&mut mid)
        })
        .collect();
    (summary.into_iter())
        .map(|(k, s)| match by_least.contains(&s.class) {
            true => (k, s.least),
            false => (k, s.median),
        })
        .collect()
}

/// The fewest blocks of two pairs or more a class needs for its blocks' least to be chosen as
/// their centre over their median.
const BLOCKS_TO_CHOOSE: usize = 3;

/// Gives each pair of `r` that `fill` marks as not measured the median of the measured pairs
/// of `r` between the same two groups (as the run filled it), or its value in `m` when none
/// was measured between them.
fn refill(r: &mut Array2<f64>, m: &Array2<f64>, fill: Fill) {
    let n = r.nrows();
    let key = |a: usize, b: usize| {
        let (x, y) = (fill.groups[a], fill.groups[b]);
        (x.min(y), x.max(y))
    };
    let mut values: HashMap<(usize, usize), Vec<f64>> = HashMap::new();
    for a in 0..n {
        for b in (a + 1..n).filter(|&b| fill.measured[[a, b]]) {
            values.entry(key(a, b)).or_default().push(r[[a, b]]);
        }
    }
    let medians: HashMap<(usize, usize), f64> = values
        .into_iter()
        .map(|(k, mut v)| (k, lgate_stats::median(&mut v)))
        .collect();
    for a in 0..n {
        for b in (a + 1..n).filter(|&b| !fill.measured[[a, b]]) {
            let v = medians.get(&key(a, b)).copied().unwrap_or(m[[a, b]]);
            r[[a, b]] = v;
            r[[b, a]] = v;
        }
    }
}

/// The shares of `levels` among the levels each resample `found`; `always` are listed as
/// undecided whenever they are not among `levels`, however seldom they came back.
fn judge(
    found: Vec<Vec<Vec<usize>>>,
    levels: Vec<Vec<usize>>,
    resamples: usize,
    always: &[Vec<usize>],
) -> Stability {
    let share = |count: usize| {
        if resamples == 0 {
            0.0
        } else {
            count as f64 / resamples as f64
        }
    };
    let per_level = (levels.iter())
        .map(|l| share(found.iter().filter(|f| f.contains(l)).count()))
        .collect();
    let same = found
        .iter()
        .filter(|f| f.len() == levels.len() && levels.iter().all(|l| f.contains(l)))
        .count();
    let mut others: HashMap<&Vec<usize>, usize> = always
        .iter()
        .filter(|l| !levels.contains(l))
        .map(|l| (l, 0))
        .collect();
    for f in &found {
        for l in f.iter().filter(|l| !levels.contains(l)) {
            *others.entry(l).or_default() += 1;
        }
    }
    let mut undecided: Vec<(Vec<usize>, f64)> = others
        .into_iter()
        .filter(|&(l, c)| share(c) >= UNDECIDED_SHARE || always.contains(l))
        .map(|(l, c)| (l.clone(), share(c)))
        .collect();
    let groups = |l: &[usize]| l.iter().max().map_or(0, |&g| g + 1);
    undecided.sort_by(|a, b| {
        (b.1.total_cmp(&a.1))
            .then(groups(&a.0).cmp(&groups(&b.0)))
            .then(a.0.cmp(&b.0))
    });
    Stability {
        resamples,
        levels: per_level,
        same_levels: share(same),
        undecided: undecided.iter().map(|(l, s)| (groups(l), *s)).collect(),
        level_labels: levels,
        undecided_labels: undecided.into_iter().map(|(l, _)| l).collect(),
        found,
    }
}

/// `topology` (what `auto` found as `tree` in `input`'s dense matrix, `slow` items set
/// aside) with the confidence of each level and of the whole from `resamples` resamples; as
/// it is for host blocks, for no resamples, and for another method than `auto`.
pub fn attach(
    input: &crate::ClusterInput,
    topology: lgate_topology::Topology,
    method: &crate::methods::Method,
    (tree, slow): (&Tree, &[(usize, f64)]),
    resamples: usize,
) -> Result<(lgate_topology::Topology, Option<Stability>), lgate_topology::TopologyError> {
    let (Some(matrix), Some(&auto_params)) = (input.dense(), method.auto()) else {
        return Ok((topology, None));
    };
    if resamples == 0 {
        return Ok((topology, None));
    }
    // A matrix with filled pairs: which were measured, and the hosts they were filled by.
    let filled = input.filled.is_some_and(|(filled, _)| filled > 0);
    let fill = match (filled, &input.mask, &input.hosts) {
        (false, _, _) => None,
        (true, Some(mask), Some(hosts)) => match measured_pairs(mask, &input.ranks, hosts) {
            Some(fill) => Some(fill),
            None => return Ok((topology, None)),
        },
        (true, _, _) => return Ok((topology, None)),
    };
    let d = matrix.values();
    let n = d.nrows();
    let size = input.job_size.max(topology.ranks());
    // The levels reported, over the matrix's items; the tree's other levels were left out.
    let reported: Vec<Vec<usize>> = (levels_of(tree, n).into_iter())
        .filter(|l| {
            (topology.levels().iter())
                .any(|level| canonical(&level.labels_of(&input.ranks, size)) == *l)
        })
        .collect();
    // A resample's level is counted where the topology would keep it: not splitting ranks
    // free to share CPUs.
    let keep = |labels: &[usize]| {
        let Some(placement) = &input.placement else {
            return true;
        };
        let mut by_rank = vec![usize::MAX; size];
        for (item, &rank) in input.ranks.iter().enumerate() {
            if let Some(slot) = by_rank.get_mut(rank) {
                *slot = labels[item];
            }
        }
        placement.split_of_shared_cpus(&by_rank).is_none()
    };
    let fill = fill
        .as_ref()
        .map(|(measured, groups)| Fill { measured, groups });
    // Each resample clustered as the matrix was: by hosts when its items are on hosts.
    let hosts = input.dense_hosts();
    let sizes: Vec<&Array2<f64>> = match &hosts {
        Some(hosts) => std::iter::once(d)
            .chain((hosts.other_sizes.iter()).map(|m| &**m))
            .filter(|m| m.dim() == d.dim())
            .collect(),
        None => vec![d],
    };
    let fit = |rs: &[Array2<f64>]| match &hosts {
        Some(hosts) => {
            let resampled = crate::by_hosts::DenseHosts {
                other_sizes: rs[1..]
                    .iter()
                    .map(|m| std::sync::Arc::new(m.clone()))
                    .collect(),
                ..hosts.clone()
            };
            crate::dense_by_hosts(&rs[0], &resampled, &auto_params)
                .map_or_else(|_| auto(&rs[0], &auto_params), |c| c.tree)
        }
        None => auto(&rs[0], &auto_params),
    };
    let first = stability_kept(
        &sizes,
        &reported,
        slow,
        &fit,
        (resamples, SEED),
        &keep,
        fill,
    );
    // Levels the resamples do not show more often than not are not kept, but said.
    let (kept, dropped): (Vec<usize>, Vec<usize>) =
        (0..reported.len()).partition(|&k| first.levels[k] >= kept_share(resamples));
    let dropped: Vec<Vec<usize>> = dropped.into_iter().map(|k| reported[k].clone()).collect();
    let kept: Vec<Vec<usize>> = kept.into_iter().map(|k| reported[k].clone()).collect();
    let s = judge(first.found, kept, resamples, &dropped);
    let topology = with_confidence(topology, input, size, &s, &dropped, resamples)?;
    Ok((topology, Some(s)))
}

/// `topology` with each level's confidence (`s`, the resamples' verdict), the levels the
/// resamples do not show more often than not (`dropped`) left out and said among the
/// undecided, with their names.
fn with_confidence(
    topology: lgate_topology::Topology,
    input: &crate::ClusterInput,
    size: usize,
    s: &Stability,
    dropped: &[Vec<usize>],
    resamples: usize,
) -> Result<lgate_topology::Topology, lgate_topology::TopologyError> {
    let mut names: Vec<(Vec<usize>, String)> = Vec::new();
    let mut levels: Vec<lgate_topology::Level> = Vec::new();
    for level in topology.levels() {
        let labels = canonical(&level.labels_of(&input.ranks, size));
        match s.level_labels.iter().position(|l| *l == labels) {
            Some(k) => levels.push(lgate_topology::Level {
                confidence: Some(s.levels[k]),
                ..level.clone()
            }),
            None if dropped.contains(&labels) => names.push((labels, level.name.clone())),
            None => levels.push(level.clone()),
        }
    }
    let confidence = lgate_topology::Confidence {
        resamples,
        same_levels: s.same_levels,
        undecided: (s.undecided_labels.iter().zip(&s.undecided))
            .map(
                |(labels, &(groups, share))| lgate_topology::UndecidedLevel {
                    groups,
                    share,
                    name: (names.iter())
                        .find(|(l, _)| l == labels)
                        .map(|(_, name)| name.clone()),
                    members: members_of(labels, &input.ranks),
                    z: None,
                },
            )
            .collect(),
    };
    let topology = if names.is_empty() {
        topology.with_levels(levels)?
    } else {
        // The levels kept, nested as they were; the labels and slow ranks stay.
        topology.keeping_levels(levels)?
    };
    Ok(topology.with_confidence(Some(confidence)))
}

/// The ranks of each group of `labels` (one label per rank of `ranks`, numbered from 0 in
/// order of first appearance, as [`canonical`] makes them).
fn members_of(labels: &[usize], ranks: &[lgate_topology::Rank]) -> Vec<Vec<lgate_topology::Rank>> {
    let mut groups: Vec<Vec<lgate_topology::Rank>> = Vec::new();
    for (&label, &rank) in labels.iter().zip(ranks) {
        if label >= groups.len() {
            groups.resize_with(label + 1, Vec::new);
        }
        groups[label].push(rank);
    }
    groups.retain(|g| !g.is_empty());
    groups
}

/// How many of the levels `auto` found as `tree` in `input` (`slow` items set aside) its
/// confidence keeps, as `cluster` reports them; `None` when it is not estimated (no resamples,
/// host blocks, filled pairs that cannot be told).
pub fn sure_levels(
    input: &crate::ClusterInput,
    tree: &Tree,
    slow: &[(usize, f64)],
    method: &crate::methods::Method,
    resamples: usize,
) -> Option<usize> {
    let (topology, _) = input.placed_topology(tree).ok()?;
    let (topology, stability) = attach(input, topology, method, (tree, slow), resamples).ok()?;
    stability.map(|_| topology.levels().len())
}

/// The measured pairs of a dense matrix of `ranks` from its mask file, and each item's host
/// (numbered); `None` when the mask cannot be read or does not fit.
fn measured_pairs(
    mask: &std::path::Path,
    ranks: &[usize],
    hosts: &[String],
) -> Option<(Array2<bool>, Vec<usize>)> {
    let measured = crate::input::measured_mask(mask, ranks.len())?;
    let mut ids: HashMap<&str, usize> = HashMap::new();
    let groups = (ranks.iter())
        .map(|&r| {
            let host = hosts.get(r).map_or("", String::as_str);
            let next = ids.len();
            *ids.entry(host).or_insert(next)
        })
        .collect();
    Some((measured, groups))
}

/// The resamples' seed: the same answer for the same matrix, every time.
const SEED: u64 = 0x5eed_c0f1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_is_kept_when_resamples_show_it_more_often_than_not() {
        // 14 of 20 and 7 of 8 are enough, 13 of 20 and 6 of 8 are not.
        assert!(14.0 / 20.0 >= kept_share(20) && 13.0 / 20.0 < kept_share(20));
        assert!(7.0 / 8.0 >= kept_share(8) && 6.0 / 8.0 < kept_share(8));
    }
    use rand_distr::{Distribution, LogNormal};

    /// 12 blocks of 4 pairs of one class around 10 to 11.1: each pair either its block's floor
    /// (0.5 % off) or, one time in three, that floor plus 6 or 12 (`slowed`); else log-normal
    /// 5 % around it. The centres chosen, one per block in order.
    fn centres_of(slowed: bool, seed: u64) -> Vec<(f64, f64, f64)> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let noise = LogNormal::new(0.0, 0.05).unwrap();
        let blocks: Blocks = (0..12)
            .map(|b| {
                let floor = 10.0 + 0.1 * b as f64;
                let v: Vec<f64> = (0..4)
                    .map(|_| match slowed {
                        true => {
                            let add = match rng.random_range(0.0..1.0) {
                                u if u < 0.2 => 6.0,
                                u if u < 0.33 => 12.0,
                                _ => 0.0,
                            };
                            floor * (1.0 + 0.005 * rng.random_range(-1.0..1.0)) + add
                        }
                        false => floor * noise.sample(&mut rng),
                    })
                    .collect();
                ((b, b + 1), (0, v))
            })
            .collect();
        let mut summary: Vec<_> = blocks.clone().into_iter().collect();
        summary.sort_by_key(|s| s.0);
        let chosen = centres(blocks);
        (summary.into_iter())
            .map(|(k, (_, mut v))| {
                let least = v.iter().copied().fold(f64::INFINITY, f64::min);
                (chosen[&k], least, lgate_stats::median(&mut v))
            })
            .collect()
    }

    #[test]
    fn a_block_is_centred_on_its_least_where_its_class_agrees_on_that() {
        // Delays that only add: the least is each block's floor, the median moves with how
        // many of its pairs were slowed. 97 of 100 draws here.
        let by_least = (0..100)
            .filter(|&seed| centres_of(true, seed).iter().all(|c| c.0 == c.1))
            .count();
        assert!(
            by_least >= 90,
            "the least chosen in {by_least} of 100 draws"
        );
        // Noise alike both ways: the two are about as steady over the blocks (the median
        // chosen in 58 of 100 draws), and the one chosen is one of them, for every block.
        for seed in 0..100 {
            for (c, least, median) in centres_of(false, seed) {
                assert!(c == least || c == median, "seed {seed}");
            }
            let chosen = centres_of(false, seed);
            assert!(
                chosen.iter().all(|c| c.0 == c.1) || chosen.iter().all(|c| c.0 == c.2),
                "seed {seed}: one centre for the whole class"
            );
        }
    }

    /// Two groups of `k` ranks at 1 inside and `far` between, times log-normal noise `sigma`.
    fn two_groups(k: usize, far: f64, sigma: f64, seed: u64) -> Array2<f64> {
        let n = 2 * k;
        let noise = LogNormal::new(0.0, sigma).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut d = Array2::zeros((n, n));
        for a in 0..n {
            for b in a + 1..n {
                let base = if a / k == b / k { 1.0 } else { far };
                let v = base * noise.sample(&mut rng);
                d[[a, b]] = v;
                d[[b, a]] = v;
            }
        }
        d
    }

    fn levels(d: &Array2<f64>) -> Vec<Vec<usize>> {
        levels_of(&auto(d, &AutoParams::default()), d.nrows())
    }

    #[test]
    fn a_clear_level_comes_back_in_every_resample() {
        let d = two_groups(8, 3.0, 0.05, 1);
        let l = levels(&d);
        assert_eq!(l.len(), 1);
        let s = stability(&d, &l, &[], &AutoParams::default(), 20, 7);
        assert_eq!(s.levels, vec![1.0]);
        assert_eq!(s.same_levels, 1.0);
        assert!(s.undecided.is_empty());
    }

    #[test]
    fn a_flat_matrix_is_one_group_with_high_confidence() {
        let d = two_groups(8, 1.0, 0.08, 2);
        let l = levels(&d);
        assert!(l.is_empty(), "{l:?}");
        let s = stability(&d, &l, &[], &AutoParams::default(), 20, 7);
        assert!(s.same_levels >= DECIDED, "{s:?}");
        assert!(s.levels.is_empty());
    }

    #[test]
    fn a_level_at_the_edge_of_the_noise_is_less_sure_than_a_clear_one() {
        // Groups 1.3x apart under 15 % noise: auto's decision turns on the draw.
        let clear = two_groups(8, 3.0, 0.15, 3);
        let edge = two_groups(8, 1.3, 0.15, 3);
        let p = AutoParams::default();
        let sure = stability(&clear, &levels(&clear), &[], &p, 20, 7);
        let unsure = stability(&edge, &levels(&edge), &[], &p, 20, 7);
        assert_eq!(sure.levels, vec![1.0], "{sure:?}");
        assert!(sure.same_levels >= DECIDED, "{sure:?}");
        assert!(unsure.same_levels < DECIDED, "{unsure:?} against {sure:?}");
    }

    #[test]
    fn resamples_are_the_same_for_the_same_seed() {
        let d = two_groups(6, 1.3, 0.15, 4);
        let l = levels(&d);
        let p = AutoParams::default();
        assert_eq!(
            stability(&d, &l, &[], &p, 10, 9),
            stability(&d, &l, &[], &p, 10, 9)
        );
    }
}
