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
    /// A pair list that is unusable as a whole (pairs missing, no data line).
    #[error("{}: {message}", path.display())]
    Pairs {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
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
    read_csv_from(path, std::fs::File::open(path).map_err(io)?)
}

/// Reads a matrix from the bytes of a file: `.npy` by its magic bytes, CSV otherwise; `path`
/// names the file in errors.
pub fn read_matrix_bytes(path: &Path, bytes: &[u8]) -> Result<ReadMatrix, ReadError> {
    if bytes.starts_with(b"\x93NUMPY") {
        let head = &bytes[..bytes.len().min(NPY_HEAD_BYTES as usize)];
        read_npy_from(path, || Ok(bytes), || (head.to_vec(), bytes.len() as u64))
    } else {
        read_csv_bytes(path, bytes)
    }
}

/// Reads CSV from memory in one block (a block of [`BLOCK_BYTES`] would be allocated for a few
/// bytes otherwise).
fn read_csv_bytes(path: &Path, bytes: &[u8]) -> Result<ReadMatrix, ReadError> {
    read_csv_in_blocks(path, bytes, bytes.len().clamp(1, BLOCK_BYTES))
}

fn read_npy(path: &Path) -> Result<ReadMatrix, ReadError> {
    let open = || {
        std::fs::File::open(path)
            .map(std::io::BufReader::new)
            .map_err(|error| ReadError::Io {
                path: path.to_path_buf(),
                error,
            })
    };
    // For the header's check: its first 64 KiB and the file's length.
    let head = || {
        use std::io::Read;
        let mut head = Vec::new();
        let len = std::fs::metadata(path).map_or(0, |m| m.len());
        if let Ok(f) = std::fs::File::open(path) {
            let _ = f.take(NPY_HEAD_BYTES).read_to_end(&mut head);
        }
        (head, len)
    };
    read_npy_from(path, open, head)
}

/// How much of a `.npy` file is read for its header's check.
const NPY_HEAD_BYTES: u64 = 64 << 10;

/// Reads a `.npy` array of f64 (or f32) from the reader `open` gives (called once per type);
/// `head` gives the file's first bytes and length, whose header is checked first.
fn read_npy_from<R: std::io::Read>(
    path: &Path,
    open: impl Fn() -> Result<R, ReadError>,
    head: impl Fn() -> (Vec<u8>, u64),
) -> Result<ReadMatrix, ReadError> {
    use ndarray_npy::ReadNpyExt;
    let npy_error = |message: String| ReadError::Npy {
        path: path.to_path_buf(),
        message,
    };
    let (bytes, len) = head();
    check_npy_header(&bytes, len).map_err(npy_error)?;
    let values = match Array2::<f64>::read_npy(open()?) {
        Ok(v) => v,
        Err(_) => Array2::<f32>::read_npy(open()?)
            .map(|a| a.mapv(f64::from))
            // The reader's messages may run over several lines: the first says what.
            .map_err(|e| npy_error(e.to_string().lines().next().unwrap_or("").to_string()))?,
    };
    finish(
        path,
        values,
        None,
        |row, column| (row + 1, column + 1),
        Vec::new(),
    )
}

