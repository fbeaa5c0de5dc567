//! Stage 2's programs: the meetings of groups, in waves of `--concurrency` with a barrier
//! opening each wave, or one test after another handing the turn on.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use lgate_rundir::Stage;
use lgate_topology::Rank;

use super::{barrier_id, StagedPlan, StagedStep, StagedTest};
use crate::schedule::{turn, Pair, SweepPair, Turn};

impl StagedPlan {
    /// Whether one pair test runs at a time (`--concurrency 1`, as on a machine of a few
    /// cores).
    pub(super) fn one_at_a_time(&self) -> bool {
        self.options.concurrency == Some(1)
    }

    /// Stage 2 for one sweep when one test runs at a time: the meetings' tests, round by
    /// round, one after another, each passing the turn to the next ([`Turn::Handoff`]; the
    /// first follows the barrier of every rank that closes stage 1). A rank takes part in its
    /// own tests and in the handoffs before and after them only: four tokens a test, where
    /// barriers between meetings would wake each of their ranks log2(n) times a meeting.
    pub(super) fn between_one_at_a_time<'a>(
        &'a self,
        rank: Rank,
        sweep: u32,
        done: &'a HashSet<StagedTest>,
    ) -> impl Iterator<Item = StagedStep<'a>> + 'a {
        (0..self.rounds())
            .flat_map(move |round| {
                self.meetings(round)
                    .into_iter()
                    .flat_map(move |(a, b)| self.meeting_pairs(a, b))
            })
            .map(move |pair| StagedTest {
                stage: Stage::Between,
                test: SweepPair { sweep, pair },
            })
            .filter(move |test| !done.contains(test))
            .enumerate()
            .scan(None, |previous: &mut Option<Pair>, (k, test)| {
                Some((k, previous.replace(test.test.pair), test))
            })
            .flat_map(move |(k, previous, test)| {
                let pair = test.test.pair;
                let handoff = previous
                    .filter(|p| p.contains(rank) || pair.contains(rank))
                    .map(|p| {
                        let id = barrier_id(1, sweep, 0xfe_0000 | (k >> 24) as u64, k as u64);
                        StagedStep::of_turn(Turn::Handoff(p, pair), id)
                    });
                handoff
                    .into_iter()
                    .chain(pair.contains(rank).then_some(StagedStep::Test(test)))
            })
    }

    /// Stage 2 for one sweep: the rank's group's meetings round by round, if the rank is one
    /// of its ambassadors (or the group's pairs with the other group are all tested).
    pub(super) fn between_program<'a>(
        &'a self,
        rank: Rank,
        sweep: u32,
        done: &'a HashSet<StagedTest>,
    ) -> impl Iterator<Item = StagedStep<'a>> + 'a {
        let group = self.group_of[rank];
        let wave_barriers = self.between_wave_barriers(rank);
        (0..self.rounds()).flat_map(move |round| {
            let mut steps = Vec::new();
            let meetings = if self.options.concurrency.is_some() {
                self.meetings(round)
            } else {
                Vec::new()
            };
            let waves = self.waves(meetings.len());
            let partner = self.partner(group, round);
            let my_wave = partner.map(|p| {
                let key = (group.min(p), group.max(p));
                self.wave_of(meetings.iter().position(|&m| m == key).unwrap_or(0))
            });
            for wave in 0..waves {
                let in_wave = my_wave == Some(wave);
                if let Some(members) = wave_barriers.get(&(round, wave)) {
                    steps.push(StagedStep::Barrier {
                        members: Cow::Owned(members.clone()),
                        id: barrier_id(1, sweep, round as u64, 0xff_0000 | wave as u64),
                    });
                }
                let Some(other) = partner.filter(|_| in_wave) else {
                    continue;
                };
                let (a, b) = (group.min(other), group.max(other));
                let pairs = self.meeting_pairs(a, b);
                let mut members: Vec<Rank> = pairs.iter().flat_map(|p| [p.i, p.j]).collect();
                members.sort_unstable();
                members.dedup();
                if members.binary_search(&rank).is_err() {
                    continue;
                }
                let mut previous = None;
                for (k, pair) in pairs.into_iter().enumerate() {
                    let test = StagedTest {
                        stage: Stage::Between,
                        test: SweepPair { sweep, pair },
                    };
                    if done.contains(&test) {
                        continue;
                    }
                    let turn = turn(&members, previous.replace(pair), pair);
                    // A wave's barrier has just held every rank of its meetings, and none of
                    // them has anything else to do before its meeting: the meeting's own
                    // opening barrier would only wake them again.
                    let opened = waves > 1 && matches!(turn, Turn::Barrier(_));
                    if turn.involves(rank) && !opened {
                        let id = barrier_id(1, sweep, round as u64, k as u64);
                        steps.push(StagedStep::of_turn(turn, id).into_owned());
                    }
                    if pair.contains(rank) {
                        steps.push(StagedStep::Test(test));
                    }
                }
            }
            steps
        })
    }

    /// The barriers of the stage between groups that open waves of meetings (when concurrency
    /// is bounded and a round's meetings take more than one wave) that `rank` takes part in,
    /// by round and wave: each of the ranks meeting since the barrier before it and until the
    /// next, so that a wave starts once every test before it is done and no other rank is
    /// woken for it. Two stretches between barriers are held at a time, not the stage.
    fn between_wave_barriers(&self, rank: Rank) -> HashMap<(usize, usize), Vec<Rank>> {
        let mut barriers = HashMap::new();
        if self.options.concurrency.is_none() {
            return barriers;
        }
        // The barrier opening a stretch between barriers (none for the first, which follows a
        // barrier of every rank), and the stretch's ranks; the stretch before it.
        let (mut opened, mut ranks): (Option<(usize, usize)>, Vec<Rank>) = (None, Vec::new());
        let mut before: Vec<Rank> = Vec::new();
        let mut close = |opened: Option<(usize, usize)>, before: &[Rank], ranks: &[Rank]| {
            if let Some(key) = opened {
                let mut members: Vec<Rank> = before.iter().chain(ranks).copied().collect();
                members.sort_unstable();
                members.dedup();
                if members.binary_search(&rank).is_ok() {
                    barriers.insert(key, members);
                }
            }
        };
        for round in 0..self.rounds() {
            let meetings = self.meetings(round);
            let waves = self.waves(meetings.len());
            for wave in 0..waves {
                if waves > 1 {
                    close(opened, &before, &ranks);
                    before = std::mem::take(&mut ranks);
                    opened = Some((round, wave));
                }
                for (k, &(a, b)) in meetings.iter().enumerate() {
                    if self.wave_of(k) == wave {
                        ranks.extend(self.meeting_pairs(a, b).iter().flat_map(|p| [p.i, p.j]));
                    }
                }
            }
        }
        close(opened, &before, &ranks);
        barriers
    }
}
