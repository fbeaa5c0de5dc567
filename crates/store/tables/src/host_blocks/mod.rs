//! A staged run's screening by hosts (`hosts/`): each host's block of its ranks' pairs (dense,
//! `blocks.parquet`), the pairs measured between hosts (sparse, `between.parquet`) and the host
//! x host summary (`host_matrix.parquet`), per screening size, with `hosts/index.json` saying
//! what they hold. They grow with the pairs measured, not with P^2: at 1000 hosts of 128 ranks,
//! 8.1 million pairs inside hosts and 2 million between, against 8.2 billion in a dense matrix.
//!
//! A "host" is a group of the staged plan: a host by default, a leaf of `--topology` otherwise.

use ndarray::Array2;
use serde::{Deserialize, Serialize};

use crate::table::{Column, ColumnValues, Table, TableReader, TableWriter};
use crate::table_layout as col;
use lgate_rundir::files::{
    BETWEEN_FILE, BLOCKS_FILE, HOSTS_DIR, HOST_INDEX_FILE, HOST_MATRIX_FILE,
};
use lgate_rundir::{io_error, Estimator, RunDir, RunDirError};

mod read;

/// The `format` of `hosts/index.json`.
pub const HOST_BLOCKS_FORMAT: &str = "lgate-host-blocks";

/// The most ranks whose dense P x P matrices (`matrices/`, 8 bytes a pair and size: 131 MB at
/// 4096 ranks) a staged run writes beside its host blocks unless asked (`--dense`).
pub const DENSE_LIMIT: usize = 4096;

/// Rows per Parquet row group of the host tables (a row group is read whole).
const ROWS_PER_GROUP: usize = 1 << 20;

/// One host (a group of the staged plan) as the index lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostEntry {
    /// The host name, or `group K` when the group's ranks are on several hosts.
    pub name: String,
    /// Its ranks, ascending: the rows and columns of its block, in this order.
    pub ranks: Vec<usize>,
}

/// How many pairs the host files hold, and how many the run has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPairCounts {
    /// Pairs inside hosts measured (the blocks' rows per size).
    pub inside_measured: usize,
    /// Pairs inside hosts.
    pub inside_total: usize,
    /// Pairs between hosts measured (`between.parquet`'s rows per size).
    pub between_measured: usize,
    /// Pairs between hosts.
    pub between_total: usize,
}

/// `hosts/index.json`: the hosts, sizes and files of a run's host blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostIndex {
    /// Always [`HOST_BLOCKS_FORMAT`].
    pub format: String,
    /// The layout's version (1).
    pub version: u32,
    /// What the values are, for people.
    pub description: String,
    /// The run's ranks.
    pub ranks: usize,
    /// The statistic of a pair's repetitions that stands for its value.
    pub estimator: Estimator,
    /// The screening sizes in bytes, ascending.
    pub sizes: Vec<usize>,
    /// The hosts, in the order of the `host` columns.
    pub hosts: Vec<HostEntry>,
    /// The pairs measured and the pairs of the run.
    pub pairs: HostPairCounts,
}

/// Per host and size, its ranks' round trips in microseconds: row and column `a` are the
/// host's `ranks[a]`; 0 on the diagonal, NaN for a pair not measured.
#[derive(Debug, Clone, PartialEq)]
pub struct HostBlock {
    /// One square matrix per size of the index.
    pub values: Vec<Array2<f64>>,
}

/// The host x host summary, one entry per pair of hosts with a pair measured between them (and
/// per host, inside it), as columns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostLinks {
    /// The first host (`host_i <= host_j`; equal: the pairs inside the host).
    pub host_i: Vec<u32>,
    /// The second host.
    pub host_j: Vec<u32>,
    /// The pairs measured between them.
    pub pairs: Vec<u32>,
    /// Per size, the median of the pairs' values (us).
    pub median_us: Vec<Vec<f64>>,
    /// Per size, their lower quartile (us).
    pub p25_us: Vec<Vec<f64>>,
    /// Per size, their upper quartile (us).
    pub p75_us: Vec<Vec<f64>>,
}

