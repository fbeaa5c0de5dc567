//! The .npy reader: NumPy's format, float64 or float32, C or Fortran order, checked before the
//! data is read.

use super::*;

pub(super) fn read_npy(path: &Path) -> Result<ReadMatrix, ReadError> {
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
pub(super) const NPY_HEAD_BYTES: u64 = 64 << 10;

/// Reads a `.npy` array of f64 (or f32) from the reader `open` gives (called once per type);
/// `head` gives the file's first bytes and length, whose header is checked first.
pub(super) fn read_npy_from<R: std::io::Read>(
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
        false,
    )
}

/// Checks a `.npy` file's header, from its first bytes and its length, before the array reader
/// sees it: a header that is not the flat dictionary NumPy writes, an array that is not 2-D
/// float64 or float32, or data cut short, is refused here in words a user can act on. (The
/// array reader's own header parser takes time exponential in nested brackets: 6 s for a
/// 136-byte header; this one is linear.)
pub(super) fn check_npy_header(bytes: &[u8], len: u64) -> Result<(), String> {
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
pub(super) struct NpyHeader {
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
pub(super) fn eat(token: &str, rest: &mut &str) -> bool {
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
pub(super) fn quoted<'a>(rest: &mut &'a str) -> Option<&'a str> {
    let t = rest.trim_start();
    let q = t.chars().next().filter(|&c| c == '\'' || c == '"')?;
    let end = t[1..].find(q)? + 1;
    *rest = t[end + 1..].trim_start();
    Some(&t[1..end])
}
