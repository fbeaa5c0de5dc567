//! A staged run's screening by hosts (`hosts/`, [`HostBlocks`]): each host's block, the pairs
//! measured between hosts and the host x host summary, from the screening tests; and, when
//! dense matrices are written, the matrices filled from them (a pair not measured takes the
//! median of the measured pairs between the same two hosts).
//!
//! Memory grows with the pairs measured: a block per host (8 bytes a pair and size), a few
//! words per pair between hosts, and an index of 4 bytes per screening test.

use std::collections::HashMap;

use lgate_rundir::{Estimator, Pair, RankInfo, RoundTrips};
use lgate_tables::{BetweenPairs, HostBlock, HostBlocks, HostEntry, HostIndex, HostLinks};
use ndarray::Array2;

/// Seconds to microseconds, the unit of every output.
const US: f64 = 1e6;

/// One screening test of a pair, as the host blocks take it.
#[derive(Debug, Clone, Copy)]
pub struct ScreenedTest<'a> {
    /// The pair.
    pub pair: Pair,
    /// Its round trips at each screening size.
    pub trips: &'a [RoundTrips],
}

/// A run's screening by hosts, with the pairs between hosts.
#[derive(Debug, Clone)]
pub struct ByHosts {
    /// The blocks, the index and the host x host summary.
    pub blocks: HostBlocks,
    /// The pairs measured between hosts.
    pub between: BetweenPairs,
    /// Distinct pairs measured.
    pub measured: usize,
}

/// The median of `v`, `None` when empty.
fn median(v: &mut [f64]) -> Option<f64> {
    (!v.is_empty()).then(|| lgate_stats::median(v))
}

/// A group's name: its ranks' host when they share one, else `group K`.
fn group_name(k: usize, group: &[usize], ranks: &[RankInfo]) -> String {
    let host = |r: usize| ranks.get(r).map(|x| x.host.as_str());
    match group.first().and_then(|&r| host(r)) {
        Some(first) if group.iter().all(|&r| host(r) == Some(first)) => first.to_string(),
        _ => format!("group {k}"),
    }
}

/// The host blocks of a staged run's screening `tests` (every sweep of the concurrent stages)
/// over `groups` (each rank in at most one), at `sizes` (ascending); a test of a rank in no
/// group is left out.
pub fn by_hosts(
    ranks: &[RankInfo],
    groups: &[Vec<usize>],
    sizes: &[usize],
    estimator: Estimator,
    tests: &[ScreenedTest],
) -> ByHosts {
    let mut builder = HostBlocksBuilder::new(ranks, groups, sizes, estimator);
    for t in tests {
        builder.add(t.pair, t.trips);
    }
    builder.finish()
}

/// Host blocks gathered test by test, in any order: a test inside a host goes straight into
/// its block (a pair's later sweeps aside until the end), a test between hosts into a row of a
/// few words.
#[derive(Debug, Clone)]
pub struct HostBlocksBuilder {
    sizes: Vec<usize>,
    estimator: Estimator,
    group_of: Vec<u32>,
    at: Vec<usize>,
    hosts: Vec<HostEntry>,
    blocks: Vec<HostBlock>,
    /// Inside pairs measured more than once: (host, a, b, size) -> every value.
    repeated: HashMap<(u32, u32, u32, u32), Vec<f64>>,
    /// Between hosts, one row per test: the smaller rank.
    between_i: Vec<u32>,
    /// The larger rank.
    between_j: Vec<u32>,
    /// Per size, value, p10 and p90: 3 x sizes columns of one entry per row.
    between_values: Vec<Vec<f64>>,
}

