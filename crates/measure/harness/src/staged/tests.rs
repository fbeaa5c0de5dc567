//! The staged plan's tests.

use super::*;
use lgate_topology::lgate;

fn tree(text: &str) -> TopologyNode {
    lgate::parse(text, None).unwrap().tree().clone()
}

pub(crate) fn hosts(h: usize, per: usize) -> TopologyNode {
    let groups: Vec<String> = (0..h)
        .map(|k| format!("group {{ {}-{} }}", k * per, k * per + per - 1))
        .collect();
    tree(&format!("cluster {{ {} }}", groups.join(" ")))
}

#[test]
fn every_group_meets_every_other_once() {
    for h in 1..12 {
        let plan = StagedPlan::new(&hosts(h, 2), 2 * h, 1, &StagedOptions::default()).unwrap();
        let mut met = HashSet::new();
        for round in 0..plan.rounds() {
            let mut busy = HashSet::new();
            for (a, b) in plan.meetings(round) {
                assert!(busy.insert(a) && busy.insert(b), "one meeting per round");
                assert!(met.insert((a, b)), "{a}-{b} met twice");
                assert_eq!(plan.partner(b, round), Some(a));
            }
        }
        assert_eq!(met.len(), h * (h - 1) / 2, "h = {h}");
        assert_eq!(plan.rounds(), if h < 2 { 0 } else { h + h % 2 - 1 });
    }
}

#[test]
fn meetings_sample_k_distinct_pairs_across_the_groups() {
    let plan = StagedPlan::new(&hosts(2, 8), 16, 1, &StagedOptions::default()).unwrap();
    let pairs = plan.meeting_pairs(0, 1);
    assert_eq!(pairs.len(), 4);
    let senders: HashSet<Rank> = pairs.iter().map(|p| p.i).collect();
    let receivers: HashSet<Rank> = pairs.iter().map(|p| p.j).collect();
    assert_eq!(senders.len(), 4, "{pairs:?}");
    assert_eq!(receivers.len(), 4, "{pairs:?}");
    assert!(
        senders.contains(&0) && senders.contains(&6),
        "spread: {pairs:?}"
    );
    // Small groups: every pair.
    let small = StagedPlan::new(&hosts(3, 2), 6, 1, &StagedOptions::default()).unwrap();
    assert_eq!(small.meeting_pairs(0, 2).len(), 4);
    let odd = StagedPlan::new(
        &tree("cluster { group { 0-2 } group { 3-5 } }"),
        6,
        1,
        &StagedOptions::default(),
    )
    .unwrap();
    let p = odd.meeting_pairs(0, 1);
    assert_eq!(p.iter().collect::<HashSet<_>>().len(), 4, "{p:?}");
}

/// Runs every rank's program in lockstep and returns the tests each sender runs.
fn tests_of(plan: &StagedPlan, sweeps: u32, done: &HashSet<StagedTest>) -> Vec<StagedTest> {
    let mut out = Vec::new();
    for rank in 0..plan.size() {
        for step in plan.screening_program(rank, sweeps, done) {
            if let StagedStep::Test(t) = step {
                assert!(t.test.pair.contains(rank));
                if t.test.pair.i == rank {
                    out.push(t);
                }
            }
        }
    }
    out.sort();
    out
}

#[test]
fn programs_run_every_screening_test_once() {
    for concurrency in [None, Some(1), Some(2)] {
        let options = StagedOptions {
            concurrency,
            ..StagedOptions::default()
        };
        let t = tree("cluster { group { 0-4 } group { 5-9 } group { 10,11 } group { 12 } }");
        let plan = StagedPlan::new(&t, 13, 9, &options).unwrap();
        let tests = tests_of(&plan, 2, &HashSet::new());
        let mut expected: Vec<StagedTest> = plan.screening_tests(2).collect();
        expected.sort();
        assert_eq!(tests, expected, "{concurrency:?}");
        let (inside, between) = plan.screening_tests_per_sweep();
        assert_eq!(inside, 10 + 10 + 1);
        assert_eq!(
            between,
            5 * 4 + 2,
            "every meeting has K = 4 pairs but 2 x 1"
        );
        assert_eq!(tests.len(), 2 * (inside + between));
        // Done tests are skipped.
        let done: HashSet<StagedTest> = expected[..7].iter().copied().collect();
        assert_eq!(tests_of(&plan, 2, &done), expected[7..].to_vec());
    }
}