/// The pairs measured between hosts, as columns: each pair's value (the median over its
/// sweeps of the estimator) and the spread of its repetitions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BetweenPairs {
    /// The host of `i`.
    pub host_i: Vec<u32>,
    /// The host of `j`.
    pub host_j: Vec<u32>,
    /// The smaller rank.
    pub i: Vec<u32>,
    /// The larger rank.
    pub j: Vec<u32>,
    /// The sweeps that measured it.
    pub sweeps: Vec<u32>,
    /// Per size, the pair's value (us).
    pub rtt_us: Vec<Vec<f64>>,
    /// Per size, the 10th percentile of its repetitions (median over sweeps, us).
    pub p10_us: Vec<Vec<f64>>,
    /// Per size, the 90th percentile of its repetitions (median over sweeps, us).
    pub p90_us: Vec<Vec<f64>>,
}

/// A run's host blocks as `cluster` reads them: the index, each host's block and the host x
/// host summary (the pairs between hosts stay in their file).
#[derive(Debug, Clone, PartialEq)]
pub struct HostBlocks {
    /// The index.
    pub index: HostIndex,
    /// One block per host of the index.
    pub blocks: Vec<HostBlock>,
    /// The host x host summary.
    pub links: HostLinks,
}

impl HostIndex {
    /// A new index of `ranks` ranks over `hosts`, its pair totals counted and measured pairs 0.
    pub fn new(
        ranks: usize,
        estimator: Estimator,
        sizes: Vec<usize>,
        hosts: Vec<HostEntry>,
    ) -> Self {
        let inside_total: usize = hosts
            .iter()
            .map(|h| h.ranks.len() * h.ranks.len().saturating_sub(1) / 2)
            .sum();
        HostIndex {
            format: HOST_BLOCKS_FORMAT.into(),
            version: 1,
            description: "screening round-trip time RTT(m) in microseconds, m bytes out and m \
                          back, per pair (the median over its sweeps); blocks.parquet: every \
                          pair inside a host; between.parquet: the pairs measured between hosts; \
                          host_matrix.parquet: per two hosts (and inside each) the median and \
                          quartiles of their pairs"
                .into(),
            ranks,
            estimator,
            sizes,
            pairs: HostPairCounts {
                inside_measured: 0,
                inside_total,
                between_measured: 0,
                between_total: (ranks * ranks.saturating_sub(1) / 2).saturating_sub(inside_total),
            },
            hosts,
        }
    }

    /// Reads `hosts/index.json` of `run`.
    pub fn read(run: &RunDir) -> Result<Self, RunDirError> {
        let path = run.file(HOST_INDEX_FILE);
        let bad = |message: String| RunDirError::BadFile {
            path: path.clone(),
            message,
        };
        let text = std::fs::read_to_string(&path).map_err(io_error(&path))?;
        let index: HostIndex = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if index.format != HOST_BLOCKS_FORMAT {
            return Err(bad(format!(
                "format `{}`, expected `{HOST_BLOCKS_FORMAT}`",
                index.format
            )));
        }
        if index.sizes.is_empty() || index.sizes.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad("`sizes` must be ascending and not empty".into()));
        }
        let mut seen = vec![false; index.ranks];
        for h in &index.hosts {
            for &r in &h.ranks {
                if r >= index.ranks || std::mem::replace(&mut seen[r], true) {
                    return Err(bad(format!(
                        "host {}: rank {r} is not one of the run's {} ranks, or is listed twice",
                        h.name, index.ranks
                    )));
                }
            }
            if h.ranks.windows(2).any(|w| w[0] >= w[1]) {
                return Err(bad(format!("host {}: ranks must be ascending", h.name)));
            }
        }
        Ok(index)
    }

    /// The host of each rank (`u32::MAX` for a rank in no host).
    pub fn host_of(&self) -> Vec<u32> {
        let mut of = vec![u32::MAX; self.ranks];
        for (h, host) in self.hosts.iter().enumerate() {
            for &r in &host.ranks {
                of[r] = h as u32;
            }
        }
        of
    }

    /// The position of size `bytes` among the sizes.
    pub fn size_index(&self, bytes: usize) -> Option<usize> {
        self.sizes.binary_search(&bytes).ok()
    }
}

