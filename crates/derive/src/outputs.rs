//! From the journal to the run's outputs: the measurements table, the distance matrices and
//! the report of slow ranks and pairs.

use lgate_matrix::DistanceMatrix;
use lgate_rundir::table_layout as col;
use lgate_rundir::Pair;
use lgate_rundir::{MatrixEntry, MatrixIndex, MeasuredMask, RunDir, RunDirError};
use lgate_stats::quantile_of_sorted;
use lgate_stats::Summary;
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
    pub const LIMIT: usize = lgate_rundir::DENSE_LIMIT;

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
    #[error("matrix size {size} is above the largest size measured for pair {pair} ({max}); lower --matrix-sizes or raise --max-size")]
    SizeOutOfRange {
        /// The size asked for.
        size: MessageSize,
        /// A pair lacking it.
        pair: String,
        /// That pair's largest size.
        max: MessageSize,
    },
    /// A ping-pong matrix size that is not one of the sizes measured.
    #[error("matrix size {size} was not measured (the ping-pong measured {measured}); choose --matrix-sizes among those or add it to --sizes")]
    NotMeasured {
        /// The size asked for.
        size: MessageSize,
        /// The sizes measured, listed.
        measured: String,
    },
    /// A matrix size above the largest size a run measures.
    #[error("matrix size {size} is above the largest measured size {largest}: lower --matrix-sizes or raise --max-size")]
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

/// What one pair contributes to the matrices and the report.
#[derive(Debug, Clone, PartialEq)]
pub struct PairValues {
    pair: Pair,
    sweep: u32,
    matrices: Vec<f64>,
    /// Per matrix size: the repeat spread and t(m), microseconds.
    per_size: Vec<(f64, f64)>,
    latency_not_positive: bool,
    converged: bool,
}

/// Turns a pair's parameters into what it contributes to a run's outputs.
#[derive(Debug, Clone)]
pub struct PairValuer {
    options: OutputOptions,
    kinds: Vec<MatrixKind>,
}

impl PairValuer {
    /// What one pair contributes to the matrices and the report.
    pub fn values_of(&self, p: &PairParams) -> Result<PairValues, OutputError> {
        for &size in &self.options.matrix_sizes {
            if p.max_size() < size.0 {
                return Err(OutputError::SizeOutOfRange {
                    size,
                    pair: format!("{}-{}", p.pair.i, p.pair.j),
                    max: MessageSize(p.max_size()),
                });
            }
        }
        let e = self.options.estimator;
        let mut per_size = Vec::with_capacity(self.options.matrix_sizes.len());
        for size in &self.options.matrix_sizes {
            per_size.push((
                p.repeat_spread(size.0) * US,
                p.time(size.0, e).unwrap_or(0.0) * US,
            ));
        }
        Ok(PairValues {
            pair: p.pair,
            sweep: p.sweep,
            matrices: self.kinds.iter().map(|k| k.value(p, e)).collect(),
            per_size,
            latency_not_positive: p.latency.median <= 0.0,
            converged: p.saturation_converged,
        })
    }
}

/// Rows of the measurements table gathered before they are written as one row group.
const TABLE_CHUNK_ROWS: usize = 1 << 20;

/// Marks a rank that is not among the tested ones.
const UNTESTED: usize = usize::MAX;

/// The outputs of a run, built from pair parameters handed in one at a time, so that no more
/// than the matrices themselves is held however many pairs there are.
pub struct OutputBuilder {
    run: RunDir,
    options: OutputOptions,
    ranks: Vec<usize>,
    position: Vec<usize>,
    sweeps: Vec<u32>,
    kinds: Vec<MatrixKind>,
    valuer: PairValuer,
    /// Per kind, per sweep: the pair values.
    values: Vec<Vec<Array2<f64>>>,
    /// Per sweep: which pairs were added (upper triangle).
    filled: Vec<Vec<bool>>,
    table: Option<TableWriter>,
    rows: TableColumns,
    raw: Option<(TableWriter, RawColumns)>,
    /// Per matrix size: each pair's repeat spread, and its t(m).
    repeat: Vec<Vec<f64>>,
    times: Vec<Vec<f64>>,
    not_positive: Vec<lgate_rundir::report::SweepPairRef>,
    unconverged: usize,
    pairs: usize,
    written: Vec<String>,
}

