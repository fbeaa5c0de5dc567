//! The part of clustering by hosts that the host x host matrix decides: the hosts' tree, its
//! levels above hosts judged on the pairs between hosts, slow hosts, each level's separation.

use super::*;

/// What the hosts show above themselves: their tree, how far apart they stand, the slow ones.
pub(crate) struct HostsPart {
    /// The tree over hosts (items: positions in the index).
    pub(super) tree: Tree,
    /// The groupings of hosts the pairs nearly decide.
    pub(crate) doubts: Vec<crate::host_levels::Doubt>,
    /// The slow hosts with their slowness.
    pub(super) slow_hosts: Vec<(usize, f64)>,
    /// Per host, its slowness (1 for most).
    pub(super) factor: Vec<f64>,
    /// How far apart hosts stand (see [`HostClustering::host_separation`]).
    pub(super) separation: f64,
}

impl HostsPart {
    /// Per doubt, its groups as the items of their hosts.
    pub(super) fn doubted(&self, index: &HostIndex) -> Vec<Vec<Vec<usize>>> {
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
    pub(super) fn slow_ranks(&self, index: &HostIndex) -> Vec<(usize, f64)> {
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
            // The least of the pairs between each two hosts, at each size, judged on all the
            // pairs of that size: where noise slows whole tests, some pair of two hosts keeps
            // their time while the medians of a few pairs mix the levels.
            let leasts: Vec<(Array2<f64>, usize)> = (sizes_evidence.iter().enumerate())
                .filter_map(|(s, (_, v))| v.least_matrix(h).map(|m| (m, s)))
                .collect();
            sets.extend(leasts.iter().map(|(m, s)| (m, &sizes_evidence[*s].1)));
            // The medians' own levels judged by the pairs too: a gap of a few host pairs'
            // medians can be noise that many pairs do not bear out.
            let mut unjudged = Vec::new();
            let medians = crate::host_levels::judged_by_pairs(
                auto(&g, &hosts_p),
                &sets,
                &hosts_p,
                &mut unjudged,
            );
            // A level above the medians' top one that their pairs decide (groups of leaves);
            // where the medians have none (the size judged shows no leaves: a dragonfly's
            // round trips of 64 KiB), above the top level the pairs decide.
            let top_of_pairs = matches!(medians, Tree::Leaf(_));
            let medians = crate::host_levels::coarsened(medians, &sets, &hosts_p, &mut unjudged);
            let (mut tree, mut doubts) = crate::host_levels::refine_sizes(medians, &sets, &hosts_p);
            if top_of_pairs {
                tree = crate::host_levels::coarsened(tree, &sets, &hosts_p, &mut doubts);
            }
            doubts.extend(unjudged);
            (tree, doubts)
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
pub(super) fn between_values(
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

/// The tree of the hosts `t` (items: hosts) with each host replaced by its own tree: a group of
/// hosts becomes a node over its hosts' trees, split at the hosts' separation. A group of hosts
/// that ends above the deepest level of `t` stays one group down to it (a group of one leaf
/// beside groups of two), so that the hosts are one level under every group, not the level of
/// the leaves in some groups and of the hosts in others (nor a lone host's own sockets).
pub(super) fn join(t: &Tree, kids: &[Tree], hosts: f64) -> Tree {
    match t {
        Tree::Leaf(members) if members.len() == 1 => kids[members[0]].clone(),
        _ => join_above(t, kids, hosts, crate::depth(t)),
    }
}

/// [`join`] of `t`, `levels` levels of groups of hosts to come below its top.
fn join_above(t: &Tree, kids: &[Tree], hosts: f64, levels: usize) -> Tree {
    match t {
        Tree::Leaf(members) => {
            // A group of one host too: its host one level under the group, as every host.
            let mut joined = Tree::Node {
                children: members.iter().map(|&x| kids[x].clone()).collect(),
                separation: Some(hosts),
            };
            for _ in 0..levels {
                joined = Tree::Node {
                    children: vec![joined],
                    separation: None,
                };
            }
            joined
        }
        Tree::Node {
            children,
            separation,
        } => Tree::Node {
            children: (children.iter())
                .map(|c| join_above(c, kids, hosts, levels.saturating_sub(1)))
                .collect(),
            separation: *separation,
        },
    }
}

/// The separation of the split into hosts, as `auto` gives a level's: per group of hosts the
/// least median between two of its hosts over the largest upper quartile inside one of them
/// (slow hosts' divided by their slowness), the least over the groups (all hosts as one group
/// when none has two).
pub(super) fn host_separation(
    g: &Array2<f64>,
    hosts_tree: &Tree,
    links: &lgate_tables::HostLinks,
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
pub(super) fn leaves_of(t: &Tree, out: &mut Vec<Vec<usize>>) {
    match t {
        Tree::Leaf(items) => out.push(items.clone()),
        Tree::Node { children, .. } => children.iter().for_each(|c| leaves_of(c, out)),
    }
}

/// Hosts whose ranks are slow towards every other rank, as `auto` finds slow ranks on the dense
/// matrix: each rank's median distance (its pairs inside its host, then each other host's
/// ranks at the two hosts' median) over the median of all ranks', at least 1.15, for at most a
/// third of the ranks and with at least 8 ranks.
pub(super) fn slow_hosts(
    g: &Array2<f64>,
    inside: &[f64],
    links: &lgate_tables::HostLinks,
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
pub(super) fn weighted_median(values: &mut [(f64, usize)]) -> f64 {
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
