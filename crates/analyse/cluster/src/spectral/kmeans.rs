//! K-means on linfa: the best of several runs from spread-out starting centres, with a squared
//! Euclidean distance the compiler vectorises.

use super::*;

/// Up to this much work (items x groups x dimensions) K-means takes the best of ten runs, above
/// it of three: many small groups (SMT pairs) need the ten, large inputs cannot pay for them.
const TEN_RUNS_UP_TO: usize = 50_000_000;

/// The squared Euclidean distance K-means assigns by, summed in eight independent lanes so that
/// the compiler vectorises it: linfa's own `L2Dist` sums one element after another, which made
/// K-means of 4096 rows of 4096 distances into 64 groups take 30 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LanedL2;

impl LanedL2 {
    /// Compiled for AVX-512, AVX2 with FMA and the baseline, chosen at run time.
    #[multiversion::multiversion(targets(
        "x86_64+avx512f+avx2+fma",
        "x86_64+avx2+fma",
        "aarch64+neon"
    ))]
    fn squared(a: &[f64], b: &[f64]) -> f64 {
        let mut lanes = [0.0f64; 8];
        let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
        let tail: f64 = ca
            .remainder()
            .iter()
            .zip(cb.remainder())
            .map(|(x, y)| (x - y) * (x - y))
            .sum();
        for (x, y) in ca.zip(cb) {
            for l in 0..8 {
                let t = x[l] - y[l];
                lanes[l] += t * t;
            }
        }
        lanes.iter().sum::<f64>() + tail
    }
}

impl linfa_nn::distance::Distance<f64> for LanedL2 {
    fn distance<D: nd::Dimension>(
        &self,
        a: nd::ArrayView<f64, D>,
        b: nd::ArrayView<f64, D>,
    ) -> f64 {
        self.rdistance(a, b).sqrt()
    }
    fn rdistance<D: nd::Dimension>(
        &self,
        a: nd::ArrayView<f64, D>,
        b: nd::ArrayView<f64, D>,
    ) -> f64 {
        match (a.as_slice(), b.as_slice()) {
            (Some(a), Some(b)) => Self::squared(a, b),
            _ => nd::Zip::from(&a)
                .and(&b)
                .fold(0.0, |s, x, y| s + (x - y) * (x - y)),
        }
    }
    fn rdist_to_dist(&self, rdist: f64) -> f64 {
        rdist.sqrt()
    }
    fn dist_to_rdist(&self, dist: f64) -> f64 {
        dist * dist
    }
}

/// k starting centres, each next one the point farthest from its nearest centre so far
/// (`farthest`: Gonzalez's traversal, one centre per group whenever the groups are farther apart
/// than they are wide, as the rows of a spectral embedding are) or drawn with probability
/// proportional to that squared distance (k-means++, Arthur and Vassilvitskii). The distance
/// to the nearest centre is kept up to date against the newest centre only (linfa's own
/// k-means++ measures every point against every centre again for each new one: 32 passes over
/// 4096 x 4096 values for k = 64).
fn starting_centres(
    points: nd::ArrayView2<f64>,
    k: usize,
    farthest: bool,
    rng: &mut impl rand::Rng,
) -> nd::Array2<f64> {
    let n = points.nrows();
    let mut centres = nd::Array2::zeros((k, points.ncols()));
    let mut nearest = vec![f64::INFINITY; n];
    let mut next = if farthest { 0 } else { rng.random_range(0..n) };
    for c in 0..k {
        centres.row_mut(c).assign(&points.row(next));
        let centre = points.row(next);
        let centre = centre.as_slice().expect("standard layout");
        nearest.par_iter_mut().enumerate().for_each(|(i, m)| {
            let row = points.row(i);
            *m = m.min(LanedL2::squared(
                row.as_slice().expect("standard layout"),
                centre,
            ));
        });
        let total: f64 = nearest.iter().sum();
        next = if total <= 0.0 {
            // Every point sits on a centre: the rest may be any points.
            (next + 1) % n
        } else if farthest {
            (0..n)
                .max_by(|&a, &b| nearest[a].total_cmp(&nearest[b]))
                .unwrap_or(0)
        } else {
            let mut target = rng.random::<f64>() * total;
            nearest
                .iter()
                .position(|&m| {
                    target -= m;
                    target <= 0.0
                })
                .unwrap_or(n - 1)
        };
    }
    centres
}

/// K-means of the rows of `points` (standard layout): Lloyd's iterations by linfa-clustering
/// from the farthest-first start and seeded k-means++ starts, the run with the least inertia
/// kept; ten runs for small inputs (many small groups need them), two above [`TEN_RUNS_UP_TO`].
pub(super) fn kmeans_labels(points: nd::ArrayView2<f64>, k: usize) -> Vec<usize> {
    use linfa_clustering::KMeansInit;
    use rand::SeedableRng;
    let n = points.nrows();
    if k <= 1 || n == 0 {
        return vec![0; n];
    }
    if k >= n {
        return (0..n).collect();
    }
    let runs = if n * k * points.ncols() <= TEN_RUNS_UP_TO {
        10
    } else {
        2
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x4b4d_4541_4e53);
    let dataset = DatasetBase::from(points);
    let mut best: Option<(f64, KMeans<f64, LanedL2>)> = None;
    for run in 0..runs {
        let start = starting_centres(points, k, run == 0, &mut rng);
        // Unused with a precomputed start, but the parameters hold a generator.
        let seed =
            <rand_xoshiro::Xoshiro256Plus as rand_xoshiro::rand_core::SeedableRng>::seed_from_u64(
                42,
            );
        let fitted = KMeans::params_with(k, seed, LanedL2)
            .n_runs(1)
            .init_method(KMeansInit::Precomputed(start))
            .max_n_iterations(300)
            .fit(&dataset);
        // K-means fails only on empty or non-finite input, which the callers never pass.
        if let Ok(model) = fitted {
            if best.as_ref().is_none_or(|(i, _)| model.inertia() < *i) {
                best = Some((model.inertia(), model));
            }
        }
    }
    match best {
        Some((_, model)) => {
            let labels: nd::Array1<usize> = model.predict(&points);
            labels.to_vec()
        }
        None => vec![0; n],
    }
}
