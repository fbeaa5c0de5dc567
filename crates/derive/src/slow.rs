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
//! dragonfly group): against their class's median, a host on the far side of the fabric would
//! look slow. So a host is judged on the pairs inside it (only a host with fewer than
//! [`MIN_INSIDE`] on its pairs with other hosts), and a rank on all its pairs, each against
//! the median of the pairs of its class between the same two hosts (so against the other
//! ranks of its host). A link between two hosts is judged between two runs (`diff`), where
//! the fabric cancels.

use std::collections::HashMap;

use lgate_rundir::report::{SlowHost, SlowRank};
use lgate_stats::aggregate::{class_centers, Aggregate, ClassValues, PairEvidence, Spread};

/// The least factor over the machine's others of a slow host or rank.
pub const SLOW_FACTOR: f64 = 1.05;

/// The least confidence (z) of a slow host or rank.
pub const SLOW_Z: f64 = 3.0;

/// Pairs inside it that a host is judged on alone.
pub const MIN_INSIDE: usize = 3;

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

/// The units of one kind: a name (host, or the row) and their pairs.
fn units(kind: Kind, pairs: &[Evidence], rows: Rows) -> Vec<(String, Vec<usize>)> {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    let mut add = |name: String, p: usize| {
        let k = *index.entry(name.clone()).or_insert_with(|| {
            out.push((name, Vec::new()));
            out.len() - 1
        });
        out[k].1.push(p);
    };
    for (p, e) in pairs.iter().enumerate() {
        let (i, j) = (e.i as usize, e.j as usize);
        match kind {
            Kind::Rank => {
                add(i.to_string(), p);
                add(j.to_string(), p);
            }
            Kind::Host => {
                let (Some(a), Some(b)) = (rows.host[i], rows.host[j]) else {
                    continue;
                };
                add(a.to_string(), p);
                if a != b {
                    add(b.to_string(), p);
                }
            }
        }
    }
    out
}

/// A block of pairs alike: its two hosts (in order) and their class.
type BlockKey<'a> = (Option<&'a str>, Option<&'a str>, u8);

/// The hosts and ranks slow in one matrix (`matrix` names it) of `pairs` over `classes`
/// placement classes, `between` the class of pairs between two hosts.
pub fn judge(pairs: &[Evidence], classes: usize, between: usize, rows: Rows, matrix: &str) -> Slow {
    let mut slow = Slow::default();
    if pairs.len() < 3 {
        return slow;
    }
    let centers = class_centers(pairs, 0..pairs.len(), classes);
    // Each rank in the group of its host.
    let mut group_of: HashMap<&str, usize> = HashMap::new();
    for h in rows.host.iter().flatten() {
        let next = group_of.len();
        group_of.entry(h).or_insert(next);
    }
    let by_rank: Vec<(usize, Vec<usize>)> = (units(Kind::Rank, pairs, rows).into_iter())
        .map(|(name, p)| {
            let row: usize = name.parse().unwrap_or_default();
            let host = rows.host.get(row).copied().flatten();
            (
                host.and_then(|h| group_of.get(h).copied())
                    .unwrap_or(usize::MAX),
                p,
            )
        })
        .collect();
    // Pairs alike: of one class between the same two hosts (or inside one).
    let mut blocks: HashMap<BlockKey, Vec<usize>> = HashMap::new();
    for (p, e) in pairs.iter().enumerate() {
        let (a, b) = (rows.host[e.i as usize], rows.host[e.j as usize]);
        let key = if a <= b {
            (a, b, e.class)
        } else {
            (b, a, e.class)
        };
        blocks.entry(key).or_default().push(p);
    }
    let spread = Spread::estimate(
        pairs,
        classes,
        &centers,
        blocks.values().map(Vec::as_slice),
        &by_rank,
    );
    drop(by_rank);
    // For ranks: each pair against the median of its block, so that a rank is judged against
    // the other ranks of its host, whatever the fabric does between hosts.
    let mut centered = pairs.to_vec();
    for block in blocks.values() {
        let mut v: Vec<f64> = block.iter().map(|&p| f64::from(pairs[p].value)).collect();
        let m = lgate_stats::median(&mut v) as f32;
        for &p in block {
            centered[p].value -= m;
        }
    }
    drop(blocks);
    let hosts = {
        let mut h: Vec<&str> = rows.host.iter().flatten().copied().collect();
        h.sort_unstable();
        h.dedup();
        h.len()
    };
    let mut explained = vec![false; pairs.len()];
    let zero = vec![0.0; classes];
    for kind in [Kind::Host, Kind::Rank] {
        if kind == Kind::Host && hosts < 2 {
            continue;
        }
        let all = units(kind, pairs, rows);
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
            let open = (0..pairs.len()).filter(|&p| !explained[p]);
            let values = ClassValues::of(pairs, open, classes);
            let mut found: Vec<(usize, Aggregate)> = (0..all.len())
                .filter(|&u| !taken[u])
                .filter_map(|u| {
                    let open: Vec<usize> = (judged_on[u].iter().copied())
                        .filter(|&p| !explained[p])
                        .collect();
                    // A host against the other hosts' pairs, not its own too; a rank against
                    // its blocks.
                    let a = match kind {
                        Kind::Host => {
                            let centers = values.centers_without(pairs, &open);
                            spread.aggregate(pairs, &open, &centers, own)
                        }
                        Kind::Rank => spread.aggregate(&centered, &open, &zero, own),
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
                push(&mut slow, (kind, on_inside), &all[u].0, a, (rows, matrix));
            }
            if round >= ONE_AT_A_TIME {
                break;
            }
        }
    }
    slow
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
            why: format!(
                "its pairs take x{factor:.2} their classes' median ({evidence}): {}",
                if inside {
                    "a busy or slower host (other processes, its CPU frequency, its memory)"
                } else {
                    "other jobs' traffic on its link, a degraded link or a busy host"
                }
            ),
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
