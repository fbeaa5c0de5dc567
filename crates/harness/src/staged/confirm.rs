//! Stage 3's second budget: the pairs that would decide the levels above the groups that the
//! screening nearly decides, judged as `cluster` judges them.

use super::*;

/// The most groups whose host x host medians rank 0 clusters to find the levels in doubt
/// (2048: 32 MB), as `cluster` reads the pairs between hosts.
const CONFIRM_MAX_GROUPS: usize = lgate_cluster::host_levels::MAX_HOSTS;

/// Adds to `refine` the pairs that would decide the levels above the groups that the samples
/// nearly decide (`auto` by hosts on the screening values, see `lgate_cluster::host_levels`):
/// for each grouping in doubt, between every two of its groups, as many new pairs as the test
/// asks for, within `options.confidence` tests; returns what it found and added, for people.
pub fn confirmation(
    screened: &ScreenedValues,
    plan: &StagedPlan,
    refine: &mut Vec<Pair>,
) -> Vec<String> {
    let budget = plan.options().confidence;
    let g = plan.groups().len();
    if budget == 0 || g < 4 {
        return Vec::new();
    }
    if g > CONFIRM_MAX_GROUPS {
        return vec![format!(
            "confidence: {g} groups, above the {CONFIRM_MAX_GROUPS} whose levels rank 0 checks \
             while measuring; none added"
        )];
    }
    // Judged as `cluster` judges the run's pairs: every screening size (the largest's round
    // trips show bandwidth, the smallest's the hops of a non-blocking fabric), the floors, slow
    // hosts divided out.
    let doubts = match doubts_of(screened, plan) {
        Ok(d) => d,
        Err(e) => return vec![format!("confidence: none added: {e}")],
    };
    let before = refine.len();
    let mut lines: Vec<String> = again_every_pair(plan, refine, budget).into_iter().collect();
    for d in &doubts {
        let need = d.pairs_needed.saturating_sub(d.pairs);
        // Where every pair is screened, each is screened again until it has the tests that
        // would decide the grouping (its tests counting as far as they vary independently).
        let rounds = d
            .tests_needed
            .saturating_sub(d.tests.round() as usize)
            .max(1);
        let (mut added, mut again) = (0, 0);
        'rounds: for round in 0..rounds {
            for (n, &a) in d.members.iter().enumerate() {
                for &b in &d.members[n + 1..] {
                    let measured = plan.meeting_pairs(a, b);
                    let (ga, gb) = (&plan.groups()[a], &plan.groups()[b]);
                    // After a sweep every pair between the two is screened already.
                    let mut more: Vec<Pair> = if plan.options().sweep || round > 0 {
                        Vec::new()
                    } else {
                        diagonal_pairs(ga, gb)
                            .filter(|p| !measured.contains(p) && !refine.contains(p))
                            .take(need)
                            .collect()
                    };
                    // Every pair between the two screened already: each screened again, once
                    // a round, so that its value is the median of its tests.
                    let fresh = !more.is_empty();
                    if !fresh {
                        more = measured
                            .into_iter()
                            .filter(|p| refine.iter().filter(|&q| q == p).count() <= round)
                            .collect();
                    }
                    for p in more {
                        if refine.len() - before == budget {
                            break 'rounds;
                        }
                        refine.push(p);
                        if fresh {
                            added += 1;
                        } else {
                            again += 1;
                        }
                    }
                }
            }
            if added > 0 {
                break;
            }
        }
        let spent = if refine.len() - before == budget {
            ", the budget spent (--confidence)"
        } else {
            ""
        };
        let what = match (added, again) {
            (0, 0) => "every pair between two of them was screened and is screened again \
                       above"
                .to_string(),
            (_, 0) => format!(
                "{added} more pairs screened between them, up to {} between two",
                d.pairs_needed
            ),
            (0, _) => format!(
                "every pair between two of them was screened: {again} screened again, up to {} \
                 tests a pair",
                d.tests_needed
            ),
            _ => format!(
                "{added} more pairs screened between them, up to {} between two, and {again} \
                 screened again where every pair was",
                d.pairs_needed
            ),
        };
        let how = if d.z >= lgate_cluster::host_levels::Z_DECIDE {
            format!(
                "fall into {}, but not firmly (Mann-Whitney z = {:.1}: 4 decides, {} confirms",
                d.groups,
                d.z,
                lgate_cluster::host_levels::Z_FIRM
            )
        } else {
            format!(
                "nearly fall into {} (Mann-Whitney z = {:.1} of the 4 that decides",
                d.groups, d.z
            )
        };
        lines.push(format!(
            "confidence: {} groups {how}, {} pairs between two): {what}{spent}",
            d.hosts, d.pairs
        ));
    }
    lines
}

