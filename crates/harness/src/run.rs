//! Running a pair test over every pair of a job and recording it in a run directory.

use std::collections::HashSet;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use lgate_rundir::{
    JournalEntry, RankTime, RunDir, RunMeta, RunStatus, RunSummary, ScheduleInfo, TestInfo,
};
use lgate_topology::{format, Rank, Topology, TopologyFormat, TopologyNode};
use lgate_transport::{
    Activity, PoliteWait, RankClock, SubsetBarrier, Tag, TimeSplit, Transport, TransportError,
};
use serde::{Deserialize, Serialize};

use crate::pair_test::{PairTest, Role};
use crate::placement;
use crate::schedule::{Pair, Schedule, Step, SweepPair};
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
    /// A bar on a terminal, a line every few seconds otherwise.
    Auto,
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
    /// Per sweep, a bit per pair number `j (j - 1) / 2 + i`: measured already.
    done: Vec<Vec<u64>>,
    /// Per rank, its host and the one CPU it is bound to (see `placement::bound_cpus`).
    bound: Vec<Option<(usize, usize)>>,
    /// Per rank, whether its host may have more ranks testing at once than CPUs (see
    /// `placement::overcommitted`): its MPI waits always yield.
    overcommitted: Vec<bool>,
}

fn pair_number(p: Pair) -> usize {
    p.j * (p.j - 1) / 2 + p.i
}

