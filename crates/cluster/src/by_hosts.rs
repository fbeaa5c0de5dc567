//! `auto` by hosts, without a dense matrix: the levels between hosts from the host x host
//! matrix (the median of the pairs measured between each two hosts), each host's levels from
//! its own block (every pair inside it, the hosts on every core), joined into one tree whose
//! level under the host levels is the hosts themselves.
//!
//! It finds what `auto` finds on the dense matrix a staged run fills from the same pairs (a
//! pair not measured holds its two hosts' median): there, the distances between two hosts are
//! that median but for the few pairs measured, and `auto` merges nodes into coarser groups by
//! the medians between groups, as here.
//!
//! Slow ranks are found as `auto` finds them on the dense matrix, by each rank's median distance
//! (here each host's: its ranks see the other hosts through the same medians), slow hosts'
//! pairs are divided by their slowness before the hosts are grouped; inside a host, a rank slow
//! towards its host's ranks (a busy core) is found by the host's own `auto` and reported too,
//! where the dense matrix's medians, made of pairs to other hosts, hide it.
//!
//! Memory: the host x host matrix and one block per host at a time per core; time: `auto` on
//! H hosts and on each block.

use lgate_rundir::{
    BetweenPairs, Estimator, HostBlock, HostBlocks, HostEntry, HostIndex, HostLinks,
};
use ndarray::Array2;
use rayon::prelude::*;

use crate::auto::{auto, auto_with_outliers, outvoted, AutoParams, Tree};
use crate::outliers::SLOW_RANK;
use crate::separation::median;

/// Why host blocks cannot be clustered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ByHostsError {
    /// Two hosts with no pair measured between them.
    #[error(
        "no pair was measured between hosts {a} and {b} at {size} bytes: the host x host \
         matrix has a hole"
    )]
    Unmeasured {
        /// One host.
        a: String,
        /// The other.
        b: String,
        /// The screening size.
        size: usize,
    },
}

/// What clustering by hosts found.
#[derive(Debug, Clone, PartialEq)]
pub struct HostClustering {
    /// The hierarchy over the run's ranks.
    pub tree: Tree,
    /// Slow ranks with how many times slower: every rank of a slow host, and ranks slow inside
    /// their host.
    pub slow: Vec<(usize, f64)>,
    /// Slow hosts (positions in the index) with how many times slower.
    pub slow_hosts: Vec<(usize, f64)>,
    /// How far apart hosts stand: the least median between two hosts over the largest upper
    /// quartile inside a host (below `min_ratio`, hosts are not a level the distances show).
    pub host_separation: f64,
    /// Groupings of hosts the pairs between them nearly decide (not in the tree).
    pub doubts: Vec<crate::host_levels::Doubt>,
    /// Per doubt, its groups' items (the tree's items: each group the items of its hosts).
    pub doubted: Vec<Vec<Vec<usize>>>,
}

/// Clusters `blocks` at screening size `k` (a position in its index's sizes); the levels above
/// the host are also decided on the pairs between hosts, `between`, when given.
pub fn auto_by_hosts(
    blocks: &HostBlocks,
    k: usize,
    between: Option<&BetweenPairs>,
    p: &AutoParams,
) -> Result<HostClustering, ByHostsError> {
    let index = &blocks.index;
    let h = index.hosts.len();
    let part = hosts_part(&blocks.index, &blocks.links, k, between, None, p)?;

    // Each host's own levels, on every core: hosts alike checked against their typical
    // host's levels, the others searched in full.
    let templates = templates(blocks, k, p);
    let found: Vec<(Tree, Vec<(usize, f64)>)> = (0..h)
        .into_par_iter()
        .map(|x| {
            let ranks = &index.hosts[x].ranks;
            let d = filled_block(&blocks.blocks[x].values[k]);
            let template = templates.get(&ranks.len()).and_then(Option::as_ref);
            let kept = template.and_then(|t| crate::alike::checked(&d, t, p));
            let (tree, slow) = match kept {
                Some(tree) => (tree, Vec::new()),
                None => auto_with_outliers(&d, p),
            };
            let slow = slow.into_iter().map(|(a, f)| (ranks[a], f)).collect();
            (tree.to_ranks(ranks), slow)
        })
        .collect();
    let (mut kids, mut slow): (Vec<Tree>, Vec<Vec<(usize, f64)>>) = found.into_iter().unzip();
    // A host's levels found in fewer than half of the hosts of its size are dropped.
    outvoted(&mut kids);
    let tree = join(&part.tree, &kids, part.separation);
    let mut all_slow = part.slow_ranks(index);
    for (x, s) in slow.iter_mut().enumerate() {
        if part.factor[x] == 1.0 {
            all_slow.append(s);
        }
    }
    all_slow.sort_by_key(|s| s.0);
    let doubted = part.doubted(index);
    Ok(HostClustering {
        tree,
        slow: all_slow,
        slow_hosts: part.slow_hosts,
        host_separation: part.separation,
        doubted,
        doubts: part.doubts,
    })
}

