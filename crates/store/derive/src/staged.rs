//! What a staged run derives (`measure --plan staged`): the screening by hosts (`hosts/`: each
//! host's block, the pairs between hosts, the host x host summary), and up to
//! [`DenseMatrices::LIMIT`] ranks (or with `--dense`) the screening table and complete RTT(m)
//! matrices whose unmeasured pairs are filled from their groups' measured pairs (with a mask
//! saying which); the full test's outputs for the sampled pairs, and `report.json` with the
//! interference the alone stage measured.
//!
//! The journal holds `g (g - 1) / 2` pairs per group of g ranks and K per pair of groups; the
//! host blocks grow with them, the dense matrices as P^2 (8 bytes a pair and size).
//!
//! [`DenseMatrices::LIMIT`]: crate::DenseMatrices::LIMIT

use std::collections::{BTreeMap, BTreeSet, HashSet};

use lgate_matrix::DistanceMatrix;
use lgate_rundir::files::{HOSTS_DIR, MASK_FILE, PINGPONG_TABLE, REPORT_FILE, SCREEN_TABLE};
use lgate_rundir::report::{Interference, PairCounts, SampledPair, StagedPlanName, StagedReport};
use lgate_rundir::{JournalEntry, MatrixEntry, MeasuredMask, RunDir, RunMeta, Stage};
use lgate_rundir::{Pair, Report, RoundTrips, TestInfo};

use crate::host_blocks::{dense, ByHosts, HostBlocksBuilder};
use crate::outputs::{write_matrix_set_with, OutputError, OutputOptions};
use crate::pingpong::{round_trip_table, round_trips_of};
use crate::plogp::write_outputs;
use lgate_rundir::MessageSize;

/// The median of some values, `None` when there are none.
fn median(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| lgate_stats::median(&mut values.to_vec()))
}

/// Derives a staged run from its journal file, read a line at a time and never held whole
/// (10 million tests at 128 000 ranks), then once more for the few side-by-side tests of the
/// pairs tested alone; a run that does not record its screening sizes is read whole.
pub fn derive_staged(
    run: &RunDir,
    meta: &RunMeta,
    options: &OutputOptions,
) -> Result<Vec<String>, OutputError> {
    let path = run.journal_file();
    let journal = path.display().to_string();
    let sizes = (meta.schedule.plan.as_ref())
        .and_then(|p| match &p.screen {
            TestInfo::PingPong(p) => Some(p),
            _ => None,
        })
        .map(|p| {
            let mut s = p.sizes.clone();
            s.sort_unstable();
            s.dedup();
            s
        });
    let Some(sizes) = sizes else {
        let read = run.read_journal()?;
        return write_staged_outputs(run, meta, &read.entries, options);
    };
    let size = meta.ranks.len();
    let mut screening = StagedScreening::new(run, meta, sizes, options)?;
    if let Some(plan) = &meta.schedule.plan {
        // The plan's count, at most one per 32 bytes of journal (a binary screening record of
        // one size takes 36, of two 54; a JSON line hundreds).
        let sweeps = meta.schedule.sweeps as usize;
        let lines = std::fs::metadata(&path).map_or(0, |m| m.len() / 32) as usize;
        screening.reserve_between(plan.screening_tests[1].saturating_mul(sweeps).min(lines));
    }
    let mut sampled = Vec::new();
    let mut alone: Vec<(u32, Pair, Vec<RoundTrips>)> = Vec::new();
    lgate_rundir::for_each_journal_entry(&path, |e| {
        match check_entry(&e, size, &journal)? {
            Stage::Sample => sampled.push(e),
            stage => {
                let trips = round_trips_of(&e, &journal)?.sizes;
                let pair = Pair::new(e.i, e.j);
                screening.add(stage, e.sweep, pair, &trips);
                if stage == Stage::Alone {
                    alone.push((e.sweep, pair, trips));
                }
            }
        }
        Ok::<_, OutputError>(())
    })?;
    let wanted: HashSet<(u32, Pair)> = alone.iter().map(|(w, p, _)| (*w, *p)).collect();
    let mut side: Vec<(Stage, u32, Pair, Vec<RoundTrips>)> = Vec::new();
    if !wanted.is_empty() {
        lgate_rundir::for_each_journal_entry(&path, |e| {
            let pair = Pair::new(e.i, e.j);
            if matches!(e.stage, Some(Stage::Hosts | Stage::Between))
                && wanted.contains(&(e.sweep, pair))
            {
                let trips = round_trips_of(&e, &journal)?.sizes;
                side.push((e.stage.unwrap_or(Stage::Hosts), e.sweep, pair, trips));
            }
            Ok::<_, OutputError>(())
        })?;
    }
    let interference = interference(
        (alone.iter())
            .map(|(w, p, t)| (Stage::Alone, *w, *p, t.as_slice()))
            .chain(side.iter().map(|(s, w, p, t)| (*s, *w, *p, t.as_slice()))),
    );
    screening.finish(run, meta, &sampled, interference, &alone, options)
}

