//! One side of a comparison: a run directory (its matrices, placement and each pair's repeat
//! spread from `measurements.parquet`) or a matrix file (host names from its labels).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lgate_cluster::input::InputError;
use lgate_matrix::DistanceMatrix;
use lgate_tables::table_layout::MEASUREMENTS_FILE;
use lgate_tables::{HostBlocks, RunHosts};

use crate::matching::RankPlace;
use crate::DiffError;

mod noise;

#[cfg(test)]
use noise::sweeps_noise;
use noise::{read_noise, screening_noise};

pub use lgate_stats::P10_P90_SIGMAS;

/// The matrix kinds a diff compares: measured values, not derived views (features) or masks.
pub const COMPARED_KINDS: [&str; 7] = ["latency", "t", "rtt", "os", "or", "g", "imported"];

/// One matrix of a side.
#[derive(Debug, Clone)]
pub struct SideMatrix {
    /// `latency`, `t:1KiB`, ...; `matrix` for a matrix file.
    pub name: String,
    /// The values.
    pub values: SideValues,
}

/// A side's matrix: dense, or the pairs a run's host blocks hold.
#[derive(Debug, Clone)]
pub enum SideValues {
    /// A dense matrix, one row per tested rank.
    Dense {
        /// The values.
        values: DistanceMatrix,
        /// Per pair (row-major, n x n): the standard deviation of one repetition, from the
        /// p10-p90 range of the pair's repetitions; NaN where the table has no row for it.
        noise: Option<Vec<f32>>,
    },
    /// The pairs measured, for a run that keeps host blocks and no dense matrix.
    Pairs(PairValues),
}

/// The pairs of one matrix a run measured (rows, smaller first), sorted, with each pair's
/// noise (NaN where unknown): 20 bytes a pair, no P x P array.
#[derive(Debug, Clone, Default)]
pub struct PairValues {
    keys: Vec<u64>,
    values: Vec<f64>,
    noise: Vec<f32>,
}

impl PairValues {
    /// The pairs of `(row, row, value, noise)` rows in any order (a pair given twice keeps
    /// one of its values).
    pub fn new(mut rows: Vec<(u64, f64, f32)>) -> Self {
        rows.sort_unstable_by_key(|r| r.0);
        rows.dedup_by_key(|r| r.0);
        PairValues {
            keys: rows.iter().map(|r| r.0).collect(),
            values: rows.iter().map(|r| r.1).collect(),
            noise: rows.iter().map(|r| r.2).collect(),
        }
    }

    /// The key of the pair of rows `k` and `l`, in either order.
    pub fn key(k: usize, l: usize) -> u64 {
        ((k.min(l) as u64) << 32) | k.max(l) as u64
    }

    /// The value and noise of the pair of rows `k` and `l`, when measured.
    pub fn get(&self, k: usize, l: usize) -> Option<(f64, f32)> {
        let at = self.keys.binary_search(&Self::key(k, l)).ok()?;
        Some((self.values[at], self.noise[at]))
    }

    /// Every pair: (row, row, value, noise), the smaller row first.
    pub fn iter(&self) -> impl Iterator<Item = (usize, usize, f64, f32)> + '_ {
        (0..self.keys.len()).map(|n| {
            let key = self.keys[n];
            (
                (key >> 32) as usize,
                (key & 0xffff_ffff) as usize,
                self.values[n],
                self.noise[n],
            )
        })
    }

    /// The number of pairs.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// A run (or matrix file) as `diff` reads it.
#[derive(Debug, Clone)]
pub struct RunSide {
    /// What was read.
    pub path: PathBuf,
    /// The tested ranks, the rows of every matrix.
    pub ranks: Vec<usize>,
    /// Where each tested rank ran, in row order.
    pub places: Vec<RankPlace>,
    /// The compared matrices.
    pub matrices: Vec<SideMatrix>,
    /// For a staged run: per pair (row-major), whether it was measured rather than filled in.
    pub measured: Option<Vec<bool>>,
}

