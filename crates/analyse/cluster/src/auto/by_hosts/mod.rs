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

use lgate_rundir::Estimator;
use lgate_tables::{BetweenPairs, HostBlock, HostBlocks, HostEntry, HostIndex, HostLinks};
use ndarray::Array2;
use rayon::prelude::*;

use crate::auto::{auto, auto_with_outliers, outvoted, AutoParams, Tree};
use crate::outliers::SLOW_RANK;
use crate::separation::median;

mod dense;
mod links;
mod part;

pub use dense::{dense_by_hosts, DenseHosts, PairTests};
pub(crate) use links::{block_median, filled_block, links_of};
pub(crate) use part::hosts_part;

use part::join;

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

#[cfg(test)]
mod tests;
