//! A CSV matrix built from its parsed rows, in the memory they were parsed into: the layout
//! decided (header, label column, lower triangle), the shape checked, the matrix completed.

use super::csv::{CsvRows, RowInfo};
use super::*;

/// Decides the layout (header, label column, lower triangle) and builds the matrix in place.
pub(super) fn build_from_rows(table: CsvRows<'_>) -> Result<ReadMatrix, ReadError> {
    let CsvRows {
        path,
        width,
        mut cells,
        used,
        input_bytes: _,
        rows,
        first_text,
        first_error,
        separator: _,
    } = table;
    cells.truncate(used);
    let layout = Layout::of(path, &rows, first_text, first_error)?;
    let Layout { s0, skip, n, .. } = layout;
    let data = &rows[s0..];
    if skip == 0 {
        check_first_cells(path, data)?;
    }
    let slot = |i: usize| &cells[(s0 + i) * width..(s0 + i + 1) * width];
    check_square(path, data, n, skip, slot)?;
    // Whether every data row's empty cells are those past its n values, its label and its
    // diagonal only, as counted while parsing: then no cell of the matrix is empty off the
    // diagonal, and no second pass over it need say so.
    let known_full = width >= n + skip
        && data.iter().enumerate().all(|(i, r)| {
            let s = slot(i);
            let label = skip == 1 && s[0].is_nan();
            r.nans == width - n - skip + usize::from(label) + usize::from(s[skip + i].is_nan())
        });
    // Every value finite (parsing refuses any other) and none negative.
    let known_valid = !data.iter().any(|r| r.negative);
    let mut values = into_matrix(cells, width, s0, skip, n);
    let lines: Vec<usize> = data.iter().map(|r| r.line).collect();
    let warnings = complete(path, &mut values, &lines, skip, known_full)?;
    let labels = if layout.has_header && layout.first_cells.len() >= n + skip {
        Some(
            layout.first_cells[skip..skip + n]
                .iter()
                .map(|s| s.trim().to_string())
                .collect(),
        )
    } else if skip == 1 {
        Some(data.iter().map(|r| r.first.clone()).collect())
    } else {
        None
    };
    drop(rows);
    finish(
        path,
        values,
        labels,
        move |row, column| (lines[row], column + 1 + skip),
        warnings,
        known_valid,
    )
}

/// Where the numbers of a CSV matrix are: after a header row or not, after a label column or
/// not, and how many rows of them.
struct Layout {
    /// The first line's cells as text.
    first_cells: Vec<String>,
    /// Whether the first line is a header.
    has_header: bool,
    /// The rows before the matrix's first (1 with a header).
    s0: usize,
    /// The cells before a row's first value (1 with a label column).
    skip: usize,
    /// The matrix's rows.
    n: usize,
}

impl Layout {
    /// The layout of `rows`, whose first line reads `first_text` (`first_error` when it is no
    /// row of numbers).
    fn of(
        path: &Path,
        rows: &[RowInfo],
        first_text: Option<String>,
        first_error: Option<ReadError>,
    ) -> Result<Layout, ReadError> {
        let shape = |line: usize, message: String| ReadError::Shape {
            path: path.to_path_buf(),
            line,
            message,
        };
        let is_number = |s: &str| s.trim().parse::<f64>().is_ok();
        let label_cell = |s: &str| !s.trim().is_empty() && !is_number(s);
        let Some(first_text) = first_text else {
            return Err(shape(
                1,
                "no rows of numbers: the file is empty, or holds only comments and blank lines"
                    .into(),
            ));
        };
        let first_cells = split_csv_line(&first_text);
        if let Some(sep) = other_separator(&first_text, first_cells.len()) {
            return Err(shape(
                rows.first().map_or(1, |r| r.line),
                format!(
                    "cells separated by `{sep}`: a matrix's cells are separated by commas, tabs \
                     or blanks (save it as comma-separated)"
                ),
            ));
        }
        // A label column: the rows after the first all start with a cell that is not a number.
        let label_column = rows.len() > 1 && rows[1..].iter().all(|r| label_cell(&r.first));
        // A header: a first row with text where numbers would be.
        let has_header = if label_column {
            first_cells[0].trim().is_empty() || first_cells[1..].iter().any(|c| label_cell(c))
        } else {
            first_cells.iter().any(|c| label_cell(c))
        };
        if !has_header {
            if let Some(e) = first_error {
                return Err(e);
            }
        }
        let s0 = usize::from(has_header);
        let data = &rows[s0..];
        if data.is_empty() {
            return Err(shape(
                rows[0].line,
                "a header but no rows of numbers".into(),
            ));
        }
        let n = data.len();
        // Numeric labels (rank numbers) under a header: every row is one wider than the count
        // of rows.
        let label_column = label_column || (has_header && data.iter().all(|r| r.count == n + 1));
        Ok(Layout {
            first_cells,
            has_header,
            s0,
            skip: usize::from(label_column),
            n,
        })
    }
}

