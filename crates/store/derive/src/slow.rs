//! A run's own health, the same for every plan: hosts and ranks (one core) slower than the
//! machine's others, each judged on its pairs together.
//!
//! Each measured pair's value is taken in logs against its placement class's median (same
//! core, same socket, different hosts, ...); a unit's effect is the median of its pairs'
//! ratios, its confidence that effect over its standard error ([`lgate_stats::aggregate`]:
//! the pairs' spread beyond their repetitions, the ranks' own spread, and with enough hosts
//! theirs). A unit is slow at [`SLOW_FACTOR`] and `z >=` [`SLOW_Z`]. Hosts are judged first,
//! the slowest first and the class medians then taken again without its pairs; then ranks on
//! the pairs no slow host explains.
//!
//! Pairs between hosts are as far apart as the fabric puts their hosts (a switch level, a
//! dragonfly group): against their class's median, a host on the far side of the fabric (a
//! small leaf's) would look slow. So a host is judged on the pairs inside it; one with fewer
//! than [`MIN_INSIDE`] on its floor, the median of its pairs with its nearest other host,
//! against the other hosts' floors (a slow host is slow to its nearest host too, a far one is
//! not); and a rank on all its pairs, each against
//! the median of the pairs of its class between the same two hosts (so against the other
//! ranks of its host). A link between two hosts is judged between two runs (`diff`), where
//! the fabric cancels.

use std::collections::HashMap;

use rayon::prelude::*;

use lgate_rundir::report::{SlowHost, SlowRank};
use lgate_stats::aggregate::{class_centers, Aggregate, ClassValues, PairEvidence, Spread};

/// The least factor over the machine's others of a slow host or rank.
pub const SLOW_FACTOR: f64 = 1.05;

/// The least confidence (z) of a slow host or rank.
pub const SLOW_Z: f64 = 3.0;

/// Pairs inside it that a host is judged on alone.
pub const MIN_INSIDE: usize = 3;

/// Hosts with a floor (pairs with another host) that a host is judged on its floor against.
const MIN_FLOORS: usize = 4;

/// Standard deviations in a median absolute deviation of normal values.
const MAD_SIGMAS: f64 = 1.4826;

/// Units taken one at a time (medians taken again each time) before the rest are taken in one
/// pass: bounds the cost on a machine where many are slow.
const ONE_AT_A_TIME: usize = 64;

/// One measured pair: its rows, placement class, `ln(value)` and the variance of that its
/// repetitions explain (0 when unknown).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evidence {
    /// The smaller row.
    pub i: u32,
    /// The larger row.
    pub j: u32,
    /// Its placement class.
    pub class: u8,
    /// `ln(value)`.
    pub value: f32,
    /// The variance of `value` its repetitions explain.
    pub variance: f32,
}

impl Evidence {
    /// A pair of rows `i`, `j` of class `class`, `value` us with repetitions of standard
    /// deviation `sd` us (NaN when unknown); `None` for a value that is not positive.
    pub fn new(i: usize, j: usize, class: usize, value: f64, sd: f64) -> Option<Evidence> {
        if !(value.is_finite() && value > 0.0) {
            return None;
        }
        let relative = if sd.is_finite() { sd / value } else { 0.0 };
        Some(Evidence {
            i: i.min(j) as u32,
            j: i.max(j) as u32,
            class: class as u8,
            value: value.ln() as f32,
            variance: (relative * relative) as f32,
        })
    }
}

impl PairEvidence for Evidence {
    fn rows(&self) -> (usize, usize) {
        (self.i as usize, self.j as usize)
    }
    fn class(&self) -> usize {
        self.class as usize
    }
    fn log_value(&self) -> f64 {
        f64::from(self.value)
    }
    fn repeat_variance(&self) -> f64 {
        f64::from(self.variance)
    }
}

/// Where the rows of a matrix ran.
#[derive(Debug, Clone, Copy)]
pub struct Rows<'a> {
    /// Per row, its rank.
    pub rank: &'a [usize],
    /// Per row, its host's name (`None` when unknown).
    pub host: &'a [Option<&'a str>],
}