/// Checks a `.npy` file's header, from its first bytes and its length, before the array reader
/// sees it: a header that is not the flat dictionary NumPy writes, an array that is not 2-D
/// float64 or float32, or data cut short, is refused here in words a user can act on. (The
/// array reader's own header parser takes time exponential in nested brackets: 6 s for a
/// 136-byte header; this one is linear.)
fn check_npy_header(bytes: &[u8], len: u64) -> Result<(), String> {
    let truncated = || "truncated: the file ends inside its header".to_string();
    let major = *bytes.get(6).ok_or_else(truncated)?;
    let (size_bytes, start): (usize, usize) = match major {
        1 => (2, 10),
        2 | 3 => (4, 12),
        v => {
            return Err(format!(
                "format version {v} is not one NumPy writes (1, 2 or 3)"
            ))
        }
    };
    let size = bytes.get(8..8 + size_bytes).ok_or_else(truncated)?;
    let header_len = size.iter().rev().fold(0usize, |acc, &b| {
        acc.saturating_mul(256).saturating_add(usize::from(b))
    });
    if header_len > NPY_HEAD_BYTES as usize - start {
        return Err(format!(
            "a header of {header_len} bytes: a matrix's is under 100 (the file is damaged)"
        ));
    }
    let header = bytes.get(start..start + header_len).ok_or_else(truncated)?;
    let header = std::str::from_utf8(header).map_err(|_| "its header is not text".to_string())?;
    let dict = NpyHeader::parse(header)
        .map_err(|e| format!("its header is not the dictionary NumPy writes: {e}"))?;
    let dims = &dict.shape;
    if dims.len() != 2 {
        let shape = dims.iter().map(u64::to_string).collect::<Vec<_>>();
        let shape = if shape.len() == 1 {
            format!("({},)", shape[0])
        } else {
            format!("({})", shape.join(", "))
        };
        return Err(format!(
            "a {}-D array of shape {shape}: a distance matrix is 2-D, n x n",
            dims.len()
        ));
    }
    let item: u64 = match dict.descr.trim_start_matches(['<', '>', '=', '|']) {
        "f8" => 8,
        "f4" => 4,
        _ => {
            return Err(format!(
                "it holds `{}` values: a distance matrix is float64 (`<f8`) or float32 (`<f4`)",
                dict.descr
            ))
        }
    };
    let need = dims[0].saturating_mul(dims[1]).saturating_mul(item);
    let have = len.saturating_sub((start + header_len) as u64);
    if have < need {
        return Err(format!(
            "truncated: its header declares {} x {} {} ({need} bytes of data), but {have} \
             bytes follow",
            dims[0], dims[1], dict.descr
        ));
    }
    Ok(())
}

/// The header dictionary of a `.npy` file: `{'descr': '<f8', 'fortran_order': False,
/// 'shape': (3, 3), }`.
struct NpyHeader {
    descr: String,
    shape: Vec<u64>,
}

impl NpyHeader {
    /// Reads the dictionary in one pass, refusing anything but its three keys with a string,
    /// a boolean and a tuple of whole numbers.
    fn parse(text: &str) -> Result<NpyHeader, String> {
        let mut rest = text.trim_start();
        if !eat("{", &mut rest) {
            return Err("it does not start with `{`".into());
        }
        let (mut descr, mut order, mut shape) = (None, None, None);
        loop {
            if eat("}", &mut rest) {
                break;
            }
            let key = quoted(&mut rest).ok_or("a key is not a quoted name")?;
            if !eat(":", &mut rest) {
                return Err(format!("no `:` after '{key}'"));
            }
            match key {
                "descr" => descr = Some(quoted(&mut rest).ok_or("'descr' is not a quoted type")?),
                "fortran_order" => {
                    order = Some(if eat("True", &mut rest) {
                        true
                    } else if eat("False", &mut rest) {
                        false
                    } else {
                        return Err("'fortran_order' is neither True nor False".into());
                    })
                }
                "shape" => {
                    if !eat("(", &mut rest) {
                        return Err("'shape' is not a tuple".into());
                    }
                    let mut dims = Vec::new();
                    while !eat(")", &mut rest) {
                        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                        let dim = rest[..digits]
                            .parse::<u64>()
                            .map_err(|_| "'shape' holds something other than sizes")?;
                        dims.push(dim);
                        rest = rest[digits..].trim_start();
                        if !eat(",", &mut rest) && !rest.starts_with(')') {
                            return Err("'shape' holds something other than sizes".into());
                        }
                    }
                    shape = Some(dims);
                }
                other => return Err(format!("'{other}' is not one of its keys")),
            }
            if !eat(",", &mut rest) && !rest.trim_start().starts_with('}') {
                return Err(format!("no `,` after '{key}'"));
            }
        }
        if !rest.trim().is_empty() {
            return Err("text follows its closing `}`".into());
        }
        match (descr, order, shape) {
            (Some(descr), Some(_), Some(shape)) => Ok(NpyHeader {
                descr: descr.to_string(),
                shape,
            }),
            _ => Err("it lacks one of 'descr', 'fortran_order' and 'shape'".into()),
        }
    }
}

