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

use std::collections::{BTreeMap, BTreeSet};

use lgate_matrix::DistanceMatrix;
use lgate_rundir::files::{HOSTS_DIR, MASK_FILE, PINGPONG_TABLE, REPORT_FILE, SCREEN_TABLE};
use lgate_rundir::report::{Interference, PairCounts, SampledPair, StagedPlanName, StagedReport};
use lgate_rundir::{JournalEntry, MatrixEntry, MeasuredMask, RunDir, RunMeta, Stage};
use lgate_rundir::{Pair, Report, RoundTrips};

use crate::host_blocks::{by_hosts, dense, ByHosts, ScreenedTest};
use crate::outputs::{write_matrix_set_with, OutputError, OutputOptions};
use crate::pingpong::{round_trip_table, round_trips_of};
use crate::plogp::write_outputs;
use lgate_rundir::MessageSize;

/// The median of some values, `None` when there are none.
fn median(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| lgate_stats::median(&mut values.to_vec()))
}

/// Writes a staged run's outputs from its journal; returns the names written.
pub fn write_staged_outputs(
    run: &RunDir,
    meta: &RunMeta,
    entries: &[JournalEntry],
    options: &OutputOptions,
) -> Result<Vec<String>, OutputError> {
    let journal = run.file(lgate_rundir::JOURNAL_FILE).display().to_string();
    let size = meta.ranks.len();
    let bad_meta = |message: String| {
        OutputError::RunDir(lgate_rundir::RunDirError::BadMeta {
            path: run.file(lgate_rundir::META_FILE),
            message,
        })
    };
    let groups = groups_of(meta).map_err(bad_meta)?;
    let mut group_of = vec![usize::MAX; size];
    for (k, g) in groups.iter().enumerate() {
        for &r in g {
            if r < size {
                group_of[r] = k;
            }
        }
    }

    // The screening: every entry of the screening stages, parsed once.
    let mut screened: Vec<(&JournalEntry, Stage, Vec<RoundTrips>)> = Vec::new();
    let mut sampled: Vec<&JournalEntry> = Vec::new();
    for e in entries {
        match e.stage {
            Some(Stage::Sample) => sampled.push(e),
            Some(stage) => {
                if e.i >= size || e.j >= size || e.i >= e.j {
                    return Err(OutputError::BadEntry {
                        path: journal.clone(),
                        sweep: e.sweep,
                        i: e.i,
                        j: e.j,
                        message: format!("not a pair of the run's {size} ranks"),
                    });
                }
                screened.push((e, stage, round_trips_of(e, &journal)?.sizes))
            }
            None => {
                return Err(OutputError::BadEntry {
                    path: journal.clone(),
                    sweep: e.sweep,
                    i: e.i,
                    j: e.j,
                    message: "an entry without a stage in a staged run".into(),
                })
            }
        }
    }
    screened.sort_by_key(|(e, stage, _)| (e.sweep, *stage, e.i, e.j));
    let mut written = Vec::new();
    if options.dense.wanted(size) {
        // A line per test and size: 1 GB at 128 000 ranks, where hosts/ holds each pair's value.
        let table = round_trip_table(screened.iter().flat_map(|(e, stage, sizes)| {
            sizes
                .iter()
                .map(move |s| (e.sweep, Some(*stage), e.i, e.j, s))
        }));
        run.write_file(SCREEN_TABLE, table.as_bytes())?;
        written.push(SCREEN_TABLE.to_string());
    }

    let sizes: Vec<usize> = screened
        .iter()
        .flat_map(|(_, _, s)| s.iter().map(|r| r.size))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // Every screening but the alone re-tests, which would count a pair twice.
    let concurrent =
        |e: &JournalEntry| matches!(e.stage, Some(Stage::Hosts | Stage::Between | Stage::Refine));
    let tests: Vec<ScreenedTest> = screened
        .iter()
        .filter(|(e, _, _)| concurrent(e))
        .map(|(e, _, s)| ScreenedTest {
            pair: Pair::new(e.i, e.j),
            trips: s,
        })
        .collect();
    let by = by_hosts(&meta.ranks, &groups, &sizes, options.estimator, &tests);
    drop(tests);
    by.blocks.write(run, &by.between)?;
    written.push(format!("{HOSTS_DIR}/"));
    let measured = MeasuredMask {
        file: MASK_FILE.into(),
        filled_with: "the median of the measured pairs between the same two groups".into(),
        measured_pairs: by.measured,
        filled_pairs: size * (size - 1) / 2 - by.measured,
    };
    if options.dense.wanted(size) {
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

    // The full test's outputs for the sampled pairs.
    let sample_pairs: Vec<Pair> = sampled.iter().map(|e| Pair::new(e.i, e.j)).collect();
    if !sampled.is_empty() && meta.test.name == "plogp" {
        let table_only = OutputOptions {
            matrices: false,
            ..options.clone()
        };
        let entries: Vec<JournalEntry> = sampled.iter().map(|e| (*e).clone()).collect();
        written.extend(write_outputs(run, &entries, &table_only)?);
    } else if !sampled.is_empty() {
        let mut rows = Vec::new();
        for e in &sampled {
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

    let report = Report::Staged(StagedReport {
        groups: groups.len(),
        hosts: crate::report::hosts_report(&meta.ranks, &meta.hosts),
        interference: interference(&screened),
        pairs: PairCounts {
            filled: measured.filled_pairs,
            filled_share: measured.filled_share(),
            measured: measured.measured_pairs,
            total: size * (size - 1) / 2,
        },
        plan: StagedPlanName::Staged,
        sample: sample_pairs
            .iter()
            .map(|p| SampledPair {
                i: p.i,
                inside_group: group_of[p.i] == group_of[p.j],
                j: p.j,
            })
            .collect(),
        tests: Stage::ALL
            .iter()
            .map(|s| {
                let n = entries.iter().filter(|e| e.stage == Some(*s)).count();
                (s.name().to_string(), n)
            })
            .collect(),
    });
    run.write_file(REPORT_FILE, report.to_json().as_bytes())?;
    written.push(REPORT_FILE.into());
    Ok(written)
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
    let text = meta.schedule.topology.to_string();
    let (topology, _) = lgate_topology::format::parse(
        &text,
        Some(lgate_topology::TopologyFormat::Json),
        Some(meta.ranks.len()),
    )
    .map_err(|e| format!("its topology does not parse: {e}"))?;
    Ok(topology.tree().sorted_groups())
}

/// Per stage measured side by side, the median ratio of a pair's round trip then to its round
/// trip alone, at each size: above 1, testing side by side slowed the tests.
fn interference(
    screened: &[(&JournalEntry, Stage, Vec<RoundTrips>)],
) -> BTreeMap<String, BTreeMap<String, Interference>> {
    let alone: BTreeMap<(u32, Pair), &Vec<RoundTrips>> = screened
        .iter()
        .filter(|(_, s, _)| *s == Stage::Alone)
        .map(|(e, _, r)| ((e.sweep, Pair::new(e.i, e.j)), r))
        .collect();
    let mut out = BTreeMap::new();
    for stage in [Stage::Hosts, Stage::Between] {
        let mut ratios: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        for (e, _, trips) in screened.iter().filter(|(_, s, _)| *s == stage) {
            let Some(quiet) = alone.get(&(e.sweep, Pair::new(e.i, e.j))) else {
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
