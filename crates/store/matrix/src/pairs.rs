//! Pair lists: one line per measured pair, as people's own scripts and mmpi write them.
//!
//! Two layouts, told by the first line that is not a comment:
//! - CSV with a header naming the columns `i`, `j`, `value` and, optionally, `host_i`,
//!   `host_j` and `size` (bytes); other columns are ignored;
//! - mmpi's `.dat`: `host rank host rank mean stddev` separated by blanks, `#` comments;
//! - Parquet with the CSV's columns (read by [`read_pairs_file`]), rows counted as lines.
//!
//! A pair may appear any number of times, in either order: its value is the median of its
//! repeats and its spread their robust standard deviation (for a `.dat`, the file's standard
//! deviation when it has one line per pair). A pair with no value is reported, never filled
//! in. Memory: the lines are read once into per-size P x P matrices (P^2 values each, plus the
//! repeats of the pairs while reading).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ndarray::Array2;

use crate::{DistanceMatrix, ReadError};

/// The pairs of one message size, made into a matrix.
#[derive(Debug, Clone)]
pub struct PairMatrix {
    /// The message size, bytes, when the list has a `size` column.
    pub size_bytes: Option<usize>,
    /// Per pair the median of its repeats.
    pub median: DistanceMatrix,
    /// Per pair the spread of its repeats (robust standard deviation; 0 for one repeat).
    pub spread: Array2<f64>,
    /// The most repeats any pair has.
    pub repeats: usize,
}

/// A pair list read: the ranks, their hosts when the list names them, a matrix per size.
#[derive(Debug, Clone)]
pub struct PairTable {
    /// `csv`, `mmpi-dat` or `parquet`.
    pub layout: &'static str,
    /// Rank count (the largest rank named, plus one).
    pub ranks: usize,
    /// Per rank its host, when the list names hosts.
    pub hosts: Option<Vec<String>>,
    /// One matrix per size, ascending (one with no size when the list has none).
    pub sizes: Vec<PairMatrix>,
    /// Lines that pair a rank with itself, left out: how many, and the first one's number.
    pub self_pairs: Option<(usize, usize)>,
}

/// The columns of a CSV pair list.
struct Columns {
    i: usize,
    j: usize,
    value: usize,
    host_i: Option<usize>,
    host_j: Option<usize>,
    size: Option<usize>,
}

/// One value of a pair read from a line.
struct Row<'a> {
    line: usize,
    i: usize,
    j: usize,
    value: f64,
    spread: Option<f64>,
    hosts: Option<(&'a str, &'a str)>,
    size: Option<usize>,
}

/// Reads a pair list (`path` names it in errors).
pub fn read_pairs(path: &Path, text: &str) -> Result<PairTable, ReadError> {
    // A byte-order mark (spreadsheets save one) is not part of the header.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let shape = |line: usize, message: String| ReadError::Shape {
        path: path.to_path_buf(),
        line,
        message,
    };
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(k, l)| (k + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let Some((first_line, first)) = lines.next() else {
        return Err(shape(1, "no pairs: the file holds no data line".into()));
    };
    // One field: nothing split it, neither commas nor blanks.
    let one_field = !first.contains(',') && first.split_whitespace().count() == 1;
    if let Some(sep) = crate::read::other_separator(first, if one_field { 1 } else { 2 }) {
        return Err(shape(
            first_line,
            format!(
                "fields separated by `{sep}`: a pair list is CSV (commas) with a header naming \
                 i, j and value, or mmpi's .dat (blanks)"
            ),
        ));
    }
    // mmpi on Blue Gene names each task with its torus coordinates, commas and all.
    let csv = first.contains(',') && !is_task_line(first);
    let mut rows = Vec::new();
    if csv {
        let header: Vec<String> = first
            .split(',')
            .map(|c| c.trim().trim_matches('"').to_ascii_lowercase())
            .collect();
        let find = |name: &str| header.iter().position(|c| c == name);
        let need = |name: &str| {
            find(name).ok_or_else(|| {
                shape(
                    first_line,
                    format!(
                        "the header has no `{name}` column; a pair list's header names i, j and \
                         value (and optionally host_i, host_j, size): found {}",
                        header.join(", ")
                    ),
                )
            })
        };
        let columns = Columns {
            i: need("i")?,
            j: need("j")?,
            value: need("value")?,
            host_i: find("host_i"),
            host_j: find("host_j"),
            size: find("size").or_else(|| find("size_bytes")),
        };
        if columns.host_i.is_some() != columns.host_j.is_some() {
            return Err(shape(
                first_line,
                "the header names only one of host_i and host_j".into(),
            ));
        }
        for (line, l) in lines {
            let cells: Vec<&str> = l.split(',').map(|c| c.trim().trim_matches('"')).collect();
            rows.push(csv_row(path, line, &cells, &columns)?);
        }
    } else {
        for (line, l) in std::iter::once((first_line, first)).chain(lines) {
            let cells: Vec<&str> = if is_task_line(l) {
                // `task 0 of 64 (0, 0, ...)  host 000  task 1 of 64 (...)  host 001  mean sd`:
                // the host and rank follow each closing parenthesis.
                let parts: Vec<&str> = l.split(')').collect();
                match parts.as_slice() {
                    [_, a, b] => {
                        let a: Vec<&str> = a.split_whitespace().take(2).collect();
                        a.into_iter().chain(b.split_whitespace()).collect()
                    }
                    _ => Vec::new(),
                }
            } else {
                l.split_whitespace().collect()
            };
            rows.push(dat_row(path, line, &cells)?);
        }
    }
    build(path, if csv { "csv" } else { "mmpi-dat" }, rows)
}

