//! One line of a CSV matrix as text: its first cell cut off, comments and blank lines told
//! apart, its separator found, a refused cell explained.

use super::*;

/// One line cut after its first cell: the first cell (a label or a number, unquoted and
/// trimmed), the text after it, and whether the line has that one cell only.
pub(super) struct SplitLine<'a> {
    /// The first cell.
    pub(super) first: String,
    /// The text after it.
    pub(super) tail: &'a str,
    /// Whether the line has no other cell.
    pub(super) one_cell: bool,
}

/// `text` cut after its first cell.
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

/// How the cells of a line are separated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Separator {
    /// Commas (CSV).
    Comma,
    /// Spaces or tabs, as `numpy.savetxt` and many tools write: a line without commas whose
    /// cells are separated by blanks.
    Blank,
}

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
