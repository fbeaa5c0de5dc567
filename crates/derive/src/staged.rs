//! What a staged run derives (`measure --plan staged`): the screening table, complete RTT(m)
//! matrices whose unmeasured pairs are filled from their groups' measured pairs (with a mask
//! saying which), the full test's outputs for the sampled pairs, and `report.json` with the
//! interference the alone stage measured.
//!
//! Memory grows as P^2 for the matrices (8 bytes a pair and size), as the full plan's do; the
//! journal holds `g (g - 1) / 2` pairs per group of g ranks and K per pair of groups.

use std::collections::{BTreeMap, BTreeSet};

use lgate_matrix::DistanceMatrix;
use lgate_rundir::files::{MASK_FILE, PINGPONG_TABLE, REPORT_FILE, SCREEN_TABLE};
use lgate_rundir::report::{Interference, PairCounts, SampledPair, StagedPlanName, StagedReport};
use lgate_rundir::{JournalEntry, MatrixEntry, MeasuredMask, RunDir, RunMeta, Stage};
use lgate_rundir::{Pair, Report, RoundTrips};

use ndarray::Array2;

use crate::outputs::{write_matrix_set_with, OutputError, OutputOptions};
use crate::pingpong::{round_trip_table, round_trips_of};
use crate::plogp::write_outputs;
use lgate_rundir::MessageSize;

/// The median of some values, `None` when there are none.
fn median(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| lgate_stats::median(&mut values.to_vec()))
}

