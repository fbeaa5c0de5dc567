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

mod sweep;

pub use sweep::{SWEEP_MAX_RANKS, SWEEP_RETESTS};

use lgate_rundir::{PingPongResult, Stage};
use lgate_topology::{Rank, TopologyNode};
use serde::{Deserialize, Serialize};

use crate::schedule::{
    turn, unit_barrier_time, Pair, Schedule, ScheduleError, Step, SweepPair, Turn,
};

/// The most follow-up tests a staged plan runs per sweep, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowUpCounts {
    /// Screened pairs inside groups tested again alone.
    pub alone_inside: usize,
    /// Screened pairs between groups tested again alone.
    pub alone_between: usize,
    /// The most pairs the sweep retests alone: slow pairs and a usual pair beside each.
    pub retest_between: usize,
    /// Pairs inside groups given the full test.
    pub sample_inside: usize,
    /// Pairs between groups given the full test, the slowest among them.
    pub sample_between: usize,
}

impl FollowUpCounts {
    /// Tests of the stage alone.
    pub fn alone(&self) -> usize {
        self.alone_inside + self.alone_between + self.retest_between
    }

    /// Tests of the stage sample.
    pub fn sample(&self) -> usize {
        self.sample_inside + self.sample_between
    }
}

/// The choices of a staged plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StagedOptions {
    /// Rank pairs tested per pair of groups (K); all of them when K covers them.
    pub pairs_between: usize,
    /// Full pair tests per kind of pair (inside groups, between groups), spread over the
    /// screening's distances.
    pub samples: usize,
    /// Screened pairs tested again alone, to measure the bias of testing side by side.
    pub alone: usize,
    /// The most extra screening tests for pairs of groups whose samples disagree.
    #[serde(default)]
    pub refine: usize,
    /// The most extra screening tests between the groups of a level the samples nearly decide
    /// (0 in the choices of runs made before it: a resumed run chooses as it did).
    #[serde(default)]
    pub confidence: usize,
    /// The most pair tests running at once across the machine; unbounded when `None`.
    pub concurrency: Option<usize>,
    /// The stage between groups screens every pair across groups, LinkTest's way (see
    /// [`sweep`]), instead of K sampled pairs per pair of groups.
    #[serde(default)]
    pub sweep: bool,
}

impl Default for StagedOptions {
    fn default() -> Self {
        StagedOptions {
            pairs_between: 4,
            samples: 3,
            alone: 8,
            refine: 32,
            confidence: 512,
            concurrency: None,
            sweep: false,
        }
    }
}

impl StagedOptions {
    /// Checks the choices.
    pub fn check(&self) -> Result<(), ScheduleError> {
        if self.pairs_between == 0 {
            return Err(ScheduleError::BadOption(
                "--pairs-between must be at least 1".into(),
            ));
        }
        if self.concurrency == Some(0) {
            return Err(ScheduleError::BadOption(
                "--concurrency must be at least 1".into(),
            ));
        }
        Ok(())
    }
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

/// A screened pair as rank 0 keeps it to choose stages 3-4: its stage and distance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScreenedPair {
    /// The stage it was screened in.
    pub stage: Stage,
    /// The pair.
    pub pair: Pair,
    /// The screening distance (round trip at the largest screening size, seconds).
    pub value: f64,
    /// The round trip at the smallest screening size (seconds), NaN when the test had one.
    pub smallest: f64,
    /// The least repetition at the largest screening size (seconds), NaN when not known.
    pub floor: f64,
    /// The least repetition at the smallest screening size (seconds), NaN when the test had
    /// one size or it is not known.
    pub smallest_floor: f64,
}

impl ScreenedPair {
    /// A screening test's pair as rank 0 keeps it, if the test has a value.
    pub fn of(stage: Stage, pair: Pair, result: &PingPongResult) -> Option<ScreenedPair> {
        Some(ScreenedPair {
            stage,
            pair,
            value: result.screening_value()?,
            smallest: result.smallest_screening_value().unwrap_or(f64::NAN),
            floor: result.sizes.last().map_or(f64::NAN, |s| s.rtt.min),
            smallest_floor: match result.sizes.as_slice() {
                [first, _, ..] => first.rtt.min,
                _ => f64::NAN,
            },
        })
    }
}

/// One screening value as [`ScreenedValues`] holds it, in seconds: 24 bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Screened {
    value: f32,
    smallest: f32,
    floor: f32,
    smallest_floor: f32,
    i: u32,
    j: u32,
}

impl Screened {
    fn pair(&self) -> Pair {
        Pair::new(self.i as usize, self.j as usize)
    }

    /// By value, ties by pair: the order does not depend on the order results came in.
    fn order(&self, other: &Self) -> std::cmp::Ordering {
        (self.value.total_cmp(&other.value)).then((self.i, self.j).cmp(&(other.i, other.j)))
    }
}