#[test]
fn screening_and_follow_up_run_one_test_at_a_time_per_unit() {
    use crate::schedule::replay::{overlap, replay, Event};
    let t = tree("cluster { group { 0-4 } group { 5-9 } group { 10,11 } group { 12 } }");
    let group = |r: Rank| match r {
        0..=4 => 0,
        5..=9 => 1,
        10 | 11 => 2,
        _ => 3,
    };
    let as_event = |st: StagedStep| match st {
        StagedStep::Barrier { members, id } => Event::Barrier(members.to_vec(), id),
        StagedStep::Handoff { from, to, id } => Event::Handoff(from, to, id),
        StagedStep::Test(x) => Event::Test(x.test.sweep, x.test.pair),
    };
    let follow_up = FollowUp {
        refine: vec![Pair::new(0, 5), Pair::new(1, 6)],
        doubts: Vec::new(),
        alone: vec![Pair::new(2, 3), Pair::new(0, 12)],
        sample: vec![Pair::new(5, 10), Pair::new(3, 4)],
    };
    let members = follow_up.members();
    let settings = [None, Some(1), Some(2), Some(3)]
        .into_iter()
        .flat_map(|c| [(c, false), (c, true)]);
    for (concurrency, sweep) in settings {
        let options = StagedOptions {
            concurrency,
            sweep,
            ..StagedOptions::default()
        };
        let plan = StagedPlan::new(&t, 13, 9, &options).unwrap();
        let done = HashSet::new();
        // Between the two, rank 0 collects every result and broadcasts the follow-up: in
        // time, a barrier of every rank.
        let broadcast = Event::Barrier((0..13).collect(), u64::MAX - 7);
        let programs: Vec<Vec<Event>> = (0..13)
            .map(|r| {
                let screening = plan.screening_program(r, 1, &done).map(as_event);
                let follow = plan.follow_up_program(r, 1, &follow_up, &members, &done);
                screening
                    .chain(std::iter::once(broadcast.clone()))
                    .chain(follow.map(as_event))
                    .collect()
            })
            .collect();
        let ran = replay(&programs, |p| 1.0 + (p.i + p.j) as f64 / 100.0);
        let (inside, between) = plan.screening_tests_per_sweep();
        assert_eq!(ran.len(), inside + between + 6, "{concurrency:?} {sweep}");
        let (screening, follow) = ran.split_at(inside + between);
        for a in screening {
            for b in screening {
                let (ga, gb) = (group(a.1.i), group(b.1.i));
                let (ha, hb) = (group(a.1.j), group(b.1.j));
                // Within a group, and within a meeting of two groups, one at a time (the
                // sweep runs a round's pairs at once, and a rank is in one pair a round).
                let meeting = ga != ha && !sweep;
                if a != b && (ga, ha) == (gb, hb) && (ga == ha || meeting) {
                    assert!(!overlap(a, b), "{concurrency:?} {sweep}: {a:?} and {b:?}");
                }
                let shared = [a.1.i, a.1.j].iter().any(|&r| b.1.contains(r));
                if a != b && shared {
                    assert!(!overlap(a, b), "{concurrency:?} {sweep}: {a:?} and {b:?}");
                }
                // Stage 2 after all of stage 1.
                if ga != ha && gb == hb {
                    assert!(
                        a.2 >= b.3,
                        "{concurrency:?} {sweep}: {a:?} before {b:?} ended"
                    );
                }
            }
        }
        // With bounded concurrency, never more tests at once than it allows.
        if let Some(c) = concurrency {
            for a in screening {
                // Running when `a` starts (`a` too).
                let at_once = screening.iter().filter(|b| b.2 <= a.2 && a.2 < b.3).count();
                assert!(
                    at_once <= c,
                    "{concurrency:?} {sweep}: {at_once} at once at {a:?}"
                );
            }
        }
        // The follow-up: in its order, one at a time, after the screening.
        let order: Vec<Pair> = follow.iter().map(|r| r.1).collect();
        let chosen: Vec<Pair> = follow_up.tests().map(|(_, p)| p).collect();
        assert_eq!(order, chosen);
        assert!(follow.windows(2).all(|w| w[0].3 <= w[1].2));
        let screened_by = screening.iter().map(|r| r.3).fold(0.0, f64::max);
        assert!(follow[0].2 >= screened_by);
    }
}

