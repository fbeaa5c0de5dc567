//! Partitions mended before they are judged: groups' members, far pairs split off, single
//! items absorbed into their nearest group.

use super::*;

/// The items of each group `0..k`, in increasing order.
pub(crate) fn members_of(labels: &[usize], k: usize) -> Vec<Vec<usize>> {
    let mut members = vec![Vec::new(); k];
    for (i, &l) in labels.iter().enumerate() {
        members[l].push(i);
    }
    members
}

/// A group of two whose distance is at least halfway from the usual such group's (the median
/// of them) to the mean distance between groups is two singletons: an SMT pair measured slow,
/// or two ranks that noise drew together in a level of singletons. Only when three or more
/// groups of two can tell the usual one, and at most a quarter of them are so far apart.
pub(crate) fn split_far_pairs(m: &Array2<f64>, labels: &mut [usize]) {
    let n = labels.len();
    let k = labels.iter().max().map_or(0, |&x| x + 1);
    let members = members_of(labels, k);
    let pairs: Vec<usize> = (0..k).filter(|&g| members[g].len() == 2).collect();
    if pairs.len() < 3 {
        return;
    }
    let distance = |g: usize| m[[members[g][0], members[g][1]]];
    let usual = median(&mut pairs.iter().map(|&g| distance(g)).collect::<Vec<_>>());
    // The mean distance between ranks of different groups (the pairs of every `stride`-th
    // rank when there are more than [`WITHIN_SAMPLES`]).
    let stride = (n * n.saturating_sub(1) / 2 / WITHIN_SAMPLES).max(1);
    let (mut sum, mut count) = (0.0, 0usize);
    for i in (0..n).step_by(stride) {
        let row = m.row(i);
        for j in (i + 1..n).filter(|&j| labels[i] != labels[j]) {
            sum += row[j];
            count += 1;
        }
    }
    if count == 0 {
        return;
    }
    let halfway = 0.5 * (usual + sum / count as f64);
    let far: Vec<usize> = pairs
        .into_iter()
        .filter(|&g| distance(g) >= halfway)
        .collect();
    if far.is_empty() || 4 * far.len() > members.iter().filter(|g| g.len() == 2).count() {
        return;
    }
    for (next, g) in (k..).zip(far) {
        labels[members[g][1]] = next;
    }
}

/// A singleton joins the group it is nearest to (mean raw distance) when it is nearer to it
/// than halfway from the group's mean distance inside to the mean distance between groups: a
/// slow rank still belongs where it runs, while a rank as far from every group as groups are
/// from each other (an SMT pair measured slow: two singletons) joins none by chance.
pub(crate) fn absorb_singletons(m: &Array2<f64>, labels: &mut [usize]) {
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
    // How far groups are from each other: the mean over pairs of ranks in different groups
    // (every pair of grouped ranks, less the pairs inside groups).
    let members = members_of(labels, k);
    let weight: Vec<f64> = labels
        .iter()
        .map(|&l| if sizes[l] >= 2 { 1.0 } else { 0.0 })
        .collect();
    let mut sum = 0.0;
    for i in 0..n {
        if sizes[labels[i]] < 2 {
            continue;
        }
        let row = m.row(i);
        let row = row.as_slice().expect("a standard-layout row");
        let all = weighted_sum(&row[i + 1..], &weight[i + 1..]);
        let group = &members[labels[i]];
        let inside: f64 = group[group.partition_point(|&j| j <= i)..]
            .iter()
            .map(|&j| row[j])
            .sum();
        sum += all - inside;
    }
    let pairs = |s: usize| s * s.saturating_sub(1) / 2;
    let grouped: usize = sizes.iter().filter(|&&s| s >= 2).sum();
    let count = pairs(grouped)
        - sizes
            .iter()
            .filter(|&&s| s >= 2)
            .map(|&s| pairs(s))
            .sum::<usize>();
    let level = if count == 0 {
        f64::INFINITY
    } else {
        sum / count as f64
    };
    // Each group's mean distance inside.
    let inside: Vec<f64> = members
        .iter()
        .map(|g| {
            let pairs = pairs(g.len());
            let sum: f64 = g
                .iter()
                .enumerate()
                .flat_map(|(a, &i)| g[a + 1..].iter().map(move |&j| m[[i, j]]))
                .sum();
            if pairs == 0 {
                0.0
            } else {
                sum / pairs as f64
            }
        })
        .collect();
    // The usual distance inside a group of two: a singleton slow towards one rank of a group
    // of two (a slow pair) is judged by its distance to the other (the third core of a CCD).
    let mut twos: Vec<f64> = (members.iter())
        .filter(|g| g.len() == 2)
        .map(|g| m[[g[0], g[1]]])
        .collect();
    let usual_two = (!twos.is_empty()).then(|| median(&mut twos));
    let original = labels.to_vec();
    let mut sums = vec![0.0f64; k];
    for i in 0..n {
        if sizes[original[i]] != 1 {
            continue;
        }
        // Each group's members gathered in increasing order: the sums of a pass over the row.
        let row = m.row(i);
        for ((sum, group), &size) in sums.iter_mut().zip(&members).zip(&sizes) {
            *sum = if size >= 2 {
                group.iter().fold(0.0, |s, &j| s + row[j])
            } else {
                0.0
            };
        }
        let distance = |g: usize| match (members[g].as_slice(), usual_two) {
            (&[a, b], Some(u)) if row[a].max(row[b]) > SLOW_PAIR * u => row[a].min(row[b]),
            _ => sums[g] / sizes[g] as f64,
        };
        let nearest = (0..k)
            .filter(|&g| sizes[g] >= 2)
            .map(|g| (g, distance(g)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((g, d)) = nearest {
            if d < (inside[g] + level) / 2.0 {
                labels[i] = g;
            }
        }
    }
}
