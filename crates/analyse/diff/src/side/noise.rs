//! A side's noise: the repeat spread of each pair from the run's table, from its sweeps, or
//! from a staged run's screening.

use super::*;

/// What each table row adds to the repeat spread of a matrix: (matrix, weight) per
/// (parameter, size). t(m)'s spread is L's plus half of o_s's and o_r's plus g's, as
/// report.json's spread is.
fn contributions(
    kinds: &[(String, Option<usize>)],
) -> HashMap<(&'static str, usize), Vec<(usize, f32)>> {
    let mut map: HashMap<(&'static str, usize), Vec<(usize, f32)>> = HashMap::new();
    for (k, (kind, size)) in kinds.iter().enumerate() {
        let size = size.unwrap_or(0);
        let parts: &[(&'static str, usize, f32)] = match kind.as_str() {
            "latency" => &[("L", 0, 1.0)],
            "t" => &[
                ("L", 0, 1.0),
                ("os", size, 0.5),
                ("or", size, 0.5),
                ("g", size, 1.0),
            ],
            "rtt" => &[("rtt", size, 1.0)],
            "os" => &[("os", size, 1.0)],
            "or" => &[("or", size, 1.0)],
            "g" => &[("g", size, 1.0)],
            _ => &[],
        };
        for &(p, s, w) in parts {
            map.entry((p, s)).or_default().push((k, w));
        }
    }
    map
}

/// Per matrix (in `kinds`' order): each pair's noise, `None` for a matrix the table says
/// nothing about. The noise is the standard deviation of one repetition (the p10-p90 range
/// over 2.563) and, with several sweeps, the standard deviation of the pair's sweeps as well
/// (added in quadrature): a run's slow drifts show between sweeps, not between the
/// repetitions of one test. See [`sweeps_noise`] for how the sweeps combine. Holds one n x n
/// array of `f32` per matrix and sweep, with several sweeps as many more, and one of flags
/// per sweep.
pub(super) fn read_noise(
    table: &Path,
    ranks: &[usize],
    kinds: &[(String, Option<usize>)],
    sweeps: usize,
) -> Result<Vec<Option<Vec<f32>>>, DiffError> {
    let n = ranks.len();
    let row_of: HashMap<usize, usize> = ranks.iter().enumerate().map(|(k, &r)| (r, k)).collect();
    let parts = contributions(kinds);
    // Per matrix, per sweep (one when the run has one): each pair's range and value.
    let sweeps = sweeps.max(1);
    let mut ranges: Vec<Vec<Vec<f32>>> = vec![Vec::new(); kinds.len()];
    let mut values: Vec<Vec<Vec<f32>>> = vec![Vec::new(); kinds.len()];
    // Per sweep: the pairs measured in it (their L row).
    let mut seen = vec![vec![false; n * n]; sweeps];
    let mut bad = None;
    lgate_tables::for_each_measurement(table, |row| {
        let (Some(&a), Some(&b)) = (row_of.get(&row.i), row_of.get(&row.j)) else {
            return;
        };
        let (a, b) = (a.min(b), a.max(b));
        let sweep = (row.sweep as usize).min(sweeps - 1);
        if row.parameter == "L" {
            seen[sweep][a * n + b] = true;
        }
        let range = (row.p90_us - row.p10_us) as f32;
        if !range.is_finite() || range < 0.0 || !row.median_us.is_finite() {
            bad.get_or_insert((row.i, row.j));
            return;
        }
        let key = (param_name(row.parameter), row.size_bytes);
        if let Some(targets) = parts.get(&key) {
            for &(m, w) in targets {
                if ranges[m].is_empty() {
                    ranges[m] = vec![vec![0.0; n * n]; sweeps];
                    if sweeps > 1 {
                        values[m] = vec![vec![0.0; n * n]; sweeps];
                    }
                }
                ranges[m][sweep][a * n + b] += w * range;
                if let Some(v) = values[m].get_mut(sweep) {
                    v[a * n + b] += w * row.median_us as f32;
                }
            }
        }
    })?;
    if let Some((i, j)) = bad {
        return Err(DiffError::Invalid {
            path: table.to_path_buf(),
            message: format!(
                "pair {i}-{j} has a p90 below its p10, or a value that is not a number"
            ),
        });
    }
    Ok(ranges
        .into_iter()
        .zip(values)
        .map(|(mut r, v)| {
            if r.is_empty() {
                return None;
            }
            let (mut pair_ranges, mut pair_values) = (Vec::new(), Vec::new());
            for a in 0..n {
                for b in a + 1..n {
                    let k = a * n + b;
                    pair_ranges.clear();
                    pair_values.clear();
                    for s in (0..sweeps).filter(|&s| seen[s][k]) {
                        pair_ranges.push(f64::from(r[s][k]));
                        pair_values.extend(v.get(s).map(|v| v[k]));
                    }
                    let sigma =
                        sweeps_noise(&mut pair_ranges, &pair_values).map_or(f32::NAN, |x| x as f32);
                    // The first sweep's ranges become the noise: pair k is read only here.
                    r[0][k] = sigma;
                    r[0][b * n + a] = sigma;
                }
            }
            let mut out = r.swap_remove(0);
            for a in 0..n {
                out[a * n + a] = 0.0;
            }
            Some(out)
        })
        .collect())
}

/// A pair's noise from the sweeps that measured it (each its repetitions' p10-p90 range and
/// its value; `None` without any; a pair missing from a sweep is not a sweep of value 0): one
/// repetition's standard deviation, the median range over 2.563, and the sample standard
/// deviation of its sweeps, added in quadrature.
///
/// The median range, as the pair's value is the median of its sweeps: two ranks taking turns
/// on a CPU with a busy process repeat a 12 ms round trip to a thousandth, but one of its
/// three repetitions in one sweep went round in 10 ms, and that sweep's range, in the mean,
/// hid the pair turning 50 % slower (z 18 of the 30 a lone pair needs; z 384 with the median).
/// The sample standard deviation, not a robust one: cross-CPU pairs of this VM ran 4x slower
/// in two of three sweeps of one run of an unchanged machine, which the sweeps' median
/// absolute deviation called precise and named (z 10-12) against every other run.
pub(super) fn sweeps_noise(ranges: &mut [f64], values: &[f32]) -> Option<f64> {
    if ranges.is_empty() {
        return None;
    }
    let repeat = lgate_stats::median(ranges) / P10_P90_SIGMAS;
    let between = f64::from(sample_sd(values.iter().copied()));
    Some(repeat.hypot(between))
}

/// Each pair's noise at one screening size (row-major, n x n; NaN for a pair not screened):
/// the standard deviation of one round trip (its tests' p10-p90 ranges over 2.563, averaged)
/// and, added in quadrature, how much its value moves between tests of one run: the standard
/// deviation of its tests' medians for a pair screened more than once (side by side and alone,
/// refined, sweeps), else its value times the median relative one of the pairs of its class
/// (inside a host, between hosts) that were. `None` when the table has no test at that size.
pub(super) fn screening_noise(
    rows: &[lgate_rundir::ScreenRow],
    size: usize,
    ranks: &[usize],
    hosts: &[Option<&str>],
) -> Option<Vec<f32>> {
    let n = ranks.len();
    let row_of: HashMap<usize, usize> = ranks.iter().enumerate().map(|(k, &r)| (r, k)).collect();
    // Per pair of rows: (sum of one round trip's sd, medians of its tests).
    let mut tests: HashMap<(usize, usize), (f64, Vec<f64>)> = HashMap::new();
    for r in rows.iter().filter(|r| r.size_bytes == size) {
        let (Some(&a), Some(&b)) = (row_of.get(&r.i), row_of.get(&r.j)) else {
            continue;
        };
        let range = r.p90_us - r.p10_us;
        if !(range.is_finite() && range >= 0.0 && r.median_us.is_finite()) {
            continue;
        }
        let t = tests.entry((a.min(b), a.max(b))).or_default();
        t.0 += range / P10_P90_SIGMAS;
        t.1.push(r.median_us);
    }
    if tests.is_empty() {
        return None;
    }
    let class = |a: usize, b: usize| usize::from(hosts[a].is_none() || hosts[a] != hosts[b]);
    let mut moved: [Vec<f64>; 2] = Default::default();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    for (&(a, b), (_, medians)) in &tests {
        let m = mean(medians);
        if medians.len() > 1 && m > 0.0 {
            let sd = f64::from(sample_sd(medians.iter().map(|&x| x as f32)));
            moved[class(a, b)].push((sd / m) * (sd / m));
        }
    }
    let pooled = moved.map(|mut v| {
        if v.is_empty() {
            0.0
        } else {
            lgate_stats::median(&mut v)
        }
    });
    let mut out = vec![f32::NAN; n * n];
    for a in 0..n {
        out[a * n + a] = 0.0;
    }
    for (&(a, b), (sum, medians)) in &tests {
        let repeat = sum / medians.len() as f64;
        let between = if medians.len() > 1 {
            let sd = f64::from(sample_sd(medians.iter().map(|&x| x as f32)));
            sd * sd
        } else {
            pooled[class(a, b)] * mean(medians) * mean(medians)
        };
        let sigma = (repeat * repeat + between).sqrt() as f32;
        out[a * n + b] = sigma;
        out[b * n + a] = sigma;
    }
    Some(out)
}

/// The sample standard deviation (0 for fewer than two values).
fn sample_sd(values: impl Iterator<Item = f32> + Clone) -> f32 {
    let k = values.clone().count();
    if k < 2 {
        return 0.0;
    }
    let mean = values.clone().sum::<f32>() / k as f32;
    let ss: f32 = values.map(|x| (x - mean) * (x - mean)).sum();
    (ss / (k - 1) as f32).sqrt()
}