impl HostLinks {
    /// The host x host matrix of medians at size `k` over `hosts` hosts: NaN where no pair was
    /// measured, the median inside each host on the diagonal.
    pub fn matrix(&self, k: usize, hosts: usize) -> Array2<f64> {
        let mut m = Array2::from_elem((hosts, hosts), f64::NAN);
        for (n, (&a, &b)) in self.host_i.iter().zip(&self.host_j).enumerate() {
            let (a, b) = (a as usize, b as usize);
            m[[a, b]] = self.median_us[k][n];
            m[[b, a]] = self.median_us[k][n];
        }
        m
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.host_i.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.host_i.is_empty()
    }
}

impl BetweenPairs {
    /// The number of pairs.
    pub fn len(&self) -> usize {
        self.i.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.i.is_empty()
    }
}

/// The rows of one long table per size, written as row groups of about [`ROWS_PER_GROUP`].
struct LongTableWriter {
    writer: TableWriter,
}

impl LongTableWriter {
    fn new(run: &RunDir, name: &str, shape: &Table) -> Result<Self, RunDirError> {
        let file = run.create_file(name)?;
        let writer = TableWriter::new(shape, file, None).map_err(|e| RunDirError::BadFile {
            path: run.file(name),
            message: e.to_string(),
        })?;
        Ok(LongTableWriter { writer })
    }

    fn write(&mut self, run: &RunDir, name: &str, piece: &Table) -> Result<(), RunDirError> {
        self.writer.write(piece).map_err(|e| RunDirError::BadFile {
            path: run.file(name),
            message: e.to_string(),
        })
    }

    fn finish(self, run: &RunDir, name: &str) -> Result<(), RunDirError> {
        self.writer.finish().map_err(|e| RunDirError::BadFile {
            path: run.file(name),
            message: e.to_string(),
        })
    }
}

/// Rows of `blocks.parquet` waiting to be written: host, i, j, size and value.
type BlockRows = (Vec<usize>, Vec<usize>, Vec<usize>, Vec<i64>, Vec<f64>);

fn int32(v: impl Iterator<Item = usize>) -> Column {
    Column::Int32(v.map(|x| x as i32).collect())
}

impl HostBlocks {
    /// Whether `run` has host blocks.
    pub fn exist(run: &RunDir) -> bool {
        run.file(HOST_INDEX_FILE).is_file()
    }

    /// Writes `hosts/`: the index, the blocks, the host x host summary and `between`.
    pub fn write(&self, run: &RunDir, between: &BetweenPairs) -> Result<(), RunDirError> {
        let dir = run.file(HOSTS_DIR);
        std::fs::create_dir_all(&dir).map_err(io_error(&dir))?;
        self.write_blocks(run)?;
        self.write_links(run)?;
        self.write_between(run, between)?;
        let value = serde_json::to_value(&self.index).expect("the index serialises");
        run.write_file(HOST_INDEX_FILE, format!("{value:#}\n").as_bytes())
    }

    fn write_blocks(&self, run: &RunDir) -> Result<(), RunDirError> {
        let shape = Table::new()
            .with(col::HOST, Column::Int32(Vec::new()))
            .with(col::I, Column::Int32(Vec::new()))
            .with(col::J, Column::Int32(Vec::new()))
            .with(col::SIZE_BYTES, Column::Int64(Vec::new()))
            .with(col::RTT_US, Column::Float64(Vec::new()));
        let mut out = LongTableWriter::new(run, BLOCKS_FILE, &shape)?;
        let mut rows = BlockRows::default();
        let flush = |rows: &mut BlockRows, out: &mut LongTableWriter| -> Result<(), RunDirError> {
            let piece = Table::new()
                .with(col::HOST, int32(rows.0.drain(..)))
                .with(col::I, int32(rows.1.drain(..)))
                .with(col::J, int32(rows.2.drain(..)))
                .with(col::SIZE_BYTES, Column::Int64(std::mem::take(&mut rows.3)))
                .with(col::RTT_US, Column::Float64(std::mem::take(&mut rows.4)));
            out.write(run, BLOCKS_FILE, &piece)
        };
        for (h, (host, block)) in self.index.hosts.iter().zip(&self.blocks).enumerate() {
            for (k, &size) in self.index.sizes.iter().enumerate() {
                let m = &block.values[k];
                for a in 0..host.ranks.len() {
                    for b in a + 1..host.ranks.len() {
                        let x = m[[a, b]];
                        if x.is_nan() {
                            continue;
                        }
                        rows.0.push(h);
                        rows.1.push(host.ranks[a]);
                        rows.2.push(host.ranks[b]);
                        rows.3.push(size as i64);
                        rows.4.push(x);
                    }
                }
            }
            if rows.0.len() >= ROWS_PER_GROUP {
                flush(&mut rows, &mut out)?;
            }
        }
        flush(&mut rows, &mut out)?;
        out.finish(run, BLOCKS_FILE)
    }

