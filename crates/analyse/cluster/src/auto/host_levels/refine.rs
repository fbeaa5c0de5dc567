//! The tree of groups above hosts refined: each node's hosts split where the pairs between
//! hosts decide it, and the groupings they nearly decide kept as doubts.

use super::*;

/// The most tests a pair is asked for to decide a level on hosts.
pub const MOST_TESTS: usize = 10;

/// The tests a pair would need (it has `now`, giving `z`) for z to reach `decide` with
/// room for the design effect: z grows as the square root of the tests that vary
/// independently, and twice the tests leave room for pairs' own offsets.
pub(super) fn tests_needed(now: f64, z: f64, decide: f64) -> usize {
    let want = 2.0 * now * (decide / z.max(0.5)).powi(2);
    (want.ceil() as usize)
        .max(now.floor() as usize + 1)
        .min(MOST_TESTS)
}

/// A grouping accepted or doubted by the pairs.
#[derive(Clone)]
pub(super) struct Candidate {
    pub(super) labels: Vec<usize>,
    pub(super) z: f64,
    pub(super) ratio: f64,
    pub(super) pairs: usize,
    pub(super) every_pair: bool,
    pub(super) z_most: f64,
    pub(super) tests: f64,
    /// Whether the pairs between groups stand [`LEAST_GAP`] above those inside at least.
    pub(super) gap: bool,
}

/// `tree` (over hosts, as `auto` found it on the medians `g`) with the levels the pairs
/// `values` decide added inside its leaves, and the groupings they nearly decide.
pub fn refine(
    tree: Tree,
    g: &Array2<f64>,
    values: &BetweenValues,
    p: &AutoParams,
) -> (Tree, Vec<Doubt>) {
    refine_sizes(tree, &[(g, values)], p)
}

/// One size's evidence: the host x host medians and the pairs between hosts.
pub type Evidence<'a> = (&'a Array2<f64>, &'a BetweenValues);