/// What is slow in one matrix.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Slow {
    /// Slow hosts.
    pub hosts: Vec<SlowHost>,
    /// Slow ranks.
    pub ranks: Vec<SlowRank>,
}

impl Slow {
    /// Adds `other`'s, keeping each host or rank once, where its z is highest.
    pub fn merge(&mut self, other: Slow) {
        fn keep<T>(
            mine: &mut Vec<T>,
            theirs: Vec<T>,
            key: impl Fn(&T) -> String,
            z: fn(&T) -> f64,
        ) {
            for t in theirs {
                match mine.iter_mut().find(|m| key(m) == key(&t)) {
                    Some(m) if z(m) >= z(&t) => {}
                    Some(m) => *m = t,
                    None => mine.push(t),
                }
            }
        }
        keep(&mut self.hosts, other.hosts, |h| h.host.clone(), |h| h.z);
        keep(
            &mut self.ranks,
            other.ranks,
            |r| r.rank.to_string(),
            |r| r.z,
        );
    }
}

/// The kinds of unit, in the order they are judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Host,
    Rank,
}

/// Where the rows ran, as numbers: per row its host's id ([`NO_HOST`] when unknown), and the
/// hosts' names by id.
struct HostIds<'a> {
    of_row: Vec<u32>,
    names: Vec<&'a str>,
}

/// The id of a row whose host is unknown.
const NO_HOST: u32 = u32::MAX;

