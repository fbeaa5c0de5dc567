//! Before measuring: the topology, the plan (full or staged), the run directory created or
//! reopened, and what a resumed run already holds.

use super::*;
use lgate_knobs::Knob;

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
pub(super) struct Prepared {
    pub(super) run: RunDir,
    pub(super) meta: RunMeta,
    pub(super) topology: Topology,
    /// The tests a resumed run has already: full plan.
    pub(super) done: Vec<SweepPair>,
    /// The tests a resumed run has already: staged plan.
    pub(super) staged_done: Vec<StagedTest>,
    /// The screening distances a resumed run has already.
    pub(super) screened: ScreenedValues,
    /// The staged plan's choices for this machine.
    pub(super) staged: Option<StagedOptions>,
    /// A finished run's end and summary, kept when resuming it measures nothing more.
    pub(super) finished: Option<(Option<String>, Option<RunSummary>)>,
    /// How the journal is written: a resumed run's own format, else the one asked for.
    pub(super) journal: lgate_rundir::JournalFormat,
}

impl Prepared {
    pub(super) fn plan(&self, size: usize) -> Plan {
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
        Plan::Go(Box::new(Go {
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
            relays: relay::relays(&self.meta.ranks),
            journal: self.journal,
        }))
    }

    pub(super) fn resumed_tests(&self) -> usize {
        self.done.len() + self.staged_done.len()
    }
}

pub(super) fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// What a plan schedules, as rank 0 checks a journal against it.
pub(super) enum Scheduled {
    Full(HashSet<SweepPair>),
    Staged(HashSet<StagedTest>),
}

