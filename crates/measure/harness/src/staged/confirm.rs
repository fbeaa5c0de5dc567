//! Stage 3's second budget: the pairs that would decide the levels above the groups that the
//! screening nearly decides, judged as `cluster` judges them (by the [`LevelJudge`] the run was
//! given: `lgate_cluster::ScreenedJudge` in `measure`).

use lgate_knobs::Knob;
use lgate_topology::judge::{Doubt, JudgeError, LevelJudge, ScreenedRankPairs};

use super::*;

/// Adds to `refine` the pairs that would decide the levels above the groups that the samples
/// nearly decide, as `judge` finds them on the screening values: for each grouping in doubt,
/// between every two of its groups, as many new pairs as the test asks for, within
/// `options.confidence` tests; returns what it found and added, for people. Nothing without a
/// judge.
pub fn confirmation(
    screened: &ScreenedValues,
    plan: &StagedPlan,
    judge: Option<&dyn LevelJudge>,
    refine: &mut Vec<Pair>,
) -> Vec<String> {
    let budget = plan.options().confidence;
    let g = plan.groups().len();
    let Some(judge) = judge.filter(|_| budget > 0 && g >= 4) else {
        return Vec::new();
    };
    if g > judge.max_groups() {
        return vec![format!(
            "confidence: {g} groups, above the {} whose levels rank 0 checks while measuring; \
             none added",
            judge.max_groups()
        )];
    }
    // Judged as `cluster` judges the run's pairs: every screening size (the largest's round
    // trips show bandwidth, the smallest's the hops of a non-blocking fabric), the floors, slow
    // hosts divided out.
    let doubts = match doubts_of(screened, plan, judge) {
        Ok(d) => d,
        Err(e) => return vec![format!("confidence: none added: {e}")],
    };
    let before = refine.len();
    let mut lines: Vec<String> = again_every_pair(plan, refine, budget, judge.most_tests())
        .into_iter()
        .collect();
    for d in &doubts {
        let (added, again) = add_pairs_for(d, plan, refine, budget - (refine.len() - before));
        let spent = refine.len() - before == budget;
        lines.push(doubt_line(d, judge, (added, again), spent));
    }
    lines
}

/// Adds to `refine`, within `budget` tests, the pairs that would decide the grouping `d`:
/// between every two of its groups as many new pairs as it needs; where every pair between
/// them is screened already, or the new pairs are fewer than it needs, each again once a round
/// until it has the tests it needs (its tests counting as far as they vary independently);
/// returns the pairs added and screened again.
fn add_pairs_for(
    d: &Doubt,
    plan: &StagedPlan,
    refine: &mut Vec<Pair>,
    budget: usize,
) -> (usize, usize) {
    let before = refine.len();
    let need = d.pairs_needed.saturating_sub(d.pairs);
    let rounds = d
        .tests_needed
        .saturating_sub(d.tests.round() as usize)
        .max(1);
    let (mut added, mut again, mut short) = (0, 0, false);
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
                short |= round == 0 && more.len() < need;
                // Every pair between the two screened already (or added by a round before):
                // each screened again, once a round, so that its value is the median of its
                // tests and its floor the least of them.
                let fresh = !more.is_empty();
                if !fresh {
                    let mut known = measured;
                    // The pairs a round before added (none unless it did).
                    let ours = |p: &&Pair| {
                        (ga.contains(&p.i) && gb.contains(&p.j))
                            || (gb.contains(&p.i) && ga.contains(&p.j))
                    };
                    for &p in refine[before..]
                        .iter()
                        .take_while(|_| added > 0)
                        .filter(ours)
                    {
                        if !known.contains(&p) {
                            known.push(p);
                        }
                    }
                    more = known
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
        // New pairs enough to decide it: no need of their tests again.
        if added > 0 && !short {
            break;
        }
    }
    (added, again)
}

/// What was added for the grouping `d` in doubt, for people: `added` pairs new and `again`
/// screened again, whether that `spent` the budget.
fn doubt_line(
    d: &Doubt,
    judge: &dyn LevelJudge,
    (added, again): (usize, usize),
    spent: bool,
) -> String {
    let spent = if spent {
        format!(", the budget spent ({})", Knob::Confidence)
    } else {
        String::new()
    };
    let what = match (added, again) {
        (0, 0) => {
            "every pair between two of them was screened and is screened again above".to_string()
        }
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
            "{added} more pairs screened between them and {again} screened again (up to {} \
             pairs between two, {} tests a pair)",
            d.pairs_needed, d.tests_needed
        ),
    };
    let how = if d.z >= judge.z_decide() {
        format!(
            "fall into {}, but not firmly (Mann-Whitney z = {:.1}: {} decides, {} confirms",
            d.groups,
            d.z,
            judge.z_decide(),
            judge.z_firm()
        )
    } else {
        format!(
            "nearly fall into {} (Mann-Whitney z = {:.1} of the {} that decides",
            d.groups,
            d.z,
            judge.z_decide()
        )
    };
    format!(
        "confidence: {} groups {how}, {} pairs between two): {what}{spent}",
        d.hosts, d.pairs
    )
}

/// Where the groups hold one rank each (one rank a host), the pairs between them are all the
/// evidence there is for the levels above, and one test a pair cannot decide a level of a few
/// groups (leaves of two hosts: one pair inside each): every pair between groups is screened
/// again, round by round, up to `most` tests a pair within `budget` tests, so that `cluster`
/// counts their repeated tests. `None` when the groups hold more ranks, or when their pairs
/// are more than `budget`.
fn again_every_pair(
    plan: &StagedPlan,
    refine: &mut Vec<Pair>,
    budget: usize,
    most: usize,
) -> Option<String> {
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
    'rounds: for _ in 1..most {
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
        most
    ))
}

/// The most pairs inside one group that [`doubts_of`] summarises the group by.
const INSIDE_PAIRS: usize = 64;

/// The groupings above the groups that the screened pairs nearly decide, as `judge` finds them:
/// the pairs inside and between groups at the smallest and the largest screening size (one
/// size when the tests had one), in microseconds.
fn doubts_of(
    screened: &ScreenedValues,
    plan: &StagedPlan,
    judge: &dyn LevelJudge,
) -> Result<Vec<Doubt>, JudgeError> {
    let all = || screened.hosts.iter().chain(&screened.between);
    let two = all().any(|s| s.smallest.is_finite());
    let sizes = 1 + usize::from(two);
    let mut pairs = ScreenedRankPairs::with_sizes(sizes);
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
    judge.doubts(plan.groups(), plan.group_of().len(), pairs)
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
