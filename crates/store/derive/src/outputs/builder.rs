//! The outputs built pair by pair: each pair's values per parameter and size, the tables
//! written in chunks, the matrices filled and mirrored.

use super::*;

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
pub(super) const TABLE_CHUNK_ROWS: usize = 1 << 20;

/// Marks a rank that is not among the tested ones.
pub(super) const UNTESTED: usize = usize::MAX;

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
pub(super) fn mirror_upper(m: &mut Array2<f64>) {
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
pub(super) fn feature_distances(parts: [&DistanceMatrix; 4], labels: &[String]) -> DistanceMatrix {
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
