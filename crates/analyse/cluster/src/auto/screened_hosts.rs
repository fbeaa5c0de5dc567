//! The levels above the hosts that the pairs screened so far nearly decide, judged as `cluster`
//! judges a run's pairs: one judge for `measure`, which spends its confidence budget where a
//! level is in doubt, and `cluster`, which reports it.
//!
//! `measure` holds the pairs it has screened (each pair's value and floor at each screening
//! size), not host blocks: they are summarised per host here (the host x host medians and
//! quartiles, the pairs between hosts, each pair's floor) and judged as `cluster` judges the
//! smallest size's matrix, every other size as evidence with it ([`crate::by_hosts`]'s levels
//! above the hosts: slow hosts divided out, the floors' groupings judged on the floors).
//!
//! Memory: the pairs given and their summary, about 60 bytes a pair between hosts.

use std::collections::BTreeMap;

use lgate_rundir::Estimator;
use lgate_tables::{BetweenPairs, HostEntry, HostIndex};

use crate::auto::AutoParams;
use crate::by_hosts::{hosts_part, links_of, ByHostsError, PairTests};
use crate::host_levels::Doubt;
use lgate_topology::judge::{JudgeError, LevelJudge};

pub use lgate_topology::judge::ScreenedRankPairs;

/// `cluster`'s judge of the levels above the hosts, for `measure` to ask while it measures
/// ([`doubts_of_screened`]): a level the pairs decide only below [`Z_FIRM`] counts as in doubt
/// too (`cluster` would keep it undecided), and groups of hosts with a slow host inside are
/// levels as any other (their ranks share no core).
///
/// [`Z_FIRM`]: crate::host_levels::Z_FIRM
#[derive(Debug, Clone, Copy, Default)]
pub struct ScreenedJudge;

impl LevelJudge for ScreenedJudge {
    fn max_groups(&self) -> usize {
        crate::host_levels::MAX_HOSTS
    }
    fn z_decide(&self) -> f64 {
        crate::host_levels::Z_DECIDE
    }
    fn z_firm(&self) -> f64 {
        crate::host_levels::Z_FIRM
    }
    fn most_tests(&self) -> usize {
        crate::host_levels::MOST_TESTS
    }
    fn doubts(
        &self,
        groups: &[Vec<usize>],
        ranks: usize,
        pairs: ScreenedRankPairs,
    ) -> Result<Vec<Doubt>, JudgeError> {
        let p = AutoParams {
            slow_inside_level: false,
            pairs_decide: crate::host_levels::Z_FIRM,
            doubt_undecidable: true,
            ..AutoParams::default()
        };
        Ok(doubts_of_screened(groups, ranks, pairs, &p)?)
    }
}