/// Per size of host held by [`crate::alike::MIN_HOSTS`] hosts or more (of
/// [`crate::alike::MIN_RANKS`] ranks or more), the levels of their typical block at size `k`
/// (`None` when it shows none).
fn templates(
    blocks: &HostBlocks,
    k: usize,
    p: &AutoParams,
) -> std::collections::HashMap<usize, Option<Tree>> {
    use crate::alike::{template, MIN_HOSTS, MIN_RANKS, TEMPLATE_HOSTS};
    let mut by_size: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for (x, host) in blocks.index.hosts.iter().enumerate() {
        by_size.entry(host.ranks.len()).or_default().push(x);
    }
    by_size
        .into_iter()
        .filter(|(n, hosts)| *n >= MIN_RANKS && hosts.len() >= MIN_HOSTS)
        .map(|(n, hosts)| {
            // Spread over the hosts of the size.
            let step = hosts.len().div_ceil(TEMPLATE_HOSTS);
            let sample: Vec<Array2<f64>> = (hosts.iter().step_by(step))
                .map(|&x| filled_block(&blocks.blocks[x].values[k]))
                .collect();
            (n, template(&sample, p))
        })
        .collect()
}

/// What the hosts show above themselves: their tree, how far apart they stand, the slow ones.
pub(crate) struct HostsPart {
    /// The tree over hosts (items: positions in the index).
    tree: Tree,
    /// The groupings of hosts the pairs nearly decide.
    pub(crate) doubts: Vec<crate::host_levels::Doubt>,
    /// The slow hosts with their slowness.
    slow_hosts: Vec<(usize, f64)>,
    /// Per host, its slowness (1 for most).
    factor: Vec<f64>,
    /// How far apart hosts stand (see [`HostClustering::host_separation`]).
    separation: f64,
}

impl HostsPart {
    /// Per doubt, its groups as the items of their hosts.
    fn doubted(&self, index: &HostIndex) -> Vec<Vec<Vec<usize>>> {
        (self.doubts.iter())
            .map(|d| {
                (d.groups_of().iter())
                    .map(|hosts| {
                        let mut items: Vec<usize> = (hosts.iter())
                            .flat_map(|&x| index.hosts[x].ranks.iter().copied())
                            .collect();
                        items.sort_unstable();
                        items
                    })
                    .collect()
            })
            .collect()
    }

    /// Every rank of a slow host, with its host's slowness.
    fn slow_ranks(&self, index: &HostIndex) -> Vec<(usize, f64)> {
        (self.slow_hosts.iter())
            .flat_map(|&(x, f)| index.hosts[x].ranks.iter().map(move |&r| (r, f)))
            .collect()
    }
}

/// The levels above the hosts of `blocks` at size `k`: `auto` on the host x host medians (slow
/// hosts divided out), with the levels the pairs `between` (their `tests` at size `k` when
/// kept) decide added.
pub(crate) fn hosts_part(
    index: &HostIndex,
    links: &HostLinks,
    k: usize,
    between: Option<&BetweenPairs>,
    tests: Option<&PairTests>,
    p: &AutoParams,
) -> Result<HostsPart, ByHostsError> {
    let h = index.hosts.len();
    let sizes: Vec<usize> = index.hosts.iter().map(|x| x.ranks.len()).collect();
    let mut g = links.matrix(k, h);
    let inside: Vec<f64> = (0..h).map(|a| g[[a, a]]).collect();
    for a in 0..h {
        g[[a, a]] = 0.0;
        for b in a + 1..h {
            if !g[[a, b]].is_finite() {
                return Err(ByHostsError::Unmeasured {
                    a: index.hosts[a].name.clone(),
                    b: index.hosts[b].name.clone(),
                    size: index.sizes[k],
                });
            }
        }
    }
    // Slow hosts, divided out before the hosts are grouped.
    let slow_hosts = slow_hosts(&g, &inside, links, &sizes, k);
    let mut factor = vec![1.0f64; h];
    for &(x, f) in &slow_hosts {
        factor[x] = f;
    }
    let g = Array2::from_shape_fn((h, h), |(a, b)| g[[a, b]] / factor[a].max(factor[b]));
    // Levels of hosts are judged by their pairs at every size (host_levels), not by a narrow
    // gap of one size's host medians, whose noise averaging over blocks all but removes.
    let hosts_p = AutoParams {
        narrow: false,
        slow_inside_level: false,
        ..*p
    };
    let (tree, doubts) = match between {
        _ if h < 2 => (Tree::Leaf(vec![0]), Vec::new()),
        Some(between) => {
            // This size's pairs first, then every other size's whose host pairs were all
            // measured: the levels above the hosts may show at different sizes.
            let host_of = index.host_of();
            let mut sizes_evidence = vec![(
                g.clone(),
                between_values(between, &host_of, k, &factor, tests),
            )];
            for other in (0..index.sizes.len()).filter(|&o| o != k) {
                let mut go = links.matrix(other, h);
                let measured = (0..h).all(|a| (a + 1..h).all(|b| go[[a, b]].is_finite()));
                if !measured {
                    continue;
                }
                for a in 0..h {
                    go[[a, a]] = 0.0;
                    for b in 0..h {
                        if a != b {
                            go[[a, b]] /= factor[a].max(factor[b]);
                        }
                    }
                }
                let values = between_values(between, &host_of, other, &factor, None);
                sizes_evidence.push((go, values));
            }
            // Where the run kept each pair's floor, the floors too, judged on the floors
            // (ranks on shared cores, where the medians of tests slowed throughout hide the
            // leaves: the floors of a few hops apart stay apart).
            let first = &sizes_evidence[0].1;
            let floors =
                (first.floor_medians(h)).map(|f| (f, first.by_host_pairs(), first.of_floors()));
            let mut sets: Vec<crate::host_levels::Evidence<'_>> =
                sizes_evidence.iter().map(|(g, v)| (g, v)).collect();
            if let Some((f, tests, floors)) = &floors {
                // The groupings the floors show judged on the pairs' tests and on the floors
                // themselves, the pairs between two hosts moving together.
                sets.insert(1, (f, tests));
                sets.insert(2, (f, floors));
            }
            crate::host_levels::refine_sizes(auto(&g, &hosts_p), &sets, &hosts_p)
        }
        None => (auto(&g, &hosts_p), Vec::new()),
    };
    let separation = host_separation(&g, &tree, links, &factor, k);
    Ok(HostsPart {
        tree,
        doubts,
        slow_hosts,
        factor,
        separation,
    })
}