/// Whether `rest` starts with `token` (after blanks); if so, `rest` moves past it.
fn eat(token: &str, rest: &mut &str) -> bool {
    match rest.trim_start().strip_prefix(token) {
        Some(after) => {
            *rest = after.trim_start();
            true
        }
        None => false,
    }
}

/// A string in single or double quotes at the start of `rest` (no escapes: NumPy's keys and
/// type names have none), and `rest` moved past it.
fn quoted<'a>(rest: &mut &'a str) -> Option<&'a str> {
    let t = rest.trim_start();
    let q = t.chars().next().filter(|&c| c == '\'' || c == '"')?;
    let end = t[1..].find(q)? + 1;
    *rest = t[end + 1..].trim_start();
    Some(&t[1..end])
}

/// CSV is read in blocks of about this many bytes; each block's lines are parsed on every core.
const BLOCK_BYTES: usize = 8 << 20;

/// A plain decimal `[-]digits[.digits]` at the start of `b` whose digits, read as one integer,
/// stay within 2^53: the value is that integer divided by a power of ten of at most 22, both
/// exact in f64, so the one rounding of the division gives the correctly rounded number (Clinger's
/// fast path). Anything else (exponents, long mantissas) is left to the general parser.
fn parse_plain_decimal(b: &[u8]) -> Option<(f64, usize)> {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    let negative = b.first() == Some(&b'-');
    let mut i = usize::from(negative);
    let (mut mantissa, mut digits, mut fraction) = (0u64, 0usize, 0usize);
    while let Some(d) = b.get(i).filter(|c| c.is_ascii_digit()) {
        mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(d - b'0'));
        digits += 1;
        i += 1;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while let Some(d) = b.get(i).filter(|c| c.is_ascii_digit()) {
            mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(d - b'0'));
            digits += 1;
            fraction += 1;
            i += 1;
        }
    }
    let plain = digits > 0
        && digits <= 18
        && fraction < POW10.len()
        && mantissa <= 1 << 53
        && !matches!(b.get(i), Some(b'e' | b'E' | b'.'));
    if !plain {
        return None;
    }
    let v = mantissa as f64 / POW10[fraction];
    Some((if negative { -v } else { v }, i))
}

/// One line cut after its first cell: the first cell (a label or a number, unquoted and
/// trimmed), the text after it, and whether the line has that one cell only.
struct SplitLine<'a> {
    first: String,
    tail: &'a str,
    one_cell: bool,
}

fn split_first(text: &str) -> SplitLine<'_> {
    // A quoted label may hold commas; plain numbers never do.
    let (first, tail) = if text.starts_with('"') {
        // The first comma outside quotes ends the cell (`""` inside quotes is one quote).
        let mut quoted = false;
        let end = text
            .bytes()
            .position(|b| {
                if b == b'"' {
                    quoted = !quoted;
                }
                b == b',' && !quoted
            })
            .unwrap_or(text.len());
        // Trimmed, as a label in the header row is.
        let first = split_csv_line(&text[..end])
            .swap_remove(0)
            .trim()
            .to_string();
        // Past the label and the comma after it.
        (first, text.get(end + 1..).unwrap_or(""))
    } else {
        match text.split_once(',') {
            Some((f, t)) => (f.trim().to_string(), t),
            None => (text.trim().to_string(), ""),
        }
    };
    SplitLine {
        first,
        tail,
        one_cell: tail.is_empty() && !text.trim_end().ends_with(','),
    }
}

/// A row's place in the file: its line, its first cell as text and its number of cells.
struct RowInfo {
    line: usize,
    first: String,
    count: usize,
}

/// The rows read so far, every cell of each parsed into one row-major buffer of `width` cells a
/// row (NaN for an empty cell, a label or a missing cell; a NaN in the file is an error as soon
/// as it is read), so that the matrix is built in the same memory.
struct CsvRows<'p> {
    path: &'p Path,
    width: usize,
    cells: Vec<f64>,
    rows: Vec<RowInfo>,
    /// The first line, which may be a header.
    first_text: Option<String>,
    /// Why the first line is not a row of numbers, if it is not: an error only if it is no header.
    first_error: Option<ReadError>,
    /// How cells are separated, told by the first line with cells.
    separator: Option<Separator>,
}

