//! The long tables' columns, filled a row at a time.

use super::*;

/// The columns both tables start with: which pair, sweep, size and parameter a row is about.
#[derive(Default)]
pub(super) struct KeyColumns {
    pub(super) sweep: Vec<i32>,
    pub(super) i: Vec<i32>,
    pub(super) j: Vec<i32>,
    pub(super) size: Vec<i64>,
    pub(super) parameter: Vec<&'static str>,
}

impl KeyColumns {
    pub(super) fn push(&mut self, sweep: u32, pair: Pair, size: usize, p: Parameter) {
        self.sweep.push(sweep as i32);
        self.i.push(pair.i as i32);
        self.j.push(pair.j as i32);
        self.size.push(size as i64);
        self.parameter.push(p.name());
    }

    pub(super) fn len(&self) -> usize {
        self.sweep.len()
    }

    pub(super) fn into_table(self) -> Table {
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
pub(super) struct TableColumns {
    pub(super) key: KeyColumns,
    pub(super) method: Vec<&'static str>,
    pub(super) stats: [Vec<f64>; 6],
    pub(super) count: Vec<i32>,
    pub(super) warmup: Vec<i32>,
    pub(super) outliers: Vec<i32>,
}

impl TableColumns {
    pub(super) fn len(&self) -> usize {
        self.key.len()
    }

    pub(super) fn push_pair(&mut self, p: &PairParams) {
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

    pub(super) fn push(
        &mut self,
        p: &PairParams,
        size: usize,
        param: Parameter,
        method: Method,
        s: &Summary,
    ) {
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

    pub(super) fn into_table(self) -> Table {
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
pub(super) struct RawColumns {
    pub(super) key: KeyColumns,
    pub(super) repetition: Vec<i32>,
    pub(super) value: Vec<f64>,
}

impl RawColumns {
    pub(super) fn push(
        &mut self,
        sweep: u32,
        pair: Pair,
        size: usize,
        p: Parameter,
        samples: &[f64],
    ) {
        for (k, &x) in samples.iter().enumerate() {
            self.key.push(sweep, pair, size, p);
            self.repetition.push(k as i32);
            self.value.push(x * US);
        }
    }

    pub(super) fn into_table(self) -> Table {
        self.key
            .into_table()
            .with(col::REPETITION, Column::Int32(self.repetition))
            .with(col::VALUE_US, Column::Float64(self.value))
    }
}
