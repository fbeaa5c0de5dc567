//! The changes of ranks, hosts and host pairs: the median over their pairs, and which of them
//! stand out against the noise.

use super::*;

/// What a unit of the machine is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum UnitKind {
    /// A host: every pair with a rank on it.
    Host,
    /// Two hosts: the pairs between them.
    HostPair,
    /// A rank: every pair it is in.
    Rank,
    /// One pair.
    Pair,
}

impl UnitKind {
    /// How people and scripts read it.
    pub fn name(self) -> &'static str {
        match self {
            UnitKind::Host => "host",
            UnitKind::HostPair => "host pair",
            UnitKind::Rank => "rank",
            UnitKind::Pair => "pair",
        }
    }
}

/// The change of a host, host pair or rank in the matrix where it is largest.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitChange {
    /// What it is.
    pub kind: UnitKind,
    /// `n3`, `n3 - n7`, `rank 5 (n0)`.
    pub name: String,
    /// The hosts it is about (one or two; none when hosts are unknown).
    pub hosts: Vec<String>,
    /// The ranks (in run A) of a rank (one) or a pair (two); none for hosts.
    pub ranks: Vec<usize>,
    /// The matrix.
    pub matrix: String,
    /// The pairs it was judged on in that matrix (a host: those inside it, or those with other
    /// hosts, whichever changed more surely).
    pub pairs: usize,
    /// Its pairs' median change over the standard error of that median (repeats, run-to-run
    /// movement of pairs, ranks and units, as the runs show them).
    pub z: f64,
    /// The median relative change of its pairs.
    pub change: f64,
    /// The median ratio of B's noise to A's over its pairs.
    pub spread_ratio: f64,
}

impl UnitChange {
    /// What it is, for people: `host n2`, `host pair n0 - n3`, `rank 5 (n0)`, `pair 1-3 (vm)`.
    pub fn label(&self) -> String {
        match self.kind {
            UnitKind::Rank => self.name.clone(),
            kind => format!("{} {}", kind.name(), self.name),
        }
    }
}

/// The hosts, host pairs and ranks of run A, each with the indices of its pairs (the same in
/// every [`MatrixDiff`] of one comparison).
#[derive(Debug, Clone, Default)]
pub struct Units {
    /// (kind, name, hosts, ranks) per unit.
    pub units: Vec<(UnitKind, String, Vec<String>, Vec<usize>)>,
    /// Per unit: its pairs.
    pub pairs: Vec<Vec<usize>>,
}

impl Units {
    /// The units of the pairs of `m` (rows of run A).
    pub fn of(a: &RunSide, m: &MatrixDiff) -> Units {
        let mut index: BTreeMap<(UnitKind, String), usize> = BTreeMap::new();
        let mut units = Units::default();
        let mut add = |units: &mut Units,
                       key: (UnitKind, String),
                       hosts: Vec<String>,
                       rank: Vec<usize>,
                       p: usize| {
            let k = *index.entry(key.clone()).or_insert_with(|| {
                units.units.push((key.0, key.1, hosts, rank));
                units.pairs.push(Vec::new());
                units.pairs.len() - 1
            });
            units.pairs[k].push(p);
        };
        for (p, pc) in m.pairs.iter().enumerate() {
            let (k, l) = pc.rows;
            for r in [k, l] {
                let host = a.host(r).map(str::to_string);
                let name = match &host {
                    Some(h) => format!("rank {} ({h})", a.ranks[r]),
                    None => format!("rank {}", a.ranks[r]),
                };
                add(
                    &mut units,
                    (UnitKind::Rank, name),
                    host.into_iter().collect(),
                    vec![a.ranks[r]],
                    p,
                );
            }
            if let (Some(hk), Some(hl)) = (a.host(k), a.host(l)) {
                add(
                    &mut units,
                    (UnitKind::Host, hk.to_string()),
                    vec![hk.to_string()],
                    Vec::new(),
                    p,
                );
                if hk != hl {
                    add(
                        &mut units,
                        (UnitKind::Host, hl.to_string()),
                        vec![hl.to_string()],
                        Vec::new(),
                        p,
                    );
                    let (x, y) = if hk < hl { (hk, hl) } else { (hl, hk) };
                    add(
                        &mut units,
                        (UnitKind::HostPair, format!("{x} - {y}")),
                        vec![x.to_string(), y.to_string()],
                        Vec::new(),
                        p,
                    );
                }
            }
        }
        units
    }