impl HostBlocksBuilder {
    /// An empty set of blocks over `groups` of the run's `ranks`, at `sizes` (ascending).
    pub fn new(
        ranks: &[RankInfo],
        groups: &[Vec<usize>],
        sizes: &[usize],
        estimator: Estimator,
    ) -> Self {
        let n = ranks.len();
        let mut group_of = vec![u32::MAX; n];
        let mut at = vec![0usize; n];
        let mut hosts = Vec::with_capacity(groups.len());
        for (k, g) in groups.iter().enumerate() {
            let mut members: Vec<usize> = g.iter().copied().filter(|&r| r < n).collect();
            members.sort_unstable();
            for (a, &r) in members.iter().enumerate() {
                group_of[r] = k as u32;
                at[r] = a;
            }
            hosts.push(HostEntry {
                name: group_name(k, &members, ranks),
                ranks: members,
            });
        }
        let blocks = hosts
            .iter()
            .map(|h| {
                let g = h.ranks.len();
                let mut m = Array2::from_elem((g, g), f64::NAN);
                m.diag_mut().fill(0.0);
                HostBlock {
                    values: vec![m; sizes.len()],
                }
            })
            .collect();
        HostBlocksBuilder {
            sizes: sizes.to_vec(),
            estimator,
            group_of,
            at,
            hosts,
            blocks,
            repeated: HashMap::new(),
            between_i: Vec::new(),
            between_j: Vec::new(),
            between_values: vec![Vec::new(); 3 * sizes.len()],
        }
    }

    /// Room for `tests` more tests between hosts, taken exactly (a growing column would hold
    /// up to twice its rows while it doubles).
    pub fn reserve_between(&mut self, tests: usize) {
        self.between_i.reserve_exact(tests);
        self.between_j.reserve_exact(tests);
        for column in &mut self.between_values {
            column.reserve_exact(tests);
        }
    }

    /// Adds one screening test of `pair` (any sweep) with its round trips.
    pub fn add(&mut self, pair: Pair, trips: &[RoundTrips]) {
        let Pair { i, j } = pair;
        let (Some(&gi), Some(&gj)) = (self.group_of.get(i), self.group_of.get(j)) else {
            return;
        };
        if gi == u32::MAX || gj == u32::MAX {
            return;
        }
        if gi == gj {
            let (a, b) = (self.at[i].min(self.at[j]), self.at[i].max(self.at[j]));
            for t in trips {
                let Ok(k) = self.sizes.binary_search(&t.size) else {
                    continue;
                };
                let x = US * self.estimator.of(&t.rtt);
                let m = &mut self.blocks[gi as usize].values[k];
                let key = (gi, a as u32, b as u32, k as u32);
                if let Some(v) = self.repeated.get_mut(&key) {
                    v.push(x);
                } else if m[[a, b]].is_nan() {
                    m[[a, b]] = x;
                    m[[b, a]] = x;
                } else {
                    self.repeated.insert(key, vec![m[[a, b]], x]);
                }
            }
        } else {
            let row = self.between_i.len();
            for column in &mut self.between_values {
                column.push(f64::NAN);
            }
            for t in trips {
                if let Ok(k) = self.sizes.binary_search(&t.size) {
                    let c = &mut self.between_values[3 * k..3 * k + 3];
                    c[0][row] = US * self.estimator.of(&t.rtt);
                    c[1][row] = US * t.rtt.p10;
                    c[2][row] = US * t.rtt.p90;
                }
            }
            self.between_i.push(i as u32);
            self.between_j.push(j as u32);
        }
    }

    /// The blocks, the pairs between hosts (each the median over its tests) and the summary.
    pub fn finish(mut self) -> ByHosts {
        let s = self.sizes.len();
        for ((h, a, b, k), mut v) in std::mem::take(&mut self.repeated) {
            let x = lgate_stats::median(&mut v);
            let m = &mut self.blocks[h as usize].values[k as usize];
            m[[a as usize, b as usize]] = x;
            m[[b as usize, a as usize]] = x;
        }
        let mut inside_measured = 0;
        for block in &self.blocks {
            let g = block.values.first().map_or(0, |m| m.nrows());
            for a in 0..g {
                for b in a + 1..g {
                    inside_measured +=
                        usize::from(block.values.iter().any(|m| !m[[a, b]].is_nan()));
                }
            }
        }
        let between = self.between_pairs();
        let links = links_of(&self.blocks, &between, s);
        let mut index = HostIndex::new(self.group_of.len(), self.estimator, self.sizes, self.hosts);
        index.pairs.inside_measured = inside_measured;
        index.pairs.between_measured = between.len();
        ByHosts {
            measured: inside_measured + between.len(),
            blocks: HostBlocks {
                index,
                blocks: self.blocks,
                links,
            },
            between,
        }
    }

