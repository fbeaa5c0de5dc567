//! From the journal to the run's outputs: the measurements table, the distance matrices and
//! the report of slow ranks and pairs.

use std::collections::{BTreeMap, HashMap};

use lgate_harness::stats::quantile_of_sorted;
use lgate_harness::{Pair, Summary};
use lgate_matrix::DistanceMatrix;
use lgate_rundir::{JournalEntry, RankInfo, RunDir, RunDirError};
use ndarray::Array2;
use serde::Serialize;

use crate::params::{Estimator, Method, PairParams, Parameter};
use crate::procedures::PairMeasurement;
use crate::size::MessageSize;
use crate::table::{Column, Table};

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

impl Default for OutputOptions {
    fn default() -> Self {
        OutputOptions {
            matrix_sizes: Self::default_matrix_sizes(usize::MAX),
            estimator: Estimator::Median,
            csv: false,
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
    /// Parquet could not be written.
    #[error("cannot write Parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
}

/// Every pair's parameters, for every sweep.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The tested ranks, ascending: the rows and columns of the matrices.
    pub ranks: Vec<usize>,
    /// Parameters per pair and sweep.
    pub pairs: Vec<PairParams>,
    /// Raw repetitions, when kept: (sweep, pair, size, parameter, samples).
    pub raw: Vec<(u32, Pair, usize, Parameter, Vec<f64>)>,
}

impl Analysis {
    /// Reads the journal entries of a PLogP run; every pair among the tested ranks must be
    /// there in every sweep present.
    pub fn of_entries(entries: &[JournalEntry], journal: &str) -> Result<Self, OutputError> {
        let mut pairs = Vec::with_capacity(entries.len());
        let mut raw = Vec::new();
        let mut ranks = std::collections::BTreeSet::new();
        for e in entries {
            let bad = |message: String| OutputError::BadEntry {
                path: journal.to_string(),
                sweep: e.sweep,
                i: e.i,
                j: e.j,
                message,
            };
            let m: PairMeasurement = serde_json::from_value(e.result.clone())
                .map_err(|err| bad(format!("not a PLogP measurement: {err}")))?;
            let pair = Pair::new(e.i, e.j);
            let params = PairParams::from_measurement(e.sweep, pair, &m).map_err(bad)?;
            for s in &m.sizes {
                if let Some(r) = &s.raw {
                    for (p, v) in [
                        (Parameter::Rtt, &r.rtt),
                        (Parameter::Os, &r.os),
                        (Parameter::Or, &r.or),
                        (Parameter::G, &r.g),
                    ] {
                        if !v.is_empty() {
                            raw.push((e.sweep, pair, s.size, p, v.clone()));
                        }
                    }
                }
            }
            ranks.insert(e.i);
            ranks.insert(e.j);
            pairs.push(params);
        }
        pairs.sort_by_key(|p| (p.sweep, p.pair));
        let ranks: Vec<usize> = ranks.into_iter().collect();
        let sweeps: std::collections::BTreeSet<u32> = pairs.iter().map(|p| p.sweep).collect();
        let have: std::collections::HashSet<(u32, Pair)> =
            pairs.iter().map(|p| (p.sweep, p.pair)).collect();
        let mut missing = Vec::new();
        for &s in &sweeps {
            for (a, &x) in ranks.iter().enumerate() {
                for &y in &ranks[a + 1..] {
                    if !have.contains(&(s, Pair::new(x, y))) {
                        missing.push((s, x, y));
                    }
                }
            }
        }
        if let Some(&(s, x, y)) = missing.first() {
            let n = ranks.len();
            return Err(OutputError::Incomplete {
                missing: missing.len(),
                expected: sweeps.len() * n * (n - 1) / 2,
                first: format!("{x}-{y} of sweep {s}"),
            });
        }
        Ok(Analysis { ranks, pairs, raw })
    }