    /// The number of units of a kind.
    pub fn count(&self, kind: UnitKind) -> usize {
        self.units.iter().filter(|u| u.0 == kind).count()
    }

    /// Unit `u`'s change over `pairs` of `m`: against the machine's shift (each class's
    /// median of `values`, a host's without its own pairs), or absolute without `values`.
    fn change(
        &self,
        u: usize,
        m: &MatrixDiff,
        pairs: &[usize],
        values: Option<&ClassValues>,
    ) -> UnitChange {
        let (kind, name, hosts, ranks) = self.units[u].clone();
        let centers = match values {
            None => vec![0.0; CLASSES],
            Some(v) if kind == UnitKind::Host => v.centers_without(&m.pairs, pairs),
            Some(v) => v.centers(),
        };
        let a = if kind == UnitKind::Host {
            // A host by the pairs inside it and by those with other hosts apart: a host's
            // link can change alone, and the pairs inside it alone.
            let (inside, between): (Vec<usize>, Vec<usize>) =
                pairs.iter().partition(|&&p| inside_host(m.pairs[p].class));
            let [x, y] = [inside, between].map(|v| m.run_to_run.aggregate(m, &v, &centers, kind));
            match (x.pairs, y.pairs) {
                (0, _) => y,
                (_, 0) => x,
                _ if x.z().abs() >= y.z().abs() => x,
                _ => y,
            }
        } else {
            m.run_to_run.aggregate(m, pairs, &centers, kind)
        };
        let (_, _, spread_ratio) = medians(pairs.iter().map(|&p| &m.pairs[p]));
        UnitChange {
            kind,
            name,
            hosts,
            ranks,
            matrix: m.name.clone(),
            pairs: a.pairs,
            z: a.z(),
            change: a.change.exp_m1(),
            spread_ratio,
        }
    }
}

/// Whether unit change `c` (a host, host pair or rank flagged in matrix `c.matrix`) shows in
/// another of `matrices` too: the same way, against the machine's shift, at `z` standard
/// errors or more. A unit that moved in one matrix of several and in none of the others moved
/// at one size only, as noise does: between back-to-back runs of an unchanged 4-rank machine,
/// one rank 10-16 % at z 3.4-4.2 in t(64 KiB) or t(1 KiB) alone, in 4 of 20 pairs.
pub fn seen_elsewhere(units: &Units, c: &UnitChange, matrices: &[&MatrixDiff], z: f64) -> bool {
    let Some(u) = (units.units.iter()).position(|x| x.0 == c.kind && x.1 == c.name) else {
        return true;
    };
    let pairs = &units.pairs[u];
    matrices.iter().filter(|m| m.name != c.matrix).any(|m| {
        let values = ClassValues::of(&m.pairs, 0..m.pairs.len(), CLASSES);
        let other = units.change(u, m, pairs, Some(&values));
        other.z.signum() == c.z.signum() && other.z.abs() >= z
    })
}

/// Every unit's change in the matrix where its |z| is largest (absolute, not against the
/// machine's shift): what `--format json` lists of hosts and host pairs.
pub fn unit_changes(units: &Units, matrices: &[&MatrixDiff]) -> Vec<UnitChange> {
    let mut best: Vec<Option<UnitChange>> = vec![None; units.units.len()];
    for m in matrices {
        for (u, pairs) in units.pairs.iter().enumerate() {
            let c = units.change(u, m, pairs, None);
            if best[u].as_ref().is_none_or(|b| c.z.abs() > b.z.abs()) {
                best[u] = Some(c);
            }
        }
    }
    best.into_iter().flatten().collect()
}

/// How far a change must go to count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bar {
    /// The least |z|.
    pub z: f64,
    /// The least relative change, as a factor: 1.1 counts +10 % and -9.1 %.
    pub factor: f64,
}

impl Bar {
    /// Whether a change of median z `z` and relative size `change` goes past the bar.
    pub fn passed_by(&self, z: f64, change: f64) -> bool {
        z.abs() >= self.z
            && (1.0 + change).max(f64::MIN_POSITIVE).ln().abs() >= self.factor.ln() - 1e-12
    }

    fn passed(&self, c: &UnitChange) -> bool {
        self.passed_by(c.z, c.change)
    }
}

