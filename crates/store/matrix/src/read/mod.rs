//! Reading distance matrices: CSV (square, with or without a header row and a label column, or
//! the lower triangle only) and NumPy `.npy`.

use std::path::{Path, PathBuf};

use ndarray::Array2;

use crate::{DistanceMatrix, MatrixError};

mod build;
mod cells;
mod csv;
mod line;
pub(crate) use line::other_separator;
mod npy;
mod number;

use self::build::*;
pub use self::csv::read_csv;
use self::csv::*;
use self::line::*;
use self::npy::*;
#[cfg(test)]
use self::number::parse_plain_decimal;

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
    let mut file = std::fs::File::open(path).map_err(io)?;
    {
        use std::io::Read;
        let got = file.read(&mut magic).map_err(io)?;
        if got == 6 && &magic == b"\x93NUMPY" {
            return read_npy(path);
        }
    }
    // A regular file is mapped into memory and read in place, its pages brought in by the cores
    // that parse them; anything that cannot be mapped (a pipe) is read as a stream.
    // SAFETY: the map is only read, and dropped before this returns. Another process truncating
    // the file meanwhile would end this one (SIGBUS), as it would any reader of a mapped file
    // (ripgrep, numpy.memmap); one changing its bytes only changes what is read.
    if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
        let _ = map.advise(memmap2::Advice::Sequential);
        // The blocks read are let go of as the reading goes on, so that the file's pages do not
        // add to the process's memory beside the matrix.
        let mut released = 0;
        let mut done = |k: usize| {
            // SAFETY: DontNeed on a read-only file mapping only drops this process's view of
            // the pages (the page cache keeps them); touched again, they are read from the file.
            // Nothing read from these bytes is borrowed past the block that held them.
            let _ = unsafe {
                map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    released,
                    k - released,
                )
            };
            released = k;
        };
        return read_csv_slices(path, &map, BLOCK_BYTES, &mut done);
    }
    use std::io::Seek;
    file.rewind().map_err(io)?;
    read_csv_from(path, file)
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

/// Reads CSV from memory, in place.
fn read_csv_bytes(path: &Path, bytes: &[u8]) -> Result<ReadMatrix, ReadError> {
    read_csv_slices(path, bytes, BLOCK_BYTES, &mut |_| {})
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
            // Alone, and followed by more of a line.
            for text in [s.clone(), format!("{s},0.123456,7"), format!("{s}/{s}:")] {
                match parse_plain_decimal(text.as_bytes()) {
                    Some((got, len)) => {
                        assert_eq!(got.to_bits(), want.to_bits(), "{text}");
                        assert_eq!(len, s.len(), "{text}");
                    }
                    None => assert!(
                        s.bytes().filter(u8::is_ascii_digit).count() > 15,
                        "{text} left to the general parser"
                    ),
                }
            }
        }
        // Every byte after a run of digits ends it, however long the run.
        for stop in (0..=255u8).filter(|b| !b.is_ascii_digit() && !b"eE.".contains(b)) {
            for k in 1..12 {
                let mut text = "7".repeat(k).into_bytes();
                text.push(stop);
                text.extend_from_slice(b"12345678");
                let want: f64 = "7".repeat(k).parse().unwrap();
                assert_eq!(parse_plain_decimal(&text), Some((want, k)), "{text:?}");
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
                let part = read_csv_slices(Path::new("m.csv"), text.as_bytes(), block, &mut |_| {});
                assert_eq!(format!("{part:?}"), whole, "{text:?} in slices of {block}");
            }
        }
        let m = read_csv(Path::new("m.csv"), texts[2]).unwrap();
        assert_eq!(m.matrix.labels(), ["x", "y", "z"]);
        assert_eq!(m.matrix.get(2, 1), 3.0);
    }

    #[test]
    fn large_inputs_read_in_pieces_as_in_one() {
        // Over 64 KiB a block is cut into pieces checked and split on every core: the rows,
        // line numbers and errors are those of one piece.
        let n = 300;
        let mut text = String::new();
        for i in 0..n {
            if i == 150 {
                text.push_str("# a comment in the middle\n\n");
            }
            let row: Vec<String> = (0..n)
                .map(|j| format!("{:.3}", (i as f64 - j as f64).abs()))
                .collect();
            text.push_str(&row.join(","));
            text.push_str(if i % 7 == 0 { "\r\n" } else { "\n" });
        }
        assert!(text.len() > 4 << 16);
        let path = Path::new("m.csv");
        let streamed = read_csv_in_blocks(path, text.as_bytes(), 1 << 20).unwrap();
        let mapped = read_csv_slices(path, text.as_bytes(), BLOCK_BYTES, &mut |_| {}).unwrap();
        assert_eq!(format!("{mapped:?}"), format!("{streamed:?}"));
        assert_eq!(mapped.matrix.get(299, 0), 299.0);
        // A byte that is no UTF-8 on line 251 (row 249 after the comment and blank line).
        let mut bytes = text.into_bytes();
        let at = bytes
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'\n')
            .nth(249)
            .map(|(k, _)| k + 3)
            .unwrap();
        bytes[at] = 0xff;
        for e in [
            read_csv_slices(path, &bytes, BLOCK_BYTES, &mut |_| {}).unwrap_err(),
            read_csv_in_blocks(path, &bytes[..], 1 << 20).unwrap_err(),
        ] {
            assert!(matches!(e, ReadError::Shape { line: 251, .. }), "{e}");
        }
    }

    #[test]
    fn pieces_cut_at_line_ends_cover_the_input() {
        let text: Vec<u8> = (0..200_000u32)
            .map(|k| if k % 997 == 0 { b'\n' } else { b'1' })
            .collect();
        for parts in [1, 2, 3, 8, 100] {
            let pieces = csv::at_line_ends(&text, parts);
            assert_eq!(pieces.first().map(|r| r.start), Some(0));
            assert_eq!(pieces.last().map(|r| r.end), Some(text.len()));
            for w in pieces.windows(2) {
                assert_eq!(w[0].end, w[1].start);
                assert_eq!(text[w[0].end - 1], b'\n');
            }
        }
        assert!(csv::at_line_ends(b"", 4).is_empty());
    }

    #[test]
    fn a_byte_order_mark_is_left_out_in_blocks_of_any_size() {
        let plain = "0,1,5\n1,0,5\n5,5,0\n";
        let whole = format!("{:?}", read_csv(Path::new("m.csv"), plain));
        let marked = format!("\u{feff}{plain}");
        for block in [1, 2, 3, 5, 64] {
            let part = read_csv_in_blocks(Path::new("m.csv"), marked.as_bytes(), block);
            assert_eq!(format!("{part:?}"), whole, "blocks of {block}");
            let part = read_csv_slices(Path::new("m.csv"), marked.as_bytes(), block, &mut |_| {});
            assert_eq!(format!("{part:?}"), whole, "slices of {block}");
        }
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
