//! Reading a staged run's screening table (`screen.csv`) row by row: every screening test of
//! every pair, with the stage that ran it, for the commands that need a pair's tests apart
//! (diff's noise from the pairs a run screened twice).

use std::path::Path;

use crate::RunDirError;

/// One screening test of a pair at one size, its round trips' quantiles in microseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct ScreenRow {
    /// The sweep, from 0.
    pub sweep: u32,
    /// The stage that ran it (`hosts`, `between`, `refine`, `alone`); empty in a table of one
    /// stage.
    pub stage: String,
    /// The smaller rank of the pair.
    pub i: usize,
    /// The larger rank of the pair.
    pub j: usize,
    /// The message size in bytes.
    pub size_bytes: usize,
    /// The least of its round trips (the 10th percentile in a table without `rtt_min_us`).
    pub min_us: f64,
    /// The 10th percentile of its round trips.
    pub p10_us: f64,
    /// Their median.
    pub median_us: f64,
    /// Their 90th percentile.
    pub p90_us: f64,
}

/// The columns a screening table must have.
const NEEDED: [&str; 7] = [
    "sweep",
    "i",
    "j",
    "size_bytes",
    "rtt_p10_us",
    "rtt_median_us",
    "rtt_p90_us",
];

/// Every row of the screening table at `path`, in file order.
pub fn read_screen_table(path: &Path) -> Result<Vec<ScreenRow>, RunDirError> {
    let bytes = std::fs::read(path).map_err(crate::io_error(path))?;
    parse_screen_table(&bytes).map_err(|e| RunDirError::BadFile {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Why a screening table's text cannot be read: the line (from 1) where known, and what.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{problem}", line.map(|n| format!("line {n}: ")).unwrap_or_default())]
pub struct ScreenTableError {
    /// The line, from 1 (none for the text as a whole).
    pub line: Option<usize>,
    /// What is wrong.
    pub problem: String,
}

impl ScreenTableError {
    fn at(line: Option<usize>, problem: impl Into<String>) -> Self {
        ScreenTableError {
            line,
            problem: problem.into(),
        }
    }
}

/// The rows of a screening table's text.
pub fn parse_screen_table(bytes: &[u8]) -> Result<Vec<ScreenRow>, ScreenTableError> {
    let text =
        std::str::from_utf8(bytes).map_err(|_| ScreenTableError::at(None, "not UTF-8 text"))?;
    let mut lines = text.lines().enumerate();
    let Some((_, header)) = lines.next() else {
        return Err(ScreenTableError::at(None, "empty: no header line"));
    };
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let at = |name: &str| names.iter().position(|n| *n == name);
    let mut columns = [0usize; NEEDED.len()];
    for (c, name) in columns.iter_mut().zip(NEEDED) {
        *c =
            at(name).ok_or_else(|| ScreenTableError::at(Some(1), format!("no column `{name}`")))?;
    }
    let stage = at("stage");
    let least = at("rtt_min_us");
    let mut rows = Vec::new();
    for (n, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let bad = |what: &str| ScreenTableError::at(Some(n + 1), what);
        let field = |c: usize| fields.get(c).copied().ok_or_else(|| bad("too few fields"));
        let int = |c: usize, name: &str| -> Result<usize, ScreenTableError> {
            field(c)?
                .parse::<usize>()
                .map_err(|_| bad(&format!("`{name}` is not a whole number")))
        };
        let real = |c: usize, name: &str| -> Result<f64, ScreenTableError> {
            field(c)?
                .parse::<f64>()
                .map_err(|_| bad(&format!("`{name}` is not a number")))
        };
        let (i, j) = (int(columns[1], "i")?, int(columns[2], "j")?);
        let p10_us = real(columns[4], "rtt_p10_us")?;
        rows.push(ScreenRow {
            sweep: u32::try_from(int(columns[0], "sweep")?)
                .map_err(|_| bad("`sweep` too large"))?,
            stage: match stage {
                Some(c) => field(c)?.to_string(),
                None => String::new(),
            },
            i: i.min(j),
            j: i.max(j),
            size_bytes: int(columns[3], "size_bytes")?,
            min_us: match least {
                Some(c) => real(c, "rtt_min_us")?,
                None => p10_us,
            },
            p10_us,
            median_us: real(columns[5], "rtt_median_us")?,
            p90_us: real(columns[6], "rtt_p90_us")?,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_read_by_their_header() {
        let text = "sweep,stage,i,j,size_bytes,rtt_min_us,rtt_p10_us,rtt_median_us,rtt_p90_us,\
                    rtt_mean_us,rtt_max_us,samples,warmup,outliers\n\
                    0,hosts,2,1,0,0.2,0.25,0.3,0.4,0.3,0.5,8,5,0\n\
                    0,alone,1,2,0,0.2,0.26,0.31,0.41,0.3,0.5,8,5,0\n";
        let rows = parse_screen_table(text.as_bytes()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].i, rows[0].j, rows[0].stage.as_str()),
            (1, 2, "hosts")
        );
        assert_eq!(rows[1].median_us, 0.31);
        assert_eq!((rows[0].min_us, rows[1].min_us), (0.2, 0.2));
        // A table without the least round trip takes the 10th percentile for it.
        let text = "sweep,i,j,size_bytes,rtt_p10_us,rtt_median_us,rtt_p90_us\n0,1,2,0,1,2,3\n";
        assert_eq!(parse_screen_table(text.as_bytes()).unwrap()[0].min_us, 1.0);
    }

    #[test]
    fn a_bad_table_is_named_by_line() {
        assert_eq!(
            parse_screen_table(b"sweep,i,j\n").unwrap_err().to_string(),
            "line 1: no column `size_bytes`"
        );
        let text = "sweep,i,j,size_bytes,rtt_p10_us,rtt_median_us,rtt_p90_us\n0,1,x,0,1,2,3\n";
        assert_eq!(
            parse_screen_table(text.as_bytes()).unwrap_err(),
            ScreenTableError::at(Some(2), "`j` is not a whole number")
        );
        assert!(parse_screen_table(&[0xff, 0xfe]).is_err());
    }
}
