//! `measure --dry-run`: the plan a run would follow and what it would cost, from a short
//! calibration (one screening test and one full test inside a host and between two hosts),
//! without measuring or writing anything.

use std::time::Instant;

use lgate_topology::Rank;
use serde::{Deserialize, Serialize};

use crate::pair_test::{AnyPairTest, Role};
use crate::run::{broadcast, gather, resolve_topology, settle_staged, PlanKind, RunOptions};
use crate::schedule::{Pair, Schedule};
use crate::staged::StagedPlan;
use crate::{placement, HarnessError, SubsetBarrier, Tag, Transport};

/// One calibration test: a pair, and whether it runs the screening test.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Calibration {
    pair: Pair,
    screen: bool,
}

/// What a dry run tells: the plan, its calibration and its estimate, a line each.
#[derive(Debug, Clone)]
pub struct DryRun {
    /// The lines to print.
    pub lines: Vec<String>,
}

/// The calibration pairs: the first two ranks of the first group that has two, and the first
/// rank of the first group with the first of the second and of the last group (neighbours in
/// rank order are often under one switch, the ends of the job under different ones).
fn calibration_pairs(groups: &[Vec<Rank>]) -> Vec<Pair> {
    let inside = groups
        .iter()
        .find(|g| g.len() >= 2)
        .map(|g| Pair::new(g[0], g[1]));
    let near = (groups.len() >= 2).then(|| Pair::new(groups[0][0], groups[1][0]));
    let far = (groups.len() >= 3).then(|| Pair::new(groups[0][0], groups[groups.len() - 1][0]));
    [inside, near, far].into_iter().flatten().collect()
}

/// Prints nothing and measures nothing: every rank calls this, rank 0 returns what a run with
/// `options` and `test` would do and cost.
pub fn dry_run(
    t: &dyn Transport,
    test: &mut dyn AnyPairTest,
    options: &RunOptions,
) -> Result<Option<DryRun>, HarnessError> {
    let size = t.size();
    if size < 2 {
        return Err(HarnessError::Setup(
            "a dry run needs the job's ranks: launch it as the run would be launched".into(),
        ));
    }
    let entered = std::time::Instant::now();
    let infos = gather(t, &placement::this_rank(t))?;
    // Rank 0 settles the plan and the calibration tests; the others learn the tests.
    let settled = match infos {
        Some(infos) => {
            let prepared = (|| {
                let hosts: Vec<String> = infos.iter().map(|i| i.host.clone()).collect();
                let topology = resolve_topology(&options.topology, &hosts)?;
                let groups = topology.tree().sorted_groups();
                let screening = matches!(options.plan, PlanKind::Staged(_));
                let mut tests = Vec::new();
                for pair in calibration_pairs(&groups) {
                    if screening {
                        tests.push(Calibration { pair, screen: true });
                    }
                    tests.push(Calibration {
                        pair,
                        screen: false,
                    });
                }
                Ok::<_, HarnessError>((topology, groups, infos, tests))
            })();
            match prepared {
                Ok(p) => {
                    broadcast(t, Some(&Some(p.3.clone())))?;
                    Some(p)
                }
                Err(e) => {
                    broadcast::<Option<Vec<Calibration>>>(t, Some(&None))?;
                    return Err(e);
                }
            }
        }
        None => None,
    };
    let tests: Vec<Calibration> = match &settled {
        Some(p) => p.3.clone(),
        None => match broadcast::<Option<Vec<Calibration>>>(t, None)? {
            Some(tests) => tests,
            None => return Err(HarnessError::Aborted),
        },
    };

    // The run's own start-up, as this dry run went through it (the calibration aside).
    let setup_s = entered.elapsed().as_secs_f64();
    let took =
        calibrate(t, test, options, &tests).map_err(|e| HarnessError::Measuring(Box::new(e)))?;
    let Some((topology, groups, infos, _)) = settled else {
        return Ok(None);
    };
    Ok(Some(estimate(
        options, &tests, &took, &topology, &groups, &infos, setup_s,
    )?))
}