#[test]
fn members_agree_on_the_order_of_shared_barriers() {
    let t = tree("cluster { group { 0-3 } group { 4-7 } group { 8-11 } }");
    let settings = [None, Some(1), Some(2)]
        .into_iter()
        .flat_map(|c| [(c, false), (c, true)]);
    for (concurrency, sweep) in settings {
        let options = StagedOptions {
            concurrency,
            sweep,
            pairs_between: 2,
            ..StagedOptions::default()
        };
        let plan = StagedPlan::new(&t, 12, 3, &options).unwrap();
        let done = HashSet::new();
        let barriers: Vec<Vec<(Vec<Rank>, u64)>> = (0..12)
            .map(|r| {
                plan.screening_program(r, 1, &done)
                    .filter_map(|s| match s {
                        StagedStep::Barrier { members, id } => Some((members.to_vec(), id)),
                        StagedStep::Handoff { from, to, id } => {
                            let mut m = vec![from.i, from.j, to.i, to.j];
                            m.sort_unstable();
                            m.dedup();
                            Some((m, id))
                        }
                        StagedStep::Test(_) => None,
                    })
                    .collect()
            })
            .collect();
        for a in 0..12 {
            for b in 0..12 {
                let shared = |x: usize, y: usize| -> Vec<u64> {
                    barriers[x]
                        .iter()
                        .filter(|(m, _)| m.contains(&y))
                        .map(|(_, id)| *id)
                        .collect()
                };
                assert_eq!(shared(a, b), shared(b, a), "{a} and {b}");
            }
            // Every barrier a rank enters has it as a member.
            assert!(barriers[a].iter().all(|(m, _)| m.contains(&a)));
        }
    }
}

/// The follow-up rank 0 chooses for `plan` from `screened`, judged as `measure` judges it.
fn judged_follow_up(screened: &[ScreenedPair], plan: &StagedPlan) -> FollowUp {
    let mut values = screened.iter().copied().collect();
    choose_follow_up(&mut values, plan, Some(&lgate_cluster::ScreenedJudge))
}

/// The staged plan's options with 2 pairs sampled between two groups and `confidence` tests.
fn two_pairs_between(confidence: usize) -> StagedOptions {
    StagedOptions {
        pairs_between: 2,
        confidence,
        ..StagedOptions::default()
    }
}

/// The screening of `plan`'s pairs between its six groups (hosts) in three leaves (groups 2k
/// and 2k + 1): 100 us inside a leaf, 108 across, off by up to 1.5 %.
fn leaves_eight_percent_apart(plan: &StagedPlan) -> Vec<ScreenedPair> {
    let mut screened = Vec::new();
    let mut k = 0u64;
    for a in 0..6 {
        for b in a + 1..6 {
            for p in plan.meeting_pairs(a, b) {
                k += 1;
                let base = if a / 2 == b / 2 { 100e-6 } else { 108e-6 };
                let off = 1.0 + 0.03 * ((k * 7919 % 13) as f64 / 12.0 - 0.5);
                screened.push(ScreenedPair {
                    stage: Stage::Between,
                    pair: p,
                    value: base * off,
                    smallest: f64::NAN,
                    floor: f64::NAN,
                    smallest_floor: f64::NAN,
                });
            }
        }
    }
    screened
}