/// The stage of a journal entry of a staged run, checked: a stage, and a pair of its ranks.
fn check_entry(e: &JournalEntry, size: usize, journal: &str) -> Result<Stage, OutputError> {
    let bad = |message: String| OutputError::BadEntry {
        path: journal.to_string(),
        sweep: e.sweep,
        i: e.i,
        j: e.j,
        message,
    };
    match e.stage {
        Some(Stage::Sample) => Ok(Stage::Sample),
        Some(_) if e.i >= size || e.j >= size || e.i >= e.j => {
            Err(bad(format!("not a pair of the run's {size} ranks")))
        }
        Some(stage) => Ok(stage),
        None => Err(bad("an entry without a stage in a staged run".into())),
    }
}

/// Writes a staged run's outputs from its journal; returns the names written.
pub fn write_staged_outputs(
    run: &RunDir,
    meta: &RunMeta,
    entries: &[JournalEntry],
    options: &OutputOptions,
) -> Result<Vec<String>, OutputError> {
    let journal = run.journal_file().display().to_string();
    let size = meta.ranks.len();
    // The screening: every entry of the screening stages, parsed once.
    let mut screened: Vec<(&JournalEntry, Stage, Vec<RoundTrips>)> = Vec::new();
    let mut sampled: Vec<JournalEntry> = Vec::new();
    for e in entries {
        match check_entry(e, size, &journal)? {
            Stage::Sample => sampled.push(e.clone()),
            stage => screened.push((e, stage, round_trips_of(e, &journal)?.sizes)),
        }
    }
    let sizes: Vec<usize> = screened
        .iter()
        .flat_map(|(_, _, s)| s.iter().map(|r| r.size))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut screening = StagedScreening::new(run, meta, sizes, options)?;
    for (e, stage, trips) in &screened {
        screening.add(*stage, e.sweep, Pair::new(e.i, e.j), trips);
    }
    let interference = interference(
        screened
            .iter()
            .map(|(e, stage, trips)| (*stage, e.sweep, Pair::new(e.i, e.j), trips.as_slice())),
    );
    let alone: Vec<(u32, Pair, Vec<RoundTrips>)> = (screened.iter())
        .filter(|(_, stage, _)| *stage == Stage::Alone)
        .map(|(e, _, trips)| (e.sweep, Pair::new(e.i, e.j), trips.clone()))
        .collect();
    drop(screened);
    screening.finish(run, meta, &sampled, interference, &alone, options)
}

/// One row of the screening table: sweep, stage, pair and round trips.
type ScreenRow = (u32, Stage, Pair, Vec<RoundTrips>);

/// A staged run's screening tests gathered one at a time, in any order, into its host blocks;
/// up to [`DenseMatrices::LIMIT`] ranks (or with `--dense`) also kept whole for the screening
/// table and the dense matrices.
///
/// [`DenseMatrices::LIMIT`]: crate::DenseMatrices::LIMIT
pub struct StagedScreening {
    groups: Vec<Vec<usize>>,
    builder: HostBlocksBuilder,
    table: Option<Vec<ScreenRow>>,
    tests: BTreeMap<Stage, usize>,
}

impl StagedScreening {
    /// Gathers the screening of the staged run `meta` (its groups from the topology it
    /// recorded) at screening `sizes` (ascending).
    pub fn new(
        run: &RunDir,
        meta: &RunMeta,
        sizes: Vec<usize>,
        options: &OutputOptions,
    ) -> Result<Self, OutputError> {
        let groups = groups_of(meta).map_err(|message| {
            OutputError::RunDir(lgate_rundir::RunDirError::BadMeta {
                path: run.file(lgate_rundir::META_FILE),
                message,
            })
        })?;
        let builder = HostBlocksBuilder::new(&meta.ranks, &groups, &sizes, options.estimator);
        Ok(StagedScreening {
            groups,
            builder,
            table: options.dense.wanted(meta.ranks.len()).then(Vec::new),
            tests: BTreeMap::new(),
        })
    }

    /// Room for `tests` more tests between hosts (the plan's count: the rows are held until the
    /// end, and a growing column would hold up to twice its rows).
    pub fn reserve_between(&mut self, tests: usize) {
        self.builder.reserve_between(tests);
    }

