//! Reading a run's measurements table (`measurements.parquet`) row by row, for the commands
//! that need each pair's repetitions and not only the matrices (curves, diff).

use std::path::Path;

use parquet::column::reader::ColumnReader;
use parquet::file::reader::{FileReader, RowGroupReader, SerializedFileReader};

use crate::table_layout as col;
use crate::RunDirError;

/// One row of a measurements table: a pair, sweep, size and parameter, and the quantiles of
/// its repetitions in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeasurementRow<'a> {
    /// The sweep, from 0.
    pub sweep: u32,
    /// The smaller rank of the pair.
    pub i: usize,
    /// The larger rank of the pair.
    pub j: usize,
    /// The message size in bytes (0 for L).
    pub size_bytes: usize,
    /// `rtt`, `os`, `or`, `g` or `L`.
    pub parameter: &'a str,
    /// The 10th percentile of the repetitions.
    pub p10_us: f64,
    /// The median of the repetitions.
    pub median_us: f64,
    /// The 90th percentile of the repetitions.
    pub p90_us: f64,
}

enum ColumnValues {
    Int(Vec<i64>),
    Float(Vec<f64>),
    Text(Vec<String>),
}

/// One column of a row group, whole.
fn column(group: &dyn RowGroupReader, index: usize, rows: usize) -> Result<ColumnValues, String> {
    let reader = group.get_column_reader(index).map_err(|e| e.to_string())?;
    let e = |e: parquet::errors::ParquetError| e.to_string();
    Ok(match reader {
        ColumnReader::Int32ColumnReader(mut r) => {
            let mut v = Vec::with_capacity(rows);
            r.read_records(rows, None, None, &mut v).map_err(e)?;
            ColumnValues::Int(v.into_iter().map(i64::from).collect())
        }
        ColumnReader::Int64ColumnReader(mut r) => {
            let mut v = Vec::with_capacity(rows);
            r.read_records(rows, None, None, &mut v).map_err(e)?;
            ColumnValues::Int(v)
        }
        ColumnReader::DoubleColumnReader(mut r) => {
            let mut v = Vec::with_capacity(rows);
            r.read_records(rows, None, None, &mut v).map_err(e)?;
            ColumnValues::Float(v)
        }
        ColumnReader::ByteArrayColumnReader(mut r) => {
            let mut v = Vec::with_capacity(rows);
            r.read_records(rows, None, None, &mut v).map_err(e)?;
            ColumnValues::Text(
                v.into_iter()
                    .map(|b| String::from_utf8_lossy(b.data()).into_owned())
                    .collect(),
            )
        }
        _ => return Err(format!("column {index} has an unexpected type")),
    })
}

/// Calls `each` with every row of the measurements table at `path`, in file order; one row
/// group is held in memory at a time.
pub fn for_each_measurement(
    path: &Path,
    mut each: impl FnMut(&MeasurementRow),
) -> Result<(), RunDirError> {
    let bad = |message: String| RunDirError::BadFile {
        path: path.to_path_buf(),
        message,
    };
    let file = std::fs::File::open(path).map_err(crate::io_error(path))?;
    let reader = SerializedFileReader::new(file).map_err(|e| bad(e.to_string()))?;
    let names: Vec<String> = reader
        .metadata()
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    let at = |name: &str| {
        names.iter().position(|n| n == name).ok_or_else(|| {
            bad(format!(
                "no column `{name}`: not a PLogP measurements table"
            ))
        })
    };
    let cols = [
        at(col::SWEEP)?,
        at(col::I)?,
        at(col::J)?,
        at(col::SIZE_BYTES)?,
        at(col::PARAMETER)?,
        at(col::P10_US)?,
        at(col::MEDIAN_US)?,
        at(col::P90_US)?,
    ];
    for g in 0..reader.num_row_groups() {
        let group = reader.get_row_group(g).map_err(|e| bad(e.to_string()))?;
        let rows = group.metadata().num_rows() as usize;
        let mut read = Vec::with_capacity(cols.len());
        for &c in &cols {
            read.push(column(group.as_ref(), c, rows).map_err(&bad)?);
        }
        let mut read = read.into_iter();
        let (
            Some(ColumnValues::Int(sweep)),
            Some(ColumnValues::Int(i)),
            Some(ColumnValues::Int(j)),
            Some(ColumnValues::Int(size)),
            Some(ColumnValues::Text(parameter)),
            Some(ColumnValues::Float(p10)),
            Some(ColumnValues::Float(median)),
            Some(ColumnValues::Float(p90)),
        ) = (
            read.next(),
            read.next(),
            read.next(),
            read.next(),
            read.next(),
            read.next(),
            read.next(),
            read.next(),
        )
        else {
            return Err(bad(
                "sweep, i, j and size_bytes must be integers, parameter text and the \
                 quantiles floating point"
                    .into(),
            ));
        };
        for r in 0..rows {
            if i[r] < 0 || j[r] < 0 || size[r] < 0 || sweep[r] < 0 {
                return Err(bad(format!(
                    "row {r} of row group {g} has a negative index"
                )));
            }
            each(&MeasurementRow {
                sweep: sweep[r] as u32,
                i: i[r] as usize,
                j: j[r] as usize,
                size_bytes: size[r] as usize,
                parameter: &parameter[r],
                p10_us: p10[r],
                median_us: median[r],
                p90_us: p90[r],
            });
        }
    }
    Ok(())
}
