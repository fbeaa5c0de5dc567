//! Staged runs (`measure --plan staged`) on the in-process transport.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lgate_harness::{
    run, InProcessWorld, Pair, PairTest, PlanKind, ProgressStyle, Role, RunOptions,
    StagedPlanOptions, TopologySource, Transport, TransportError,
};
use lgate_rundir::{RunDir, RunStatus, Stage};

/// A full test that records the pairs it ran for.
#[derive(Clone, Default)]
struct Full {
    pairs: Arc<Mutex<Vec<Pair>>>,
}

impl PairTest for Full {
    type Parameters = lgate_rundir::PLogPOptions;
    type Record = lgate_rundir::PairMeasurement;
    fn parameters(&self) -> lgate_rundir::PLogPOptions {
        lgate_rundir::PLogPOptions::new(0)
    }
    fn test(
        &mut self,
        t: &dyn Transport,
        pair: Pair,
        role: Role,
    ) -> Result<Option<lgate_rundir::PairMeasurement>, TransportError> {
        let peer = if role == Role::Sender { pair.j } else { pair.i };
        if role == Role::Sender {
            t.send(peer, lgate_harness::Tag::TEST, b"full")?;
            t.recv_vec(peer, lgate_harness::Tag::TEST)?;
            self.pairs.lock().unwrap().push(pair);
            Ok(Some(lgate_rundir::PairMeasurement {
                clock_overhead_s: 0.0,
                sizes: Vec::new(),
            }))
        } else {
            t.recv_vec(peer, lgate_harness::Tag::TEST)?;
            t.send(peer, lgate_harness::Tag::TEST, b"done")?;
            Ok(None)
        }
    }
}

fn staged(out: &Path, topology: TopologySource) -> RunOptions {
    RunOptions {
        topology,
        seed: Some(5),
        progress: ProgressStyle::Quiet,
        plan: PlanKind::Staged(StagedPlanOptions {
            screen_sizes: vec![0, 4096],
            screen_reps: 4,
            ..StagedPlanOptions::default()
        }),
        judge: Some(&lgate_cluster::ScreenedJudge),
        ..RunOptions::new(out)
    }
}

type Key = (Stage, u32, usize, usize);

fn journal(dir: &Path) -> Vec<Key> {
    let read = RunDir::open(dir).unwrap().read_journal().unwrap();
    let mut v: Vec<Key> = read
        .entries
        .iter()
        .map(|e| (e.stage.expect("a staged entry"), e.sweep, e.i, e.j))
        .collect();
    v.sort();
    v
}

fn count(keys: &[Key], stage: Stage) -> usize {
    keys.iter().filter(|k| k.0 == stage).count()
}

const TOPOLOGY: &str = "cluster { group { 0-3 } group { 4-7 } group { 8-11 } }";

#[test]
fn stages_screen_inside_and_between_then_sample() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.lgate");
    std::fs::write(&path, TOPOLOGY).unwrap();
    let out = dir.path().join("run");
    let opts = staged(&out, TopologySource::File(path));
    let full = Full::default();
    let reports = InProcessWorld::new(12).run(|t| run(&t, &mut full.clone(), &opts).unwrap());
    let keys = journal(&out);
    assert_eq!(
        count(&keys, Stage::Hosts),
        3 * 6,
        "every pair inside a group"
    );
    assert_eq!(
        count(&keys, Stage::Between),
        3 * 4,
        "K = 4 per pair of groups"
    );
    let group = |r: usize| r / 4;
    assert!(keys
        .iter()
        .filter(|k| k.0 == Stage::Hosts)
        .all(|k| group(k.2) == group(k.3)));
    assert!(keys
        .iter()
        .filter(|k| k.0 == Stage::Between)
        .all(|k| group(k.2) != group(k.3)));
    // The sample: 3 inside, 3 between and the slowest between (maybe one of those).
    let sampled = count(&keys, Stage::Sample);
    assert!((6..=7).contains(&sampled), "{sampled} sampled");
    let kinds: BTreeSet<bool> = keys
        .iter()
        .filter(|k| k.0 == Stage::Sample)
        .map(|k| group(k.2) == group(k.3))
        .collect();
    assert_eq!(kinds.len(), 2, "sampled inside and between groups");
    assert_eq!(
        full.pairs.lock().unwrap().len(),
        sampled,
        "full test only there"
    );
    assert_eq!(count(&keys, Stage::Alone), 8);
    let unique: BTreeSet<&Key> = keys.iter().collect();
    assert_eq!(unique.len(), keys.len(), "no test twice");

    let meta = RunDir::open(&out).unwrap().read_meta().unwrap();
    assert_eq!(meta.status, RunStatus::Complete);
    let plan = meta.schedule.plan.as_ref().expect("the plan is recorded");
    assert_eq!(plan.name, "staged");
    assert_eq!(plan.screening_tests, [18, 12]);
    let summary = meta.summary.unwrap();
    let stages: Vec<Stage> = summary.stages.iter().map(|s| s.stage).collect();
    let ran: Vec<Stage> = Stage::ALL
        .into_iter()
        .filter(|&s| count(&keys, s) > 0)
        .collect();
    assert_eq!(stages, ran);
    for s in [Stage::Hosts, Stage::Between, Stage::Alone, Stage::Sample] {
        assert!(stages.contains(&s), "{s:?}");
    }
    let report = reports[0].as_ref().unwrap();
    assert_eq!(report.summary.pairs_measured, keys.len());
}

