//! The sweep (`measure --sweep`): LinkTest's pattern for the stage between groups. Every pair
//! of ranks of two different groups is screened, in rounds in which every rank meets one
//! other (the circle method over the ranks: `P - 1` rounds of `P / 2` pairs at once, `P`
//! rounds for an odd `P`; a rank whose partner is of its own group rests that round). Then
//! the pairs slow against the other pairs of their two groups are retested alone, each beside
//! a usual pair of the same two groups, before the run's health names them (ClusterKit's
//! practice): a pair slow only side by side was slow from the traffic of the others.
//!
//! It tests every pair between groups: `P^2 / 2` tests in `P` rounds, whose results rank 0
//! keeps (16 bytes each), so it runs on up to [`SWEEP_MAX_RANKS`] ranks; a larger machine is
//! swept a part at a time.

use std::borrow::Cow;
use std::collections::HashSet;

use lgate_rundir::Stage;
use lgate_topology::Rank;

use super::{barrier_id, ScreenedValues, StagedPlan, StagedStep, StagedTest};
use crate::schedule::{Pair, SweepPair};

/// The most ranks a sweep runs on: 8.4 million pairs, 134 MB of results on rank 0.
pub const SWEEP_MAX_RANKS: usize = 4096;

/// The most slow pairs retested alone per sweep (each beside a usual pair of its groups).
pub const SWEEP_RETESTS: usize = 32;

/// Rounds between two barriers of every rank: results reach rank 0 and the rounds stay
/// aligned, at a barrier's cost every so many rounds.
const ROUNDS_PER_BARRIER: usize = 32;

/// The partner of `x` among `n` in `round` by the circle method (the last slot fixed), if any:
/// an odd `n` gives each one round off.
pub(super) fn circle(n: usize, x: usize, round: usize) -> Option<usize> {
    let slots = n + n % 2;
    let turning = slots - 1;
    let other = if x == turning {
        round
    } else if x == round {
        turning
    } else {
        (2 * round + turning - x) % turning
    };
    (other < n && other != x).then_some(other)
}

/// The rounds of a circle of `n`: `n - 1` for an even `n`, `n` for an odd one.
pub(super) fn circle_rounds(n: usize) -> usize {
    if n < 2 {
        0
    } else {
        n + n % 2 - 1
    }
}

impl StagedPlan {
    /// Whether the stage between groups is the sweep.
    pub fn sweeps_every_pair(&self) -> bool {
        self.options.sweep
    }

    /// The sweep's pairs of `round` (across groups), ordered by their first rank.
    pub(super) fn sweep_pairs(&self, round: usize) -> impl Iterator<Item = Pair> + '_ {
        let n = self.size();
        (0..n).filter_map(move |i| {
            let j = circle(n, i, round)?;
            (i < j && self.group_of[i] != self.group_of[j]).then(|| Pair::new(i, j))
        })
    }

    /// `rank`'s steps of the sweep in one sweep of the run: its partner of each round when of
    /// another group; with bounded concurrency each round's pairs go in waves, every rank
    /// passing a barrier of all ranks between waves; a barrier of all ranks every
    /// [`ROUNDS_PER_BARRIER`] rounds.
    pub(super) fn sweep_program<'a>(
        &'a self,
        rank: Rank,
        sweep: u32,
        done: &'a HashSet<StagedTest>,
    ) -> impl Iterator<Item = StagedStep<'a>> + 'a {
        let n = self.size();
        (0..circle_rounds(n)).flat_map(move |round| {
            let mut steps = Vec::new();
            if round > 0 && round % ROUNDS_PER_BARRIER == 0 {
                steps.push(StagedStep::Barrier {
                    members: Cow::Borrowed(&self.everyone[..]),
                    id: barrier_id(1, sweep, 0xfd_0000 | (round / ROUNDS_PER_BARRIER) as u64, 0),
                });
            }
            let partner =
                circle(n, rank, round).filter(|&p| self.group_of[p] != self.group_of[rank]);
            let test = partner.map(|p| StagedTest {
                stage: Stage::Between,
                test: SweepPair {
                    sweep,
                    pair: Pair::new(rank, p),
                },
            });
            match self.options.concurrency {
                Some(c) => {
                    let pairs: Vec<Pair> = self.sweep_pairs(round).collect();
                    let mine = test.and_then(|t| pairs.iter().position(|&p| p == t.test.pair));
                    for wave in 0..pairs.len().div_ceil(c) {
                        if pairs.len() > c {
                            steps.push(StagedStep::Barrier {
                                members: Cow::Borrowed(&self.everyone[..]),
                                id: barrier_id(1, sweep, 0xfc_0000 | round as u64, wave as u64),
                            });
                        }
                        if mine.map(|k| k / c) == Some(wave) {
                            steps.extend(test.filter(|t| !done.contains(t)).map(StagedStep::Test));
                        }
                    }
                }
                None => steps.extend(test.filter(|t| !done.contains(t)).map(StagedStep::Test)),
            }
            steps
        })
    }

    /// The sweep's wall time in one sweep of the run: each round as long as its slowest pair
    /// (or its waves one after another), and the barriers.
    pub(super) fn sweep_time(
        &self,
        pair_time: impl Fn(Stage, Pair) -> f64,
        barrier_time: impl Fn(usize) -> f64,
    ) -> f64 {
        let rounds = circle_rounds(self.size());
        let wave_len = self.options.concurrency.unwrap_or(usize::MAX);
        let mut total = 0.0;
        for round in 0..rounds {
            let times: Vec<f64> = (self.sweep_pairs(round))
                .map(|p| pair_time(Stage::Between, p))
                .collect();
            for wave in times.chunks(wave_len.min(times.len().max(1))) {
                total += wave.iter().copied().fold(0.0, f64::max);
                if times.len() > wave_len {
                    total += barrier_time(self.size());
                }
            }
        }
        total + (rounds / ROUNDS_PER_BARRIER) as f64 * barrier_time(self.size())
    }
}