impl RunSide {
    /// The number of tested ranks.
    pub fn len(&self) -> usize {
        self.ranks.len()
    }

    /// Whether no rank was tested.
    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty()
    }

    /// The host of the rank in row `k`, when known.
    pub fn host(&self, k: usize) -> Option<&str> {
        self.places[k].host.as_deref()
    }

    /// Whether the pair of rows (k, l) holds a measurement, not a filled-in value.
    pub fn is_measured(&self, k: usize, l: usize) -> bool {
        self.measured
            .as_ref()
            .is_none_or(|m| m[k * self.len() + l] || m[l * self.len() + k])
    }

    /// Reads a run directory or a matrix file; `only` limits the matrices to these names.
    pub fn read(path: &Path, only: Option<&[String]>) -> Result<RunSide, DiffError> {
        if path.is_dir() {
            read_run(path, only)
        } else {
            read_file(path)
        }
    }
}

fn read_file(path: &Path) -> Result<RunSide, DiffError> {
    let input = lgate_cluster::load(path, None)?;
    let labels = input.need_dense("diff")?.labels().to_vec();
    // Labels that are not all numbers are host names: the ranks of one host are told apart
    // by their order.
    let hosts = labels.iter().any(|l| l.parse::<usize>().is_err());
    let places = input
        .ranks
        .iter()
        .map(|&rank| RankPlace {
            rank,
            host: hosts.then(|| labels[rank].clone()),
            bound_cpu: None,
        })
        .collect();
    Ok(RunSide {
        path: path.to_path_buf(),
        ranks: input.ranks.clone(),
        places,
        matrices: vec![SideMatrix {
            name: "matrix".into(),
            values: SideValues::Dense {
                values: input.into_dense("diff")?,
                noise: None,
            },
        }],
        measured: None,
    })
}

/// Where each of `ranks` ran, from the run's meta.json.
fn places_of(meta: &lgate_rundir::RunMeta, ranks: &[usize]) -> Vec<RankPlace> {
    ranks
        .iter()
        .map(|&rank| {
            let info = &meta.ranks[rank];
            let single = info
                .cpuset
                .as_deref()
                .and_then(lgate_rundir::parse_cpu_list)
                .filter(|cpus| cpus.len() == 1)
                .map(|cpus| cpus[0]);
            RankPlace {
                rank,
                host: Some(info.host.clone()),
                bound_cpu: single,
            }
        })
        .collect()
}