/// Without a label column, every row's first cell is a value (or empty): an error naming the
/// first that is not a finite number.
fn check_first_cells(path: &Path, data: &[RowInfo]) -> Result<(), ReadError> {
    for r in data {
        let t = r.first.trim();
        if t.is_empty() {
            continue;
        }
        let x: f64 = t.parse().map_err(|_| ReadError::NotANumber {
            path: path.to_path_buf(),
            line: r.line,
            column: 1,
            text: t.to_string(),
        })?;
        if !x.is_finite() {
            return Err(ReadError::Value {
                path: path.to_path_buf(),
                line: r.line,
                column: 1,
                problem: not_finite(t),
            });
        }
    }
    Ok(())
}

/// An error when the `n` rows of `data` (row i's cells in `slot(i)`, its values after `skip`)
/// are all narrower than `n` or one has a value past `n`.
fn check_square<'a>(
    path: &Path,
    data: &[RowInfo],
    n: usize,
    skip: usize,
    slot: impl Fn(usize) -> &'a [f64],
) -> Result<(), ReadError> {
    let shape = |line: usize, message: String| ReadError::Shape {
        path: path.to_path_buf(),
        line,
        message,
    };
    let widths: Vec<usize> = data.iter().map(|r| r.count - skip).collect();
    if widths.iter().all(|&w| w == widths[0]) && widths[0] < n {
        return Err(shape(
            data[0].line,
            format!(
                "{n} rows of {} values: a distance matrix is square",
                widths[0]
            ),
        ));
    }
    if let Some((i, &w)) = widths
        .iter()
        .enumerate()
        .find(|&(i, &w)| w > n && slot(i)[n + skip..].iter().any(|x| !x.is_nan()))
    {
        return Err(shape(
            data[i].line,
            format!("{w} values in a row of a {n}x{n} matrix: it is not square"),
        ));
    }
    Ok(())
}

/// The `n` x `n` matrix of `cells` (rows of `width` cells, the matrix's first at row `s0`, its
/// values after `skip` cells): moved down in place when every row is that wide (never onto
/// cells still to be moved, as row i lands at i * n <= its slot), else copied, NaN where a row
/// is short.
fn into_matrix(mut cells: Vec<f64>, width: usize, s0: usize, skip: usize, n: usize) -> Array2<f64> {
    if width >= n + skip {
        for i in 0..n {
            let from = (s0 + i) * width + skip;
            if from != i * n {
                cells.copy_within(from..from + n, i * n);
            }
        }
        cells.truncate(n * n);
        cells.shrink_to_fit();
        return Array2::from_shape_vec((n, n), cells).expect("n * n cells");
    }
    let mut values = Array2::<f64>::from_elem((n, n), f64::NAN);
    for i in 0..n {
        let from = &cells[(s0 + i) * width..(s0 + i + 1) * width];
        let k = (width - skip).min(n);
        values
            .row_mut(i)
            .as_slice_mut()
            .expect("a standard-layout row")[..k]
            .copy_from_slice(&from[skip..skip + k]);
    }
    values
}

