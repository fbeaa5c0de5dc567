//! The CSV reader: square matrices with or without a header row and a label column, and
//! lower triangles, with any of the usual separators, read in blocks.

use super::cells::{plain_cells, values_of_stored};
use super::number::{cell_decimal, plain_decimal, zero_bytes, ONES};
use super::*;

/// CSV is read in blocks of about this many bytes; each block's lines are parsed on every core.
pub(super) const BLOCK_BYTES: usize = 8 << 20;

/// A row's place in the file: its line, its first cell as text and its number of cells.
pub(super) struct RowInfo {
    /// The line of the file it was read from.
    pub(super) line: usize,
    /// Its first cell, as text.
    pub(super) first: String,
    /// Its cells.
    pub(super) count: usize,
    /// Empty cells (NaN) in the row's slot, counted while it was in cache.
    pub(super) nans: usize,
    /// Whether a cell of its slot is negative.
    pub(super) negative: bool,
}

/// The empty (NaN) cells of a slot, and whether one is negative: each cell looked at without a
/// branch, right after parsing, while the slot is in cache.
fn slot_stats(slot: &[f64]) -> (usize, bool) {
    slot.iter().fold((0, false), |(nans, negative), &x| {
        (nans + usize::from(x.is_nan()), negative | (x < 0.0))
    })
}

/// The rows read so far, every cell of each parsed into one row-major buffer of `width` cells a
/// row (NaN for an empty cell, a label or a missing cell; a NaN in the file is an error as soon
/// as it is read), so that the matrix is built in the same memory.
pub(super) struct CsvRows<'p> {
    pub(super) path: &'p Path,
    pub(super) width: usize,
    /// The cells of the rows read so far (the first `used`), then room allocated ahead: zeroed
    /// by the system as it is first touched, by the core that parses into it.
    pub(super) cells: Vec<f64>,
    /// How many of `cells` hold rows read.
    pub(super) used: usize,
    /// The input's size in bytes when known (0 if not), to allocate the cells once.
    pub(super) input_bytes: usize,
    pub(super) rows: Vec<RowInfo>,
    /// The first line, which may be a header.
    pub(super) first_text: Option<String>,
    /// Why the first line is not a row of numbers, if it is not: an error only if it is no header.
    pub(super) first_error: Option<ReadError>,
    /// How cells are separated, told by the first line with cells.
    pub(super) separator: Option<Separator>,
}

/// Lines of text with their numbers.
type Lines<'a> = Vec<(usize, &'a [u8])>;

