//! Running a pair test over every pair of a job and recording it in a run directory.

use std::borrow::Cow;
use std::collections::HashSet;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use lgate_rundir::{
    JournalEntry, PlanInfo, RankTime, RunDir, RunMeta, RunPart, RunStatus, RunSummary,
    ScheduleInfo, Stage, StageSummary, TestInfo,
};
use lgate_topology::{format, Rank, Topology, TopologyFormat, TopologyNode};
use lgate_transport::{
    Activity, Handoff, PoliteWait, RankClock, SubsetBarrier, Tag, Transport, TransportError,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::pair_test::{PairTest, PingPong, PingPongResult, Role};
use crate::placement;
use crate::schedule::{Pair, Schedule, Step, SweepPair};
use crate::staged::{
    choose_follow_up, FollowUp, ScreenedPair, StagedOptions, StagedPlan, StagedStep, StagedTest,
};
use crate::HarnessError;

/// Where the topology that schedules the pairs comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum TopologySource {
    /// All ranks in one group: one pair at a time.
    None,
    /// One group per host, so pairs on different hosts run at the same time.
    Auto,
    /// A topology file (LGate, JSON or Newick), read on rank 0.
    File(PathBuf),
}

impl TopologySource {
    /// The source a `--topology` flag names: none, `auto`, or a file.
    pub fn from_flag(flag: Option<&str>) -> Self {
        match flag {
            None => TopologySource::None,
            Some("auto") => TopologySource::Auto,
            Some(path) => TopologySource::File(PathBuf::from(path)),
        }
    }

    /// As meta.json records it: `none`, `auto` or the file's path.
    pub fn describe(&self) -> String {
        match self {
            TopologySource::None => "none".into(),
            TopologySource::Auto => "auto".into(),
            TopologySource::File(p) => p.display().to_string(),
        }
    }
}

/// How rank 0 reports progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressStyle {
    /// A bar when stderr is a terminal, lines otherwise.
    Auto,
    /// A bar drawn with terminal control codes even when stderr is not a terminal: under
    /// mpirun or srun rank 0's stderr is a pipe that the launcher copies to its own terminal.
    Bar,
    /// A line after the first seconds, then every ten seconds (for logs).
    Lines,
    /// No progress; the run's directory and resume command are still said.
    None,
    /// Nothing.
    Quiet,
}

/// Everything about a run that is not the pair test.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The run directory.
    pub out: PathBuf,
    /// Replace an existing run in `out`.
    pub force: bool,
    /// Continue the run in `out` instead of starting one.
    pub resume: bool,
    /// The topology that schedules pairs.
    pub topology: TopologySource,
    /// How many times the whole schedule runs.
    pub sweeps: u32,
    /// The seed of the pair order; chosen at random (and recorded) when not given.
    pub seed: Option<u64>,
    /// Test only this share of each group's ranks.
    pub fast: Option<f64>,
    /// Progress reporting on rank 0.
    pub progress: ProgressStyle,
    /// The command line, recorded in meta.json.
    pub command_line: Vec<String>,
    /// The program and version, recorded in meta.json.
    pub tool: String,
    /// Stop with an error once rank 0 has this many results, as a crash would (for tests).
    pub stop_after: Option<usize>,
    /// Which pairs get which test: the full test for every pair, or the staged plan.
    pub plan: PlanKind,
}

/// Which pairs get which test.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanKind {
    /// The full pair test for every pair, scheduled by the topology (LGate).
    Full,
    /// Screening tests inside groups and for sampled pairs between them, the full test for a
    /// sample (see [`crate::staged`]).
    Staged(StagedPlanOptions),
}

/// A staged plan's choices and its screening test.
#[derive(Debug, Clone, PartialEq)]
pub struct StagedPlanOptions {
    /// The plan's choices.
    pub plan: StagedOptions,
    /// The screening test: round trips at these sizes.
    pub screen_sizes: Vec<usize>,
    /// Repetitions per screening size.
    pub screen_reps: usize,
}

impl Default for StagedPlanOptions {
    fn default() -> Self {
        StagedPlanOptions {
            plan: StagedOptions::default(),
            screen_sizes: vec![0, 64 << 10],
            screen_reps: 16,
        }
    }
}

impl RunOptions {
    /// A new run in `out`: no topology, one sweep, a random seed, no fast mode, progress on.
    pub fn new(out: impl Into<PathBuf>) -> Self {
        RunOptions {
            out: out.into(),
            force: false,
            resume: false,
            topology: TopologySource::None,
            sweeps: 1,
            seed: None,
            fast: None,
            progress: ProgressStyle::Auto,
            command_line: Vec::new(),
            tool: format!("lgate-harness {}", env!("CARGO_PKG_VERSION")),
            stop_after: None,
            plan: PlanKind::Full,
        }
    }
}