/// A run that keeps host blocks and no dense matrix: per screening size (`rtt:SIZE`) the pairs
/// inside each host and those measured between hosts, the latter with their repetitions'
/// noise (a block keeps none: the sampled pairs' repetitions give the noise inside hosts).
fn read_hosts(
    run: &lgate_rundir::RunDir,
    meta: &lgate_rundir::RunMeta,
    only: Option<&[String]>,
) -> Result<RunSide, DiffError> {
    let blocks = run.read_hosts()?;
    let index = &blocks.index;
    if index.ranks != meta.ranks.len() {
        return Err(DiffError::Invalid {
            path: run.file(lgate_rundir::files::HOST_INDEX_FILE),
            message: format!(
                "{} ranks, but meta.json has {}",
                index.ranks,
                meta.ranks.len()
            ),
        });
    }
    let between = HostBlocks::read_between(run, index)?;
    // The sampled pairs' repetitions (the full test of a few pairs, inside hosts and between):
    // the only noise a pair inside a host has.
    let mut sampled: HashMap<(u64, usize), f32> = HashMap::new();
    let table = run.file(MEASUREMENTS_FILE);
    if table.is_file() {
        lgate_tables::for_each_measurement(&table, |row| {
            let range = row.p90_us - row.p10_us;
            if row.parameter == "rtt" && range.is_finite() && range >= 0.0 {
                sampled.insert(
                    (PairValues::key(row.i, row.j), row.size_bytes),
                    (range / P10_P90_SIGMAS) as f32,
                );
            }
        })?;
    }
    let names: Vec<String> = (index.sizes.iter())
        .map(|&m| format!("rtt:{}", lgate_rundir::MessageSize(m)))
        .collect();
    let mut matrices = Vec::new();
    for (k, name) in names.iter().enumerate() {
        if only.is_some_and(|o| !o.contains(name)) {
            continue;
        }
        let mut rows: Vec<(u64, f64, f32)> = Vec::new();
        for (host, block) in index.hosts.iter().zip(&blocks.blocks) {
            let m = &block.values[k];
            for (a, &i) in host.ranks.iter().enumerate() {
                for (b, &j) in host.ranks.iter().enumerate().skip(a + 1) {
                    if m[[a, b]].is_finite() {
                        let key = PairValues::key(i, j);
                        let sigma = sampled.get(&(key, index.sizes[k])).copied();
                        rows.push((key, m[[a, b]], sigma.unwrap_or(f32::NAN)));
                    }
                }
            }
        }
        for n in 0..between.len() {
            let (i, j) = (between.i[n] as usize, between.j[n] as usize);
            let x = between.rtt_us[k][n];
            if x.is_finite() {
                let range = between.p90_us[k][n] - between.p10_us[k][n];
                let sigma = if range >= 0.0 {
                    (range / P10_P90_SIGMAS) as f32
                } else {
                    f32::NAN
                };
                rows.push((PairValues::key(i, j), x, sigma));
            }
        }
        matrices.push(SideMatrix {
            name: name.clone(),
            values: SideValues::Pairs(PairValues::new(rows)),
        });
    }
    if matrices.is_empty() {
        return Err(DiffError::Invalid {
            path: run.file(lgate_rundir::files::HOST_INDEX_FILE),
            message: format!(
                "none of the matrices {} is in this run; it has {}",
                only.unwrap_or_default().join(", "),
                names.join(", ")
            ),
        });
    }
    let ranks: Vec<usize> = (0..index.ranks).collect();
    Ok(RunSide {
        path: run.path().to_path_buf(),
        places: places_of(meta, &ranks),
        ranks,
        matrices,
        measured: None,
    })
}

