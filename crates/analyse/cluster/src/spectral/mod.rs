//! Spectral clustering (Ng, Jordan and Weiss, the reference thesis's [26]) and K-means, on
//! linfa: a Gaussian affinity made from the distances, its leading eigenvectors
//! (linfa-linalg), K-means on their normalised rows or on the items' own vectors
//! (linfa-clustering), k given or read from the eigengaps, and the same inside every group
//! found, so that the result is a hierarchy.
//!
//! linfa is built on ndarray 0.16 and this crate on 0.17: the arrays handed over are views of
//! the same memory (`ArrayView2::from_shape` over the other version's slice), never copies.
//!
//! Cost at P items: the affinity is one P x P matrix beside the distances (twice the matrix in
//! all); the leading m eigenvectors take a few dozen products of that matrix with P x 3m blocks
//! (LOBPCG), or a full eigendecomposition (O(P^3)) for P up to [`FULL_EIGEN_UP_TO`].
//!
//! ```
//! use lgate_cluster::spectral::{spectral, KernelScale, SpectralParams};
//! use linfa::ParamGuard;
//! use ndarray::Array2;
//!
//! // Three nodes of four ranks: 1 us inside, 4 us across.
//! let d = Array2::from_shape_fn((12, 12), |(i, j)| match (i == j, i / 4 == j / 4) {
//!     (true, _) => 0.0,
//!     (false, true) => 1.0 + 0.01 * ((i * j) % 3) as f64,
//!     (false, false) => 4.0,
//! });
//! let params = SpectralParams::new().check()?;
//! let tree = spectral(&d, &params);
//! assert_eq!(tree.ranks().len(), 12);
//! assert!(matches!(&tree, lgate_cluster::Tree::Node { children, .. } if children.len() == 3));
//! # Ok::<(), lgate_cluster::spectral::SpectralError>(())
//! ```

use linfa::traits::{Fit, Predict};
use linfa::{DatasetBase, ParamGuard};
use linfa_clustering::KMeans;
use ndarray::Array2;
use ndarray016 as nd;
use rayon::prelude::*;

use crate::apart::stands_apart;
use crate::auto::Tree;
use crate::tree::sub_matrix;

mod kmeans;

use kmeans::kmeans_labels;

/// Up to this many items the eigenvectors come from a full symmetric eigendecomposition;
/// above it from LOBPCG (0.17 s at 256 items, 2.3 s at 512, 19 s at 1024 for the full one).
pub const FULL_EIGEN_UP_TO: usize = 320;

/// A group with fewer items is not split further unless its k is given.
const LEAST_TO_SPLIT: usize = 4;

/// How wide the Gaussian kernel exp(-d_ij^2 / (s_i s_j)) is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KernelScale {
    /// s_i is item i's distance to its n-th nearest other item (Zelnik-Manor and Perona's
    /// local scaling; they take n = 7), so each item's scale follows its own neighbourhood.
    Neighbour(usize),
    /// One scale s for every item, in the distances' unit.
    Fixed(f64),
}

/// A parameter [`spectral`] or [`kmeans`] cannot use.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpectralError {
    /// k is zero.
    #[error("k must be at least 1")]
    NoGroups,
    /// k is above the item count.
    #[error("k {k} is more groups than the {items} ranks")]
    MoreGroupsThanItems {
        /// The k asked for.
        k: usize,
        /// The items there are.
        items: usize,
    },
    /// max_k below 2.
    #[error("max_k must be at least 2 (it was {0})")]
    MaxKTooSmall(usize),
    /// A fixed scale that is zero, negative or not finite.
    #[error("scale must be a positive number in the distances' unit (it was {0})")]
    BadScale(f64),
    /// The neighbour of the local scale is the item itself.
    #[error("scale_neighbour must be at least 1 (the nearest other rank)")]
    NoNeighbour,
}

/// The parameters of [`spectral`] and [`kmeans`], checked.
#[derive(Debug, Clone, PartialEq)]
pub struct SpectralValidParams {
    k: Option<usize>,
    max_k: usize,
    scale: KernelScale,
}