/// How the cells of a line are separated.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Separator {
    /// Commas (CSV).
    Comma,
    /// Spaces or tabs, as `numpy.savetxt` and many tools write: a line without commas whose
    /// cells are separated by blanks.
    Blank,
}

/// Whether a line is a comment (`#` first) or holds nothing.
fn is_comment_or_blank(line: &str) -> bool {
    let t = line.trim_start();
    t.is_empty() || t.starts_with('#')
}

/// The separator the first line with cells in `text` shows, if there is one.
fn separator_of(text: &str) -> Option<Separator> {
    let line = text
        .split('\n')
        .map(|l| l.trim())
        .find(|l| !is_comment_or_blank(l))?;
    Some(if !line.contains(',') && line.contains([' ', '\t']) {
        Separator::Blank
    } else {
        Separator::Comma
    })
}

/// `text` with the blanks between cells of each line turned into commas, line for line.
fn blanks_to_commas(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if is_comment_or_blank(body) {
            out.push_str(body);
        } else {
            for (k, cell) in body.split_whitespace().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                out.push_str(cell);
            }
        }
        out.push_str(end);
    }
    out
}

/// Why a cell that reads as no finite number is refused.
fn not_finite(text: &str) -> String {
    let t = text.trim().trim_matches('"').trim();
    let word = t.trim_start_matches(['+', '-']);
    if word.eq_ignore_ascii_case("nan")
        || word.eq_ignore_ascii_case("inf")
        || word.eq_ignore_ascii_case("infinity")
    {
        format!("`{t}` is not a finite number")
    } else {
        format!("`{t}` is beyond the largest number a distance can have (about 1.8e308)")
    }
}