/// Reads a pair list from `path`: Parquet (told by its `PAR1` magic) or text, as
/// [`read_pairs`] reads it.
pub fn read_pairs_file(path: &Path) -> Result<PairTable, ReadError> {
    let io = |error| ReadError::Io {
        path: path.to_path_buf(),
        error,
    };
    read_pairs_bytes(path, std::fs::read(path).map_err(io)?)
}

/// Reads a pair list from its bytes (`path` names it in errors): Parquet when they begin with
/// `PAR1`, else text as [`read_pairs`] reads it.
pub fn read_pairs_bytes(path: &Path, bytes: Vec<u8>) -> Result<PairTable, ReadError> {
    if bytes.starts_with(b"PAR1") {
        return read_parquet_guarded(path, bytes);
    }
    let text = String::from_utf8(bytes).map_err(|e| ReadError::Pairs {
        path: path.to_path_buf(),
        message: format!(
            "neither text nor Parquet: byte {} is not UTF-8 (a pair list is CSV, mmpi's .dat              or Parquet)",
            e.utf8_error().valid_up_to()
        ),
    })?;
    read_pairs(path, &text)
}

/// One cell of a Parquet row as a number, if it is one.
fn parquet_number(field: &parquet::record::Field) -> Option<f64> {
    use parquet::record::Field;
    Some(match field {
        Field::Byte(v) => f64::from(*v),
        Field::Short(v) => f64::from(*v),
        Field::Int(v) => f64::from(*v),
        Field::Long(v) => *v as f64,
        Field::UByte(v) => f64::from(*v),
        Field::UShort(v) => f64::from(*v),
        Field::UInt(v) => f64::from(*v),
        Field::ULong(v) => *v as f64,
        Field::Float(v) => f64::from(*v),
        Field::Double(v) => *v,
        Field::Str(s) => s.trim().parse().ok()?,
        _ => return None,
    })
}

/// [`read_pairs_parquet`], with the Parquet decoder's panics on corrupt data (an index out of
/// bounds in its RLE decoder, found by mutating a seed) made an error. The default panic
/// message is held back while decoding, so the user sees one line naming the file; decoding
/// runs on the calling thread alone.
fn read_parquet_guarded(path: &Path, bytes: Vec<u8>) -> Result<PairTable, ReadError> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let read = std::panic::catch_unwind(|| read_pairs_parquet(path, bytes));
    std::panic::set_hook(hook);
    read.unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(ReadError::Pairs {
            path: path.to_path_buf(),
            message: format!("not a readable Parquet file: corrupt data ({why})"),
        })
    })
}

/// A Parquet row's cells: row number, i, j, value, the hosts, the size.
type ParquetRow = (usize, f64, f64, f64, Option<(String, String)>, Option<f64>);

