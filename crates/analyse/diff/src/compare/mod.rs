//! Pair by pair and matrix by matrix: each change against the noise both runs show, and the
//! changes of ranks, hosts and host pairs (the median over their pairs).

use std::collections::BTreeMap;

use lgate_stats::median;

use lgate_stats::aggregate::{Aggregate, ClassValues, PairEvidence, Spread};

use crate::side::{RunSide, SideMatrix, SideValues};

mod units;

pub use units::*;

/// Where a side's noise came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoiseSource {
    /// Each pair's repetitions (measurements.parquet).
    Repeats,
    /// The spread of the values of pairs alike (same host, or different hosts): no repetitions
    /// were kept, so the noise is overestimated and fewer changes are found.
    PairSpread,
}

impl NoiseSource {
    /// How people and scripts read it.
    pub fn name(self) -> &'static str {
        match self {
            NoiseSource::Repeats => "repeats",
            NoiseSource::PairSpread => "pair spread",
        }
    }
}

/// The change of one pair in one matrix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairChange {
    /// The pair's rows in run A (the smaller first).
    pub rows: (usize, usize),
    /// The value in A and in B, us.
    pub values: (f64, f64),
    /// Its change over its noise: `ln(B / A)` over the standard deviation of an unchanged
    /// pair's log ratio (its repetitions' and how much its class moves between the runs;
    /// before that is read, (B - A) over both runs' repetitions).
    pub z: f64,
    /// B / A - 1.
    pub change: f64,
    /// The noise in B over the noise in A.
    pub spread_ratio: f64,
    /// Its class: 0 inside a host, 1 between hosts, 2 placement unknown.
    pub class: u8,
    /// The standard deviation of its log ratio from both runs' repetitions.
    pub log_noise: f64,
}

/// Pair classes: inside a host, between hosts, placement unknown.
pub const CLASSES: usize = 3;

impl PairEvidence for PairChange {
    fn rows(&self) -> (usize, usize) {
        self.rows
    }
    fn class(&self) -> usize {
        self.class as usize
    }
    fn log_value(&self) -> f64 {
        self.log_ratio()
    }
    fn repeat_variance(&self) -> f64 {
        self.log_noise * self.log_noise
    }
}

/// How much unchanged pairs and units move between the two runs, in the natural log of B / A
/// (read from the runs themselves: see the `aggregate` module).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunToRun {
    /// Pairs' (per class, beyond their repetitions) and ranks'.
    pub spread: Spread,
    /// A host's own beyond its pairs' and ranks' (0 below six hosts).
    pub host: f64,
    /// The same for a pair of hosts.
    pub host_pair: f64,
}

impl RunToRun {
    /// The variance of pair `p`'s log ratio judged alone: its repetitions' and its class's
    /// run-to-run (in proportion for a pair far more precise than its class).
    pub fn pair_variance(&self, p: &PairChange) -> f64 {
        self.spread.lone_pair_variance(p)
    }

    /// The change of `pairs` of `m` against `centers` (per class), as a unit of `kind`.
    pub fn aggregate(
        &self,
        m: &MatrixDiff,
        pairs: &[usize],
        centers: &[f64],
        kind: UnitKind,
    ) -> Aggregate {
        let own = match kind {
            UnitKind::Host => self.host,
            UnitKind::HostPair => self.host_pair,
            UnitKind::Rank | UnitKind::Pair => 0.0,
        };
        self.spread.aggregate(&m.pairs, pairs, centers, own)
    }
}

impl PairChange {
    /// `ln(B / A)`: NaN when either is not positive.
    pub fn log_ratio(&self) -> f64 {
        let (a, b) = self.values;
        if a > 0.0 && b > 0.0 {
            (b / a).ln()
        } else {
            f64::NAN
        }
    }
}

/// The pairs of one matrix compared.
#[derive(Debug, Clone)]
pub struct MatrixDiff {
    /// The matrix.
    pub name: String,
    /// Every matched, measured pair.
    pub pairs: Vec<PairChange>,
    /// Where A's and B's noise came from.
    pub noise: (NoiseSource, NoiseSource),
    /// How much its unchanged pairs and units move between the runs.
    pub run_to_run: RunToRun,
}

impl MatrixDiff {
    /// The median over pairs of z, of the relative change and of the spread ratio.
    pub fn medians(&self) -> (f64, f64, f64) {
        medians(self.pairs.iter())
    }
}