impl CsvRows<'_> {
    /// Parses the cells after the first of line `line` into `out` (as far as it reaches), and
    /// returns how many there are. Plain decimals are read in one pass and stored as bits, then
    /// turned into values in a second, branch-free one (in vectors where every cell has the same
    /// number of decimals); the other cells (empty, quoted, exponents) are valued at once and
    /// put back after it.
    fn parse_cells(&self, line: usize, tail: &str, out: &mut [f64]) -> Result<usize, ReadError> {
        if let Some(c) = plain_cells(tail.as_bytes(), out) {
            return Ok(c);
        }
        let b = tail.as_bytes();
        let blank = |c: u8| c == b' ' || c == b'\t';
        let mut others: Vec<(usize, f64)> = Vec::new();
        // The plain cells' decimals, each OR-ed into one and AND-ed into the other: the same
        // in every cell when the two agree.
        let (mut any, mut all) = (0u8, u8::MAX);
        // Each cell is read between separators found eight bytes at a time, so that no cell
        // waits for the one before it to be read to know where it starts.
        let mut cell = |c: usize, start: usize, end: usize| -> Result<(), ReadError> {
            let plain = cell_decimal(b, start, end).or_else(|| {
                // Blanks around the number, a sign, a long one.
                let pos = start + b[start..end].iter().take_while(|&&x| blank(x)).count();
                plain_decimal(&b[pos..end])
                    .filter(|d| b[pos + d.len..end].iter().all(|&x| blank(x)))
            });
            match plain {
                Some(d) => {
                    if let Some(x) = out.get_mut(c) {
                        *x = f64::from_bits(d.stored());
                        any |= d.decimals;
                        all &= d.decimals;
                    }
                }
                None => {
                    let v = self.general_cell(line, c, &tail[..end], start)?;
                    if let Some(x) = out.get_mut(c) {
                        // Zero until the value is put back: a stored plain decimal meanwhile.
                        *x = 0.0;
                        others.push((c, v));
                    }
                }
            }
            Ok(())
        };
        let (mut start, mut c, mut at) = (0, 0, 0);
        while let Some(word) = b.get(at..at + 8) {
            let mut commas = zero_bytes(
                u64::from_le_bytes(word.try_into().expect("eight bytes"))
                    ^ (u64::from(b',') * ONES),
            );
            while commas != 0 {
                let end = at + (commas.trailing_zeros() / 8) as usize;
                cell(c, start, end)?;
                (c, start) = (c + 1, end + 1);
                commas &= commas - 1;
            }
            at += 8;
        }
        for (k, _) in b[at..].iter().enumerate().filter(|(_, &x)| x == b',') {
            cell(c, start, at + k)?;
            (c, start) = (c + 1, at + k + 1);
        }
        cell(c, start, b.len())?;
        let c = c + 1;
        let n = c.min(out.len());
        values_of_stored(&mut out[..n], any, all);
        for (k, v) in others {
            out[k] = v;
        }
        Ok(c)
    }

    /// The value of the cell that starts at `start` of `cell` and ends with it (cell `c` after
    /// the first of line `line`), not a plain decimal; NaN for an empty one.
    fn general_cell(
        &self,
        line: usize,
        c: usize,
        cell: &str,
        start: usize,
    ) -> Result<f64, ReadError> {
        let t = cell[start..].trim();
        // A number in quotes, as spreadsheets may write it.
        let t = t
            .strip_prefix('"')
            .and_then(|q| q.strip_suffix('"'))
            .map_or(t, str::trim);
        if t.is_empty() {
            return Ok(f64::NAN);
        }
        let v = fast_float2::parse::<f64, _>(t).map_err(|_| ReadError::NotANumber {
            path: self.path.to_path_buf(),
            line,
            column: c + 2,
            text: t.to_string(),
        })?;
        if !v.is_finite() {
            return Err(ReadError::Value {
                path: self.path.to_path_buf(),
                line,
                column: c + 2,
                problem: not_finite(&cell[start..]),
            });
        }
        Ok(v)
    }

    /// Parses one line into its slot of `width` cells, every one written (NaN past the line's
    /// end); returns its first cell and its number of cells (more than the slot holds when the
    /// line is wider).
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
        if let Some(rest) = slot.get_mut(count..) {
            rest.fill(f64::NAN);
        }
        Ok((cut.first, count))
    }

    /// Widens every row read so far to `width` cells.
    fn restride(&mut self, width: usize) {
        let old = self.width;
        let mut cells = vec![f64::NAN; self.rows.len() * width];
        for (to, from) in cells
            .chunks_mut(width)
            .zip(self.cells[..self.used].chunks(old))
        {
            to[..old].copy_from_slice(from);
        }
        for r in &mut self.rows {
            r.nans += width - old;
        }
        self.used = cells.len();
        self.cells = cells;
        self.width = width;
    }

    /// Makes room for at least `need` cells: a fresh zeroed allocation (the system zeroes its
    /// pages as they are first written, on the core that writes them) with the rows read so far
    /// copied over, as large as the rest of the input is estimated to need when its size is known
    /// (`block` lines in `block_bytes` bytes tell the bytes a line).
    fn reserve(&mut self, need: usize, block: usize, block_bytes: usize) {
        if self.cells.len() >= need {
            return;
        }
        // Lines of the whole input at this block's bytes a line, with a margin; never more cells
        // than the input has bytes (a cell takes one at least, its separator).
        let ahead = if self.input_bytes > 0 && block_bytes > 0 {
            let lines = self.input_bytes as f64 / block_bytes as f64 * block as f64;
            let cells = (lines * 1.02 + 4.0) * self.width as f64;
            (cells as usize).min(self.input_bytes + self.width)
        } else {
            0
        };
        let mut cells = crate::zeroed(need.max(ahead).max(2 * self.cells.len()));
        cells[..self.used].copy_from_slice(&self.cells[..self.used]);
        self.cells = cells;
    }

    /// Adds the lines of one block, in pieces of whole lines, whose first line is line
    /// `first_line` of the file; returns the number of lines in the block.
    fn add_block(&mut self, pieces: &[&[u8]], first_line: usize) -> Result<usize, ReadError> {
        use rayon::prelude::*;
        if self.separator.is_none() {
            self.separator = self.separator_in(pieces, first_line)?;
        }
        if self.separator == Some(Separator::Blank) {
            let mut texts = Vec::with_capacity(pieces.len());
            let mut line = first_line;
            for piece in pieces {
                texts.push(self.utf8(piece, line)?);
                line += memchr::memchr_iter(b'\n', piece).count();
            }
            let commas: Vec<String> = texts.par_iter().map(|t| blanks_to_commas(t)).collect();
            let commas: Vec<&[u8]> = commas.iter().map(String::as_bytes).collect();
            return self.add_lines(&commas, first_line);
        }
        self.add_lines(pieces, first_line)
    }

    /// `bytes` as text, or the error naming the line (`bytes` start at line `line`) where they
    /// stop being UTF-8.
    fn utf8<'b>(&self, bytes: &'b [u8], line: usize) -> Result<&'b str, ReadError> {
        std::str::from_utf8(bytes).map_err(|e| ReadError::Shape {
            path: self.path.to_path_buf(),
            line: line + memchr::memchr_iter(b'\n', &bytes[..e.valid_up_to()]).count(),
            message: "the file is neither UTF-8 text (CSV) nor a .npy array".into(),
        })
    }

    /// The separator the first line with cells among `pieces` shows, if one has cells.
    fn separator_in(
        &self,
        pieces: &[&[u8]],
        first_line: usize,
    ) -> Result<Option<Separator>, ReadError> {
        let mut line = first_line;
        for piece in pieces {
            for l in piece.split(|&b| b == b'\n') {
                if comment_or_blank(l) != Some(true) {
                    let text = self.utf8(l, line)?;
                    if !is_comment_or_blank(text) {
                        return Ok(separator_of(text));
                    }
                }
                line += 1;
            }
            // A piece ends with its line end, which split counts as one more (empty) line.
            line -= usize::from(piece.ends_with(b"\n"));
        }
        Ok(None)
    }

    /// [`CsvRows::add_block`] of comma-separated lines.
    fn add_lines(&mut self, pieces: &[&[u8]], first_line: usize) -> Result<usize, ReadError> {
        use rayon::prelude::*;
        // Each piece cut into lines on its own core; numbered after. Each line is checked to be
        // UTF-8 on the core that parses it, while it is in cache.
        let cut: Vec<(usize, Lines<'_>)> = pieces
            .par_iter()
            .map(|piece| {
                let mut lines = Vec::new();
                let mut start = 0;
                let mut count = 0;
                let ends = memchr::memchr_iter(b'\n', piece).chain(
                    // The last line may lack its line end.
                    (piece.last() != Some(&b'\n') && !piece.is_empty()).then_some(piece.len()),
                );
                for end in ends {
                    let mut l = &piece[start..end];
                    while let [rest @ .., b'\r'] = l {
                        l = rest;
                    }
                    let skip = match comment_or_blank(l) {
                        Some(known) => known,
                        None => std::str::from_utf8(l).is_ok_and(is_comment_or_blank),
                    };
                    if !skip {
                        lines.push((count, l));
                    }
                    count += 1;
                    start = end + 1;
                }
                (count, lines)
            })
            .collect();
        let mut total = 0;
        let mut lines: Lines<'_> = Vec::new();
        for (count, piece) in cut {
            lines.extend(piece.into_iter().map(|(k, l)| (first_line + total + k, l)));
            total += count;
        }
        let text_bytes: usize = pieces.iter().map(|t| t.len()).sum();
        if self.first_text.is_none() && !lines.is_empty() {
            let (line, t) = lines.remove(0);
            let t = self.utf8(t, line)?;
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
            let (nans, negative) = slot_stats(&slot);
            self.used = slot.len();
            self.cells = slot;
            self.first_text = Some(t.to_string());
            self.rows.push(RowInfo {
                line,
                first: cut.first,
                count: self.width,
                nans,
                negative,
            });
        }
        if lines.is_empty() {
            return Ok(total);
        }
        loop {
            let width = self.width;
            let base = self.used;
            let end = base + lines.len() * width;
            self.reserve(end, total, text_bytes);
            let mut cells = std::mem::take(&mut self.cells);
            let parsed: Vec<Result<RowInfo, ReadError>> = cells[base..end]
                .par_chunks_mut(width)
                .zip(&lines)
                .map(|(slot, &(line, t))| {
                    let (first, count) = self.parse_into(line, self.utf8(t, line)?, slot)?;
                    let (nans, negative) = slot_stats(slot);
                    Ok(RowInfo {
                        line,
                        first,
                        count,
                        nans,
                        negative,
                    })
                })
                .collect();
            self.cells = cells;
            let parsed = parsed.into_iter().collect::<Result<Vec<RowInfo>, _>>()?;
            let widest = parsed.iter().map(|p| p.count).max().unwrap_or(0);
            if widest > width {
                // A wider row than any before: every row is widened and the block read again.
                self.restride(widest);
                continue;
            }
            self.used = end;
            self.rows.extend(parsed);
            return Ok(total);
        }
    }
}

