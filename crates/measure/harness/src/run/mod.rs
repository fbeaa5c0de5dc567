//! Running a pair test over every pair of a job and recording it in a run directory.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use lgate_rundir::{
    JournalEntry, JournalFormat, PlanInfo, RankTime, RunDir, RunMeta, RunPart, RunStatus,
    RunSummary, ScheduleInfo, Stage, StageSummary,
};
use lgate_topology::{format, Rank, Topology, TopologyFormat, TopologyNode};
use lgate_transport::{
    Activity, Handoff, PoliteWait, RankClock, SubsetBarrier, Tag, Transport, TransportError,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::pair_test::{AnyPairTest, PairResult, PingPong, Role};
use crate::placement;
use crate::schedule::{Pair, Schedule, Step, SweepPair};
use crate::staged::{
    choose_follow_up, FollowUp, ScreenedPair, ScreenedValues, StagedOptions, StagedPlan,
    StagedStep, StagedTest,
};
use crate::HarnessError;

mod collectives;
mod collector;
mod options;
mod prepare;
mod relay;

pub use self::collectives::broadcast;
use self::collectives::*;
pub(crate) use self::collectives::{gather, gather_host_facts};
use self::collector::*;
pub use self::options::*;
pub(crate) use self::prepare::settle_staged;
use self::prepare::*;
pub use self::prepare::{resolve_topology, topology_by_host};
use self::relay::Relay;

/// What rank 0 tells every rank before measuring starts.
#[derive(Debug, Serialize, Deserialize)]
enum Plan {
    Go(Box<Go>),
    Abort,
}

/// The plan of a run that goes ahead, the same on every rank.
#[derive(Debug, Serialize, Deserialize)]
struct Go {
    seed: u64,
    /// The topology, as JSON.
    topology: String,
    /// Full plan: per sweep, a bit per pair number `j (j - 1) / 2 + i`: measured already.
    done: Vec<Vec<u64>>,
    /// Staged plan: the tests measured already.
    staged_done: Vec<StagedTest>,
    /// Staged plan: its choices as rank 0 settled them for this machine.
    staged: Option<StagedOptions>,
    /// Per rank, its host and the one CPU it is bound to (see `placement::bound_cpus`).
    bound: Vec<Option<(usize, usize)>>,
    /// Per rank, whether its host may have more ranks testing at once than CPUs (see
    /// `placement::overcommitted`): its MPI waits always yield.
    overcommitted: Vec<bool>,
    /// Per rank, its host and the CPUs its tests are pinned to (see `placement::test_cpus`).
    #[serde(default)]
    test_cpus: Vec<Option<(usize, usize, usize)>>,
    /// Per rank, the rank its results go to: its host's first (see `relay::relays`).
    relays: Vec<Rank>,
    /// How the senders write their journal records.
    journal: lgate_rundir::JournalFormat,
}

/// Where a rank's results go, and what it does with the results of others.
enum Sink {
    /// Rank 0: every result in, the journal out.
    Root(Box<Collector>),
    /// A host's first rank: its host's results in, batches out to rank 0.
    Relay(Relay),
    /// Every other rank: its results to its relay (or rank 0).
    Member(Rank),
}

impl Sink {
    /// Takes in what has arrived, charging the wait before it to waiting.
    fn collect(&mut self, t: &dyn Transport, clock: &mut RankClock) -> Result<(), HarnessError> {
        match self {
            Sink::Root(c) => collect(t, Some(c), clock),
            Sink::Relay(r) => {
                if r.has_mail(t)? {
                    clock.charge(Activity::Waiting);
                    r.drain(t)?;
                    clock.charge(Activity::Collecting);
                    Ok(())
                } else {
                    r.forward_if_due(t)
                }
            }
            Sink::Member(_) => Ok(()),
        }
    }

    /// Waits until this rank's part of the results of what every rank has run so far is on
    /// its way: rank 0 has every result, a relay has forwarded its host's, a member has told
    /// its relay it is done.
    fn end_part(&mut self, t: &dyn Transport, clock: &mut RankClock) -> Result<(), HarnessError> {
        match self {
            Sink::Root(c) => c.collect_all(t, clock),
            Sink::Relay(r) => r.end_part(t, clock),
            Sink::Member(0) => Ok(()),
            Sink::Member(to) => Ok(t.send_polite(*to, Tag::RESULT, &[])?),
        }
    }

    fn collector(&mut self) -> Option<&mut Collector> {
        match self {
            Sink::Root(c) => Some(c),
            _ => None,
        }
    }
}

fn pair_number(p: Pair) -> usize {
    p.j * (p.j - 1) / 2 + p.i
}

/// Runs `test` over every pair of the job (or, with a staged plan, a screening test over the
/// plan's pairs and `test` over a sample); every rank calls this. Rank 0 returns the report.
pub fn run(
    t: &dyn Transport,
    test: &mut dyn AnyPairTest,
    options: &RunOptions,
) -> Result<Option<RunReport>, HarnessError> {
    let (rank, size) = (t.rank(), t.size());
    if size < 2 {
        return Err(HarnessError::Setup(
            "a measurement needs at least 2 ranks, and this job has 1: launch it with \
             `mpirun -np 4 lgate-plogp measure ...` or `srun -n 4 lgate-plogp measure ...`"
                .into(),
        ));
    }
    let entered = Instant::now();
    let info = placement::this_rank(t);
    let infos = gather(t, &info)?;
    let hosts = gather_host_facts(t, &info.host, infos.as_deref())?;

    let (plan, prepared) = if rank == 0 {
        let infos = infos.expect("rank 0 gathers");
        match prepare(t, test, options, infos, hosts) {
            Ok(p) => (broadcast(t, Some(&p.plan(size)))?, Some(p)),
            Err(e) => {
                broadcast(t, Some(&Plan::Abort))?;
                return Err(e);
            }
        }
    } else {
        (broadcast(t, None)?, None)
    };
    let Plan::Go(go) = plan else {
        return Err(HarnessError::Aborted);
    };
    measure(t, test, options, prepared, &go, entered)
        .map_err(|e| HarnessError::Measuring(Box::new(e)))
}

/// Every rank but rank 0 waits here, sleeping, until rank 0 has derived the run's outputs and
/// arrives too: waiting in MPI_Finalize instead, ranks that outnumber the cores spin or yield on
/// the cores rank 0 derives on (256 ranks on 2 cores made a 0.5 s derivation take a minute).
/// Every rank calls it once, rank 0 also when its derivation failed.
pub fn wait_for_rank_0(t: &dyn Transport) -> Result<(), HarnessError> {
    let all: Vec<Rank> = (0..t.size()).collect();
    let everyone = SubsetBarrier::new(&all, t.rank()).expect("every rank is in the job");
    everyone.wait::<HarnessError>(t, u64::MAX - 2, &mut || Ok(()))
}

/// One step of a rank's program, whichever plan made it.
enum Action<'a> {
    Barrier { members: Cow<'a, [Rank]>, id: u64 },
    Handoff { from: Pair, to: Pair, id: u64 },
    Test(SweepPair, Option<Stage>),
}

impl<'a> From<Step<'a>> for Action<'a> {
    fn from(step: Step<'a>) -> Self {
        match step {
            Step::Barrier { members, id } => Action::Barrier { members, id },
            Step::Handoff { from, to, id } => Action::Handoff { from, to, id },
            Step::Test(sp) => Action::Test(sp, None),
        }
    }
}

