//! Reading a run's measurements table (`measurements.parquet`) row by row, for the commands
//! that need each pair's repetitions and not only the matrices (curves, diff).

use std::path::Path;

use crate::table::{ColumnValues, TableReader};
use crate::table_layout as col;
use lgate_rundir::RunDirError;

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

/// Calls `each` with every row of the measurements table at `path`, in file order; one row
/// group is held in memory at a time.
pub fn for_each_measurement(
    path: &Path,
    mut each: impl FnMut(&MeasurementRow),
) -> Result<(), RunDirError> {
    let table = TableReader::open(path)?;
    let what = "a PLogP measurements table";
    for g in 0..table.row_groups() {
        let read = table.read(
            g,
            &[
                col::SWEEP,
                col::I,
                col::J,
                col::SIZE_BYTES,
                col::PARAMETER,
                col::P10_US,
                col::MEDIAN_US,
                col::P90_US,
            ],
            what,
        )?;
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
            return Err(table.error(
                "sweep, i, j and size_bytes must be integers, parameter text and the \
                 quantiles floating point"
                    .into(),
            ));
        };
        for r in 0..sweep.len() {
            if i[r] < 0 || j[r] < 0 || size[r] < 0 || sweep[r] < 0 {
                return Err(table.error(format!("row {r} of row group {g} has a negative index")));
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
