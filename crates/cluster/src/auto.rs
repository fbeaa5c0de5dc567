//! `auto`: every level the data supports and no level it does not, with nothing given.
//!
//! A set of ranks is split where its distances show the clearest gap; the groups found are
//! then merged into coarser groups where the distances between groups show a gap (coarser
//! levels), and each group is split again (finer levels). So a level is found per subtree, and
//! a level that only shows between groups (a die whose halves are as far apart as the dies)
//! is still found.
//!
//! Candidate partitions are the cuts of an average-linkage dendrogram over two views of the
//! distances: the raw distances, and profile distances (how differently two ranks see all the
//! others), which separate groups that are slow inside, such as a socket whose memory sits in
//! the other socket. A partition is a level when
//!
//! - its **separation**, the least distance between groups over the 95th percentile of the
//!   distances inside groups, is at least `min_ratio` (timing noise only ever adds time, so the
//!   least distance between groups is trusted and the largest inside them is trimmed);
//! - that gap is at least `min_gap` times the median distance of the set (a ratio on its own
//!   is met by gaps far below measurement noise);
//! - not some groups, but not all, more than 10 % slower inside (median) than towards the
//!   other groups: one slow pair looks like a group in profiles, while ranks that share a core
//!   (every group slow inside) are a consistent grouping, and a socket whose memory is
//!   elsewhere is only about as slow inside as across;
//! - at least two groups hold two or more ranks, and at most a third are singletons, after
//!   each singleton joined the group it is nearest to when it is nearer to it than groups are
//!   to each other (a slow rank is not a level: `report.json` lists it).
//!
//! Tuned against the public datasets in `shared/datasets` (see the tests): every level of every
//! file is found exactly, and none on the flat mesh and the torus whose nodes do not show. The
//! closest call is Blue Waters' node level, found with `min_gap` up to 0.2 but not 0.25.
//! The price of `min_gap`: a level whose gap is below a fifth of the set's median distance is
//! not reported, so sockets at 0.6 against 0.8 us (BETZY) need medians quieter than about 2 %.

use ndarray::Array2;

use crate::linkage::{profile_distances, Cuts, Dendrogram, Linkage};

/// The thresholds of `auto`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AutoParams {
    /// The least separation of a level.
    pub min_ratio: f64,
    /// The least gap between groups, as a share of the set's median distance.
    pub min_gap: f64,
    /// The share of the largest distances inside groups left out as noise.
    pub trim: f64,
    /// The largest share of singletons in a level.
    pub max_singleton_share: f64,
    /// Sets of fewer items are split on raw distances only.
    pub profile_min_items: usize,
    /// Sets of more items are split on raw distances only (profiles cost n^3).
    pub profile_max_items: usize,
    /// Above this many items, only the cuts with the largest jumps in merge height are scored.
    pub all_cuts_up_to: usize,
    /// How many cuts are scored above `all_cuts_up_to`.
    pub jump_cuts: usize,
}

impl Default for AutoParams {
    fn default() -> Self {
        AutoParams {
            min_ratio: 1.2,
            min_gap: 0.2,
            trim: 0.05,
            max_singleton_share: 1.0 / 3.0,
            profile_min_items: 4,
            profile_max_items: 512,
            all_cuts_up_to: 256,
            jump_cuts: 12,
        }
    }
}

/// Which view of the distances a split was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// The distances themselves.
    Raw,
    /// Profile distances.
    Profile,
}

/// A hierarchy found by a clustering: groups of ranks at the leaves.
#[derive(Debug, Clone, PartialEq)]
pub enum Tree {
    /// Ranks not split further.
    Leaf(Vec<usize>),
    /// A split into children, with its separation when known.
    Node {
        /// The parts.
        children: Vec<Tree>,
        /// The separation of the split.
        separation: Option<f64>,
    },
}

