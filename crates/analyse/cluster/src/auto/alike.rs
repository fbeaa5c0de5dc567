//! Hosts alike: the levels inside hosts of one size found once, on their typical block, and
//! checked on each host's own block, instead of searched for on every host.
//!
//! A machine's hosts are mostly alike (the same sockets, caches and cores, the ranks placed on
//! them the same way), and searching a host's block for its best level scores hundreds of
//! candidate partitions. So, for a size of host held by [`MIN_HOSTS`] hosts or more, `auto`
//! runs on the element-wise median of up to [`TEMPLATE_HOSTS`] of their blocks (the typical
//! host, its noise far below any one host's), and each host then keeps that hierarchy when
//! every split of it is a level on the host's own distances (the separation and the level
//! tests of `auto`, the groups distinct in the bulk) and the host has no slow rank or slow
//! group. Any other host (placed differently, slow somewhere, or showing other levels) is
//! searched in full as before. A level only some hosts show is dropped by the vote of the hosts
//! of its size either way (`outvoted`), and one that most hosts show is in their median.

use ndarray::Array2;
use rayon::prelude::*;

use crate::auto::{auto, AutoParams, Tree};
use crate::outliers::{slow_groups, slow_ranks};
use crate::separation::{distinct, separation_of};
use crate::tree::sub_matrix;

/// Hosts of one size needed before their levels are found once on their typical block.
pub const MIN_HOSTS: usize = 8;

/// Ranks a host needs for its levels to be found once for hosts alike (smaller blocks are
/// searched in a moment).
pub const MIN_RANKS: usize = 16;

/// Hosts whose blocks make the typical block, at most (spread over the hosts of the size).
pub const TEMPLATE_HOSTS: usize = 63;

/// The element-wise median of `blocks` (all of one shape).
pub fn typical_block(blocks: &[Array2<f64>]) -> Array2<f64> {
    let n = blocks.first().map_or(0, Array2::nrows);
    let mut out = Array2::zeros((n, n));
    let mut v = Vec::with_capacity(blocks.len());
    for a in 0..n {
        for b in a + 1..n {
            v.clear();
            v.extend(blocks.iter().map(|m| m[[a, b]]).filter(|x| x.is_finite()));
            let x = if v.is_empty() {
                f64::NAN
            } else {
                crate::separation::median(&mut v)
            };
            out[[a, b]] = x;
            out[[b, a]] = x;
        }
    }
    out
}

/// The hierarchy of the typical block of `hosts` (each host's block by position), `None` when
/// it shows no level: then each host is searched on its own.
pub fn template(hosts: &[Array2<f64>], p: &AutoParams) -> Option<Tree> {
    let typical = typical_block(hosts);
    if typical.iter().any(|x| !x.is_finite()) {
        return None;
    }
    match auto(&typical, p) {
        Tree::Leaf(_) => None,
        t => Some(t),
    }
}

/// `template` (items: positions in `d`) with each split's separation on `d`, when every split
/// is a level of `d` and `d` has no slow rank nor slow group; `None` otherwise (the host is
/// then searched in full).
pub fn checked(d: &Array2<f64>, template: &Tree, p: &AutoParams) -> Option<Tree> {
    if !slow_ranks(d).is_empty() {
        return None;
    }
    let tree = holds(d, template, p)?;
    slow_groups(d, &tree).is_empty().then_some(tree)
}

/// `t` with each split's separation on `d`, when every split is a level there.
fn holds(d: &Array2<f64>, t: &Tree, p: &AutoParams) -> Option<Tree> {
    let Tree::Node { children, .. } = t else {
        return Some(t.clone());
    };
    let items = t.ranks();
    let labels: Vec<usize> = (children.iter().enumerate())
        .flat_map(|(c, child)| std::iter::repeat_n(c, child.ranks().len()))
        .collect();
    let sub = sub_matrix(d, &items);
    let s = separation_of(&sub, &labels, p);
    if s <= 0.0 || !distinct(&sub, &labels) {
        return None;
    }
    let kids: Option<Vec<Tree>> = children.par_iter().map(|c| holds(d, c, p)).collect();
    Some(Tree::Node {
        children: kids?,
        separation: Some(s),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A host of 2 sockets x 4 groups x 4 cores (32 ranks, by position unless `order` moves
    /// them): `levels` us inside a group, a socket and across, 5 % log-normal noise.
    fn host_of(seed: u64, order: &[usize], levels: [f64; 3]) -> Array2<f64> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut m = Array2::zeros((32, 32));
        for i in 0..32 {
            for j in i + 1..32 {
                let (a, b) = (order[i], order[j]);
                let base = if a / 4 == b / 4 {
                    levels[0]
                } else if a / 16 == b / 16 {
                    levels[1]
                } else {
                    levels[2]
                };
                let (u1, u2): (f64, f64) =
                    (rng.random_range(1e-12..1.0), rng.random_range(0.0..1.0));
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                m[[i, j]] = base * (0.05 * z).exp();
                m[[j, i]] = m[[i, j]];
            }
        }
        m
    }

    /// [`host_of`] with 1, 1.6 and 3 us.
    fn host(seed: u64, order: &[usize]) -> Array2<f64> {
        host_of(seed, order, [1.0, 1.6, 3.0])
    }

    /// The groups of each level of a tree over `n` items.
    fn levels(t: &Tree, n: usize) -> Vec<Vec<Vec<usize>>> {
        let topology = crate::topology_of(t, n, None).unwrap();
        topology.levels().iter().map(|l| l.groups.clone()).collect()
    }

    #[test]
    fn hosts_alike_keep_the_levels_their_own_search_finds() {
        let order: Vec<usize> = (0..32).collect();
        let hosts: Vec<Array2<f64>> = (0..12).map(|s| host(s, &order)).collect();
        let p = AutoParams::default();
        let t = template(&hosts, &p).expect("the typical host shows its levels");
        for (x, d) in hosts.iter().enumerate() {
            let kept = checked(d, &t, &p).expect("each host shows the template's levels");
            assert_eq!(levels(&kept, 32), levels(&auto(d, &p), 32), "host {x}");
        }
    }

    #[test]
    fn a_host_placed_otherwise_or_slow_is_searched_in_full() {
        let order: Vec<usize> = (0..32).collect();
        let hosts: Vec<Array2<f64>> = (0..12).map(|s| host(s, &order)).collect();
        let p = AutoParams::default();
        let t = template(&hosts, &p).unwrap();
        // Its ranks on the cores round robin: the template's groups are not its groups.
        let round_robin: Vec<usize> = (0..32).map(|r| (r % 8) * 4 + r / 8).collect();
        assert!(checked(&host(99, &round_robin), &t, &p).is_none());
        // A rank on a busy core.
        let mut slow = host(98, &order);
        for j in 0..32 {
            if j != 5 {
                slow[[5, j]] *= 1.6;
                slow[[j, 5]] *= 1.6;
            }
        }
        assert!(checked(&slow, &t, &p).is_none());
        // Hosts with no structure: no template.
        let flat: Vec<Array2<f64>> = (0..12).map(|s| host_of(s, &order, [1.0; 3])).collect();
        assert!(template(&flat, &p).is_none());
    }
}
