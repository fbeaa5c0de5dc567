//! Agglomerative linkage over a distance matrix (kodama), and flat cuts of its dendrogram.

use kodama::Method;
use ndarray::Array2;

/// How the distance between two clusters is computed when merging.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Linkage {
    /// The closest pair.
    Single,
    /// The farthest pair.
    Complete,
    /// The mean over all pairs (UPGMA).
    Average,
    /// Ward's minimum variance.
    Ward,
}

impl Linkage {
    fn method(self) -> Method {
        match self {
            Linkage::Single => Method::Single,
            Linkage::Complete => Method::Complete,
            Linkage::Average => Method::Average,
            Linkage::Ward => Method::Ward,
        }
    }
}

/// One merge: two clusters (ids below n are items, id n + k is the cluster of merge k).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Merge {
    /// First cluster.
    pub a: usize,
    /// Second cluster.
    pub b: usize,
    /// The distance at which they merge.
    pub height: f64,
}

/// The merges of an agglomerative clustering of n items, in order.
#[derive(Debug, Clone)]
pub struct Dendrogram {
    n: usize,
    merges: Vec<Merge>,
}

/// The upper triangle of a symmetric matrix, row by row.
pub fn condensed(m: &Array2<f64>) -> Vec<f64> {
    condensed_with(m, |_, _, x| x)
}

/// The upper triangle of `m` row by row with `f(i, j, m[i, j])` for each entry, rows of large
/// matrices written on every core.
pub fn condensed_with(m: &Array2<f64>, f: impl Fn(usize, usize, f64) -> f64 + Sync) -> Vec<f64> {
    use rayon::prelude::*;
    let n = m.nrows();
    if n < 512 {
        // Small (a host's ranks): at once, as sharing it out would cost more.
        let mut out = Vec::with_capacity(n * n.saturating_sub(1) / 2);
        for i in 0..n {
            let row = m.row(i);
            out.extend((i + 1..n).map(|j| f(i, j, row[j])));
        }
        return out;
    }
    let mut out = lgate_matrix::zeroed(n * n.saturating_sub(1) / 2);
    let mut rows = Vec::with_capacity(n);
    let mut rest = out.as_mut_slice();
    for i in 0..n {
        let (row, tail) = rest.split_at_mut(n - 1 - i);
        rows.push((i, row));
        rest = tail;
    }
    rows.into_par_iter().for_each(|(i, to)| {
        let from = m.row(i);
        for (k, t) in to.iter_mut().enumerate() {
            let j = i + 1 + k;
            *t = f(i, j, from[j]);
        }
    });
    out
}

impl Dendrogram {
    /// Clusters the items of a symmetric distance matrix.
    pub fn new(m: &Array2<f64>, linkage: Linkage) -> Self {
        let n = m.nrows();
        Self::from_condensed(n, condensed(m), linkage)
    }

    /// Clusters `n` items given the upper triangle of their distances row by row, as
    /// [`condensed`] writes it.
    pub fn from_condensed(n: usize, mut c: Vec<f64>, linkage: Linkage) -> Self {
        if n < 2 {
            return Dendrogram {
                n,
                merges: Vec::new(),
            };
        }
        let d = kodama::linkage(&mut c, n, linkage.method());
        let merges = d
            .steps()
            .iter()
            .map(|s| Merge {
                a: s.cluster1,
                b: s.cluster2,
                height: s.dissimilarity,
            })
            .collect();
        Dendrogram { n, merges }
    }