/// [`refine`] with the pairs of several sizes (the tree's own first): each group of hosts is
/// split by the grouping that the pairs of some size show best (a dragonfly's groups by the
/// bandwidth of large messages, the leaves inside them by the latency of small ones).
pub fn refine_sizes(tree: Tree, sets: &[Evidence<'_>], p: &AutoParams) -> (Tree, Vec<Doubt>) {
    let mut doubts = Vec::new();
    let t = refine_in(tree, sets, p, &mut doubts);
    (t, doubts)
}

/// `tree` (the host medians' own, over hosts) with each of its levels that the pairs of no
/// size decide, though they are enough to, made one group again, for `refine_in` to split by
/// what the pairs do decide or to leave in doubt. A level too few pairs can decide (every pair
/// inside its groups nearer than every pair between them would still fall short) stays as the
/// medians found it, and is added to `doubts` when [`AutoParams::doubt_undecidable`] asks (more
/// tests of its pairs would decide it).
pub fn judged_by_pairs(
    tree: Tree,
    sets: &[Evidence<'_>],
    p: &AutoParams,
    doubts: &mut Vec<Doubt>,
) -> Tree {
    let (hosts, labels) = tree.ranks_by_child();
    let Tree::Node {
        children,
        separation,
    } = tree
    else {
        return tree;
    };
    let judged: Vec<Candidate> = (sets.iter())
        .filter_map(|&(g, values)| judge::judge_grouping(&hosts, &labels, g, values, p))
        .collect();
    let decided = judged.iter().any(|c| c.z >= p.pairs_decide);
    let could = judged.iter().any(|c| c.z_most >= p.pairs_decide);
    if !decided && (could || !medians_clear(&hosts, &labels, sets)) {
        return Tree::Leaf(hosts);
    }
    if !could && !decided && p.doubt_undecidable {
        let best = judged.iter().max_by(|a, b| a.z.total_cmp(&b.z));
        doubts.extend(best.map(|c| doubt_of(&hosts, c, p)));
    }
    Tree::Node {
        children: (children.into_iter())
            .map(|c| judged_by_pairs(c, sets, p, doubts))
            .collect(),
        separation,
    }
}

/// Whether, in some size's host x host medians, every median between the groups `labels` of
/// `hosts` stands [`LEAST_GAP`] above every median inside them: what a level too few pairs can
/// decide must show to stay as the medians found it. A gap of the medians' least between groups
/// over their most inside is what a few pairs of one test each can tell; a pair that a slow
/// path or a busy link made slower alone looks like a level by the medians' separation (least
/// median between groups over the largest quartile inside) while it lies among the pairs
/// inside.
fn medians_clear(hosts: &[usize], labels: &[usize], sets: &[Evidence<'_>]) -> bool {
    sets.iter().any(|(g, _)| {
        let (mut inside, mut between) = (f64::NEG_INFINITY, f64::INFINITY);
        for a in 0..hosts.len() {
            for b in a + 1..hosts.len() {
                let x = g[[hosts[a], hosts[b]]];
                if labels[a] == labels[b] {
                    inside = inside.max(x);
                } else {
                    between = between.min(x);
                }
            }
        }
        inside == f64::NEG_INFINITY || between > inside * (1.0 + LEAST_GAP)
    })
}

/// The grouping `c` of `hosts` as a doubt: with the pairs and tests that would decide it.
pub(super) fn doubt_of(hosts: &[usize], c: &Candidate, p: &AutoParams) -> Doubt {
    Doubt {
        groups: c.labels.iter().max().map_or(0, |&m| m + 1),
        hosts: hosts.len(),
        members: hosts.to_vec(),
        labels: c.labels.clone(),
        z: c.z,
        pairs: c.pairs,
        pairs_needed: (c.pairs as f64 * (p.pairs_decide / c.z.max(0.5)).powi(2)).ceil() as usize,
        every_pair: c.every_pair,
        z_most: c.z_most,
        tests: c.tests,
        tests_needed: tests_needed(c.tests, c.z, p.pairs_decide),
    }
}

pub(super) fn refine_in(
    tree: Tree,
    sets: &[Evidence<'_>],
    p: &AutoParams,
    doubts: &mut Vec<Doubt>,
) -> Tree {
    match tree {
        Tree::Leaf(hosts) if hosts.len() >= 4 => {
            let Some(c) = best_of(&hosts, sets, p) else {
                return Tree::Leaf(hosts);
            };
            if c.z < p.pairs_decide {
                doubts.push(doubt_of(&hosts, &c, p));
                return Tree::Leaf(hosts);
            }
            split(&hosts, &c, sets, p, doubts)
        }
        Tree::Leaf(hosts) => Tree::Leaf(hosts),
        Tree::Node {
            children,
            separation,
        } => {
            let mut kids: Vec<Tree> = match jointly(&children, sets, p) {
                Some(found) => (children.into_iter().zip(found))
                    .map(|(child, c)| match (child, c) {
                        (Tree::Leaf(hosts), Some(c)) => split(&hosts, &c, sets, p, doubts),
                        (child, _) => refine_in(child, sets, p, doubts),
                    })
                    .collect(),
                None => {
                    let together = doubted_together(&children, sets, p);
                    let before = doubts.len();
                    let kids = (children.into_iter())
                        .map(|c| refine_in(c, sets, p, doubts))
                        .collect();
                    if let Some(d) = together {
                        // One doubt for the level through the siblings, not one a sibling.
                        let mut at = before;
                        while at < doubts.len() {
                            if doubts[at].members.iter().all(|h| d.members.contains(h)) {
                                doubts.remove(at);
                            } else {
                                at += 1;
                            }
                        }
                        doubts.push(d);
                    }
                    kids
                }
            };
            outvoted(&mut kids);
            Tree::Node {
                children: kids,
                separation,
            }
        }
    }
}

/// `hosts` split by the grouping `c`, its groups refined in turn (together where they are
/// siblings of one shape, as any node's).
pub(super) fn split(
    hosts: &[usize],
    c: &Candidate,
    sets: &[Evidence<'_>],
    p: &AutoParams,
    doubts: &mut Vec<Doubt>,
) -> Tree {
    let k = c.labels.iter().max().map_or(0, |&m| m + 1);
    let mut groups = vec![Vec::new(); k];
    for (n, &l) in c.labels.iter().enumerate() {
        groups[l].push(hosts[n]);
    }
    let node = Tree::Node {
        children: groups.into_iter().map(Tree::Leaf).collect(),
        separation: Some(c.ratio),
    };
    refine_in(node, sets, p, doubts)
}

/// The groupings of sibling groups of hosts decided together (one per child, `None` for a
/// child with none): when at least two children, all groups of hosts, have a best grouping
/// into groups of the same sizes (two or three groups of two hosts) at [`Z_DOUBT`] or more,
/// none decides alone, and
/// their z's combined by Stouffer's rule reach [`Z_DECIDE`]; children whose grouping fails
/// count with z 0. When some decide alone, those and the siblings they lend their level to
/// (groups of the same sizes at [`Z_LEND`] or more), if any.
pub(super) fn jointly(
    children: &[Tree],
    sets: &[Evidence<'_>],
    p: &AutoParams,
) -> Option<Vec<Option<Candidate>>> {
    let mut found = Vec::with_capacity(children.len());
    for child in children {
        let Tree::Leaf(hosts) = child else {
            return None;
        };
        found.push(if hosts.len() >= 4 {
            best_of(hosts, sets, p)
        } else {
            None
        });
    }
    let shape = |c: &Candidate| {
        let k = c.labels.iter().max().map_or(0, |&m| m + 1);
        let mut sizes = vec![0usize; k];
        for &l in &c.labels {
            sizes[l] += 1;
        }
        sizes.sort_unstable();
        sizes
    };
    // A level some siblings decide alone runs through the tree: a sibling whose best grouping
    // makes groups of the same sizes, at Z_LEND or more, is split by it too.
    let sizes_of = |c: &Candidate| {
        let mut s = shape(c);
        s.dedup();
        s
    };
    let decided: Vec<Vec<usize>> = (found.iter().flatten())
        .filter(|c| c.z >= p.pairs_decide)
        .map(sizes_of)
        .collect();
    if !decided.is_empty() {
        let lent: Vec<Option<Candidate>> = (found.into_iter())
            .map(|c| {
                c.filter(|c| {
                    c.z >= p.pairs_decide || (c.z >= Z_LEND && decided.contains(&sizes_of(c)))
                })
            })
            .collect();
        let lends = lent.iter().flatten().any(|c| c.z < p.pairs_decide);
        return lends.then_some(lent);
    }
    if let Some(pooled) = with_sibling_leaves(children, &found, sets, p) {
        return Some(pooled);
    }
    // Groups of the same sizes (two leaves of two hosts beside three): one level's.
    let shapes: Vec<Vec<usize>> = found.iter().flatten().map(sizes_of).collect();
    if shapes.len() < 2 || shapes.iter().any(|s| *s != shapes[0]) {
        return None;
    }
    let sum: f64 = found.iter().flatten().map(|c| c.z).sum();
    (sum / (children.len() as f64).sqrt() >= p.pairs_decide).then_some(found)
}

/// The groupings `found` of sibling groups of hosts (`children`, all leaves) decided with
/// the siblings that are groups of that level already: when every grouping found makes groups
/// of `s` hosts each and some siblings without one are groups of `s` hosts, those siblings
/// are groups of the level too (a dragonfly group of one leaf beside one of two), and the
/// pairs inside all its groups against the pairs across the groupings' groups decide it at
/// [`Z_DECIDE`]. Few pairs cap one group's own z (two leaves of two hosts, two ranks a host:
/// 8 pairs inside against 16 across, z 3.9 at most); its siblings' pairs inside count too.
fn with_sibling_leaves(
    children: &[Tree],
    found: &[Option<Candidate>],
    sets: &[Evidence<'_>],
    p: &AutoParams,
) -> Option<Vec<Option<Candidate>>> {
    let hosts_of = |t: &Tree| match t {
        Tree::Leaf(hosts) => Some(hosts.clone()),
        Tree::Node { .. } => None,
    };
    let mut size = None;
    for c in found.iter().flatten() {
        let k = c.labels.iter().max().map_or(0, |&m| m + 1);
        let s = c.labels.len() / k.max(1);
        if s < 2 || (0..k).any(|g| c.labels.iter().filter(|&&l| l == g).count() != s) {
            return None;
        }
        if size.is_some_and(|x| x != s) {
            return None;
        }
        size = Some(s);
    }
    let s = size?;
    let alike: Vec<Vec<usize>> = (children.iter().zip(found))
        .filter(|(_, c)| c.is_none())
        .filter_map(|(t, _)| hosts_of(t))
        .filter(|hosts| hosts.len() == s)
        .collect();
    if alike.is_empty() {
        return None;
    }
    let (mut inside, mut across) = (Vec::new(), Vec::new());
    for (child, c) in children.iter().zip(found) {
        let (Some(hosts), Some(c)) = (hosts_of(child), c) else {
            continue;
        };
        for a in 0..hosts.len() {
            for b in a + 1..hosts.len() {
                match c.labels[a] == c.labels[b] {
                    true => inside.push((hosts[a], hosts[b])),
                    false => across.push((hosts[a], hosts[b])),
                }
            }
        }
    }
    for hosts in &alike {
        for a in 0..hosts.len() {
            inside.extend(hosts[a + 1..].iter().map(|&b| (hosts[a], b)));
        }
    }
    let decides = (sets.iter())
        .filter_map(|&(_, values)| judge::pooled_z(&inside, &across, values, p))
        .any(|z| z >= p.pairs_decide);
    if !decides {
        return None;
    }
    // The siblings alike stay whole at the level (a group of one), their hosts below it.
    let split = found.iter().flatten().next()?;
    let whole = |t: &Tree| {
        let hosts = hosts_of(t)?;
        (hosts.len() == s).then(|| Candidate {
            labels: vec![0; s],
            ..split.clone()
        })
    };
    Some(
        (children.iter().zip(found))
            .map(|(t, c)| c.clone().or_else(|| whole(t)))
            .collect(),
    )
}

/// The grouping of `hosts` that the pairs of some size show best (highest z), if any.
pub(super) fn best_of(hosts: &[usize], sets: &[Evidence<'_>], p: &AutoParams) -> Option<Candidate> {
    best_of_any(hosts, sets, p).filter(|c| c.z >= Z_DOUBT)
}

/// [`best_of`] at any z.
pub(super) fn best_of_any(
    hosts: &[usize],
    sets: &[Evidence<'_>],
    p: &AutoParams,
) -> Option<Candidate> {
    (sets.iter())
        .filter_map(|&(g, values)| best_grouping(hosts, g, values, p))
        .max_by(|a, b| a.z.total_cmp(&b.z))
}

/// The level that sibling groups of hosts nearly decide together: every child a group of four
/// hosts or more whose best grouping has the same group sizes as the others', none deciding
/// alone, their z's combined by Stouffer's rule (as [`jointly`] does) at least [`Z_DOUBT`] and
/// below [`Z_DECIDE`]. A level runs through the tree, so its doubt is one grouping of all their
/// hosts (a group of three leaves beside one of two at z 2.9 and 1.9), not a doubt of the
/// sibling that reached [`Z_DOUBT`] alone.
pub(super) fn doubted_together(
    children: &[Tree],
    sets: &[Evidence<'_>],
    p: &AutoParams,
) -> Option<Doubt> {
    if children.len() < 2 {
        return None;
    }
    let mut found = Vec::with_capacity(children.len());
    for child in children {
        match child {
            Tree::Leaf(hosts) if hosts.len() >= 4 => {
                found.push((hosts, best_of_any(hosts, sets, p)?))
            }
            _ => return None,
        }
    }
    let sizes_of = |c: &Candidate| {
        let k = c.labels.iter().max().map_or(0, |&m| m + 1);
        let mut sizes = vec![0usize; k];
        for &l in &c.labels {
            sizes[l] += 1;
        }
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    };
    let shape = sizes_of(&found[0].1);
    if found
        .iter()
        .any(|(_, c)| sizes_of(c) != shape || c.z >= p.pairs_decide)
        || found.iter().all(|(_, c)| c.z < Z_DOUBT)
    {
        return None;
    }
    let root = (found.len() as f64).sqrt();
    let z = found.iter().map(|(_, c)| c.z.max(0.0)).sum::<f64>() / root;
    if !(Z_DOUBT..p.pairs_decide).contains(&z) {
        return None;
    }
    let (mut members, mut labels, mut offset) = (Vec::new(), Vec::new(), 0);
    for (hosts, c) in &found {
        members.extend(hosts.iter().copied());
        labels.extend(c.labels.iter().map(|l| l + offset));
        offset += c.labels.iter().max().map_or(0, |&m| m + 1);
    }
    let mut pairs: Vec<f64> = found.iter().map(|(_, c)| c.pairs as f64).collect();
    let pairs = median(&mut pairs).round().max(1.0) as usize;
    let tests = found.iter().map(|(_, c)| c.tests).sum::<f64>() / found.len() as f64;
    Some(Doubt {
        groups: offset,
        hosts: members.len(),
        members,
        labels,
        z,
        pairs,
        pairs_needed: (pairs as f64 * (p.pairs_decide / z).powi(2)).ceil() as usize,
        every_pair: found.iter().all(|(_, c)| c.every_pair),
        z_most: found.iter().map(|(_, c)| c.z_most).sum::<f64>() / root,
        tests,
        tests_needed: tests_needed(tests, z, p.pairs_decide),
    })
}