impl OutputBuilder {
    /// Starts the outputs of a run over `ranks` (ascending: the rows of the matrices) measured
    /// in `sweeps`.
    pub fn new(
        run: &RunDir,
        ranks: Vec<usize>,
        sweeps: Vec<u32>,
        options: &OutputOptions,
    ) -> Result<Self, OutputError> {
        let n = ranks.len();
        let mut position = vec![UNTESTED; ranks.iter().max().map_or(0, |&r| r + 1)];
        for (k, &r) in ranks.iter().enumerate() {
            position[r] = k;
        }
        let mut kinds = vec![MatrixKind::Latency, MatrixKind::Rtt0];
        kinds.extend(options.matrix_sizes.iter().map(|s| MatrixKind::Time(s.0)));
        for s in &options.matrix_sizes {
            for q in [Parameter::Os, Parameter::Or, Parameter::G] {
                kinds.push(MatrixKind::Param(q, s.0));
            }
        }
        kinds.extend(options.matrix_sizes.iter().map(|s| MatrixKind::Spread(s.0)));
        let values = kinds
            .iter()
            .map(|_| sweeps.iter().map(|_| Array2::zeros((n, n))).collect())
            .collect();
        let mut written = Vec::new();
        let table = if options.table {
            let csv = if options.csv {
                written.push(col::MEASUREMENTS_CSV_FILE.to_string());
                Some(run.create_file(col::MEASUREMENTS_CSV_FILE)?)
            } else {
                None
            };
            written.insert(0, col::MEASUREMENTS_FILE.to_string());
            Some(TableWriter::new(
                &TableColumns::default().into_table(),
                run.create_file(col::MEASUREMENTS_FILE)?,
                csv,
            )?)
        } else {
            None
        };
        let sizes = options.matrix_sizes.len();
        Ok(OutputBuilder {
            run: run.clone(),
            options: options.clone(),
            ranks,
            position,
            filled: sweeps.iter().map(|_| vec![false; n * n]).collect(),
            sweeps,
            valuer: PairValuer {
                options: options.clone(),
                kinds: kinds.clone(),
            },
            kinds,
            values,
            table,
            rows: TableColumns::default(),
            raw: None,
            repeat: vec![Vec::new(); sizes],
            times: vec![Vec::new(); sizes],
            not_positive: Vec::new(),
            unconverged: 0,
            pairs: 0,
            written,
        })
    }

    /// Adds one pair's parameters in one sweep.
    pub fn add(&mut self, p: &PairParams) -> Result<(), OutputError> {
        let values = self.valuer.values_of(p)?;
        self.add_values(values, Some(p))
    }

    /// What turns pair parameters into [`PairValues`], apart from the builder, so that many
    /// pairs can be prepared in parallel while the builder takes others.
    pub fn valuer(&self) -> PairValuer {
        self.valuer.clone()
    }

    /// Whether [`OutputBuilder::add_values`] needs the pair's parameters (for the
    /// measurements table).
    pub fn needs_params(&self) -> bool {
        self.table.is_some()
    }

    /// Adds one pair with the values [`PairValuer::values_of`] gave for it; `params` are its
    /// parameters, needed when [`OutputBuilder::needs_params`].
    pub fn add_values(
        &mut self,
        values: PairValues,
        params: Option<&PairParams>,
    ) -> Result<(), OutputError> {
        let (pair, sweep) = (values.pair, values.sweep);
        let bad = |message: String| OutputError::BadPair {
            sweep,
            i: pair.i,
            j: pair.j,
            message,
        };
        let at = |r: usize| self.position.get(r).copied().filter(|&k| k != UNTESTED);
        let (Some(a), Some(b)) = (at(pair.i), at(pair.j)) else {
            return Err(bad("a rank outside the tested ones".into()));
        };
        let Some(s) = self.sweeps.iter().position(|&s| s == sweep) else {
            return Err(bad("a sweep outside the run's".into()));
        };
        // The upper triangle only: rows stay in cache; `finish` mirrors it.
        let (a, b) = (a.min(b), a.max(b));
        for (k, x) in values.matrices.into_iter().enumerate() {
            self.values[k][s][[a, b]] = x;
        }
        let n = self.ranks.len();
        self.filled[s][a * n + b] = true;
        for (q, (repeat, time)) in values.per_size.into_iter().enumerate() {
            self.repeat[q].push(repeat);
            self.times[q].push(time);
        }
        if values.latency_not_positive {
            self.not_positive.push(lgate_rundir::report::SweepPairRef {
                i: pair.i,
                j: pair.j,
                sweep,
            });
        }
        self.unconverged += usize::from(!values.converged);
        self.pairs += 1;
        if let Some(table) = &mut self.table {
            let p = params
                .ok_or_else(|| bad("the measurements table needs the pair's parameters".into()))?;
            self.rows.push_pair(p);
            if self.rows.len() >= TABLE_CHUNK_ROWS {
                table.write(&std::mem::take(&mut self.rows).into_table())?;
            }
        }
        Ok(())
    }