impl CsvRows<'_> {
    /// Parses the cells after the first of line `line` into `out` (as far as it reaches) in one
    /// pass, and returns how many there are.
    fn parse_cells(&self, line: usize, tail: &str, out: &mut [f64]) -> Result<usize, ReadError> {
        let b = tail.as_bytes();
        let blank = |c: u8| c == b' ' || c == b'\t';
        let (mut pos, mut c) = (0, 0);
        loop {
            while pos < b.len() && blank(b[pos]) {
                pos += 1;
            }
            let start = pos;
            if pos < b.len() && b[pos] != b',' {
                let quick = parse_plain_decimal(&b[pos..])
                    .or_else(|| fast_float2::parse_partial::<f64, _>(&b[pos..]).ok())
                    .and_then(|(v, k)| {
                        let mut end = pos + k;
                        while end < b.len() && blank(b[end]) {
                            end += 1;
                        }
                        (end == b.len() || b[end] == b',').then_some((v, end))
                    });
                let v = match quick {
                    Some((v, end)) => {
                        pos = end;
                        Some(v)
                    }
                    None => {
                        // Anything unusual (other white space, a stray character) is judged on
                        // the whole cell.
                        let end = b[start..]
                            .iter()
                            .position(|&x| x == b',')
                            .map_or(b.len(), |k| start + k);
                        pos = end;
                        let t = tail[start..end].trim();
                        // A number in quotes, as spreadsheets may write it.
                        let t = t
                            .strip_prefix('"')
                            .and_then(|q| q.strip_suffix('"'))
                            .map_or(t, str::trim);
                        if t.is_empty() {
                            None
                        } else {
                            Some(fast_float2::parse::<f64, _>(t).map_err(|_| {
                                ReadError::NotANumber {
                                    path: self.path.to_path_buf(),
                                    line,
                                    column: c + 2,
                                    text: t.to_string(),
                                }
                            })?)
                        }
                    }
                };
                if let Some(v) = v {
                    if !v.is_finite() {
                        return Err(ReadError::Value {
                            path: self.path.to_path_buf(),
                            line,
                            column: c + 2,
                            problem: not_finite(&tail[start..pos]),
                        });
                    }
                    if let Some(x) = out.get_mut(c) {
                        *x = v;
                    }
                }
            }
            c += 1;
            if pos >= b.len() {
                return Ok(c);
            }
            // At the comma after the cell.
            pos += 1;
        }
    }

    /// Parses one line into its slot of `width` cells; returns its first cell and its number of
    /// cells (more than the slot holds when the line is wider).
    fn parse_into(
        &self,
        line: usize,
        text: &str,
        slot: &mut [f64],
    ) -> Result<(String, usize), ReadError> {
        let cut = split_first(text);
        slot[0] = fast_float2::parse(cut.first.trim()).unwrap_or(f64::NAN);
        let count = if cut.one_cell {
            1
        } else {
            1 + self.parse_cells(line, cut.tail, &mut slot[1..])?
        };
        Ok((cut.first, count))
    }

    /// Widens every row read so far to `width` cells.
    fn restride(&mut self, width: usize) {
        let old = self.width;
        let mut cells = vec![f64::NAN; self.rows.len() * width];
        for (to, from) in cells.chunks_mut(width).zip(self.cells.chunks(old)) {
            to[..old].copy_from_slice(from);
        }
        self.cells = cells;
        self.width = width;
    }

    /// Adds the lines of one block of text whose first line is line `first_line` of the file;
    /// returns the number of lines in the block.
    fn add_block(&mut self, text: &str, first_line: usize) -> Result<usize, ReadError> {
        if self.separator.is_none() {
            self.separator = separator_of(text);
        }
        if self.separator == Some(Separator::Blank) {
            return self.add_lines(&blanks_to_commas(text), first_line);
        }
        self.add_lines(text, first_line)
    }

    /// [`CsvRows::add_block`] of comma-separated lines.
    fn add_lines(&mut self, text: &str, first_line: usize) -> Result<usize, ReadError> {
        use rayon::prelude::*;
        let mut total = 0;
        let mut lines: Vec<(usize, &str)> = text
            .split_terminator('\n')
            .inspect(|_| total += 1)
            .enumerate()
            .map(|(k, l)| (first_line + k, l.trim_end_matches('\r')))
            .filter(|(_, l)| !is_comment_or_blank(l))
            .collect();
        if self.first_text.is_none() && !lines.is_empty() {
            let (line, t) = lines.remove(0);
            let cut = split_first(t);
            // The one line whose width is not known beforehand.
            self.width = if cut.one_cell {
                1
            } else {
                2 + cut.tail.bytes().filter(|&b| b == b',').count()
            };
            let mut slot = vec![f64::NAN; self.width];
            match self.parse_into(line, t, &mut slot) {
                Ok(_) => self.first_error = None,
                Err(e) => self.first_error = Some(e),
            }
            self.cells = slot;
            self.first_text = Some(t.to_string());
            self.rows.push(RowInfo {
                line,
                first: cut.first,
                count: self.width,
            });
        }
        if lines.is_empty() {
            return Ok(total);
        }
        loop {
            let width = self.width;
            let base = self.cells.len();
            self.cells.resize(base + lines.len() * width, f64::NAN);
            let mut cells = std::mem::take(&mut self.cells);
            let parsed: Vec<Result<(String, usize), ReadError>> = cells[base..]
                .par_chunks_mut(width)
                .zip(&lines)
                .map(|(slot, &(line, t))| self.parse_into(line, t, slot))
                .collect();
            self.cells = cells;
            let parsed = parsed
                .into_iter()
                .collect::<Result<Vec<(String, usize)>, ReadError>>()?;
            let widest = parsed.iter().map(|p| p.1).max().unwrap_or(0);
            if widest > width {
                // A wider row than any before: every row is widened and the block read again.
                self.cells.truncate(base);
                self.restride(widest);
                continue;
            }
            self.rows.extend(
                lines
                    .iter()
                    .zip(parsed)
                    .map(|(&(line, _), (first, count))| RowInfo { line, first, count }),
            );
            return Ok(total);
        }
    }
}

/// Reads CSV text (see [`read_matrix`]).
pub fn read_csv(path: &Path, text: &str) -> Result<ReadMatrix, ReadError> {
    read_csv_bytes(path, text.as_bytes())
}

/// Reads CSV from a stream in blocks, parsing each block on every core into the matrix's memory.
fn read_csv_from(path: &Path, source: impl std::io::Read) -> Result<ReadMatrix, ReadError> {
    read_csv_in_blocks(path, source, BLOCK_BYTES)
}