#[test]
fn a_level_the_samples_nearly_decide_gets_the_pairs_that_would_decide_it() {
    // 6 hosts of 4 ranks in 3 leaves (hosts 2k and 2k + 1), 2 pairs sampled between two
    // hosts: 100 us inside a leaf, 108 across, off by up to 1.5 %. The leaves stand apart
    // in every pair, but a gap of 8 % is no level on the medians (auto asks 10 % of the
    // median distance at least), and 2 pairs a host are too few to decide it (z about 3).
    let t = tree(
        "cluster { group { 0-3 } group { 4-7 } group { 8-11 } group { 12-15 } \
         group { 16-19 } group { 20-23 } }",
    );
    let options = two_pairs_between;
    let plan = StagedPlan::new(&t, 24, 1, &options(512)).unwrap();
    let screened = leaves_eight_percent_apart(&plan);
    let f = judged_follow_up(&screened, &plan);
    assert_eq!(f.doubts.len(), 1, "{:?}", f.doubts);
    assert!(
        f.doubts[0].contains("6 groups nearly fall into 3"),
        "{:?}",
        f.doubts
    );
    // Pairs between every two hosts, none screened before.
    let group_of = plan.group_of();
    let mut hosts_met = HashSet::new();
    for p in &f.refine {
        let (a, b) = (group_of[p.i], group_of[p.j]);
        assert_ne!(a, b, "{p:?}");
        assert!(!plan.meeting_pairs(a.min(b), a.max(b)).contains(p), "{p:?}");
        hosts_met.insert((a.min(b), a.max(b)));
    }
    assert_eq!(hosts_met.len(), 15, "{:?}", f.refine);
    // Within the budget, and none without one.
    let small = StagedPlan::new(&t, 24, 1, &options(5)).unwrap();
    let f = judged_follow_up(&screened, &small);
    assert_eq!(f.refine.len(), 5);
    assert!(f.doubts[0].contains("the budget spent"), "{:?}", f.doubts);
    let none = StagedPlan::new(&t, 24, 1, &options(0)).unwrap();
    let f = judged_follow_up(&screened, &none);
    assert!(f.refine.is_empty() && f.doubts.is_empty());
}

#[test]
fn a_level_that_every_pair_cannot_decide_gets_them_tested_again() {
    // 6 hosts of 2 ranks in 3 leaves, 2 of the 4 pairs between two hosts sampled, leaves 8 %
    // apart (as above): the level wants more pairs than two hosts have. The other two are
    // added, then every pair between two hosts is screened again, round by round, within the
    // budget (before, the two added were all: 30 of 512 tests spent, the level left in doubt).
    let t = tree(
        "cluster { group { 0-1 } group { 2-3 } group { 4-5 } group { 6-7 } \
         group { 8-9 } group { 10-11 } }",
    );
    let plan = StagedPlan::new(&t, 12, 1, &two_pairs_between(512)).unwrap();
    let screened = leaves_eight_percent_apart(&plan);
    let f = judged_follow_up(&screened, &plan);
    assert_eq!(f.doubts.len(), 1, "{:?}", f.doubts);
    assert!(f.doubts[0].contains("screened again"), "{:?}", f.doubts);
    let mut tests: std::collections::HashMap<Pair, usize> = Default::default();
    for p in &f.refine {
        *tests.entry(*p).or_default() += 1;
    }
    // Every one of the 60 pairs between hosts: the 30 sampled again, the 30 others added.
    assert_eq!(tests.len(), 60, "{:?}", f.refine);
    assert!(tests.values().all(|&n| n >= 2), "{tests:?}");
    assert!(
        f.refine.len() > 60 && f.refine.len() <= 512,
        "{}",
        f.refine.len()
    );
}