/// A pair list in Parquet: the columns a CSV list has (`i`, `j`, `value`, optionally
/// `host_i`, `host_j`, `size`), any integer or float types; errors name the row (1-based) as
/// the line.
fn read_pairs_parquet(path: &Path, bytes: Vec<u8>) -> Result<PairTable, ReadError> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let bad = |message: String| ReadError::Pairs {
        path: path.to_path_buf(),
        message,
    };
    let reader = SerializedFileReader::new(bytes::Bytes::from(bytes))
        .map_err(|e| bad(format!("not a readable Parquet file: {e}")))?;
    let schema = reader.metadata().file_metadata().schema_descr_ptr();
    let names: Vec<String> = schema
        .columns()
        .iter()
        .map(|c| c.name().to_ascii_lowercase())
        .collect();
    let find = |name: &str| names.iter().position(|c| c == name);
    let need = |name: &str| {
        find(name).ok_or_else(|| {
            bad(format!(
                "no `{name}` column; a pair list names i, j and value (and optionally host_i,                  host_j, size): found {}",
                names.join(", ")
            ))
        })
    };
    let (ci, cj, cv) = (need("i")?, need("j")?, need("value")?);
    let (chi, chj) = (find("host_i"), find("host_j"));
    if chi.is_some() != chj.is_some() {
        return Err(bad("the file names only one of host_i and host_j".into()));
    }
    let csize = find("size").or_else(|| find("size_bytes"));
    let rows = reader
        .get_row_iter(None)
        .map_err(|e| bad(format!("unreadable: {e}")))?;
    // Owned cells first: a row's hosts borrow from them.
    let mut owned: Vec<ParquetRow> = Vec::new();
    for (k, row) in rows.enumerate() {
        let line = k + 1;
        let row = row.map_err(|e| bad(format!("row {line}: unreadable: {e}")))?;
        let fields: Vec<&Field> = row.get_column_iter().map(|(_, f)| f).collect();
        let cell = |c: usize| -> Result<f64, ReadError> {
            let f = fields.get(c).copied().unwrap_or(&Field::Null);
            parquet_number(f).ok_or_else(|| ReadError::NotANumber {
                path: path.to_path_buf(),
                line,
                column: c + 1,
                text: f.to_string(),
            })
        };
        let text = |c: usize| match fields.get(c).copied() {
            Some(Field::Str(s)) => s.clone(),
            Some(f) => f.to_string(),
            None => String::new(),
        };
        owned.push((
            line,
            cell(ci)?,
            cell(cj)?,
            cell(cv)?,
            chi.zip(chj).map(|(a, b)| (text(a), text(b))),
            csize.map(cell).transpose()?,
        ));
    }
    let mut rows = Vec::with_capacity(owned.len());
    for (line, i, j, value, hosts, size) in &owned {
        let index = |v: f64, column: usize| -> Result<usize, ReadError> {
            if v >= 0.0 && v.fract() == 0.0 && v < 1e15 {
                Ok(v as usize)
            } else {
                Err(ReadError::NotANumber {
                    path: path.to_path_buf(),
                    line: *line,
                    column: column + 1,
                    text: v.to_string(),
                })
            }
        };
        if !value.is_finite() || *value < 0.0 {
            return Err(ReadError::Value {
                path: path.to_path_buf(),
                line: *line,
                column: cv + 1,
                problem: format!("{value} is not a distance (finite and not negative)"),
            });
        }
        rows.push(Row {
            line: *line,
            i: index(*i, ci)?,
            j: index(*j, cj)?,
            value: *value,
            spread: None,
            hosts: hosts.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
            size: size.map(|s| index(s, csize.unwrap_or(0))).transpose()?,
        });
    }
    build(path, "parquet", rows)
}

/// Whether a line is in mmpi's Blue Gene layout (`Task 0 of 64 (0,0,...)  host rank ...`).
fn is_task_line(line: &str) -> bool {
    line.get(..5)
        .is_some_and(|p| p.eq_ignore_ascii_case("task "))
}

fn number<T: std::str::FromStr>(
    path: &Path,
    line: usize,
    column: usize,
    cells: &[&str],
) -> Result<T, ReadError> {
    let text = cells.get(column).copied().unwrap_or("");
    text.parse().map_err(|_| ReadError::NotANumber {
        path: path.to_path_buf(),
        line,
        column: column + 1,
        text: text.to_string(),
    })
}

fn distance(path: &Path, line: usize, column: usize, cells: &[&str]) -> Result<f64, ReadError> {
    let v: f64 = number(path, line, column, cells)?;
    if !v.is_finite() || v < 0.0 {
        return Err(ReadError::Value {
            path: path.to_path_buf(),
            line,
            column: column + 1,
            problem: format!("{v} is not a distance (finite and not negative)"),
        });
    }
    Ok(v)
}

