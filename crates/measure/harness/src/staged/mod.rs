//! The staged plan (`measure --plan staged`): cheap screening tests where the full PLogP test
//! of every pair would take hours, and the full test where it tells something new.
//!
//! 1. **hosts**: every pair inside a group (a host, or a leaf of a topology file), one pair at
//!    a time per group, every group at the same time: `g (g - 1) / 2` tests per group.
//! 2. **between**: a round-robin tournament of the groups (`H - 1` rounds, `H` rounded up to
//!    even); in each round every group meets one other, all meetings of a round at the same
//!    time, and a meeting tests `K` sampled rank pairs one after another, so a host's link
//!    carries one test at a time. `H (H - 1) / 2 * K` tests in `H - 1` rounds.
//! 3. **refine**: pairs of groups whose K samples disagree beyond the spread that is usual
//!    between samples of one pair of groups (several rails, one slow link) get more pairs,
//!    screened one at a time, within a budget; and the groups of a level above the groups that
//!    their samples nearly decide (`auto` by hosts: a Mann-Whitney z between 2 and 4) get the
//!    pairs that would decide it, within a second budget (`--confidence`).
//! 4. **alone**: a few pairs of the stages above tested again, one at a time across the
//!    machine: the bias of measuring side by side, reported rather than assumed away.
//! 5. **sample**: the full pair test for pairs spread over the screening's distances, inside
//!    groups and between them, and the slowest pair between groups (a slow host).
//!
//! Stages 1-2 are fixed by the topology and the seed; stages 3-5 are chosen by rank 0 from the
//! screening results, deterministically, so a resumed run chooses them again alike.
//!
//! Nothing here grows as P^2 except stage 1's pairs inside a group: the program of a rank is
//! its group's pairs and its group's `H - 1` meetings.

use std::borrow::Cow;
use std::collections::HashSet;

mod between;
mod confirm;
mod follow_up;
mod refine;
mod screened;
mod sweep;

pub use confirm::confirmation;
pub use follow_up::{choose_follow_up, FollowUp, FollowUpCounts};
pub use refine::refinement;
pub use screened::{ScreenedPair, ScreenedValues};
pub use sweep::{SWEEP_MAX_RANKS, SWEEP_RETESTS};

use confirm::diagonal_pairs;
use screened::{select_at, Screened};

use lgate_rundir::{PingPongResult, Stage};
use lgate_topology::{Rank, TopologyNode};
use serde::{Deserialize, Serialize};

use crate::schedule::{
    turn, unit_barrier_time, Pair, Schedule, ScheduleError, StagedChoice, Step, SweepPair, Turn,
};

/// The choices of a staged plan (a run's meta.json records them, hence defined there).
pub use lgate_rundir::StagedChoices as StagedOptions;

/// Checks the choices of a staged plan.
pub fn check_options(options: &StagedOptions) -> Result<(), ScheduleError> {
    if options.pairs_between == 0 {
        return Err(ScheduleError::NoneOf(StagedChoice::PairsBetween));
    }
    if options.concurrency == Some(0) {
        return Err(ScheduleError::NoneOf(StagedChoice::Concurrency));
    }
    Ok(())
}

/// A test of a staged plan: which pair, in which sweep and stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StagedTest {
    /// The stage.
    pub stage: Stage,
    /// The sweep and pair.
    pub test: SweepPair,
}

/// One step of a rank's staged program.
pub type StagedStep<'a> = Step<'a, StagedTest>;

/// Barrier ids of the staged plan: distinct per stage, sweep, round and step, and never the
/// ids of the run's opening and closing barriers.
fn barrier_id(stage: u64, sweep: u32, major: u64, minor: u64) -> u64 {
    (stage + 1) << 60 ^ (sweep as u64 & 0xfff) << 48 ^ (major & 0xff_ffff) << 24 ^ minor & 0xff_ffff
}

