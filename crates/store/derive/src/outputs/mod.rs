//! From the journal to the run's outputs: the measurements table, the distance matrices and
//! the report of slow ranks and pairs.

use lgate_knobs::Knob;
use lgate_matrix::DistanceMatrix;
use lgate_rundir::Pair;
use lgate_rundir::{MatrixEntry, MatrixIndex, MeasuredMask, RunDir, RunDirError};
use lgate_stats::quantile_of_sorted;
use lgate_stats::Summary;
use lgate_tables::table_layout as col;
use ndarray::Array2;
use rayon::prelude::*;

use crate::params::{Method, PairParams, Parameter};
use crate::table::{Column, Table, TableWriteError, TableWriter};
use lgate_rundir::Estimator;
use lgate_rundir::MessageSize;

/// Seconds to microseconds, the unit of every output.
const US: f64 = 1e6;

/// What to derive from the measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputOptions {
    /// Sizes of the t(m) and feature matrices.
    pub matrix_sizes: Vec<MessageSize>,
    /// The statistic that stands for a pair's value.
    pub estimator: Estimator,
    /// Also write `measurements.csv`.
    pub csv: bool,
    /// Write `measurements.parquet` (one row per pair, size and parameter).
    pub table: bool,
    /// Write the feature matrices (equations 3.5-3.6), whose cost grows as P^3.
    pub features: bool,
    /// Write `matrices/` and `report.json`, which need every pair; off, only the tables (the
    /// sampled pairs of a staged run).
    pub matrices: bool,
    /// When a staged run writes dense P x P matrices beside its host blocks.
    pub dense: DenseMatrices,
}

/// When a staged run writes dense P x P matrices (`matrices/`, 8 bytes a pair and size) beside
/// its host blocks (`hosts/`), which grow with the pairs measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DenseMatrices {
    /// Up to [`DenseMatrices::LIMIT`] ranks (131 MB a matrix there).
    #[default]
    UpToLimit,
    /// Always (`--dense`).
    Always,
}

impl DenseMatrices {
    /// The most ranks whose dense matrices a staged run writes unless asked.
    pub const LIMIT: usize = lgate_tables::DENSE_LIMIT;

    /// Whether a run of `ranks` ranks writes them.
    pub fn wanted(self, ranks: usize) -> bool {
        self == DenseMatrices::Always || ranks <= Self::LIMIT
    }
}

impl OutputOptions {
    /// The default matrix sizes: 0, 1 KiB, 64 KiB and 1 MiB, those up to `max_size`.
    pub fn default_matrix_sizes(max_size: usize) -> Vec<MessageSize> {
        [0, 1 << 10, 64 << 10, 1 << 20]
            .into_iter()
            .filter(|&m| m <= max_size)
            .map(MessageSize)
            .collect()
    }
}

impl OutputOptions {
    /// The options as the command line gives them: matrix sizes (default
    /// [`OutputOptions::default_matrix_sizes`] up to `max_size`), the estimator, CSV.
    pub fn from_flags(
        matrix_sizes: Option<Vec<MessageSize>>,
        max_size: usize,
        estimator: Estimator,
        csv: bool,
    ) -> Result<Self, OutputError> {
        Ok(OutputOptions {
            matrix_sizes: matrix_sizes.unwrap_or_else(|| Self::default_matrix_sizes(max_size)),
            estimator,
            csv,
            ..Self::default()
        })
    }
}