/// The pairs between each two hosts at size `k`, each divided by the slower host's slowness,
/// with their `tests` when kept.
fn between_values(
    between: &BetweenPairs,
    host_of: &[u32],
    k: usize,
    factor: &[f64],
    tests: Option<&PairTests>,
) -> crate::host_levels::BetweenValues {
    let mut out = crate::host_levels::BetweenValues {
        ranks: vec![0; factor.len()],
        ..Default::default()
    };
    for &x in host_of.iter().filter(|&&x| (x as usize) < factor.len()) {
        out.ranks[x as usize] += 1;
    }
    // Each pair's tests where some pair was tested more than once (one test a pair is its
    // value: no unit to keep apart).
    let repeated = tests.is_some_and(|t| t.values.values().any(|v| v.len() > 1));
    for (n, (&i, &j)) in between.i.iter().zip(&between.j).enumerate() {
        let (Some(&a), Some(&b)) = (host_of.get(i as usize), host_of.get(j as usize)) else {
            continue;
        };
        let (a, b) = (a as usize, b as usize);
        let Some(&v) = between.rtt_us.get(k).and_then(|col| col.get(n)) else {
            continue;
        };
        if a == b || a >= factor.len() || b >= factor.len() || !v.is_finite() {
            continue;
        }
        let slowness = factor[a].max(factor[b]);
        let key = (a.min(b), a.max(b));
        out.values.entry(key).or_default().push(v / slowness);
        if let Some(tests) = tests {
            let pair = (i.min(j) as usize, i.max(j) as usize);
            if repeated {
                let of_pair = match tests.values.get(&pair) {
                    Some(t) if !t.is_empty() => t.iter().map(|x| x / slowness).collect(),
                    _ => vec![v / slowness],
                };
                out.tests.entry(key).or_default().push(of_pair);
            }
            if let Some(f) = tests.floors.get(&pair).filter(|f| f.is_finite()) {
                out.floors.entry(key).or_default().push(f / slowness);
            }
        }
    }
    out
}

/// The hosts of a dense matrix's items, and which of its pairs were measured.
#[derive(Debug, Clone, PartialEq)]
pub struct DenseHosts {
    /// Per item, its host (a position in `names`).
    pub host_of: Vec<usize>,
    /// The hosts' names.
    pub names: Vec<String>,
    /// Per pair, whether it was measured (every pair when `None`); filled pairs are no
    /// evidence.
    pub measured: Option<Array2<bool>>,
    /// The same items' matrices at the run's other screening sizes: their pairs between hosts
    /// decide levels above the host too (a dragonfly's groups show in bandwidth, its leaves in
    /// latency).
    pub other_sizes: Vec<std::sync::Arc<Array2<f64>>>,
    /// Each measured pair's tests at the clustered matrix's size, where the run kept them
    /// apart (a staged run's screening table): pairs tested again count their tests.
    pub tests: Option<std::sync::Arc<PairTests>>,
}

/// Per pair of items `(i, j)`, `i < j`: its tests' values, and its floor.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PairTests {
    /// Each pair's tests' values (the matrices' estimator of each test's repetitions).
    pub values: std::collections::HashMap<(usize, usize), Vec<f64>>,
    /// Each pair's floor: the least round trip of any repetition of any of its tests (noise
    /// only ever slows a repetition, so the floor of repeated tests is the pair's own time).
    pub floors: std::collections::HashMap<(usize, usize), f64>,
}

impl DenseHosts {
    /// The matrix clustered, `d`, then the other sizes' (those of `d`'s shape).
    fn sizes<'a>(&'a self, d: &'a Array2<f64>) -> Vec<&'a Array2<f64>> {
        let others = (self.other_sizes.iter()).filter(|m| m.dim() == d.dim());
        std::iter::once(d).chain(others.map(|m| &**m)).collect()
    }
}