    /// The pairs between hosts, ordered by their pair of hosts then by ranks, each the median
    /// over its tests (sweeps); the rows are taken column by column, so that about one
    /// column more than the rows is held at a time (128 000 rows of 2 sizes: 72 bytes a row).
    fn between_pairs(&mut self) -> BetweenPairs {
        let s = self.sizes.len();
        let (ri, rj) = (
            std::mem::take(&mut self.between_i),
            std::mem::take(&mut self.between_j),
        );
        let group_of = &self.group_of;
        let hosts = |r: usize| {
            let (a, b) = (group_of[ri[r] as usize], group_of[rj[r] as usize]);
            (a.min(b), a.max(b))
        };
        // The order: by pair of hosts (one u64 key), then by ranks inside each pair of hosts.
        let order: Vec<u32> = {
            let mut keyed: Vec<(u64, u32)> = (0..ri.len())
                .map(|r| {
                    let (a, b) = hosts(r);
                    ((u64::from(a) << 32) | u64::from(b), r as u32)
                })
                .collect();
            keyed.sort_unstable();
            let mut order: Vec<u32> = keyed.iter().map(|k| k.1).collect();
            let mut start = 0;
            while start < keyed.len() {
                let end = start + keyed[start..].partition_point(|k| k.0 == keyed[start].0);
                order[start..end].sort_unstable_by_key(|&r| (ri[r as usize], rj[r as usize]));
                start = end;
            }
            order
        };
        // Runs of one pair (its sweeps), by their first position in `order`.
        let same =
            |x: u32, y: u32| (ri[x as usize], rj[x as usize]) == (ri[y as usize], rj[y as usize]);
        let mut starts: Vec<u32> = Vec::new();
        let mut once = true;
        for (n, w) in order.windows(2).enumerate() {
            if starts.is_empty() {
                starts.push(0);
            }
            if !same(w[0], w[1]) {
                starts.push(n as u32 + 1);
            } else {
                once = false;
            }
        }
        if starts.is_empty() && !order.is_empty() {
            starts.push(0);
        }
        let runs = || {
            (0..starts.len()).map(|k| {
                let end = starts.get(k + 1).map_or(order.len(), |&e| e as usize);
                &order[starts[k] as usize..end]
            })
        };
        let first = |v: &[u32]| runs().map(|run| v[run[0] as usize]).collect::<Vec<u32>>();
        let mut between = BetweenPairs {
            host_i: runs()
                .map(|run| group_of[ri[run[0] as usize] as usize])
                .collect(),
            host_j: runs()
                .map(|run| group_of[rj[run[0] as usize] as usize])
                .collect(),
            i: first(&ri),
            j: first(&rj),
            sweeps: runs().map(|run| run.len() as u32).collect(),
            ..BetweenPairs::default()
        };
        let mut columns = std::mem::take(&mut self.between_values);
        let mut out: Vec<Vec<f64>> = Vec::with_capacity(3 * s);
        let mut values: Vec<f64> = Vec::new();
        for column in columns.iter_mut() {
            let column = std::mem::take(column);
            out.push(if once {
                order.iter().map(|&r| column[r as usize]).collect()
            } else {
                runs()
                    .map(|run| {
                        values.clear();
                        values.extend(
                            run.iter()
                                .map(|&r| column[r as usize])
                                .filter(|x| !x.is_nan()),
                        );
                        median(&mut values).unwrap_or(f64::NAN)
                    })
                    .collect()
            });
        }
        let mut out = out.into_iter();
        for _ in 0..s {
            between.rtt_us.extend(out.next());
            between.p10_us.extend(out.next());
            between.p90_us.extend(out.next());
        }
        between
    }
}

/// The unordered pair of hosts of a pair between hosts.
fn host_key(p: &BetweenPairs, n: usize) -> (u32, u32) {
    let (a, b) = (p.host_i[n], p.host_j[n]);
    (a.min(b), a.max(b))
}