    fn write_links(&self, run: &RunDir) -> Result<(), RunDirError> {
        let l = &self.links;
        let shape = Table::new()
            .with(col::HOST_I, Column::Int32(Vec::new()))
            .with(col::HOST_J, Column::Int32(Vec::new()))
            .with(col::SIZE_BYTES, Column::Int64(Vec::new()))
            .with(col::MEDIAN_US, Column::Float64(Vec::new()))
            .with(col::P25_US, Column::Float64(Vec::new()))
            .with(col::P75_US, Column::Float64(Vec::new()))
            .with(col::PAIRS, Column::Int64(Vec::new()));
        let mut out = LongTableWriter::new(run, HOST_MATRIX_FILE, &shape)?;
        for start in (0..l.len()).step_by(ROWS_PER_GROUP) {
            let range = start..(start + ROWS_PER_GROUP).min(l.len());
            for (k, &size) in self.index.sizes.iter().enumerate() {
                let piece = Table::new()
                    .with(
                        col::HOST_I,
                        int32(l.host_i[range.clone()].iter().map(|&x| x as usize)),
                    )
                    .with(
                        col::HOST_J,
                        int32(l.host_j[range.clone()].iter().map(|&x| x as usize)),
                    )
                    .with(
                        col::SIZE_BYTES,
                        Column::Int64(vec![size as i64; range.len()]),
                    )
                    .with(
                        col::MEDIAN_US,
                        Column::Float64(l.median_us[k][range.clone()].to_vec()),
                    )
                    .with(
                        col::P25_US,
                        Column::Float64(l.p25_us[k][range.clone()].to_vec()),
                    )
                    .with(
                        col::P75_US,
                        Column::Float64(l.p75_us[k][range.clone()].to_vec()),
                    )
                    .with(
                        col::PAIRS,
                        Column::Int64(l.pairs[range.clone()].iter().map(|&x| x as i64).collect()),
                    );
                out.write(run, HOST_MATRIX_FILE, &piece)?;
            }
        }
        out.finish(run, HOST_MATRIX_FILE)
    }