    /// A matrix over the tested ranks whose entry is `f` of a pair, as the median over sweeps.
    pub fn matrix(&self, f: impl Fn(&PairParams) -> f64) -> DistanceMatrix {
        let index: HashMap<usize, usize> = self
            .ranks
            .iter()
            .enumerate()
            .map(|(k, &r)| (r, k))
            .collect();
        let n = self.ranks.len();
        let mut per_pair: BTreeMap<Pair, Vec<f64>> = BTreeMap::new();
        for p in &self.pairs {
            per_pair.entry(p.pair).or_default().push(f(p));
        }
        let mut values = Array2::zeros((n, n));
        for (pair, mut v) in per_pair {
            v.sort_by(f64::total_cmp);
            let x = quantile_of_sorted(&v, 0.5);
            let (a, b) = (index[&pair.i], index[&pair.j]);
            values[[a, b]] = x;
            values[[b, a]] = x;
        }
        let labels = self.ranks.iter().map(|r| r.to_string()).collect();
        DistanceMatrix::new(values, Some(labels))
            .expect("finite, non-negative, square by construction")
    }

    /// Checks that every pair was measured up to `size`.
    pub fn check_size(&self, size: MessageSize) -> Result<(), OutputError> {
        match self.pairs.iter().find(|p| p.max_size() < size.0) {
            Some(p) => Err(OutputError::SizeOutOfRange {
                size,
                pair: format!("{}-{}", p.pair.i, p.pair.j),
                max: MessageSize(p.max_size()),
            }),
            None => Ok(()),
        }
    }

    /// Equations 3.5-3.6: the Euclidean distance between the ranks' vectors of
    /// (L, o_s(m), o_r(m), g(m)) towards every rank, in microseconds.
    ///
    /// A rank's entry towards itself, which is not measured, is the least value of its row for
    /// each parameter (no rank is nearer to it than its nearest peer), so every rank has one
    /// fixed vector and the result is a metric.
    pub fn features(&self, size: usize, e: Estimator) -> DistanceMatrix {
        let n = self.ranks.len();
        let params = [Parameter::L, Parameter::Os, Parameter::Or, Parameter::G];
        // One P x P matrix per parameter.
        let per: Vec<DistanceMatrix> = params
            .iter()
            .map(|&p| self.matrix(|pp| pp.value(p, size, e).unwrap_or(0.0) * US))
            .collect();
        let mut v = Array2::<f64>::zeros((n, 4 * n));
        for (q, m) in per.iter().enumerate() {
            for i in 0..n {
                let mut row_min = f64::INFINITY;
                for k in 0..n {
                    if k != i {
                        row_min = row_min.min(m.get(i, k));
                        v[[i, 4 * k + q]] = m.get(i, k);
                    }
                }
                v[[i, 4 * i + q]] = if row_min.is_finite() { row_min } else { 0.0 };
            }
        }
        // |x - y|^2 = |x|^2 + |y|^2 - 2 x.y, through one matrix product.
        let gram = v.dot(&v.t());
        let mut d = Array2::<f64>::zeros((n, n));
        for i in 0..n {
            for j in i + 1..n {
                let sq = (gram[[i, i]] + gram[[j, j]] - 2.0 * gram[[i, j]]).max(0.0);
                d[[i, j]] = sq.sqrt();
                d[[j, i]] = d[[i, j]];
            }
        }
        let labels = self.ranks.iter().map(|r| r.to_string()).collect();
        DistanceMatrix::new(d, Some(labels)).expect("finite, non-negative, square by construction")
    }

    /// The long table: one row per pair, sweep, size and parameter (L once per pair).
    pub fn measurements(&self) -> Table {
        let mut c = TableColumns::default();
        for p in &self.pairs {
            for (k, &size) in p.sizes.iter().enumerate() {
                for param in [Parameter::Rtt, Parameter::Os, Parameter::Or, Parameter::G] {
                    let method = match param {
                        Parameter::G => p.g[k].1,
                        _ => Method::Measured,
                    };
                    c.push(p, size, param, method, p.stats(param, k));
                }
            }
            c.push(p, 0, Parameter::L, Method::Derived, &p.latency);
        }
        c.into_table()
    }