/// Rank 0: the topology, the seed, the run directory and what a resumed run already has.
pub(super) fn prepare(
    t: &dyn Transport,
    test: &dyn AnyPairTest,
    options: &RunOptions,
    infos: Vec<lgate_rundir::RankInfo>,
    host_facts: Vec<lgate_rundir::HostFacts>,
) -> Result<Prepared, HarnessError> {
    let size = t.size();
    lgate_stats::check_sweeps(options.sweeps).map_err(|source| HarnessError::Count {
        field: "sweeps",
        source,
    })?;
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
    let test_info = test.info();
    let PlanOf {
        pairs_per_sweep,
        tested_ranks,
        info: plan_info,
        scheduled,
        settled,
    } = plan_of(options, &topology, &infos, size, seed)?;
    let schedule_info = ScheduleInfo {
        topology_source: options.topology.describe(),
        topology: Some(topology.clone()),
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
    // A resumed run goes on in its journal's format; a new one has none yet.
    let journal = run.journal_format().unwrap_or(options.journal);
    let mut prepared = Prepared {
        run,
        meta,
        topology,
        done: Vec::new(),
        staged_done: Vec::new(),
        screened: ScreenedValues::default(),
        staged: settled,
        finished: None,
        journal,
    };
    if let (Some(old), Some(scheduled)) = (previous, scheduled) {
        resume(&mut prepared, old, &scheduled, options.sweeps, size)?;
    }
    prepared.run.write_meta(&prepared.meta)?;
    Ok(prepared)
}

/// The plan of a run: its tests per sweep, the ranks it tests, what meta.json records of it,
/// the tests a resumed run may hold, and a staged plan's settled choices.
struct PlanOf {
    pairs_per_sweep: usize,
    tested_ranks: Vec<usize>,
    info: Option<PlanInfo>,
    scheduled: Option<Scheduled>,
    settled: Option<StagedOptions>,
}

/// The full or staged plan `options` ask for, over `size` ranks placed as `topology` and `infos`.
fn plan_of(
    options: &RunOptions,
    topology: &Topology,
    infos: &[lgate_rundir::RankInfo],
    size: usize,
    seed: u64,
) -> Result<PlanOf, HarnessError> {
    Ok(match &options.plan {
        PlanKind::Full => {
            let schedule = Schedule::new(topology.tree(), size, seed, options.fast)?;
            let valid = options.resume.then(|| {
                (0..options.sweeps)
                    .flat_map(|sweep| schedule.pairs().map(move |pair| SweepPair { sweep, pair }))
                    .collect()
            });
            PlanOf {
                pairs_per_sweep: schedule.pairs_per_sweep(),
                tested_ranks: schedule.tested_ranks(),
                info: None,
                scheduled: valid.map(Scheduled::Full),
                settled: None,
            }
        }
        PlanKind::Staged(staged) => {
            if options.fast.is_some() {
                return Err(HarnessError::Setup(format!(
                    "{} applies to {} full; the staged plan already samples the pairs between \
                     hosts",
                    Knob::Fast,
                    Knob::Plan
                )));
            }
            let (choices, notes) = settle_staged(&staged.plan, infos, topology);
            let plan = StagedPlan::new(topology.tree(), size, seed, &choices)?;
            let screen = staged.screening_test()?;
            let (inside, between) = plan.screening_tests_per_sweep();
            let info = PlanInfo {
                name: "staged".into(),
                parameters: choices.clone(),
                screen: screen.info(),
                screening_tests: [inside, between],
                notes,
            };
            let valid = options
                .resume
                .then(|| plan.screening_tests(options.sweeps).collect());
            PlanOf {
                pairs_per_sweep: inside + between,
                tested_ranks: (0..size).collect(),
                info: Some(info),
                scheduled: valid.map(Scheduled::Staged),
                settled: Some(choices),
            }
        }
    })
}

/// What a resumed run already holds, taken into `prepared` from its journal and its old
/// meta.json `old` (each entry checked against the tests `scheduled` in `sweeps` sweeps of
/// `size` ranks); an error when the parameters, the placement or the journal disagree.
fn resume(
    prepared: &mut Prepared,
    old: RunMeta,
    scheduled: &Scheduled,
    sweeps: u32,
    size: usize,
) -> Result<(), HarnessError> {
    let run = &prepared.run;
    let differences = old.plan_differences(&prepared.meta);
    if !differences.is_empty() {
        return Err(HarnessError::ResumeParameters {
            run: run.path().to_path_buf(),
            differences,
        });
    }
    if let Some(moved) = old.placement_difference(&prepared.meta) {
        return Err(HarnessError::Resume(format!(
            "{}: cannot resume with the ranks placed otherwise: {moved}; launch it as the run \
             was{}",
            run.path().display(),
            old.launcher
                .command_line
                .as_deref()
                .map(|line| format!(" (`{line}`)"))
                .unwrap_or_default()
        )));
    }
    let path = run.journal_file();
    let unscheduled = |e: &JournalEntry| {
        HarnessError::Resume(format!(
            "{}: the journal holds pair {}-{} of sweep {}{}, which this run does not schedule",
            run.path().display(),
            e.i,
            e.j,
            e.sweep,
            e.stage
                .map(|s| format!(" (stage {})", s.name()))
                .unwrap_or_default()
        ))
    };
    // One entry in memory at a time: a large run's journal holds millions.
    let (done, staged_done, screened) = (
        &mut prepared.done,
        &mut prepared.staged_done,
        &mut prepared.screened,
    );
    let journal = lgate_rundir::for_each_journal_entry(&path, |entry| {
        let e = &entry;
        if e.i >= e.j || e.j >= size {
            return Err(unscheduled(e));
        }
        let test = SweepPair {
            sweep: e.sweep,
            pair: Pair::new(e.i, e.j),
        };
        match (scheduled, e.stage) {
            (Scheduled::Full(valid), None) if valid.contains(&test) => done.push(test),
            (Scheduled::Staged(valid), Some(stage)) => {
                let t = StagedTest { stage, test };
                let follow_up = matches!(stage, Stage::Refine | Stage::Alone | Stage::Sample);
                if !(valid.contains(&t) || follow_up && e.sweep < sweeps) {
                    return Err(unscheduled(e));
                }
                staged_done.push(t);
                screened.extend(screened_pair(e));
            }
            _ => return Err(unscheduled(e)),
        }
        Ok(())
    })?;
    journal.repair(&path)?;
    let in_journal = prepared.resumed_tests();
    let recorded = old.recorded_tests();
    if in_journal < recorded {
        return Err(HarnessError::Resume(format!(
            "{}: meta.json records {recorded} tests measured but {} holds {in_journal}: \
             resuming would measure the missing ones again as if new; put the journal back, \
             or measure again with {}",
            run.path().display(),
            path.display(),
            Knob::Force
        )));
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
    Ok(())
}

/// The staged plan's choices for this machine, and why they differ from `plan`: groups that
/// share one machine's CPUs test at most half its CPUs' pairs at once (unless the user chose);
/// a note too when `--sweep` has no pairs between hosts to sweep.
pub(crate) fn settle_staged(
    plan: &StagedOptions,
    infos: &[lgate_rundir::RankInfo],
    topology: &Topology,
) -> (StagedOptions, Vec<String>) {
    let mut choices = plan.clone();
    let mut notes = Vec::new();
    if plan.sweep && topology.tree().sorted_groups().len() < 2 {
        notes.push(format!(
            "{}: the job is on one host, so there are no pairs between hosts to sweep (the pairs \
             inside it are screened as always)",
            Knob::Sweep
        ));
    }
    if choices.concurrency.is_none() {
        let groups = topology.tree().sorted_groups();
        if let Some((n, why)) = placement::shared_machine_concurrency(infos, &groups) {
            choices.concurrency = Some(n);
            notes.push(format!("{} {n}: {why}", Knob::Concurrency));
        }
    }
    (choices, notes)
}

/// A screening stage's entry as rank 0 keeps it to choose the follow-up.
pub(super) fn screened_pair(e: &JournalEntry) -> Option<ScreenedPair> {
    let stage = e
        .stage
        .filter(|s| matches!(s, Stage::Hosts | Stage::Between))?;
    ScreenedPair::of(stage, Pair::new(e.i, e.j), e.result.pingpong()?)
}

/// One group per host, in the order hosts first appear; a single host is one group.
pub fn topology_by_host(hosts: &[String]) -> Result<Topology, HarnessError> {
    Ok(Topology::one_group_per_host(hosts)?)
}