impl SpectralValidParams {
    /// The number of groups at the top; `None` reads it from the eigengaps.
    pub fn k(&self) -> Option<usize> {
        self.k
    }
    /// How many eigenvalues the eigengaps are first looked for among, less one.
    pub fn max_k(&self) -> usize {
        self.max_k
    }
    /// The kernel's scale.
    pub fn scale(&self) -> KernelScale {
        self.scale
    }
    /// Refuses a k above the item count.
    pub fn check_items(&self, items: usize) -> Result<(), SpectralError> {
        match self.k {
            Some(k) if k > items => Err(SpectralError::MoreGroupsThanItems { k, items }),
            _ => Ok(()),
        }
    }
}

/// The parameters of [`spectral`] and [`kmeans`], to be checked ([`ParamGuard`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SpectralParams(SpectralValidParams);

impl Default for SpectralParams {
    fn default() -> Self {
        Self::new()
    }
}

impl SpectralParams {
    /// k from the eigengaps, among the first 17 eigenvalues (widened while needed), local
    /// scaling at the 7th neighbour.
    pub fn new() -> Self {
        SpectralParams(SpectralValidParams {
            k: None,
            max_k: 16,
            scale: KernelScale::Neighbour(7),
        })
    }
    /// The number of groups at the top (`None`: from the eigengaps).
    pub fn k(mut self, k: Option<usize>) -> Self {
        self.0.k = k;
        self
    }
    /// The eigengaps are first looked for among the first `max_k + 1` eigenvalues, and the
    /// window doubled while its last eigenvalue still belongs to a group structure (above one
    /// half), up to half the items.
    pub fn max_k(mut self, max_k: usize) -> Self {
        self.0.max_k = max_k;
        self
    }
    /// The kernel's scale.
    pub fn scale(mut self, scale: KernelScale) -> Self {
        self.0.scale = scale;
        self
    }
}

impl ParamGuard for SpectralParams {
    type Checked = SpectralValidParams;
    type Error = SpectralError;

    fn check_ref(&self) -> Result<&SpectralValidParams, SpectralError> {
        let p = &self.0;
        if p.k == Some(0) {
            return Err(SpectralError::NoGroups);
        }
        if p.max_k < 2 {
            return Err(SpectralError::MaxKTooSmall(p.max_k));
        }
        match p.scale {
            KernelScale::Fixed(s) if !(s.is_finite() && s > 0.0) => Err(SpectralError::BadScale(s)),
            KernelScale::Neighbour(0) => Err(SpectralError::NoNeighbour),
            _ => Ok(p),
        }
    }

    fn check(self) -> Result<SpectralValidParams, SpectralError> {
        self.check_ref()?;
        Ok(self.0)
    }
}

