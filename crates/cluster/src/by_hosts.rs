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

use lgate_rundir::HostBlocks;
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
}

/// Clusters `blocks` at screening size `k` (a position in its index's sizes).
pub fn auto_by_hosts(
    blocks: &HostBlocks,
    k: usize,
    p: &AutoParams,
) -> Result<HostClustering, ByHostsError> {
    let index = &blocks.index;
    let h = index.hosts.len();
    let sizes: Vec<usize> = index.hosts.iter().map(|x| x.ranks.len()).collect();
    let mut g = blocks.links.matrix(k, h);
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

    // Each host's own levels, on every core.
    let found: Vec<(Tree, Vec<(usize, f64)>)> = (0..h)
        .into_par_iter()
        .map(|x| {
            let ranks = &index.hosts[x].ranks;
            let d = filled_block(&blocks.blocks[x].values[k]);
            let (tree, slow) = auto_with_outliers(&d, p);
            let slow = slow.into_iter().map(|(a, f)| (ranks[a], f)).collect();
            (tree.to_ranks(ranks), slow)
        })
        .collect();
    let (mut kids, mut slow): (Vec<Tree>, Vec<Vec<(usize, f64)>>) = found.into_iter().unzip();
    // A host's levels found in fewer than half of the hosts of its size are dropped.
    outvoted(&mut kids);

    // Slow hosts, divided out before the hosts are grouped.
    let slow_hosts = slow_hosts(&g, &inside, &blocks.links, &sizes, k);
    let mut factor = vec![1.0f64; h];
    for &(x, f) in &slow_hosts {
        factor[x] = f;
    }
    let g = Array2::from_shape_fn((h, h), |(a, b)| g[[a, b]] / factor[a].max(factor[b]));
    let hosts_tree = if h >= 2 {
        auto(&g, p)
    } else {
        Tree::Leaf(vec![0])
    };
    let host_separation = host_separation(&g, &hosts_tree, &blocks.links, &factor, k);
    let tree = join(&hosts_tree, &kids, host_separation);
    let mut all_slow: Vec<(usize, f64)> = slow_hosts
        .iter()
        .flat_map(|&(x, f)| index.hosts[x].ranks.iter().map(move |&r| (r, f)))
        .collect();
    for (x, s) in slow.iter_mut().enumerate() {
        if factor[x] == 1.0 {
            all_slow.append(s);
        }
    }
    all_slow.sort_by_key(|s| s.0);
    Ok(HostClustering {
        tree,
        slow: all_slow,
        slow_hosts,
        host_separation,
    })
}

/// A host's block with a pair not measured holding the median of those measured.
pub(crate) fn filled_block(b: &Array2<f64>) -> Array2<f64> {
    let n = b.nrows();
    let mut measured: Vec<f64> = (0..n)
        .flat_map(|a| (a + 1..n).map(move |c| (a, c)))
        .map(|(a, c)| b[[a, c]])
        .filter(|x| x.is_finite())
        .collect();
    let fill = if measured.is_empty() {
        0.0
    } else {
        median(&mut measured)
    };
    b.mapv(|x| if x.is_finite() { x } else { fill })
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
    use lgate_rundir::{Estimator, HostBlock, HostEntry, HostIndex, HostLinks};

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
        let c = auto_by_hosts(&machine(8, 4, None), 0, &AutoParams::default()).unwrap();
        assert_eq!(levels(&c.tree), [2, 8, 16]);
        assert!(c.slow.is_empty());
        assert!(c.host_separation > 2.0, "{}", c.host_separation);
    }

    #[test]
    fn a_slow_host_is_divided_out_and_reported() {
        let c = auto_by_hosts(&machine(8, 4, Some(3)), 0, &AutoParams::default()).unwrap();
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
        let e = auto_by_hosts(&m, 0, &AutoParams::default()).unwrap_err();
        assert!(e.to_string().contains("n0 and n1"), "{e}");
    }
}
