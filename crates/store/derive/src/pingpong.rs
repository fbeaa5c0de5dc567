//! What a ping-pong run derives: `pingpong.csv` (one row per pair, sweep and size) and the
//! matrices of round-trip times that `cluster` reads.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use lgate_matrix::DistanceMatrix;
use lgate_rundir::files::PINGPONG_TABLE;
use lgate_rundir::{JournalEntry, MatrixEntry, RunDir, Stage};
use lgate_rundir::{PingPongResult, RoundTrips};
use ndarray::Array2;

use crate::outputs::{median_over_sweeps, write_matrix_set, OutputError, OutputOptions};
use lgate_rundir::MessageSize;

/// Seconds to microseconds, the unit of every output.
const US: f64 = 1e6;

/// A journal entry's round trips, or an error naming the journal and the pair.
pub(crate) fn round_trips_of(
    e: &JournalEntry,
    journal: &str,
) -> Result<PingPongResult, OutputError> {
    e.result
        .pingpong()
        .cloned()
        .ok_or_else(|| OutputError::BadEntry {
            path: journal.to_string(),
            sweep: e.sweep,
            i: e.i,
            j: e.j,
            message: format!("a {} result, not a ping-pong one", e.result.test_name()),
        })
}

/// The table of round trips, a row per pair, sweep and size (and stage, when rows have one),
/// in microseconds.
pub(crate) fn round_trip_table<'r>(
    rows: impl Iterator<Item = (u32, Option<Stage>, usize, usize, &'r RoundTrips)>,
) -> String {
    let rows: Vec<_> = rows.collect();
    let staged = rows.iter().any(|r| r.1.is_some());
    let mut csv = String::from(if staged { "sweep,stage," } else { "sweep," });
    csv.push_str(
        "i,j,size_bytes,rtt_min_us,rtt_p10_us,rtt_median_us,rtt_p90_us,rtt_mean_us,\
         rtt_max_us,samples,warmup,outliers\n",
    );
    for (sweep, stage, i, j, s) in rows {
        let r = &s.rtt;
        let _ = write!(csv, "{sweep},");
        if staged {
            let _ = write!(csv, "{},", stage.map_or("", |s| s.name()));
        }
        let _ = writeln!(
            csv,
            "{i},{j},{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{},{},{}",
            s.size,
            US * r.min,
            US * r.p10,
            US * r.median,
            US * r.p90,
            US * r.mean,
            US * r.max,
            r.count,
            r.warmup,
            r.outliers
        );
    }
    csv
}

/// Writes `pingpong.csv` and `matrices/` (RTT(m) at each matrix size the run measured) from a
/// ping-pong run's journal; every pair among the tested ranks must be there in every sweep.
/// Returns the names written.
pub fn write_pingpong_outputs(
    run: &RunDir,
    entries: &[JournalEntry],
    options: &OutputOptions,
) -> Result<Vec<String>, OutputError> {
    let journal = run.journal_file().display().to_string();
    let mut rows: Vec<(u32, usize, usize, RoundTrips)> = Vec::new();
    for e in entries {
        let result = round_trips_of(e, &journal)?;
        rows.extend(result.sizes.into_iter().map(|s| (e.sweep, e.i, e.j, s)));
    }
    rows.sort_by_key(|(sweep, i, j, s)| (*sweep, *i, *j, s.size));
    let csv = round_trip_table(
        rows.iter()
            .map(|(sweep, i, j, s)| (*sweep, None, *i, *j, s)),
    );
    run.write_file(PINGPONG_TABLE, csv.as_bytes())?;
    let mut written = vec![PINGPONG_TABLE.to_string()];

    let ranks: Vec<usize> = entries
        .iter()
        .flat_map(|e| [e.i, e.j])
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let sweeps: Vec<u32> = entries
        .iter()
        .map(|e| e.sweep)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let n = ranks.len();
    if n < 2 {
        return Ok(written);
    }
    let position = |r: usize| ranks.binary_search(&r).expect("a rank of the entries");
    let measured: BTreeSet<usize> = rows.iter().map(|(_, _, _, s)| s.size).collect();
    let sizes: Vec<MessageSize> = options
        .matrix_sizes
        .iter()
        .copied()
        .filter(|m| measured.contains(&m.0))
        .collect();
    if let Some(missing) = options
        .matrix_sizes
        .iter()
        .find(|m| !measured.contains(&m.0) && m.0 <= measured.last().copied().unwrap_or(0))
    {
        return Err(OutputError::not_measured(
            *missing,
            &measured.iter().copied().collect::<Vec<_>>(),
        ));
    }
    // Per size, per sweep: the pair values in the upper triangle, and which were filled.
    let mut values = vec![vec![Array2::<f64>::zeros((n, n)); sweeps.len()]; sizes.len()];
    let mut filled = vec![vec![false; n * n]; sweeps.len()];
    for (sweep, i, j, s) in &rows {
        let Some(k) = sizes.iter().position(|m| m.0 == s.size) else {
            continue;
        };
        let w = sweeps.binary_search(sweep).expect("a sweep of the entries");
        let (a, b) = (
            position(*i).min(position(*j)),
            position(*i).max(position(*j)),
        );
        values[k][w][[a, b]] = US * options.estimator.of(&s.rtt);
        filled[w][a * n + b] = true;
    }
    if !sizes.is_empty() {
        let expected = sweeps.len() * n * (n - 1) / 2;
        let missing: Vec<(u32, usize, usize)> = filled
            .iter()
            .enumerate()
            .flat_map(|(w, f)| {
                let (ranks, sweeps) = (&ranks, &sweeps);
                (0..n).flat_map(move |a| {
                    (a + 1..n)
                        .filter(move |&b| !f[a * n + b])
                        .map(move |b| (sweeps[w], ranks[a], ranks[b]))
                })
            })
            .collect();
        if let Some(&(s, x, y)) = missing.first() {
            return Err(OutputError::Incomplete {
                missing: missing.len(),
                expected,
                first: format!("{x}-{y} of sweep {s}"),
            });
        }
    }
    let labels: Vec<String> = ranks.iter().map(|r| r.to_string()).collect();
    let matrices: Vec<(MatrixEntry, DistanceMatrix)> = sizes
        .iter()
        .zip(values)
        .map(|(&size, per_sweep)| {
            (
                MatrixEntry::in_us(
                    &format!("rtt:{size}"),
                    &format!("rtt_{}.csv", size.0),
                    &format!(
                        "ping-pong round-trip time RTT(m), m bytes out and m back, at m = {size}"
                    ),
                    Some(size.0),
                ),
                median_over_sweeps(per_sweep, &labels),
            )
        })
        .collect();
    if !matrices.is_empty() {
        let refs: Vec<(MatrixEntry, &DistanceMatrix)> =
            matrices.iter().map(|(e, m)| (e.clone(), m)).collect();
        write_matrix_set(run, options.estimator, &refs)?;
        written.push(format!("{}/", lgate_rundir::MATRICES_DIR));
    }
    Ok(written)
}
