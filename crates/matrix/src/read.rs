//! Reading distance matrices: CSV (square, with or without a header row and a label column, or
//! the lower triangle only) and NumPy `.npy`.

use std::path::{Path, PathBuf};

use ndarray::Array2;

use crate::{DistanceMatrix, MatrixError};

/// An error of reading a matrix file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// A cell that is not a number.
    #[error("{}:{line}, column {column}: `{text}` is not a number", path.display())]
    NotANumber {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The cell.
        text: String,
    },
    /// Rows of different lengths, or a layout that is neither square nor a lower triangle.
    #[error("{}:{line}: {message}", path.display())]
    Shape {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A value a distance cannot have, at its position in the file.
    #[error("{}:{line}, column {column}: {problem}", path.display())]
    Value {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        problem: String,
    },
    /// The matrix as a whole is unusable.
    #[error("{}: {error}", path.display())]
    Matrix {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        error: MatrixError,
    },
    /// A `.npy` file that is not a 2-D float array.
    #[error("{}: not a 2-D float64 or float32 .npy array: {message}", path.display())]
    Npy {
        /// The file.
        path: PathBuf,
        /// What the reader said.
        message: String,
    },
}

/// A matrix read from a file, with what was done to it on the way.
#[derive(Debug, Clone)]
pub struct ReadMatrix {
    /// The matrix.
    pub matrix: DistanceMatrix,
    /// Things the user should know (asymmetry averaged, diagonal zeroed, triangle mirrored).
    pub warnings: Vec<String>,
}

fn split_csv_line(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    out.push(field);
    out
}

