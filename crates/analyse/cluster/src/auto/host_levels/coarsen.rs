//! A level above the top level the host medians found: groups of its groups of hosts that the
//! pairs between them decide (a dragonfly's groups over its leaves, where the messages of the
//! size clustered show the leaves and the groups' links blur in their medians), or the
//! grouping they nearly decide, as a doubt.

use std::collections::BTreeSet;

use super::*;

/// `tree` (over hosts) with a level above its top one where the pairs of some size decide a
/// grouping of its top groups: the coarsest cut of the average-linkage dendrogram of the
/// groups' medians (`g` of each size, the median over their hosts' pairs) that has a group of
/// two or more, where each top group of such a group is nearer to one of its group than to any
/// other, and whose pairs between top groups of one group stand below those between each such
/// group and its nearest group at `z >=` the deciding z (their units and floors as every
/// level's). Pairs inside the top groups (a finer level) are left out. Where no size decides
/// one, the grouping that passes those tests at the highest z of [`Z_DOUBT`] or more is added
/// to `doubts` (two leaves of two hosts in one group: 4 pairs of hosts inside against 8 towards
/// the nearest group cap the z of the pairs between two hosts moving together; more tests of
/// them, which `measure`'s confidence budget gives a doubt, can decide it).
pub fn coarsened(
    tree: Tree,
    sets: &[Evidence<'_>],
    p: &AutoParams,
    doubts: &mut Vec<Doubt>,
) -> Tree {
    let Tree::Node {
        children,
        separation,
    } = tree
    else {
        return tree;
    };
    let members: Vec<Vec<usize>> = children.iter().map(Tree::ranks).collect();
    if children.len() < 3 || members.iter().any(|m| m.len() < 2) {
        return Tree::Node {
            children,
            separation,
        };
    }
    let judged: Vec<Coarser> = (sets.iter())
        .filter(|(_, values)| more_than_the_matrix(values))
        .filter_map(|&(g, values)| coarsest_deciding(&members, g, values, p))
        .collect();
    let found = (judged.iter())
        .filter_map(|c| c.decided.clone())
        .min_by_key(|(labels, _)| labels.iter().max().copied().unwrap_or(0));
    let Some((labels, ratio)) = found else {
        let nearly = (judged.into_iter())
            .filter_map(|c| c.doubt)
            .max_by(|a, b| a.z.total_cmp(&b.z));
        doubts.extend(nearly);
        return Tree::Node {
            children,
            separation,
        };
    };
    let k = labels.iter().max().map_or(0, |&m| m + 1);
    let mut groups: Vec<Vec<Tree>> = (0..k).map(|_| Vec::new()).collect();
    for (child, &l) in children.into_iter().zip(&labels) {
        groups[l].push(child);
    }
    // A group of one top group stays one group at the level below too.
    Tree::Node {
        children: (groups.into_iter())
            .map(|kids| Tree::Node {
                children: kids,
                separation,
            })
            .collect(),
        separation: Some(ratio),
    }
}

/// Whether the pairs between hosts tell more than the matrix: most pairs of hosts have two
/// values or more (hosts of several ranks) or their pairs were tested more than once. With one
/// value a pair of one-rank hosts (a matrix imported without host names) the matrix alone
/// decides, and `auto`'s gap rule has already judged it.
fn more_than_the_matrix(values: &BetweenValues) -> bool {
    let several = (values.values.iter())
        .filter(|(pair, v)| {
            v.len() >= 2
                || values
                    .tests
                    .get(pair)
                    .is_some_and(|t| t.iter().any(|x| x.len() >= 2))
        })
        .count();
    2 * several >= values.values.len().max(1)
}

/// What the pairs of one size tell of the groupings of the top groups.
struct Coarser {
    /// The coarsest grouping they decide, with the ratio of the medians of its pairs across
    /// and inside.
    decided: Option<(Vec<usize>, f64)>,
    /// Else the one they show best at [`Z_DOUBT`] or more, over hosts.
    doubt: Option<Doubt>,
}

/// The coarsest grouping of the top groups `members` (their hosts) that the pairs `values`
/// decide, else the one they nearly decide; `None` when a median between two top groups is
/// not known.
fn coarsest_deciding(
    members: &[Vec<usize>],
    g: &Array2<f64>,
    values: &BetweenValues,
    p: &AutoParams,
) -> Option<Coarser> {
    let n = members.len();
    let mut m = Array2::zeros((n, n));
    for i in 0..n {
        for j in i + 1..n {
            let mut v: Vec<f64> = (members[i].iter())
                .flat_map(|&a| members[j].iter().map(move |&b| g[[a, b]]))
                .collect();
            let x = median(&mut v);
            if !x.is_finite() || x <= 0.0 {
                return None;
            }
            m[[i, j]] = x;
            m[[j, i]] = x;
        }
    }
    let dendrogram = Dendrogram::new(&m, Linkage::Average);
    let tops = Tops {
        members,
        m: &m,
        g,
        values,
    };
    let mut nearly: Option<Candidate> = None;
    for k in 2..n {
        let labels = dendrogram.cut(k);
        let Some((ratio, t)) = tops.judged(&labels, k, p) else {
            continue;
        };
        if t.z >= p.pairs_decide {
            let decided = Some((labels, ratio));
            return Some(Coarser {
                decided,
                doubt: None,
            });
        }
        if t.z >= Z_DOUBT && nearly.as_ref().is_none_or(|c| t.z > c.z) {
            // Over hosts: each host in its top group's group.
            let labels = (members.iter().zip(&labels))
                .flat_map(|(hosts, &l)| hosts.iter().map(move |_| l))
                .collect();
            nearly = Some(Candidate {
                labels,
                z: t.z,
                ratio,
                pairs: t.pairs,
                every_pair: t.every_pair,
                z_most: t.z_most,
                tests: t.tests,
                gap: true,
            });
        }
    }
    let hosts: Vec<usize> = members.concat();
    Some(Coarser {
        decided: None,
        doubt: nearly.map(|c| refine::doubt_of(&hosts, &c, p)),
    })
}

/// The top groups and what is known of them.
struct Tops<'a> {
    /// Each top group's hosts.
    members: &'a [Vec<usize>],
    /// The top groups' medians.
    m: &'a Array2<f64>,
    /// The host x host medians.
    g: &'a Array2<f64>,
    /// The pairs between hosts.
    values: &'a BetweenValues,
}