/// Reads CSV text (see [`read_matrix`]).
pub fn read_csv(path: &Path, text: &str) -> Result<ReadMatrix, ReadError> {
    read_csv_bytes(path, text.as_bytes())
}

/// Reads CSV from a stream in blocks, parsing each block on every core into the matrix's memory.
pub(super) fn read_csv_from(
    path: &Path,
    source: impl std::io::Read,
) -> Result<ReadMatrix, ReadError> {
    read_csv_in_blocks(path, source, BLOCK_BYTES)
}

/// UTF-8's byte-order mark.
const BOM: &[u8] = b"\xef\xbb\xbf";

impl<'p> CsvRows<'p> {
    /// No rows yet, of an input of `input_bytes` bytes (0: not known).
    fn new(path: &'p Path, input_bytes: usize) -> Self {
        CsvRows {
            path,
            width: 0,
            cells: Vec::new(),
            used: 0,
            input_bytes,
            rows: Vec::new(),
            first_text: None,
            first_error: None,
            separator: None,
        }
    }

    /// Adds a block of whole lines whose first is line `line` of the file; returns the line
    /// after the block, cut into pieces of whole lines that are split and parsed on every core.
    fn feed(&mut self, block: &[u8], line: usize) -> Result<usize, ReadError> {
        let ranges = at_line_ends(block, 4 * rayon::current_num_threads());
        let pieces: Vec<&[u8]> = ranges.into_iter().map(|r| &block[r]).collect();
        Ok(line + self.add_block(&pieces, line)?)
    }
}

