//! The candidate partitions of a set of ranks: the cuts of an average-linkage dendrogram worth
//! scoring, the best split, and whether a partition is one at all.

use super::*;

/// The cuts worth scoring, most clusters first (cuts are reached by merging, which only goes
/// one way): all of them for small sets, else those before the largest jumps in merge height.
pub(crate) fn cut_sizes(d: &Dendrogram, p: &AutoParams) -> Vec<usize> {
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
pub(crate) fn best_split(m: &Array2<f64>, p: &AutoParams) -> Option<Split> {
    let n = m.nrows();
    if n < 4 {
        return None;
    }
    // The scale, the profile view and each view's dendrogram are independent: on every core.
    let with_profile = (p.profile_min_items..=p.profile_max_items).contains(&n);
    let ((scale, raw_tree), profile) = rayon::join(
        || rayon::join(|| upper_median(m), || Dendrogram::new(m, Linkage::Average)),
        || {
            with_profile.then(|| {
                let view = profile_distances(m);
                let tree = Dendrogram::new(&view, Linkage::Average);
                (view, tree)
            })
        },
    );
    let mut views: Vec<(View, &Array2<f64>, &Dendrogram)> = vec![(View::Raw, m, &raw_tree)];
    if let Some((view, tree)) = &profile {
        views.push((View::Profile, view, tree));
    }
    // Small sets: single linkage's cuts too, which keep a group whose one pair a slow pair
    // hit (three cores of a CCD, two of them measured slow) where average linkage parts it.
    let single = (n <= p.all_cuts_up_to).then(|| Dendrogram::new(m, Linkage::Single));
    if let Some(tree) = &single {
        views.push((View::Raw, m, tree));
    }
    // Every cut's labels first (cuts are reached by merging, one way), then scored in parallel.
    let mut candidates: Vec<(View, &Array2<f64>, Vec<usize>)> = Vec::new();
    for &(kind, view, dendrogram) in &views {
        let mut cuts = Cuts::new(dendrogram);
        for k in cut_sizes(dendrogram, p) {
            cuts.advance_to(k);
            let labels = cuts.labels();
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
            candidates.push((kind, view, labels));
        }
    }
    let mut passing: Vec<(View, &Array2<f64>, Split)> = candidates
        .into_par_iter()
        .map_init(Vec::new, |within, (kind, view, mut labels)| {
            split_far_pairs(m, &mut labels);
            absorb_singletons(m, &mut labels);
            let s = separation(view, &labels, scale, p, within, kind);
            (s > 0.0).then_some((
                kind,
                view,
                Split {
                    labels,
                    separation: s,
                    singles: None,
                },
            ))
        })
        .flatten()
        .collect();
    // The costly checks last, best first: usually only the winner is checked. A level that
    // stands `min_ratio` apart comes before a narrower one far out of the noise, and one the
    // distances themselves show before one only profiles show (slow pairs that happen to
    // share ranks make those look alike).
    let key = |kind: View, s: &Split| (s.separation >= p.min_ratio, kind == View::Raw);
    passing.sort_by(|a, b| {
        let (ka, kb) = (key(a.0, &a.2), key(b.0, &b.2));
        kb.cmp(&ka).then(b.2.separation.total_cmp(&a.2.separation))
    });
    let level = |(_, view, s): &(View, &Array2<f64>, Split)| {
        !inverted(m, &s.labels, p) && distinct(view, &s.labels)
    };
    let best = passing.iter().position(level)?;
    // A finer level that parts some of its groups into single ranks: the recursion inside each
    // group cannot find it (a group's parting into singletons is no level of the group).
    let singles = singles_beside(m, &passing[best].2.labels, scale, p);
    let mut split = passing.swap_remove(best).2;
    split.singles = singles;
    Some(split)
}

/// How often a distance between a group and its nearest group must exceed a distance inside a
/// group (each compared with each) for the groups to be distinct.
pub(crate) const MIN_DISTINCT: f64 = 0.9;

/// Whether the groups stand apart in the bulk of the distances of the view they were found in,
/// not only in their medians and quartiles: a distance between a group and its nearest group
/// (by median) exceeds a distance inside a group at least 90 % of the time. Medians of a few
/// values can differ by chance: on 12 ranks measured at 0 B over an oversubscribed emulated
/// network (round trips of 22-150 us with no structure), groups of two picked by the
/// dendrogram have medians 1.2-5x apart, yet their distances overlap.
pub(crate) fn distinct(m: &Array2<f64>, labels: &[usize]) -> bool {
    let k = labels.iter().max().map_or(0, |&x| x + 1);
    let members = members_of(labels, k);
    // Each group's nearest group by median, among its nearest by mean.
    let mut values = Vec::new();
    let mut best = vec![(f64::INFINITY, usize::MAX); k];
    for (a, b) in near_group_pairs(m, labels, &members) {
        let x = median_between(m, &members[a], &members[b], &mut values);
        if x < best[a].0 {
            best[a] = (x, b);
        }
        if x < best[b].0 {
            best[b] = (x, a);
        }
    }
    let mut nearest: Vec<(usize, usize)> = best
        .iter()
        .enumerate()
        .filter(|(_, b)| b.1 != usize::MAX)
        .map(|(g, &(_, h))| (g.min(h), g.max(h)))
        .collect();
    nearest.sort_unstable();
    nearest.dedup();
    // Every `stride`-th distance inside groups and between nearest groups: the share is exact
    // to a fraction of a percent from 200 000 of each.
    let sampled = |blocks: &mut dyn Iterator<Item = (usize, usize)>, total: usize| {
        let stride = (total / WITHIN_SAMPLES).max(1);
        let mut v: Vec<f64> = blocks.step_by(stride).map(|(i, j)| m[[i, j]]).collect();
        v.sort_unstable_by(f64::total_cmp);
        v
    };
    // Groups of four or more sampled; the pairs of groups of two and three without their slow
    // pairs, as the separation takes them.
    let large = |g: &&Vec<usize>| g.len() > 3;
    let inside_total: usize = (members.iter().filter(large))
        .map(|g| g.len() * (g.len() - 1) / 2)
        .sum();
    let mut inside = sampled(
        &mut members.iter().filter(large).flat_map(|g| {
            g.iter()
                .enumerate()
                .flat_map(move |(a, &i)| g[a + 1..].iter().map(move |&j| (i, j)))
        }),
        inside_total,
    );
    let mut small: Vec<f64> = (members.iter())
        .filter(|g| (2..=3).contains(&g.len()))
        .flat_map(|g| pairs_in(m, g))
        .collect();
    if !small.is_empty() {
        without_slow_pairs(&mut small);
        inside.extend(small);
        inside.sort_unstable_by(f64::total_cmp);
    }
    let between_total: usize = nearest
        .iter()
        .map(|&(g, h)| members[g].len() * members[h].len())
        .sum();
    let between = sampled(
        &mut nearest.iter().flat_map(|&(g, h)| {
            let (a, b) = (&members[g], &members[h]);
            a.iter().flat_map(move |&i| b.iter().map(move |&j| (i, j)))
        }),
        between_total,
    );
    if inside.is_empty() || between.is_empty() {
        return true;
    }
    let mut above = 0.0f64;
    let (mut lo, mut hi) = (0usize, 0usize);
    for &b in &between {
        while lo < inside.len() && inside[lo] < b {
            lo += 1;
        }
        hi = hi.max(lo);
        while hi < inside.len() && inside[hi] <= b {
            hi += 1;
        }
        above += lo as f64 + 0.5 * (hi - lo) as f64;
    }
    above / (inside.len() as f64 * between.len() as f64) >= MIN_DISTINCT
}