/// Medians of z, change and spread ratio over some pairs.
pub(crate) fn medians<'a>(pairs: impl Iterator<Item = &'a PairChange>) -> (f64, f64, f64) {
    let (mut z, mut c, mut s) = (Vec::new(), Vec::new(), Vec::new());
    for p in pairs {
        z.push(p.z);
        c.push(p.change);
        if p.spread_ratio.is_finite() {
            s.push(p.spread_ratio);
        }
    }
    (median(&mut z), median(&mut c), median(&mut s))
}

/// The class of a pair: 0 inside a host, 1 between hosts, 2 placement unknown. (Finer
/// classes, such as two ranks on one core, hold too few pairs on small runs to have a center
/// and spread of their own: on 4 ranks, two pairs.)
fn class(side: &RunSide, k: usize, l: usize) -> usize {
    match (side.host(k), side.host(l)) {
        (Some(a), Some(b)) if a == b => 0,
        (Some(_), Some(_)) => 1,
        _ => 2,
    }
}

/// Whether a class is of pairs inside one host.
pub fn inside_host(class: u8) -> bool {
    class == 0
}

/// A side's measured pairs of one matrix: (row, row, value, known noise or NaN), the smaller
/// row first.
fn measured_pairs<'a>(
    side: &'a RunSide,
    m: &'a SideMatrix,
) -> Box<dyn Iterator<Item = (usize, usize, f64, f32)> + 'a> {
    match &m.values {
        SideValues::Dense { values, noise } => {
            let n = side.len();
            Box::new(
                (0..n)
                    .flat_map(move |k| (k + 1..n).map(move |l| (k, l)))
                    .filter(|&(k, l)| side.is_measured(k, l))
                    .map(move |(k, l)| {
                        let known = noise.as_ref().map_or(f32::NAN, |s| s[k * n + l]);
                        (k, l, values.get(k, l), known)
                    }),
            )
        }
        SideValues::Pairs(p) => Box::new(p.iter()),
    }
}

/// The value and known noise (NaN where unknown) of the pair of rows (k, l), when measured.
fn lookup(side: &RunSide, m: &SideMatrix, k: usize, l: usize) -> Option<(f64, f32)> {
    match &m.values {
        SideValues::Dense { values, noise } => side.is_measured(k, l).then(|| {
            let n = side.len();
            let known = noise.as_ref().map_or(f32::NAN, |s| s[k * n + l]);
            (values.get(k, l), known)
        }),
        SideValues::Pairs(p) => p.get(k, l),
    }
}

/// The noise a pair without its own takes, per class: the median of its class's known noise;
/// when its class has none, the median of all pairs' (or, `relative`, their noise over their
/// value times the class's median value: a run's host blocks keep no repetitions, and the
/// pairs between hosts are slower and noisier than those inside); else, when no pair has
/// noise of its own, its class's robust spread of values.
fn class_noise(side: &RunSide, m: &SideMatrix, relative: bool) -> ([f64; CLASSES], NoiseSource) {
    let mut known: [Vec<f64>; CLASSES] = Default::default();
    let mut values: [Vec<f64>; CLASSES] = Default::default();
    let mut ratios: Vec<f64> = Vec::new();
    for (k, l, x, sigma) in measured_pairs(side, m) {
        let c = class(side, k, l);
        values[c].push(x);
        if sigma.is_finite() {
            known[c].push(f64::from(sigma));
            if relative && x > 0.0 {
                ratios.push(f64::from(sigma) / x);
            }
        }
    }
    let any_known = known.iter().any(|v| !v.is_empty());
    let all_known: Vec<f64> = known.iter().flatten().copied().collect();
    let mut fallback = [0.0; CLASSES];
    for (c, f) in fallback.iter_mut().enumerate() {
        *f = if any_known {
            if known[c].is_empty() && !ratios.is_empty() && !values[c].is_empty() {
                median(&mut ratios.clone()) * median(&mut values[c].clone())
            } else {
                let v = if known[c].is_empty() {
                    all_known.clone()
                } else {
                    known[c].clone()
                };
                median(&mut v.clone())
            }
        } else {
            let mut v = values[c].clone();
            let center = median(&mut v);
            let mut dev: Vec<f64> = v.iter().map(|x| (x - center).abs()).collect();
            1.4826 * median(&mut dev)
        };
    }
    let source = if any_known {
        NoiseSource::Repeats
    } else {
        NoiseSource::PairSpread
    };
    (fallback, source)
}