/// `auto` by hosts on a dense matrix whose items are on `hosts`, only measured pairs counted:
/// the levels above the hosts from the host x host medians and the pairs between hosts (as
/// for host blocks), the levels inside them from `auto` on the whole matrix (whose groups pool
/// the pairs of every host), each host's ranks kept together. The hosts are a level when they
/// stand apart (their separation at least `min_ratio`) or `auto` on the matrix found them. The
/// pairs of the other sizes on `hosts` decide levels above the host with `d`'s. The tree's
/// items are `d`'s.
pub fn dense_by_hosts(
    d: &Array2<f64>,
    hosts: &DenseHosts,
    p: &AutoParams,
) -> Result<HostClustering, ByHostsError> {
    let (blocks, between) = blocks_of_dense(&hosts.sizes(d), hosts);
    let part = hosts_part(
        &blocks.index,
        &blocks.links,
        0,
        Some(&between),
        hosts.tests.as_deref(),
        p,
    )?;
    let (dense, dense_slow) = auto_with_outliers(d, p);
    let index = &blocks.index;
    let shown = part.separation >= p.min_ratio || has_level(&dense, &hosts.host_of);
    let tree = if shown {
        let mut kids: Vec<Tree> = (index.hosts.iter())
            .map(|x| restrict(&dense, &x.ranks).unwrap_or_else(|| Tree::Leaf(x.ranks.clone())))
            .collect();
        outvoted(&mut kids);
        join(&part.tree, &kids, part.separation)
    } else {
        within_groups(&part.tree, &dense, index)
    };
    // Ranks found slow on the whole matrix with their own slowness, then the other ranks of
    // slow hosts (a slow host the ranks' medians could not tell).
    let mut slow = dense_slow;
    for (r, f) in part.slow_ranks(index) {
        if !slow.iter().any(|s| s.0 == r) {
            slow.push((r, f));
        }
    }
    slow.sort_by_key(|s| s.0);
    let doubted = part.doubted(index);
    Ok(HostClustering {
        tree,
        slow,
        slow_hosts: part.slow_hosts,
        host_separation: part.separation,
        doubted,
        doubts: part.doubts,
    })
}

/// Whether one level of `t` puts each host's items (`host_of`) in a group of their own.
fn has_level(t: &Tree, host_of: &[usize]) -> bool {
    let mut nodes = vec![t];
    while !nodes.is_empty() {
        let groups: Vec<Vec<usize>> = nodes.iter().map(|n| n.ranks()).collect();
        let whole = groups
            .iter()
            .all(|g| g.iter().all(|&i| host_of[i] == host_of[g[0]]));
        let owners: std::collections::HashSet<usize> =
            groups.iter().map(|g| host_of[g[0]]).collect();
        if whole && owners.len() == groups.len() && groups.len() > 1 {
            return true;
        }
        nodes = (nodes.iter())
            .flat_map(|n| match n {
                Tree::Leaf(_) => Vec::new(),
                Tree::Node { children, .. } => children.iter().collect(),
            })
            .collect();
    }
    false
}

/// `t` with only the items `keep`, nodes left with one child replaced by it; `None` when no
/// item is kept.
fn restrict(t: &Tree, keep: &[usize]) -> Option<Tree> {
    match t {
        Tree::Leaf(items) => {
            let kept: Vec<usize> = items.iter().copied().filter(|i| keep.contains(i)).collect();
            (!kept.is_empty()).then_some(Tree::Leaf(kept))
        }
        Tree::Node {
            children,
            separation,
        } => {
            let mut kids: Vec<Tree> = children.iter().filter_map(|c| restrict(c, keep)).collect();
            match kids.len() {
                0 => None,
                1 => kids.pop(),
                _ => Some(Tree::Node {
                    children: kids,
                    separation: *separation,
                }),
            }
        }
    }
}

/// The tree of hosts `t` with each of its groups (hosts not a level) replaced by `dense`
/// restricted to the group's items.
fn within_groups(t: &Tree, dense: &Tree, index: &HostIndex) -> Tree {
    match t {
        Tree::Leaf(hosts) => {
            let items: Vec<usize> = (hosts.iter())
                .flat_map(|&x| index.hosts[x].ranks.iter().copied())
                .collect();
            restrict(dense, &items).unwrap_or(Tree::Leaf(items))
        }
        Tree::Node {
            children,
            separation,
        } => Tree::Node {
            children: (children.iter())
                .map(|c| within_groups(c, dense, index))
                .collect(),
            separation: *separation,
        },
    }
}

/// The host blocks and the pairs between hosts of a dense matrix at each of its `sizes` (one
/// matrix per size over the same items, the one clustered first).
fn blocks_of_dense(sizes: &[&Array2<f64>], hosts: &DenseHosts) -> (HostBlocks, BetweenPairs) {
    let (host_of, names) = (&hosts.host_of, &hosts.names);
    let measured = hosts.measured.as_ref();
    let n = host_of.len();
    let h = names.len();
    let s = sizes.len();
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); h];
    for (item, &x) in host_of.iter().enumerate() {
        members[x].push(item);
    }
    let is_measured = |a: usize, b: usize| measured.is_none_or(|m| m[[a, b]]);
    let value = |k: usize, a: usize, b: usize| {
        let v = sizes[k][[a, b]];
        (is_measured(a, b) && v.is_finite()).then_some(v)
    };
    let blocks: Vec<HostBlock> = (members.iter())
        .map(|ranks| HostBlock {
            values: (0..s)
                .map(|k| {
                    Array2::from_shape_fn((ranks.len(), ranks.len()), |(a, b)| match a == b {
                        true => 0.0,
                        false => value(k, ranks[a], ranks[b]).unwrap_or(f64::NAN),
                    })
                })
                .collect(),
        })
        .collect();
    let mut per: std::collections::BTreeMap<(usize, usize), Vec<Vec<f64>>> = Default::default();
    let mut between = BetweenPairs {
        rtt_us: vec![Vec::new(); s],
        p10_us: vec![Vec::new(); s],
        p90_us: vec![Vec::new(); s],
        ..BetweenPairs::default()
    };
    for a in 0..n {
        for b in a + 1..n {
            if !is_measured(a, b) {
                continue;
            }
            let (x, y) = (host_of[a], host_of[b]);
            let per_size = per
                .entry((x.min(y), x.max(y)))
                .or_insert_with(|| vec![Vec::new(); s]);
            for (k, values) in per_size.iter_mut().enumerate() {
                values.extend(value(k, a, b));
            }
            if x != y {
                between.host_i.push(x as u32);
                between.host_j.push(y as u32);
                between.i.push(a as u32);
                between.j.push(b as u32);
                between.sweeps.push(1);
                for k in 0..s {
                    let v = value(k, a, b).unwrap_or(f64::NAN);
                    between.rtt_us[k].push(v);
                    between.p10_us[k].push(v);
                    between.p90_us[k].push(v);
                }
            }
        }
    }
    let links = links_of(per, s);
    let hosts = (names.iter().zip(members))
        .map(|(name, ranks)| HostEntry {
            name: name.clone(),
            ranks,
        })
        .collect();
    let index = HostIndex::new(n, Estimator::Median, (0..s).collect(), hosts);
    let blocks = HostBlocks {
        index,
        blocks,
        links,
    };
    (blocks, between)
}