    /// Single linkage of the items of a symmetric matrix `m` with `f(i, j, m[i, j])` (i < j, `f`
    /// symmetric) as each pair's distance, read row by row without a condensed copy: the same
    /// merges, ties and all, as kodama's minimum spanning tree on [`condensed_with`]'s triangle.
    pub fn single_with(m: &Array2<f64>, f: impl Fn(usize, usize, f64) -> f64) -> Self {
        let n = m.nrows();
        if n < 2 {
            return Dendrogram {
                n,
                merges: Vec::new(),
            };
        }
        // Prim's algorithm from item 0, as Müllner's MST-linkage: each step updates the
        // nearest distance of every item not yet joined through the item joined last, and joins
        // the lowest-numbered of those at the least. The items not yet joined are kept packed
        // (one taken out swaps the last into its place), so ties are broken by number.
        let mut open: Vec<usize> = (1..n).collect();
        let mut nearest = vec![f64::INFINITY; n - 1];
        let mut last = 0;
        let mut edges: Vec<Merge> = Vec::with_capacity(n - 1);
        while !open.is_empty() {
            let row = m.row(last);
            let mut best = 0;
            for (&x, slot) in open.iter().zip(nearest.iter_mut()) {
                let v = f(x.min(last), x.max(last), row[x]);
                if v < *slot {
                    *slot = v;
                }
            }
            for p in 1..open.len() {
                let (s, least) = (nearest[p], nearest[best]);
                if s < least || (s == least && open[p] < open[best]) {
                    best = p;
                }
            }
            let x = open.swap_remove(best);
            let height = nearest.swap_remove(best);
            edges.push(Merge {
                a: x,
                b: last,
                height,
            });
            last = x;
        }
        // The edges in order of height (ties as found), each joining the clusters its ends are
        // in: cluster n + k is the one merge k made.
        edges
            .sort_by(|p, q| (p.height.partial_cmp(&q.height)).unwrap_or(std::cmp::Ordering::Equal));
        let mut parent: Vec<usize> = (0..2 * n - 1).collect();
        let find = |parent: &mut Vec<usize>, mut x: usize| {
            let mut root = x;
            while parent[root] != root {
                root = parent[root];
            }
            while parent[x] != root {
                let up = parent[x];
                parent[x] = root;
                x = up;
            }
            root
        };
        let merges = (edges.iter().enumerate())
            .map(|(k, e)| {
                let (a, b) = (find(&mut parent, e.a), find(&mut parent, e.b));
                parent[a] = n + k;
                parent[b] = n + k;
                Merge {
                    a: a.min(b),
                    b: a.max(b),
                    height: e.height,
                }
            })
            .collect();
        Dendrogram { n, merges }
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The merges in order.
    pub fn merges(&self) -> &[Merge] {
        &self.merges
    }

    /// Labels `0..k` of each item after all but the last k - 1 merges.
    pub fn cut(&self, k: usize) -> Vec<usize> {
        let mut cuts = Cuts::new(self);
        cuts.advance_to(k.clamp(1, self.n.max(1)));
        cuts.labels()
    }

    /// Labels after every merge whose height is at most `height`.
    pub fn cut_at(&self, height: f64) -> Vec<usize> {
        let merged = self
            .merges
            .iter()
            .take_while(|m| m.height <= height)
            .count();
        self.cut(self.n - merged)
    }
}

/// Walks the cuts of a dendrogram from n clusters down, one merge at a time.
#[derive(Debug, Clone)]
pub struct Cuts<'a> {
    dendrogram: &'a Dendrogram,
    parent: Vec<usize>,
    /// A representative item of every cluster id.
    representative: Vec<usize>,
    applied: usize,
}