#[test]
fn a_killed_staged_run_resumes_with_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.lgate");
    std::fs::write(&path, TOPOLOGY).unwrap();
    let reference = dir.path().join("reference");
    let world = || InProcessWorld::new(12).with_timeout(Duration::from_secs(5));
    world().run(|t| {
        run(
            &t,
            &mut Full::default(),
            &staged(&reference, TopologySource::File(path.clone())),
        )
        .unwrap()
    });
    let expected = journal(&reference);
    // Killed inside stage 2, then inside stage 4: each resume measures only what is missing.
    for stop in [22, 40] {
        let out = dir.path().join(format!("run-{stop}"));
        let mut opts = staged(&out, TopologySource::File(path.clone()));
        opts.stop_after = Some(stop);
        let results = world().run(|t| run(&t, &mut Full::default(), &opts));
        assert!(results.iter().any(Result::is_err), "stopped at {stop}");
        let partial = journal(&out);
        assert_eq!(partial.len(), stop);
        let mut resume = staged(&out, TopologySource::File(path.clone()));
        resume.resume = true;
        let reports = world().run(|t| run(&t, &mut Full::default(), &resume).unwrap());
        let report = reports[0].as_ref().unwrap();
        assert_eq!(report.resumed_pairs, stop);
        let keys = journal(&out);
        // The follow-up depends on the values measured (refinement, the sample), so the
        // resumed run's size is its own journal's.
        assert_eq!(report.summary.pairs_measured, keys.len() - stop);
        // The record keeps both parts: the killed one (its tests from the journal, no end)
        // and the resume; the totals are over both.
        let meta = RunDir::open(&out).unwrap().read_meta().unwrap();
        assert_eq!(meta.parts.len(), 2, "{:?}", meta.parts);
        assert_eq!(meta.parts[0].pairs_measured, stop);
        assert_eq!(meta.parts[0].end, None);
        assert_eq!(meta.parts[1].pairs_measured, keys.len() - stop);
        assert!(meta.parts[1].end.is_some() && meta.parts[1].wall_s.is_some());
        let total = meta.summary.as_ref().unwrap();
        assert_eq!(total.pairs_measured, keys.len());
        assert_eq!(total.pairs_total, keys.len());
        assert_eq!(meta.start, meta.parts[0].start);
        let unique: BTreeSet<&Key> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len(), "nothing measured twice");
        // The same tests as an uninterrupted run, for the stages the seed fixes; the
        // follow-up is chosen from measured values, so only its size is compared.
        let fixed = |k: &[Key]| -> Vec<Key> {
            k.iter()
                .filter(|x| matches!(x.0, Stage::Hosts | Stage::Between))
                .copied()
                .collect()
        };
        assert_eq!(fixed(&keys), fixed(&expected));
        assert_eq!(count(&keys, Stage::Alone), count(&expected, Stage::Alone));
    }
}

#[test]
fn resuming_a_finished_run_keeps_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.lgate");
    std::fs::write(&path, TOPOLOGY).unwrap();
    let out = dir.path().join("run");
    let opts = staged(&out, TopologySource::File(path.clone()));
    InProcessWorld::new(12).run(|t| run(&t, &mut Full::default(), &opts).unwrap());
    let before = RunDir::open(&out).unwrap().read_meta().unwrap();
    let mut resume = staged(&out, TopologySource::File(path));
    resume.resume = true;
    let reports = InProcessWorld::new(12).run(|t| run(&t, &mut Full::default(), &resume).unwrap());
    assert_eq!(reports[0].as_ref().unwrap().summary.pairs_measured, 0);
    let after = RunDir::open(&out).unwrap().read_meta().unwrap();
    assert_eq!(
        after.summary, before.summary,
        "the measuring's record stays"
    );
    assert_eq!(after.end, before.end);
    assert_eq!(after.status, RunStatus::Complete);
    assert_eq!(after.parts, before.parts, "re-deriving adds no part");
    assert_eq!(before.parts.len(), 1);
    assert_eq!(
        before.parts[0].pairs_measured,
        before.summary.as_ref().unwrap().pairs_measured
    );
}