    /// Adds the raw repetitions of one parameter of a pair at one size.
    pub fn add_raw(
        &mut self,
        sweep: u32,
        pair: Pair,
        size: usize,
        parameter: Parameter,
        samples: &[f64],
    ) -> Result<(), OutputError> {
        if self.raw.is_none() {
            let csv = if self.options.csv {
                Some(self.run.create_file(lgate_rundir::files::RAW_CSV_FILE)?)
            } else {
                None
            };
            let writer = TableWriter::new(
                &RawColumns::default().into_table(),
                self.run.create_file(col::RAW_FILE)?,
                csv,
            )?;
            self.written.push(col::RAW_FILE.to_string());
            if self.options.csv {
                self.written
                    .push(lgate_rundir::files::RAW_CSV_FILE.to_string());
            }
            self.raw = Some((writer, RawColumns::default()));
        }
        let (writer, rows) = self.raw.as_mut().expect("created above");
        rows.push(sweep, pair, size, parameter, samples);
        if rows.key.len() >= TABLE_CHUNK_ROWS {
            writer.write(&std::mem::take(rows).into_table())?;
        }
        Ok(())
    }

    /// Writes the rows still held and closes the tables.
    fn write_tables(&mut self) -> Result<(), OutputError> {
        if let Some(mut table) = self.table.take() {
            table.write(&std::mem::take(&mut self.rows).into_table())?;
            table.finish()?;
        }
        if let Some((mut writer, rows)) = self.raw.take() {
            writer.write(&rows.into_table())?;
            writer.finish()?;
        }
        Ok(())
    }