/// The Gaussian affinity of the distances `d` (zero on the diagonal, as Ng, Jordan and Weiss
/// set it), normalised: D^-1/2 W D^-1/2 with D the row sums. An item whose affinity to every
/// other underflows to zero keeps 1 towards itself: a group of its own.
pub fn normalised_affinity(d: ndarray::ArrayView2<f64>, scale: KernelScale) -> nd::Array2<f64> {
    let n = d.nrows();
    let d = d.as_standard_layout();
    let rows = d.as_slice().expect("standard layout");
    let s: Vec<f64> = match scale {
        KernelScale::Fixed(s) => vec![s; n],
        KernelScale::Neighbour(q) => rows
            .par_chunks(n.max(1))
            .enumerate()
            .map(|(i, row)| {
                let mut others: Vec<f64> = row
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != i)
                    .map(|(_, &x)| x)
                    .collect();
                if others.is_empty() {
                    return 1.0;
                }
                let q = q.min(others.len()) - 1;
                let (_, &mut s, _) = others.select_nth_unstable_by(q, f64::total_cmp);
                // Items at distance zero from their neighbours: the least positive distance,
                // else any positive scale (every affinity is then 1 or 0).
                if s > 0.0 {
                    s
                } else {
                    others
                        .iter()
                        .copied()
                        .filter(|&x| x > 0.0)
                        .fold(f64::INFINITY, f64::min)
                }
            })
            .map(|s| if s.is_finite() { s } else { 1.0 })
            .collect(),
    };
    let mut w = vec![0.0; n * n];
    w.par_chunks_mut(n.max(1)).enumerate().for_each(|(i, out)| {
        let row = &rows[i * n..(i + 1) * n];
        for j in 0..n {
            out[j] = if i == j {
                0.0
            } else {
                (-(row[j] * row[j]) / (s[i] * s[j])).exp()
            };
        }
        if out.iter().sum::<f64>() <= f64::MIN_POSITIVE {
            out[i] = 1.0;
        }
    });
    let degree: Vec<f64> = w
        .par_chunks(n.max(1))
        .map(|row| 1.0 / row.iter().sum::<f64>().sqrt())
        .collect();
    w.par_chunks_mut(n.max(1)).enumerate().for_each(|(i, row)| {
        for (j, x) in row.iter_mut().enumerate() {
            *x *= degree[i] * degree[j];
        }
    });
    nd::Array2::from_shape_vec((n, n), w).expect("n x n values")
}

/// The `count` largest eigenvalues of the symmetric matrix `m` (largest first) and their
/// eigenvectors (columns).
fn leading_eigen(m: &nd::Array2<f64>, count: usize) -> (Vec<f64>, nd::Array2<f64>) {
    let n = m.nrows();
    let count = count.clamp(1, n.max(1));
    if n > FULL_EIGEN_UP_TO && count * 5 <= n {
        if let Some(found) = lobpcg_leading(m, count) {
            return found;
        }
    }
    full_eigen(m, count)
}

/// The leading eigenpairs from the full eigendecomposition.
fn full_eigen(m: &nd::Array2<f64>, count: usize) -> (Vec<f64>, nd::Array2<f64>) {
    use linfa_linalg::eigh::EighInto;
    let n = m.nrows();
    // The matrix is symmetric and finite, so the decomposition succeeds; a failure would leave
    // every item in one group rather than stop the program.
    let Ok((values, vectors)) = m.clone().eigh_into() else {
        return (vec![1.0], nd::Array2::from_elem((n, 1), 1.0));
    };
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    order.truncate(count);
    let vals = order.iter().map(|&i| values[i]).collect();
    let vecs = nd::Array2::from_shape_fn((n, order.len()), |(r, c)| vectors[[r, order[c]]]);
    (vals, vecs)
}

/// The leading eigenpairs from LOBPCG on M + I (positive semi-definite: M's eigenvalues lie in
/// [-1, 1]), its products with blocks of vectors split over the cores; `None` if it found none.
fn lobpcg_leading(m: &nd::Array2<f64>, count: usize) -> Option<(Vec<f64>, nd::Array2<f64>)> {
    use linfa_linalg::lobpcg::{lobpcg, Order};
    use rand::{Rng, SeedableRng};
    let n = m.nrows();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x5350_4543);
    let x = nd::Array2::from_shape_fn((n, count), |_| rng.random::<f64>() - 0.5);
    let threads = rayon::current_num_threads().max(1);
    let chunk = n.div_ceil(threads);
    let product = |x: nd::ArrayView2<f64>| -> nd::Array2<f64> {
        let mut out = x.to_owned();
        let blocks: Vec<nd::Array2<f64>> = m
            .axis_chunks_iter(nd::Axis(0), chunk)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|rows| rows.dot(&x))
            .collect();
        for (k, b) in blocks.into_iter().enumerate() {
            let mut part = out.slice_mut(nd::s![k * chunk..k * chunk + b.nrows(), ..]);
            part += &b;
        }
        out
    };
    let found = match lobpcg(product, x, |_| {}, None, 1e-6, 400, Order::Largest) {
        Ok(found) | Err((_, Some(found))) => found,
        Err((_, None)) => return None,
    };
    let mut order: Vec<usize> = (0..found.eigvals.len()).collect();
    order.sort_by(|&a, &b| found.eigvals[b].total_cmp(&found.eigvals[a]));
    let vals = order.iter().map(|&i| found.eigvals[i] - 1.0).collect();
    let vecs = nd::Array2::from_shape_fn((n, order.len()), |(r, c)| found.eigvecs[[r, order[c]]]);
    Some((vals, vecs))
}