/// What a finished run reports on rank 0.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The run directory.
    pub run_dir: PathBuf,
    /// Totals.
    pub summary: RunSummary,
    /// Pairs that a previous invocation had measured.
    pub resumed_pairs: usize,
}

/// What rank 0 tells every rank before measuring starts.
#[derive(Debug, Serialize, Deserialize)]
enum Plan {
    Go(Go),
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
}

fn pair_number(p: Pair) -> usize {
    p.j * (p.j - 1) / 2 + p.i
}

/// Runs `test` over every pair of the job (or, with a staged plan, a screening test over the
/// plan's pairs and `test` over a sample); every rank calls this. Rank 0 returns the report.
pub fn run(
    t: &dyn Transport,
    test: &mut dyn PairTest,
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
    measure(t, test, options, prepared, &go).map_err(|e| HarnessError::Measuring(Box::new(e)))
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
        full: &mut dyn PairTest,
        mut screen: Option<&mut PingPong>,
        mut collector: Option<&mut Collector>,
    ) -> Result<(), HarnessError> {
        let (t, rank) = (self.t, self.t.rank());
        for step in steps {
            match step {
                Action::Barrier { members, id } => {
                    let barrier = SubsetBarrier::new(&members, rank).expect("rank is a member");
                    let clock = &mut self.clock;
                    barrier.wait(t, id, &mut || collect(t, collector.as_deref_mut(), clock))?;
                }
                Action::Handoff { from, to, id } => {
                    let (from, to) = ([from.i, from.j], [to.i, to.j]);
                    let clock = &mut self.clock;
                    Handoff::new(&from, &to)
                        .pass(t, id, &mut || collect(t, collector.as_deref_mut(), clock))?;
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
                    let test: &mut dyn PairTest = match (stage, screen.as_deref_mut()) {
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
                    if role == Role::Receiver || collector.is_some() {
                        // A sender other than rank 0 sends its result to rank 0 as part of the
                        // test (charged below); rank 0 takes its own in as collecting.
                        self.clock.charge(Activity::Busy);
                    }
                    if role == Role::Sender {
                        let entry = JournalEntry {
                            sweep: sp.sweep,
                            i: sp.pair.i,
                            j: sp.pair.j,
                            start_s,
                            end_s,
                            result,
                            stage,
                        };
                        match collector.as_deref_mut() {
                            Some(c) => {
                                c.accept(entry)?;
                                self.clock.charge(Activity::Collecting);
                            }
                            None => {
                                let bytes = serde_json::to_vec(&entry).expect("entries serialise");
                                t.send_polite(0, Tag::RESULT, &bytes)?;
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
    test: &mut dyn PairTest,
    options: &RunOptions,
    prepared: Option<Prepared>,
    go: &Go,
) -> Result<Option<RunReport>, HarnessError> {
    let (rank, size) = (t.rank(), t.size());
    let (topology, _) = format::parse(&go.topology, Some(TopologyFormat::Json), Some(size))?;
    let all: Vec<Rank> = (0..size).collect();
    let everyone = SubsetBarrier::new(&all, rank).expect("every rank is in the job");
    everyone.wait::<HarnessError>(t, u64::MAX - 1, &mut || Ok(()))?;
    let mut walker = Walker {
        t,
        go,
        t0: Instant::now(),
        clock: RankClock::start(t.cpu_scope()),
        yielding: false,
        mask: placement::CpuMask::current(),
    };
    let mut collector = match prepared {
        Some(p) => {
            let c = Collector::new(p, options.progress, options.stop_after)?;
            walker.clock.charge(Activity::Collecting);
            Some(c)
        }
        None => {
            crate::interrupt::arm_behind_rank_0();
            None
        }
    };

    match &options.plan {
        PlanKind::Full => {
            let schedule = Schedule::new(topology.tree(), size, go.seed, options.fast)?;
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
            if let Some(c) = collector.as_mut() {
                c.expect(schedule.pairs_per_sweep() * options.sweeps as usize - done.len());
            }
            let steps = schedule
                .program(rank, options.sweeps, &done)
                .map(Action::from);
            walker.walk(steps, test, None, collector.as_mut())?;
        }
        PlanKind::Staged(staged) => {
            let choices = go.staged.as_ref().unwrap_or(&staged.plan);
            let plan = StagedPlan::new(topology.tree(), size, go.seed, choices)?;
            let mut screen = PingPong::new(staged.screen_sizes.clone(), staged.screen_reps)?;
            let done: HashSet<StagedTest> = go.staged_done.iter().copied().collect();
            if let Some(c) = collector.as_mut() {
                let left = plan
                    .screening_tests(options.sweeps)
                    .filter(|x| !done.contains(x))
                    .count();
                c.expect(left);
            }
            let steps = plan
                .screening_program(rank, options.sweeps, &done)
                .map(Action::from);
            walker.walk(steps, test, Some(&mut screen), collector.as_mut())?;
            // Rank 0 chooses the follow-up from every screening result, then tells everyone.
            let follow_up: FollowUp = match collector.as_mut() {
                Some(c) => {
                    c.collect_all(t, &mut walker.clock)?;
                    let chosen = choose_follow_up(&c.screened, &plan);
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
            walker.walk(steps, test, Some(&mut screen), collector.as_mut())?;
        }
    }
    if let Some(c) = collector.as_mut() {
        c.collect_all(t, &mut walker.clock)?;
    }
    walker.clock.charge(Activity::Waiting);
    let rank_time = rank_times(lgate_transport::gather_time_splits(
        t,
        walker.clock.totals(),
    )?);
    everyone.wait(t, u64::MAX, &mut || drain(t, collector.as_mut()))?;
    match collector {
        Some(c) => c.finish(walker.t0.elapsed(), rank_time).map(Some),
        None => Ok(None),
    }
}

/// The tests of a follow-up in one sweep.
fn follow_up_tests(f: &FollowUp, sweep: u32) -> impl Iterator<Item = StagedTest> + '_ {
    f.tests().map(move |(stage, pair)| StagedTest {
        stage,
        test: SweepPair { sweep, pair },
    })
}

/// The screening distance of a screening result: the median round trip at its largest size.
pub fn screening_value(result: &serde_json::Value) -> Option<f64> {
    let r: PingPongResult = serde_json::from_value(result.clone()).ok()?;
    r.sizes.last().map(|s| s.rtt.median)
}

pub use lgate_transport::rank_times;

/// Rank 0's work between polls of a wait: the results that have arrived, received and
/// journalled, charged to collecting (the wait before them to waiting).
fn collect(
    t: &dyn Transport,
    collector: Option<&mut Collector>,
    clock: &mut RankClock,
) -> Result<(), HarnessError> {
    match collector {
        Some(c) if t.probe_any(Tag::RESULT)?.is_some() => {
            clock.charge(Activity::Waiting);
            c.drain(t)?;
            clock.charge(Activity::Collecting);
            Ok(())
        }
        _ => Ok(()),
    }
}

fn drain(t: &dyn Transport, collector: Option<&mut Collector>) -> Result<(), HarnessError> {
    match collector {
        Some(c) => c.drain(t),
        None => Ok(()),
    }
}

/// Sends every rank's placement to rank 0, which returns them in rank order.
pub(crate) fn gather(
    t: &dyn Transport,
    info: &lgate_rundir::RankInfo,
) -> Result<Option<Vec<lgate_rundir::RankInfo>>, HarnessError> {
    if t.rank() != 0 {
        let bytes = serde_json::to_vec(info).expect("placement serialises");
        t.send_polite(0, Tag::GATHER, &bytes)?;
        return Ok(None);
    }
    let mut out = vec![info.clone()];
    for r in 1..t.size() {
        let bytes = t.recv_vec(r, Tag::GATHER)?;
        let theirs = serde_json::from_slice(&bytes).map_err(|e| TransportError::Protocol {
            rank: 0,
            message: format!("rank {r} sent a placement that does not parse: {e}"),
        })?;
        out.push(theirs);
    }
    Ok(Some(out))
}

/// The facts of every host, read by its first rank and sent to rank 0, which returns them in
/// host order of first rank (the others an empty list). Rank 0 names the first rank of each
/// host in one broadcast; every rank calls this. Files are read under `LGATE_HOST_ROOT` when
/// it is set (a fake tree), else under `/`.
pub(crate) fn gather_host_facts(
    t: &dyn Transport,
    host: &str,
    infos: Option<&[lgate_rundir::RankInfo]>,
) -> Result<Vec<lgate_rundir::HostFacts>, HarnessError> {
    let leaders: Vec<Rank> = match infos {
        Some(infos) => {
            let mut seen = HashSet::new();
            let leaders: Vec<Rank> = infos
                .iter()
                .filter(|i| seen.insert(i.host.as_str()))
                .map(|i| i.rank)
                .collect();
            broadcast(t, Some(&leaders))?
        }
        None => broadcast(t, None)?,
    };
    let rank = t.rank();
    if !leaders.contains(&rank) {
        return Ok(Vec::new());
    }
    let root = std::env::var_os(crate::host_facts::HOST_ROOT_VAR)
        .map_or_else(|| std::path::PathBuf::from("/"), std::path::PathBuf::from);
    let mine = crate::host_facts::read_host_facts(&root, host);
    if rank != 0 {
        let bytes = serde_json::to_vec(&mine).expect("host facts serialise");
        t.send_polite(0, Tag::FACTS, &bytes)?;
        return Ok(Vec::new());
    }
    let mut out = vec![mine];
    for &r in leaders.iter().filter(|&&r| r != 0) {
        let bytes = t.recv_vec(r, Tag::FACTS)?;
        let theirs = serde_json::from_slice(&bytes).map_err(|e| TransportError::Protocol {
            rank: 0,
            message: format!("rank {r} sent host facts that do not parse: {e}"),
        })?;
        out.push(theirs);
    }
    Ok(out)
}

/// Sends rank 0's `plan` (a plan, a follow-up, a resumed run's flags) to every rank along a
/// binomial tree (log2 P rounds); every rank calls it, rank 0 with `Some`.
pub fn broadcast<P: Serialize + DeserializeOwned>(
    t: &dyn Transport,
    plan: Option<&P>,
) -> Result<P, HarnessError> {
    let (rank, size) = (t.rank(), t.size());
    let (bytes, mut mask) = if rank == 0 {
        let plan = plan.expect("rank 0 has the plan");
        (serde_json::to_vec(plan).expect("plans serialise"), 1)
    } else {
        let high = 1 << (usize::BITS - 1 - rank.leading_zeros());
        (t.recv_vec(rank - high, Tag::PLAN)?, high << 1)
    };
    while mask < size {
        if rank + mask < size {
            t.send_polite(rank + mask, Tag::PLAN, &bytes)?;
        }
        mask <<= 1;
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        TransportError::Protocol {
            rank,
            message: format!("the run plan does not parse: {e}"),
        }
        .into()
    })
}

/// The topology that schedules a job whose ranks run on `hosts`, labelled with the hosts
/// unless the file has labels of its own.
pub fn resolve_topology(
    source: &TopologySource,
    hosts: &[String],
) -> Result<Topology, HarnessError> {
    let size = hosts.len();
    let topology = match source {
        TopologySource::None => {
            Topology::from_tree(TopologyNode::group((0..size).collect()), Some(size))?
        }
        TopologySource::Auto => topology_by_host(hosts)?,
        TopologySource::File(path) => format::read_file(path, Some(size))?.0,
    };
    Ok(if topology.labels().is_none() {
        topology.with_labels(hosts.to_vec())?
    } else {
        topology
    })
}

/// What rank 0 settles before measuring.
struct Prepared {
    run: RunDir,
    meta: RunMeta,
    topology: Topology,
    /// The tests a resumed run has already: full plan.
    done: Vec<SweepPair>,
    /// The tests a resumed run has already: staged plan.
    staged_done: Vec<StagedTest>,
    /// The screening distances a resumed run has already.
    screened: Vec<ScreenedPair>,
    /// The staged plan's choices for this machine.
    staged: Option<StagedOptions>,
    /// A finished run's end and summary, kept when resuming it measures nothing more.
    finished: Option<(Option<String>, Option<RunSummary>)>,
}

impl Prepared {
    fn plan(&self, size: usize) -> Plan {
        let done = if self.meta.schedule.plan.is_some() {
            Vec::new()
        } else {
            let words = (size * (size - 1) / 2).div_ceil(64);
            let mut done = vec![vec![0u64; words]; self.meta.schedule.sweeps as usize];
            for sp in &self.done {
                let n = pair_number(sp.pair);
                done[sp.sweep as usize][n / 64] |= 1 << (n % 64);
            }
            done
        };
        Plan::Go(Go {
            seed: self.meta.schedule.seed,
            topology: format::to_string(&self.topology, TopologyFormat::Json),
            done,
            staged_done: self.staged_done.clone(),
            staged: self.staged.clone(),
            bound: placement::bound_cpus(&self.meta.ranks),
            overcommitted: placement::overcommitted(
                &self.meta.ranks,
                &self.topology.tree().groups(),
            ),
            test_cpus: placement::test_cpus(&self.meta.ranks, &self.topology.tree().groups()),
        })
    }

    fn resumed_tests(&self) -> usize {
        self.done.len() + self.staged_done.len()
    }
}

fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// What a plan schedules, as rank 0 checks a journal against it.
enum Scheduled {
    Full(HashSet<SweepPair>),
    Staged(HashSet<StagedTest>),
}

/// Rank 0: the topology, the seed, the run directory and what a resumed run already has.
fn prepare(
    t: &dyn Transport,
    test: &dyn PairTest,
    options: &RunOptions,
    infos: Vec<lgate_rundir::RankInfo>,
    host_facts: Vec<lgate_rundir::HostFacts>,
) -> Result<Prepared, HarnessError> {
    let size = t.size();
    if options.sweeps == 0 {
        return Err(HarnessError::Setup("--sweeps must be at least 1".into()));
    }
    let hosts: Vec<String> = infos.iter().map(|i| i.host.clone()).collect();
    let topology = resolve_topology(&options.topology, &hosts)?;
    let previous = if options.resume {
        let run = RunDir::open(&options.out)?;
        Some((run.read_meta()?, run))
    } else {
        None
    };
    let seed = options
        .seed
        .or_else(|| previous.as_ref().map(|(m, _)| m.schedule.seed))
        .unwrap_or_else(rand::random);
    let mpi = lgate_rundir::MpiInfo {
        control_variables: t.library_settings(),
        library_version: Some(t.library_version()),
    };
    let test_info = TestInfo {
        name: test.name().to_string(),
        parameters: test.parameters(),
    };
    let mut settled = None;
    let (pairs_per_sweep, tested_ranks, plan_info, scheduled) = match &options.plan {
        PlanKind::Full => {
            let schedule = Schedule::new(topology.tree(), size, seed, options.fast)?;
            let valid = options.resume.then(|| {
                (0..options.sweeps)
                    .flat_map(|sweep| schedule.pairs().map(move |pair| SweepPair { sweep, pair }))
                    .collect()
            });
            (
                schedule.pairs_per_sweep(),
                schedule.tested_ranks(),
                None,
                valid.map(Scheduled::Full),
            )
        }
        PlanKind::Staged(staged) => {
            if options.fast.is_some() {
                return Err(HarnessError::Setup(
                    "--fast applies to --plan full; the staged plan already samples the pairs \
                     between hosts"
                        .into(),
                ));
            }
            let (choices, notes) = settle_staged(&staged.plan, &infos, &topology);
            let plan = StagedPlan::new(topology.tree(), size, seed, &choices)?;
            let screen = PingPong::new(staged.screen_sizes.clone(), staged.screen_reps)?;
            let (inside, between) = plan.screening_tests_per_sweep();
            let info = PlanInfo {
                name: "staged".into(),
                parameters: serde_json::to_value(&choices).expect("options serialise"),
                screen: TestInfo {
                    name: screen.name().to_string(),
                    parameters: screen.parameters(),
                },
                screening_tests: [inside, between],
                notes,
            };
            settled = Some(choices);
            let valid = options
                .resume
                .then(|| plan.screening_tests(options.sweeps).collect());
            (
                inside + between,
                (0..size).collect(),
                Some(info),
                valid.map(Scheduled::Staged),
            )
        }
    };
    let schedule_info = ScheduleInfo {
        topology_source: options.topology.describe(),
        topology: lgate_topology::json::to_value(&topology),
        sweeps: options.sweeps,
        seed,
        fast_fraction: options.fast,
        tested_ranks,
        pairs_per_sweep,
        plan: plan_info,
        pinned_hosts: {
            let pinned = placement::test_cpus(&infos, &topology.tree().groups());
            let mut hosts: Vec<String> = infos
                .iter()
                .zip(&pinned)
                .filter(|(_, p)| p.is_some())
                .map(|(i, _)| i.host.clone())
                .collect();
            hosts.sort();
            hosts.dedup();
            hosts
        },
    };
    let start = now_rfc3339();
    let meta = RunMeta {
        mpi,
        launcher: placement::launcher(),
        system: placement::system(),
        hosts: host_facts,
        parts: vec![RunPart {
            command_line: options.command_line.clone(),
            ..RunPart::starting(start.clone())
        }],
        ..RunMeta::started(
            options.tool.clone(),
            options.command_line.clone(),
            test_info,
            schedule_info,
            infos,
            start,
        )
    };
    let (previous, run) = match previous {
        Some((old, run)) => (Some(old), run),
        None => (None, RunDir::create(&options.out, options.force)?),
    };
    let mut prepared = Prepared {
        run,
        meta,
        topology,
        done: Vec::new(),
        staged_done: Vec::new(),
        screened: Vec::new(),
        staged: settled,
        finished: None,
    };
    if let (Some(old), Some(scheduled)) = (previous, scheduled) {
        let run = &prepared.run;
        let differences = old.plan_differences(&prepared.meta);
        if !differences.is_empty() {
            return Err(HarnessError::Resume(format!(
                "{}: cannot resume with other parameters: {}",
                run.path().display(),
                differences.join("; ")
            )));
        }
        let journal = run.read_journal()?;
        journal.repair(&run.file(lgate_rundir::JOURNAL_FILE))?;
        let unscheduled =
            |e: &JournalEntry| {
                HarnessError::Resume(format!(
                "{}: the journal holds pair {}-{} of sweep {}{}, which this run does not schedule",
                run.path().display(),
                e.i,
                e.j,
                e.sweep,
                e.stage.map(|s| format!(" (stage {})", s.name())).unwrap_or_default()
            ))
            };
        for e in &journal.entries {
            if e.i >= e.j || e.j >= size {
                return Err(unscheduled(e));
            }
            let test = SweepPair {
                sweep: e.sweep,
                pair: Pair::new(e.i, e.j),
            };
            match (&scheduled, e.stage) {
                (Scheduled::Full(valid), None) if valid.contains(&test) => prepared.done.push(test),
                (Scheduled::Staged(valid), Some(stage)) => {
                    let t = StagedTest { stage, test };
                    let follow_up = matches!(stage, Stage::Refine | Stage::Alone | Stage::Sample);
                    if !(valid.contains(&t) || follow_up && e.sweep < options.sweeps) {
                        return Err(unscheduled(e));
                    }
                    prepared.staged_done.push(t);
                    prepared.screened.extend(screened_pair(e));
                }
                _ => return Err(unscheduled(e)),
            }
        }
        let mut parts = old.parts_before_resume(prepared.resumed_tests());
        parts.append(&mut prepared.meta.parts);
        prepared.meta.parts = parts;
        prepared.meta.start = old.start;
        // The run's command line stays the one that started it (a resumption takes its flags
        // from there); each part keeps its own.
        if !old.command_line.is_empty() {
            prepared.meta.command_line = old.command_line;
        }
        if old.status == RunStatus::Complete {
            prepared.finished = Some((old.end, old.summary));
        }
    }
    prepared.run.write_meta(&prepared.meta)?;
    Ok(prepared)
}

/// The staged plan's choices for this machine, and why they differ from `plan`: groups that
/// share one machine's CPUs test at most half its CPUs' pairs at once (unless the user chose).
pub(crate) fn settle_staged(
    plan: &StagedOptions,
    infos: &[lgate_rundir::RankInfo],
    topology: &Topology,
) -> (StagedOptions, Vec<String>) {
    let mut choices = plan.clone();
    let mut notes = Vec::new();
    if choices.concurrency.is_none() {
        let groups = topology.tree().sorted_groups();
        if let Some((n, why)) = placement::shared_machine_concurrency(infos, &groups) {
            choices.concurrency = Some(n);
            notes.push(format!("--concurrency {n}: {why}"));
        }
    }
    (choices, notes)
}

/// A screening stage's entry as rank 0 keeps it to choose the follow-up.
fn screened_pair(e: &JournalEntry) -> Option<ScreenedPair> {
    let stage = e
        .stage
        .filter(|s| matches!(s, Stage::Hosts | Stage::Between))?;
    Some(ScreenedPair {
        stage,
        pair: Pair::new(e.i, e.j),
        value: screening_value(&e.result)?,
    })
}

/// One group per host, in the order hosts first appear; a single host is one group.
pub fn topology_by_host(hosts: &[String]) -> Result<Topology, HarnessError> {
    Ok(Topology::one_group_per_host(hosts)?)
}

/// Rank 0's side: results in, journal out, progress on stderr.
struct Collector {
    prepared: Prepared,
    journal: lgate_rundir::Journal,
    expected: usize,
    received: usize,
    intervals: Vec<(f64, f64)>,
    /// Per stage of a staged run: tests and the span from first start to last end.
    stages: Vec<(Stage, usize, f64, f64)>,
    /// The screening distances, resumed and new, for the follow-up's choice.
    screened: Vec<ScreenedPair>,
    progress: Progress,
    stop_after: Option<usize>,
}

impl Collector {
    fn new(
        mut prepared: Prepared,
        style: ProgressStyle,
        stop_after: Option<usize>,
    ) -> Result<Self, HarnessError> {
        let journal = prepared.run.journal()?;
        let meta = &prepared.meta;
        let dir = prepared.run.path();
        let resume = crate::interrupt::resume_command(&meta.launcher.kind, meta.ranks.len(), dir);
        crate::interrupt::arm(dir, &resume);
        if style != ProgressStyle::Quiet {
            // Said up front as well: a launcher that kills its ranks at once leaves rank 0 no
            // time to say it when interrupted.
            eprintln!(
                "measure: writing {}/ ({} ranks); if it is interrupted, continue it with: {resume}",
                dir.display(),
                meta.ranks.len()
            );
        }
        let resumed = prepared.resumed_tests();
        crate::interrupt::record(resumed, resumed);
        Ok(Collector {
            journal,
            screened: std::mem::take(&mut prepared.screened),
            prepared,
            expected: 0,
            received: 0,
            intervals: Vec::new(),
            stages: Vec::new(),
            progress: Progress::new(style),
            stop_after,
        })
    }

    /// Expects `more` results beyond those expected so far.
    fn expect(&mut self, more: usize) {
        self.expected += more;
        self.progress.set_total(self.expected as u64);
        self.record_for_interrupt();
    }

    /// Keeps the counts that an interrupted run reports up to date.
    fn record_for_interrupt(&self) {
        let resumed = self.prepared.resumed_tests();
        crate::interrupt::record(resumed + self.received, resumed + self.expected);
    }

    fn accept(&mut self, entry: JournalEntry) -> Result<(), HarnessError> {
        self.journal.append(&entry)?;
        self.intervals.push((entry.start_s, entry.end_s));
        if let Some(stage) = entry.stage {
            match self.stages.iter_mut().find(|s| s.0 == stage) {
                Some(s) => {
                    s.1 += 1;
                    s.2 = s.2.min(entry.start_s);
                    s.3 = s.3.max(entry.end_s);
                }
                None => self.stages.push((stage, 1, entry.start_s, entry.end_s)),
            }
            self.screened.extend(screened_pair(&entry));
        }
        self.received += 1;
        self.record_for_interrupt();
        self.progress.advance(self.received as u64, entry.stage);
        if self.stop_after == Some(self.received) {
            self.journal.sync()?;
            return Err(HarnessError::Setup(format!(
                "stopped after {} pairs, as --stop-after asked",
                self.received
            )));
        }
        Ok(())
    }

    fn drain(&mut self, t: &dyn Transport) -> Result<(), HarnessError> {
        while let Some((from, len)) = t.probe_any(Tag::RESULT)? {
            let mut buf = vec![0; len];
            t.recv(from, Tag::RESULT, &mut buf)?;
            let entry: JournalEntry =
                serde_json::from_slice(&buf).map_err(|e| TransportError::Protocol {
                    rank: 0,
                    message: format!("rank {from} sent a result that does not parse: {e}"),
                })?;
            self.accept(entry)?;
        }
        Ok(())
    }

    /// Waits, politely, until every expected result is in.
    fn collect_all(
        &mut self,
        t: &dyn Transport,
        clock: &mut RankClock,
    ) -> Result<(), HarnessError> {
        let mut wait = PoliteWait::new(t.wait_limit());
        while self.received < self.expected {
            collect(t, Some(self), clock)?;
            if self.received < self.expected {
                wait.pause(t, None, Tag::RESULT)?;
            }
        }
        Ok(())
    }

    fn finish(
        mut self,
        wall: Duration,
        rank_time: Vec<RankTime>,
    ) -> Result<RunReport, HarnessError> {
        self.journal.sync()?;
        self.progress.done();
        let wall_s = wall.as_secs_f64();
        let testing_s = union_length(&mut self.intervals);
        let journal = self.prepared.run.read_journal()?;
        let resumed_pairs = self.prepared.resumed_tests();
        let summary = RunSummary {
            pairs_measured: self.received,
            pairs_total: journal.entries.len(),
            wall_s,
            testing_s,
            overhead_share: RunSummary::overhead_share(wall_s, testing_s),
            rank_time,
            stages: {
                self.stages.sort_by_key(|s| s.0);
                self.stages
                    .iter()
                    .map(|&(stage, tests, start, end)| StageSummary {
                        stage,
                        tests,
                        wall_s: end - start,
                    })
                    .collect()
            },
        };
        // Re-deriving a finished run measures nothing: its record of the measuring stays.
        let mut parts = std::mem::take(&mut self.prepared.meta.parts);
        let (end, recorded) = match self.prepared.finished.take() {
            Some((end, Some(old))) if self.received == 0 => {
                parts.pop();
                (end, old)
            }
            _ => {
                let end = now_rfc3339();
                if let Some(last) = parts.last_mut() {
                    last.end = Some(end.clone());
                    last.pairs_measured = self.received;
                    last.wall_s = Some(wall_s);
                    last.testing_s = Some(testing_s);
                }
                let total = RunSummary::over_parts(&parts, summary.pairs_total, summary.clone());
                (Some(end), total)
            }
        };
        let meta = RunMeta {
            status: RunStatus::Complete,
            end,
            summary: Some(recorded),
            parts,
            ..self.prepared.meta
        };
        self.prepared.run.write_meta(&meta)?;
        Ok(RunReport {
            run_dir: self.prepared.run.path().to_path_buf(),
            summary,
            resumed_pairs,
        })
    }
}

/// The total length covered by a set of intervals.
fn union_length(intervals: &mut [(f64, f64)]) -> f64 {
    intervals.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut current: Option<(f64, f64)> = None;
    for &(s, e) in intervals.iter() {
        current = match current {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    if let Some((cs, ce)) = current {
        total += ce - cs;
    }
    total
}

/// Progress on stderr: a bar, or a plain line every few seconds.
enum Progress {
    Bar(indicatif::ProgressBar),
    Lines {
        total: u64,
        started: Instant,
        next: Duration,
    },
    Quiet,
}

impl Progress {
    /// The first line comes this long after the start (or at the first result after it).
    const FIRST_LINE: Duration = Duration::from_secs(2);
    /// Later lines come this often.
    const LINE_EVERY: Duration = Duration::from_secs(10);

    fn new(style: ProgressStyle) -> Self {
        match style {
            ProgressStyle::Quiet | ProgressStyle::None => Progress::Quiet,
            ProgressStyle::Bar => Self::bar(indicatif::ProgressDrawTarget::term_like_with_hz(
                // console's terminal writes its control codes whatever stderr is.
                Box::new(console::Term::stderr()),
                4,
            )),
            ProgressStyle::Auto if std::io::stderr().is_terminal() => {
                Self::bar(indicatif::ProgressDrawTarget::stderr())
            }
            ProgressStyle::Auto | ProgressStyle::Lines => Progress::Lines {
                total: 0,
                started: Instant::now(),
                next: Self::FIRST_LINE,
            },
        }
    }

    fn bar(target: indicatif::ProgressDrawTarget) -> Self {
        let bar = indicatif::ProgressBar::with_draw_target(Some(0), target);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "measure {msg}{bar:30} {pos}/{len} pairs  {per_sec}  ETA {eta}",
            )
            .expect("a valid template"),
        );
        Progress::Bar(bar)
    }

    fn set_total(&mut self, new_total: u64) {
        match self {
            Progress::Bar(bar) => bar.set_length(new_total),
            Progress::Lines { total, .. } => {
                // Said at once, so that a log shows the size of the job before its first line.
                if *total == 0 {
                    eprintln!("measure: {new_total} pair tests to run");
                } else if new_total > *total {
                    eprintln!(
                        "measure: {} more pair tests, {new_total} in all",
                        new_total - *total
                    );
                }
                *total = new_total;
            }
            Progress::Quiet => {}
        }
    }

    fn advance(&mut self, done: u64, stage: Option<Stage>) {
        let label = stage
            .map(|s| format!("stage {}, ", s.name()))
            .unwrap_or_default();
        match self {
            Progress::Bar(bar) => {
                bar.set_message(label.replace(", ", " "));
                bar.set_position(done)
            }
            Progress::Lines {
                total,
                started,
                next,
            } => {
                let elapsed = started.elapsed();
                if elapsed >= *next {
                    *next = elapsed + Self::LINE_EVERY;
                    let secs = elapsed.as_secs_f64();
                    let rate = done as f64 / secs.max(1e-9);
                    let eta = total.saturating_sub(done) as f64 / rate.max(1e-9);
                    eprintln!(
                        "measure: {label}{done}/{total} pairs ({:.0}%), {rate:.1} pairs/s, ETA {}",
                        100.0 * done as f64 / (*total).max(1) as f64,
                        humantime::format_duration(Duration::from_secs(eta.round() as u64))
                    );
                }
            }
            Progress::Quiet => {}
        }
    }

    fn done(&mut self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}

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
