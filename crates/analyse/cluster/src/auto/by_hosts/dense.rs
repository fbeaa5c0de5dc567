//! A dense matrix clustered by hosts: its host blocks and pairs between hosts drawn from it,
//! and the levels inside hosts checked against the dense clustering.

use super::*;

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
pub(super) fn has_level(t: &Tree, host_of: &[usize]) -> bool {
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
pub(super) fn restrict(t: &Tree, keep: &[usize]) -> Option<Tree> {
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
pub(super) fn within_groups(t: &Tree, dense: &Tree, index: &HostIndex) -> Tree {
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
pub(super) fn blocks_of_dense(
    sizes: &[&Array2<f64>],
    hosts: &DenseHosts,
) -> (HostBlocks, BetweenPairs) {
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