/// Where the groups hold one rank each (one rank a host), the pairs between them are all the
/// evidence there is for the levels above, and one test a pair cannot decide a level of a few
/// groups (leaves of two hosts: one pair inside each): every pair between groups is screened
/// again, round by round, up to [`MOST_TESTS`] tests a pair within `budget` tests, so that
/// `cluster` counts their repeated tests. `None` when the groups hold more ranks, or when
/// their pairs are more than `budget`.
///
/// [`MOST_TESTS`]: lgate_cluster::host_levels::MOST_TESTS
fn again_every_pair(plan: &StagedPlan, refine: &mut Vec<Pair>, budget: usize) -> Option<String> {
    let groups = plan.groups();
    let g = groups.len();
    let ranks: usize = groups.iter().map(Vec::len).sum();
    if 2 * ranks >= 3 * g || g * (g - 1) / 2 > budget {
        return None;
    }
    let pairs: Vec<Pair> = (0..g)
        .flat_map(|a| (a + 1..g).flat_map(move |b| plan.meeting_pairs(a, b)))
        .collect();
    let before = refine.len();
    'rounds: for _ in 1..lgate_cluster::host_levels::MOST_TESTS {
        for &p in &pairs {
            if refine.len() - before == budget {
                break 'rounds;
            }
            refine.push(p);
        }
    }
    Some(format!(
        "confidence: one rank a host: the {} pairs between hosts screened again ({} tests, up \
         to {} a pair), so that their repeated tests decide the levels above the hosts",
        pairs.len(),
        refine.len() - before,
        lgate_cluster::host_levels::MOST_TESTS
    ))
}

/// The most pairs inside one group that [`doubts_of`] summarises the group by.
const INSIDE_PAIRS: usize = 64;

/// The groupings above the groups that the screened pairs nearly decide, as `cluster` judges
/// them ([`lgate_cluster::screened_hosts`]): the pairs inside and between groups at the smallest
/// and the largest screening size (one size when the tests had one), in microseconds.
fn doubts_of(
    screened: &ScreenedValues,
    plan: &StagedPlan,
) -> Result<Vec<lgate_cluster::host_levels::Doubt>, lgate_cluster::ByHostsError> {
    let all = || screened.hosts.iter().chain(&screened.between);
    let two = all().any(|s| s.smallest.is_finite());
    let sizes = 1 + usize::from(two);
    let mut pairs = lgate_cluster::screened_hosts::ScreenedRankPairs::with_sizes(sizes);
    let us = |x: f32| f64::from(x) * 1e6;
    // Inside each group, enough pairs for its median and quartiles (the slow hosts): not
    // the 8 million of 1000 hosts of 128 ranks.
    let group_of = plan.group_of();
    let mut inside = vec![0usize; plan.groups().len()];
    let kept = |s: &&Screened| {
        let a = group_of.get(s.i as usize).copied().unwrap_or(usize::MAX);
        if a != group_of.get(s.j as usize).copied().unwrap_or(usize::MAX) {
            return true;
        }
        let Some(n) = inside.get_mut(a) else {
            return false;
        };
        *n += 1;
        *n <= INSIDE_PAIRS
    };
    for s in all().filter(|s| s.value.is_finite()).filter(kept) {
        let (values, floors) = if two {
            (
                [us(s.smallest), us(s.value)],
                [us(s.smallest_floor), us(s.floor)],
            )
        } else {
            ([us(s.value), f64::NAN], [us(s.floor), f64::NAN])
        };
        pairs.push(s.i, s.j, &values[..sizes], &floors[..sizes]);
    }
    let ranks = plan.group_of().len();
    // Groups of hosts: none slow inside is a level (their ranks share no core).
    // Groups of hosts: none slow inside is a level (their ranks share no core). A level the
    // pairs decide only barely is confirmed too: `cluster` would keep it undecided.
    let p = lgate_cluster::AutoParams {
        slow_inside_level: false,
        pairs_decide: lgate_cluster::host_levels::Z_FIRM,
        ..lgate_cluster::AutoParams::default()
    };
    lgate_cluster::screened_hosts::doubts_of_screened(plan.groups(), ranks, pairs, &p)
}

/// The pairs of ranks of groups `ga` and `gb` along diagonals (each rank of `ga` with a
/// different rank of `gb` in turn), so that the first pairs spread over both groups' ranks.
pub(super) fn diagonal_pairs<'a>(
    ga: &'a [Rank],
    gb: &'a [Rank],
) -> impl Iterator<Item = Pair> + 'a {
    (0..gb.len())
        .flat_map(move |d| (0..ga.len()).map(move |x| Pair::new(ga[x], gb[(x + d + 1) % gb.len()])))
}