    /// Adds one screening test (any stage but `sample`).
    pub fn add(&mut self, stage: Stage, sweep: u32, pair: Pair, trips: &[RoundTrips]) {
        *self.tests.entry(stage).or_default() += 1;
        // Every screening but the alone re-tests, which would count a pair twice.
        if matches!(stage, Stage::Hosts | Stage::Between | Stage::Refine) {
            self.builder.add(pair, trips);
        }
        if let Some(table) = &mut self.table {
            table.push((sweep, stage, pair, trips.to_vec()));
        }
    }

    /// Writes the run's outputs: the screening table and dense matrices when kept, the host
    /// blocks, the `sampled` pairs' full tests and `report.json` with `interference` and the
    /// slow pairs the `alone` tests confirm; returns the names written.
    pub fn finish(
        self,
        run: &RunDir,
        meta: &RunMeta,
        sampled: &[JournalEntry],
        interference: BTreeMap<String, BTreeMap<String, Interference>>,
        alone: &[(u32, Pair, Vec<RoundTrips>)],
        options: &OutputOptions,
    ) -> Result<Vec<String>, OutputError> {
        let journal = run.journal_file().display().to_string();
        let size = meta.ranks.len();
        let mut written = Vec::new();
        if let Some(mut table) = self.table {
            table.sort_by_key(|(sweep, stage, pair, _)| (*sweep, *stage, pair.i, pair.j));
            let text = round_trip_table(table.iter().flat_map(|(sweep, stage, pair, sizes)| {
                sizes
                    .iter()
                    .map(move |s| (*sweep, Some(*stage), pair.i, pair.j, s))
            }));
            run.write_file(SCREEN_TABLE, text.as_bytes())?;
            written.push(SCREEN_TABLE.to_string());
        }
        let by = self.builder.finish();
        by.blocks.write(run, &by.between)?;
        written.push(format!("{HOSTS_DIR}/"));
        let measured = MeasuredMask {
            file: MASK_FILE.into(),
            filled_with: "the median of the measured pairs between the same two groups".into(),
            measured_pairs: by.measured,
            filled_pairs: size * (size - 1) / 2 - by.measured,
        };
        if options.dense.wanted(size) {
            let sizes = by.blocks.index.sizes.clone();
            write_dense(run, &by, &sizes, &measured, options)?;
            written.push(format!("{}/", lgate_rundir::MATRICES_DIR));
        } else {
            // A dense set derived before (a smaller run in this folder) would be read instead.
            let dir = run.file(lgate_rundir::MATRICES_DIR);
            if dir.exists() {
                std::fs::remove_dir_all(&dir).map_err(|error| {
                    OutputError::RunDir(lgate_rundir::RunDirError::Io { path: dir, error })
                })?;
            }
        }
        let group_of = by.blocks.index.host_of();
        let slow = crate::report::slow_in_blocks(&by, &meta.ranks);
        let slow_pairs = crate::slow_pairs::slow_pairs(&by, alone, &meta.ranks);
        drop(by);

        // The full test's outputs for the sampled pairs.
        if !sampled.is_empty() && matches!(meta.test, TestInfo::PLogP(_)) {
            let table_only = OutputOptions {
                matrices: false,
                ..options.clone()
            };
            written.extend(write_outputs(run, sampled, &table_only)?);
        } else if !sampled.is_empty() {
            let mut rows = Vec::new();
            for e in sampled {
                rows.extend(
                    round_trips_of(e, &journal)?
                        .sizes
                        .into_iter()
                        .map(|s| (e.sweep, e.i, e.j, s)),
                );
            }
            let csv = round_trip_table(rows.iter().map(|(w, i, j, s)| (*w, None, *i, *j, s)));
            run.write_file(PINGPONG_TABLE, csv.as_bytes())?;
            written.push(PINGPONG_TABLE.to_string());
        }

        let mut tests = self.tests;
        *tests.entry(Stage::Sample).or_default() += sampled.len();
        let mut health = crate::slow::health_lines(&slow);
        health.extend(crate::slow_pairs::slow_pair_lines(&slow_pairs));
        let report = Report::Staged(StagedReport {
            groups: self.groups.len(),
            hosts: crate::report::hosts_report(&meta.ranks, &meta.hosts),
            interference,
            levels: None,
            pairs: PairCounts {
                filled: measured.filled_pairs,
                filled_share: measured.filled_share(),
                measured: measured.measured_pairs,
                total: size * (size - 1) / 2,
            },
            plan: StagedPlanName::Staged,
            sample: sampled
                .iter()
                .map(|e| SampledPair {
                    i: e.i,
                    inside_group: group_of.get(e.i) == group_of.get(e.j),
                    j: e.j,
                })
                .collect(),
            tests: Stage::ALL
                .iter()
                .map(|s| (s.name().to_string(), tests.get(s).copied().unwrap_or(0)))
                .collect(),
            slow_hosts: slow.hosts,
            slow_ranks: slow.ranks,
            slow_pairs,
            health,
        });
        run.write_file(REPORT_FILE, report.to_json().as_bytes())?;
        written.push(REPORT_FILE.into());
        Ok(written)
    }
}