/// The staged plan of a job.
#[derive(Debug, Clone)]
pub struct StagedPlan {
    /// Stage 1: the LGate schedule of the groups alone (no tests across them).
    inside: Vec<Schedule>,
    /// The groups, each sorted.
    groups: Vec<Vec<Rank>>,
    /// Per rank, its group.
    group_of: Vec<usize>,
    /// Per group, the ranks that meet other groups: up to K spread over its ranks.
    ambassadors: Vec<Vec<Rank>>,
    /// Every rank, for the barriers between stages.
    everyone: Vec<Rank>,
    /// Every ambassador, for the waves of a round when concurrency is bounded.
    all_ambassadors: Vec<Rank>,
    options: StagedOptions,
}

impl StagedPlan {
    /// The staged plan of a job of `size` ranks whose groups are the leaves of `tree`.
    pub fn new(
        tree: &TopologyNode,
        size: usize,
        seed: u64,
        options: &StagedOptions,
    ) -> Result<Self, ScheduleError> {
        check_options(options)?;
        if options.sweep && size > SWEEP_MAX_RANKS {
            return Err(ScheduleError::SweepTooLarge {
                pairs: size * (size - 1) / 2,
                size,
                most: SWEEP_MAX_RANKS,
            });
        }
        // The same checks as the full plan: every rank in one group.
        Schedule::new(tree, size, seed, None)?;
        let groups = tree.sorted_groups();
        let mut group_of = vec![0; size];
        for (k, g) in groups.iter().enumerate() {
            for &r in g {
                group_of[r] = k;
            }
        }
        // Each group's pairs in the order of the LGate schedule of that group alone; the
        // group's number seeds it, so groups of the same shape differ in order.
        let inside = groups
            .iter()
            .enumerate()
            .map(|(k, g)| Schedule::of_group(g, seed ^ (k as u64).wrapping_mul(0x9E37_79B9)))
            .collect();
        let ambassadors: Vec<Vec<Rank>> = groups
            .iter()
            .map(|g| {
                let m = options.pairs_between.min(g.len());
                (0..m).map(|k| g[k * g.len() / m]).collect()
            })
            .collect();
        let mut all_ambassadors: Vec<Rank> = ambassadors.iter().flatten().copied().collect();
        all_ambassadors.sort_unstable();
        Ok(StagedPlan {
            inside,
            groups,
            group_of,
            ambassadors,
            everyone: (0..size).collect(),
            all_ambassadors,
            options: options.clone(),
        })
    }

    /// The number of ranks in the job.
    pub fn size(&self) -> usize {
        self.group_of.len()
    }

    /// The groups, each sorted.
    pub fn groups(&self) -> &[Vec<Rank>] {
        &self.groups
    }

    /// The group of each rank.
    pub fn group_of(&self) -> &[usize] {
        &self.group_of
    }

    /// The choices the plan was made with.
    pub fn options(&self) -> &StagedOptions {
        &self.options
    }

    /// The tournament's rounds: `H - 1` for an even number of groups `H`, `H` for an odd one.
    pub fn rounds(&self) -> usize {
        sweep::circle_rounds(self.groups.len())
    }

    /// The rounds of the stage between groups: the tournament's, or the sweep's `P - 1`.
    pub fn between_rounds(&self) -> usize {
        if self.options.sweep {
            sweep::circle_rounds(self.size())
        } else {
            self.rounds()
        }
    }

    /// The group that `group` meets in `round`, if any (an odd number of groups gives each
    /// group one round off): the circle method, with the last slot fixed.
    pub fn partner(&self, group: usize, round: usize) -> Option<usize> {
        sweep::circle(self.groups.len(), group, round)
    }

    /// The meetings of `round`, each as (a, b) with a < b, ordered by a.
    pub fn meetings(&self, round: usize) -> Vec<(usize, usize)> {
        (0..self.groups.len())
            .filter_map(|a| self.partner(a, round).filter(|&b| a < b).map(|b| (a, b)))
            .collect()
    }

