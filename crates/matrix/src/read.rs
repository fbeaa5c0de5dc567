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
    let io = |error| ReadError::Io {
        path: path.to_path_buf(),
        error,
    };
    let mut magic = [0u8; 6];
    {
        use std::io::Read;
        let mut f = std::fs::File::open(path).map_err(io)?;
        let got = f.read(&mut magic).map_err(io)?;
        if got == 6 && &magic == b"\x93NUMPY" {
            return read_npy(path);
        }
    }
    let bytes = std::fs::read(path).map_err(io)?;
    let text = String::from_utf8(bytes).map_err(|_| ReadError::Shape {
        path: path.to_path_buf(),
        line: 1,
        message: "the file is neither UTF-8 text (CSV) nor a .npy array".into(),
    })?;
    read_csv(path, &text)
}

fn read_npy(path: &Path) -> Result<ReadMatrix, ReadError> {
    use ndarray_npy::ReadNpyExt;
    let open = || {
        std::fs::File::open(path)
            .map(std::io::BufReader::new)
            .map_err(|error| ReadError::Io {
                path: path.to_path_buf(),
                error,
            })
    };
    let values = match Array2::<f64>::read_npy(open()?) {
        Ok(v) => v,
        Err(_) => Array2::<f32>::read_npy(open()?)
            .map(|a| a.mapv(f64::from))
            .map_err(|e| ReadError::Npy {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?,
    };
    finish(
        path,
        values,
        None,
        |row, column| (row + 1, column + 1),
        Vec::new(),
    )
}

/// One data row: its line, its first cell as text (a label or a number), and the rest parsed,
/// NaN standing for an empty cell (a NaN in the file is an error as soon as it is read).
struct Row {
    line: usize,
    first: String,
    rest: Vec<f64>,
}

/// Reads CSV text (see [`read_matrix`]), parsing each line into numbers as it goes.
pub fn read_csv(path: &Path, text: &str) -> Result<ReadMatrix, ReadError> {
    let shape = |line: usize, message: String| ReadError::Shape {
        path: path.to_path_buf(),
        line,
        message,
    };
    let is_number = |s: &str| s.trim().parse::<f64>().is_ok();
    let label_cell = |s: &str| !s.trim().is_empty() && !is_number(s);
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(k, l)| (k + 1, l.trim_end_matches('\r')));
    let Some((first_line, first_text)) = lines.next() else {
        return Err(shape(1, "the file has no rows".into()));
    };
    let first_cells = split_csv_line(first_text);
    let mut rows: Vec<Row>;
    let parse_row = |line: usize, text: &str| -> Result<Row, ReadError> {
        // A quoted label may hold commas; plain numbers never do.
        let (first, tail) = if text.starts_with('"') {
            let all = split_csv_line(text);
            let end = text.len() - all[1..].iter().map(|c| c.len() + 1).sum::<usize>();
            // Past the label and the comma after it.
            (all[0].clone(), text.get(end + 1..).unwrap_or(""))
        } else {
            match text.split_once(',') {
                Some((f, t)) => (f.trim().to_string(), t),
                None => (text.trim().to_string(), ""),
            }
        };
        // A row of one cell has no cells after it.
        let one_cell = tail.is_empty() && !text.trim_end().ends_with(',');
        let cells = tail.split(',').take(if one_cell { 0 } else { usize::MAX });
        // About as many values as a neighbouring row: a value takes 2 bytes at least.
        let mut rest = Vec::with_capacity(tail.len() / 8 + 1);
        for (c, cell) in cells.enumerate() {
            let t = cell.trim();
            if t.is_empty() {
                rest.push(f64::NAN);
                continue;
            }
            let x: f64 = fast_float2::parse(t).map_err(|_| ReadError::NotANumber {
                path: path.to_path_buf(),
                line,
                column: c + 2,
                text: t.to_string(),
            })?;
            if !x.is_finite() {
                return Err(ReadError::Value {
                    path: path.to_path_buf(),
                    line,
                    column: c + 2,
                    problem: format!("{x} is not a finite number"),
                });
            }
            rest.push(x);
        }
        Ok(Row { line, first, rest })
    };
    // Lines are parsed on every core; the first error in file order is reported.
    let rest: Vec<(usize, &str)> = lines.collect();
    {
        use rayon::prelude::*;
        let parsed: Vec<Result<Row, ReadError>> = rest
            .par_iter()
            .map(|&(line, text)| parse_row(line, text))
            .collect();
        rows = parsed
            .into_iter()
            .collect::<Result<Vec<Row>, ReadError>>()?;
    }
    // A label column: the rows after the first all start with a cell that is not a number.
    let label_column = !rows.is_empty() && rows.iter().all(|r| label_cell(&r.first));
    // A header: a first row with text where numbers would be.
    let has_header = if label_column {
        first_cells[0].trim().is_empty() || first_cells[1..].iter().any(|c| label_cell(c))
    } else {
        first_cells.iter().any(|c| label_cell(c))
    };
    if !has_header {
        rows.insert(0, parse_row(first_line, first_text)?);
    }
    if rows.is_empty() {
        return Err(shape(first_line, "a header but no rows of numbers".into()));
    }
    let n = rows.len();
    // Numeric labels (rank numbers) under a header: every row is one wider than the count of rows.
    let label_column = label_column || (has_header && rows.iter().all(|r| r.rest.len() == n));
    let skip = usize::from(label_column);
    let cell = |r: &Row, j: usize| -> Result<f64, ReadError> {
        // Column j of the matrix, from the row's cells after any label.
        if skip == 1 {
            return Ok(r.rest.get(j).copied().unwrap_or(f64::NAN));
        }
        if j == 0 {
            let t = r.first.trim();
            if t.is_empty() {
                return Ok(f64::NAN);
            }
            return t.parse::<f64>().map_err(|_| ReadError::NotANumber {
                path: path.to_path_buf(),
                line: r.line,
                column: 1,
                text: t.to_string(),
            });
        }
        Ok(r.rest.get(j - 1).copied().unwrap_or(f64::NAN))
    };
    let widths: Vec<usize> = rows.iter().map(|r| r.rest.len() + 1 - skip).collect();
    if widths.iter().all(|&w| w == widths[0]) && widths[0] < n {
        return Err(shape(
            rows[0].line,
            format!(
                "{n} rows of {} values: a distance matrix is square",
                widths[0]
            ),
        ));
    }
    if let Some((r, &w)) = rows.iter().zip(&widths).find(|(r, &w)| {
        w > n
            && r.rest[(n - 1 + skip).min(r.rest.len())..]
                .iter()
                .any(|x| !x.is_nan())
    }) {
        return Err(shape(
            r.line,
            format!("{w} values in a row of a {n}x{n} matrix: it is not square"),
        ));
    }
    let mut values = Array2::<f64>::from_elem((n, n), f64::NAN);
    for (i, r) in rows.iter().enumerate() {
        let mut row = values.row_mut(i);
        let row = row.as_slice_mut().expect("a standard-layout row");
        if skip == 1 {
            // The usual case: a label, then the numbers, copied as they are.
            let k = r.rest.len().min(n);
            row[..k].copy_from_slice(&r.rest[..k]);
        } else {
            for (j, x) in row.iter_mut().enumerate() {
                *x = cell(r, j)?;
            }
        }
    }
    let mut warnings = Vec::new();
    let row_of = |i: usize| values.row(i).to_slice().expect("a standard-layout row");
    let upper_empty = (0..n).all(|i| row_of(i)[i..].iter().all(|x| x.is_nan()));
    // Only asked when the upper triangle is empty: a full matrix stops at its first row.
    let lower_full = || (0..n).all(|i| row_of(i)[..i].iter().all(|x| !x.is_nan()));
    if n > 1 && upper_empty && lower_full() {
        for i in 0..n {
            values[[i, i]] = 0.0;
            for j in 0..i {
                values[[j, i]] = values[[i, j]];
            }
        }
        warnings.push(format!("{}: lower triangle only; mirrored", path.display()));
    } else if let Some((i, j)) = (0..n).find_map(|i| {
        row_of(i)
            .iter()
            .enumerate()
            .position(|(j, x)| j != i && x.is_nan())
            .map(|j| (i, j))
    }) {
        return Err(ReadError::Value {
            path: path.to_path_buf(),
            line: rows[i].line,
            column: j + 1 + skip,
            problem: "empty cell: give the full square matrix, or only its lower triangle".into(),
        });
    } else {
        for i in 0..n {
            if values[[i, i]].is_nan() {
                values[[i, i]] = 0.0;
            }
        }
    }
    let labels = if has_header && first_cells.len() >= n + skip {
        Some(
            first_cells[skip..skip + n]
                .iter()
                .map(|s| s.trim().to_string())
                .collect(),
        )
    } else if label_column {
        Some(rows.iter().map(|r| r.first.clone()).collect())
    } else {
        None
    };
    let lines: Vec<usize> = rows.iter().map(|r| r.line).collect();
    drop(rows);
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
    if let Some(((i, j), x)) = crate::first_invalid(&values) {
        let problem = if !x.is_finite() {
            format!("{x} is not a finite number")
        } else {
            format!("{x} is negative; distances are not")
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
    let matrix = DistanceMatrix::checked(values, labels).map_err(|error| ReadError::Matrix {
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
    fn quoted_labels_may_hold_commas() {
        let m = csv("rank,\"a,1\",b\n\"a,1\",0,4\nb,4,0\n").unwrap();
        assert_eq!(m.matrix.labels(), ["a,1", "b"]);
        assert_eq!(m.matrix.get(0, 1), 4.0);
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