/// The smallest gap between consecutive eigenvalues that stands for a level on its own.
const LEAST_GAP: f64 = 0.1;
/// A smaller gap stands for a level when it covers at least [`NEAR_ONE_SHARE`] of the way
/// from the next eigenvalue to 1: k groups nearly apart (eigenvalues near 1), such as the nodes
/// of a machine whose sockets are its clearer level (1 against 0.91 and 0.91 against -0.02 on
/// 32 nodes of 2 sockets).
const LEAST_NEAR_ONE_GAP: f64 = 0.05;
/// See [`LEAST_NEAR_ONE_GAP`].
const NEAR_ONE_SHARE: f64 = 0.5;
/// How many times the median gap a gap must be to stand out against the noise.
const GAP_OVER_NOISE: f64 = 4.0;
/// Above this, the last eigenvalue of the window still belongs to a group structure and the
/// window is widened.
const STRUCTURED: f64 = 0.5;

/// The k the eigenvalues (largest first) show: the smallest k >= 2 whose gap to the next
/// eigenvalue stands out: at least [`GAP_OVER_NOISE`] times the median gap of the window, and
/// at least [`LEAST_GAP`], or [`LEAST_NEAR_ONE_GAP`] where it covers half the way to 1; `None`
/// when none does.
pub fn k_from_eigengaps(values: &[f64]) -> Option<usize> {
    if values.len() < 3 {
        return None;
    }
    // gaps[k - 1] is the gap after the k-th eigenvalue.
    let gaps: Vec<f64> = values.windows(2).map(|w| (w[0] - w[1]).max(0.0)).collect();
    let mut rest = gaps[1..].to_vec();
    let noise = lgate_stats::median(&mut rest);
    (2..=gaps.len()).find(|&k| {
        let gap = gaps[k - 1];
        let to_one = 1.0 - values[k];
        gap >= GAP_OVER_NOISE * noise
            && (gap >= LEAST_GAP || (gap >= LEAST_NEAR_ONE_GAP && gap >= NEAR_ONE_SHARE * to_one))
    })
}

/// The leading eigenpairs of a normalised affinity, with the k they show: `count` pairs when k
/// is given, else a window of `max_k + 1` doubled while its last eigenvalue is above one half.
fn spectrum(
    m: &nd::Array2<f64>,
    k: Option<usize>,
    max_k: usize,
) -> (Option<usize>, Vec<f64>, nd::Array2<f64>) {
    let n = m.nrows();
    if let Some(k) = k {
        let (vals, vecs) = leading_eigen(m, k);
        return (Some(k), vals, vecs);
    }
    let mut window = (max_k + 1).min(n);
    loop {
        let (vals, vecs) = leading_eigen(m, window);
        let last = vals.last().copied().unwrap_or(0.0);
        if last <= STRUCTURED || window >= n / 2 || window >= n {
            return (k_from_eigengaps(&vals), vals, vecs);
        }
        window = (2 * window - 1).min(n);
    }
}

/// The rows of the first `k` eigenvectors, each scaled to unit length (Ng, Jordan and Weiss).
fn embedding(vectors: &nd::Array2<f64>, k: usize) -> nd::Array2<f64> {
    let mut u = vectors
        .slice(nd::s![.., ..k.min(vectors.ncols())])
        .to_owned();
    for mut row in u.rows_mut() {
        let norm = row.dot(&row).sqrt();
        if norm > 0.0 {
            row /= norm;
        }
    }
    u
}