/// The host x host summary: per host its block's measured pairs, per two hosts the pairs
/// measured between them (`between` ordered by pair of hosts).
fn links_of(blocks: &[HostBlock], between: &BetweenPairs, s: usize) -> HostLinks {
    let mut links = HostLinks {
        median_us: vec![Vec::new(); s],
        p25_us: vec![Vec::new(); s],
        p75_us: vec![Vec::new(); s],
        ..HostLinks::default()
    };
    let mut push = |a: u32, b: u32, values: &mut [Vec<f64>], pairs: usize| {
        links.host_i.push(a);
        links.host_j.push(b);
        links.pairs.push(pairs.min(u32::MAX as usize) as u32);
        for (k, v) in values.iter_mut().enumerate() {
            v.retain(|x| x.is_finite());
            v.sort_unstable_by(f64::total_cmp);
            let q = |q| lgate_stats::quantile_of_sorted(v, q);
            links.median_us[k].push(q(0.5));
            links.p25_us[k].push(q(0.25));
            links.p75_us[k].push(q(0.75));
        }
    };
    // The entries in (a, b) order: host a's block, then its pairs with hosts after it.
    let mut starts: Vec<(u32, u32, usize, usize)> = Vec::new();
    let mut start = 0;
    while start < between.len() {
        let key = host_key(between, start);
        let mut end = start + 1;
        while end < between.len() && host_key(between, end) == key {
            end += 1;
        }
        starts.push((key.0, key.1, start, end - start));
        start = end;
    }
    let mut next = starts.iter().peekable();
    let mut values: Vec<Vec<f64>> = vec![Vec::new(); s];
    for (h, block) in blocks.iter().enumerate() {
        values.iter_mut().for_each(Vec::clear);
        let g = block.values.first().map_or(0, |m| m.nrows());
        let mut pairs = 0;
        for a in 0..g {
            for b in a + 1..g {
                let mut any = false;
                for (k, m) in block.values.iter().enumerate() {
                    if m[[a, b]].is_finite() {
                        values[k].push(m[[a, b]]);
                        any = true;
                    }
                }
                pairs += usize::from(any);
            }
        }
        if pairs > 0 {
            push(h as u32, h as u32, &mut values, pairs);
        }
        while let Some(&&(a, b, start, len)) = next.peek() {
            if a as usize != h {
                break;
            }
            next.next();
            for (k, v) in values.iter_mut().enumerate() {
                v.clear();
                v.extend_from_slice(&between.rtt_us[k][start..start + len]);
            }
            push(a, b, &mut values, len);
        }
    }
    links
}

/// Dense matrices filled from host blocks, one per size, and the mask of measured pairs.
pub(crate) struct Dense {
    /// One matrix per size.
    pub values: Vec<Array2<f64>>,
    /// 1 where the pair was measured.
    pub mask: Array2<f64>,
}

