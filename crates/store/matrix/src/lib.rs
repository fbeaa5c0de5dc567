//! Distance matrices between ranks: a square, symmetric matrix of finite, non-negative values
//! with a zero diagonal, and a label per rank.
//!
//! ```
//! use lgate_matrix::DistanceMatrix;
//! use ndarray::array;
//!
//! let m = DistanceMatrix::new(array![[0.0, 1.5], [1.5, 0.0]], None)?;
//! assert_eq!(m.len(), 2);
//! assert_eq!(m.to_csv(), "rank,0,1\n0,0,1.5\n1,1.5,0\n");
//! # Ok::<(), lgate_matrix::MatrixError>(())
//! ```
#![deny(missing_docs)]

pub mod hwloc;
pub mod mpigraph;
mod pairs;
mod read;

use std::fmt::Write as _;

use ndarray::Array2;

pub use pairs::{read_pairs, read_pairs_bytes, read_pairs_file, PairMatrix, PairTable};
pub use read::{read_csv, read_matrix, read_matrix_bytes, ReadError, ReadMatrix};

/// The first value (row-major) that is NaN, infinite or negative, with its position: a fast
/// pass over memory first, positions only when something is wrong.
pub(crate) fn first_invalid(values: &Array2<f64>) -> Option<((usize, usize), f64)> {
    let ok = |x: &f64| x.is_finite() && *x >= 0.0;
    // Without a branch a value (`&`, not `&&`), so that the compiler checks several at once.
    let all_ok = |c: &[f64]| {
        c.iter()
            .fold(true, |acc, x| acc & (0.0..f64::INFINITY).contains(x))
    };
    use rayon::prelude::*;
    if values
        .as_slice()
        .is_some_and(|v| v.par_chunks(1 << 16).all(all_ok))
    {
        return None;
    }
    values
        .indexed_iter()
        .find(|(_, x)| !ok(x))
        .map(|(ij, &x)| (ij, x))
}

/// A vector of `len` zeros whose pages are first touched by whichever core writes them.
///
/// Not backed by huge pages on purpose: on a KVM guest the first write of a 2 MiB huge page
/// often waited for the host to back it, right after another process had freed its memory; a
/// 4096-rank matrix then took 0.1-0.3 s longer to fill than in 4 KiB pages.
pub fn zeroed(len: usize) -> Vec<f64> {
    vec![0.0; len]
}

/// What is wrong with a matrix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MatrixError {
    /// Rows and columns differ in number.
    #[error("the matrix is {rows}x{columns}: a distance matrix is square")]
    NotSquare {
        /// Rows.
        rows: usize,
        /// Columns.
        columns: usize,
    },
    /// An entry that is NaN or infinite.
    #[error("row {row}, column {column}: {value} is not a finite number")]
    NotFinite {
        /// 0-based row.
        row: usize,
        /// 0-based column.
        column: usize,
        /// The value.
        value: f64,
    },
    /// A negative entry.
    #[error("row {row}, column {column}: {value} is negative; distances are not")]
    Negative {
        /// 0-based row.
        row: usize,
        /// 0-based column.
        column: usize,
        /// The value.
        value: f64,
    },
    /// Labels whose number is not the matrix's size.
    #[error("{labels} labels for a {size}x{size} matrix")]
    LabelCount {
        /// Labels given.
        labels: usize,
        /// The matrix's size.
        size: usize,
    },
    /// A matrix without rows.
    #[error("the matrix is empty")]
    Empty,
}

/// A validated distance matrix with one label per rank.
#[derive(Debug, Clone, PartialEq)]
pub struct DistanceMatrix {
    values: Array2<f64>,
    labels: Vec<String>,
}

impl DistanceMatrix {
    /// Checks a square matrix of finite, non-negative values and sets its diagonal to zero;
    /// labels default to the rank numbers.
    ///
    /// The matrix is taken as given: see [`DistanceMatrix::symmetrized`] for asymmetric input.
    pub fn new(values: Array2<f64>, labels: Option<Vec<String>>) -> Result<Self, MatrixError> {
        let (rows, columns) = values.dim();
        if rows != columns {
            return Err(MatrixError::NotSquare { rows, columns });
        }
        if rows == 0 {
            return Err(MatrixError::Empty);
        }
        if let Some(((row, column), value)) = first_invalid(&values) {
            return Err(if value.is_finite() {
                MatrixError::Negative { row, column, value }
            } else {
                MatrixError::NotFinite { row, column, value }
            });
        }
        Self::checked(values, labels)
    }

