//! Runs made from other tools' measurements (`import`): a pair list (CSV, Parquet, mmpi's
//! `.dat`) or mpiGraph's output become a run directory whose matrices every command reads.

use std::path::Path;

use lgate_matrix::mpigraph::MpiGraphRun;
use lgate_matrix::{DistanceMatrix, PairTable};
use lgate_rundir::{
    Estimator, ImportedParameters, MatrixEntry, MessageSize, MpiGraphParameters, RunDir, RunMeta,
    TestInfo,
};
use ndarray::Array2;

use crate::outputs::{write_matrix_set_with, OutputError};

/// Who imported what, when, and where to: what the run's meta.json records of its making.
#[derive(Debug, Clone)]
pub struct ImportOrigin<'a> {
    /// The file imported.
    pub source: &'a Path,
    /// The run directory to create.
    pub out: &'a Path,
    /// Whether an existing run there is replaced.
    pub force: bool,
    /// The program and version, e.g. `lgate-plogp 0.1.0`.
    pub tool: String,
    /// The command line that imported it.
    pub command_line: Vec<String>,
    /// When (RFC 3339, UTC).
    pub now: String,
}

/// Which of mpiGraph's tables the distance is made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MpiGraphTable {
    /// What each rank measured receiving (mpiGraph's `Recv` table).
    Recv,
    /// What each rank measured sending (mpiGraph's `Send` table).
    Send,
}

impl MpiGraphTable {
    /// Its name in mpiGraph's output.
    pub fn name(self) -> &'static str {
        match self {
            MpiGraphTable::Recv => "Recv",
            MpiGraphTable::Send => "Send",
        }
    }
}

fn matrix(values: Array2<f64>, origin: &ImportOrigin) -> Result<DistanceMatrix, OutputError> {
    DistanceMatrix::new(values, None).map_err(|e| OutputError::Import {
        path: origin.source.display().to_string(),
        message: e.to_string(),
    })
}

/// Creates the run directory and writes meta.json and the matrices of an imported run.
fn write_run(
    test: TestInfo,
    hosts: Vec<String>,
    entries: &[(MatrixEntry, &DistanceMatrix)],
    default: String,
    origin: &ImportOrigin,
) -> Result<(), OutputError> {
    let meta = RunMeta::imported(
        origin.tool.clone(),
        origin.command_line.clone(),
        test,
        hosts,
        origin.now.clone(),
    );
    let run = RunDir::create(origin.out, origin.force)?;
    run.write_meta(&meta)?;
    write_matrix_set_with(
        &run,
        Estimator::Median,
        entries,
        Some(default),
        Vec::new(),
        None,
    )?;
    Ok(())
}

/// Writes the run of a pair list into `origin.out`: per size, the median of each pair's repeats
/// (`imported:SIZE`) and their robust standard deviation (`spread:SIZE`); ranks on the list's
/// hosts, or `rankN` where it names none.
pub fn write_imported_pairs(table: &PairTable, origin: &ImportOrigin) -> Result<(), OutputError> {
    let name = |kind: &str, size: Option<usize>| match size {
        Some(s) => format!("{kind}:{}", MessageSize(s)),
        None => kind.to_string(),
    };
    let file = |kind: &str, size: Option<usize>| match size {
        Some(s) => format!("{kind}_{s}.csv"),
        None => format!("{kind}.csv"),
    };
    // In a run, matrices are labelled by rank; meta.json names the hosts.
    let medians: Vec<DistanceMatrix> = (table.sizes.iter())
        .map(|m| matrix(m.median.values().clone(), origin))
        .collect::<Result<_, _>>()?;
    let spreads: Vec<DistanceMatrix> = (table.sizes.iter())
        .map(|m| matrix(m.spread.clone(), origin))
        .collect::<Result<_, _>>()?;
    let mut entries: Vec<(MatrixEntry, &DistanceMatrix)> = Vec::new();
    for ((m, median), spread) in table.sizes.iter().zip(&medians).zip(&spreads) {
        let what = match m.size_bytes {
            Some(s) => format!("the imported value at {}", MessageSize(s)),
            None => "the imported value".to_string(),
        };
        let (imported, spread_name) =
            (name("imported", m.size_bytes), name("spread", m.size_bytes));
        entries.push((
            MatrixEntry::in_us(
                &imported,
                &file("imported", m.size_bytes),
                &format!("{what}: the median of each pair's repeats"),
                m.size_bytes,
            ),
            median,
        ));
        entries.push((
            MatrixEntry::in_us(
                &spread_name,
                &file("spread", m.size_bytes),
                &format!("{what}: the robust standard deviation of each pair's repeats"),
                m.size_bytes,
            ),
            spread,
        ));
    }
    let default = name("imported", table.sizes.first().and_then(|m| m.size_bytes));
    let test = TestInfo::Imported(ImportedParameters {
        source: origin.source.display().to_string(),
        layout: table.layout.to_string(),
        ranks: table.ranks,
        sizes: table.sizes.iter().map(|m| m.size_bytes).collect(),
        most_repeats_of_a_pair: most_repeats(table),
        hosts_named: table.hosts.is_some(),
    });
    let hosts = match &table.hosts {
        Some(h) => h.clone(),
        None => (0..table.ranks).map(|r| format!("rank{r}")).collect(),
    };
    write_run(test, hosts, &entries, default, origin)
}