/// The host x host summary of the values `per` pair of hosts (`x <= y`) and size (`s` sizes):
/// the pairs, median and quartiles of each.
pub(crate) fn links_of(
    per: std::collections::BTreeMap<(usize, usize), Vec<Vec<f64>>>,
    s: usize,
) -> HostLinks {
    let mut links = HostLinks {
        median_us: vec![Vec::new(); s],
        p25_us: vec![Vec::new(); s],
        p75_us: vec![Vec::new(); s],
        ..HostLinks::default()
    };
    for ((x, y), per_size) in per {
        links.host_i.push(x as u32);
        links.host_j.push(y as u32);
        links.pairs.push(per_size[0].len() as u32);
        for (k, mut v) in per_size.into_iter().enumerate() {
            v.sort_by(f64::total_cmp);
            let at = |q: f64| match v.is_empty() {
                true => f64::NAN,
                false => lgate_stats::quantile_of_sorted(&v, q),
            };
            links.median_us[k].push(at(0.5));
            links.p25_us[k].push(at(0.25));
            links.p75_us[k].push(at(0.75));
        }
    }
    links
}

/// A host's block with a pair not measured holding the median of those measured.
pub(crate) fn filled_block(b: &Array2<f64>) -> Array2<f64> {
    let fill = block_median(b).unwrap_or(0.0);
    b.mapv(|x| if x.is_finite() { x } else { fill })
}

/// The median of a host block's measured pairs (above its diagonal), if it has any.
pub(crate) fn block_median(b: &Array2<f64>) -> Option<f64> {
    let n = b.nrows();
    let mut measured: Vec<f64> = (0..n)
        .flat_map(|a| (a + 1..n).map(move |c| (a, c)))
        .map(|(a, c)| b[[a, c]])
        .filter(|x| x.is_finite())
        .collect();
    (!measured.is_empty()).then(|| median(&mut measured))
}

/// The tree of the hosts `t` (items: hosts) with each host replaced by its own tree: a group of
/// hosts becomes a node over its hosts' trees, split at the hosts' separation.
fn join(t: &Tree, kids: &[Tree], hosts: f64) -> Tree {
    match t {
        Tree::Leaf(members) if members.len() == 1 => kids[members[0]].clone(),
        Tree::Leaf(members) => Tree::Node {
            children: members.iter().map(|&x| kids[x].clone()).collect(),
            separation: Some(hosts),
        },
        Tree::Node {
            children,
            separation,
        } => Tree::Node {
            children: children.iter().map(|c| join(c, kids, hosts)).collect(),
            separation: *separation,
        },
    }
}

/// The separation of the split into hosts, as `auto` gives a level's: per group of hosts the
/// least median between two of its hosts over the largest upper quartile inside one of them
/// (slow hosts' divided by their slowness), the least over the groups (all hosts as one group
/// when none has two).
fn host_separation(
    g: &Array2<f64>,
    hosts_tree: &Tree,
    links: &lgate_rundir::HostLinks,
    factor: &[f64],
    k: usize,
) -> f64 {
    let h = g.nrows();
    let mut upper = vec![f64::NAN; h];
    for e in 0..links.len() {
        let a = links.host_i[e] as usize;
        if a == links.host_j[e] as usize && a < h {
            upper[a] = links.p75_us[k][e] / factor[a];
        }
    }
    let mut leaves = Vec::new();
    leaves_of(hosts_tree, &mut leaves);
    leaves.retain(|l| l.len() >= 2);
    if leaves.is_empty() {
        leaves.push((0..h).collect());
    }
    let mut weakest = f64::INFINITY;
    for leaf in &leaves {
        let mut least = f64::INFINITY;
        for (n, &a) in leaf.iter().enumerate() {
            for &b in &leaf[n + 1..] {
                least = least.min(g[[a, b]]);
            }
        }
        let inside = (leaf.iter())
            .map(|&a| upper[a])
            .filter(|x| x.is_finite())
            .fold(0.0f64, f64::max);
        if inside > 0.0 && least.is_finite() {
            weakest = weakest.min(least / inside);
        }
    }
    weakest
}