/// Makes `values` whole: a lower triangle (with or without its diagonal) mirrored, an empty
/// diagonal zeroed; an error for an empty cell elsewhere (not looked for when `known_full`).
/// Row i was read from line `lines[i]`, its values after `skip` cells. Returns the warnings.
fn complete(
    path: &Path,
    values: &mut Array2<f64>,
    lines: &[usize],
    skip: usize,
    known_full: bool,
) -> Result<Vec<String>, ReadError> {
    let n = values.nrows();
    let mut warnings = Vec::new();
    let row_of = |i: usize| values.row(i).to_slice().expect("a standard-layout row");
    let upper_empty = (0..n).all(|i| row_of(i)[i..].iter().all(|x| x.is_nan()));
    // Only asked when the upper triangle is empty: a full matrix stops at its first row.
    let lower_full = || (0..n).all(|i| row_of(i)[..i].iter().all(|x| !x.is_nan()));
    // A lower triangle may hold its diagonal: rows of 1, 2, ..., n values ending in 0.
    let strictly_upper_empty = || (0..n).all(|i| row_of(i)[i + 1..].iter().all(|x| x.is_nan()));
    let diagonal_given = (0..n).all(|i| !row_of(i)[i].is_nan());
    if n > 1 && (upper_empty || diagonal_given && strictly_upper_empty()) && lower_full() {
        if let Some(i) = (0..n).find(|&i| !upper_empty && row_of(i)[i] != 0.0) {
            return Err(ReadError::Value {
                path: path.to_path_buf(),
                line: lines[i],
                column: i + 1 + skip,
                problem: format!(
                    "row {} of this lower triangle ends in {}, not 0: a triangle with its \
                     diagonal has 0 on it; one without starts with an empty row (`,`)",
                    i + 1,
                    row_of(i)[i]
                ),
            });
        }
        for i in 0..n {
            values[[i, i]] = 0.0;
            for j in 0..i {
                values[[j, i]] = values[[i, j]];
            }
        }
        warnings.push(format!(
            "{}: lower triangle{} only; mirrored",
            path.display(),
            if upper_empty { "" } else { " and diagonal" }
        ));
    } else if let Some((i, j)) = (!known_full)
        .then(|| first_empty_off_diagonal(values))
        .flatten()
    {
        return Err(ReadError::Value {
            path: path.to_path_buf(),
            line: lines[i],
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
    Ok(warnings)
}

/// The first cell off the diagonal that is empty (NaN), rows checked on every core without a
/// branch a cell.
fn first_empty_off_diagonal(values: &Array2<f64>) -> Option<(usize, usize)> {
    use rayon::prelude::*;
    let n = values.nrows();
    let any_nan = |r: &[f64]| r.iter().fold(false, |acc, x| acc | x.is_nan());
    let i = (0..n).into_par_iter().find_first(|&i| {
        let row = values.row(i).to_slice().expect("a standard-layout row");
        any_nan(&row[..i]) | any_nan(&row[i + 1..])
    })?;
    let row = values.row(i);
    let j = (0..n).find(|&j| j != i && row[j].is_nan())?;
    Some((i, j))
}

/// Checks values (unless the reader knows them finite and non-negative: `known_valid`), zeroes
/// the diagonal and symmetrises, with warnings for both.
pub(super) fn finish(
    path: &Path,
    values: Array2<f64>,
    labels: Option<Vec<String>>,
    position: impl Fn(usize, usize) -> (usize, usize),
    mut warnings: Vec<String>,
    known_valid: bool,
) -> Result<ReadMatrix, ReadError> {
    let (rows, columns) = values.dim();
    if rows != columns {
        return Err(ReadError::Matrix {
            path: path.to_path_buf(),
            error: MatrixError::NotSquare { rows, columns },
        });
    }
    if let Some(((i, j), x)) = (!known_valid)
        .then(|| crate::first_invalid(&values))
        .flatten()
    {
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
