//! The CSV reader: square matrices with or without a header row and a label column, and
//! lower triangles, with any of the usual separators, read in blocks.

use super::number::{
    cell_decimal, from_stored, from_stored_over, plain_decimal, zero_bytes, ONES, POW10,
};
use super::*;

/// CSV is read in blocks of about this many bytes; each block's lines are parsed on every core.
pub(super) const BLOCK_BYTES: usize = 8 << 20;

/// One line cut after its first cell: the first cell (a label or a number, unquoted and
/// trimmed), the text after it, and whether the line has that one cell only.
pub(super) struct SplitLine<'a> {
    first: String,
    tail: &'a str,
    one_cell: bool,
}

pub(super) fn split_first(text: &str) -> SplitLine<'_> {
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
pub(super) struct RowInfo {
    line: usize,
    first: String,
    count: usize,
    /// Empty cells (NaN) in the row's slot, counted while it was in cache.
    nans: usize,
    /// Whether a cell of its slot is negative.
    negative: bool,
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
    path: &'p Path,
    width: usize,
    /// The cells of the rows read so far (the first `used`), then room allocated ahead: zeroed
    /// by the system as it is first touched, by the core that parses into it.
    cells: Vec<f64>,
    /// How many of `cells` hold rows read.
    used: usize,
    /// The input's size in bytes when known (0 if not), to allocate the cells once.
    input_bytes: usize,
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
pub(super) enum Separator {
    /// Commas (CSV).
    Comma,
    /// Spaces or tabs, as `numpy.savetxt` and many tools write: a line without commas whose
    /// cells are separated by blanks.
    Blank,
}

/// Lines of text with their numbers.
type Lines<'a> = Vec<(usize, &'a [u8])>;

/// Whether a line's bytes are a comment or hold nothing, when its first byte that is no ASCII
/// white space tells (`None`: a line that starts with other text, for [`is_comment_or_blank`]).
pub(super) fn comment_or_blank(line: &[u8]) -> Option<bool> {
    match line.trim_ascii_start().first() {
        None | Some(b'#') => Some(true),
        Some(c) if c.is_ascii() => Some(false),
        Some(_) => None,
    }
}

/// Whether a line is a comment (`#` first) or holds nothing.
pub(super) fn is_comment_or_blank(line: &str) -> bool {
    let t = line.trim_start();
    t.is_empty() || t.starts_with('#')
}

/// A separator the tool does not take (`;` as spreadsheets in many locales write, `|`), when a
/// line of `cells` cells (one: nothing split it) holds one.
pub(crate) fn other_separator(line: &str, cells: usize) -> Option<char> {
    (cells == 1)
        .then(|| [';', '|'].into_iter().find(|&c| line.contains(c)))
        .flatten()
}

/// The separator the first line with cells in `text` shows, if there is one.
pub(super) fn separator_of(text: &str) -> Option<Separator> {
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
pub(super) fn blanks_to_commas(text: &str) -> String {
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
pub(super) fn not_finite(text: &str) -> String {
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
    /// Parses the cells after the first of line `line` into `out` (as far as it reaches), and
    /// returns how many there are. Plain decimals are read in one pass and stored as bits, then
    /// turned into values in a second, branch-free one (in vectors where every cell has the same
    /// number of decimals); the other cells (empty, quoted, exponents) are valued at once and
    /// put back after it.
    fn parse_cells(&self, line: usize, tail: &str, out: &mut [f64]) -> Result<usize, ReadError> {
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
        let read = &mut out[..n];
        if any == all {
            let divisor = POW10[usize::from(any)];
            for x in read.iter_mut() {
                *x = from_stored_over(x.to_bits(), divisor);
            }
        } else {
            for x in read.iter_mut() {
                *x = from_stored(x.to_bits());
            }
        }
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
    let shape = |line: usize, message: String| ReadError::Shape {
        path: path.to_path_buf(),
        line,
        message,
    };
    let is_number = |s: &str| s.trim().parse::<f64>().is_ok();
    let label_cell = |s: &str| !s.trim().is_empty() && !is_number(s);
    cells.truncate(used);
    let Some(first_text) = first_text else {
        return Err(shape(
            1,
            "no rows of numbers: the file is empty, or holds only comments and blank lines".into(),
        ));
    };
    let first_cells = split_csv_line(&first_text);
    if let Some(sep) = other_separator(&first_text, first_cells.len()) {
        return Err(shape(
            rows.first().map_or(1, |r| r.line),
            format!(
                "cells separated by `{sep}`: a matrix's cells are separated by commas, tabs or \
                 blanks (save it as comma-separated)"
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
    } else if let Some((i, j)) = (!known_full)
        .then(|| first_empty_off_diagonal(&values))
        .flatten()
    {
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
        known_valid,
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_read_as_the_standard_library_reads_them() {
        // Lines of random cells of every kind the reader meets (plain decimals of 1-19 digits
        // with the point anywhere or nowhere, signs, blanks around, exponents, quotes, empty
        // cells), each cell at every place of a line and near its end: every value bit for bit
        // what `str::parse` gives.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
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
    }
}