/// Reads a matrix file: `.npy` by its magic bytes, CSV otherwise.
pub fn read_matrix(path: &Path) -> Result<ReadMatrix, ReadError> {
    let bytes = std::fs::read(path).map_err(|error| ReadError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    if bytes.starts_with(b"\x93NUMPY") {
        return read_npy(path, &bytes);
    }
    let text = String::from_utf8(bytes).map_err(|_| ReadError::Shape {
        path: path.to_path_buf(),
        line: 1,
        message: "the file is neither UTF-8 text (CSV) nor a .npy array".into(),
    })?;
    read_csv(path, &text)
}

fn read_npy(path: &Path, bytes: &[u8]) -> Result<ReadMatrix, ReadError> {
    use ndarray_npy::ReadNpyExt;
    let values = Array2::<f64>::read_npy(bytes)
        .or_else(|_| Array2::<f32>::read_npy(bytes).map(|a| a.mapv(f64::from)))
        .map_err(|e| ReadError::Npy {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    finish(
        path,
        values,
        None,
        |row, column| (row + 1, column + 1),
        Vec::new(),
    )
}

/// Reads CSV text (see [`read_matrix`]).
pub fn read_csv(path: &Path, text: &str) -> Result<ReadMatrix, ReadError> {
    // (line number, cells) of non-blank lines.
    let rows: Vec<(usize, Vec<String>)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(k, l)| (k + 1, split_csv_line(l.trim_end_matches('\r'))))
        .collect();
    let shape = |line: usize, message: String| ReadError::Shape {
        path: path.to_path_buf(),
        line,
        message,
    };
    if rows.is_empty() {
        return Err(shape(1, "the file has no rows".into()));
    }
    let is_number = |s: &str| s.trim().parse::<f64>().is_ok();
    let label_cell = |s: &str| !s.trim().is_empty() && !is_number(s);
    // A label column: the rows after the first all start with a cell that is not a number.
    let label_column = rows.len() > 1 && rows[1..].iter().all(|(_, r)| label_cell(&r[0]));
    // A header: a first row with text where numbers would be.
    let has_header = if label_column {
        rows[0].1[0].trim().is_empty() || rows[0].1[1..].iter().any(|c| label_cell(c))
    } else {
        rows[0].1.iter().any(|c| label_cell(c))
    };
    let data = if has_header { &rows[1..] } else { &rows[..] };
    if data.is_empty() {
        return Err(shape(rows[0].0, "a header but no rows of numbers".into()));
    }
    // Numeric labels (rank numbers) under a header: every row is one wider than the count of rows.
    let label_column =
        label_column || (has_header && data.iter().all(|(_, r)| r.len() == data.len() + 1));
    let skip = usize::from(label_column);
    let n = data.len();
    let mut values = Array2::<f64>::zeros((n, n));
    let mut present = Array2::<bool>::default((n, n));
    for (i, (line, cells)) in data.iter().enumerate() {
        let cells = &cells[skip.min(cells.len())..];
        if cells.len() > n && cells[n..].iter().any(|c| !c.trim().is_empty()) {
            return Err(shape(
                *line,
                format!(
                    "{} values in a row of a {n}x{n} matrix: it is not square",
                    cells.len()
                ),
            ));
        }
        for (j, cell) in cells.iter().take(n).enumerate() {
            let t = cell.trim();
            if t.is_empty() {
                continue;
            }
            let x: f64 = t.parse().map_err(|_| ReadError::NotANumber {
                path: path.to_path_buf(),
                line: *line,
                column: j + 1 + skip,
                text: t.to_string(),
            })?;
            values[[i, j]] = x;
            present[[i, j]] = true;
        }
    }
    let mut warnings = Vec::new();
    let widths: Vec<usize> = data
        .iter()
        .map(|(_, r)| r.len().saturating_sub(skip))
        .collect();
    if widths.iter().all(|&w| w == widths[0]) && widths[0] < n {
        return Err(shape(
            data[0].0,
            format!(
                "{n} rows of {} values: a distance matrix is square",
                widths[0]
            ),
        ));
    }
    let upper_empty = (0..n).all(|i| (i..n).all(|j| !present[[i, j]]));
    let lower_full = (0..n).all(|i| (0..i).all(|j| present[[i, j]]));
    if n > 1 && upper_empty && lower_full {
        for i in 0..n {
            for j in 0..i {
                values[[j, i]] = values[[i, j]];
            }
        }
        warnings.push(format!("{}: lower triangle only; mirrored", path.display()));
    } else if let Some((i, j)) = (0..n)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .find(|&(i, j)| i != j && !present[[i, j]])
    {
        return Err(ReadError::Value {
            path: path.to_path_buf(),
            line: data[i].0,
            column: j + 1 + skip,
            problem: "empty cell: give the full square matrix, or only its lower triangle".into(),
        });
    }
    let labels = if has_header && rows[0].1.len() >= n + skip {
        Some(
            rows[0].1[skip..skip + n]
                .iter()
                .map(|s| s.trim().to_string())
                .collect(),
        )
    } else if label_column {
        Some(data.iter().map(|(_, r)| r[0].trim().to_string()).collect())
    } else {
        None
    };
    let lines: Vec<usize> = data.iter().map(|(l, _)| *l).collect();
    finish(
        path,
        values,
        labels,
        move |row, column| (lines[row], column + 1 + skip),
        warnings,
    )
}

/// Checks values, zeroes the diagonal and symmetrises, with warnings for both.
fn finish(
    path: &Path,
    values: Array2<f64>,
    labels: Option<Vec<String>>,
    position: impl Fn(usize, usize) -> (usize, usize),
    mut warnings: Vec<String>,
) -> Result<ReadMatrix, ReadError> {
    let (rows, columns) = values.dim();
    if rows != columns {
        return Err(ReadError::Matrix {
            path: path.to_path_buf(),
            error: MatrixError::NotSquare { rows, columns },
        });
    }
    for ((i, j), &x) in values.indexed_iter() {
        let problem = if !x.is_finite() {
            format!("{x} is not a finite number")
        } else if x < 0.0 {
            format!("{x} is negative; distances are not")
        } else {
            continue;
        };
        let (line, column) = position(i, j);
        return Err(ReadError::Value {
            path: path.to_path_buf(),
            line,
            column,
            problem,
        });
    }
    if let Some(i) = (0..rows).find(|&i| values[[i, i]] != 0.0) {
        warnings.push(format!(
            "{}: the diagonal is not zero (rank {i}: {}); distances to oneself are taken as 0",
            path.display(),
            values[[i, i]]
        ));
    }
    let matrix = DistanceMatrix::new(values, labels).map_err(|error| ReadError::Matrix {
        path: path.to_path_buf(),
        error,
    })?;
    let (matrix, asymmetry) = matrix.symmetrized();
    if asymmetry > 1e-9 {
        warnings.push(format!(
            "{}: the matrix is not symmetric (largest relative difference {:.1} %); d(i,j) and \
             d(j,i) were averaged",
            path.display(),
            asymmetry * 100.0
        ));
    }
    Ok(ReadMatrix { matrix, warnings })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv(text: &str) -> Result<ReadMatrix, ReadError> {
        read_csv(Path::new("m.csv"), text)
    }

    #[test]
    fn square_with_and_without_labels() {
        let a = csv("0,1,2\n1,0,3\n2,3,0\n").unwrap();
        assert_eq!(a.matrix.get(1, 2), 3.0);
        assert_eq!(a.matrix.labels(), ["0", "1", "2"]);
        assert!(a.warnings.is_empty());
        let b = csv("rank,a,b\na,0,1\nb,1,0\n").unwrap();
        assert_eq!(b.matrix.labels(), ["a", "b"]);
        let c = csv("x,y\n0,5\n5,0\n").unwrap();
        assert_eq!(c.matrix.labels(), ["x", "y"]);
        let d = csv("n1,0,2\nn2,2,0\n").unwrap();
        assert_eq!(d.matrix.labels(), ["n1", "n2"]);
    }

    #[test]
    fn numeric_rank_labels_under_a_header() {
        let m = csv("rank,0,1\n0,0,2.5\n1,2.5,0\n").unwrap();
        assert_eq!(m.matrix.get(0, 1), 2.5);
        assert_eq!(m.matrix.labels(), ["0", "1"]);
    }

    #[test]
    fn lower_triangle_is_mirrored() {
        let m = csv(",,\n1.5,,\n2,3,\n").unwrap();
        assert_eq!(m.matrix.get(0, 2), 2.0);
        assert_eq!(m.matrix.get(2, 1), 3.0);
        assert!(m.warnings[0].contains("lower triangle"));
    }

    #[test]
    fn asymmetric_input_is_averaged_with_a_warning() {
        let m = csv("0,1\n3,0\n").unwrap();
        assert_eq!(m.matrix.get(0, 1), 2.0);
        assert!(m.warnings[0].contains("66.7 %"), "{:?}", m.warnings);
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = csv("0,1,2\n1,0,x\n2,3,0\n").unwrap_err();
        assert_eq!(e.to_string(), "m.csv:2, column 3: `x` is not a number");
        let e = csv("rank,a,b\na,0,-1\nb,1,0\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "m.csv:2, column 3: -1 is negative; distances are not"
        );
        let e = csv("0,1\n1,0,4\n").unwrap_err();
        assert!(e.to_string().contains("m.csv:2: 3 values"), "{e}");
        let e = csv("0,NaN\n1,0\n").unwrap_err();
        assert!(e.to_string().contains("NaN is not a finite number"), "{e}");
        let e = csv("0,1,2\n1,0,\n2,3,0\n").unwrap_err();
        assert!(
            e.to_string().contains("m.csv:2, column 3: empty cell"),
            "{e}"
        );
        assert!(csv("\n\n").is_err());
        let e = csv("0,1\n1,0\n2,2\n").unwrap_err();
        assert!(
            e.to_string()
                .contains("3 rows of 2 values: a distance matrix is square"),
            "{e}"
        );
    }

    #[test]
    fn one_by_one() {
        let m = csv("0\n").unwrap();
        assert_eq!(m.matrix.len(), 1);
    }

    #[test]
    fn npy_round_trip() {
        use ndarray_npy::WriteNpyExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.npy");
        let a = ndarray::array![[0.0f64, 2.0], [2.0, 0.0]];
        let mut buf = Vec::new();
        a.write_npy(&mut buf).unwrap();
        std::fs::write(&path, buf).unwrap();
        assert_eq!(read_matrix(&path).unwrap().matrix.get(0, 1), 2.0);
        std::fs::write(&path, b"\x93NUMPYgarbage").unwrap();
        assert!(read_matrix(&path)
            .unwrap_err()
            .to_string()
            .contains("not a 2-D"));
    }
}