impl<'a> Cuts<'a> {
    /// All items apart.
    pub fn new(dendrogram: &'a Dendrogram) -> Self {
        let n = dendrogram.n;
        Cuts {
            dendrogram,
            parent: (0..n).collect(),
            representative: (0..n).collect(),
            applied: 0,
        }
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    /// The number of clusters now.
    pub fn clusters(&self) -> usize {
        self.dendrogram.n - self.applied
    }

    /// Applies the next merge; false when none is left.
    pub fn step(&mut self) -> bool {
        let Some(&m) = self.dendrogram.merges.get(self.applied) else {
            return false;
        };
        let (ra, rb) = (self.representative[m.a], self.representative[m.b]);
        let (a, b) = (self.find(ra), self.find(rb));
        self.parent[b] = a;
        self.representative.push(ra);
        self.applied += 1;
        true
    }

    /// Merges until `k` clusters are left.
    pub fn advance_to(&mut self, k: usize) {
        while self.clusters() > k && self.step() {}
    }

    /// The height of the last merge applied and of the next one.
    pub fn heights(&self) -> (Option<f64>, Option<f64>) {
        let m = &self.dendrogram.merges;
        (
            self.applied.checked_sub(1).map(|k| m[k].height),
            m.get(self.applied).map(|x| x.height),
        )
    }

    /// Labels `0..clusters`, numbered by first appearance.
    pub fn labels(&mut self) -> Vec<usize> {
        let n = self.dendrogram.n;
        let mut id = vec![usize::MAX; n];
        let mut next = 0;
        (0..n)
            .map(|i| {
                let r = self.find(i);
                if id[r] == usize::MAX {
                    id[r] = next;
                    next += 1;
                }
                id[r]
            })
            .collect()
    }
}

/// Above this many coordinates, profiles are computed through one matrix product without
/// leaving any difference out: one bad coordinate among hundreds barely moves the mean.
const TRIMMED_UP_TO: usize = 256;

/// Untrimmed profiles: |r_i - r_j|^2 over all k, through one matrix product, less the two
/// mutual coordinates (k = i: (0 - d_ij)^2, k = j: (d_ij - 0)^2).
fn gram_profiles(m: &Array2<f64>) -> Array2<f64> {
    let n = m.nrows();
    let gram = m.dot(&m.t());
    let mut out = Array2::zeros((n, n));
    for i in 0..n {
        for j in i + 1..n {
            let all = gram[[i, i]] + gram[[j, j]] - 2.0 * gram[[i, j]];
            let rest = (all - 2.0 * m[[i, j]] * m[[i, j]]).max(0.0);
            let p = (rest / (n - 2) as f64).sqrt();
            out[[i, j]] = p;
            out[[j, i]] = p;
        }
    }
    out
}

/// Profile distances: how differently two items see all the others, the root mean square of
/// `d(i,k) - d(j,k)` over `k != i, j`, leaving out the largest 5 % of those differences (for
/// sets of up to 258 items; larger sets keep them all).
///
/// Two ranks in one group see the rest of the machine alike even when the group is slow inside
/// (a socket whose memory sits in the other socket), which raw distances cannot show. Leaving
/// out the largest differences keeps one slow pair or outlier entry, which corrupts a single
/// coordinate, from setting its two ranks apart; real structure changes many coordinates.
pub fn profile_distances(m: &Array2<f64>) -> Array2<f64> {
    let n = m.nrows();
    let mut out = Array2::zeros((n, n));
    if n < 3 {
        return out;
    }
    let coordinates = n - 2;
    if coordinates > TRIMMED_UP_TO {
        return gram_profiles(m);
    }
    let trim = if coordinates >= 8 {
        (coordinates as f64 * 0.05).ceil() as usize
    } else {
        0
    };
    let mut largest = vec![0.0f64; trim];
    let mut squares = vec![0.0f64; n];
    // The rows as slices (at most TRIMMED_UP_TO + 2 of them: a small copy).
    let rows: Vec<Vec<f64>> = m.rows().into_iter().map(|r| r.to_vec()).collect();
    for i in 0..n {
        for j in i + 1..n {
            // Every square in one pass (the two mutual coordinates as 0, which change neither
            // the sum nor the largest), summed in order.
            for ((q, &a), &b) in squares.iter_mut().zip(&rows[i]).zip(&rows[j]) {
                let diff = a - b;
                *q = diff * diff;
            }
            squares[i] = 0.0;
            squares[j] = 0.0;
            let sum: f64 = squares.iter().sum();
            // Keep the `trim` largest squares, smallest first.
            largest.iter_mut().for_each(|x| *x = 0.0);
            if trim > 0 {
                for &sq in &squares {
                    if sq > largest[0] {
                        let mut pos = 0;
                        while pos + 1 < trim && largest[pos + 1] < sq {
                            largest[pos] = largest[pos + 1];
                            pos += 1;
                        }
                        largest[pos] = sq;
                    }
                }
            }
            let kept: f64 = sum - largest.iter().sum::<f64>();
            let p = (kept.max(0.0) / (coordinates - trim) as f64).sqrt();
            out[[i, j]] = p;
            out[[j, i]] = p;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn single_linkage_by_rows_is_kodamas_to_the_last_tie() {
        // Distances of few values, so that many pairs tie; and a transformed distance as
        // HDBSCAN's mutual reachability.
        for n in [2, 3, 7, 40, 130, 600] {
            let mut m = Array2::zeros((n, n));
            for i in 0..n {
                for j in 0..i {
                    let v = ((i * 7919 + j * 104_729) % 5) as f64;
                    m[[i, j]] = v;
                    m[[j, i]] = v;
                }
            }
            let core: Vec<f64> = (0..n).map(|i| (i % 3) as f64).collect();
            let f = |i: usize, j: usize, x: f64| x.max(core[i]).max(core[j]);
            let by_rows = Dendrogram::single_with(&m, f);
            let kodama = Dendrogram::from_condensed(n, condensed_with(&m, f), Linkage::Single);
            assert_eq!(by_rows.merges(), kodama.merges(), "n = {n}");
        }
    }

    #[test]
    fn cuts_follow_the_merges() {
        let m = array![
            [0.0, 1.0, 5.0, 5.0],
            [1.0, 0.0, 5.0, 5.0],
            [5.0, 5.0, 0.0, 2.0],
            [5.0, 5.0, 2.0, 0.0]
        ];
        let d = Dendrogram::new(&m, Linkage::Average);
        assert_eq!(d.cut(4), vec![0, 1, 2, 3]);
        assert_eq!(d.cut(3), vec![0, 0, 1, 2]);
        assert_eq!(d.cut(2), vec![0, 0, 1, 1]);
        assert_eq!(d.cut(1), vec![0, 0, 0, 0]);
        assert_eq!(d.cut_at(1.5), vec![0, 0, 1, 2]);
        let mut c = Cuts::new(&d);
        c.advance_to(2);
        assert_eq!(c.heights(), (Some(2.0), Some(5.0)));
    }

    #[test]
    fn profiles_match_the_definition() {
        let m = array![
            [0.0, 1.0, 4.0, 6.0],
            [1.0, 0.0, 3.0, 7.0],
            [4.0, 3.0, 0.0, 2.0],
            [6.0, 7.0, 2.0, 0.0]
        ];
        let p = profile_distances(&m);
        // Too few coordinates to leave any out.
        // Items 0 and 1 compared on items 2 and 3: (4 - 3)^2 + (6 - 7)^2 over 2.
        assert!((p[[0, 1]] - 1.0).abs() < 1e-12);
        // Items 0 and 2 on items 1 and 3: (1 - 3)^2 + (6 - 2)^2 over 2 = 10.
        assert!((p[[0, 2]] - 10f64.sqrt()).abs() < 1e-12);
        assert_eq!(p[[2, 0]], p[[0, 2]]);
    }

    #[test]
    fn large_sets_use_the_matrix_product() {
        let n = 300;
        let m = Array2::from_shape_fn((n, n), |(i, j)| {
            if i == j {
                0.0
            } else {
                1.0 + ((i * 7 + j * 7) % 13) as f64 * 0.1
            }
        });
        let p = profile_distances(&m);
        let direct: f64 = (0..n)
            .filter(|&k| k != 3 && k != 5)
            .map(|k| (m[[3, k]] - m[[5, k]]).powi(2))
            .sum::<f64>()
            / (n - 2) as f64;
        assert!((p[[3, 5]] - direct.sqrt()).abs() < 1e-9);
    }

    #[test]
    fn one_bad_coordinate_does_not_count() {
        // Twelve identical items, except that item 1's distance to item 0 is far too large.
        let mut m = Array2::from_shape_fn((12, 12), |(i, j)| if i == j { 0.0 } else { 1.0 });
        m[[0, 1]] = 9.0;
        m[[1, 0]] = 9.0;
        let p = profile_distances(&m);
        assert!(p[[0, 5]] < 1e-12 && p[[1, 5]] < 1e-12, "{}", p[[0, 5]]);
    }
}