    /// A matrix whose values are known to be finite and non-negative (square and labels are
    /// still checked).
    pub(crate) fn checked(
        mut values: Array2<f64>,
        labels: Option<Vec<String>>,
    ) -> Result<Self, MatrixError> {
        let (rows, columns) = values.dim();
        if rows != columns {
            return Err(MatrixError::NotSquare { rows, columns });
        }
        if rows == 0 {
            return Err(MatrixError::Empty);
        }
        values.diag_mut().fill(0.0);
        let labels = labels.unwrap_or_else(|| (0..rows).map(|r| r.to_string()).collect());
        if labels.len() != rows {
            return Err(MatrixError::LabelCount {
                labels: labels.len(),
                size: rows,
            });
        }
        Ok(DistanceMatrix { values, labels })
    }

    /// The same matrix made symmetric by averaging `d(i,j)` and `d(j,i)`, with the largest
    /// relative asymmetry `|d(i,j) - d(j,i)| / max(d(i,j), d(j,i))` that was averaged away.
    pub fn symmetrized(mut self) -> (Self, f64) {
        let n = self.len();
        let mut worst: f64 = 0.0;
        // In tiles, so that the column-wise half stays in cache on large matrices.
        const TILE: usize = 64;
        if self.is_symmetric(TILE) {
            return (self, 0.0);
        }
        for bi in (0..n).step_by(TILE) {
            for bj in (bi..n).step_by(TILE) {
                for i in bi..(bi + TILE).min(n) {
                    for j in bj.max(i + 1)..(bj + TILE).min(n) {
                        let (a, b) = (self.values[[i, j]], self.values[[j, i]]);
                        let top = a.max(b);
                        if top > 0.0 {
                            worst = worst.max((a - b).abs() / top);
                        }
                        let mean = (a + b) / 2.0;
                        self.values[[i, j]] = mean;
                        self.values[[j, i]] = mean;
                    }
                }
            }
        }
        (self, worst)
    }

    /// Whether `d(i,j) == d(j,i)` everywhere, checked in tiles of `tile` rows on every core.
    fn is_symmetric(&self, tile: usize) -> bool {
        use rayon::prelude::*;
        let n = self.len();
        let Some(v) = self.values.as_slice() else {
            let v = &self.values;
            return (0..n).all(|i| (i + 1..n).all(|j| v[[i, j]] == v[[j, i]]));
        };
        (0..n.div_ceil(tile)).into_par_iter().all(|b| {
            let rows = b * tile..((b + 1) * tile).min(n);
            (rows.start..n).step_by(tile).all(|bj| {
                let columns = bj..(bj + tile).min(n);
                // Every cell of the tile compared, without stopping early: the compiler can
                // then compare several at once.
                rows.clone().fold(true, |same, i| {
                    let row = &v[i * n..(i + 1) * n];
                    let from = columns.start.max(i + 1);
                    if from >= columns.end {
                        return same;
                    }
                    row[from..columns.end]
                        .iter()
                        .zip(v[from * n + i..].iter().step_by(n))
                        .fold(same, |same, (a, b)| same & (a == b))
                })
            })
        })
    }