#[test]
fn a_level_only_the_smallest_size_nearly_decides_gets_its_pairs_too() {
    // A non-blocking fabric: at the largest size every pair of hosts looks alike, at the
    // smallest the hosts of one leaf are 8 % nearer (hops), as in the test above.
    let t = tree(
        "cluster { group { 0-3 } group { 4-7 } group { 8-11 } group { 12-15 } \
         group { 16-19 } group { 20-23 } }",
    );
    let plan = StagedPlan::new(&t, 24, 1, &two_pairs_between(512)).unwrap();
    let mut screened = Vec::new();
    let mut k = 0u64;
    for a in 0..6 {
        for b in a + 1..6 {
            for p in plan.meeting_pairs(a, b) {
                k += 1;
                let base = if a / 2 == b / 2 { 10e-6 } else { 10.8e-6 };
                let off = 1.0 + 0.03 * ((k * 7919 % 13) as f64 / 12.0 - 0.5);
                let flat = 1.0 + 0.03 * ((k * 104_729 % 17) as f64 / 16.0 - 0.5);
                screened.push(ScreenedPair {
                    stage: Stage::Between,
                    pair: p,
                    value: 300e-6 * flat,
                    smallest: base * off,
                    floor: f64::NAN,
                    smallest_floor: f64::NAN,
                });
            }
        }
    }
    let f = judged_follow_up(&screened, &plan);
    assert_eq!(f.doubts.len(), 1, "{:?}", f.doubts);
    assert!(
        f.doubts[0].contains("6 groups nearly fall into 3 ("),
        "{:?}",
        f.doubts
    );
    assert!(!f.refine.is_empty());
    // Without the smallest size's values nothing is in doubt.
    for s in &mut screened {
        s.smallest = f64::NAN;
    }
    let f = judged_follow_up(&screened, &plan);
    assert!(f.doubts.is_empty(), "{:?}", f.doubts);
}