    /// Checks that every pair of every sweep was added, then writes the tables, `matrices/`
    /// and `report.json`; returns the names written.
    pub fn finish(mut self) -> Result<Vec<String>, OutputError> {
        if !self.options.matrices {
            self.write_tables()?;
            return Ok(self.written);
        }
        let n = self.ranks.len();
        let expected = self.sweeps.len() * n * n.saturating_sub(1) / 2;
        let mut missing = 0;
        let mut first = None;
        for (s, filled) in self.filled.iter().enumerate() {
            for a in 0..n {
                for b in a + 1..n {
                    if !filled[a * n + b] {
                        missing += 1;
                        first.get_or_insert((self.sweeps[s], self.ranks[a], self.ranks[b]));
                    }
                }
            }
        }
        if let Some((s, x, y)) = first {
            return Err(OutputError::Incomplete {
                missing,
                expected,
                first: format!("{x}-{y} of sweep {s}"),
            });
        }
        self.write_tables()?;

        let labels: Vec<String> = self.ranks.iter().map(|r| r.to_string()).collect();
        let matrices: Vec<(MatrixKind, DistanceMatrix)> = std::mem::take(&mut self.values)
            .into_iter()
            .zip(&self.kinds)
            .map(|(per_sweep, &kind)| (kind, median_over_sweeps(per_sweep, &labels)))
            .collect();
        let find = |kind: MatrixKind| {
            &matrices
                .iter()
                .find(|(k, _)| *k == kind)
                .expect("every kind is built")
                .1
        };
        let mut features = Vec::new();
        for &size in self
            .options
            .matrix_sizes
            .iter()
            .filter(|_| self.options.features)
        {
            let m = size.0;
            let parts = [
                find(MatrixKind::Latency),
                find(MatrixKind::Param(Parameter::Os, m)),
                find(MatrixKind::Param(Parameter::Or, m)),
                find(MatrixKind::Param(Parameter::G, m)),
            ];
            features.push((
                entry(
                    &format!("features:{size}"),
                    &format!("features_{m}.csv"),
                    &format!("Euclidean distance between the ranks' (L, o_s, o_r, g) vectors at m = {size} (equations 3.5-3.6)"),
                    Some(m),
                ),
                feature_distances(parts, &labels),
            ));
        }
        let all: Vec<(MatrixEntry, &DistanceMatrix)> = matrices
            .iter()
            .map(|(k, m)| (k.entry(), m))
            .chain(features.iter().map(|(e, m)| (e.clone(), m)))
            .collect();
        write_matrix_set(&self.run, self.options.estimator, &all)?;
        self.written.push("matrices/".to_string());

        let (placement, hosts) = self
            .run
            .read_meta()
            .map(|m| (m.ranks, m.hosts))
            .unwrap_or_default();
        let times: Vec<(MessageSize, &DistanceMatrix)> = self
            .options
            .matrix_sizes
            .iter()
            .map(|&s| (s, find(MatrixKind::Time(s.0))))
            .collect();
        let spread_matrices: Vec<(MessageSize, &DistanceMatrix)> = self
            .options
            .matrix_sizes
            .iter()
            .map(|&s| (s, find(MatrixKind::Spread(s.0))))
            .collect();
        let spreads = self
            .options
            .matrix_sizes
            .iter()
            .zip(self.repeat.iter_mut().zip(self.times.iter_mut()))
            .map(|(&size, (repeat, times))| crate::report::Spread::of(size, repeat, times))
            .collect();
        let report = crate::report::report(&crate::report::ReportInputs {
            ranks: &self.ranks,
            placement: &placement,
            hosts: &hosts,
            estimator: self.options.estimator,
            latency: find(MatrixKind::Latency),
            times,
            spreads,
            spread_matrices,
            pairs: self.pairs,
            not_positive: std::mem::take(&mut self.not_positive),
            unconverged: self.unconverged,
        });
        let report = lgate_rundir::Report::Health(report);
        self.run.write_file(
            lgate_rundir::files::REPORT_FILE,
            report.to_json().as_bytes(),
        )?;
        self.written
            .push(lgate_rundir::files::REPORT_FILE.to_string());
        Ok(self.written)
    }
}

/// The element-wise median of the sweeps' matrices.
pub(crate) fn median_over_sweeps(
    mut per_sweep: Vec<Array2<f64>>,
    labels: &[String],
) -> DistanceMatrix {
    let mut values = if per_sweep.len() == 1 {
        per_sweep.pop().expect("one sweep")
    } else {
        let (n, _) = per_sweep[0].dim();
        let mut v = vec![0.0; per_sweep.len()];
        Array2::from_shape_fn((n, n), |ij| {
            for (x, m) in v.iter_mut().zip(&per_sweep) {
                *x = m[ij];
            }
            v.sort_by(f64::total_cmp);
            quantile_of_sorted(&v, 0.5)
        })
    };
    mirror_upper(&mut values);
    DistanceMatrix::new(values, Some(labels.to_vec()))
        .expect("finite, non-negative, square by construction")
}

/// Copies the upper triangle onto the lower one, in tiles that stay in cache.
fn mirror_upper(m: &mut Array2<f64>) {
    const TILE: usize = 64;
    let n = m.nrows();
    for ti in (0..n).step_by(TILE) {
        for tj in (ti..n).step_by(TILE) {
            for i in ti..(ti + TILE).min(n) {
                for j in tj.max(i + 1)..(tj + TILE).min(n) {
                    m[[j, i]] = m[[i, j]];
                }
            }
        }
    }
}