/// How a group is split once its k is known: from the spectrum's eigenvectors, or K-means of
/// the items' own vectors.
enum Splitter<'a> {
    /// Normalised rows of the leading eigenvectors.
    Spectral,
    /// The rows of this matrix (all items), restricted to the group's rows and, when
    /// `square`, to its columns too.
    Rows {
        points: &'a Array2<f64>,
        square: bool,
    },
}

/// The hierarchy of `items` (indices into `d`).
fn hierarchy(
    d: &Array2<f64>,
    items: Vec<usize>,
    k: Option<usize>,
    p: &SpectralValidParams,
    splitter: &Splitter<'_>,
) -> Tree {
    let n = items.len();
    if n < 2 || (k.is_none() && n < LEAST_TO_SPLIT) {
        return Tree::Leaf(items);
    }
    // The whole matrix is used as it is (no copy); a group's rows and columns are copied.
    let whole = items.iter().enumerate().all(|(a, &i)| a == i) && n == d.nrows();
    let sub: ndarray::CowArray<f64, ndarray::Ix2> = if whole {
        d.view().into()
    } else {
        sub_matrix(d, &items).into()
    };
    // K-means with its k given needs no spectrum.
    let (mut chosen, mut vectors) = match (k, splitter) {
        (Some(k), Splitter::Rows { .. }) => (Some(k), nd::Array2::zeros((0, 0))),
        _ => {
            let affinity = normalised_affinity(sub.view(), p.scale);
            let (chosen, _, vectors) = spectrum(&affinity, k, p.max_k);
            (chosen, vectors)
        }
    };
    // Groups smaller than the local scale's neighbourhood (SMT pairs, sockets of two cores)
    // do not show at it: they are looked for again at the nearest neighbour's distance.
    if chosen.is_none() {
        if let KernelScale::Neighbour(q) = p.scale {
            if q > 1 {
                let affinity = normalised_affinity(sub.view(), KernelScale::Neighbour(1));
                (chosen, _, vectors) = spectrum(&affinity, None, p.max_k);
            }
        }
    }
    let Some(k) = chosen.filter(|&k| k >= 2) else {
        return Tree::Leaf(items);
    };
    let labels = match splitter {
        Splitter::Spectral => kmeans_labels(embedding(&vectors, k).view(), k),
        Splitter::Rows { points, square } => {
            // The distances themselves (matrix space): the group's rows and columns, at hand.
            let rows: ndarray::CowArray<f64, ndarray::Ix2> = if *square && std::ptr::eq(*points, d)
            {
                sub.view().into()
            } else if *square {
                sub_matrix(points, &items).into()
            } else {
                points.select(ndarray::Axis(0), &items).into()
            };
            let rows = rows.as_standard_layout();
            let view = nd::ArrayView2::from_shape(rows.dim(), rows.as_slice().expect("standard"))
                .expect("same shape");
            kmeans_labels(view, k)
        }
    };
    // A k read from the eigengaps is kept only if its groups stand apart in the distances, as
    // every method's own choice of k is.
    if labels.iter().all(|&l| l == labels[0])
        || (p.k.is_none() && !stands_apart(sub.view(), &labels))
    {
        return Tree::Leaf(items);
    }
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); k];
    for (a, &l) in labels.iter().enumerate() {
        groups[l].push(items[a]);
    }
    groups.retain(|g| !g.is_empty());
    groups.sort_by_key(|g| g[0]);
    let children = groups
        .into_par_iter()
        .map(|g| hierarchy(d, g, None, &inner(p), splitter))
        .collect();
    Tree::Node {
        children,
        separation: None,
    }
}

/// The parameters inside a group: k from the eigengaps.
fn inner(p: &SpectralValidParams) -> SpectralValidParams {
    SpectralValidParams {
        k: None,
        ..p.clone()
    }
}