/// The groupings of the hosts `hosts` (each its ranks; `ranks` ranks in all) that the pairs
/// nearly decide, as `cluster` judges them on the smallest size's matrix; their members are
/// positions in `hosts`. An error when two hosts have no pair between them at that size.
pub fn doubts_of_screened(
    hosts: &[Vec<usize>],
    ranks: usize,
    pairs: ScreenedRankPairs,
    p: &AutoParams,
) -> Result<Vec<Doubt>, ByHostsError> {
    let s = pairs.values.len();
    let mut host_of = vec![usize::MAX; ranks];
    for (x, members) in hosts.iter().enumerate() {
        for &r in members.iter().filter(|&&r| r < ranks) {
            host_of[r] = x;
        }
    }
    let host = |r: u32| {
        host_of
            .get(r as usize)
            .copied()
            .filter(|&x| x != usize::MAX)
    };
    let mut per: BTreeMap<(usize, usize), Vec<Vec<f64>>> = BTreeMap::new();
    // The pairs' values only: the judge reads no spread of their repetitions.
    let mut between = BetweenPairs {
        rtt_us: vec![Vec::new(); s],
        ..BetweenPairs::default()
    };
    // The smallest size's tests (where a pair was screened more than once) and floors, as the
    // matrix judged keeps them.
    let mut tests = PairTests::default();
    let mut seen = std::collections::HashSet::with_capacity(pairs.len());
    let repeated = (pairs.i.iter().zip(&pairs.j))
        .any(|(&i, &j)| !seen.insert((u64::from(i.min(j)) << 32) | u64::from(i.max(j))));
    drop(seen);
    for n in 0..pairs.len() {
        let (i, j) = (pairs.i[n].min(pairs.j[n]), pairs.i[n].max(pairs.j[n]));
        let (Some(x), Some(y)) = (host(i), host(j)) else {
            continue;
        };
        if i == j {
            continue;
        }
        let per_size = (per.entry((x.min(y), x.max(y)))).or_insert_with(|| vec![Vec::new(); s]);
        for (k, values) in per_size.iter_mut().enumerate() {
            values.extend(Some(pairs.values[k][n]).filter(|v| v.is_finite()));
        }
        if x == y {
            continue;
        }
        between.host_i.push(x as u32);
        between.host_j.push(y as u32);
        between.i.push(i);
        between.j.push(j);
        between.sweeps.push(1);
        let key = (i as usize, j as usize);
        for k in 0..s {
            let v = pairs.values[k][n];
            between.rtt_us[k].push(v);
        }
        if let Some(&v) = pairs.values.first().and_then(|c| c.get(n)) {
            if repeated && v.is_finite() {
                tests.values.entry(key).or_default().push(v);
            }
        }
        if let Some(&f) = pairs.floors.first().and_then(|c| c.get(n)) {
            if f.is_finite() {
                let floor = tests.floors.entry(key).or_insert(f64::INFINITY);
                *floor = floor.min(f);
            }
        }
    }
    drop(pairs);
    let links = links_of(per, s);
    let entries = (hosts.iter().enumerate())
        .map(|(x, members)| HostEntry {
            name: format!("group {x}"),
            ranks: members.clone(),
        })
        .collect();
    let index = HostIndex::new(ranks, Estimator::Median, (0..s).collect(), entries);
    // The smallest size first (the latency where a non-blocking fabric's hops show, and the
    // floors), every other size as evidence with it: one judgement, not one a size.
    let part = hosts_part(&index, &links, 0, Some(&between), Some(&tests), p)?;
    Ok(part.doubts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_one_pair_between_two_hosts_nearly_decides_are_a_doubt() {
        // Six hosts of two ranks in three leaves of two: one pair between two hosts, leaves
        // 20 % apart with a few percent of noise: too few pairs to decide.
        let hosts: Vec<Vec<usize>> = (0..6).map(|x| vec![2 * x, 2 * x + 1]).collect();
        let value = |i: usize, j: usize, n: usize| {
            let base = match (i / 2 == j / 2, i / 4 == j / 4) {
                (true, _) => 1.0,
                (false, true) => 10.0,
                (false, false) => 12.0,
            };
            base * (1.0 + 0.03 * (((i * 7 + j * 13 + n * 5) % 9) as f64 - 4.0) / 4.0)
        };
        let mut few = ScreenedRankPairs::with_sizes(1);
        for i in 0..12u32 {
            for j in i + 1..12 {
                let (a, b) = (i as usize, j as usize);
                if a / 2 == b / 2 || (a % 2 == 0 && b % 2 == 1) {
                    let v = value(a, b, 0);
                    few.push(i, j, &[v], &[v * 0.95]);
                }
            }
        }
        let p = AutoParams::default();
        let doubts = doubts_of_screened(&hosts, 12, few, &p).unwrap();
        assert!(
            doubts
                .iter()
                .any(|d| d.groups_of() == [[0, 1], [2, 3], [4, 5]]),
            "{doubts:?}"
        );
        assert!(doubts.iter().all(|d| d.z < crate::host_levels::Z_DECIDE));
    }

    #[test]
    fn a_level_of_the_medians_one_test_a_pair_cannot_confirm_is_measures_doubt() {
        // Random fabric 2 on the emulated cluster at screening time: four leaves of two hosts
        // of two ranks, every pair between hosts screened once. The leaves stand out in the
        // medians (20 us against 35), but 16 pairs inside against 64 between cannot reach
        // `Z_FIRM` whatever the gap: `cluster` keeps the medians' level, and `measure` must
        // still ask for more tests of those pairs (it spent nothing on them before).
        let hosts: Vec<Vec<usize>> = (0..8).map(|x| vec![2 * x, 2 * x + 1]).collect();
        let mut pairs = ScreenedRankPairs::with_sizes(1);
        for i in 0..16u32 {
            for j in i + 1..16 {
                let (a, b) = (i as usize / 2, j as usize / 2);
                let base = match (a == b, a / 2 == b / 2) {
                    (true, _) => 2.0,
                    (false, true) => 20.0,
                    (false, false) => 35.0,
                };
                let v = base * (1.0 + 0.05 * (((i * 7 + j * 13) % 9) as f64 - 4.0) / 4.0);
                // No floors: the medians alone (floors this clear decide: `CLEAR_GAP`).
                pairs.push(i, j, &[v], &[f64::NAN]);
            }
        }
        let doubts = ScreenedJudge.doubts(&hosts, 16, pairs.clone()).unwrap();
        let leaves = [[0, 1], [2, 3], [4, 5], [6, 7]];
        let d = doubts.iter().find(|d| d.groups_of() == leaves);
        let d = d.unwrap_or_else(|| panic!("the leaves not in doubt: {doubts:?}"));
        assert!(
            d.z < crate::host_levels::Z_FIRM && d.tests_needed > 1,
            "{d:?}"
        );
        // `cluster`'s judgement of the same pairs keeps the level and says no doubt.
        let p = AutoParams::default();
        assert!(doubts_of_screened(&hosts, 16, pairs, &p)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn hosts_without_a_pair_between_them_are_an_error_naming_them() {
        let hosts: Vec<Vec<usize>> = (0..4).map(|x| vec![x]).collect();
        let mut pairs = ScreenedRankPairs::with_sizes(1);
        pairs.push(0, 1, &[10.0], &[9.0]);
        let e = doubts_of_screened(&hosts, 4, pairs, &AutoParams::default()).unwrap_err();
        assert!(e.to_string().contains("group"), "{e}");
    }
}