/// The dense matrices of `by`: a pair measured has its value, a pair not measured the median of
/// the measured pairs between its two hosts (inside its host). An error gives how many pairs
/// have no value and the first of them.
pub(crate) fn dense(by: &ByHosts) -> Result<Dense, (usize, String)> {
    let index = &by.blocks.index;
    let n = index.ranks;
    let s = index.sizes.len();
    let host_of = index.host_of();
    let mut values = vec![Array2::<f64>::from_elem((n, n), f64::NAN); s];
    let mut mask = Array2::<f64>::zeros((n, n));
    for (host, block) in index.hosts.iter().zip(&by.blocks.blocks) {
        for (a, &i) in host.ranks.iter().enumerate() {
            for (b, &j) in host.ranks.iter().enumerate().skip(a + 1) {
                for (k, m) in values.iter_mut().enumerate() {
                    let x = block.values[k][[a, b]];
                    if x.is_finite() {
                        m[[i, j]] = x;
                        m[[j, i]] = x;
                        mask[[i, j]] = 1.0;
                        mask[[j, i]] = 1.0;
                    }
                }
            }
        }
    }
    let p = &by.between;
    for n in 0..p.len() {
        let (i, j) = (p.i[n] as usize, p.j[n] as usize);
        for (k, m) in values.iter_mut().enumerate() {
            let x = p.rtt_us[k][n];
            if x.is_finite() {
                m[[i, j]] = x;
                m[[j, i]] = x;
            }
        }
        mask[[i, j]] = 1.0;
        mask[[j, i]] = 1.0;
    }
    let links = &by.blocks.links;
    let link: HashMap<(u32, u32), usize> = (0..links.len())
        .map(|e| ((links.host_i[e], links.host_j[e]), e))
        .collect();
    let mut missing = 0;
    let mut first = None;
    for i in 0..n {
        values.iter_mut().for_each(|m| m[[i, i]] = 0.0);
        for j in i + 1..n {
            for (k, m) in values.iter_mut().enumerate() {
                if !m[[i, j]].is_nan() {
                    continue;
                }
                let (a, b) = (host_of[i], host_of[j]);
                match link
                    .get(&(a.min(b), a.max(b)))
                    .map(|&e| links.median_us[k][e])
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
    match first {
        Some(first) => Err((missing, first)),
        None => Ok(Dense { values, mask }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lgate_stats::Summary;

    fn trips(size: usize, us: f64) -> Vec<RoundTrips> {
        vec![RoundTrips {
            size,
            rtt: Summary::of(&[us * 1e-6; 4]).unwrap(),
        }]
    }

    fn ranks(hosts: &[&str]) -> Vec<RankInfo> {
        hosts
            .iter()
            .enumerate()
            .map(|(r, h)| RankInfo::on_host(r, h.to_string()))
            .collect()
    }

    #[test]
    fn unmeasured_pairs_take_their_hosts_median() {
        // Hosts {0,1} and {2,3}: all inside pairs, and 0-2, 1-3 between (3 and 5 us).
        let data = [
            (Pair::new(0, 1), trips(0, 1.0)),
            (Pair::new(2, 3), trips(0, 1.5)),
            (Pair::new(0, 2), trips(0, 3.0)),
            (Pair::new(1, 3), trips(0, 5.0)),
        ];
        let tests: Vec<ScreenedTest> = data
            .iter()
            .map(|(pair, t)| ScreenedTest {
                pair: *pair,
                trips: t,
            })
            .collect();
        let groups = [vec![0, 1], vec![2, 3]];
        let by = by_hosts(
            &ranks(&["a", "a", "b", "b"]),
            &groups,
            &[0],
            Estimator::Median,
            &tests,
        );
        assert_eq!(by.measured, 4);
        assert_eq!(by.blocks.index.hosts[1].name, "b");
        assert_eq!(by.blocks.index.pairs.between_total, 4);
        let links = &by.blocks.links;
        assert_eq!(
            (links.host_i.clone(), links.host_j.clone()),
            (vec![0, 0, 1], vec![0, 1, 1])
        );
        assert_eq!(links.median_us[0], [1.0, 4.0, 1.5]);
        assert_eq!(links.pairs, [1, 2, 1]);
        let f = dense(&by).unwrap();
        let m = &f.values[0];
        assert_eq!(m[[0, 1]], 1.0);
        assert_eq!(m[[0, 3]], 4.0, "the median of 3 and 5");
        assert_eq!(m[[3, 0]], 4.0);
        assert_eq!(m[[1, 2]], 4.0);
        assert_eq!(f.mask[[0, 3]], 0.0);
        assert_eq!(f.mask[[2, 0]], 1.0);
        // A pair measured in two sweeps is one row, the median of its tests; rows stay in
        // host-pair then rank order whatever order the tests came in.
        let again = trips(0, 7.0);
        let mut twice = tests.clone();
        twice.insert(
            0,
            ScreenedTest {
                pair: Pair::new(1, 3),
                trips: &again,
            },
        );
        twice.reverse();
        let by2 = by_hosts(
            &ranks(&["a", "a", "b", "b"]),
            &groups,
            &[0],
            Estimator::Median,
            &twice,
        );
        assert_eq!(
            (by2.between.i.clone(), by2.between.j.clone()),
            (vec![0, 1], vec![2, 3])
        );
        assert_eq!(by2.between.sweeps, [1, 2]);
        assert_eq!(
            by2.between.rtt_us[0],
            [3.0, lgate_stats::median(&mut [5.0, 7.0])]
        );
        assert_eq!(by2.between.rtt_us[0].len(), by2.between.p90_us[0].len());
        // A pair of hosts with nothing measured cannot be filled.
        let by = by_hosts(
            &ranks(&["a", "a", "b", "b"]),
            &groups,
            &[0],
            Estimator::Median,
            &tests[..2],
        );
        assert_eq!(dense(&by).err().unwrap().0, 4);
    }
}