    /// The raw repetitions: one row per pair, sweep, size, parameter and repetition.
    pub fn raw_table(&self) -> Table {
        let (mut sweep, mut i, mut j, mut size, mut param, mut rep, mut value) =
            (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
        for (s, pair, m, p, samples) in &self.raw {
            for (k, &x) in samples.iter().enumerate() {
                sweep.push(*s as i32);
                i.push(pair.i as i32);
                j.push(pair.j as i32);
                size.push(*m as i64);
                param.push(p.name().to_string());
                rep.push(k as i32);
                value.push(x * US);
            }
        }
        Table::new()
            .with("sweep", Column::Int32(sweep))
            .with("i", Column::Int32(i))
            .with("j", Column::Int32(j))
            .with("size_bytes", Column::Int64(size))
            .with("parameter", Column::Text(param))
            .with("repetition", Column::Int32(rep))
            .with("value_us", Column::Float64(value))
    }
}

#[derive(Default)]
struct TableColumns {
    sweep: Vec<i32>,
    i: Vec<i32>,
    j: Vec<i32>,
    size: Vec<i64>,
    parameter: Vec<String>,
    method: Vec<String>,
    stats: [Vec<f64>; 6],
    count: Vec<i32>,
    warmup: Vec<i32>,
    outliers: Vec<i32>,
}

impl TableColumns {
    fn push(&mut self, p: &PairParams, size: usize, param: Parameter, method: Method, s: &Summary) {
        self.sweep.push(p.sweep as i32);
        self.i.push(p.pair.i as i32);
        self.j.push(p.pair.j as i32);
        self.size.push(size as i64);
        self.parameter.push(param.name().to_string());
        self.method.push(method.name().to_string());
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
        Table::new()
            .with("sweep", Column::Int32(self.sweep))
            .with("i", Column::Int32(self.i))
            .with("j", Column::Int32(self.j))
            .with("size_bytes", Column::Int64(self.size))
            .with("parameter", Column::Text(self.parameter))
            .with("method", Column::Text(self.method))
            .with("min_us", Column::Float64(min))
            .with("p10_us", Column::Float64(p10))
            .with("median_us", Column::Float64(median))
            .with("p90_us", Column::Float64(p90))
            .with("mean_us", Column::Float64(mean))
            .with("max_us", Column::Float64(max))
            .with("samples", Column::Int32(self.count))
            .with("warmup", Column::Int32(self.warmup))
            .with("outliers", Column::Int32(self.outliers))
    }
}

/// One matrix of the run, as listed in `matrices/index.json`.
#[derive(Debug, Clone, Serialize)]
pub struct MatrixEntry {
    /// The name `cluster --matrix` takes: `latency`, `rtt:0`, `t:1KiB`, `features:0`.
    pub name: String,
    /// The file in `matrices/`.
    pub file: String,
    /// What the entries are.
    pub description: String,
    /// Always `us`.
    pub unit: &'static str,
    /// The message size, for size-dependent matrices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<usize>,
}

/// Writes `measurements.parquet` (and `.csv`), `raw.parquet` with raw samples, `matrices/`
/// and `report.json` into the run directory; returns the names written.
pub fn write_outputs(
    run: &RunDir,
    entries: &[JournalEntry],
    options: &OutputOptions,
) -> Result<Vec<String>, OutputError> {
    let journal = run.file(lgate_rundir::JOURNAL_FILE).display().to_string();
    let analysis = Analysis::of_entries(entries, &journal)?;
    for &size in &options.matrix_sizes {
        analysis.check_size(size)?;
    }
    let mut written = Vec::new();
    let table = analysis.measurements();
    run.write_file("measurements.parquet", &table.to_parquet()?)?;
    written.push("measurements.parquet".to_string());
    if options.csv {
        run.write_file("measurements.csv", table.to_csv().as_bytes())?;
        written.push("measurements.csv".to_string());
    }
    if !analysis.raw.is_empty() {
        let raw = analysis.raw_table();
        run.write_file("raw.parquet", &raw.to_parquet()?)?;
        written.push("raw.parquet".to_string());
        if options.csv {
            run.write_file("raw.csv", raw.to_csv().as_bytes())?;
            written.push("raw.csv".to_string());
        }
    }

    let e = options.estimator;
    let mut matrices: Vec<(MatrixEntry, DistanceMatrix)> = vec![
        (
            entry(
                "latency",
                "L.csv",
                "latency L = (RTT(0) - 2 g(0)) / 2",
                None,
            ),
            analysis.matrix(|p| e.of(&p.latency) * US),
        ),
        (
            entry(
                "rtt:0",
                "rtt_0.csv",
                "round-trip time of an empty message, RTT(0)",
                Some(0),
            ),
            analysis.matrix(|p| e.of(&p.rtt[0]) * US),
        ),
    ];
    for &size in &options.matrix_sizes {
        let m = size.0;
        matrices.push((
            entry(
                &format!("t:{size}"),
                &format!("t_{m}.csv"),
                &format!("t(m) = L + (o_s(m) + o_r(m)) / 2 + g(m) at m = {size} (equation 3.3)"),
                Some(m),
            ),
            analysis.matrix(|p| p.time(m, e).expect("size checked") * US),
        ));
    }
    for &size in &options.matrix_sizes {
        let m = size.0;
        for (p, what) in [
            (Parameter::Os, "send overhead o_s(m)"),
            (Parameter::Or, "receive overhead o_r(m)"),
            (Parameter::G, "gap g(m)"),
        ] {
            matrices.push((
                entry(
                    &format!("{}:{size}", p.name()),
                    &format!("{}_{m}.csv", p.name()),
                    &format!("{what} at m = {size}"),
                    Some(m),
                ),
                analysis.matrix(|pp| pp.value(p, m, e).expect("size checked") * US),
            ));
        }
        matrices.push((
            entry(
                &format!("features:{size}"),
                &format!("features_{m}.csv"),
                &format!("Euclidean distance between the ranks' (L, o_s, o_r, g) vectors at m = {size} (equations 3.5-3.6)"),
                Some(m),
            ),
            analysis.features(m, e),
        ));
    }
    std::fs::create_dir_all(run.file("matrices")).map_err(|error| RunDirError::Io {
        path: run.file("matrices"),
        error,
    })?;
    for (meta, m) in &matrices {
        // Microseconds to 0.1 ns: far below what timing can resolve.
        run.write_file(
            &format!("matrices/{}", meta.file),
            m.to_csv_rounded(4).as_bytes(),
        )?;
    }
    let index = serde_json::json!({
        "estimator": e.name(),
        "combine_sweeps": "median",
        "matrices": matrices.iter().map(|(m, _)| m).collect::<Vec<_>>(),
    });
    run.write_file("matrices/index.json", format!("{index:#}\n").as_bytes())?;
    written.push("matrices/".to_string());

    let placement = run.read_meta().map(|m| m.ranks).unwrap_or_default();
    let report = crate::report::report(&analysis, &placement, options);
    run.write_file("report.json", format!("{:#}\n", report).as_bytes())?;
    written.push("report.json".to_string());
    Ok(written)
}

fn entry(name: &str, file: &str, description: &str, size: Option<usize>) -> MatrixEntry {
    MatrixEntry {
        name: name.to_string(),
        file: file.to_string(),
        description: description.to_string(),
        unit: "us",
        size_bytes: size,
    }
}

/// Where two ranks sit relative to each other, from their placement.
pub fn pair_class(placement: &[RankInfo], pair: Pair) -> &'static str {
    match (placement.get(pair.i), placement.get(pair.j)) {
        (Some(a), Some(b)) if a.host != b.host => "different hosts",
        (Some(a), Some(b)) if a.socket.is_some() && a.socket == b.socket => "same socket",
        (Some(a), Some(b)) if a.socket.is_some() && b.socket.is_some() => "same host, other socket",
        (Some(_), Some(_)) => "same host",
        _ => "unknown placement",
    }
}