/// Each pair's noise in one side's dense matrix (row-major, n x n): its repetitions' where
/// known, else its class's (see [`class_noise`]).
fn noise_of(side: &RunSide, values: &SideMatrix) -> (Vec<f64>, NoiseSource) {
    let n = side.len();
    let (fallback, source) = class_noise(side, values, false);
    let known = match &values.values {
        SideValues::Dense { noise, .. } => noise.as_ref(),
        SideValues::Pairs(_) => None,
    };
    let mut out = vec![0.0; n * n];
    for k in 0..n {
        for l in k + 1..n {
            let x = known
                .map(|s| f64::from(s[k * n + l]))
                .filter(|x| x.is_finite())
                .unwrap_or(fallback[class(side, k, l)]);
            out[k * n + l] = x;
            out[l * n + k] = x;
        }
    }
    (out, source)
}

/// z of a change `d` against combined noise `s`: infinite for a change where no noise was
/// seen, 0 for no change.
pub(crate) fn z_of(d: f64, s: f64) -> f64 {
    if s > 0.0 {
        d / s
    } else if d == 0.0 {
        0.0
    } else {
        d.signum() * f64::INFINITY
    }
}

/// Compares every matrix the two sides share over the matched rows `rows` ((row in A, row in
/// B) per matched rank).
pub fn compare_matrices(a: &RunSide, b: &RunSide, rows: &[(usize, usize)]) -> Vec<MatrixDiff> {
    let mut out = Vec::new();
    for ma in &a.matrices {
        let Some(mb) = b.matrices.iter().find(|m| m.name == ma.name) else {
            continue;
        };
        let both_dense = matches!(
            (&ma.values, &mb.values),
            (SideValues::Dense { .. }, SideValues::Dense { .. })
        );
        let (pairs, noise) = if both_dense {
            compare_dense(a, b, ma, mb, rows)
        } else {
            compare_pairs(a, b, ma, mb, rows)
        };
        out.push(MatrixDiff {
            name: ma.name.clone(),
            pairs,
            noise,
            run_to_run: RunToRun::default(),
        });
    }
    out
}

/// One pair's change from (value, noise) in A to (value, noise) in B.
fn change_of(
    rows: (usize, usize),
    class: usize,
    (va, sa): (f64, f64),
    (vb, sb): (f64, f64),
) -> PairChange {
    let combined = (sa * sa + sb * sb).sqrt();
    let relative = |s: f64, v: f64| if v > 0.0 { s / v } else { 0.0 };
    PairChange {
        rows: (rows.0.min(rows.1), rows.0.max(rows.1)),
        values: (va, vb),
        z: z_of(vb - va, combined),
        change: if va > 0.0 { vb / va - 1.0 } else { 0.0 },
        spread_ratio: if sa > 0.0 { sb / sa } else { f64::NAN },
        class: class as u8,
        log_noise: relative(sa, va).hypot(relative(sb, vb)),
    }
}

/// Two dense matrices, pair by pair in the order of the matched rows.
fn compare_dense(
    a: &RunSide,
    b: &RunSide,
    ma: &SideMatrix,
    mb: &SideMatrix,
    rows: &[(usize, usize)],
) -> (Vec<PairChange>, (NoiseSource, NoiseSource)) {
    let (na, sa) = noise_of(a, ma);
    let (nb, sb) = noise_of(b, mb);
    let (la, lb) = (a.len(), b.len());
    let mut pairs = Vec::new();
    for (x, &(ka, kb)) in rows.iter().enumerate() {
        for &(la_row, lb_row) in &rows[x + 1..] {
            let (Some((va, _)), Some((vb, _))) =
                (lookup(a, ma, ka, la_row), lookup(b, mb, kb, lb_row))
            else {
                continue;
            };
            pairs.push(change_of(
                (ka, la_row),
                class(a, ka, la_row),
                (va, na[ka * la + la_row]),
                (vb, nb[kb * lb + lb_row]),
            ));
        }
    }
    (pairs, (sa, sb))
}