fn csv_row<'a>(
    path: &Path,
    line: usize,
    cells: &[&'a str],
    c: &Columns,
) -> Result<Row<'a>, ReadError> {
    let hosts = match (c.host_i, c.host_j) {
        (Some(a), Some(b)) => Some((
            cells.get(a).copied().unwrap_or(""),
            cells.get(b).copied().unwrap_or(""),
        )),
        _ => None,
    };
    Ok(Row {
        line,
        i: number(path, line, c.i, cells)?,
        j: number(path, line, c.j, cells)?,
        value: distance(path, line, c.value, cells)?,
        spread: None,
        hosts,
        size: c.size.map(|s| number(path, line, s, cells)).transpose()?,
    })
}

fn dat_row<'a>(path: &Path, line: usize, cells: &[&'a str]) -> Result<Row<'a>, ReadError> {
    if cells.len() < 5 {
        return Err(ReadError::Shape {
            path: path.to_path_buf(),
            line,
            message: format!(
                "{} field(s); an mmpi line holds `host rank host rank mean [stddev]`",
                cells.len()
            ),
        });
    }
    Ok(Row {
        line,
        i: number(path, line, 1, cells)?,
        j: number(path, line, 3, cells)?,
        value: distance(path, line, 4, cells)?,
        spread: if cells.len() > 5 {
            Some(distance(path, line, 5, cells)?)
        } else {
            None
        },
        hosts: Some((cells[0], cells[2])),
        size: None,
    })
}

/// Per unordered pair, its values and the spreads the file gave with them.
type PairValues = BTreeMap<(usize, usize), Vec<(f64, Option<f64>)>>;

/// The most ranks a pair list may name (its matrices hold P^2 values per size).
pub(crate) const MAX_RANKS: usize = 1 << 16;

fn build(path: &Path, layout: &'static str, rows: Vec<Row>) -> Result<PairTable, ReadError> {
    let bad = |message: String| ReadError::Pairs {
        path: path.to_path_buf(),
        message,
    };
    if let Some(r) = rows.iter().find(|r| r.i.max(r.j) >= MAX_RANKS) {
        return Err(ReadError::Shape {
            path: path.to_path_buf(),
            line: r.line,
            message: format!("rank {} is beyond {MAX_RANKS} ranks", r.i.max(r.j)),
        });
    }
    let Some(n) = rows.iter().map(|r| r.i.max(r.j) + 1).max() else {
        return Err(bad("no pairs: the file holds no data line".into()));
    };
    if n < 2 {
        return Err(bad("a pair list needs at least 2 ranks".into()));
    }
    let hosts = hosts_of(path, &rows, n)?;
    // The values of each pair, per size.
    let mut by_size: BTreeMap<Option<usize>, PairValues> = BTreeMap::new();
    let mut self_pairs: Option<(usize, usize)> = None;
    for r in &rows {
        if r.i == r.j {
            let seen = self_pairs.get_or_insert((0, r.line));
            seen.0 += 1;
            continue;
        }
        by_size
            .entry(r.size)
            .or_default()
            .entry((r.i.min(r.j), r.i.max(r.j)))
            .or_default()
            .push((r.value, r.spread));
    }
    if by_size.is_empty() {
        // Only lines of a rank with itself: every pair is missing.
        by_size.insert(rows[0].size, PairValues::new());
    }
    let mut sizes = Vec::new();
    for (size, pairs) in by_size {
        let expected = n * (n - 1) / 2;
        if pairs.len() < expected {
            let missing: Vec<String> = (0..n)
                .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
                .filter(|p| !pairs.contains_key(p))
                .take(5)
                .map(|(i, j)| format!("{i}-{j}"))
                .collect();
            return Err(bad(format!(
                "{} of {expected} pairs of {n} ranks have no value{} (first: {}); a pair list \
                 must name every pair, and missing ones are not filled in",
                expected - pairs.len(),
                size.map_or(String::new(), |s| format!(" at size {s}")),
                missing.join(", ")
            )));
        }
        sizes.push(matrix_of(path, n, size, pairs, hosts.as_deref())?);
    }
    let hosts = match hosts {
        Some(h) if h.iter().all(Option::is_some) => Some(h.into_iter().flatten().collect()),
        Some(h) => {
            let r = h.iter().position(Option::is_none).unwrap_or(0);
            return Err(bad(format!("rank {r} appears in no line with its host")));
        }
        None => None,
    };
    Ok(PairTable {
        layout,
        ranks: n,
        hosts,
        sizes,
        self_pairs,
    })
}