#[test]
fn follow_up_spreads_over_distances_and_takes_the_slowest() {
    let mut screened = Vec::new();
    for k in 0..20usize {
        screened.push(ScreenedPair {
            stage: Stage::Hosts,
            pair: Pair::new(k, k + 1),
            value: 1.0 + (k % 2) as f64,
            smallest: f64::NAN,
            floor: f64::NAN,
            smallest_floor: f64::NAN,
        });
        screened.push(ScreenedPair {
            stage: Stage::Between,
            pair: Pair::new(k, k + 30),
            value: 10.0 + k as f64,
            smallest: f64::NAN,
            floor: f64::NAN,
            smallest_floor: f64::NAN,
        });
    }
    let two = tree("cluster { group { 0-29 } group { 30-59 } }");
    let plan = StagedPlan::new(&two, 60, 1, &StagedOptions::default()).unwrap();
    let f = judged_follow_up(&screened, &plan);
    assert!(
        f.refine.is_empty(),
        "one pair of groups: nothing to compare it with"
    );
    assert_eq!(f.sample.len(), 3 + 3 + 1);
    assert!(f.sample.contains(&Pair::new(19, 49)), "the slowest");
    let inside: Vec<f64> = f
        .sample
        .iter()
        .filter(|p| p.j - p.i == 1)
        .map(|p| screened.iter().find(|s| s.pair == *p).unwrap().value)
        .collect();
    assert!(
        inside.contains(&1.0) && inside.contains(&2.0),
        "both levels"
    );
    assert_eq!(f.alone.len(), 8);
    let mut shuffled = screened.clone();
    shuffled.reverse();
    assert_eq!(
        choose_follow_up(
            &mut shuffled.into_iter().collect(),
            &plan,
            Some(&lgate_cluster::ScreenedJudge)
        ),
        f
    );
    let members = f.members();
    assert!(members.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn selection_finds_what_sorting_finds() {
    // Values with many ties, so the pair decides between equals.
    let mut v: Vec<Screened> = (0..1000u32)
        .map(|k| Screened {
            value: ((k * 7919) % 13) as f32,
            smallest: 0.0,
            floor: 0.0,
            smallest_floor: 0.0,
            i: (k * 31) % 97,
            j: 100 + k,
        })
        .collect();
    let mut sorted = v.clone();
    sorted.sort_by(Screened::order);
    let positions = [0, 1, 1, 250, 499, 500, 998, 999];
    let mut unique = positions.to_vec();
    unique.dedup();
    let mut found = Vec::new();
    select_at(&mut v, &unique, 0, &mut found);
    assert_eq!(found.len(), unique.len());
    for (at, s) in found {
        assert_eq!(s, sorted[at], "position {at}");
    }
}

#[test]
fn groups_whose_samples_disagree_get_more_pairs() {
    let plan = StagedPlan::new(&hosts(3, 4), 12, 1, &StagedOptions::default()).unwrap();
    let mut screened = Vec::new();
    for (a, b, values) in [
        (0, 1, [1.0, 1.0, 1.02, 1.0]),
        (0, 2, [1.0, 1.05, 1.0, 1.0]),
        // One of four samples three times the others: a slow link, or another rail.
        (1, 2, [1.0, 1.0, 3.0, 1.0]),
    ] {
        for (pair, value) in plan.meeting_pairs(a, b).into_iter().zip(values) {
            screened.push(ScreenedPair {
                stage: Stage::Between,
                pair,
                value,
                smallest: f64::NAN,
                floor: f64::NAN,
                smallest_floor: f64::NAN,
            });
        }
    }
    let screened: ScreenedValues = screened.into_iter().collect();
    let refine = refinement(&screened, &plan);
    assert_eq!(refine.len(), 4, "as many as it had samples: {refine:?}");
    let measured = plan.meeting_pairs(1, 2);
    for p in &refine {
        assert_eq!((p.i / 4, p.j / 4), (1, 2), "{p:?}");
        assert!(!measured.contains(p), "{p:?} was screened already");
    }
    // The budget bounds it; none, and nothing is added.
    let with_budget = |refine| {
        let options = StagedOptions {
            refine,
            ..StagedOptions::default()
        };
        StagedPlan::new(&hosts(3, 4), 12, 1, &options).unwrap()
    };
    assert_eq!(refinement(&screened, &with_budget(2)).len(), 2);
    assert!(refinement(&screened, &with_budget(0)).is_empty());
}

#[test]
fn one_test_at_a_time_between_groups_wakes_a_rank_only_next_to_its_own_tests() {
    // 6 hosts of 3 ranks, 2 pairs sampled between two hosts, one test at a time.
    let options = StagedOptions {
        concurrency: Some(1),
        pairs_between: 2,
        ..StagedOptions::default()
    };
    let plan = StagedPlan::new(&hosts(6, 3), 18, 5, &options).unwrap();
    let done = HashSet::new();
    let closing = barrier_id(0, 0, 0xff_ffff, 0);
    let mut handoffs = HashSet::new();
    for rank in 0..18 {
        let between: Vec<StagedStep> = plan
            .screening_program(rank, 1, &done)
            .skip_while(|s| !matches!(s, StagedStep::Barrier { id, .. } if *id == closing))
            .skip(1)
            .collect();
        let mut own = 0;
        for (k, step) in between.iter().enumerate() {
            match step {
                StagedStep::Test(t) => {
                    assert_eq!(t.stage, Stage::Between);
                    own += 1;
                }
                // Every handoff the rank takes part in leads into or out of its own test.
                StagedStep::Handoff { from, to, id } => {
                    assert!(from.contains(rank) || to.contains(rank), "{rank}: {step:?}");
                    let next_is_own = matches!(between.get(k + 1), Some(StagedStep::Test(t)) if t.test.pair == *to);
                    assert_eq!(to.contains(rank), next_is_own, "{rank}: {step:?}");
                    handoffs.insert((*from, *to, *id));
                }
                StagedStep::Barrier { .. } => panic!("{rank}: a barrier between groups: {step:?}"),
            }
        }
        let expected = (0..plan.rounds())
            .flat_map(|round| plan.meetings(round))
            .flat_map(|(a, b)| plan.meeting_pairs(a, b))
            .filter(|p| p.contains(rank))
            .count();
        assert_eq!(own, expected, "rank {rank}");
    }
    // One handoff between each two tests that follow each other, the same on every rank.
    let tests: usize = (0..plan.rounds())
        .flat_map(|round| plan.meetings(round))
        .map(|(a, b)| plan.meeting_pairs(a, b).len())
        .sum();
    assert_eq!(handoffs.len(), tests - 1);
}