/// Runs `test` over every pair of the job; every rank calls this. Rank 0 returns the report.
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

    let (plan, prepared) = if rank == 0 {
        let infos = infos.expect("rank 0 gathers");
        match prepare(t, test, options, infos) {
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

/// Every rank's part once the plan is known: the program, then the final barrier.
fn measure(
    t: &dyn Transport,
    test: &mut dyn PairTest,
    options: &RunOptions,
    prepared: Option<Prepared>,
    go: &Go,
) -> Result<Option<RunReport>, HarnessError> {
    let Go {
        seed,
        topology,
        done,
        bound,
        overcommitted,
    } = go;
    let (rank, size) = (t.rank(), t.size());
    let (topology, _) = format::parse(topology, Some(TopologyFormat::Json), Some(size))?;
    let schedule = Schedule::new(topology.tree(), size, *seed, options.fast)?;
    let done: HashSet<SweepPair> = (0..options.sweeps)
        .flat_map(|sweep| schedule.pairs().map(move |pair| SweepPair { sweep, pair }))
        .filter(|sp| {
            let n = pair_number(sp.pair);
            done.get(sp.sweep as usize)
                .and_then(|bits| bits.get(n / 64))
                .is_some_and(|w| w >> (n % 64) & 1 == 1)
        })
        .collect();

    let all: Vec<Rank> = (0..size).collect();
    let everyone = SubsetBarrier::new(&all, rank).expect("every rank is in the job");
    everyone.wait::<HarnessError>(t, u64::MAX - 1, &mut || Ok(()))?;
    let t0 = Instant::now();
    let mut clock = RankClock::start(t.cpu_scope());
    let mut yielding = false;
    let expected = schedule.pairs_per_sweep() * options.sweeps as usize - done.len();
    let mut collector = match prepared {
        Some(p) => Some(Collector::new(
            p,
            expected,
            options.progress,
            options.stop_after,
        )?),
        None => None,
    };

    for step in schedule.program(rank, options.sweeps, &done) {
        match step {
            Step::Barrier { members, id } => {
                let barrier = SubsetBarrier::new(members, rank).expect("rank is a member");
                barrier.wait(t, id, &mut || drain(t, collector.as_mut()))?;
            }
            Step::Test(sp) => {
                let role = if sp.pair.i == rank {
                    Role::Sender
                } else {
                    Role::Receiver
                };
                clock.charge(Activity::Waiting);
                // Two ranks bound to one CPU run by turns, and so do the ranks of a host with
                // more of them testing at once than CPUs: their MPI waits must yield.
                let by_turns = (bound.get(sp.pair.i).copied().flatten().is_some()
                    && bound.get(sp.pair.i) == bound.get(sp.pair.j))
                    || overcommitted.get(rank).copied().unwrap_or(false);
                if by_turns != yielding {
                    t.yield_when_idle(by_turns);
                    yielding = by_turns;
                }
                let start_s = t0.elapsed().as_secs_f64();
                let result = test.run(t, sp.pair, role)?;
                let end_s = t0.elapsed().as_secs_f64();
                clock.charge(Activity::Busy);
                if role == Role::Sender {
                    let entry = JournalEntry {
                        sweep: sp.sweep,
                        i: sp.pair.i,
                        j: sp.pair.j,
                        start_s,
                        end_s,
                        result,
                    };
                    match collector.as_mut() {
                        Some(c) => c.accept(entry)?,
                        None => {
                            let bytes = serde_json::to_vec(&entry).expect("entries serialise");
                            t.send_polite(0, Tag::RESULT, &bytes)?;
                        }
                    }
                }
            }
        }
    }
    if let Some(c) = collector.as_mut() {
        let mut wait = PoliteWait::new(t.wait_limit());
        while c.received < c.expected {
            c.drain(t)?;
            if c.received < c.expected {
                wait.pause(t, None, Tag::RESULT)?;
            }
        }
    }
    clock.charge(Activity::Waiting);
    let rank_time = rank_times(lgate_transport::gather_time_splits(t, clock.totals())?);
    everyone.wait(t, u64::MAX, &mut || drain(t, collector.as_mut()))?;
    match collector {
        Some(c) => c.finish(t0.elapsed(), rank_time).map(Some),
        None => Ok(None),
    }
}

/// Every rank's time (in rank order) as meta.json records it: busy is testing.
pub fn rank_times(splits: Vec<TimeSplit>) -> Vec<RankTime> {
    splits
        .into_iter()
        .enumerate()
        .map(|(rank, split)| RankTime {
            rank,
            waiting_s: split.waiting_s,
            waiting_cpu_s: split.waiting_cpu_s,
            testing_s: split.busy_s,
            testing_cpu_s: split.busy_cpu_s,
        })
        .collect()
}

fn drain(t: &dyn Transport, collector: Option<&mut Collector>) -> Result<(), HarnessError> {
    match collector {
        Some(c) => c.drain(t),
        None => Ok(()),
    }
}

/// Sends every rank's placement to rank 0, which returns them in rank order.
fn gather(
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

/// Sends rank 0's plan to every rank along a binomial tree (log2 P rounds).
fn broadcast(t: &dyn Transport, plan: Option<&Plan>) -> Result<Plan, HarnessError> {
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
    done: Vec<SweepPair>,
}

impl Prepared {
    fn plan(&self, size: usize) -> Plan {
        let words = (size * (size - 1) / 2).div_ceil(64);
        let mut done = vec![vec![0u64; words]; self.meta.schedule.sweeps as usize];
        for sp in &self.done {
            let n = pair_number(sp.pair);
            done[sp.sweep as usize][n / 64] |= 1 << (n % 64);
        }
        Plan::Go(Go {
            seed: self.meta.schedule.seed,
            topology: format::to_string(&self.topology, TopologyFormat::Json),
            done,
            bound: placement::bound_cpus(&self.meta.ranks),
            overcommitted: placement::overcommitted(
                &self.meta.ranks,
                &self.topology.tree().groups(),
            ),
        })
    }
}

fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// Rank 0: the topology, the seed, the run directory and what a resumed run already has.
fn prepare(
    t: &dyn Transport,
    test: &dyn PairTest,
    options: &RunOptions,
    infos: Vec<lgate_rundir::RankInfo>,
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
    let schedule = Schedule::new(topology.tree(), size, seed, options.fast)?;
    let mut mpi = std::collections::BTreeMap::new();
    mpi.insert(
        "library_version".to_string(),
        serde_json::Value::from(t.library_version()),
    );
    if let Some(settings) = t.library_settings() {
        mpi.insert("control_variables".to_string(), settings);
    }
    let test_info = TestInfo {
        name: test.name().to_string(),
        parameters: test.parameters(),
    };
    let schedule_info = ScheduleInfo {
        topology_source: options.topology.describe(),
        topology: serde_json::from_str(&format::to_string(&topology, TopologyFormat::Json))
            .expect("topology JSON parses"),
        sweeps: options.sweeps,
        seed,
        fast_fraction: options.fast,
        tested_ranks: schedule.tested_ranks(),
        pairs_per_sweep: schedule.pairs_per_sweep(),
    };
    let meta = RunMeta {
        mpi,
        launcher: placement::launcher(),
        system: placement::system(),
        ..RunMeta::started(
            options.tool.clone(),
            options.command_line.clone(),
            test_info,
            schedule_info,
            infos,
            now_rfc3339(),
        )
    };
    let (run, meta, done) = match previous {
        Some((old, run)) => {
            let differences = old.plan_differences(&meta);
            if !differences.is_empty() {
                return Err(HarnessError::Resume(format!(
                    "{}: cannot resume with other parameters: {}",
                    run.path().display(),
                    differences.join("; ")
                )));
            }
            let journal = run.read_journal()?;
            journal.repair(&run.file(lgate_rundir::JOURNAL_FILE))?;
            let valid: HashSet<SweepPair> = (0..options.sweeps)
                .flat_map(|sweep| schedule.pairs().map(move |pair| SweepPair { sweep, pair }))
                .collect();
            let mut done = Vec::new();
            for e in &journal.entries {
                let sp = SweepPair {
                    sweep: e.sweep,
                    pair: Pair::new(e.i, e.j),
                };
                if !valid.contains(&sp) {
                    return Err(HarnessError::Resume(format!(
                        "{}: the journal holds pair {}-{} of sweep {}, which this run does not schedule",
                        run.path().display(),
                        e.i,
                        e.j,
                        e.sweep
                    )));
                }
                done.push(sp);
            }
            let meta = RunMeta {
                start: old.start,
                ..meta
            };
            (run, meta, done)
        }
        None => (
            RunDir::create(&options.out, options.force)?,
            meta,
            Vec::new(),
        ),
    };
    run.write_meta(&meta)?;
    Ok(Prepared {
        run,
        meta,
        topology,
        done,
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
    progress: Progress,
    stop_after: Option<usize>,
}

impl Collector {
    fn new(
        prepared: Prepared,
        expected: usize,
        style: ProgressStyle,
        stop_after: Option<usize>,
    ) -> Result<Self, HarnessError> {
        Ok(Collector {
            journal: prepared.run.journal()?,
            prepared,
            expected,
            received: 0,
            intervals: Vec::with_capacity(expected),
            progress: Progress::new(style, expected as u64),
            stop_after,
        })
    }

    fn accept(&mut self, entry: JournalEntry) -> Result<(), HarnessError> {
        self.journal.append(&entry)?;
        self.intervals.push((entry.start_s, entry.end_s));
        self.received += 1;
        self.progress.advance(self.received as u64);
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
        let summary = RunSummary {
            pairs_measured: self.received,
            pairs_total: journal.entries.len(),
            wall_s,
            testing_s,
            overhead_share: if wall_s > 0.0 {
                (1.0 - testing_s / wall_s).max(0.0)
            } else {
                0.0
            },
            rank_time,
        };
        let meta = RunMeta {
            status: RunStatus::Complete,
            end: Some(now_rfc3339()),
            summary: Some(summary.clone()),
            ..self.prepared.meta
        };
        self.prepared.run.write_meta(&meta)?;
        Ok(RunReport {
            run_dir: self.prepared.run.path().to_path_buf(),
            summary,
            resumed_pairs: self.prepared.done.len(),
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

/// Progress on stderr: a bar on a terminal, a plain line every few seconds otherwise.
enum Progress {
    Bar(indicatif::ProgressBar),
    Lines {
        total: u64,
        started: Instant,
        last: Instant,
    },
    Quiet,
}

impl Progress {
    const LINE_EVERY: Duration = Duration::from_secs(10);

    fn new(style: ProgressStyle, total: u64) -> Self {
        match style {
            ProgressStyle::Quiet => Progress::Quiet,
            ProgressStyle::Auto if std::io::stderr().is_terminal() => {
                let bar = indicatif::ProgressBar::new(total);
                bar.set_style(
                    indicatif::ProgressStyle::with_template(
                        "measure {bar:30} {pos}/{len} pairs  {per_sec}  ETA {eta}",
                    )
                    .expect("a valid template"),
                );
                Progress::Bar(bar)
            }
            ProgressStyle::Auto => Progress::Lines {
                total,
                started: Instant::now(),
                last: Instant::now(),
            },
        }
    }

    fn advance(&mut self, done: u64) {
        match self {
            Progress::Bar(bar) => bar.set_position(done),
            Progress::Lines {
                total,
                started,
                last,
            } => {
                if last.elapsed() >= Self::LINE_EVERY {
                    *last = Instant::now();
                    let secs = started.elapsed().as_secs_f64();
                    let rate = done as f64 / secs.max(1e-9);
                    let eta = (*total - done) as f64 / rate.max(1e-9);
                    eprintln!(
                        "measure: {done}/{total} pairs ({:.0}%), {rate:.1} pairs/s, ETA {}",
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