/// Seconds to microseconds, the unit of every output.
const US: f64 = 1e6;

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
    let table = round_trip_table(screened.iter().flat_map(|(e, stage, sizes)| {
        sizes
            .iter()
            .map(move |s| (e.sweep, Some(*stage), e.i, e.j, s))
    }));
    run.write_file(SCREEN_TABLE, table.as_bytes())?;
    let mut written = vec![SCREEN_TABLE.to_string()];

    let sizes: Vec<usize> = screened
        .iter()
        .flat_map(|(_, _, s)| s.iter().map(|r| r.size))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // Every screening but the alone re-tests, which would count a pair twice.
    let concurrent =
        |e: &JournalEntry| matches!(e.stage, Some(Stage::Hosts | Stage::Between | Stage::Refine));
    let filled = fill_matrices(
        screened
            .iter()
            .filter(|(e, _, _)| concurrent(e))
            .map(|(e, _, s)| (Pair::new(e.i, e.j), s.as_slice())),
        &sizes,
        &group_of,
        options,
    )
    .map_err(|message| OutputError::Incomplete {
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
    let measured = MeasuredMask {
        file: MASK_FILE.into(),
        filled_with: "the median of the measured pairs between the same two groups".into(),
        measured_pairs: filled.measured,
        filled_pairs: size * (size - 1) / 2 - filled.measured,
    };
    write_matrix_set_with(
        run,
        options.estimator,
        &refs,
        default,
        names,
        Some((measured.clone(), &mask)),
    )?;
    written.push(format!("{}/", lgate_rundir::MATRICES_DIR));

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

/// Complete matrices of a staged run, one per size, and the mask of measured pairs.
struct Filled {
    values: Vec<Array2<f64>>,
    mask: Array2<f64>,
    measured: usize,
}

/// Each measured pair's value per size (the median over its sweeps), then every pair not
/// measured filled with the median of the measured pairs between the same two groups. An
/// error gives how many pairs have no value and the first of them.
fn fill_matrices<'a>(
    measured: impl Iterator<Item = (Pair, &'a [RoundTrips])>,
    sizes: &[usize],
    group_of: &[usize],
    options: &OutputOptions,
) -> Result<Filled, (usize, String)> {
    let n = group_of.len();
    // Per pair, per size: the values of its sweeps.
    let mut per_pair: BTreeMap<Pair, Vec<Vec<f64>>> = BTreeMap::new();
    for (pair, trips) in measured {
        let slot = per_pair
            .entry(pair)
            .or_insert_with(|| vec![Vec::new(); sizes.len()]);
        for t in trips {
            if let Ok(k) = sizes.binary_search(&t.size) {
                slot[k].push(US * options.estimator.of(&t.rtt));
            }
        }
    }
    let mut values = vec![Array2::<f64>::from_elem((n, n), f64::NAN); sizes.len()];
    let mut mask = Array2::<f64>::zeros((n, n));
    // Per pair of groups, per size: the measured values.
    let mut by_groups: BTreeMap<(usize, usize), Vec<Vec<f64>>> = BTreeMap::new();
    for (pair, per_size) in &per_pair {
        let key = group_key(group_of, *pair);
        let slot = by_groups
            .entry(key)
            .or_insert_with(|| vec![Vec::new(); sizes.len()]);
        for (k, v) in per_size.iter().enumerate() {
            if let Some(x) = median(v) {
                values[k][[pair.i, pair.j]] = x;
                values[k][[pair.j, pair.i]] = x;
                slot[k].push(x);
            }
        }
        mask[[pair.i, pair.j]] = 1.0;
        mask[[pair.j, pair.i]] = 1.0;
    }
    let fill: BTreeMap<(usize, usize), Vec<f64>> = by_groups
        .into_iter()
        .map(|(key, per_size)| {
            (
                key,
                per_size
                    .iter()
                    .map(|v| median(v).unwrap_or(f64::NAN))
                    .collect(),
            )
        })
        .collect();
    let mut missing = 0;
    let mut first = None;
    for i in 0..n {
        values.iter_mut().for_each(|m| m[[i, i]] = 0.0);
        for j in i + 1..n {
            for (k, m) in values.iter_mut().enumerate() {
                if m[[i, j]].is_nan() {
                    match fill
                        .get(&group_key(group_of, Pair::new(i, j)))
                        .map(|v| v[k])
                        .filter(|x| x.is_finite())
                    {
                        Some(x) => {
                            m[[i, j]] = x;
                            m[[j, i]] = x;
                        }
                        None => {
                            missing += 1;
                            first.get_or_insert_with(|| {
                                format!("{i}-{j} (no pair between their groups was measured)")
                            });
                        }
                    }
                }
            }
        }
    }
    if let Some(first) = first {
        return Err((missing, first));
    }
    Ok(Filled {
        values,
        mask,
        measured: per_pair.len(),
    })
}

fn group_key(group_of: &[usize], p: Pair) -> (usize, usize) {
    let (a, b) = (group_of[p.i], group_of[p.j]);
    (a.min(b), a.max(b))
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

#[cfg(test)]
mod tests {
    use super::*;
    use lgate_stats::Summary;

    fn trips(size: usize, us: f64) -> RoundTrips {
        RoundTrips {
            size,
            rtt: Summary::of(&[us * 1e-6; 4]).unwrap(),
        }
    }

    #[test]
    fn unmeasured_pairs_take_their_groups_median() {
        // Groups {0,1} and {2,3}: all inside pairs, and 0-2, 1-3 between (3 and 5 us).
        let group_of = [0, 0, 1, 1];
        let data = [
            (Pair::new(0, 1), vec![trips(0, 1.0)]),
            (Pair::new(2, 3), vec![trips(0, 1.5)]),
            (Pair::new(0, 2), vec![trips(0, 3.0)]),
            (Pair::new(1, 3), vec![trips(0, 5.0)]),
        ];
        let f = fill_matrices(
            data.iter().map(|(p, t)| (*p, t.as_slice())),
            &[0],
            &group_of,
            &OutputOptions::default(),
        )
        .unwrap();
        let m = &f.values[0];
        assert_eq!(m[[0, 1]], 1.0);
        assert_eq!(m[[0, 3]], 4.0, "the median of 3 and 5");
        assert_eq!(m[[3, 0]], 4.0);
        assert_eq!(m[[1, 2]], 4.0);
        assert_eq!(f.measured, 4);
        assert_eq!(f.mask[[0, 3]], 0.0);
        assert_eq!(f.mask[[2, 0]], 1.0);
        // A pair of groups with nothing measured cannot be filled.
        let err = fill_matrices(
            data[..2].iter().map(|(p, t)| (*p, t.as_slice())),
            &[0],
            &group_of,
            &OutputOptions::default(),
        )
        .err()
        .unwrap();
        assert_eq!(err.0, 4);
    }
}