impl Tree {
    /// Every rank under this tree.
    pub fn ranks(&self) -> Vec<usize> {
        match self {
            Tree::Leaf(r) => r.clone(),
            Tree::Node { children, .. } => children.iter().flat_map(Tree::ranks).collect(),
        }
    }
}

#[derive(Debug, Clone)]
struct Split {
    labels: Vec<usize>,
    separation: f64,
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    quantile(v, 0.5)
}

/// The q-quantile of unsorted values, interpolating linearly; reorders `v` (linear time: two
/// order statistics by selection, no sort).
fn quantile(v: &mut [f64], q: f64) -> f64 {
    let len = v.len();
    let pos = q * (len - 1) as f64;
    let lo = pos.floor() as usize;
    let (_, &mut at_lo, above) = v.select_nth_unstable_by(lo, f64::total_cmp);
    if lo + 1 >= len || pos == lo as f64 {
        return at_lo;
    }
    let at_hi = above.iter().copied().fold(f64::INFINITY, f64::min);
    at_lo + (at_hi - at_lo) * (pos - lo as f64)
}

fn upper_median(m: &Array2<f64>) -> f64 {
    let n = m.nrows();
    let mut v: Vec<f64> = (0..n)
        .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
        .map(|(i, j)| m[[i, j]])
        .collect();
    median(&mut v)
}

/// A singleton joins the group it is nearest to (mean raw distance) when it is nearer to it
/// than groups are, on average, to each other: a slow rank still belongs where it runs.
fn absorb_singletons(m: &Array2<f64>, labels: &mut [usize]) {
    let n = labels.len();
    let k = labels.iter().max().map_or(0, |&x| x + 1);
    if k == n {
        return;
    }
    let mut sizes = vec![0usize; k];
    for &l in labels.iter() {
        sizes[l] += 1;
    }
    if sizes.iter().all(|&s| s >= 2) {
        return;
    }
    // How far groups are from each other: the mean over pairs of ranks in different groups.
    let (mut sum, mut count) = (0.0, 0usize);
    for i in 0..n {
        if sizes[labels[i]] < 2 {
            continue;
        }
        let row = m.row(i);
        for j in i + 1..n {
            if labels[j] != labels[i] && sizes[labels[j]] >= 2 {
                sum += row[j];
                count += 1;
            }
        }
    }
    let level = if count == 0 {
        f64::INFINITY
    } else {
        sum / count as f64
    };
    let original = labels.to_vec();
    let mut sums = vec![0.0f64; k];
    for i in 0..n {
        if sizes[original[i]] != 1 {
            continue;
        }
        sums.iter_mut().for_each(|x| *x = 0.0);
        let row = m.row(i);
        for j in 0..n {
            if sizes[original[j]] >= 2 {
                sums[original[j]] += row[j];
            }
        }
        let nearest = (0..k)
            .filter(|&g| sizes[g] >= 2)
            .map(|g| (g, sums[g] / sizes[g] as f64))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((g, d)) = nearest {
            if d < level {
                labels[i] = g;
            }
        }
    }
}

/// Whether some groups, but not all, are far slower inside than towards the other groups (raw
/// medians): an artifact such as one slow pair among normal neighbours, not a level. When every
/// group is slow inside (ranks that share a core, each slow towards its core mate only), the
/// pattern is consistent: a real grouping of the machine. A socket whose memory is elsewhere is
/// about as slow inside as across, and not counted as slow at all.
fn inverted(raw: &Array2<f64>, labels: &[usize]) -> bool {
    let n = labels.len();
    let k = labels.iter().max().map_or(0, |&x| x + 1);
    let mut inside_of = vec![Vec::new(); k];
    let mut outside_of = vec![Vec::new(); k];
    for i in 0..n {
        for j in i + 1..n {
            let d = raw[[i, j]];
            if labels[i] == labels[j] {
                inside_of[labels[i]].push(d);
            } else {
                outside_of[labels[i]].push(d);
                outside_of[labels[j]].push(d);
            }
        }
    }
    let (mut slow, mut judged) = (0, 0);
    for g in 0..k {
        if inside_of[g].is_empty() || outside_of[g].is_empty() {
            continue;
        }
        judged += 1;
        if median(&mut inside_of[g]) > MAX_INVERSION * median(&mut outside_of[g]) {
            slow += 1;
        }
    }
    slow > 0 && slow < judged
}