impl Tops<'_> {
    /// The ratio of the medians across and inside the grouping `labels` (`k` groups) of the
    /// top groups, and the test of its pairs, when it passes the nearness and gap tests.
    fn judged(&self, labels: &[usize], k: usize, p: &AutoParams) -> Option<(f64, judge::RankTest)> {
        let Tops {
            members,
            m,
            g,
            values,
        } = *self;
        let n = members.len();
        let of = |l: usize| (0..n).filter(move |&i| labels[i] == l);
        let joined: Vec<usize> = (0..k).filter(|&l| of(l).count() >= 2).collect();
        if joined.is_empty() {
            return None;
        }
        // Each top group of a group nearer to one of its group than to any outside it.
        let near = (0..n).filter(|&i| joined.contains(&labels[i])).all(|i| {
            let nearest = |same: bool| {
                (0..n)
                    .filter(|&o| o != i && (labels[o] == labels[i]) == same)
                    .map(|o| m[[i, o]])
                    .fold(f64::INFINITY, f64::min)
            };
            nearest(true) < nearest(false)
        });
        if !near {
            return None;
        }
        let pairs = |a: &[usize], b: &[usize]| -> Vec<(usize, usize)> {
            let mut out = Vec::with_capacity(a.len() * b.len());
            for &x in a {
                out.extend(b.iter().map(|&y| (x.min(y), x.max(y))));
            }
            out
        };
        let median_of = |pairs: &[(usize, usize)]| {
            let mut v: Vec<f64> = (pairs.iter())
                .flat_map(|&(a, b)| values.of(a, b).iter().copied())
                .filter(|x| x.is_finite())
                .collect();
            median(&mut v)
        };
        // Each top group of a group apart from the nearest group outside it, on its own: pooled,
        // the pairs of two near top groups carry a grouping that adds a third as far from them
        // as from any other.
        let apart = (0..n).filter(|&i| joined.contains(&labels[i])).all(|i| {
            let (mut mates, mut nearest_out, mut out_at) = (Vec::new(), None, f64::INFINITY);
            for o in (0..n).filter(|&o| o != i) {
                if labels[o] == labels[i] {
                    mates.extend(pairs(&members[i], &members[o]));
                } else if m[[i, o]] < out_at {
                    (nearest_out, out_at) = (Some(o), m[[i, o]]);
                }
            }
            let Some(o) = nearest_out else {
                return false;
            };
            let (w, b) = (
                median_of(&mates),
                median_of(&pairs(&members[i], &members[o])),
            );
            w > 0.0 && b >= (1.0 + LEAST_GAP) * w
        });
        if !apart {
            return None;
        }
        let mut inside = Vec::new();
        let mut across: BTreeSet<(usize, usize)> = BTreeSet::new();
        // Each group apart on its own too: pooled, one group far apart carries a grouping
        // that joins top groups as far apart as any (as `judge`'s groups of four hosts).
        let mut each_apart = true;
        for &l in &joined {
            let mine: Vec<usize> = of(l).collect();
            let mut own = Vec::new();
            for (x, &i) in mine.iter().enumerate() {
                for &j in &mine[x + 1..] {
                    own.extend(pairs(&members[i], &members[j]));
                }
            }
            // Its nearest group: the least median between their top groups.
            let distance = |o: usize| {
                let mut v: Vec<f64> = (mine.iter())
                    .flat_map(|&i| of(o).map(move |j| (i, j)))
                    .map(|(i, j)| m[[i, j]])
                    .collect();
                median(&mut v)
            };
            let Some(nearest) = (0..k)
                .filter(|&o| o != l)
                .min_by(|&a, &b| distance(a).total_cmp(&distance(b)))
            else {
                continue;
            };
            let mut towards = Vec::new();
            for &i in &mine {
                for j in of(nearest) {
                    towards.extend(pairs(&members[i], &members[j]));
                }
            }
            let (w, b) = (median_of(&own), median_of(&towards));
            each_apart &= w > 0.0 && b >= (1.0 + LEAST_GAP) * w;
            inside.extend(own);
            across.extend(towards);
        }
        if !each_apart {
            return None;
        }
        let across: Vec<(usize, usize)> = across.into_iter().collect();
        let t = judge::pooled(&inside, &across, values, p)?;
        let of_pairs = |pairs: &[(usize, usize)]| {
            let mut v: Vec<f64> = pairs.iter().map(|&(a, b)| g[[a, b]]).collect();
            median(&mut v)
        };
        Some((of_pairs(&across) / of_pairs(&inside), t))
    }
}
