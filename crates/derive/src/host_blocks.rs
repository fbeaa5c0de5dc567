//! A staged run's screening by hosts (`hosts/`, [`HostBlocks`]): each host's block, the pairs
//! measured between hosts and the host x host summary, from the screening tests; and, when
//! dense matrices are written, the matrices filled from them (a pair not measured takes the
//! median of the measured pairs between the same two hosts).
//!
//! Memory grows with the pairs measured: a block per host (8 bytes a pair and size), a few
//! words per pair between hosts, and an index of 4 bytes per screening test.

use std::collections::HashMap;

use lgate_rundir::{
    BetweenPairs, Estimator, HostBlock, HostBlocks, HostEntry, HostIndex, HostLinks, Pair,
    RankInfo, RoundTrips,
};
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
    /// Between hosts, one row per test: the pair (two u32, 8 bytes).
    between: Vec<(u32, u32)>,
    /// Per row of `between`, per size: value, p10 and p90 (flat, 3 x sizes a row).
    between_values: Vec<f64>,
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
            between: Vec::new(),
            between_values: Vec::new(),
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
        let s = self.sizes.len();
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
            let start = self.between_values.len();
            self.between_values.resize(start + 3 * s, f64::NAN);
            let row = &mut self.between_values[start..];
            for t in trips {
                if let Ok(k) = self.sizes.binary_search(&t.size) {
                    row[3 * k] = US * self.estimator.of(&t.rtt);
                    row[3 * k + 1] = US * t.rtt.p10;
                    row[3 * k + 2] = US * t.rtt.p90;
                }
            }
            self.between.push((i as u32, j as u32));
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
        // The rows in pair order, through a permutation (the values stay where they are).
        let mut order: Vec<u32> = (0..self.between.len() as u32).collect();
        order.sort_unstable_by_key(|&r| self.between[r as usize]);
        let mut between = BetweenPairs {
            rtt_us: vec![Vec::new(); s],
            p10_us: vec![Vec::new(); s],
            p90_us: vec![Vec::new(); s],
            ..BetweenPairs::default()
        };
        let mut values: Vec<f64> = Vec::new();
        let row = |r: u32| &self.between_values[3 * s * r as usize..3 * s * (r as usize + 1)];
        for run in order.chunk_by(|&x, &y| self.between[x as usize] == self.between[y as usize]) {
            let (i, j) = self.between[run[0] as usize];
            let (i, j) = (i as usize, j as usize);
            between.host_i.push(self.group_of[i]);
            between.host_j.push(self.group_of[j]);
            between.i.push(i as u32);
            between.j.push(j as u32);
            between.sweeps.push(run.len() as u32);
            for k in 0..s {
                for (q, out) in [
                    &mut between.rtt_us[k],
                    &mut between.p10_us[k],
                    &mut between.p90_us[k],
                ]
                .into_iter()
                .enumerate()
                {
                    values.clear();
                    values.extend(
                        run.iter()
                            .map(|&r| row(r)[3 * k + q])
                            .filter(|x| !x.is_nan()),
                    );
                    out.push(median(&mut values).unwrap_or(f64::NAN));
                }
            }
        }
        drop(order);
        drop(std::mem::take(&mut self.between));
        drop(std::mem::take(&mut self.between_values));
        let between = sorted_by_hosts(between);
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
}

/// The unordered pair of hosts of a pair between hosts.
fn host_key(p: &BetweenPairs, n: usize) -> (u32, u32) {
    let (a, b) = (p.host_i[n], p.host_j[n]);
    (a.min(b), a.max(b))
}

/// The pairs between hosts ordered by their pair of hosts, then by ranks.
fn sorted_by_hosts(p: BetweenPairs) -> BetweenPairs {
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_unstable_by_key(|&n| (host_key(&p, n), p.i[n], p.j[n]));
    let pick_u32 = |v: &[u32]| order.iter().map(|&n| v[n]).collect::<Vec<_>>();
    let pick_f64 = |v: &[Vec<f64>]| {
        v.iter()
            .map(|v| order.iter().map(|&n| v[n]).collect())
            .collect::<Vec<Vec<f64>>>()
    };
    BetweenPairs {
        host_i: pick_u32(&p.host_i),
        host_j: pick_u32(&p.host_j),
        i: pick_u32(&p.i),
        j: pick_u32(&p.j),
        sweeps: pick_u32(&p.sweeps),
        rtt_us: pick_f64(&p.rtt_us),
        p10_us: pick_f64(&p.p10_us),
        p90_us: pick_f64(&p.p90_us),
    }
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
    for run in (0..between.len())
        .collect::<Vec<_>>()
        .chunk_by(|&x, &y| host_key(between, x) == host_key(between, y))
    {
        let (a, b) = host_key(between, run[0]);
        starts.push((a, b, run[0], run.len()));
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