/// The separation of a partition in a view, or 0 when it cannot be a level.
fn separation(
    m: &Array2<f64>,
    labels: &[usize],
    scale: f64,
    p: &AutoParams,
    within: &mut Vec<f64>,
) -> f64 {
    let n = labels.len();
    let k = labels.iter().max().map_or(0, |&x| x + 1);
    let mut sizes = vec![0usize; k];
    for &l in labels {
        sizes[l] += 1;
    }
    let singletons = sizes.iter().filter(|&&s| s == 1).count();
    if singletons as f64 > p.max_singleton_share * n as f64
        || sizes.iter().filter(|&&s| s >= 2).count() < 2
    {
        return 0.0;
    }
    within.clear();
    // The least distance between groups is exact; the percentile inside groups is taken from
    // every `stride`-th pair when there are many (a quantile of 200 000 samples is exact to a
    // small fraction of a percentile).
    let pairs_within: usize = sizes.iter().map(|&s| s * s.saturating_sub(1) / 2).sum();
    let stride = (pairs_within / WITHIN_SAMPLES).max(1);
    let mut seen = 0usize;
    let mut least_between = f64::INFINITY;
    for i in 0..n {
        let li = labels[i];
        let row = m.row(i);
        for j in i + 1..n {
            let d = row[j];
            if labels[j] == li {
                if seen.is_multiple_of(stride) {
                    within.push(d);
                }
                seen += 1;
            } else if d < least_between {
                least_between = d;
            }
        }
    }
    if within.is_empty() || !least_between.is_finite() {
        return 0.0;
    }
    let inside = quantile(within, 1.0 - p.trim);
    if least_between - inside < p.min_gap * scale {
        return 0.0;
    }
    if inside <= 0.0 {
        return if least_between > 0.0 { f64::MAX } else { 0.0 };
    }
    least_between / inside
}

/// Distances inside groups sampled at most for the percentile of a separation.
const WITHIN_SAMPLES: usize = 200_000;

/// How much slower inside than towards other groups a group may be.
const MAX_INVERSION: f64 = 1.1;

/// The separation of a partition of a matrix (one label per item), as `auto` judges levels: 0
/// when it cannot be a level (see the module documentation).
pub fn separation_of(m: &Array2<f64>, labels: &[usize], p: &AutoParams) -> f64 {
    if labels.len() < 2 {
        return 0.0;
    }
    let mut within = Vec::new();
    let s = separation(m, labels, upper_median(m), p, &mut within);
    if s > 0.0 && inverted(m, labels) {
        0.0
    } else {
        s
    }
}

/// The cuts worth scoring, most clusters first (cuts are reached by merging, which only goes
/// one way): all of them for small sets, else those before the largest jumps in merge height.
fn cut_sizes(d: &Dendrogram, p: &AutoParams) -> Vec<usize> {
    let n = d.len();
    if n <= p.all_cuts_up_to {
        return (2..n).rev().collect();
    }
    let merges = d.merges();
    let mut jumps: Vec<(f64, usize)> = (1..merges.len())
        .map(|t| {
            let (h0, h1) = (merges[t - 1].height, merges[t].height);
            // After t merges, n - t clusters remain; the next merge joins two of them.
            (
                if h0 > 0.0 {
                    h1 / h0
                } else if h1 > 0.0 {
                    f64::MAX
                } else {
                    1.0
                },
                n - t,
            )
        })
        .filter(|&(_, k)| (2..n).contains(&k))
        .collect();
    jumps.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut ks: Vec<usize> = jumps.into_iter().take(p.jump_cuts).map(|j| j.1).collect();
    ks.sort_unstable_by(|a, b| b.cmp(a));
    ks
}