/// A side kept as measured pairs (host blocks): the pairs of A measured in both, in A's
/// order, each without noise of its own taking its class's; no n x n array.
fn compare_pairs(
    a: &RunSide,
    b: &RunSide,
    ma: &SideMatrix,
    mb: &SideMatrix,
    rows: &[(usize, usize)],
) -> (Vec<PairChange>, (NoiseSource, NoiseSource)) {
    let (fa, sa) = class_noise(a, ma, true);
    let (fb, sb) = class_noise(b, mb, true);
    let mut in_b = vec![None; a.len()];
    for &(ka, kb) in rows {
        in_b[ka] = Some(kb);
    }
    let noise = |side: &RunSide, fallback: &[f64; CLASSES], k, l, known: f32| {
        if known.is_finite() {
            f64::from(known)
        } else {
            fallback[class(side, k, l)]
        }
    };
    let mut pairs = Vec::new();
    for (ka, la, va, known_a) in measured_pairs(a, ma) {
        let (Some(kb), Some(lb)) = (in_b[ka], in_b[la]) else {
            continue;
        };
        let Some((vb, known_b)) = lookup(b, mb, kb, lb) else {
            continue;
        };
        pairs.push(change_of(
            (ka, la),
            class(a, ka, la),
            (va, noise(a, &fa, ka, la, known_a)),
            (vb, noise(b, &fb, kb, lb, known_b)),
        ));
    }
    (pairs, (sa, sb))
}