    fn write_between(&self, run: &RunDir, p: &BetweenPairs) -> Result<(), RunDirError> {
        let shape = Table::new()
            .with(col::HOST_I, Column::Int32(Vec::new()))
            .with(col::HOST_J, Column::Int32(Vec::new()))
            .with(col::I, Column::Int32(Vec::new()))
            .with(col::J, Column::Int32(Vec::new()))
            .with(col::SIZE_BYTES, Column::Int64(Vec::new()))
            .with(col::RTT_US, Column::Float64(Vec::new()))
            .with(col::P10_US, Column::Float64(Vec::new()))
            .with(col::P90_US, Column::Float64(Vec::new()))
            .with(col::SWEEPS, Column::Int32(Vec::new()));
        let mut out = LongTableWriter::new(run, BETWEEN_FILE, &shape)?;
        let ints = |v: &[u32]| Column::Int32(v.iter().map(|&x| x as i32).collect());
        for start in (0..p.len()).step_by(ROWS_PER_GROUP) {
            let r = start..(start + ROWS_PER_GROUP).min(p.len());
            for (k, &size) in self.index.sizes.iter().enumerate() {
                let piece = Table::new()
                    .with(col::HOST_I, ints(&p.host_i[r.clone()]))
                    .with(col::HOST_J, ints(&p.host_j[r.clone()]))
                    .with(col::I, ints(&p.i[r.clone()]))
                    .with(col::J, ints(&p.j[r.clone()]))
                    .with(col::SIZE_BYTES, Column::Int64(vec![size as i64; r.len()]))
                    .with(
                        col::RTT_US,
                        Column::Float64(p.rtt_us[k][r.clone()].to_vec()),
                    )
                    .with(
                        col::P10_US,
                        Column::Float64(p.p10_us[k][r.clone()].to_vec()),
                    )
                    .with(
                        col::P90_US,
                        Column::Float64(p.p90_us[k][r.clone()].to_vec()),
                    )
                    .with(col::SWEEPS, ints(&p.sweeps[r.clone()]));
                out.write(run, BETWEEN_FILE, &piece)?;
            }
        }
        out.finish(run, BETWEEN_FILE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (HostBlocks, BetweenPairs) {
        let hosts = vec![
            HostEntry {
                name: "a".into(),
                ranks: vec![0, 1, 2],
            },
            HostEntry {
                name: "b".into(),
                ranks: vec![3, 4],
            },
        ];
        let mut index = HostIndex::new(5, Estimator::Median, vec![0, 1024], hosts);
        index.pairs.inside_measured = 4;
        index.pairs.between_measured = 2;
        let block =
            |g: usize, x: f64| Array2::from_shape_fn((g, g), |(a, b)| if a == b { 0.0 } else { x });
        let mut b0 = block(3, 1.0);
        b0[[0, 2]] = f64::NAN;
        b0[[2, 0]] = f64::NAN;
        let blocks = vec![
            HostBlock {
                values: vec![b0, block(3, 2.0)],
            },
            HostBlock {
                values: vec![block(2, 1.5), block(2, 2.5)],
            },
        ];
        let links = HostLinks {
            host_i: vec![0, 0, 1],
            host_j: vec![0, 1, 1],
            pairs: vec![2, 2, 1],
            median_us: vec![vec![1.0, 4.0, 1.5], vec![2.0, 8.0, 2.5]],
            p25_us: vec![vec![1.0, 3.5, 1.5], vec![2.0, 7.0, 2.5]],
            p75_us: vec![vec![1.0, 4.5, 1.5], vec![2.0, 9.0, 2.5]],
        };
        let between = BetweenPairs {
            host_i: vec![0, 0],
            host_j: vec![1, 1],
            i: vec![0, 2],
            j: vec![3, 4],
            sweeps: vec![1, 1],
            rtt_us: vec![vec![3.5, 4.5], vec![7.0, 9.0]],
            p10_us: vec![vec![3.4, 4.4], vec![6.9, 8.9]],
            p90_us: vec![vec![3.6, 4.6], vec![7.1, 9.1]],
        };
        (
            HostBlocks {
                index,
                blocks,
                links,
            },
            between,
        )
    }

    #[test]
    fn host_blocks_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::create(&dir.path().join("run"), false).unwrap();
        let (blocks, between) = sample();
        blocks.write(&run, &between).unwrap();
        assert!(HostBlocks::exist(&run));
        let read = HostBlocks::read(&run).unwrap();
        assert_eq!(read.index, blocks.index);
        assert_eq!(read.links, blocks.links);
        for (r, w) in read.blocks.iter().zip(&blocks.blocks) {
            for (x, y) in r.values.iter().zip(&w.values) {
                assert!(x
                    .iter()
                    .zip(y)
                    .all(|(a, b)| a == b || a.is_nan() && b.is_nan()));
            }
        }
        assert_eq!(
            HostBlocks::read_between(&run, &read.index).unwrap(),
            between
        );
        let m = read.links.matrix(1, 2);
        assert_eq!(m[[1, 0]], 8.0);
        assert_eq!(m[[1, 1]], 2.5);
        assert_eq!(read.index.host_of(), [0, 0, 0, 1, 1]);
    }

    #[test]
    fn a_bad_index_names_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::create(&dir.path().join("run"), false).unwrap();
        let (mut blocks, between) = sample();
        blocks.index.hosts[1].ranks = vec![2, 3];
        blocks.write(&run, &between).unwrap();
        let e = HostIndex::read(&run).unwrap_err().to_string();
        assert!(
            e.contains("index.json") && e.contains("listed twice"),
            "{e}"
        );
    }
}