/// Runs the calibration tests one at a time across the job; rank 0 returns each one's time as
/// its sender measured it.
fn calibrate(
    t: &dyn Transport,
    test: &mut dyn AnyPairTest,
    options: &RunOptions,
    tests: &[Calibration],
) -> Result<Vec<f64>, HarnessError> {
    let (rank, size) = (t.rank(), t.size());
    let all: Vec<Rank> = (0..size).collect();
    let everyone = SubsetBarrier::new(&all, rank).expect("every rank is in the job");
    let mut screen = match &options.plan {
        PlanKind::Staged(s) => Some(s.screening_test()?),
        PlanKind::Full => None,
    };
    let mut took = Vec::with_capacity(tests.len());
    for (k, c) in tests.iter().enumerate() {
        everyone.wait::<HarnessError>(t, 0xD7_0000 + k as u64, &mut || Ok(()))?;
        if c.pair.contains(rank) {
            let role = if rank == c.pair.i {
                Role::Sender
            } else {
                Role::Receiver
            };
            let which: &mut dyn AnyPairTest = match (c.screen, screen.as_mut()) {
                (true, Some(s)) => s,
                _ => &mut *test,
            };
            let start = Instant::now();
            which.run(t, c.pair, role)?;
            let seconds = start.elapsed().as_secs_f64();
            if role == Role::Sender && rank != 0 {
                t.send_polite(0, Tag::RESULT, &seconds.to_le_bytes())?;
            }
            if role == Role::Sender && rank == 0 {
                took.push(seconds);
            }
        }
        if rank == 0 && c.pair.i != 0 {
            let mut bytes = [0u8; 8];
            t.recv(c.pair.i, Tag::RESULT, &mut bytes)?;
            took.push(f64::from_le_bytes(bytes));
        }
    }
    everyone.wait::<HarnessError>(t, 0xD7_FFFF, &mut || Ok(()))?;
    Ok(took)
}

/// Rank 0's time to derive a run, per test in its journal (reading the line, gathering it into
/// tables and host blocks): 32 647 tests took 0.4 s on the 2-core development machine.
const DERIVE_S_PER_TEST: f64 = 12e-6;

/// What the plan costs, from the calibration's times.
fn estimate(
    options: &RunOptions,
    tests: &[Calibration],
    took: &[f64],
    topology: &lgate_topology::Topology,
    groups: &[Vec<Rank>],
    infos: &[lgate_rundir::RankInfo],
    setup_s: f64,
) -> Result<DryRun, HarnessError> {
    let times = Timed {
        tests,
        took,
        groups,
    };
    let mut lines = Vec::new();
    let (wall, tests_run) = match &options.plan {
        PlanKind::Full => full_plan(&times, options, topology, infos.len(), &mut lines)?,
        PlanKind::Staged(staged) => {
            staged_plan(&times, options, staged, topology, infos, &mut lines)?
        }
    };
    lines.push(format!(
        "estimated wall time: {} (barriers and bookkeeping not counted); nothing was written",
        human_duration(wall)
    ));
    let derive_s = tests_run as f64 * DERIVE_S_PER_TEST;
    lines.push(format!(
        "the whole job: about {} after MPI's own start-up: placement, host facts and plan {} \
         (as this dry run's), the pair tests {}, deriving about {} ({tests_run} tests)",
        human_duration(setup_s + wall + derive_s),
        human_duration(setup_s),
        human_duration(wall),
        human_duration(derive_s)
    ));
    Ok(DryRun { lines })
}

/// The calibration's tests and how long each took, by kind of test and of pair.
struct Timed<'a> {
    tests: &'a [Calibration],
    took: &'a [f64],
    /// The groups (hosts) that tell a pair inside from one between.
    groups: &'a [Vec<Rank>],
}

impl Timed<'_> {
    /// The times of the screening test (`screen`) or the full one, of pairs inside a group or
    /// between groups.
    fn times_of(&self, screen: bool, inside: bool) -> Vec<f64> {
        (self.tests.iter().zip(self.took))
            .filter(|(c, _)| {
                c.screen == screen
                    && (self.groups.iter()).any(|g| g.contains(&c.pair.i) && g.contains(&c.pair.j))
                        == inside
            })
            .map(|(_, &s)| s)
            .collect()
    }

    /// Their mean, if any was timed.
    fn time_of(&self, screen: bool, inside: bool) -> Option<f64> {
        let v = self.times_of(screen, inside);
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }

    /// The slowest of them.
    fn slowest(&self, screen: bool, inside: bool) -> Option<f64> {
        self.times_of(screen, inside).into_iter().reduce(f64::max)
    }

    /// Whether the two ranks of `p` share a group.
    fn inside(&self, p: Pair) -> bool {
        let group_of = |r: Rank| self.groups.iter().position(|g| g.contains(&r));
        group_of(p.i) == group_of(p.j)
    }

    /// The line that says what the calibration of `what` took, inside a host and between.
    fn calibrated(&self, what: &str, screen: bool) -> String {
        let part = |inside: bool, name: &str| {
            let v = self.times_of(screen, inside);
            let lo = v.iter().copied().reduce(f64::min)?;
            let hi = v.iter().copied().reduce(f64::max)?;
            Some(if v.len() > 1 {
                format!("{}-{} {name}", human_duration(lo), human_duration(hi))
            } else {
                format!("{} {name}", human_duration(lo))
            })
        };
        let parts: Vec<String> = [part(true, "inside a host"), part(false, "between hosts")]
            .into_iter()
            .flatten()
            .collect();
        format!("calibration, {what}: {}", parts.join(", "))
    }
}