/// Spectral clustering of the items of the distance matrix `d` (Ng, Jordan and Weiss): the
/// leading eigenvectors of the normalised Gaussian affinity, their rows scaled to unit length,
/// K-means on them; k given or the coarsest that the eigengaps show; then the same inside each
/// group with k from its eigengaps, kept only where its groups stand apart.
pub fn spectral(d: &Array2<f64>, p: &SpectralValidParams) -> Tree {
    hierarchy(d, (0..d.nrows()).collect(), p.k, p, &Splitter::Spectral)
}

/// K-means of the rows of `points` (one per item), k given or as [`spectral`] reads it from
/// the eigengaps of the affinity of the distances `d` between the items, then the same inside
/// each group. With `points` the distance matrix itself (`square`), each item is the vector of
/// its distances to the items of its group.
pub fn kmeans(
    d: &Array2<f64>,
    points: &Array2<f64>,
    square: bool,
    p: &SpectralValidParams,
) -> Tree {
    hierarchy(
        d,
        (0..d.nrows()).collect(),
        p.k,
        p,
        &Splitter::Rows { points, square },
    )
}

/// The Euclidean distances between the rows of `v`.
pub fn euclidean_distances(v: &Array2<f64>) -> Array2<f64> {
    let gram = v.dot(&v.t());
    let n = v.nrows();
    Array2::from_shape_fn((n, n), |(i, j)| {
        if i == j {
            0.0
        } else {
            (gram[[i, i]] + gram[[j, j]] - 2.0 * gram[[i, j]])
                .max(0.0)
                .sqrt()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_matrices::{blocks, flat};

    fn top_groups(t: &Tree) -> usize {
        match t {
            Tree::Leaf(_) => 1,
            Tree::Node { children, .. } => children.len(),
        }
    }

    #[test]
    fn parameters_are_checked() {
        assert_eq!(
            SpectralParams::new().k(Some(0)).check(),
            Err(SpectralError::NoGroups)
        );
        assert_eq!(
            SpectralParams::new().max_k(1).check(),
            Err(SpectralError::MaxKTooSmall(1))
        );
        for s in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                SpectralParams::new().scale(KernelScale::Fixed(s)).check(),
                Err(SpectralError::BadScale(_))
            ));
        }
        assert_eq!(
            SpectralParams::new()
                .scale(KernelScale::Neighbour(0))
                .check(),
            Err(SpectralError::NoNeighbour)
        );
        let p = SpectralParams::new().k(Some(9)).check().unwrap();
        assert_eq!(
            p.check_items(8),
            Err(SpectralError::MoreGroupsThanItems { k: 9, items: 8 })
        );
        assert!(p.check_items(9).is_ok());
    }

    #[test]
    fn the_eigengaps_give_the_coarsest_level_and_none_on_noise() {
        assert_eq!(
            k_from_eigengaps(&[1.0, 1.0, 1.0, 0.85, 0.85, 0.85, 0.01, 0.0]),
            Some(3)
        );
        assert_eq!(k_from_eigengaps(&[1.0, 0.05, 0.04, 0.03, 0.02, 0.01]), None);
        assert_eq!(k_from_eigengaps(&[1.0, 1.0]), None);
        // Nodes nearly apart under a clearer socket level: the nodes first.
        let mut nodes = vec![1.0; 4];
        nodes.extend([0.91; 4]);
        nodes.extend([-0.02; 9]);
        assert_eq!(k_from_eigengaps(&nodes), Some(4));
        // A small gap far from 1 is no level: [5, 7, 6, 4] blocks at the 7th neighbour's scale.
        let blocks = [1.0, 0.24, 0.195, 0.144, -0.081, -0.082, -0.083, -0.086];
        assert_eq!(k_from_eigengaps(&blocks), Some(4));
    }

    #[test]
    fn separated_blocks_are_found_with_and_without_k() {
        for sizes in [&[4, 4][..], &[8, 8, 8], &[5, 7, 6, 4], &[16; 8]] {
            let d = blocks(sizes, 1.0, 3.0);
            let found = spectral(&d, &SpectralParams::new().check().unwrap());
            assert_eq!(top_groups(&found), sizes.len(), "{sizes:?}");
            let given = spectral(
                &d,
                &SpectralParams::new().k(Some(sizes.len())).check().unwrap(),
            );
            assert_eq!(top_groups(&given), sizes.len(), "{sizes:?}");
            let km = kmeans(&d, &d, true, &SpectralParams::new().check().unwrap());
            assert_eq!(top_groups(&km), sizes.len(), "{sizes:?}");
        }
    }

    #[test]
    fn flat_matrices_are_one_group() {
        for n in [16, 32, 128] {
            for noise in [0.0, 0.01, 0.03, 0.05] {
                for seed in 0..3 {
                    let d = flat(n, noise, seed);
                    let p = SpectralParams::new().check().unwrap();
                    // The eigengaps alone show no level (not only the test of the groups).
                    let m = normalised_affinity(d.view(), p.scale());
                    let (k, values, _) = spectrum(&m, None, p.max_k());
                    assert_eq!(k, None, "{n} {noise} {seed}: {values:?}");
                    assert!(
                        matches!(spectral(&d, &p), Tree::Leaf(_)),
                        "{n} {noise} {seed}"
                    );
                    assert!(
                        matches!(kmeans(&d, &d, true, &p), Tree::Leaf(_)),
                        "{n} {noise} {seed}"
                    );
                }
            }
        }
    }

    #[test]
    fn nested_levels_become_a_hierarchy() {
        // 4 nodes x 2 sockets x 8 cores: 0.4 inside a socket, 0.8 across, 3 across nodes.
        let n = 64;
        let d = Array2::from_shape_fn((n, n), |(i, j)| {
            if i == j {
                0.0
            } else if i / 8 == j / 8 {
                0.4 * (1.0 + 0.01 * ((i + j) % 3) as f64)
            } else if i / 16 == j / 16 {
                0.8
            } else {
                3.0
            }
        });
        let t = spectral(&d, &SpectralParams::new().check().unwrap());
        let topo = crate::topology_of(&t, n, None).unwrap();
        let counts: Vec<usize> = topo.levels().iter().map(|l| l.groups.len()).collect();
        assert_eq!(counts, vec![4, 8]);
    }

    #[test]
    fn large_matrices_take_lobpcg_and_agree() {
        let sizes = vec![64; 8];
        let d = blocks(&sizes, 1.0, 2.5);
        assert!(d.nrows() > FULL_EIGEN_UP_TO);
        let t = spectral(&d, &SpectralParams::new().check().unwrap());
        assert_eq!(top_groups(&t), 8);
        let m = normalised_affinity(d.view(), KernelScale::Neighbour(7));
        let (lob, _) = lobpcg_leading(&m, 10).unwrap();
        let (full, _) = full_eigen(&m, 10);
        for (a, b) in lob.iter().zip(&full) {
            assert!((a - b).abs() < 1e-6, "{lob:?} {full:?}");
        }
    }

    #[test]
    fn large_flat_matrices_are_one_group_through_lobpcg() {
        // Above the full decomposition: LOBPCG on a spectrum of one eigenvalue 1 and n - 1
        // equal ones (no noise), or close to it.
        for noise in [0.0, 0.05] {
            let d = flat(FULL_EIGEN_UP_TO + 80, noise, 1);
            let p = SpectralParams::new().check().unwrap();
            assert!(matches!(spectral(&d, &p), Tree::Leaf(_)), "noise {noise}");
            assert!(
                matches!(kmeans(&d, &d, true, &p), Tree::Leaf(_)),
                "noise {noise}"
            );
        }
    }

    #[test]
    fn euclidean_distances_of_rows() {
        let v = Array2::from_shape_vec((3, 2), vec![0.0, 0.0, 3.0, 4.0, 0.0, 1.0]).unwrap();
        let e = euclidean_distances(&v);
        assert!((e[[0, 1]] - 5.0).abs() < 1e-12 && (e[[1, 2]] - 18f64.sqrt()).abs() < 1e-12);
    }
}