/// Equations 3.5-3.6: the Euclidean distance between the ranks' vectors of
/// (L, o_s(m), o_r(m), g(m)) towards every rank, in microseconds.
///
/// A rank's entry towards itself, which is not measured, is the least value of its row for
/// each parameter (no rank is nearer to it than its nearest peer), so every rank has one
/// fixed vector and the result is a metric.
fn feature_distances(parts: [&DistanceMatrix; 4], labels: &[String]) -> DistanceMatrix {
    let n = labels.len();
    // |x - y|^2 = |x|^2 + |y|^2 - 2 x.y, through one matrix product per parameter.
    let mut gram = Array2::<f64>::zeros((n, n));
    for m in parts {
        let mut v = m.values().clone();
        for i in 0..n {
            let row_min = (0..n)
                .filter(|&k| k != i)
                .map(|k| v[[i, k]])
                .fold(f64::INFINITY, f64::min);
            v[[i, i]] = if row_min.is_finite() { row_min } else { 0.0 };
        }
        gram += &v.dot(&v.t());
    }
    let d = Array2::from_shape_fn((n, n), |(i, j)| {
        let (a, b) = (i.min(j), i.max(j));
        if a == b {
            0.0
        } else {
            (gram[[a, a]] + gram[[b, b]] - 2.0 * gram[[a, b]])
                .max(0.0)
                .sqrt()
        }
    });
    DistanceMatrix::new(d, Some(labels.to_vec()))
        .expect("finite, non-negative, square by construction")
}

/// The columns both tables start with: which pair, sweep, size and parameter a row is about.
#[derive(Default)]
struct KeyColumns {
    sweep: Vec<i32>,
    i: Vec<i32>,
    j: Vec<i32>,
    size: Vec<i64>,
    parameter: Vec<&'static str>,
}

impl KeyColumns {
    fn push(&mut self, sweep: u32, pair: Pair, size: usize, p: Parameter) {
        self.sweep.push(sweep as i32);
        self.i.push(pair.i as i32);
        self.j.push(pair.j as i32);
        self.size.push(size as i64);
        self.parameter.push(p.name());
    }

    fn len(&self) -> usize {
        self.sweep.len()
    }

    fn into_table(self) -> Table {
        Table::new()
            .with(col::SWEEP, Column::Int32(self.sweep))
            .with(col::I, Column::Int32(self.i))
            .with(col::J, Column::Int32(self.j))
            .with(col::SIZE_BYTES, Column::Int64(self.size))
            .with(col::PARAMETER, Column::Symbol(self.parameter))
    }
}

/// Columns of the measurements table: one row per pair, sweep, size and parameter (L once
/// per pair).
#[derive(Default)]
struct TableColumns {
    key: KeyColumns,
    method: Vec<&'static str>,
    stats: [Vec<f64>; 6],
    count: Vec<i32>,
    warmup: Vec<i32>,
    outliers: Vec<i32>,
}

impl TableColumns {
    fn len(&self) -> usize {
        self.key.len()
    }

    fn push_pair(&mut self, p: &PairParams) {
        for (k, &size) in p.sizes.iter().enumerate() {
            for param in [Parameter::Rtt, Parameter::Os, Parameter::Or, Parameter::G] {
                let method = match param {
                    Parameter::G => p.g[k].1,
                    _ => Method::Measured,
                };
                self.push(p, size, param, method, p.stats(param, k));
            }
        }
        self.push(p, 0, Parameter::L, Method::Derived, &p.latency);
    }

    fn push(&mut self, p: &PairParams, size: usize, param: Parameter, method: Method, s: &Summary) {
        self.key.push(p.sweep, p.pair, size, param);
        self.method.push(method.name());
        for (k, x) in [s.min, s.p10, s.median, s.p90, s.mean, s.max]
            .into_iter()
            .enumerate()
        {
            self.stats[k].push(x * US);
        }
        self.count.push(s.count as i32);
        self.warmup.push(s.warmup as i32);
        self.outliers.push(s.outliers as i32);
    }

    fn into_table(self) -> Table {
        let [min, p10, median, p90, mean, max] = self.stats;
        self.key
            .into_table()
            .with(col::METHOD, Column::Symbol(self.method))
            .with(col::MIN_US, Column::Float64(min))
            .with(col::P10_US, Column::Float64(p10))
            .with(col::MEDIAN_US, Column::Float64(median))
            .with(col::P90_US, Column::Float64(p90))
            .with(col::MEAN_US, Column::Float64(mean))
            .with(col::MAX_US, Column::Float64(max))
            .with(col::SAMPLES, Column::Int32(self.count))
            .with(col::WARMUP, Column::Int32(self.warmup))
            .with(col::OUTLIERS, Column::Int32(self.outliers))
    }
}

/// Columns of the raw table: one row per pair, sweep, size, parameter and repetition.
#[derive(Default)]
struct RawColumns {
    key: KeyColumns,
    repetition: Vec<i32>,
    value: Vec<f64>,
}