    /// The number of ranks.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether the matrix has no ranks (never true for a validated matrix).
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The distance between ranks `i` and `j`.
    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.values[[i, j]]
    }

    /// All distances.
    pub fn values(&self) -> &Array2<f64> {
        &self.values
    }

    /// One label per rank.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// CSV: a header `rank,<label>...`, then one row per rank starting with its label; values
    /// as they are (the shortest text that reads back exactly).
    pub fn to_csv(&self) -> String {
        self.csv(None)
    }

    /// CSV as [`DistanceMatrix::to_csv`], values rounded to `decimals` places (trailing zeros
    /// dropped).
    pub fn to_csv_rounded(&self, decimals: usize) -> String {
        self.csv(Some(decimals))
    }

    /// Writes the CSV of [`DistanceMatrix::to_csv_rounded`] to `out`, formatting blocks of rows
    /// in parallel.
    pub fn write_csv_rounded(
        &self,
        out: &mut impl std::io::Write,
        decimals: usize,
    ) -> std::io::Result<()> {
        out.write_all(self.csv_header().as_bytes())?;
        let n = self.len();
        let block = 64;
        let starts: Vec<usize> = (0..n).step_by(block).collect();
        // Format a window of blocks at a time: bounded memory, all cores busy.
        for window in starts.chunks(rayon::current_num_threads().max(1) * 4) {
            use rayon::prelude::*;
            let texts: Vec<String> = window
                .par_iter()
                .map(|&start| {
                    let mut text = String::new();
                    for i in start..(start + block).min(n) {
                        self.csv_row(i, Some(decimals), &mut text);
                    }
                    text
                })
                .collect();
            for t in texts {
                out.write_all(t.as_bytes())?;
            }
        }
        Ok(())
    }

    fn csv_header(&self) -> String {
        let mut out = String::from("rank");
        for label in &self.labels {
            out.push(',');
            out.push_str(&csv_field(label));
        }
        out.push('\n');
        out
    }

    fn csv_row(&self, i: usize, decimals: Option<usize>, out: &mut String) {
        out.push_str(&csv_field(&self.labels[i]));
        for &x in self.values.row(i) {
            out.push(',');
            match decimals {
                None => {
                    let _ = write!(out, "{x}");
                }
                Some(d) => push_rounded(out, x, d),
            }
        }
        out.push('\n');
    }

    fn csv(&self, decimals: Option<usize>) -> String {
        let n = self.len();
        let mut out = String::with_capacity(n * n * 10);
        out.push_str(&self.csv_header());
        for i in 0..n {
            self.csv_row(i, decimals, &mut out);
        }
        out
    }
}

/// The powers of ten 10^0 to 10^9 as integers, for the CSV reader and writer.
pub(crate) const POW10_U64: [u64; 10] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// Appends `x` rounded to `decimals` places, trailing zeros (and a bare point) dropped.
fn push_rounded(out: &mut String, x: f64, decimals: usize) {
    const POW10: [u64; 10] = POW10_U64;
    let scaled = x.abs() * POW10.get(decimals).copied().unwrap_or(0) as f64;
    if decimals >= POW10.len() || scaled.is_nan() || scaled >= 1e15 {
        // Rare: more places than integers hold, or huge values.
        let text = format!("{x:.decimals$}");
        let text = if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.')
        } else {
            &text
        };
        out.push_str(text);
        return;
    }
    let r = scaled.round() as u64;
    if x < 0.0 && r != 0 {
        out.push('-');
    }
    let scale = POW10[decimals];
    let (whole, mut frac) = (r / scale, r % scale);
    push_digits(out, whole, 1);
    if frac != 0 {
        let mut places = decimals;
        while frac % 10 == 0 {
            frac /= 10;
            places -= 1;
        }
        out.push('.');
        push_digits(out, frac, places);
    }
}

/// Appends `x` in decimal, padded with leading zeros to `width` digits.
fn push_digits(out: &mut String, mut x: u64, width: usize) {
    let mut buf = [b'0'; 20];
    let mut k = buf.len();
    while x > 0 || buf.len() - k < width {
        k -= 1;
        buf[k] = b'0' + (x % 10) as u8;
        x /= 10;
    }
    out.push_str(std::str::from_utf8(&buf[k..]).expect("ASCII digits"));
}