fn read_run(path: &Path, only: Option<&[String]>) -> Result<RunSide, DiffError> {
    let run = lgate_rundir::RunDir::open(path)?;
    let meta = run.read_meta()?;
    if run.has_hosts() && !run.file(lgate_rundir::MATRIX_INDEX_FILE).is_file() {
        return read_hosts(&run, &meta, only);
    }
    let index = run.read_matrices()?;
    let entries: Vec<&lgate_rundir::MatrixEntry> = index
        .matrices
        .iter()
        .filter(|e| COMPARED_KINDS.contains(&e.kind()))
        .filter(|e| only.is_none_or(|names| names.contains(&e.name)))
        .collect();
    if entries.is_empty() {
        return Err(DiffError::Invalid {
            path: run.file(lgate_rundir::MATRIX_INDEX_FILE),
            message: match only {
                Some(names) => format!(
                    "none of the matrices {} is in this run; it has {}",
                    names.join(", "),
                    index.names().join(", ")
                ),
                None => "the run has no measured matrix to compare".into(),
            },
        });
    }
    let mut ranks: Option<Vec<usize>> = None;
    let mut matrices = Vec::new();
    for e in &entries {
        let input = lgate_cluster::load(path, Some(&e.name))?;
        match &ranks {
            None => ranks = Some(input.ranks.clone()),
            Some(r) if *r != input.ranks => {
                return Err(DiffError::Invalid {
                    path: run.file(&e.path()),
                    message: "its ranks differ from the run's other matrices".into(),
                })
            }
            Some(_) => {}
        }
        matrices.push(SideMatrix {
            name: e.name.clone(),
            values: SideValues::Dense {
                values: input.into_dense("diff")?,
                noise: None,
            },
        });
    }
    let ranks = ranks.unwrap_or_default();
    let n = ranks.len();
    let places = places_of(&meta, &ranks);
    let measured = match &index.measured {
        Some(mask) if mask.filled_pairs > 0 => {
            let file = run.file(&format!("{}/{}", lgate_rundir::MATRICES_DIR, mask.file));
            let read = lgate_matrix::read_matrix(&file).map_err(InputError::from)?;
            if read.matrix.len() != n {
                return Err(DiffError::Invalid {
                    path: file,
                    message: format!("{} rows, the matrices have {n}", read.matrix.len()),
                });
            }
            Some(read.matrix.values().iter().map(|&x| x > 0.5).collect())
        }
        _ => None,
    };
    let table = run.file(MEASUREMENTS_FILE);
    if table.is_file() {
        let sizes: Vec<(String, Option<usize>)> = entries
            .iter()
            .map(|e| (e.kind().to_string(), e.size_bytes))
            .collect();
        let sweeps = meta.schedule.sweeps.max(1) as usize;
        let noise = read_noise(&table, &ranks, &sizes, sweeps)?;
        for (m, sigma) in matrices.iter_mut().zip(noise) {
            if let SideValues::Dense { noise, .. } = &mut m.values {
                *noise = sigma;
            }
        }
    }
    // A staged run's screening matrices: their noise is the screening's, each pair's tests
    // apart included.
    let screen = run.file(lgate_rundir::files::SCREEN_TABLE);
    if screen.is_file() {
        let rows = lgate_rundir::read_screen_table(&screen)?;
        let sizes: Vec<Option<usize>> = entries
            .iter()
            .map(|e| (e.kind() == "rtt").then_some(e.size_bytes).flatten())
            .collect();
        let hosts: Vec<Option<&str>> = places.iter().map(|p| p.host.as_deref()).collect();
        for (m, size) in matrices.iter_mut().zip(sizes) {
            let (Some(size), SideValues::Dense { noise, .. }) = (size, &mut m.values) else {
                continue;
            };
            if let Some(sigma) = screening_noise(&rows, size, &ranks, &hosts) {
                *noise = Some(sigma);
            }
        }
    }
    Ok(RunSide {
        path: path.to_path_buf(),
        ranks,
        places,
        matrices,
        measured,
    })
}

/// The table's parameter names, as static strings (unknown ones map to "").
fn param_name(p: &str) -> &'static str {
    match p {
        "L" => "L",
        "rtt" => "rtt",
        "os" => "os",
        "or" => "or",
        "g" => "g",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sweeps_wide_range_does_not_make_a_precise_pair_noisy() {
        // Three sweeps of a 12 ms pair, one with a repetition 2 ms off: the median range.
        let mut ranges = [2011.0, 21.0, 25.0];
        let values = [12000.0, 11999.0, 12001.0];
        let sigma = sweeps_noise(&mut ranges, &values).unwrap();
        let repeat = 25.0 / P10_P90_SIGMAS;
        assert!((sigma - repeat.hypot(1.0)).abs() < 1e-3, "{sigma}");
        // Sweeps that disagree keep their whole spread: 4x slower in two of three.
        let mut ranges = [0.05, 0.1, 0.06];
        let sigma = sweeps_noise(&mut ranges, &[0.32, 1.23, 1.16]).unwrap();
        assert!(sigma > 0.45, "{sigma}");
        // Two sweeps: their mean range; none: no noise known.
        let mut ranges = [10.0, 30.0];
        let sigma = sweeps_noise(&mut ranges, &[100.0, 100.0]).unwrap();
        assert!((sigma - 20.0 / P10_P90_SIGMAS).abs() < 1e-9);
        assert_eq!(sweeps_noise(&mut [], &[]), None);
    }
}