impl OutputOptions {
    /// The options of a ping-pong measuring `sizes` (bytes): matrix sizes as given, each of
    /// them one of `sizes` (else [`OutputError::NotMeasured`], before measuring), or by default
    /// those of [`OutputOptions::default_matrix_sizes`] among `sizes`, else the smallest and
    /// largest of `sizes`.
    pub fn from_pingpong_flags(
        matrix_sizes: Option<Vec<MessageSize>>,
        sizes: &[usize],
        estimator: Estimator,
        csv: bool,
    ) -> Result<Self, OutputError> {
        let matrix_sizes = match matrix_sizes {
            Some(asked) => {
                if let Some(&m) = asked.iter().find(|m| !sizes.contains(&m.0)) {
                    return Err(OutputError::not_measured(m, sizes));
                }
                asked
            }
            None => {
                let usual: Vec<MessageSize> = Self::default_matrix_sizes(usize::MAX)
                    .into_iter()
                    .filter(|m| sizes.contains(&m.0))
                    .collect();
                if usual.is_empty() {
                    let mut ends: Vec<MessageSize> = [sizes.iter().min(), sizes.iter().max()]
                        .into_iter()
                        .flatten()
                        .map(|&m| MessageSize(m))
                        .collect();
                    ends.dedup();
                    ends
                } else {
                    usual
                }
            }
        };
        Self::from_flags(Some(matrix_sizes), usize::MAX, estimator, csv)
    }

    /// Checks the matrix sizes against the largest size a run measures, before it measures.
    pub fn check_largest(&self, largest: usize) -> Result<(), OutputError> {
        match self.matrix_sizes.iter().find(|m| m.0 > largest) {
            Some(&size) => Err(OutputError::AboveLargest {
                size,
                largest: MessageSize(largest),
            }),
            None => Ok(()),
        }
    }
}

impl Default for OutputOptions {
    fn default() -> Self {
        OutputOptions {
            matrix_sizes: Self::default_matrix_sizes(usize::MAX),
            estimator: Estimator::Median,
            csv: false,
            table: true,
            features: true,
            matrices: true,
            dense: DenseMatrices::UpToLimit,
        }
    }
}

/// An error of deriving or writing outputs.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The run directory could not be read or written.
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    /// A journal entry is not a PLogP measurement.
    #[error("{path}: pair {i}-{j} of sweep {sweep}: {message}")]
    BadEntry {
        /// The journal.
        path: String,
        /// Sweep.
        sweep: u32,
        /// Sender.
        i: usize,
        /// Receiver.
        j: usize,
        /// What is wrong.
        message: String,
    },
    /// Pairs among the tested ranks are missing.
    #[error("the journal lacks {missing} of the {expected} pairs of the tested ranks (first: {first}); resume the run to measure them")]
    Incomplete {
        /// How many pairs are missing.
        missing: usize,
        /// How many there should be.
        expected: usize,
        /// The first missing pair.
        first: String,
    },
    /// A matrix size above the largest measured size.
    #[error("matrix size {size} is above the largest size measured for pair {pair} ({max}); lower {} or raise {}", Knob::MatrixSizes, Knob::MaxSize)]
    SizeOutOfRange {
        /// The size asked for.
        size: MessageSize,
        /// A pair lacking it.
        pair: String,
        /// That pair's largest size.
        max: MessageSize,
    },
    /// A ping-pong matrix size that is not one of the sizes measured.
    #[error("matrix size {size} was not measured (the ping-pong measured {measured}); choose {} among those or add it to {}", Knob::MatrixSizes, Knob::Sizes)]
    NotMeasured {
        /// The size asked for.
        size: MessageSize,
        /// The sizes measured, listed.
        measured: String,
    },
    /// A matrix size above the largest size a run measures.
    #[error(
        "matrix size {size} is above the largest measured size {largest}: lower {} or raise {}",
        Knob::MatrixSizes,
        Knob::MaxSize
    )]
    AboveLargest {
        /// The size asked for.
        size: MessageSize,
        /// The largest measured size.
        largest: MessageSize,
    },
    /// A pair handed to the outputs does not belong to the run.
    #[error("pair {i}-{j} of sweep {sweep}: {message}")]
    BadPair {
        /// Sweep.
        sweep: u32,
        /// Sender.
        i: usize,
        /// Receiver.
        j: usize,
        /// What is wrong.
        message: String,
    },
    /// A table could not be written.
    #[error(transparent)]
    Table(#[from] TableWriteError),
    /// Imported measurements that do not make a matrix.
    #[error("{path}: {message}")]
    Import {
        /// The file imported.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A run of a pair test this build cannot derive outputs from.
    #[error(
        "{path}: the run's pair test is `{test}`, which this build does not know (plogp, pingpong)"
    )]
    UnknownTest {
        /// meta.json.
        path: String,
        /// The test's name.
        test: String,
    },
}