/// [`read_csv_from`] with blocks of about `block_bytes`.
fn read_csv_in_blocks(
    path: &Path,
    mut source: impl std::io::Read,
    block_bytes: usize,
) -> Result<ReadMatrix, ReadError> {
    let io = |error| ReadError::Io {
        path: path.to_path_buf(),
        error,
    };
    let mut table = CsvRows {
        path,
        width: 0,
        cells: Vec::new(),
        rows: Vec::new(),
        first_text: None,
        first_error: None,
        separator: None,
    };
    let mut pending: Vec<u8> = Vec::new();
    // The file's line number of the first line in `pending`.
    let mut line = 1;
    loop {
        let old = pending.len();
        pending.resize(old + block_bytes, 0);
        let mut got = 0;
        while old + got < pending.len() {
            match source.read(&mut pending[old + got..]) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io(e)),
            }
        }
        pending.truncate(old + got);
        let eof = got == 0;
        let end = if eof {
            pending.len()
        } else {
            match pending.iter().rposition(|&b| b == b'\n') {
                Some(k) => k + 1,
                None => continue,
            }
        };
        let block = &pending[..end];
        let newlines = |b: &[u8]| b.iter().filter(|&&c| c == b'\n').count();
        let text = std::str::from_utf8(block).map_err(|e| ReadError::Shape {
            path: path.to_path_buf(),
            line: line + newlines(&block[..e.valid_up_to()]),
            message: "the file is neither UTF-8 text (CSV) nor a .npy array".into(),
        })?;
        line += table.add_block(text, line)?;
        pending.drain(..end);
        if eof {
            break;
        }
    }
    build_from_rows(table)
}