/// Writes the dense matrices of a staged run, one per screening size, and the mask, filled
/// from its host blocks.
fn write_dense(
    run: &RunDir,
    by: &ByHosts,
    sizes: &[usize],
    measured: &MeasuredMask,
    options: &OutputOptions,
) -> Result<(), OutputError> {
    let size = by.blocks.index.ranks;
    let filled = dense(by).map_err(|message| OutputError::Incomplete {
        missing: message.0,
        expected: size * (size - 1) / 2,
        first: message.1,
    })?;
    let labels: Vec<String> = (0..size).map(|r| r.to_string()).collect();
    let matrices: Vec<(MatrixEntry, DistanceMatrix)> = sizes
        .iter()
        .zip(filled.values)
        .map(|(&m, values)| {
            let size = MessageSize(m);
            (
                MatrixEntry::in_us(
                    &format!("rtt:{size}"),
                    &format!("rtt_{m}.csv"),
                    &format!(
                        "screening round-trip time RTT(m), m bytes out and m back, at m = {size}; \
                         pairs not measured hold their groups' median (see {MASK_FILE})"
                    ),
                    Some(m),
                ),
                DistanceMatrix::new(values, Some(labels.clone()))
                    .expect("finite, non-negative, square by construction"),
            )
        })
        .collect();
    let mask = DistanceMatrix::new(filled.mask, Some(labels.clone()))
        .expect("zeros and ones, square by construction");
    let refs: Vec<(MatrixEntry, &DistanceMatrix)> =
        matrices.iter().map(|(e, m)| (e.clone(), m)).collect();
    // Latency shows the levels of one machine and bandwidth those of another (on an emulated
    // cluster of two busy cores, latency is noise): `cluster` tries every screening size and
    // keeps the one that shows the most levels; the largest is the default for other readers.
    let names: Vec<String> = sizes
        .iter()
        .map(|&m| format!("rtt:{}", MessageSize(m)))
        .collect();
    let default = names.last().cloned();
    write_matrix_set_with(
        run,
        options.estimator,
        &refs,
        default,
        names,
        Some((measured.clone(), &mask)),
    )
}

/// The groups (leaves) of the topology a run recorded.
fn groups_of(meta: &RunMeta) -> Result<Vec<Vec<usize>>, String> {
    let topology = (meta.schedule.topology.as_ref()).ok_or("it recorded no topology")?;
    if topology.ranks() != meta.ranks.len() {
        return Err(format!(
            "its topology has {} ranks, the run {}",
            topology.ranks(),
            meta.ranks.len()
        ));
    }
    Ok(topology.tree().sorted_groups())
}

/// Per stage measured side by side, the median ratio of a pair's round trip then to its round
/// trip alone, at each size: above 1, testing side by side slowed the tests. `tests` are the
/// screening tests (stage, sweep, pair, round trips); only the alone ones and the hosts and
/// between tests of the same pairs and sweeps count.
pub fn interference<'a>(
    tests: impl Iterator<Item = (Stage, u32, Pair, &'a [RoundTrips])> + Clone,
) -> BTreeMap<String, BTreeMap<String, Interference>> {
    let alone: BTreeMap<(u32, Pair), &[RoundTrips]> = tests
        .clone()
        .filter(|(s, _, _, _)| *s == Stage::Alone)
        .map(|(_, sweep, pair, r)| ((sweep, pair), r))
        .collect();
    let mut out = BTreeMap::new();
    for stage in [Stage::Hosts, Stage::Between] {
        let mut ratios: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        for (_, sweep, pair, trips) in tests.clone().filter(|(s, _, _, _)| *s == stage) {
            let Some(quiet) = alone.get(&(sweep, pair)) else {
                continue;
            };
            for t in trips {
                if let Some(q) = quiet.iter().find(|q| q.size == t.size) {
                    if q.rtt.median > 0.0 {
                        ratios
                            .entry(t.size)
                            .or_default()
                            .push(t.rtt.median / q.rtt.median);
                    }
                }
            }
        }
        if ratios.is_empty() {
            continue;
        }
        let per_size: BTreeMap<String, Interference> = ratios
            .iter()
            .map(|(size, r)| {
                let i = Interference {
                    median_ratio_side_by_side_to_alone: median(r).unwrap_or(f64::NAN),
                    pairs: r.len(),
                };
                (MessageSize(*size).to_string(), i)
            })
            .collect();
        out.insert(stage.name().to_string(), per_size);
    }
    out
}