/// The leaves of a tree, each a list of items.
fn leaves_of(t: &Tree, out: &mut Vec<Vec<usize>>) {
    match t {
        Tree::Leaf(items) => out.push(items.clone()),
        Tree::Node { children, .. } => children.iter().for_each(|c| leaves_of(c, out)),
    }
}

/// Hosts whose ranks are slow towards every other rank, as `auto` finds slow ranks on the dense
/// matrix: each rank's median distance (its pairs inside its host, then each other host's
/// ranks at the two hosts' median) over the median of all ranks', at least 1.15, for at most a
/// third of the ranks and with at least 8 ranks.
fn slow_hosts(
    g: &Array2<f64>,
    inside: &[f64],
    links: &lgate_rundir::HostLinks,
    sizes: &[usize],
    k: usize,
) -> Vec<(usize, f64)> {
    let h = sizes.len();
    let n: usize = sizes.iter().sum();
    if n < 8 || h < 2 {
        return Vec::new();
    }
    // Each host's quartiles inside, to spread its own pairs around their median.
    let mut quartiles = vec![(f64::NAN, f64::NAN); h];
    for e in 0..links.len() {
        if links.host_i[e] == links.host_j[e] {
            quartiles[links.host_i[e] as usize] = (links.p25_us[k][e], links.p75_us[k][e]);
        }
    }
    let medians: Vec<f64> = (0..h)
        .map(|a| {
            // (value, weight): the host's own pairs, then every other host's ranks.
            let own = sizes[a].saturating_sub(1);
            let mut values: Vec<(f64, usize)> = Vec::with_capacity(h + 3);
            if own > 0 && inside[a].is_finite() {
                let (q1, q3) = quartiles[a];
                let (q1, q3) = (
                    if q1.is_finite() { q1 } else { inside[a] },
                    if q3.is_finite() { q3 } else { inside[a] },
                );
                values.push((q1, own / 4));
                values.push((inside[a], own - own / 4 - own / 4));
                values.push((q3, own / 4));
            }
            values.extend((0..h).filter(|&b| b != a).map(|b| (g[[a, b]], sizes[b])));
            weighted_median(&mut values)
        })
        .collect();
    let mut all: Vec<(f64, usize)> = medians.iter().zip(sizes).map(|(&m, &s)| (m, s)).collect();
    let usual = weighted_median(&mut all);
    if usual.is_nan() || usual <= 0.0 {
        return Vec::new();
    }
    let slow: Vec<(usize, f64)> = medians
        .iter()
        .enumerate()
        .map(|(a, &m)| (a, m / usual))
        .filter(|&(_, f)| f >= SLOW_RANK)
        .collect();
    let ranks: usize = slow.iter().map(|&(a, _)| sizes[a]).sum();
    if ranks * 3 > n {
        return Vec::new();
    }
    slow
}