/// Decides the layout (header, label column, lower triangle) and builds the matrix in place.
fn build_from_rows(table: CsvRows<'_>) -> Result<ReadMatrix, ReadError> {
    let CsvRows {
        path,
        width,
        mut cells,
        rows,
        first_text,
        first_error,
        separator: _,
    } = table;
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
            "no rows of numbers: the file is empty, or holds only comments and blank lines".into(),
        ));
    };
    let first_cells = split_csv_line(&first_text);
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
    // Numeric labels (rank numbers) under a header: every row is one wider than the count of rows.
    let label_column = label_column || (has_header && data.iter().all(|r| r.count == n + 1));
    let skip = usize::from(label_column);
    if skip == 0 {
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
    }
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
    let slot = |i: usize| &cells[(s0 + i) * width..(s0 + i + 1) * width];
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
    // Row i of the matrix is cells [skip, skip + n) of data row i: moved down in place when every
    // row is that wide (never onto cells still to be moved, as row i lands at i * n <= its slot).
    let mut values = if width >= n + skip {
        for i in 0..n {
            let from = (s0 + i) * width + skip;
            if from != i * n {
                cells.copy_within(from..from + n, i * n);
            }
        }
        cells.truncate(n * n);
        cells.shrink_to_fit();
        Array2::from_shape_vec((n, n), cells).expect("n * n cells")
    } else {
        let mut values = Array2::<f64>::from_elem((n, n), f64::NAN);
        for i in 0..n {
            let from = slot(i);
            let k = (width - skip).min(n);
            values
                .row_mut(i)
                .as_slice_mut()
                .expect("a standard-layout row")[..k]
                .copy_from_slice(&from[skip..skip + k]);
        }
        values
    };
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
                line: data[i].line,
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
    } else if let Some((i, j)) = (0..n).find_map(|i| {
        row_of(i)
            .iter()
            .enumerate()
            .position(|(j, x)| j != i && x.is_nan())
            .map(|j| (i, j))
    }) {
        return Err(ReadError::Value {
            path: path.to_path_buf(),
            line: data[i].line,
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
        Some(data.iter().map(|r| r.first.clone()).collect())
    } else {
        None
    };
    let lines: Vec<usize> = data.iter().map(|r| r.line).collect();
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
        assert!(
            e.to_string().contains("`NaN` is not a finite number"),
            "{e}"
        );
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
    fn plain_decimals_parse_as_the_general_parser_does() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..100_000 {
            let (r, digits) = (next(), (next() % 17) as usize);
            let s = format!(
                "{:.*}",
                digits,
                (r % 1_000_000_000) as f64 / (1 + r % 9973) as f64
            );
            let s = if r % 5 == 0 { format!("-{s}") } else { s };
            let want: f64 = s.parse().unwrap();
            match parse_plain_decimal(s.as_bytes()) {
                Some((got, len)) => {
                    assert_eq!(got.to_bits(), want.to_bits(), "{s}");
                    assert_eq!(len, s.len(), "{s}");
                }
                None => assert!(
                    s.bytes().filter(u8::is_ascii_digit).count() > 15,
                    "{s} left to the general parser"
                ),
            }
        }
        for s in ["1e3", "1.5E-2", "", "-", ".", "12345678901234567890.5"] {
            assert!(parse_plain_decimal(s.as_bytes()).is_none(), "{s}");
        }
        assert_eq!(parse_plain_decimal(b"2.5,7"), Some((2.5, 3)));
        assert_eq!(parse_plain_decimal(b".5"), Some((0.5, 2)));
        assert_eq!(parse_plain_decimal(b"7."), Some((7.0, 2)));
    }

    #[test]
    fn blocks_of_any_size_read_the_same() {
        let texts = [
            "rank,a,b,c\na,0,1,2\nb,1,0,3\nc,2,3,0\n",
            "\n\n0,1,2\r\n1,0,3\r\n\n2,3,0",
            // Rows wider than the first line (a header without the label column's cell).
            "a,b,c\nx,0,1,2\ny,1,0,3\nz,2,3,0\n",
            ",,\n1.5,,\n2,3,\n",
            "0,1,2\n1,0,x\n2,3,0\n",
        ];
        for text in texts {
            let whole = format!("{:?}", read_csv(Path::new("m.csv"), text));
            for block in [1, 2, 3, 5, 8, 64] {
                let part = read_csv_in_blocks(Path::new("m.csv"), text.as_bytes(), block);
                assert_eq!(format!("{part:?}"), whole, "{text:?} in blocks of {block}");
            }
        }
        let m = read_csv(Path::new("m.csv"), texts[2]).unwrap();
        assert_eq!(m.matrix.labels(), ["x", "y", "z"]);
        assert_eq!(m.matrix.get(2, 1), 3.0);
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

    #[test]
    fn a_lower_triangle_may_hold_its_diagonal() {
        for text in ["0\n1.5,0\n2,3,0\n", "0,,\n1.5,0,\n2,3,0\n"] {
            let m = csv(text).unwrap();
            assert_eq!(m.matrix.get(0, 2), 2.0, "{text:?}");
            assert_eq!(m.matrix.get(1, 2), 3.0);
            assert!(
                m.warnings[0].contains("lower triangle and diagonal"),
                "{:?}",
                m.warnings
            );
        }
        // Without 0 on it, it may be a triangle without its diagonal: said, not guessed.
        let e = csv("1.5\n2,3\n").unwrap_err().to_string();
        assert!(
            e.contains("row 1 of this lower triangle ends in 1.5, not 0"),
            "{e}"
        );
        assert!(e.contains("starts with an empty row"), "{e}");
        // ... which reads, written so.
        assert_eq!(csv(",\n1.5\n2,3\n").unwrap().matrix.get(1, 2), 3.0);
    }

    #[test]
    fn blank_separated_matrices_read_as_csv() {
        let m = csv("0 1.5 2\n1.5\t0   3\n  2 3 0\n").unwrap();
        assert_eq!(m.matrix.len(), 3);
        assert_eq!(m.matrix.get(1, 2), 3.0);
        let m = csv("# written by numpy.savetxt\n0 1\n1 0\n").unwrap();
        assert_eq!(m.matrix.get(0, 1), 1.0);
        let e = csv("0 1 2\n1 0 x\n2 3 0\n").unwrap_err().to_string();
        assert!(e.contains(":2, column 3: `x` is not a number"), "{e}");
    }

    #[test]
    fn quoted_numbers_are_numbers() {
        let m = csv("\"0\",\"1.5\"\n\"1.5\", \"0\" \n").unwrap();
        assert_eq!(m.matrix.get(0, 1), 1.5);
    }

    #[test]
    fn comments_are_skipped_and_a_file_of_them_is_no_matrix() {
        let m = csv("# latency in us\n0,1\n  # between\n1,0\n").unwrap();
        assert_eq!(m.matrix.len(), 2);
        for text in ["# only\n# comments\n", "", "\n  \n"] {
            let e = csv(text).unwrap_err().to_string();
            assert!(e.contains("no rows of numbers"), "{text:?}: {e}");
        }
    }

    #[test]
    fn numbers_too_large_are_named_as_such() {
        let e = csv("0,1e400\n1,0\n").unwrap_err().to_string();
        assert!(
            e.contains(":1, column 2: `1e400` is beyond the largest number"),
            "{e}"
        );
        let e = csv("0,1\n-1e999,0\n").unwrap_err().to_string();
        assert!(e.contains(":2, column 1: `-1e999` is beyond"), "{e}");
        let e = csv("0,inf\ninf,0\n").unwrap_err().to_string();
        assert!(e.contains("`inf` is not a finite number"), "{e}");
    }

    fn npy_bytes(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        let header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        let mut out = npy_bytes_raw(&header, 0);
        out.extend_from_slice(data);
        out
    }

    /// A `.npy` file of this header text and `zeros` bytes of data.
    fn npy_bytes_raw(header: &str, zeros: usize) -> Vec<u8> {
        let mut header = header.to_string();
        while !(10 + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend(std::iter::repeat_n(0u8, zeros));
        out
    }

    #[test]
    fn npy_refusals_say_what_the_array_is() {
        let zeros = |n: usize| vec![0u8; n];
        let cases = [
            (
                npy_bytes("<f8", "(9,)", &zeros(72)),
                "a 1-D array of shape (9,): a distance matrix is 2-D",
            ),
            (
                npy_bytes("<f8", "(2, 2, 2)", &zeros(64)),
                "a 3-D array of shape (2, 2, 2)",
            ),
            (
                npy_bytes("<i8", "(2, 2)", &zeros(32)),
                "it holds `<i8` values",
            ),
            (
                npy_bytes("<f8", "(3, 3)", &zeros(40)),
                "truncated: its header declares 3 x 3 <f8 (72 bytes of data), but 40 bytes follow",
            ),
            (
                b"\x93NUMPY\x01\x00\x40".to_vec(),
                "truncated: the file ends inside its header",
            ),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (k, (bytes, expected)) in cases.iter().enumerate() {
            let e = read_matrix_bytes(Path::new("m.npy"), bytes)
                .unwrap_err()
                .to_string();
            assert!(e.contains(expected), "case {k}: {e}");
            // The same from a file.
            let path = dir.path().join(format!("{k}.npy"));
            std::fs::write(&path, bytes).unwrap();
            let e = read_matrix(&path).unwrap_err().to_string();
            assert!(e.contains(expected), "file {k}: {e}");
        }
        // Nested brackets once took the array reader's header parser seconds (found by
        // fuzzing): refused at once, in one line.
        let nested = npy_bytes_raw(
            &format!(
                "{{'descr': '<f8', 'fortran_order': {}, 'shape': (2, 2), }}",
                "[".repeat(40)
            ),
            32,
        );
        let started = std::time::Instant::now();
        let e = read_matrix_bytes(Path::new("m.npy"), &nested)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'fortran_order' is neither True nor False"),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1);
        // Generous for a busy machine: the old parser took seconds for far fewer brackets.
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        for (header, says) in [
            ("{'descr': '<f8', 'shape': (2, 2), }", "lacks one of"),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (2, x), }",
                "'shape' holds something other than sizes",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), 'extra': 1}",
                "'extra' is not one of its keys",
            ),
            ("['descr']", "it does not start with `{`"),
        ] {
            let e = read_matrix_bytes(Path::new("m.npy"), &npy_bytes_raw(header, 32))
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{header}: {e}");
        }
        let good = npy_bytes(
            "<f8",
            "(2, 2)",
            &[0.0f64, 1.0, 1.0, 0.0]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<_>>(),
        );
        assert_eq!(
            read_matrix_bytes(Path::new("m.npy"), &good)
                .unwrap()
                .matrix
                .get(0, 1),
            1.0
        );
    }
}