/// The best level of a set of items, if any: its labels and separation.
fn best_split(m: &Array2<f64>, p: &AutoParams) -> Option<Split> {
    let n = m.nrows();
    if n < 4 {
        return None;
    }
    let scale = upper_median(m);
    let profile;
    let mut views: Vec<(View, &Array2<f64>)> = vec![(View::Raw, m)];
    if (p.profile_min_items..=p.profile_max_items).contains(&n) {
        profile = profile_distances(m);
        views.push((View::Profile, &profile));
    }
    let mut passing: Vec<Split> = Vec::new();
    let mut within = Vec::new();
    for &(_, view) in &views {
        let dendrogram = Dendrogram::new(view, Linkage::Average);
        let mut cuts = Cuts::new(&dendrogram);
        for k in cut_sizes(&dendrogram, p) {
            cuts.advance_to(k);
            let mut labels = cuts.labels();
            // Mostly singletons, or fewer than two real groups: absorbing cannot make a level.
            let mut sizes = vec![0usize; k];
            for &l in &labels {
                sizes[l] += 1;
            }
            let real = sizes.iter().filter(|&&s| s >= 2).count();
            let singles = sizes.iter().filter(|&&s| s == 1).count();
            if real < 2 || 2 * singles > n {
                continue;
            }
            absorb_singletons(m, &mut labels);
            let s = separation(view, &labels, scale, p, &mut within);
            if s >= p.min_ratio {
                passing.push(Split {
                    labels,
                    separation: s,
                });
            }
        }
    }
    // The costly check last, best first: usually only the winner is checked.
    passing.sort_by(|a, b| b.separation.total_cmp(&a.separation));
    passing.into_iter().find(|s| !inverted(m, &s.labels))
}

fn sub_matrix(d: &Array2<f64>, members: &[usize]) -> Array2<f64> {
    Array2::from_shape_fn((members.len(), members.len()), |(a, b)| {
        d[[members[a], members[b]]]
    })
}

fn groups_of(members: &[usize], labels: &[usize]) -> Vec<Vec<usize>> {
    let k = labels.iter().max().map_or(0, |&x| x + 1);
    let mut out = vec![Vec::new(); k];
    for (i, &l) in labels.iter().enumerate() {
        out[l].push(members[i]);
    }
    out.retain(|g| !g.is_empty());
    out
}

/// The hierarchy `auto` finds in a distance matrix.
pub fn auto(d: &Array2<f64>, p: &AutoParams) -> Tree {
    let all: Vec<usize> = (0..d.nrows()).collect();
    split(d, &all, p)
}

fn split(d: &Array2<f64>, members: &[usize], p: &AutoParams) -> Tree {
    // The whole matrix is used as it is; only subsets are copied.
    let whole = members.len() == d.nrows() && members.iter().enumerate().all(|(k, &r)| k == r);
    let sub;
    let m = if whole {
        d
    } else {
        sub = sub_matrix(d, members);
        &sub
    };
    let Some(s) = best_split(m, p) else {
        return Tree::Leaf(members.to_vec());
    };
    let groups = groups_of(members, &s.labels);
    let kids: Vec<Tree> = groups.iter().map(|g| split(d, g, p)).collect();
    merge_up(d, groups, kids, s.separation, p)
}