/// `b` cut after a line end into about `parts` pieces of whole lines (the last may lack its
/// line end), as ranges; no piece smaller than 64 KiB but the last.
pub(super) fn at_line_ends(b: &[u8], parts: usize) -> Vec<std::ops::Range<usize>> {
    let step = (b.len() / parts.max(1)).max(1 << 16);
    let mut out = Vec::new();
    let mut start = 0;
    while start < b.len() {
        let from = (start + step).min(b.len());
        let end = b[from..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(b.len(), |k| from + k + 1);
        out.push(start..end);
        start = end;
    }
    out
}

/// Reads CSV held in memory (a file mapped into it, or bytes), in blocks of about `block_bytes`
/// cut out of it where lines end: nothing is copied but the numbers. `done(k)` is told after
/// each block that the first `k` bytes are read and will not be looked at again.
pub(super) fn read_csv_slices(
    path: &Path,
    bytes: &[u8],
    block_bytes: usize,
    done: &mut dyn FnMut(usize),
) -> Result<ReadMatrix, ReadError> {
    let bom = if bytes.starts_with(BOM) { BOM.len() } else { 0 };
    let mut rest = &bytes[bom..];
    let mut table = CsvRows::new(path, rest.len());
    let mut line = 1;
    while !rest.is_empty() {
        let from = block_bytes.min(rest.len());
        let end = match rest[from..].iter().position(|&b| b == b'\n') {
            Some(k) => from + k + 1,
            None => rest.len(),
        };
        line = table.feed(&rest[..end], line)?;
        rest = &rest[end..];
        done(bytes.len() - rest.len());
    }
    build_from_rows(table)
}

/// [`read_csv_from`] with blocks of about `block_bytes`.
pub(super) fn read_csv_in_blocks(
    path: &Path,
    mut source: impl std::io::Read,
    block_bytes: usize,
) -> Result<ReadMatrix, ReadError> {
    let io = |error| ReadError::Io {
        path: path.to_path_buf(),
        error,
    };
    let mut table = CsvRows::new(path, 0);
    let mut pending: Vec<u8> = Vec::new();
    // The file's line number of the first line in `pending`.
    let mut line = 1;
    // A byte-order mark (spreadsheets save one) is not part of the first cell.
    let mut at_start = true;
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
        if at_start && (pending.len() >= BOM.len() || eof) {
            if pending.starts_with(BOM) {
                pending.drain(..BOM.len());
            }
            at_start = false;
        }
        let end = if eof {
            pending.len()
        } else {
            match pending.iter().rposition(|&b| b == b'\n') {
                Some(k) => k + 1,
                None => continue,
            }
        };
        line = table.feed(&pending[..end], line)?;
        pending.drain(..end);
        if eof {
            break;
        }
    }
    build_from_rows(table)
}