/// The full plan's wall time and tests, its lines added to `lines`.
fn full_plan(
    times: &Timed,
    options: &RunOptions,
    topology: &lgate_topology::Topology,
    size: usize,
    lines: &mut Vec<String>,
) -> Result<(f64, usize), HarnessError> {
    let schedule = Schedule::new(topology.tree(), size, 0, options.fast)?;
    let (ti, tb) = (
        times.time_of(false, true).unwrap_or(0.0),
        times.time_of(false, false).unwrap_or(0.0),
    );
    lines.push(format!(
        "plan: full, {} pair tests per sweep, {} sweep(s), {} group(s) side by side at most",
        schedule.pairs_per_sweep(),
        options.sweeps,
        schedule.leaf_count()
    ));
    lines.push(times.calibrated("the full test", false));
    let tests_run = schedule.pairs_per_sweep() * options.sweeps as usize;
    let wall = schedule.critical_path(|p| if times.inside(p) { ti } else { tb }, |_| 0.0)
        * options.sweeps as f64;
    Ok((wall, tests_run))
}

/// The staged plan's wall time and tests, stage by stage, its lines added to `lines`.
fn staged_plan(
    times: &Timed,
    options: &RunOptions,
    staged: &crate::StagedPlanOptions,
    topology: &lgate_topology::Topology,
    infos: &[lgate_rundir::RankInfo],
    lines: &mut Vec<String>,
) -> Result<(f64, usize), HarnessError> {
    let sweeps = options.sweeps as f64;
    let (choices, notes) = settle_staged(&staged.plan, infos, topology);
    let plan = StagedPlan::new(topology.tree(), infos.len(), 0, &choices)?;
    let screen = |p: Pair| times.time_of(true, times.inside(p)).unwrap_or(0.0);
    let (hosts_s, between_s) = plan.screening_time(|_, p| screen(p), |_| 0.0);
    let (tests_inside, tests_between) = plan.screening_tests_per_sweep();
    let (si, sb) = (
        times.time_of(true, true).unwrap_or(0.0),
        times.time_of(true, false).unwrap_or(0.0),
    );
    let (pi, pb) = (
        times.time_of(false, true).unwrap_or(0.0),
        times.time_of(false, false).unwrap_or(0.0),
    );
    let c = plan.follow_up_counts();
    let alone_s = c.alone_inside as f64 * si + (c.alone_between + c.retest_between) as f64 * sb;
    // The sample spreads over the distances, and adds the slowest pair between hosts.
    let sample_s = c.sample_inside as f64 * pi
        + (c.sample_between.saturating_sub(1)) as f64 * pb
        + if c.sample_between > 0 {
            times.slowest(false, false).unwrap_or(pb)
        } else {
            0.0
        };
    lines.push(format!(
        "plan: staged, {} group(s), {} sweep(s){}",
        times.groups.len(),
        options.sweeps,
        choices
            .concurrency
            .map(|c| format!(", at most {c} test(s) at once"))
            .unwrap_or_default()
    ));
    lines.extend(notes.iter().map(|n| format!("  {n}")));
    lines.push(format!(
        "stage hosts:   {tests_inside} screening tests, every group at once: {}",
        human_duration(hosts_s * sweeps)
    ));
    lines.push(format!(
        "stage between: {tests_between} screening tests in {} rounds{}: {}",
        plan.between_rounds(),
        if choices.sweep {
            " (the sweep: every pair between groups, a pair per rank a round)"
        } else {
            ""
        },
        human_duration(between_s * sweeps)
    ));
    lines.push(format!(
        "stage alone:   {} screening tests one at a time{}: {}",
        c.alone(),
        if choices.sweep {
            format!(
                " (at most; up to {} slow pairs retested, each beside a usual pair)",
                crate::staged::SWEEP_RETESTS
            )
        } else {
            String::new()
        },
        human_duration(alone_s * sweeps)
    ));
    lines.push(format!(
        "stage sample:  {} full tests one at a time: {}",
        c.sample(),
        human_duration(sample_s * sweeps)
    ));
    lines.push(times.calibrated("the screening test", true));
    lines.push(times.calibrated("the full test", false));
    let tests_run =
        (tests_inside + tests_between + c.alone() + c.sample()) * options.sweeps as usize;
    Ok((
        (hosts_s + between_s + alone_s + sample_s) * sweeps,
        tests_run,
    ))
}

/// A duration in seconds as people read it: 850 us, 12.3 ms, 4.2 s, 3 min 20 s, 2 h 5 min.
pub fn human_duration(s: f64) -> String {
    match s {
        s if s < 1e-3 => format!("{:.0} us", s * 1e6),
        s if s < 1.0 => format!("{:.1} ms", s * 1e3),
        s if s < 60.0 => format!("{s:.1} s"),
        s if s < 3600.0 => format!("{} min {} s", (s / 60.0) as u64, (s % 60.0) as u64),
        s => format!(
            "{} h {} min",
            (s / 3600.0) as u64,
            ((s % 3600.0) / 60.0) as u64
        ),
    }
}