/// Units flagged in one matrix, level after level (hosts when there are several, host pairs,
/// ranks), each level on the pairs the levels before did not explain: the unit furthest
/// beyond `bar` first, its pairs then explained, until none is left beyond it; then single
/// pairs no unit explains that go beyond any of `pair_bars`. With `centered`, changes are
/// measured against the machine's shift (each class's median over the pairs not yet
/// explained), else absolute.
pub fn flag_units(
    a: &RunSide,
    units: &Units,
    m: &MatrixDiff,
    (bar, pair_bars): (Bar, &[Bar]),
    centered: bool,
) -> Vec<UnitChange> {
    /// Single pairs flagged at most, worst first.
    const PAIRS_LISTED: usize = 1000;
    /// Units flagged one at a time (medians recomputed each time) before the rest are taken
    /// in one pass: bounds the cost on machines where a whole switch changed.
    const ONE_AT_A_TIME: usize = 64;
    let mut explained = vec![false; m.pairs.len()];
    let mut out = Vec::new();
    let levels: &[UnitKind] = if units.count(UnitKind::Host) > 1 {
        &[UnitKind::Host, UnitKind::HostPair, UnitKind::Rank]
    } else {
        &[UnitKind::Rank]
    };
    let values_of = |explained: &[bool]| {
        centered.then(|| {
            ClassValues::of(
                &m.pairs,
                (0..m.pairs.len()).filter(|&p| !explained[p]),
                CLASSES,
            )
        })
    };
    for &kind in levels {
        let mut taken = vec![false; units.units.len()];
        for round in 0.. {
            let values = values_of(&explained);
            let candidates: Vec<(usize, UnitChange)> = (0..units.units.len())
                .filter(|&u| units.units[u].0 == kind && !taken[u])
                .filter_map(|u| {
                    let open: Vec<usize> = units.pairs[u]
                        .iter()
                        .copied()
                        .filter(|&p| !explained[p])
                        .collect();
                    if open.is_empty() {
                        return None;
                    }
                    let c = units.change(u, m, &open, values.as_ref());
                    bar.passed(&c).then_some((u, c))
                })
                .collect();
            if candidates.is_empty() {
                break;
            }
            let chosen: Vec<(usize, UnitChange)> = if round < ONE_AT_A_TIME {
                candidates
                    .into_iter()
                    .max_by(|x, y| x.1.z.abs().total_cmp(&y.1.z.abs()))
                    .into_iter()
                    .collect()
            } else {
                candidates
            };
            let last = round >= ONE_AT_A_TIME;
            for (u, c) in chosen {
                taken[u] = true;
                for &p in &units.pairs[u] {
                    explained[p] = true;
                }
                out.push(c);
            }
            if last {
                break;
            }
        }
    }
    let centers = values_of(&explained).map_or(vec![0.0; CLASSES], |v| v.centers());
    let mut pairs: Vec<UnitChange> = m
        .pairs
        .iter()
        .enumerate()
        .filter(|&(p, _)| !explained[p])
        .filter_map(|(_, pc)| {
            let residual = pc.log_ratio() - centers[pc.class as usize];
            if !residual.is_finite() {
                return None;
            }
            let c = UnitChange {
                kind: UnitKind::Pair,
                name: pair_name(a, pc.rows),
                hosts: [pc.rows.0, pc.rows.1]
                    .iter()
                    .filter_map(|&r| a.host(r).map(str::to_string))
                    .collect(),
                ranks: vec![a.ranks[pc.rows.0], a.ranks[pc.rows.1]],
                matrix: m.name.clone(),
                pairs: 1,
                z: z_of(residual, m.run_to_run.pair_variance(pc).sqrt()),
                change: residual.exp_m1(),
                spread_ratio: pc.spread_ratio,
            };
            // A pair changed when it did against the machine and by itself: where classes of
            // pairs moved apart (two ranks time-sliced on one core flip between modes the
            // others do not have), the machine's median moves with the many.
            let sd = m.run_to_run.pair_variance(pc).sqrt();
            let by_itself = (z_of(pc.log_ratio(), sd), pc.log_ratio().exp_m1());
            (pair_bars.iter())
                .any(|b| b.passed(&c) && b.passed_by(by_itself.0, by_itself.1))
                .then_some(c)
        })
        .collect();
    pairs.sort_by(|x, y| y.z.abs().total_cmp(&x.z.abs()));
    pairs.truncate(PAIRS_LISTED);
    out.extend(pairs);
    out
}