pub use lgate_output::csv_field;

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn validation_names_the_entry() {
        let e = DistanceMatrix::new(array![[0.0, f64::NAN], [1.0, 0.0]], None).unwrap_err();
        assert_eq!(e.to_string(), "row 0, column 1: NaN is not a finite number");
        let e = DistanceMatrix::new(array![[0.0, -1.0], [1.0, 0.0]], None).unwrap_err();
        assert!(matches!(
            e,
            MatrixError::Negative {
                row: 0,
                column: 1,
                ..
            }
        ));
        let e = DistanceMatrix::new(Array2::zeros((2, 3)), None).unwrap_err();
        assert_eq!(
            e,
            MatrixError::NotSquare {
                rows: 2,
                columns: 3
            }
        );
        let e = DistanceMatrix::new(Array2::zeros((2, 2)), Some(vec!["a".into()])).unwrap_err();
        assert_eq!(e, MatrixError::LabelCount { labels: 1, size: 2 });
        assert_eq!(
            DistanceMatrix::new(Array2::zeros((0, 0)), None),
            Err(MatrixError::Empty)
        );
    }

    #[test]
    fn one_asymmetric_cell_is_seen_wherever_it_is() {
        // Sizes around the tiles' edges, each cell above and below the diagonal in turn.
        for n in [1, 2, 3, 7, 8, 9, 15, 16, 17] {
            let sym = Array2::from_shape_fn((n, n), |(i, j)| (i + j) as f64);
            let m = DistanceMatrix::new(sym.clone(), None).unwrap();
            assert!(m.is_symmetric(4), "n = {n}");
            for i in 0..n {
                for j in (0..n).filter(|&j| j != i) {
                    let mut a = sym.clone();
                    a[[i, j]] += 0.5;
                    let m = DistanceMatrix::new(a, None).unwrap();
                    assert!(!m.is_symmetric(4), "n = {n}, cell ({i}, {j})");
                }
            }
        }
    }

    #[test]
    fn symmetrize_reports_the_largest_asymmetry() {
        let m = DistanceMatrix::new(
            array![[0.0, 1.0, 2.0], [3.0, 0.0, 2.0], [2.0, 2.0, 0.0]],
            None,
        )
        .unwrap();
        let (s, worst) = m.symmetrized();
        assert_eq!(s.get(0, 1), 2.0);
        assert_eq!(s.get(1, 0), 2.0);
        assert!((worst - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn rounded_csv_drops_trailing_zeros() {
        let m = DistanceMatrix::new(array![[0.0, 1.66766849], [1.66766849, 0.0]], None).unwrap();
        assert_eq!(m.to_csv_rounded(4), "rank,0,1\n0,0,1.6677\n1,1.6677,0\n");
        let mut text = String::new();
        for (x, want) in [
            (2.0, "2"),
            (1.5, "1.5"),
            (0.00001, "0"),
            (0.00006, "0.0001"),
            (123456.78901, "123456.789"),
            (10.0501, "10.0501"),
            (3e300, &format!("{:.4}", 3e300)),
        ] {
            text.clear();
            push_rounded(&mut text, x, 4);
            assert_eq!(text, want.trim_end_matches(".0000"), "{x}");
        }
        let n = 200;
        let big = DistanceMatrix::new(
            Array2::from_shape_fn((n, n), |(i, j)| (i as f64 - j as f64).abs() / 7.0),
            None,
        )
        .unwrap();
        let mut streamed = Vec::new();
        big.write_csv_rounded(&mut streamed, 4).unwrap();
        assert_eq!(String::from_utf8(streamed).unwrap(), big.to_csv_rounded(4));
    }

    #[test]
    fn symmetrize_large_matrices_in_tiles() {
        let n = 150;
        let m = Array2::from_shape_fn(
            (n, n),
            |(i, j)| if i == j { 0.0 } else { (i * 3 + j) as f64 },
        );
        let (s, _) = DistanceMatrix::new(m.clone(), None).unwrap().symmetrized();
        for i in 0..n {
            for j in 0..n {
                assert_eq!(s.get(i, j), (m[[i, j]] + m[[j, i]]) / 2.0);
            }
        }
    }

    #[test]
    fn csv_quotes_labels_that_need_it() {
        let m = DistanceMatrix::new(
            array![[0.0, 1.0], [1.0, 0.0]],
            Some(vec!["a,b".into(), "c".into()]),
        )
        .unwrap();
        assert_eq!(m.to_csv(), "rank,\"a,b\",c\n\"a,b\",0,1\nc,1,0\n");
    }
}