/// Merges groups into coarser groups while the distances between groups show a level.
fn merge_up(
    d: &Array2<f64>,
    mut groups: Vec<Vec<usize>>,
    mut kids: Vec<Tree>,
    separation: f64,
    p: &AutoParams,
) -> Tree {
    let mut node = Tree::Node {
        children: kids.clone(),
        separation: Some(separation),
    };
    while groups.len() >= 4 {
        let k = groups.len();
        let g = Array2::from_shape_fn((k, k), |(a, b)| {
            if a == b {
                return 0.0;
            }
            let mut v: Vec<f64> = groups[a]
                .iter()
                .flat_map(|&i| groups[b].iter().map(move |&j| d[[i, j]]))
                .collect();
            median(&mut v)
        });
        let Some(s) = best_split(&g, p) else { break };
        let supers = groups_of(&(0..k).collect::<Vec<_>>(), &s.labels);
        let mut new_groups = Vec::with_capacity(supers.len());
        let mut new_kids = Vec::with_capacity(supers.len());
        for sg in supers {
            if sg.len() == 1 {
                new_groups.push(groups[sg[0]].clone());
                new_kids.push(kids[sg[0]].clone());
            } else {
                new_groups.push(sg.iter().flat_map(|&x| groups[x].iter().copied()).collect());
                new_kids.push(Tree::Node {
                    children: sg.iter().map(|&x| kids[x].clone()).collect(),
                    separation: Some(separation),
                });
            }
        }
        groups = new_groups;
        kids = new_kids;
        node = Tree::Node {
            children: kids.clone(),
            separation: Some(s.separation),
        };
    }
    node
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two groups of `size` at distance 1 inside and `far` across, with a little structure.
    fn two_groups(size: usize, far: f64) -> Array2<f64> {
        let n = 2 * size;
        Array2::from_shape_fn((n, n), |(i, j)| {
            if i == j {
                0.0
            } else if i / size == j / size {
                1.0 + 0.01 * ((i + j) % 3) as f64
            } else {
                far
            }
        })
    }

    #[test]
    fn finds_two_groups_and_nothing_in_flat_data() {
        let t = auto(&two_groups(4, 3.0), &AutoParams::default());
        let Tree::Node {
            children,
            separation,
        } = &t
        else {
            panic!("{t:?}")
        };
        assert_eq!(children.len(), 2);
        assert_eq!(children[0], Tree::Leaf(vec![0, 1, 2, 3]));
        assert!(separation.unwrap() > 2.5);
        let flat = Array2::from_shape_fn((8, 8), |(i, j)| {
            if i == j {
                0.0
            } else {
                1.0 + 0.001 * ((i * j) % 5) as f64
            }
        });
        assert!(matches!(auto(&flat, &AutoParams::default()), Tree::Leaf(_)));
    }

    #[test]
    fn a_gap_below_the_noise_floor_is_no_level() {
        // Groups 2 % apart: a ratio of 1.02 and a gap far below 20 % of the scale.
        assert!(matches!(
            auto(&two_groups(4, 1.04), &AutoParams::default()),
            Tree::Leaf(_)
        ));
    }

    #[test]
    fn ranks_sharing_a_core_are_a_level() {
        // 8 ranks on 4 cores, rank r on core r % 4: core mates are slow to each other only
        // (3.5 us against 0.8 us), as measured with more ranks than cores.
        let d = Array2::from_shape_fn((8, 8), |(i, j)| {
            if i == j {
                0.0
            } else if i % 4 == j % 4 {
                3.5 + 0.01 * (i % 3) as f64
            } else {
                0.8 + 0.01 * ((i + j) % 3) as f64
            }
        });
        let t = auto(&d, &AutoParams::default());
        let Tree::Node { children, .. } = &t else {
            panic!("{t:?}")
        };
        let mut groups: Vec<Vec<usize>> = children
            .iter()
            .map(|c| {
                let mut r = c.ranks();
                r.sort();
                r
            })
            .collect();
        groups.sort();
        assert_eq!(groups, vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]);
    }

    #[test]
    fn a_slow_rank_is_not_a_level() {
        let mut m = two_groups(4, 3.0);
        for j in 0..8 {
            if j != 5 {
                m[[5, j]] *= 1.8;
                m[[j, 5]] *= 1.8;
            }
        }
        let t = auto(&m, &AutoParams::default());
        let Tree::Node { children, .. } = &t else {
            panic!("{t:?}")
        };
        assert_eq!(children.len(), 2, "{t:?}");
    }
}
