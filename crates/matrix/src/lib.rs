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

mod read;

use std::fmt::Write as _;

use ndarray::Array2;

pub use read::{read_csv, read_matrix, ReadError, ReadMatrix};

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
    pub fn new(mut values: Array2<f64>, labels: Option<Vec<String>>) -> Result<Self, MatrixError> {
        let (rows, columns) = values.dim();
        if rows != columns {
            return Err(MatrixError::NotSquare { rows, columns });
        }
        if rows == 0 {
            return Err(MatrixError::Empty);
        }
        for ((row, column), &value) in values.indexed_iter() {
            if !value.is_finite() {
                return Err(MatrixError::NotFinite { row, column, value });
            }
            if value < 0.0 {
                return Err(MatrixError::Negative { row, column, value });
            }
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

    fn csv(&self, decimals: Option<usize>) -> String {
        let n = self.len();
        let mut out = String::with_capacity(n * n * 10);
        out.push_str("rank");
        for label in &self.labels {
            out.push(',');
            out.push_str(&csv_field(label));
        }
        out.push('\n');
        for i in 0..n {
            out.push_str(&csv_field(&self.labels[i]));
            for j in 0..n {
                let x = self.values[[i, j]];
                match decimals {
                    None => {
                        let _ = write!(out, ",{x}");
                    }
                    Some(d) => {
                        let text = format!("{x:.d$}");
                        let text = if text.contains('.') {
                            text.trim_end_matches('0').trim_end_matches('.')
                        } else {
                            &text
                        };
                        out.push(',');
                        out.push_str(text);
                    }
                }
            }
            out.push('\n');
        }
        out
    }
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

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