/// The pairs to retest alone after a sweep: the [`SWEEP_RETESTS`] pairs slowest against the
/// median of the pairs between their two groups (at least
/// [`lgate_rundir::SLOW_PAIR_FACTOR`] times it, of pairs of groups with three pairs or more),
/// each followed by the pair at that median (once).
pub(super) fn retests(screened: &ScreenedValues, plan: &StagedPlan) -> Vec<Pair> {
    let group_of = plan.group_of();
    let mut blocks: std::collections::BTreeMap<(usize, usize), Vec<(f64, Pair)>> =
        std::collections::BTreeMap::new();
    for s in &screened.between {
        let p = s.pair();
        let (a, b) = (group_of[p.i], group_of[p.j]);
        if a != b && s.value.is_finite() {
            blocks
                .entry((a.min(b), a.max(b)))
                .or_default()
                .push((f64::from(s.value), p));
        }
    }
    let mut slow: Vec<(f64, Pair, Pair)> = Vec::new();
    for values in blocks.values_mut().filter(|v| v.len() >= 3) {
        values.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        let (usual, reference) = values[values.len() / 2];
        if usual > 0.0 {
            slow.extend(
                (values.iter())
                    .filter(|(v, _)| *v >= lgate_rundir::SLOW_PAIR_FACTOR * usual)
                    .map(|&(v, p)| (v / usual, p, reference)),
            );
        }
    }
    slow.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
    let mut out = Vec::new();
    for (_, p, reference) in slow.into_iter().take(SWEEP_RETESTS) {
        for q in [p, reference] {
            if !out.contains(&q) {
                out.push(q);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::staged::tests::hosts;
    use crate::staged::{ScreenedPair, StagedOptions};

    fn plan(h: usize, per: usize, concurrency: Option<usize>) -> StagedPlan {
        let options = StagedOptions {
            sweep: true,
            concurrency,
            ..StagedOptions::default()
        };
        StagedPlan::new(&hosts(h, per), h * per, 1, &options).unwrap()
    }

    #[test]
    fn the_sweep_tests_every_pair_across_groups_once_one_test_a_rank_a_round() {
        for (h, per, c) in [(4, 2, None), (3, 3, None), (5, 2, Some(2)), (2, 1, None)] {
            let plan = plan(h, per, c);
            let n = h * per;
            let done = HashSet::new();
            let mut seen = HashSet::new();
            for rank in 0..n {
                for step in plan.sweep_program(rank, 0, &done) {
                    if let StagedStep::Test(t) = step {
                        assert!(t.test.pair.contains(rank));
                        seen.insert(t.test.pair);
                    }
                }
            }
            let across = (0..n)
                .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
                .filter(|&(i, j)| i / per != j / per)
                .count();
            assert_eq!(seen.len(), across, "{h} x {per}");
            assert_eq!(plan.screening_tests_per_sweep().1, across);
            assert_eq!(
                plan.screening_tests(1)
                    .filter(|t| t.stage == Stage::Between)
                    .count(),
                across
            );
            for round in 0..circle_rounds(n) {
                let ranks: Vec<usize> = plan.sweep_pairs(round).flat_map(|p| [p.i, p.j]).collect();
                let distinct: HashSet<&usize> = ranks.iter().collect();
                assert_eq!(distinct.len(), ranks.len(), "round {round}: a rank twice");
            }
        }
    }

    #[test]
    fn slow_pairs_are_retested_beside_a_usual_pair_of_their_groups() {
        let plan = plan(2, 4, None);
        let mut screened = ScreenedValues::default();
        for i in 0..4 {
            for j in 4..8 {
                let value = if (i, j) == (1, 6) {
                    30.0
                } else {
                    10.0 + (i + j) as f64 * 0.01
                };
                screened.push(ScreenedPair {
                    stage: Stage::Between,
                    pair: Pair::new(i, j),
                    value,
                    smallest: f64::NAN,
                    floor: f64::NAN,
                    smallest_floor: f64::NAN,
                });
            }
        }
        let again = retests(&screened, &plan);
        assert_eq!(again.len(), 2, "{again:?}");
        assert_eq!(again[0], Pair::new(1, 6));
        assert_ne!(again[1], Pair::new(1, 6));
    }
}