/// A matrix a run writes: which value of a pair it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MatrixKind {
    /// L.
    Latency,
    /// RTT(0).
    Rtt0,
    /// t(m), equation 3.3.
    Time(usize),
    /// o_s(m), o_r(m) or g(m).
    Param(Parameter, usize),
    /// The repeat spread of t(m): the p10-p90 ranges of L, half of o_s's and o_r's, g's.
    Spread(usize),
}

impl OutputError {
    /// A ping-pong matrix size not among the `measured` sizes (bytes).
    pub fn not_measured(size: MessageSize, measured: &[usize]) -> Self {
        let mut sizes = measured.to_vec();
        sizes.sort_unstable();
        sizes.dedup();
        OutputError::NotMeasured {
            size,
            measured: sizes
                .iter()
                .map(|&m| MessageSize(m).to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

impl MatrixKind {
    /// The pair's value in microseconds (the size was checked when the pair was added).
    fn value(self, p: &PairParams, e: Estimator) -> f64 {
        US * match self {
            MatrixKind::Latency => e.of(&p.latency),
            MatrixKind::Rtt0 => e.of(&p.rtt[0]),
            MatrixKind::Time(m) => p.time(m, e).unwrap_or(0.0),
            MatrixKind::Param(q, m) => p.value(q, m, e).unwrap_or(0.0),
            MatrixKind::Spread(m) => p.repeat_spread(m),
        }
    }

    fn entry(self) -> MatrixEntry {
        match self {
            MatrixKind::Latency => entry(
                "latency",
                "L.csv",
                "latency L = (RTT(0) - 2 g(0)) / 2",
                None,
            ),
            MatrixKind::Rtt0 => entry(
                "rtt:0",
                "rtt_0.csv",
                "round-trip time of an empty message, RTT(0)",
                Some(0),
            ),
            MatrixKind::Time(m) => {
                let size = MessageSize(m);
                entry(
                    &format!("t:{size}"),
                    &format!("t_{m}.csv"),
                    &format!(
                        "t(m) = L + (o_s(m) + o_r(m)) / 2 + g(m) at m = {size} (equation 3.3)"
                    ),
                    Some(m),
                )
            }
            MatrixKind::Param(q, m) => {
                let size = MessageSize(m);
                let what = match q {
                    Parameter::Os => "send overhead o_s(m)",
                    Parameter::Or => "receive overhead o_r(m)",
                    _ => "gap g(m)",
                };
                entry(
                    &format!("{}:{size}", q.name()),
                    &format!("{}_{m}.csv", q.name()),
                    &format!("{what} at m = {size}"),
                    Some(m),
                )
            }
            MatrixKind::Spread(m) => {
                let size = MessageSize(m);
                entry(
                    &format!("spread:{size}"),
                    &format!("spread_{m}.csv"),
                    &format!(
                        "repeat spread of t(m) at m = {size}: the p10-p90 range of L's \
                         repetitions, half of o_s's and o_r's, and g's"
                    ),
                    Some(m),
                )
            }
        }
    }
}

mod builder;
mod columns;
mod write;

pub(crate) use builder::median_over_sweeps;
pub use builder::{OutputBuilder, PairValuer, PairValues};

use columns::{RawColumns, TableColumns};
use write::entry;
pub use write::{write_matrix_set, write_matrix_set_with};

#[cfg(test)]
mod tests;