/// The screening values rank 0 keeps to choose stages 3-5: 24 bytes per test of stages 1-2
/// (200 million tests at 1 048 576 ranks), tests of other stages left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScreenedValues {
    hosts: Vec<Screened>,
    between: Vec<Screened>,
}

impl ScreenedValues {
    /// Room for `hosts` tests inside groups and `between` tests between them.
    pub fn with_capacity(hosts: usize, between: usize) -> Self {
        ScreenedValues {
            hosts: Vec::with_capacity(hosts),
            between: Vec::with_capacity(between),
        }
    }

    /// Keeps one screened pair (of stage 1 or 2; others are left out).
    pub fn push(&mut self, s: ScreenedPair) {
        let (Ok(i), Ok(j)) = (u32::try_from(s.pair.i), u32::try_from(s.pair.j)) else {
            return;
        };
        let kept = Screened {
            value: s.value as f32,
            smallest: s.smallest as f32,
            floor: s.floor as f32,
            smallest_floor: s.smallest_floor as f32,
            i,
            j,
        };
        match s.stage {
            Stage::Hosts => self.hosts.push(kept),
            Stage::Between => self.between.push(kept),
            _ => {}
        }
    }

    /// The values kept.
    pub fn len(&self) -> usize {
        self.hosts.len() + self.between.len()
    }

    /// Whether none are kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn of_stage(&mut self, stage: Stage) -> &mut [Screened] {
        match stage {
            Stage::Between => &mut self.between,
            _ => &mut self.hosts,
        }
    }
}

impl Extend<ScreenedPair> for ScreenedValues {
    fn extend<T: IntoIterator<Item = ScreenedPair>>(&mut self, iter: T) {
        iter.into_iter().for_each(|s| self.push(s));
    }
}

impl FromIterator<ScreenedPair> for ScreenedValues {
    fn from_iter<T: IntoIterator<Item = ScreenedPair>>(iter: T) -> Self {
        let mut v = ScreenedValues::default();
        v.extend(iter);
        v
    }
}

/// The elements at `positions` (ascending, into `v` counted from `offset`) of `v` in
/// [`Screened::order`], by selection, not sorting: `v` is reordered.
fn select_at(
    v: &mut [Screened],
    positions: &[usize],
    offset: usize,
    out: &mut Vec<(usize, Screened)>,
) {
    if positions.is_empty() || v.is_empty() {
        return;
    }
    let mid = positions.len() / 2;
    let at = positions[mid];
    let (left, nth, right) = v.select_nth_unstable_by(at - offset, Screened::order);
    out.push((at, *nth));
    select_at(left, &positions[..mid], offset, out);
    let after: Vec<usize> = positions[mid + 1..]
        .iter()
        .copied()
        .filter(|&p| p > at)
        .collect();
    select_at(right, &after, at + 1, out);
}

/// The pairs rank 0 chose for stages 3-5, the same on every rank.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FollowUp {
    /// More pairs of groups whose samples disagree, and between the groups of a level in
    /// doubt, screened.
    pub refine: Vec<Pair>,
    /// What the levels in doubt were and what was added for them, for people.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub doubts: Vec<String>,
    /// Pairs screened again alone.
    pub alone: Vec<Pair>,
    /// Pairs given the full test.
    pub sample: Vec<Pair>,
}