impl RawColumns {
    fn push(&mut self, sweep: u32, pair: Pair, size: usize, p: Parameter, samples: &[f64]) {
        for (k, &x) in samples.iter().enumerate() {
            self.key.push(sweep, pair, size, p);
            self.repetition.push(k as i32);
            self.value.push(x * US);
        }
    }

    fn into_table(self) -> Table {
        self.key
            .into_table()
            .with(col::REPETITION, Column::Int32(self.repetition))
            .with(col::VALUE_US, Column::Float64(self.value))
    }
}

fn entry(name: &str, file: &str, description: &str, size: Option<usize>) -> MatrixEntry {
    MatrixEntry::in_us(name, file, description, size)
}

/// Writes a run's distance matrices into `matrices/`, several files at once, and their index
/// `matrices/index.json`: every pair test's matrices go through here.
pub fn write_matrix_set(
    run: &RunDir,
    estimator: Estimator,
    matrices: &[(MatrixEntry, &DistanceMatrix)],
) -> Result<(), OutputError> {
    write_matrix_set_with(run, estimator, matrices, None, Vec::new(), None)
}

/// [`write_matrix_set`] with a default matrix for `cluster`, the candidates it tries, and a
/// mask of the measured pairs (written as `matrices/<mask file>`).
pub fn write_matrix_set_with(
    run: &RunDir,
    estimator: Estimator,
    matrices: &[(MatrixEntry, &DistanceMatrix)],
    default: Option<String>,
    candidates: Vec<String>,
    measured: Option<(MeasuredMask, &DistanceMatrix)>,
) -> Result<(), OutputError> {
    let mask_entry = measured.as_ref().map(|(m, _)| {
        MatrixEntry::in_us(
            "measured",
            &m.file,
            "1 where measured, 0 where filled",
            None,
        )
    });
    let all: Vec<(MatrixEntry, &DistanceMatrix)> = matrices
        .iter()
        .cloned()
        .chain(
            mask_entry
                .into_iter()
                .zip(measured.as_ref().map(|(_, m)| *m)),
        )
        .collect();
    let matrices_dir = run.file(lgate_rundir::MATRICES_DIR);
    std::fs::create_dir_all(&matrices_dir).map_err(|error| RunDirError::Io {
        path: matrices_dir.clone(),
        error,
    })?;
    // Several files at once: one file's writing overlaps another's formatting.
    all.par_iter()
        .try_for_each(|(meta, m)| -> Result<(), OutputError> {
            let name = meta.path();
            let path = run.file(&name);
            let io = |error| RunDirError::Io {
                path: path.clone(),
                error,
            };
            let mut file = run.create_file(&name)?;
            // Microseconds to 0.1 ns: far below what timing can resolve.
            m.write_csv_rounded(&mut file, 4).map_err(io)?;
            file.commit().map_err(io)?;
            Ok(())
        })?;
    MatrixIndex {
        estimator,
        combine_sweeps: "median".into(),
        matrices: matrices.iter().map(|(m, _)| m.clone()).collect(),
        default,
        candidates,
        measured: measured.map(|(m, _)| m),
    }
    .write(run)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pingpong_takes_its_matrix_sizes_among_those_it_measures() {
        let sizes = |o: OutputOptions| o.matrix_sizes.iter().map(|m| m.0).collect::<Vec<_>>();
        let o =
            OutputOptions::from_pingpong_flags(None, &[0, 1024, 4 << 20], Estimator::Median, false);
        assert_eq!(sizes(o.unwrap()), [0, 1024]);
        let o = OutputOptions::from_pingpong_flags(None, &[512, 8], Estimator::Median, false);
        assert_eq!(sizes(o.unwrap()), [8, 512]);
        let o = OutputOptions::from_pingpong_flags(None, &[8], Estimator::Median, false);
        assert_eq!(sizes(o.unwrap()), [8]);
        let e = OutputOptions::from_pingpong_flags(
            Some(vec![MessageSize(1024)]),
            &[4 << 20, 0],
            Estimator::Median,
            false,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "matrix size 1KiB was not measured (the ping-pong measured 0, 4MiB); choose \
             --matrix-sizes among those or add it to --sizes"
        );
    }
}