/// The median of values each counted `weight` times (the lower middle of an even count).
fn weighted_median(values: &mut [(f64, usize)]) -> f64 {
    values.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: usize = values.iter().map(|v| v.1).sum();
    if total == 0 {
        return f64::NAN;
    }
    let mut seen = 0;
    for &(x, w) in values.iter() {
        seen += w;
        if 2 * seen >= total {
            return x;
        }
    }
    f64::NAN
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `hosts` hosts of two sockets of `per` ranks each, in two switches: 1 us inside a
    /// socket, 2 between sockets, 6 between hosts of a switch and 9 across, off by a little.
    fn machine(hosts: usize, per: usize, slow: Option<usize>) -> HostBlocks {
        let g = 2 * per;
        let entries: Vec<HostEntry> = (0..hosts)
            .map(|x| HostEntry {
                name: format!("n{x}"),
                ranks: (x * g..(x + 1) * g).collect(),
            })
            .collect();
        let factor = |x: usize| if Some(x) == slow { 1.4 } else { 1.0 };
        let blocks = (0..hosts)
            .map(|x| HostBlock {
                values: vec![Array2::from_shape_fn((g, g), |(a, b)| {
                    let base = if a == b {
                        0.0
                    } else if a / per == b / per {
                        1.0
                    } else {
                        2.0
                    };
                    base * factor(x) * (1.0 + 0.01 * ((a * 7 + b * 3 + x) % 5) as f64)
                })],
            })
            .collect();
        let mut links = HostLinks {
            median_us: vec![Vec::new()],
            p25_us: vec![Vec::new()],
            p75_us: vec![Vec::new()],
            ..HostLinks::default()
        };
        for a in 0..hosts {
            for b in a..hosts {
                let base = if a == b {
                    1.5
                } else if a / (hosts / 2) == b / (hosts / 2) {
                    6.0
                } else {
                    9.0
                };
                let x = base * factor(a).max(factor(b)) * (1.0 + 0.01 * ((a + 2 * b) % 3) as f64);
                links.host_i.push(a as u32);
                links.host_j.push(b as u32);
                links.pairs.push(4);
                links.median_us[0].push(x);
                links.p25_us[0].push(if a == b { 1.0 * factor(a) } else { x });
                links.p75_us[0].push(if a == b { 2.0 * factor(a) } else { x });
            }
        }
        HostBlocks {
            index: HostIndex::new(hosts * g, Estimator::Median, vec![0], entries),
            blocks,
            links,
        }
    }

    fn levels(t: &Tree) -> Vec<usize> {
        let topology = crate::topology_of(t, t.ranks().len(), None).unwrap();
        topology.levels().iter().map(|l| l.groups.len()).collect()
    }

    #[test]
    fn switches_hosts_and_sockets_are_found() {
        let c = auto_by_hosts(&machine(8, 4, None), 0, None, &AutoParams::default()).unwrap();
        assert_eq!(levels(&c.tree), [2, 8, 16]);
        assert!(c.slow.is_empty());
        assert!(c.host_separation > 2.0, "{}", c.host_separation);
    }

    #[test]
    fn a_slow_host_is_divided_out_and_reported() {
        let c = auto_by_hosts(&machine(8, 4, Some(3)), 0, None, &AutoParams::default()).unwrap();
        assert_eq!(levels(&c.tree), [2, 8, 16]);
        assert_eq!(c.slow_hosts.len(), 1);
        assert_eq!(c.slow_hosts[0].0, 3);
        assert_eq!(c.slow.len(), 8);
        assert!(c.slow.iter().all(|&(r, _)| (24..32).contains(&r)));
    }

    #[test]
    fn a_hole_between_hosts_is_an_error() {
        let mut m = machine(4, 2, None);
        // Drop hosts 0-1's entry.
        let e = (0..m.links.len())
            .position(|e| (m.links.host_i[e], m.links.host_j[e]) == (0, 1))
            .unwrap();
        m.links.host_i.remove(e);
        m.links.host_j.remove(e);
        m.links.pairs.remove(e);
        m.links.median_us[0].remove(e);
        m.links.p25_us[0].remove(e);
        m.links.p75_us[0].remove(e);
        let e = auto_by_hosts(&m, 0, None, &AutoParams::default()).unwrap_err();
        assert!(e.to_string().contains("n0 and n1"), "{e}");
    }

    /// `n` items on hosts of `per` each, every pair measured.
    fn on_hosts(n: usize, per: usize) -> DenseHosts {
        DenseHosts {
            host_of: (0..n).map(|a| a / per).collect(),
            names: (0..n.div_ceil(per)).map(|x| format!("h{x}")).collect(),
            measured: None,
            other_sizes: Vec::new(),
            tests: None,
        }
    }

    /// A dense matrix of 6 hosts of 4 ranks in 3 leaves: 10 us inside a host, 100 between
    /// hosts of a leaf and 120 across, each pair between hosts off by log-normal noise 0.15
    /// (drawn from a fixed sequence), and pair 0-4 (hosts 0 and 1) 6 times slower.
    fn leaves_dense() -> (Array2<f64>, DenseHosts) {
        let n = 24;
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut normal = move || {
            // Two uniforms from xorshift, then Box-Muller.
            let mut u = || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 11) as f64 / (1u64 << 53) as f64
            };
            let (u1, u2) = (u().max(1e-12), u());
            (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        };
        let mut d = Array2::zeros((n, n));
        for a in 0..n {
            for b in a + 1..n {
                let (x, y) = (a / 4, b / 4);
                let base = if x == y {
                    10.0
                } else if x / 2 == y / 2 {
                    100.0
                } else {
                    120.0
                };
                let slow = if (a, b) == (0, 4) { 6.0 } else { 1.0 };
                let v = base * slow * (0.15 * normal()).exp();
                d[[a, b]] = v;
                d[[b, a]] = v;
            }
        }
        (d, on_hosts(n, 4))
    }

    #[test]
    fn a_dense_matrix_on_hosts_keeps_hosts_whole_and_finds_the_leaves_its_pairs_decide() {
        let (d, hosts) = leaves_dense();
        let p = AutoParams::default();
        let c = dense_by_hosts(&d, &hosts, &p).unwrap();
        assert_eq!(levels(&c.tree), [3, 6], "{:?}", c.tree);
        assert!(c.doubts.is_empty(), "{:?}", c.doubts);
        // Without the pairs between hosts, the medians alone decide no leaf.
        let (blocks, _) = blocks_of_dense(&[&d], &hosts);
        let medians_only = auto_by_hosts(&blocks, 0, None, &p).unwrap();
        assert_eq!(levels(&medians_only.tree), [6]);
    }

    #[test]
    fn measure_and_cluster_judge_the_same_pairs_alike() {
        // Six hosts of two ranks in three leaves of two, 20 % apart with a few percent of
        // noise, one pair measured between two hosts: the leaves are in doubt. `measure`'s
        // judge of the pairs it screened and `cluster`'s of the run's dense matrix name the
        // same doubts.
        let n = 12;
        let d = Array2::from_shape_fn((n, n), |(a, b)| {
            let base = match (a / 2 == b / 2, a / 4 == b / 4) {
                _ if a == b => 0.0,
                (true, _) => 1.0,
                (false, true) => 10.0,
                (false, false) => 12.0,
            };
            let (i, j) = (a.min(b), a.max(b));
            base * (1.0 + 0.03 * (((i * 7 + j * 13) % 9) as f64 - 4.0) / 4.0)
        });
        let measured = Array2::from_shape_fn((n, n), |(a, b)| {
            let (i, j) = (a.min(b), a.max(b));
            i / 2 == j / 2 || (i % 2 == 0 && j % 2 == 1)
        });
        let mut hosts = on_hosts(n, 2);
        hosts.measured = Some(measured.clone());
        let p = AutoParams::default();
        let dense = dense_by_hosts(&d, &hosts, &p).unwrap();
        assert!(!dense.doubts.is_empty(), "{:?}", dense.tree);
        let mut pairs = crate::screened_hosts::ScreenedRankPairs::with_sizes(1);
        for a in 0..n {
            for b in (a + 1..n).filter(|&b| measured[[a, b]]) {
                pairs.push(a as u32, b as u32, &[d[[a, b]]], &[f64::NAN]);
            }
        }
        let groups: Vec<Vec<usize>> = (0..6).map(|x| vec![2 * x, 2 * x + 1]).collect();
        let screened = crate::screened_hosts::doubts_of_screened(&groups, n, pairs, &p).unwrap();
        assert_eq!(screened, dense.doubts);
    }

    #[test]
    fn pairs_not_measured_are_no_evidence() {
        // Only one pair measured between each two hosts: too few to decide the leaves.
        let (d, mut hosts) = leaves_dense();
        let n = d.nrows();
        hosts.measured = Some(Array2::from_shape_fn((n, n), |(a, b)| {
            a / 4 == b / 4 || (a % 4 == 1 && b % 4 == 1)
        }));
        let c = dense_by_hosts(&d, &hosts, &AutoParams::default()).unwrap();
        assert_eq!(levels(&c.tree), [6], "{:?}", c.tree);
    }

    /// A dragonfly of 2 groups of 2 leaves of 2 hosts of 2 ranks, at two sizes: at the small
    /// one 1.3 us inside a host, 11 between hosts of a leaf, 13 across leaves of a group and
    /// 15 across groups (the hops); at the large one 20 inside a host, 270 across hosts of a
    /// group, 1380 across groups (the thin global links). Each pair off by log-normal noise
    /// 0.03, drawn from `seed`.
    fn dragonfly_dense(seed: u64) -> (Array2<f64>, Array2<f64>, DenseHosts) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let n = 16;
        let (mut small, mut large) = (Array2::zeros((n, n)), Array2::zeros((n, n)));
        for a in 0..n {
            for b in a + 1..n {
                let (x, y) = (a / 2, b / 2);
                let (s, l) = match () {
                    _ if x == y => (1.3, 20.0),
                    _ if x / 2 == y / 2 => (11.0, 270.0),
                    _ if x / 4 == y / 4 => (13.0, 270.0),
                    _ => (15.0, 1380.0),
                };
                for (m, base) in [(&mut small, s), (&mut large, l)] {
                    let (u1, u2): (f64, f64) =
                        (rng.random_range(1e-12..1.0), rng.random_range(0.0..1.0));
                    let normal = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                    let v = base * (0.03 * normal).exp();
                    m[[a, b]] = v;
                    m[[b, a]] = v;
                }
            }
        }
        (small, large, on_hosts(n, 2))
    }

    #[test]
    fn a_dense_matrix_takes_the_levels_above_its_hosts_from_every_size() {
        for seed in 0..5 {
            let (small, large, mut hosts) = dragonfly_dense(seed);
            let p = AutoParams::default();
            // The large size alone shows the groups, not the leaves inside them.
            let alone = dense_by_hosts(&large, &hosts, &p).unwrap();
            assert_eq!(levels(&alone.tree), [2, 8], "seed {seed}: {:?}", alone.tree);
            // With the small size's pairs, the leaves too.
            hosts.other_sizes = vec![std::sync::Arc::new(small.clone())];
            let both = dense_by_hosts(&large, &hosts, &p).unwrap();
            assert_eq!(
                levels(&both.tree),
                [2, 4, 8],
                "seed {seed}: {:?}",
                both.tree
            );
            // Clustering the small size, with the large one's pairs: the same levels.
            hosts.other_sizes = vec![std::sync::Arc::new(large)];
            let other = dense_by_hosts(&small, &hosts, &p).unwrap();
            assert_eq!(
                levels(&other.tree),
                [2, 4, 8],
                "seed {seed}: {:?}",
                other.tree
            );
        }
    }

    #[test]
    fn the_confidence_of_levels_from_other_sizes_deals_their_noise_out_anew() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let (small, large, mut hosts) = dragonfly_dense(11);
        let p = AutoParams::default();
        hosts.other_sizes = vec![std::sync::Arc::new(small.clone())];
        let found = dense_by_hosts(&large, &hosts, &p).unwrap();
        let n = large.nrows();
        let labels = crate::topology_of(&found.tree, n, None).unwrap();
        let levels: Vec<Vec<usize>> = labels.levels().iter().map(|l| l.labels(n)).collect();
        assert_eq!(levels.len(), 3);
        let redrawn = AtomicUsize::new(0);
        let fit = |rs: &[Array2<f64>]| {
            assert_eq!(rs.len(), 2);
            if rs[1] != small {
                redrawn.fetch_add(1, Ordering::Relaxed);
            }
            let resampled = DenseHosts {
                other_sizes: vec![std::sync::Arc::new(rs[1].clone())],
                ..hosts.clone()
            };
            dense_by_hosts(&rs[0], &resampled, &p).unwrap().tree
        };
        let s = crate::confidence::stability_kept(
            &[&large, &small],
            &levels,
            &found.slow,
            &fit,
            (20, 7),
            &|_| true,
            None,
        );
        assert_eq!(redrawn.load(Ordering::Relaxed), 20);
        // The leaves, decided on the small size's pairs, come back as the groups do.
        assert!(s.levels.iter().all(|&c| c >= 0.9), "{:?}", s.levels);
    }
}