/// `3-7 (n0)` or `3-7 (n0, n1)`: a pair of rows of run A, by rank.
pub fn pair_name(a: &RunSide, (k, l): (usize, usize)) -> String {
    let ranks = format!("{}-{}", a.ranks[k], a.ranks[l]);
    match (a.host(k), a.host(l)) {
        (Some(x), Some(y)) if x == y => format!("{ranks} ({x})"),
        (Some(x), Some(y)) => format!("{ranks} ({x}, {y})"),
        _ => ranks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matching::RankPlace;
    use crate::side::{PairValues, SideMatrix};
    use lgate_matrix::DistanceMatrix;
    use ndarray::Array2;

    /// Eight ranks on two hosts: 0.5 us inside a host, 1 us between, `slow` times that for
    /// every pair with a rank on host h1; one repetition's noise 5 % of the value when
    /// `with_noise`.
    fn side(slow: f64, with_noise: bool) -> RunSide {
        let n = 8;
        let host = |r: usize| r / 4;
        let v = Array2::from_shape_fn((n, n), |(i, j)| {
            if i == j {
                return 0.0;
            }
            let base = if host(i) == host(j) { 0.5 } else { 1.0 };
            if host(i) == 1 || host(j) == 1 {
                base * slow
            } else {
                base
            }
        });
        let noise = with_noise.then(|| v.iter().map(|&x| (0.05 * x) as f32).collect());
        RunSide {
            path: "run".into(),
            ranks: (0..n).collect(),
            places: (0..n)
                .map(|rank| RankPlace {
                    rank,
                    host: Some(format!("h{}", host(rank))),
                    bound_cpu: Some(rank % 4),
                })
                .collect(),
            matrices: vec![SideMatrix {
                name: "t:0".into(),
                values: SideValues::Dense {
                    values: DistanceMatrix::new(v, None).unwrap(),
                    noise,
                },
            }],
            measured: None,
        }
    }

    fn values_of(side: &RunSide) -> Array2<f64> {
        match &side.matrices[0].values {
            SideValues::Dense { values, .. } => values.values().clone(),
            SideValues::Pairs(_) => panic!("dense"),
        }
    }

    fn set_values(side: &mut RunSide, v: Array2<f64>) {
        if let SideValues::Dense { values, .. } = &mut side.matrices[0].values {
            *values = DistanceMatrix::new(v, None).unwrap();
        }
    }

    fn noise_mut(side: &mut RunSide) -> &mut Vec<f32> {
        match &mut side.matrices[0].values {
            SideValues::Dense { noise, .. } => noise.as_mut().unwrap(),
            SideValues::Pairs(_) => panic!("dense"),
        }
    }

    /// `side` as a run of host blocks keeps it: its pairs, those inside a host without noise
    /// of their own.
    fn as_pairs(side: &RunSide) -> RunSide {
        let n = side.len();
        let v = values_of(side);
        let noise = match &side.matrices[0].values {
            SideValues::Dense { noise, .. } => noise.clone(),
            SideValues::Pairs(_) => None,
        };
        let rows = (0..n)
            .flat_map(|k| (k + 1..n).map(move |l| (k, l)))
            .map(|(k, l)| {
                let inside = side.host(k) == side.host(l);
                let sigma = match &noise {
                    Some(s) if !inside => s[k * n + l],
                    _ => f32::NAN,
                };
                (PairValues::key(k, l), v[[k, l]], sigma)
            })
            .collect();
        let mut out = side.clone();
        out.matrices[0].values = SideValues::Pairs(PairValues::new(rows));
        out
    }

    #[test]
    fn host_blocks_compare_as_dense_matrices_do() {
        // A host 30 % slower, every pair measured: as pairs, the same host is found.
        let rows: Vec<(usize, usize)> = (0..8).map(|k| (k, k)).collect();
        let (a, b) = (side(1.0, true), side(1.3, true));
        let dense = &compare_matrices(&a, &b, &rows)[0];
        let (pa, pb) = (as_pairs(&a), as_pairs(&b));
        for (x, y) in [(&pa, &pb), (&a, &pb), (&pa, &b)] {
            let m = &compare_matrices(x, y, &rows)[0];
            assert_eq!(m.pairs.len(), dense.pairs.len());
            assert_eq!(m.noise, (NoiseSource::Repeats, NoiseSource::Repeats));
            let units = Units::of(x, m);
            let flagged = flag_units(x, &units, m, bars(), false);
            let names: Vec<(UnitKind, &str)> =
                flagged.iter().map(|f| (f.kind, f.name.as_str())).collect();
            assert_eq!(names, vec![(UnitKind::Host, "h1")]);
        }
        // A pair measured in one run only is left out.
        let mut fewer = pa.clone();
        if let SideValues::Pairs(p) = &mut fewer.matrices[0].values {
            let kept = p.iter().filter(|&(k, l, _, _)| (k, l) != (0, 5));
            *p = PairValues::new(
                kept.map(|(k, l, v, s)| (PairValues::key(k, l), v, s))
                    .collect(),
            );
        }
        let m = &compare_matrices(&fewer, &pb, &rows)[0];
        assert_eq!(m.pairs.len(), dense.pairs.len() - 1);
        assert!(m.pairs.iter().all(|p| p.rows != (0, 5)));
    }

    fn bars() -> (Bar, &'static [Bar]) {
        (
            Bar {
                z: 3.0,
                factor: 1.1,
            },
            &[
                Bar {
                    z: 3.0,
                    factor: 2.0,
                },
                Bar {
                    z: 30.0,
                    factor: 1.1,
                },
                Bar {
                    z: 1.0,
                    factor: 8.0,
                },
            ],
        )
    }

    #[test]
    fn a_slower_host_is_flagged_and_explains_its_ranks_and_links() {
        let (a, b) = (side(1.0, true), side(1.3, true));
        let rows: Vec<(usize, usize)> = (0..8).map(|k| (k, k)).collect();
        let m = &compare_matrices(&a, &b, &rows)[0];
        assert_eq!(m.noise, (NoiseSource::Repeats, NoiseSource::Repeats));
        assert_eq!(m.pairs.len(), 28);
        let units = Units::of(&a, m);
        let flagged = flag_units(&a, &units, m, bars(), false);
        let names: Vec<(UnitKind, &str)> =
            flagged.iter().map(|u| (u.kind, u.name.as_str())).collect();
        assert_eq!(names, vec![(UnitKind::Host, "h1")]);
        assert!((flagged[0].change - 0.3).abs() < 1e-9, "{flagged:?}");
        // Its 16 pairs with the other host together (its 6 inside give less): ln(1.3) over
        // the standard error of the median of 16 log ratios, each with 5 % noise in each run:
        // sqrt(pi/2 * 2 * 0.05^2 / 16) = 2.2 %.
        assert_eq!(flagged[0].pairs, 16);
        let se = (std::f64::consts::FRAC_PI_2 * 2.0 * 0.05f64.powi(2) / 16.0).sqrt();
        assert!(
            (flagged[0].z - 1.3f64.ln() / se).abs() < 1e-6,
            "{flagged:?}"
        );
        assert!((flagged[0].z - 11.84).abs() < 0.01, "{flagged:?}");
    }

    #[test]
    fn a_unit_moved_in_one_matrix_of_several_is_not_seen_elsewhere() {
        // Host h1 30 % slower in the first of three matrices: flagged there, but none of the
        // others shows it, as noise at one size would; slower in two, it is seen in the second.
        let rows: Vec<(usize, usize)> = (0..8).map(|k| (k, k)).collect();
        let a = side(1.0, true);
        let named = |b: &RunSide, name: &str| {
            let mut m = compare_matrices(&a, b, &rows).remove(0);
            m.name = name.to_string();
            m
        };
        let slower = named(&side(1.3, true), "t:0");
        let units = Units::of(&a, &slower);
        let flagged = flag_units(&a, &units, &slower, bars(), true);
        assert_eq!(flagged.len(), 1, "{flagged:?}");
        let same = side(1.0, true);
        let (one, two) = (named(&same, "t:1KiB"), named(&same, "t:64KiB"));
        assert!(!seen_elsewhere(
            &units,
            &flagged[0],
            &[&slower, &one, &two],
            1.5
        ));
        let also = named(&side(1.3, true), "t:1KiB");
        assert!(seen_elsewhere(
            &units,
            &flagged[0],
            &[&slower, &also, &two],
            1.5
        ));
        // Faster there instead: not the same way.
        let faster = named(&side(1.0 / 1.3, true), "t:1KiB");
        assert!(!seen_elsewhere(
            &units,
            &flagged[0],
            &[&slower, &faster, &two],
            1.5
        ));
    }

    #[test]
    fn against_the_machine_a_uniform_change_is_no_local_change() {
        // Every pair 30 % slower: against the machine's own shift nothing stands out.
        let mut b = side(1.0, true);
        let v = values_of(&b) * 1.3;
        set_values(&mut b, v);
        let a = side(1.0, true);
        let rows: Vec<(usize, usize)> = (0..8).map(|k| (k, k)).collect();
        let m = &compare_matrices(&a, &b, &rows)[0];
        let (_, change, _) = m.medians();
        assert!((change - 0.3).abs() < 1e-9);
        let units = Units::of(&a, m);
        assert!(flag_units(&a, &units, m, bars(), true).is_empty());
        // In absolute terms every host carries it.
        assert_eq!(flag_units(&a, &units, m, bars(), false).len(), 2);
    }

    #[test]
    fn without_repetitions_the_noise_is_the_spread_of_pairs_alike() {
        let (a, b) = (side(1.0, false), side(1.0, false));
        let rows: Vec<(usize, usize)> = (0..8).map(|k| (k, k)).collect();
        let m = &compare_matrices(&a, &b, &rows)[0];
        assert_eq!(m.noise, (NoiseSource::PairSpread, NoiseSource::PairSpread));
        // Pairs alike are equal: no noise and no change, so z is 0, not NaN.
        assert!(m.pairs.iter().all(|p| p.z == 0.0), "{:?}", m.pairs);
        assert_eq!(z_of(0.1, 0.0), f64::INFINITY);
    }

    #[test]
    fn one_pair_far_off_is_flagged_alone() {
        let a = side(1.0, true);
        let mut b = side(1.0, true);
        let mut v = values_of(&b);
        v[[0, 5]] *= 3.0;
        v[[5, 0]] *= 3.0;
        set_values(&mut b, v);
        let rows: Vec<(usize, usize)> = (0..8).map(|k| (k, k)).collect();
        let m = &compare_matrices(&a, &b, &rows)[0];
        let units = Units::of(&a, m);
        let flagged = flag_units(&a, &units, m, bars(), false);
        assert_eq!(flagged.len(), 1, "{flagged:?}");
        assert_eq!(flagged[0].kind, UnitKind::Pair);
        assert_eq!(flagged[0].name, "0-5 (h0, h1)");
        assert_eq!(flagged[0].ranks, vec![0, 5]);
    }

    #[test]
    fn a_pair_many_times_slower_is_flagged_through_a_noisy_later_run() {
        // Pair 0-5 `factor` times slower in B, whose repetitions of it spread over 4 us (time
        // slices): at 10x, 40 % of its value, z = ln(10) / 0.403 = 5.7, flagged; at 5x, 80 %,
        // z = ln(5) / 0.80 = 2.0: not flagged.
        let a = side(1.0, true);
        for (factor, flagged) in [(10.0, true), (5.0, false)] {
            let mut b = side(1.0, true);
            let mut v = values_of(&b);
            v[[0, 5]] *= factor;
            v[[5, 0]] *= factor;
            set_values(&mut b, v);
            let noise = noise_mut(&mut b);
            noise[5] = 4.0;
            noise[5 * 8] = 4.0;
            let rows: Vec<(usize, usize)> = (0..8).map(|k| (k, k)).collect();
            let m = &compare_matrices(&a, &b, &rows)[0];
            let units = Units::of(&a, m);
            let found = flag_units(&a, &units, m, bars(), false);
            assert_eq!(found.len(), usize::from(flagged), "{factor}x: {found:?}");
            if flagged {
                assert_eq!(found[0].name, "0-5 (h0, h1)");
                let noise = 0.05f64.hypot(0.4);
                assert!((found[0].z - 10f64.ln() / noise).abs() < 1e-3, "{found:?}");
            }
        }
    }
}