/// The most repeats of one pair at any size of a pair list.
pub fn most_repeats(table: &PairTable) -> usize {
    table.sizes.iter().map(|m| m.repeats).max().unwrap_or(0)
}

/// Bytes in mpiGraph's MB.
const MIB: f64 = 1024.0 * 1024.0;

/// Microseconds per message of `bytes` at `mb_per_s` (mpiGraph's MB: 2^20 bytes).
fn us_per_message(bytes: usize, mb_per_s: f64) -> f64 {
    if mb_per_s > 0.0 {
        bytes as f64 / MIB / mb_per_s * 1e6
    } else {
        0.0
    }
}

/// The distance between i and j from one of mpiGraph's tables (`bw[[i, j]]`, MB/s): the time
/// a message takes at the pair's mean bandwidth of its two directions,
/// `size / ((bw_ij + bw_ji) / 2)`.
pub fn mpigraph_distance(bytes: usize, bw: &Array2<f64>) -> Array2<f64> {
    let n = bw.nrows();
    Array2::from_shape_fn((n, n), |(i, j)| {
        if i == j {
            0.0
        } else {
            us_per_message(bytes, (bw[[i, j]] + bw[[j, i]]) / 2.0)
        }
    })
}

/// The mean bandwidth of one of mpiGraph's tables over its ordered pairs, MB/s.
pub fn mean_bandwidth(bw: &Array2<f64>) -> f64 {
    let n = bw.nrows();
    bw.sum() / (n * n.saturating_sub(1)).max(1) as f64
}

/// Writes the run of mpiGraph's output into `origin.out`: `imported:SIZE` (the time per message at the pair's
/// mean bandwidth of its two directions, from the table `from`), and `recv:SIZE` and
/// `send:SIZE` per direction.
pub fn write_imported_mpigraph(
    mg: &MpiGraphRun,
    from: MpiGraphTable,
    origin: &ImportOrigin,
) -> Result<(), OutputError> {
    let size = MessageSize(mg.message_bytes);
    let per_direction =
        |bw: &Array2<f64>| matrix(bw.mapv(|v| us_per_message(mg.message_bytes, v)), origin);
    let chosen = match from {
        MpiGraphTable::Recv => &mg.recv,
        MpiGraphTable::Send => &mg.send,
    };
    let table_name = from.name();
    let distance = matrix(mpigraph_distance(mg.message_bytes, chosen), origin)?;
    let recv = per_direction(&mg.recv)?;
    let send = per_direction(&mg.send)?;
    let s = mg.message_bytes;
    let entries = [
        (
            MatrixEntry::in_us(
                &format!("imported:{size}"),
                &format!("imported_{s}.csv"),
                &format!(
                    "mpiGraph, {size} messages: the time a message takes at the pair's mean \
                     bandwidth, size / ((bw_ij + bw_ji) / 2), from the {table_name} table"
                ),
                Some(s),
            ),
            &distance,
        ),
        (
            MatrixEntry::in_us(
                &format!("recv:{size}"),
                &format!("recv_{s}.csv"),
                &format!(
                    "mpiGraph, {size} messages: row i, column j, the time per message i \
                     received from j (size / the Recv table's bandwidth; not symmetric)"
                ),
                Some(s),
            ),
            &recv,
        ),
        (
            MatrixEntry::in_us(
                &format!("send:{size}"),
                &format!("send_{s}.csv"),
                &format!(
                    "mpiGraph, {size} messages: row i, column j, the time per message i sent \
                     to j (size / the Send table's bandwidth; not symmetric)"
                ),
                Some(s),
            ),
            &send,
        ),
    ];
    let test = TestInfo::MpiGraph(MpiGraphParameters {
        source: origin.source.display().to_string(),
        layout: "mpigraph".into(),
        ranks: mg.hosts.len(),
        message_bytes: mg.message_bytes,
        times: mg.times,
        window: mg.window,
        distance_from: table_name.into(),
        send_mean_mb_per_s: mean_bandwidth(&mg.send),
        recv_mean_mb_per_s: mean_bandwidth(&mg.recv),
    });
    let default = format!("imported:{size}");
    write_run(test, mg.hosts.clone(), &entries, default, origin)
}