#[cfg(test)]
mod tests {
    use super::super::cells::even_cells;
    use super::*;

    #[test]
    fn cells_read_as_the_standard_library_reads_them() {
        // Lines of random cells of every kind the reader meets (plain decimals of 1-19 digits
        // with the point anywhere or nowhere, signs, blanks around, exponents, quotes, empty
        // cells), each cell at every place of a line and near its end: every value bit for bit
        // what `str::parse` gives.
        let mut next = below(0x2545_f491_4f6c_dd1d);
        let rows = CsvRows::new(Path::new("m.csv"), 0);
        for _ in 0..20_000 {
            let cells: Vec<String> = (0..1 + next(12))
                .map(|_| {
                    let digits: String = (0..1 + next(19))
                        .map(|_| char::from(b'0' + next(10) as u8))
                        .collect();
                    let point = next(digits.len() as u64 + 2) as usize;
                    let mut cell = if point <= digits.len() && next(4) > 0 {
                        format!("{}.{}", &digits[..point], &digits[point..])
                    } else {
                        digits
                    };
                    match next(12) {
                        0 => cell.insert(0, '-'),
                        1 => cell = format!(" {cell}\t"),
                        2 => cell = format!("{cell}e-{}", next(30)),
                        3 => cell = format!("\"{cell}\""),
                        4 => cell.clear(),
                        _ => {}
                    }
                    cell
                })
                .collect();
            read_as_std(&rows, &cells);
        }
    }

    /// Numbers below `n` from a xorshift generator seeded with `seed`.
    fn below(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut x = seed;
        move |n| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        }
    }

    /// Reads `cells` joined by commas and checks every value bit for bit against `str::parse`.
    fn read_as_std(rows: &CsvRows, cells: &[String]) {
        let line = cells.join(",");
        let mut out = vec![0.0; cells.len()];
        let count = rows.parse_cells(1, &line, &mut out).unwrap();
        assert_eq!(count, cells.len(), "{line}");
        for (cell, got) in cells.iter().zip(&out) {
            let t = cell.trim().trim_matches('"');
            let want = if t.is_empty() {
                f64::NAN
            } else {
                t.parse().unwrap()
            };
            assert_eq!(got.to_bits(), want.to_bits(), "{cell:?} in {line:?}");
        }
    }

    #[test]
    fn lines_of_cells_as_wide_read_as_the_standard_library_reads_them() {
        // Lines of 1-40 cells all 1-9 bytes wide (the point anywhere or nowhere, so that the
        // decimals differ or agree), some with one cell spoilt (a sign, another width, an
        // exponent, an empty cell, a blank): values bit for bit as `str::parse` gives them, and
        // the even lines of at most eight bytes a cell read by `even_cells` itself.
        let mut next = below(0x9e37_79b9_7f4a_7c15);
        let rows = CsvRows::new(Path::new("m.csv"), 0);
        let mut even = 0;
        for _ in 0..20_000 {
            let (w, n) = (1 + next(9) as usize, 1 + next(40) as usize);
            let fixed_point = next(2) == 0;
            let point = next(w as u64 + 1) as usize;
            let mut cells: Vec<String> = (0..n)
                .map(|_| {
                    let mut cell: String =
                        (0..w).map(|_| char::from(b'0' + next(10) as u8)).collect();
                    let at = if fixed_point {
                        point
                    } else {
                        next(w as u64 + 1) as usize
                    };
                    if (1..w.saturating_sub(1) + 1).contains(&at) && w > 2 {
                        cell.replace_range(at..at + 1, ".");
                    }
                    cell
                })
                .collect();
            let spoilt = next(3) == 0;
            if spoilt {
                let k = next(n as u64) as usize;
                cells[k] = match next(5) {
                    0 => format!("-{}", cells[k]),
                    1 => format!("{}7", cells[k]),
                    2 => format!("{}e1", &cells[k][..w.saturating_sub(2).max(1)]),
                    3 => String::new(),
                    _ => format!(" {}", cells[k]),
                };
            }
            read_as_std(&rows, &cells);
            if !spoilt && w <= 8 && n >= 2 {
                let line = cells.join(",");
                let mut out = vec![0.0; n];
                assert_eq!(even_cells(line.as_bytes(), &mut out), Some(n), "{line}");
                even += 1;
            }
        }
        assert!(even > 5_000, "only {even} even lines");
    }
}