impl FollowUp {
    /// The tests of stages 3-5 in the order they run, per sweep.
    pub fn tests(&self) -> impl Iterator<Item = (Stage, Pair)> + '_ {
        self.refine
            .iter()
            .map(|&p| (Stage::Refine, p))
            .chain(self.alone.iter().map(|&p| (Stage::Alone, p)))
            .chain(self.sample.iter().map(|&p| (Stage::Sample, p)))
    }

    /// The ranks taking part in stages 3-5, ascending.
    pub fn members(&self) -> Vec<Rank> {
        let mut m: Vec<Rank> = self.tests().flat_map(|(_, p)| [p.i, p.j]).collect();
        m.sort_unstable();
        m.dedup();
        m
    }
}

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
        options.check()?;
        if options.sweep && size > SWEEP_MAX_RANKS {
            return Err(ScheduleError::BadOption(format!(
                "--sweep tests every pair between hosts: {} pairs at {size} ranks; it runs on up \
                 to {SWEEP_MAX_RANKS} ranks: sweep a part of the machine at a time",
                size * (size - 1) / 2
            )));
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
                    (!self.options.sweep)
                        .then(|| self.between_program(rank, sweep, done))
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
            let opening = (waves > 1).then(|| StagedStep::Barrier {
                members: Cow::Borrowed(&self.everyone[..]),
                id: barrier_id(0, sweep, 0xff_fffe, wave as u64),
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

    /// Stage 2 for one sweep: the rank's group's meetings round by round, if the rank is one
    /// of its ambassadors (or the group's pairs with the other group are all tested).
    fn between_program<'a>(
        &'a self,
        rank: Rank,
        sweep: u32,
        done: &'a HashSet<StagedTest>,
    ) -> impl Iterator<Item = StagedStep<'a>> + 'a {
        let group = self.group_of[rank];
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
                if waves > 1 && self.all_ambassadors.binary_search(&rank).is_ok() {
                    steps.push(StagedStep::Barrier {
                        members: Cow::Borrowed(&self.all_ambassadors[..]),
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
                    if turn.involves(rank) {
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
        for round in 0..self.rounds() {
            let meetings = self.meetings(round);
            let times: Vec<f64> = meetings
                .iter()
                .map(|&(a, b)| {
                    let pairs = self.meeting_pairs(a, b);
                    let n = 2 * pairs.len().min(self.options.pairs_between);
                    pairs
                        .iter()
                        .map(|&p| pair_time(Stage::Between, p))
                        .sum::<f64>()
                        + unit_barrier_time(pairs.len() as u64, n, &barrier_time)
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

/// The pairs rank 0 chooses for stages 3-5 from the screening of `plan`: more pairs for the
/// pairs of groups whose samples disagree (see [`refinement`]); for each kind of pair (inside
/// groups, between groups), `samples` pairs at evenly spread quantiles of its distances, and
/// the slowest pair between groups; `alone` pairs spread the same way over both kinds.
pub fn choose_follow_up(screened: &mut ScreenedValues, plan: &StagedPlan) -> FollowUp {
    let options = plan.options();
    let mut spread = |stage: Stage, count: usize| -> Vec<Pair> {
        let of_stage = screened.of_stage(stage);
        let n = of_stage.len();
        let positions: Vec<usize> = (0..count.min(n))
            .map(|k| ((2 * k + 1) * n / (2 * count)).min(n - 1))
            .collect();
        let mut unique = positions.clone();
        unique.dedup();
        let mut found = Vec::with_capacity(unique.len());
        select_at(of_stage, &unique, 0, &mut found);
        let mut out: Vec<Pair> = positions
            .iter()
            .filter_map(|p| found.iter().find(|f| f.0 == *p).map(|f| f.1.pair()))
            .collect();
        out.dedup();
        out
    };
    let mut sample = spread(Stage::Hosts, options.samples);
    sample.extend(spread(Stage::Between, options.samples));
    let mut alone = spread(Stage::Hosts, plan.follow_up_counts().alone_inside);
    alone.extend(spread(
        Stage::Between,
        plan.follow_up_counts().alone_between,
    ));
    if options.samples > 0 {
        // The slowest, of equal values the least pair.
        if let Some(slowest) = screened.between.iter().max_by(|a, b| {
            a.value
                .total_cmp(&b.value)
                .then((b.i, b.j).cmp(&(a.i, a.j)))
        }) {
            if !sample.contains(&slowest.pair()) {
                sample.push(slowest.pair());
            }
        }
    }
    if options.sweep {
        for p in sweep::retests(screened, plan) {
            if !alone.contains(&p) {
                alone.push(p);
            }
        }
    }
    let mut refine = refinement(screened, plan);
    let doubts = confirmation(screened, plan, &mut refine);
    FollowUp {
        refine,
        doubts,
        alone,
        sample,
    }
}

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
fn diagonal_pairs<'a>(ga: &'a [Rank], gb: &'a [Rank]) -> impl Iterator<Item = Pair> + 'a {
    (0..gb.len())
        .flat_map(move |d| (0..ga.len()).map(move |x| Pair::new(ga[x], gb[(x + d + 1) % gb.len()])))
}

/// A pair of groups' samples disagree when the slowest is this much above the fastest, and
/// more than twice as far above it as is usual for the job's pairs of groups.
const DISAGREE: f64 = 1.25;

/// More pairs for the pairs of groups whose K samples disagree (the slowest over the fastest
/// above 1.25, and more than twice the usual excess), the most disagreeing first, each given
/// as many new pairs as it had samples, within `options.refine` tests.
pub fn refinement(screened: &ScreenedValues, plan: &StagedPlan) -> Vec<Pair> {
    let budget = plan.options().refine;
    // A sweep screened every pair between groups: there is none to add.
    if budget == 0 || plan.options().sweep {
        return Vec::new();
    }
    let group_of = plan.group_of();
    // Per pair of groups (a < b, flat in (a, b) order): the least and largest sample and how
    // many; 20 bytes a pair of groups, which stage 2 gives K samples each.
    let g = plan.groups().len();
    let at = |a: usize, b: usize| a * g - a * (a + 1) / 2 + (b - a - 1);
    let slots = g * g.saturating_sub(1) / 2;
    let mut lo = vec![f64::INFINITY; slots];
    let mut hi = vec![0.0f64; slots];
    let mut count = vec![0u32; slots];
    for s in &screened.between {
        let (a, b) = (group_of[s.i as usize], group_of[s.j as usize]);
        if a == b || a >= g || b >= g {
            continue;
        }
        let e = at(a.min(b), a.max(b));
        lo[e] = lo[e].min(f64::from(s.value));
        hi[e] = hi[e].max(f64::from(s.value));
        count[e] += 1;
    }
    let spreads: Vec<((usize, usize), f64, usize)> = (0..g)
        .flat_map(|a| (a + 1..g).map(move |b| (a, b)))
        .filter(|&(a, b)| count[at(a, b)] >= 2)
        .map(|(a, b)| {
            let e = at(a, b);
            let ratio = if lo[e] > 0.0 { hi[e] / lo[e] } else { 1.0 };
            ((a, b), ratio, count[e] as usize)
        })
        .collect();
    drop((lo, hi, count));
    if spreads.is_empty() {
        return Vec::new();
    }
    let mut usual: Vec<f64> = spreads.iter().map(|s| s.1).collect();
    usual.sort_by(f64::total_cmp);
    let usual = usual[usual.len() / 2];
    let mut flagged: Vec<&((usize, usize), f64, usize)> = spreads
        .iter()
        .filter(|s| s.1 > DISAGREE && s.1 - 1.0 > 2.0 * (usual - 1.0))
        .collect();
    flagged.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    let mut out = Vec::new();
    for &&((a, b), _, count) in &flagged {
        let measured = plan.meeting_pairs(a, b);
        let (ga, gb) = (&plan.groups()[a], &plan.groups()[b]);
        let more = diagonal_pairs(ga, gb).filter(|p| !measured.contains(p));
        let mut added = 0;
        for p in more {
            if out.len() == budget || added == count {
                break;
            }
            if !out.contains(&p) {
                out.push(p);
                added += 1;
            }
        }
        if out.len() == budget {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
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
        for concurrency in [None, Some(1), Some(2)] {
            let options = StagedOptions {
                concurrency,
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
            assert_eq!(ran.len(), inside + between + 6, "{concurrency:?}");
            let (screening, follow) = ran.split_at(inside + between);
            for a in screening {
                for b in screening {
                    let (ga, gb) = (group(a.1.i), group(b.1.i));
                    let (ha, hb) = (group(a.1.j), group(b.1.j));
                    // Within a group, and within a meeting of two groups, one at a time.
                    if a != b && (ga, ha) == (gb, hb) {
                        assert!(!overlap(a, b), "{concurrency:?}: {a:?} and {b:?}");
                    }
                    // Stage 2 after all of stage 1.
                    if ga != ha && gb == hb {
                        assert!(a.2 >= b.3, "{concurrency:?}: {a:?} before {b:?} ended");
                    }
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
        for concurrency in [None, Some(1)] {
            let options = StagedOptions {
                concurrency,
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
        let options = |confidence| StagedOptions {
            pairs_between: 2,
            confidence,
            ..StagedOptions::default()
        };
        let plan = StagedPlan::new(&t, 24, 1, &options(512)).unwrap();
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
        let f = choose_follow_up(&mut screened.iter().copied().collect(), &plan);
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
        let f = choose_follow_up(&mut screened.iter().copied().collect(), &small);
        assert_eq!(f.refine.len(), 5);
        assert!(f.doubts[0].contains("the budget spent"), "{:?}", f.doubts);
        let none = StagedPlan::new(&t, 24, 1, &options(0)).unwrap();
        let f = choose_follow_up(&mut screened.iter().copied().collect(), &none);
        assert!(f.refine.is_empty() && f.doubts.is_empty());
    }

    #[test]
    fn a_level_only_the_smallest_size_nearly_decides_gets_its_pairs_too() {
        // A non-blocking fabric: at the largest size every pair of hosts looks alike, at the
        // smallest the hosts of one leaf are 8 % nearer (hops), as in the test above.
        let t = tree(
            "cluster { group { 0-3 } group { 4-7 } group { 8-11 } group { 12-15 } \
             group { 16-19 } group { 20-23 } }",
        );
        let options = StagedOptions {
            pairs_between: 2,
            confidence: 512,
            ..StagedOptions::default()
        };
        let plan = StagedPlan::new(&t, 24, 1, &options).unwrap();
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
        let f = choose_follow_up(&mut screened.iter().copied().collect(), &plan);
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
        let f = choose_follow_up(&mut screened.iter().copied().collect(), &plan);
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
        let f = choose_follow_up(&mut screened.iter().copied().collect(), &plan);
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
            choose_follow_up(&mut shuffled.into_iter().collect(), &plan),
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
}