impl<'a> HostIds<'a> {
    fn new(rows: Rows<'a>) -> HostIds<'a> {
        let mut ids: HashMap<&str, u32> = HashMap::new();
        let mut names = Vec::new();
        let of_row = (rows.host.iter())
            .map(|h| match h {
                Some(h) => *ids.entry(h).or_insert_with(|| {
                    names.push(*h);
                    (names.len() - 1) as u32
                }),
                None => NO_HOST,
            })
            .collect();
        HostIds { of_row, names }
    }

    /// The host id of row `i`.
    fn of(&self, i: usize) -> u32 {
        self.of_row.get(i).copied().unwrap_or(NO_HOST)
    }
}

/// The units of one kind, in the order their first pair comes: a host id or a row, and their
/// pairs.
fn units(kind: Kind, pairs: &[Evidence], hosts: &HostIds) -> Vec<(usize, Vec<usize>)> {
    let slots = match kind {
        Kind::Rank => (pairs.iter()).map(|e| e.j as usize + 1).max().unwrap_or(0),
        Kind::Host => hosts.names.len(),
    };
    let mut index = vec![usize::MAX; slots];
    let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut add = |unit: usize, p: usize| {
        if index[unit] == usize::MAX {
            index[unit] = out.len();
            out.push((unit, Vec::new()));
        }
        out[index[unit]].1.push(p);
    };
    for (p, e) in pairs.iter().enumerate() {
        let (i, j) = (e.i as usize, e.j as usize);
        match kind {
            Kind::Rank => {
                add(i, p);
                add(j, p);
            }
            Kind::Host => {
                let (a, b) = (hosts.of(i), hosts.of(j));
                if a == NO_HOST || b == NO_HOST {
                    continue;
                }
                add(a as usize, p);
                if a != b {
                    add(b as usize, p);
                }
            }
        }
    }
    out
}

/// Each host's floor (ln us): the median of its pairs with its nearest other host. A host
/// judged on its pairs with other hosts is judged on its floor against the other hosts' (their
/// median, and their spread as its noise): the fabric puts far hosts far, but a slow host is
/// slow to its nearest too.
struct Floors {
    of_host: Vec<f64>,
    /// The hosts' median floor and the variance of their spread, with enough hosts.
    center: Option<(f64, f64)>,
}

impl Floors {
    /// Host `host`'s floor over the others', as a unit of `pairs` pairs.
    fn aggregate(&self, host: usize, pairs: usize) -> Option<Aggregate> {
        let (m, variance) = self.center?;
        let f = self.of_host.get(host).copied().filter(|f| f.is_finite())?;
        Some(Aggregate {
            change: f - m,
            variance,
            pairs,
        })
    }
}

/// Each pair against the median of its block (so that a rank is judged against the other
/// ranks of its host, whatever the fabric does between hosts), and the hosts' floors from the
/// medians of their blocks between hosts (`between` the class of those pairs).
fn center_on_blocks(
    pairs: &[Evidence],
    blocks: &[Vec<usize>],
    ids: &HostIds,
    between: usize,
) -> (Vec<Evidence>, Floors) {
    let mut centered = pairs.to_vec();
    let mut of_host = vec![f64::INFINITY; ids.names.len()];
    let mut v = Vec::new();
    for block in blocks {
        v.clear();
        v.extend(block.iter().map(|&p| f64::from(pairs[p].value)));
        let m = lgate_stats::median(&mut v) as f32;
        for &p in block {
            centered[p].value -= m;
        }
        let e = &pairs[block[0]];
        let (a, b) = (ids.of(e.i as usize), ids.of(e.j as usize));
        if usize::from(e.class) == between && a != b && a != NO_HOST && b != NO_HOST {
            for h in [a, b] {
                of_host[h as usize] = of_host[h as usize].min(f64::from(m));
            }
        }
    }
    let mut f: Vec<f64> = of_host.iter().copied().filter(|f| f.is_finite()).collect();
    let m = lgate_stats::median(&mut f);
    let mut d: Vec<f64> = f.iter().map(|x| (x - m).abs()).collect();
    let sd = MAD_SIGMAS * lgate_stats::median(&mut d);
    let center = (f.len() >= MIN_FLOORS).then_some((m, sd * sd));
    (centered, Floors { of_host, center })
}

/// The hosts and ranks slow in one matrix (`matrix` names it) of `pairs` over `classes`
/// placement classes, `between` the class of pairs between two hosts.
pub fn judge(pairs: &[Evidence], classes: usize, between: usize, rows: Rows, matrix: &str) -> Slow {
    let mut slow = Slow::default();
    if pairs.len() < 3 {
        return slow;
    }
    let centers = class_centers(pairs, 0..pairs.len(), classes);
    // Each rank in the group of its host.
    let ids = HostIds::new(rows);
    let by_rank = ranks_by_host(pairs, &ids);
    let blocks = blocks_alike(pairs, &ids);
    let spread = Spread::estimate(
        pairs,
        classes,
        &centers,
        blocks.iter().map(Vec::as_slice),
        &by_rank,
    );
    drop(by_rank);
    // For ranks: each pair against its block's median; for hosts of few ranks, their floors.
    let (centered, floors) = center_on_blocks(pairs, &blocks, &ids, between);
    drop(blocks);
    let hosts = ids.names.len();
    let mut explained = vec![false; pairs.len()];
    let zero = vec![0.0; classes];
    for kind in [Kind::Host, Kind::Rank] {
        if kind == Kind::Host && hosts < 2 {
            continue;
        }
        let all = units(kind, pairs, &ids);
        // A host's pairs inside it, or all of them when it has too few; a rank's all.
        let inside = |u: &[usize]| -> Vec<usize> {
            if kind == Kind::Rank {
                return u.to_vec();
            }
            let v: Vec<usize> = (u.iter().copied())
                .filter(|&p| usize::from(pairs[p].class) != between)
                .collect();
            if v.len() >= MIN_INSIDE {
                v
            } else {
                u.to_vec()
            }
        };
        let judged_on: Vec<Vec<usize>> = all.iter().map(|u| inside(&u.1)).collect();
        let own = match kind {
            Kind::Rank => 0.0,
            Kind::Host => spread.beyond(pairs, judged_on.iter().map(Vec::as_slice), &centers),
        };
        let mut taken = vec![false; all.len()];
        for round in 0.. {
            // The class medians without what is explained (hosts are judged against them).
            let values = (kind == Kind::Host).then(|| {
                let open = (0..pairs.len()).filter(|&p| !explained[p]);
                ClassValues::of(pairs, open, classes)
            });
            let mut found: Vec<(usize, Aggregate)> = (0..all.len())
                .into_par_iter()
                .filter(|&u| !taken[u])
                .filter_map(|u| {
                    let open: Vec<usize> = (judged_on[u].iter().copied())
                        .filter(|&p| !explained[p])
                        .collect();
                    // A host against the other hosts' pairs, not its own too; a rank against
                    // its blocks.
                    let a = match (kind, &values) {
                        (Kind::Host, _) if judged_on[u].len() == all[u].1.len() => {
                            floors.aggregate(all[u].0, open.len())?
                        }
                        (Kind::Host, Some(values)) => {
                            let centers = values.centers_without(pairs, &open);
                            spread.aggregate(pairs, &open, &centers, own)
                        }
                        _ => spread.aggregate(&centered, &open, &zero, own),
                    };
                    // Two hosts' pairs between them cannot tell which of the two is slow;
                    // the pairs inside each can.
                    let told =
                        kind == Kind::Rank || hosts > 2 || judged_on[u].len() != all[u].1.len();
                    (told && a.pairs > 0 && a.factor() >= SLOW_FACTOR && a.z() >= SLOW_Z)
                        .then_some((u, a))
                })
                .collect();
            if found.is_empty() {
                break;
            }
            if round < ONE_AT_A_TIME {
                found.sort_by(|x, y| y.1.z().total_cmp(&x.1.z()));
                found.truncate(1);
            }
            for &(u, a) in &found {
                taken[u] = true;
                for &p in &all[u].1 {
                    explained[p] = true;
                }
                let on_inside = kind == Kind::Host && judged_on[u].len() != all[u].1.len();
                let name = match kind {
                    Kind::Host => ids.names[all[u].0].to_string(),
                    Kind::Rank => all[u].0.to_string(),
                };
                push(&mut slow, (kind, on_inside), &name, a, (rows, matrix));
            }
            if round >= ONE_AT_A_TIME {
                break;
            }
        }
    }
    slow
}

/// Each rank's pairs, with its host's number (`usize::MAX` when its host is not known).
fn ranks_by_host(pairs: &[Evidence], ids: &HostIds) -> Vec<(usize, Vec<usize>)> {
    (units(Kind::Rank, pairs, ids).into_iter())
        .map(|(row, p)| {
            let host = ids.of(row);
            let group = if host == NO_HOST {
                usize::MAX
            } else {
                host as usize
            };
            (group, p)
        })
        .collect()
}

/// The pairs alike, as indices of `pairs`: of one class between the same two hosts (or inside
/// one). Pairs come in runs of one block (a host's, two hosts'): the map is looked in once a
/// run.
fn blocks_alike(pairs: &[Evidence], ids: &HostIds) -> Vec<Vec<usize>> {
    let key = |e: &Evidence| {
        let (a, b) = (ids.of(e.i as usize), ids.of(e.j as usize));
        (a.min(b), a.max(b), e.class)
    };
    let mut index: HashMap<(u32, u32, u8), usize> = HashMap::new();
    let mut blocks: Vec<Vec<usize>> = Vec::new();
    let mut last: Option<((u32, u32, u8), usize)> = None;
    for (p, e) in pairs.iter().enumerate() {
        let k = key(e);
        let b = match last {
            Some((lk, b)) if lk == k => b,
            _ => *index.entry(k).or_insert_with(|| {
                blocks.push(Vec::new());
                blocks.len() - 1
            }),
        };
        last = Some((k, b));
        blocks[b].push(p);
    }
    blocks
}

/// Records one slow unit.
fn push(
    slow: &mut Slow,
    (kind, inside): (Kind, bool),
    name: &str,
    a: Aggregate,
    (rows, matrix): (Rows, &str),
) {
    let (factor, z) = (a.factor(), a.z());
    let which = if inside {
        "inside its host"
    } else {
        "with other hosts"
    };
    let evidence = format!("z {z:.1} over {} pairs {which} at {matrix}", a.pairs);
    match kind {
        Kind::Host => slow.hosts.push(SlowHost {
            factor,
            host: name.to_string(),
            median_ratio: factor,
            ranks: rows.host.iter().filter(|h| **h == Some(name)).count(),
            why: if inside {
                format!(
                    "its pairs take x{factor:.2} their classes' median ({evidence}): a busy or \
                     slower host (other processes, its CPU frequency, its memory)"
                )
            } else {
                format!(
                    "its pairs with its nearest host take x{factor:.2} the other hosts' with \
                     theirs ({evidence}): other jobs' traffic on its link, a degraded link or a \
                     busy host"
                )
            },
            z,
            pairs: a.pairs,
            matrix: matrix.to_string(),
        }),
        Kind::Rank => {
            let row: usize = name.parse().unwrap_or_default();
            slow.ranks.push(SlowRank {
                host: rows.host.get(row).copied().flatten().map(str::to_string),
                median_ratio: factor,
                rank: rows.rank.get(row).copied().unwrap_or(row),
                why: format!("its pairs take x{factor:.2} their classes' median ({evidence})"),
                factor,
                z,
                pairs: a.pairs,
                matrix: matrix.to_string(),
            })
        }
    }
}

/// The health lines of what is slow: one per host and rank.
pub fn health_lines(slow: &Slow) -> Vec<String> {
    let mut lines = Vec::new();
    for h in &slow.hosts {
        lines.push(format!("host {} is slow: {}", h.host, h.why));
    }
    for r in &slow.ranks {
        let on = r
            .host
            .as_deref()
            .map(|h| format!(" on {h}"))
            .unwrap_or_default();
        lines.push(format!(
            "rank {}{on} is slow: {}: a busy or slow core",
            r.rank, r.why
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 4 hosts of 8 ranks, every pair: 1 us inside a host, 3 us between (class 1), times a
    /// spread of 3 % that varies pair to pair, times `factor(i, j)`.
    fn machine(factor: impl Fn(usize, usize) -> f64) -> (Vec<Evidence>, Vec<Option<&'static str>>) {
        const HOSTS: [&str; 4] = ["n0", "n1", "n2", "n3"];
        let host: Vec<Option<&str>> = (0..32).map(|r| Some(HOSTS[r / 8])).collect();
        let mut pairs = Vec::new();
        for i in 0..32 {
            for j in i + 1..32 {
                let same = i / 8 == j / 8;
                let base = if same { 1.0 } else { 3.0 };
                let wiggle = 1.0 + 0.03 * (((i * 31 + j * 17) % 13) as f64 / 6.0 - 1.0);
                let v = base * wiggle * factor(i, j);
                pairs.push(Evidence::new(i, j, usize::from(!same), v, 0.01 * v).unwrap());
            }
        }
        (pairs, host)
    }

    fn judged(factor: impl Fn(usize, usize) -> f64) -> Slow {
        let (pairs, host) = machine(factor);
        let ranks: Vec<usize> = (0..32).collect();
        let rows = Rows {
            rank: &ranks,
            host: &host,
        };
        judge(&pairs, 2, 1, rows, "rtt:0")
    }

    #[test]
    fn a_host_ten_percent_slower_is_named_with_its_confidence() {
        let slow = judged(|i, j| if i / 8 == 1 || j / 8 == 1 { 1.1 } else { 1.0 });
        assert_eq!(slow.hosts.len(), 1, "{slow:?}");
        assert_eq!(slow.hosts[0].host, "n1");
        assert!((slow.hosts[0].factor - 1.1).abs() < 0.02, "{slow:?}");
        assert!(slow.hosts[0].z > 10.0, "{slow:?}");
        assert!(slow.ranks.is_empty(), "{slow:?}");
        let line = &health_lines(&slow)[0];
        assert!(
            line.starts_with("host n1 is slow: its pairs take x1.10"),
            "{line}"
        );
        assert!(line.contains("pairs inside its host"), "{line}");
    }

    #[test]
    fn a_slow_rank_is_named_and_a_far_host_is_not_slow() {
        // Host n3 twice as far from the others as they are from each other (another switch),
        // and rank 13 (on n1) 1.5 times slower: the rank is named, no host.
        let slow = judged(|i, j| {
            let far = (i / 8 == 3) != (j / 8 == 3);
            let rank = i == 13 || j == 13;
            (if far { 2.0 } else { 1.0 }) * (if rank { 1.5 } else { 1.0 })
        });
        assert!(slow.hosts.is_empty(), "{slow:?}");
        assert_eq!(slow.ranks.len(), 1, "{slow:?}");
        assert_eq!(
            (slow.ranks[0].rank, slow.ranks[0].host.as_deref()),
            (13, Some("n1"))
        );
        assert!((slow.ranks[0].factor - 1.5).abs() < 0.05, "{slow:?}");
        let line = &health_lines(&slow)[0];
        assert!(
            line.starts_with("rank 13 on n1 is slow: its pairs take x1.49"),
            "{line}"
        );
    }

    /// Two leaves of 3 and 7 hosts of two ranks, every pair: 1 us inside a host, 3 us between
    /// hosts of a leaf, 30 us across (one class, "different hosts"), so that the small leaf's
    /// hosts have mostly far pairs and the class's median is near; times `factor(host)` for
    /// each of a pair's hosts and a spread of 3 %.
    fn leaves(factor: impl Fn(usize) -> f64) -> Slow {
        const HOSTS: [&str; 10] = ["a0", "a1", "a2", "b0", "b1", "b2", "b3", "b4", "b5", "b6"];
        let host: Vec<Option<&str>> = (0..20).map(|r| Some(HOSTS[r / 2])).collect();
        let leaf = |h: usize| usize::from(h >= 3);
        let mut pairs = Vec::new();
        for i in 0..20 {
            for j in i + 1..20 {
                let (hi, hj) = (i / 2, j / 2);
                let base = match (hi == hj, leaf(hi) == leaf(hj)) {
                    (true, _) => 1.0,
                    (false, true) => 3.0,
                    (false, false) => 30.0,
                };
                let wiggle = 1.0 + 0.03 * (((i * 31 + j * 17) % 13) as f64 / 6.0 - 1.0);
                let f = if hi == hj {
                    factor(hi)
                } else {
                    factor(hi) * factor(hj)
                };
                let v = base * wiggle * f;
                pairs.push(Evidence::new(i, j, usize::from(hi != hj), v, 0.01 * v).unwrap());
            }
        }
        let ranks: Vec<usize> = (0..20).collect();
        let rows = Rows {
            rank: &ranks,
            host: &host,
        };
        judge(&pairs, 2, 1, rows, "rtt:0")
    }

    #[test]
    fn hosts_of_a_small_leaf_are_not_slow() {
        // The small leaf's hosts have 8 near pairs and 28 far ones: against the class's median
        // they are 10x slower, but each is as near its nearest host as any host is.
        let slow = leaves(|_| 1.0);
        assert!(slow.hosts.is_empty(), "{slow:?}");
        // A host slower on every pair is still named, by no more than it is slow.
        let slow = leaves(|h| if h == 5 { 1.3 } else { 1.0 });
        let named: Vec<(&str, f64)> = (slow.hosts.iter())
            .map(|h| (h.host.as_str(), h.factor))
            .collect();
        assert_eq!(named.len(), 1, "{slow:?}");
        assert_eq!(named[0].0, "b2", "{slow:?}");
        assert!(named[0].1 > 1.15 && named[0].1 < 1.4, "{slow:?}");
    }

    #[test]
    fn a_machine_as_it_should_be_has_nothing_slow() {
        assert_eq!(judged(|_, _| 1.0), Slow::default());
        // Two of four hosts slow: each still named, against the other two.
        let slow = judged(|i, j| {
            let s = |r: usize| r / 8 == 0 || r / 8 == 3;
            if s(i) || s(j) {
                1.4
            } else {
                1.0
            }
        });
        let mut names: Vec<&str> = slow.hosts.iter().map(|h| h.host.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["n0", "n3"], "{slow:?}");
    }
}