    /// The rank pairs tested when groups `a` and `b` meet: all of them when K covers them,
    /// else K pairs of their ambassadors along diagonals, so distinct ranks come first.
    pub fn meeting_pairs(&self, a: usize, b: usize) -> Vec<Pair> {
        let k = self.options.pairs_between;
        let (ga, gb) = (&self.groups[a], &self.groups[b]);
        if ga.len() * gb.len() <= k || self.options.sweep {
            return ga
                .iter()
                .flat_map(|&x| gb.iter().map(move |&y| Pair::new(x, y)))
                .collect();
        }
        let (sa, sb) = (&self.ambassadors[a], &self.ambassadors[b]);
        let mut out = Vec::with_capacity(k);
        'diagonals: for d in 0..sb.len() {
            for (x, &ra) in sa.iter().enumerate() {
                out.push(Pair::new(ra, sb[(x + d) % sb.len()]));
                if out.len() == k {
                    break 'diagonals;
                }
            }
        }
        out
    }

    /// The most follow-up tests of each kind the plan runs per sweep: the one place their
    /// counts are made (the run's choice, the dry run, the simulated estimate).
    pub fn follow_up_counts(&self) -> FollowUpCounts {
        let o = &self.options;
        let several = self.groups.len() > 1;
        FollowUpCounts {
            alone_inside: o.alone - o.alone / 2,
            alone_between: if several { o.alone / 2 } else { 0 },
            retest_between: if several && o.sweep {
                2 * SWEEP_RETESTS
            } else {
                0
            },
            sample_inside: o.samples,
            // The slowest pair between groups is added to a sample that has any.
            sample_between: if several && o.samples > 0 {
                o.samples + 1
            } else {
                0
            },
        }
    }

    /// Tests per sweep in stages 1 and 2.
    pub fn screening_tests_per_sweep(&self) -> (usize, usize) {
        let inside = self
            .groups
            .iter()
            .map(|g| g.len() * (g.len() - 1) / 2)
            .sum();
        let k = if self.options.sweep {
            usize::MAX
        } else {
            self.options.pairs_between
        };
        let mut between = 0;
        for a in 0..self.groups.len() {
            for b in a + 1..self.groups.len() {
                between += (self.groups[a].len() * self.groups[b].len()).min(k);
            }
        }
        (inside, between)
    }

    /// Every test of stages 1-2 in `sweeps`, in no particular order.
    pub fn screening_tests(&self, sweeps: u32) -> impl Iterator<Item = StagedTest> + '_ {
        (0..sweeps).flat_map(move |sweep| {
            let inside = self.inside.iter().flat_map(move |s| {
                s.pairs().map(move |pair| StagedTest {
                    stage: Stage::Hosts,
                    test: SweepPair { sweep, pair },
                })
            });
            let between = (0..self.groups.len()).flat_map(move |a| {
                (a + 1..self.groups.len()).flat_map(move |b| {
                    self.meeting_pairs(a, b)
                        .into_iter()
                        .map(move |pair| StagedTest {
                            stage: Stage::Between,
                            test: SweepPair { sweep, pair },
                        })
                })
            });
            inside.chain(between)
        })
    }

    /// The waves a stage's units run in: all at once, or `concurrency` at a time.
    fn waves(&self, units: usize) -> usize {
        match self.options.concurrency {
            Some(c) => units.div_ceil(c).max(1),
            None => 1,
        }
    }

    fn wave_of(&self, position: usize) -> usize {
        self.options.concurrency.map_or(0, |c| position / c)
    }

    /// `rank`'s program for stages 1-2 of `sweeps`, skipping the tests in `done`.
    pub fn screening_program<'a>(
        &'a self,
        rank: Rank,
        sweeps: u32,
        done: &'a HashSet<StagedTest>,
    ) -> impl Iterator<Item = StagedStep<'a>> + 'a {
        // Stage 2 holds nothing when there is one group (and no sweep, whose rounds have
        // barriers of their own): stage 1's closing barrier would then sit next to the sweep's.
        let between = self.options.sweep || self.rounds() > 0;
        (0..sweeps).flat_map(move |sweep| {
            self.inside_program(rank, sweep, done)
                .chain(between.then_some(StagedStep::Barrier {
                    members: Cow::Borrowed(&self.everyone[..]),
                    id: barrier_id(0, sweep, 0xff_ffff, 0),
                }))
                .chain(
                    (!self.options.sweep && !self.one_at_a_time())
                        .then(|| self.between_program(rank, sweep, done))
                        .into_iter()
                        .flatten(),
                )
                .chain(
                    (!self.options.sweep && self.one_at_a_time())
                        .then(|| self.between_one_at_a_time(rank, sweep, done))
                        .into_iter()
                        .flatten(),
                )
                .chain(
                    (self.options.sweep)
                        .then(|| self.sweep_program(rank, sweep, done))
                        .into_iter()
                        .flatten(),
                )
                // Between sweeps; after the last, rank 0 collects every result and tells
                // every rank the follow-up, which waits for all of them anyway.
                .chain((sweep + 1 < sweeps).then_some(StagedStep::Barrier {
                    members: Cow::Borrowed(&self.everyone[..]),
                    id: barrier_id(1, sweep, 0xff_ffff, 0),
                }))
        })
    }

    /// Stage 1 for one sweep: the rank's group's pairs; with bounded concurrency the groups
    /// go in waves, every rank passing a barrier of all ranks between waves.
    fn inside_program<'a>(
        &'a self,
        rank: Rank,
        sweep: u32,
        done: &'a HashSet<StagedTest>,
    ) -> impl Iterator<Item = StagedStep<'a>> + 'a {
        let group = self.group_of[rank];
        let waves = self.waves(self.groups.len());
        let mine = self.wave_of(group);
        (0..waves).flat_map(move |wave| {
            // A wave opens once the wave before it is done: a barrier of the ranks of the two
            // (the others are not woken for it). The first follows a barrier of every rank
            // (the start, or the last sweep's end).
            let opening = (wave > 0 && (mine == wave || mine + 1 == wave)).then(|| {
                let mut members: Vec<Rank> = (0..self.groups.len())
                    .filter(|&g| (wave - 1..=wave).contains(&self.wave_of(g)))
                    .flat_map(|g| self.groups[g].iter().copied())
                    .collect();
                members.sort_unstable();
                StagedStep::Barrier {
                    members: Cow::Owned(members),
                    id: barrier_id(0, sweep, 0xff_fffe, wave as u64),
                }
            });
            let skip = move |sp: &SweepPair| {
                done.contains(&StagedTest {
                    stage: Stage::Hosts,
                    test: *sp,
                })
            };
            // A unit's first test waits for a barrier of its group, which has just passed a
            // barrier of every rank (the start, the last sweep's end or the wave's opening):
            // every member leaves it out.
            let steps = (wave == mine)
                .then(|| self.inside[group].sweep_program(rank, sweep, skip))
                .into_iter()
                .flatten()
                .enumerate()
                .filter(|(k, step)| !(*k == 0 && matches!(step, Step::Barrier { .. })))
                .map(move |(_, step)| {
                    step.map(
                        |id| barrier_id(0, sweep, group as u64, id & 0xff_ffff),
                        |test| StagedTest {
                            stage: Stage::Hosts,
                            test,
                        },
                    )
                });
            opening.into_iter().chain(steps)
        })
    }

    /// `rank`'s program for stages 3-5: the chosen tests one at a time, per sweep.
    pub fn follow_up_program<'a>(
        &'a self,
        rank: Rank,
        sweeps: u32,
        follow_up: &'a FollowUp,
        members: &'a [Rank],
        done: &'a HashSet<StagedTest>,
    ) -> impl Iterator<Item = StagedStep<'a>> + 'a {
        let member = members.binary_search(&rank).is_ok();
        (0..sweeps).filter(move |_| member).flat_map(move |sweep| {
            follow_up
                .tests()
                .enumerate()
                .filter(move |(_, (stage, pair))| {
                    !done.contains(&StagedTest {
                        stage: *stage,
                        test: SweepPair { sweep, pair: *pair },
                    })
                })
                .scan(None, move |previous, (k, (stage, pair))| {
                    Some((k, stage, pair, turn(members, previous.replace(pair), pair)))
                })
                .flat_map(move |(k, stage, pair, turn)| {
                    let id = barrier_id(2, sweep, 0, k as u64);
                    // The first sweep's opening barrier of every member: the broadcast of
                    // the follow-up, sent once every screening test is in, holds them all.
                    let opening = sweep == 0 && matches!(turn, Turn::Barrier(_));
                    let barrier =
                        (turn.involves(rank) && !opening).then_some(StagedStep::of_turn(turn, id));
                    let test = pair.contains(rank).then_some(StagedStep::Test(StagedTest {
                        stage,
                        test: SweepPair { sweep, pair },
                    }));
                    barrier.into_iter().chain(test)
                })
        })
    }

    /// The wall time of stages 1-2 in one sweep when a test takes `pair_time` and a barrier
    /// among `n` ranks `barrier_time(n)`: groups side by side, then rounds one after another,
    /// each as long as its slowest meeting.
    pub fn screening_time(
        &self,
        pair_time: impl Fn(Stage, Pair) -> f64,
        barrier_time: impl Fn(usize) -> f64,
    ) -> (f64, f64) {
        let per_group: Vec<f64> = self
            .inside
            .iter()
            .zip(&self.groups)
            .map(|(s, g)| {
                let (tests, count) = s.pairs().fold((0.0, 0), |(t, c), p| {
                    (t + pair_time(Stage::Hosts, p), c + 1)
                });
                tests + unit_barrier_time(count, g.len(), &barrier_time)
            })
            .collect();
        let wave_len = self.options.concurrency.unwrap_or(usize::MAX);
        let inside: f64 = per_group
            .chunks(wave_len.min(per_group.len().max(1)))
            .map(|w| w.iter().copied().fold(0.0, f64::max) + barrier_time(self.size()))
            .sum();
        if self.options.sweep {
            let between = self.sweep_time(pair_time, &barrier_time);
            return (inside, between + barrier_time(self.size()));
        }
        let mut between = 0.0;
        if self.one_at_a_time() {
            // One test after another, each handing the turn to the next.
            let tests = (0..self.rounds())
                .flat_map(|round| self.meetings(round))
                .flat_map(|(a, b)| self.meeting_pairs(a, b));
            let (time, count) = tests.fold((0.0, 0u64), |(t, c), p| {
                (t + pair_time(Stage::Between, p), c + 1)
            });
            let handoffs = count.saturating_sub(1) as f64 * barrier_time(2);
            return (inside, time + handoffs + barrier_time(self.size()));
        }
        for round in 0..self.rounds() {
            let meetings = self.meetings(round);
            // A meeting opened by its wave's barrier has no barrier of its own.
            let opened = self.waves(meetings.len()) > 1;
            let times: Vec<f64> = meetings
                .iter()
                .map(|&(a, b)| {
                    let pairs = self.meeting_pairs(a, b);
                    let n = 2 * pairs.len().min(self.options.pairs_between);
                    let barriers = unit_barrier_time(pairs.len() as u64, n, &barrier_time)
                        - if opened && !pairs.is_empty() {
                            barrier_time(n)
                        } else {
                            0.0
                        };
                    pairs
                        .iter()
                        .map(|&p| pair_time(Stage::Between, p))
                        .sum::<f64>()
                        + barriers
                })
                .collect();
            between += times
                .chunks(wave_len.min(times.len().max(1)))
                .map(|w| {
                    w.iter().copied().fold(0.0, f64::max) + barrier_time(self.all_ambassadors.len())
                })
                .sum::<f64>();
        }
        (inside, between + barrier_time(self.size()))
    }
}

#[cfg(test)]
mod tests;