impl<'a> From<StagedStep<'a>> for Action<'a> {
    fn from(step: StagedStep<'a>) -> Self {
        match step {
            StagedStep::Barrier { members, id } => Action::Barrier { members, id },
            StagedStep::Handoff { from, to, id } => Action::Handoff { from, to, id },
            StagedStep::Test(t) => Action::Test(t.test, Some(t.stage)),
        }
    }
}

/// What every rank keeps while it walks its program.
struct Walker<'g> {
    t: &'g dyn Transport,
    go: &'g Go,
    t0: Instant,
    clock: RankClock,
    yielding: bool,
    /// The CPUs this rank may run on, put back after each pinned test.
    mask: Option<placement::CpuMask>,
}

impl Walker<'_> {
    /// Walks `steps`: barriers (rank 0 collecting results meanwhile) and tests, the screening
    /// test for screening stages and `full` otherwise.
    fn walk<'s>(
        &mut self,
        steps: impl Iterator<Item = Action<'s>>,
        full: &mut dyn AnyPairTest,
        mut screen: Option<&mut PingPong>,
        sink: &mut Sink,
    ) -> Result<(), HarnessError> {
        let (t, rank) = (self.t, self.t.rank());
        for step in steps {
            match step {
                Action::Barrier { members, id } => {
                    let barrier = SubsetBarrier::new(&members, rank).expect("rank is a member");
                    let clock = &mut self.clock;
                    barrier.wait(t, id, &mut || sink.collect(t, clock))?;
                }
                Action::Handoff { from, to, id } => {
                    let (from, to) = ([from.i, from.j], [to.i, to.j]);
                    let clock = &mut self.clock;
                    Handoff::new(&from, &to).pass(t, id, &mut || sink.collect(t, clock))?;
                }
                Action::Test(sp, stage) => {
                    let role = if sp.pair.i == rank {
                        Role::Sender
                    } else {
                        Role::Receiver
                    };
                    self.clock.charge(Activity::Waiting);
                    // Two ranks bound to one CPU run by turns, and so do the ranks of a host
                    // with more of them testing at once than CPUs: their MPI waits must yield.
                    let bound = &self.go.bound;
                    let by_turns = (bound.get(sp.pair.i).copied().flatten().is_some()
                        && bound.get(sp.pair.i) == bound.get(sp.pair.j))
                        || self.go.overcommitted.get(rank).copied().unwrap_or(false);
                    if by_turns != self.yielding {
                        t.yield_when_idle(by_turns);
                        self.yielding = by_turns;
                    }
                    let test: &mut dyn AnyPairTest = match (stage, screen.as_deref_mut()) {
                        (Some(s), Some(screen)) if s.screens() => screen,
                        _ => &mut *full,
                    };
                    // Ranks free to float on a host with more ranks than CPUs: the test's two
                    // run pinned to two CPUs, so the scheduler cannot stack them on one.
                    let cpus = &self.go.test_cpus;
                    let pin = match (cpus.get(sp.pair.i), cpus.get(sp.pair.j)) {
                        (Some(&Some((h, sender, receiver))), Some(&Some((hj, _, _))))
                            if h == hj =>
                        {
                            let cpu = if role == Role::Sender {
                                sender
                            } else {
                                receiver
                            };
                            self.mask
                                .as_ref()
                                .is_some_and(|m| m.contains(cpu) && placement::CpuMask::pin(cpu))
                        }
                        _ => false,
                    };
                    let start_s = self.t0.elapsed().as_secs_f64();
                    let result = test.run(t, sp.pair, role);
                    let end_s = self.t0.elapsed().as_secs_f64();
                    if pin {
                        if let Some(m) = &self.mask {
                            m.restore();
                        }
                    }
                    let result = result?;
                    if role == Role::Receiver || !matches!(sink, Sink::Member(_)) {
                        // A member sends its result on as part of the test (charged below);
                        // rank 0 and relays take their own in as collecting.
                        self.clock.charge(Activity::Busy);
                    }
                    if let Some(result) = result.filter(|_| role == Role::Sender) {
                        let entry = JournalEntry {
                            sweep: sp.sweep,
                            i: sp.pair.i,
                            j: sp.pair.j,
                            start_s,
                            end_s,
                            result,
                            stage,
                        };
                        match sink {
                            Sink::Root(c) => {
                                c.accept(&entry)?;
                                self.clock.charge(Activity::Collecting);
                            }
                            Sink::Relay(r) => {
                                r.keep(t, &entry)?;
                                self.clock.charge(Activity::Collecting);
                            }
                            Sink::Member(to) => {
                                let mut bytes = Vec::new();
                                relay::encode(&entry, self.go.journal, &mut bytes);
                                t.send_polite(*to, Tag::RESULT, &bytes)?;
                                self.clock.charge(Activity::Busy);
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Every rank's part once the plan is known: the program, then the final barrier.
fn measure(
    t: &dyn Transport,
    test: &mut dyn AnyPairTest,
    options: &RunOptions,
    prepared: Option<Prepared>,
    go: &Go,
    entered: Instant,
) -> Result<Option<RunReport>, HarnessError> {
    let (rank, size) = (t.rank(), t.size());
    let (topology, _) = format::parse(&go.topology, Some(TopologyFormat::Json), Some(size))?;
    let all: Vec<Rank> = (0..size).collect();
    let everyone = SubsetBarrier::new(&all, rank).expect("every rank is in the job");
    everyone.wait::<HarnessError>(t, u64::MAX - 1, &mut || Ok(()))?;
    let setup_s = entered.elapsed().as_secs_f64();
    let mut walker = Walker {
        t,
        go,
        t0: Instant::now(),
        clock: RankClock::start(t.cpu_scope()),
        yielding: false,
        mask: placement::CpuMask::current(),
    };
    let mut sink = sink_of(t, options, prepared, go, &mut walker.clock)?;
    let tree = topology.tree();
    match &options.plan {
        PlanKind::Full => walk_full(&mut walker, test, options, tree, &mut sink)?,
        PlanKind::Staged(staged) => {
            walk_staged(&mut walker, test, options, staged, tree, &mut sink)?
        }
    }
    sink.end_part(t, &mut walker.clock)?;
    if let Sink::Relay(r) = &mut sink {
        r.finish(t)?;
    }
    walker.clock.charge(Activity::Waiting);
    let rank_time = rank_times(lgate_transport::gather_time_splits(
        t,
        walker.clock.totals(),
    )?);
    everyone.wait(t, u64::MAX, &mut || drain(t, sink.collector()))?;
    match sink {
        Sink::Root(c) => c
            .finish(walker.t0.elapsed(), rank_time)
            .map(|report| Some(RunReport { setup_s, ..report })),
        _ => Ok(None),
    }
}

/// Where this rank's results go: rank 0 collects them (from `prepared`), a host's relay
/// gathers its host's, every other rank sends its own to its relay.
fn sink_of(
    t: &dyn Transport,
    options: &RunOptions,
    prepared: Option<Prepared>,
    go: &Go,
    clock: &mut RankClock,
) -> Result<Sink, HarnessError> {
    let rank = t.rank();
    Ok(match prepared {
        Some(p) => {
            let mut c = Collector::new(p, options.progress, options.stop_after)?;
            c.senders = relay::result_senders(0, &go.relays);
            clock.charge(Activity::Collecting);
            Sink::Root(Box::new(c))
        }
        None => {
            crate::interrupt::arm_behind_rank_0();
            match go.relays.get(rank).copied().unwrap_or(0) {
                to if to == rank => Sink::Relay(Relay::new(rank, &go.relays, go.journal)),
                to => Sink::Member(to),
            }
        }
    })
}

/// The full plan: every pair's full test in the topology's schedule, the tests already done
/// left out.
fn walk_full(
    walker: &mut Walker<'_>,
    test: &mut dyn AnyPairTest,
    options: &RunOptions,
    tree: &TopologyNode,
    sink: &mut Sink,
) -> Result<(), HarnessError> {
    let (rank, size, go) = (walker.t.rank(), walker.t.size(), walker.go);
    let schedule = Schedule::new(tree, size, go.seed, options.fast)?;
    let done: HashSet<SweepPair> = (0..options.sweeps)
        .flat_map(|sweep| schedule.pairs().map(move |pair| SweepPair { sweep, pair }))
        .filter(|sp| {
            let n = pair_number(sp.pair);
            go.done
                .get(sp.sweep as usize)
                .and_then(|bits| bits.get(n / 64))
                .is_some_and(|w| w >> (n % 64) & 1 == 1)
        })
        .collect();
    if let Some(c) = sink.collector() {
        c.expect(schedule.pairs_per_sweep() * options.sweeps as usize - done.len());
    }
    let steps = schedule
        .program(rank, options.sweeps, &done)
        .map(Action::from);
    walker.walk(steps, test, None, sink)?;
    Ok(())
}

/// The staged plan: the screening, rank 0's choice of the follow-up told to everyone, the
/// follow-up; the tests already done left out.
fn walk_staged(
    walker: &mut Walker<'_>,
    test: &mut dyn AnyPairTest,
    options: &RunOptions,
    staged: &StagedPlanOptions,
    tree: &TopologyNode,
    sink: &mut Sink,
) -> Result<(), HarnessError> {
    let (t, go) = (walker.t, walker.go);
    let (rank, size) = (t.rank(), t.size());
    let choices = go.staged.as_ref().unwrap_or(&staged.plan);
    let plan = StagedPlan::new(tree, size, go.seed, choices)?;
    let mut screen = staged.screening_test()?;
    let done: HashSet<StagedTest> = go.staged_done.iter().copied().collect();
    if let Some(c) = sink.collector() {
        let left = plan
            .screening_tests(options.sweeps)
            .filter(|x| !done.contains(x))
            .count();
        c.expect(left);
    }
    let steps = plan
        .screening_program(rank, options.sweeps, &done)
        .map(Action::from);
    walker.walk(steps, test, Some(&mut screen), sink)?;
    // Rank 0 chooses the follow-up from every screening result, then tells everyone.
    sink.end_part(t, &mut walker.clock)?;
    let follow_up: FollowUp = match sink.collector() {
        Some(c) => {
            // Chosen once: the values are let go (16 bytes a screening test).
            let chosen =
                choose_follow_up(&mut std::mem::take(&mut c.screened), &plan, options.judge);
            c.note(&chosen.doubts);
            let left = (0..options.sweeps)
                .flat_map(|sweep| follow_up_tests(&chosen, sweep).collect::<Vec<_>>())
                .filter(|x| !done.contains(x))
                .count();
            c.expect(left);
            let chosen = broadcast(t, Some(&chosen))?;
            walker.clock.charge(Activity::Collecting);
            chosen
        }
        None => broadcast(t, None)?,
    };
    let members = follow_up.members();
    let steps = plan
        .follow_up_program(rank, options.sweeps, &follow_up, &members, &done)
        .map(Action::from);
    walker.walk(steps, test, Some(&mut screen), sink)?;
    Ok(())
}

/// The tests of a follow-up in one sweep.
fn follow_up_tests(f: &FollowUp, sweep: u32) -> impl Iterator<Item = StagedTest> + '_ {
    f.tests().map(move |(stage, pair)| StagedTest {
        stage,
        test: SweepPair { sweep, pair },
    })
}

/// The screening distance of a screening result: the median round trip at its largest size.
pub fn screening_value(result: &PairResult) -> Option<f64> {
    result.pingpong()?.screening_value()
}

pub use lgate_transport::rank_times;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_of_intervals() {
        let mut v = vec![(0.0, 1.0), (0.5, 2.0), (3.0, 4.0), (3.5, 3.6)];
        assert_eq!(union_length(&mut v), 3.0);
        assert_eq!(union_length(&mut []), 0.0);
    }

    #[test]
    fn hosts_make_groups() {
        let hosts: Vec<String> = ["b", "a", "b", "a"].iter().map(|s| s.to_string()).collect();
        let t = topology_by_host(&hosts).unwrap();
        assert_eq!(t.tree().groups(), vec![&[0, 2][..], &[1, 3][..]]);
        let one = topology_by_host(&["a".to_string(), "a".to_string()]).unwrap();
        assert!(one.tree().is_group());
    }
}
