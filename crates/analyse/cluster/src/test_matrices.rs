//! Small matrices with known groups, for the unit tests.

use ndarray::Array2;

/// Groups of the given sizes, about `inside` apart within a group and `across` between groups,
/// with a little deterministic unevenness so that no two distances tie.
pub(crate) fn blocks(sizes: &[usize], inside: f64, across: f64) -> Array2<f64> {
    let group: Vec<usize> = sizes
        .iter()
        .enumerate()
        .flat_map(|(g, &s)| std::iter::repeat_n(g, s))
        .collect();
    let n = group.len();
    Array2::from_shape_fn((n, n), |(i, j)| {
        if i == j {
            0.0
        } else if group[i] == group[j] {
            inside + 0.01 * ((i * 7 + j * 7) % 5) as f64
        } else {
            across + 0.01 * ((i + j) % 3) as f64
        }
    })
}

/// `n` items all about 1 apart, each distance off by up to `noise` (a share), symmetric.
pub(crate) fn flat(n: usize, noise: f64, seed: u64) -> Array2<f64> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut d = Array2::zeros((n, n));
    for i in 0..n {
        for j in 0..i {
            let x = 1.0 + noise * rng.random_range(-1.0..=1.0);
            d[[i, j]] = x;
            d[[j, i]] = x;
        }
    }
    d
}