/// Each rank's host as the rows name it (none where no row has hosts), or the error of the
/// first row that puts a rank on another host than before.
fn hosts_of(path: &Path, rows: &[Row], n: usize) -> Result<Option<Vec<Option<String>>>, ReadError> {
    let mut hosts: Option<Vec<Option<String>>> =
        rows.first().and_then(|r| r.hosts).map(|_| vec![None; n]);
    if let Some(h) = hosts.as_mut() {
        for r in rows {
            let Some((hi, hj)) = r.hosts else { continue };
            for (rank, host) in [(r.i, hi), (r.j, hj)] {
                match &h[rank] {
                    Some(known) if known != host => {
                        return Err(ReadError::Shape {
                            path: path.to_path_buf(),
                            line: r.line,
                            message: format!(
                                "rank {rank} is on host `{host}` here and on `{known}` before"
                            ),
                        })
                    }
                    Some(_) => {}
                    None => h[rank] = Some(host.to_string()),
                }
            }
        }
    }
    Ok(hosts)
}

/// The matrices of one size: each pair's median and spread (the file's, for a pair given once
/// with one, else 1.4826 times the median absolute deviation of its values).
fn matrix_of(
    path: &Path,
    n: usize,
    size: Option<usize>,
    pairs: PairValues,
    hosts: Option<&[Option<String>]>,
) -> Result<PairMatrix, ReadError> {
    let mut median = Array2::zeros((n, n));
    let mut spread = Array2::zeros((n, n));
    let mut repeats = 0;
    for ((i, j), mut values) in pairs {
        repeats = repeats.max(values.len());
        let file_spread = match values.as_slice() {
            [(_, Some(s))] => Some(*s),
            _ => None,
        };
        let mut v: Vec<f64> = values.drain(..).map(|(x, _)| x).collect();
        let m = lgate_stats::median(&mut v);
        let s = file_spread.unwrap_or_else(|| {
            let mut dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
            1.4826 * lgate_stats::median(&mut dev)
        });
        median[[i, j]] = m;
        median[[j, i]] = m;
        spread[[i, j]] = s;
        spread[[j, i]] = s;
    }
    let labels = hosts.map(|h| {
        h.iter()
            .enumerate()
            .map(|(r, host)| host.clone().unwrap_or_else(|| format!("rank{r}")))
            .collect()
    });
    let median = DistanceMatrix::new(median, labels).map_err(|error| ReadError::Matrix {
        path: PathBuf::from(path),
        error,
    })?;
    Ok(PairMatrix {
        size_bytes: size,
        median,
        spread,
        repeats,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<PairTable, ReadError> {
        read_pairs(Path::new("p.csv"), text)
    }

    #[test]
    fn repeats_in_either_order_give_the_median_and_spread() {
        let t = read("i,j,value\n0,1,1.0\n1,0,3.0\n0,1,2.0\n0,2,5\n1,2,4\n").unwrap();
        assert_eq!((t.layout, t.ranks, t.sizes.len()), ("csv", 3, 1));
        let m = &t.sizes[0];
        assert_eq!(m.median.values()[[0, 1]], 2.0);
        assert_eq!(m.median.values()[[1, 0]], 2.0);
        assert!((m.spread[[0, 1]] - 1.4826).abs() < 1e-9);
        assert_eq!(m.repeats, 3);
        assert!(t.hosts.is_none());
    }

    #[test]
    fn sizes_and_hosts_are_kept() {
        let t = read(
            "host_i,host_j,i,j,size,value\na,a,0,1,0,1\na,b,0,2,0,2\na,b,1,2,0,2\n\
             a,a,0,1,64,3\na,b,0,2,64,4\na,b,1,2,64,4\n",
        )
        .unwrap();
        assert_eq!(t.hosts.unwrap(), ["a", "a", "b"]);
        let sizes: Vec<Option<usize>> = t.sizes.iter().map(|s| s.size_bytes).collect();
        assert_eq!(sizes, [Some(0), Some(64)]);
        assert_eq!(t.sizes[1].median.values()[[0, 2]], 4.0);
    }

    #[test]
    fn an_mmpi_dat_file_is_read_with_its_hosts_and_deviations() {
        let t = read_pairs(
            Path::new("x.dat"),
            "# Processors: 3\nh0 000 h0 000 0.00 0.00\nh0 000 h0 001 3.16 0.13\n\
             h0 000 h1 002 5.0 0.5\nh0 001 h1 002 5.5 0.2\n",
        )
        .unwrap();
        assert_eq!(t.layout, "mmpi-dat");
        assert_eq!(t.hosts.unwrap(), ["h0", "h0", "h1"]);
        assert_eq!(t.sizes[0].spread[[0, 1]], 0.13);
        // Blue Gene's layout: tasks named with their torus coordinates.
        let bg = read_pairs(
            Path::new("bg.dat"),
            "Task 0 of 3 (0, 0, 0)  n0 000  Task 1 of 3 (0, 0, 1)  n0 001   2.5  0.1\n\
             task 0 of 3 (0, 0, 0)  n0 000  task 2 of 3 (0, 1, 0)  n1 002   3.5  0.1\n\
             task 1 of 3 (0, 0, 1)  n0 001  task 2 of 3 (0, 1, 0)  n1 002   3.0  0.1\n",
        )
        .unwrap();
        assert_eq!(bg.hosts.unwrap(), ["n0", "n0", "n1"]);
        assert_eq!(bg.sizes[0].median.values()[[1, 2]], 3.0);
    }

    #[test]
    fn corrupt_parquet_is_an_error_never_a_panic() {
        let seed = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../../fuzz/seeds/pair_list_parquet/three-ranks.parquet"),
        )
        .unwrap();
        let good = read_pairs_bytes(Path::new("p.parquet"), seed.clone()).unwrap();
        assert_eq!((good.layout, good.ranks), ("parquet", 3));
        assert!((good.sizes[0].median.values()[[0, 2]] - 4.1).abs() < 1e-12);
        // Every byte set to every bit pattern that broke a decoder: an error or a table, and
        // the decoder's panics (seen for some) become errors.
        let mut errors = 0;
        for at in 4..seed.len() - 8 {
            for value in [0x00, 0x7f, 0xff] {
                let mut bytes = seed.clone();
                bytes[at] = value;
                match std::panic::catch_unwind(|| read_pairs_bytes(Path::new("p.parquet"), bytes)) {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => {
                        errors += 1;
                        assert!(e.to_string().starts_with("p.parquet"), "{e}");
                    }
                    Err(_) => panic!("byte {at} = {value:#x}: a panic escaped"),
                }
            }
        }
        assert!(errors > 0);
    }

    #[test]
    fn bad_lists_say_what_and_where() {
        let err = |text: &str| read(text).unwrap_err().to_string();
        assert!(err("i,j,value\n0,1,1\n0,2,1\n").contains("1 of 3 pairs of 3 ranks have no value"));
        assert!(err("i,j,value\n0,1,1\n0,2,1\n").contains("first: 1-2"));
        assert!(err("a,b\n0,1\n").contains("no `i` column"));
        assert!(err("i,j,value\n0,1,x\n").contains("p.csv:2, column 3: `x` is not a number"));
        assert!(err("i,j,value\n0,1,-1\n").contains("not a distance"));
        assert!(err("i,j,value\n0,1,NaN\n").contains("not a distance"));
        assert!(err("# nothing\n").contains("no pairs"));
        assert!(err("i,j,value\n1,1,0\n").contains("1 of 1 pairs of 2 ranks have no value"));
        let huge = format!("i,j,value\n0,{},1\n", usize::MAX);
        assert!(err(&huge).contains("is beyond 65536 ranks"));
        assert!(err("i,j,value\n0,1,1\n0,2,1\n").starts_with("p.csv: 1 of 3"));
        let dat = read_pairs(Path::new("x.dat"), "h 0 h 1\n").unwrap_err();
        assert!(dat.to_string().contains("x.dat:1: 4 field(s)"), "{dat}");
        let moved = read_pairs(Path::new("x.dat"), "a 0 a 1 1.0\nb 0 a 1 1.0\n").unwrap_err();
        assert!(moved
            .to_string()
            .contains("rank 0 is on host `b` here and on `a` before"));
    }
}
