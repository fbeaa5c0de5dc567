//! Whole harness runs on the in-process transport.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lgate_harness::{
    run, AnyPairTest, HarnessError, InProcessWorld, Pair, PairTest, ProgressStyle, Role,
    RunOptions, Summary, TopologySource, Transport, TransportError,
};
use lgate_rundir::{PingPongResult, RoundTrips, RunDir, RunStatus};

/// When each rank was inside which test.
#[derive(Debug, Clone, Copy)]
struct Interval {
    rank: usize,
    pair: Pair,
    start: Instant,
    end: Instant,
}

/// A test that holds both ranks for a while and records when; optionally fails on one pair.
#[derive(Clone)]
struct Recorder {
    hold: Duration,
    log: Arc<Mutex<Vec<Interval>>>,
    fail_on: Option<Pair>,
}

impl Recorder {
    fn new(hold: Duration) -> Self {
        Recorder {
            hold,
            log: Arc::new(Mutex::new(Vec::new())),
            fail_on: None,
        }
    }
}

impl PairTest for Recorder {
    type Parameters = lgate_rundir::PingPongParameters;
    type Record = PingPongResult;
    /// A ping-pong of no bytes, once, as far as meta.json is told.
    fn parameters(&self) -> lgate_rundir::PingPongParameters {
        lgate_rundir::PingPongParameters {
            sizes: vec![0],
            reps: 1,
        }
    }
    fn test(
        &mut self,
        t: &dyn Transport,
        pair: Pair,
        role: Role,
    ) -> Result<Option<PingPongResult>, TransportError> {
        if self.fail_on == Some(pair) && role == Role::Sender {
            return Err(TransportError::Protocol {
                rank: t.rank(),
                message: "simulated crash".into(),
            });
        }
        let start = Instant::now();
        // A real exchange, so the two ranks meet.
        let peer = if role == Role::Sender { pair.j } else { pair.i };
        if role == Role::Sender {
            t.send(peer, lgate_harness::Tag::TEST, b"ping")?;
            t.recv_vec(peer, lgate_harness::Tag::TEST)?;
        } else {
            t.recv_vec(peer, lgate_harness::Tag::TEST)?;
            t.send(peer, lgate_harness::Tag::TEST, b"pong")?;
        }
        std::thread::sleep(self.hold);
        self.log.lock().unwrap().push(Interval {
            rank: t.rank(),
            pair,
            start,
            end: Instant::now(),
        });
        // The sender's result: a round trip of no bytes, the hold.
        Ok((role == Role::Sender).then(|| {
            let s = self.hold.as_secs_f64();
            let rtt = Summary::of(&[s]).expect("one sample");
            PingPongResult {
                sizes: vec![RoundTrips { size: 0, rtt }],
            }
        }))
    }
}

fn options(out: &Path, topology: TopologySource) -> RunOptions {
    RunOptions {
        topology,
        seed: Some(11),
        progress: ProgressStyle::Quiet,
        ..RunOptions::new(out)
    }
}

fn journal_pairs(dir: &Path) -> Vec<(u32, usize, usize)> {
    let read = RunDir::open(dir).unwrap().read_journal().unwrap();
    let mut v: Vec<_> = read.entries.iter().map(|e| (e.sweep, e.i, e.j)).collect();
    v.sort();
    v
}

fn all_pairs(n: usize, sweeps: u32) -> Vec<(u32, usize, usize)> {
    let mut v = Vec::new();
    for s in 0..sweeps {
        for i in 0..n {
            for j in i + 1..n {
                v.push((s, i, j));
            }
        }
    }
    v
}

fn write_topology(dir: &Path, text: &str) -> TopologySource {
    let path = dir.join("topology.lgate");
    std::fs::write(&path, text).unwrap();
    TopologySource::File(path)
}

#[test]
fn every_pair_once_per_sweep_and_meta_complete() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let mut opts = options(&out, TopologySource::None);
    opts.sweeps = 2;
    let test = Recorder::new(Duration::ZERO);
    let reports = InProcessWorld::new(5).run(|t| run(&t, &mut test.clone(), &opts).unwrap());
    assert!(
        reports[1..].iter().all(Option::is_none),
        "only rank 0 reports"
    );
    let report = reports[0].as_ref().unwrap();
    assert_eq!(report.summary.pairs_measured, 20);
    assert_eq!(journal_pairs(&out), all_pairs(5, 2));
    let meta = RunDir::open(&out).unwrap().read_meta().unwrap();
    assert_eq!(meta.status, RunStatus::Complete);
    assert_eq!(meta.ranks.len(), 5);
    assert!(meta
        .ranks
        .iter()
        .enumerate()
        .all(|(k, r)| r.rank == k && r.host == "localhost"));
    assert_eq!(meta.schedule.seed, 11);
    assert_eq!(meta.schedule.pairs_per_sweep, 10);
    assert_eq!(meta.test, AnyPairTest::info(&test));
    assert!(meta.end.is_some() && meta.summary.is_some());
}

#[test]
fn concurrent_tests_never_share_a_rank_and_leaves_overlap() {
    let dir = tempfile::tempdir().unwrap();
    // Three levels: two clusters of two leaves each.
    let topology = write_topology(
        dir.path(),
        "cluster {\n cluster { group { 0-2 } group { 3-5 } }\n cluster { group { 6-8 } group { 9-11 } }\n}",
    );
    let opts = options(&dir.path().join("run"), topology);
    let test = Recorder::new(Duration::from_millis(15));
    InProcessWorld::new(12).run(|t| run(&t, &mut test.clone(), &opts).unwrap());
    assert_eq!(journal_pairs(&dir.path().join("run")), all_pairs(12, 1));
    let log = test.log.lock().unwrap().clone();
    assert_eq!(log.len(), 2 * 66, "both ranks of every pair");

    // A rank is never in two tests at once.
    for rank in 0..12 {
        let mut mine: Vec<_> = log.iter().filter(|iv| iv.rank == rank).collect();
        mine.sort_by_key(|iv| iv.start);
        for w in mine.windows(2) {
            assert!(
                w[0].end <= w[1].start,
                "rank {rank}: {:?} overlaps {:?}",
                w[0].pair,
                w[1].pair
            );
        }
    }
    // Tests inside different leaves ran at the same time.
    let leaf = |r: usize| r / 3;
    let intra: Vec<_> = log
        .iter()
        .filter(|iv| iv.rank == iv.pair.i && leaf(iv.pair.i) == leaf(iv.pair.j))
        .collect();
    let overlapping_leaves: BTreeSet<(usize, usize)> = intra
        .iter()
        .flat_map(|a| intra.iter().map(move |b| (a, b)))
        .filter(|(a, b)| leaf(a.pair.i) < leaf(b.pair.i) && a.start < b.end && b.start < a.end)
        .map(|(a, b)| (leaf(a.pair.i), leaf(b.pair.i)))
        .collect();
    assert_eq!(
        overlapping_leaves.len(),
        6,
        "every two of the 4 leaves overlap: {overlapping_leaves:?}"
    );
    // The two clusters' cross-leaf pairs also ran at the same time.
    let cross = |iv: &&Interval| {
        iv.rank == iv.pair.i && leaf(iv.pair.i) != leaf(iv.pair.j) && iv.pair.j < 12
    };
    let left: Vec<_> = log
        .iter()
        .filter(cross)
        .filter(|iv| iv.pair.j < 6)
        .collect();
    let right: Vec<_> = log
        .iter()
        .filter(cross)
        .filter(|iv| iv.pair.i >= 6)
        .collect();
    assert!(left
        .iter()
        .any(|a| right.iter().any(|b| a.start < b.end && b.start < a.end)));
    // Within one leaf, one pair at a time.
    for l in 0..4 {
        let mut mine: Vec<_> = intra.iter().filter(|iv| leaf(iv.pair.i) == l).collect();
        mine.sort_by_key(|iv| iv.start);
        for w in mine.windows(2) {
            assert!(w[0].end <= w[1].start, "leaf {l} ran two pairs at once");
        }
    }
}

#[test]
fn fast_mode_tests_the_recorded_share() {
    let dir = tempfile::tempdir().unwrap();
    let topology = write_topology(dir.path(), "cluster { group { 0-9 } group { 10-19 } }");
    let mut opts = options(&dir.path().join("run"), topology);
    opts.fast = Some(0.4);
    let test = Recorder::new(Duration::ZERO);
    InProcessWorld::new(20).run(|t| run(&t, &mut test.clone(), &opts).unwrap());
    let meta = RunDir::open(&dir.path().join("run"))
        .unwrap()
        .read_meta()
        .unwrap();
    let tested = &meta.schedule.tested_ranks;
    assert_eq!(tested.len(), 8);
    assert_eq!(tested.iter().filter(|&&r| r < 10).count(), 4);
    let pairs = journal_pairs(&dir.path().join("run"));
    assert_eq!(pairs.len(), 28);
    assert!(pairs
        .iter()
        .all(|&(_, i, j)| tested.contains(&i) && tested.contains(&j)));
}

#[test]
fn resume_after_a_crash_gives_the_same_pair_set() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let opts = options(&out, TopologySource::None);
    let world = || InProcessWorld::new(6).with_timeout(Duration::from_secs(3));

    let mut crashing = Recorder::new(Duration::ZERO);
    crashing.fail_on = Some(Pair::new(2, 4));
    let results = world().run(|t| run(&t, &mut crashing.clone(), &opts));
    assert!(results.iter().any(Result::is_err), "the run stopped");
    let partial = journal_pairs(&out);
    assert!(
        !partial.is_empty() && partial.len() < 15,
        "{} pairs before the crash",
        partial.len()
    );
    // A torn last record, as a kill mid-write leaves: 200 bytes said, 2 there.
    let journal = out.join(lgate_rundir::JOURNAL_FILE);
    let mut bytes = std::fs::read(&journal).unwrap();
    bytes.extend_from_slice(&[200, 1, 0x10, 0]);
    std::fs::write(&journal, bytes).unwrap();
    let meta = RunDir::open(&out).unwrap().read_meta().unwrap();
    assert_eq!(meta.status, RunStatus::Running);

    // Resuming with other parameters is refused.
    let mut other = opts.clone();
    other.resume = true;
    other.seed = Some(12);
    let refused = world().run(|t| run(&t, &mut Recorder::new(Duration::ZERO), &other));
    let msg = match &refused[0] {
        Err(e @ HarnessError::ResumeParameters { .. }) => e.to_string(),
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert!(msg.contains("seed: 11 in the run, 12 now"), "{msg}");
    assert!(matches!(refused[1], Err(HarnessError::Aborted)));

    let mut resume = opts.clone();
    resume.resume = true;
    resume.seed = None;
    let test = Recorder::new(Duration::ZERO);
    let reports = world().run(|t| run(&t, &mut test.clone(), &resume).unwrap());
    let report = reports[0].as_ref().unwrap();
    assert_eq!(report.resumed_pairs, partial.len());
    assert_eq!(report.summary.pairs_measured, 15 - partial.len());
    assert_eq!(
        journal_pairs(&out),
        all_pairs(6, 1),
        "every pair once, none twice"
    );
    // Pairs measured before the crash were not measured again.
    let again: BTreeSet<Pair> = test.log.lock().unwrap().iter().map(|iv| iv.pair).collect();
    assert!(partial
        .iter()
        .all(|&(_, i, j)| !again.contains(&Pair::new(i, j))));
    assert_eq!(
        RunDir::open(&out).unwrap().read_meta().unwrap().status,
        RunStatus::Complete
    );
}

#[test]
fn setup_errors_stop_every_rank() {
    let dir = tempfile::tempdir().unwrap();
    let topology = write_topology(dir.path(), "cluster { group { 0-2 } group { 3 } }");
    let opts = options(&dir.path().join("run"), topology);
    let results =
        InProcessWorld::new(6).run(|t| run(&t, &mut Recorder::new(Duration::ZERO), &opts));
    let err = results[0].as_ref().unwrap_err().to_string();
    assert!(err.contains("leaves out ranks 4,5"), "{err}");
    assert!(results[1..]
        .iter()
        .all(|r| matches!(r, Err(HarnessError::Aborted))));

    let one = InProcessWorld::new(1).run(|t| run(&t, &mut Recorder::new(Duration::ZERO), &opts));
    assert!(one[0]
        .as_ref()
        .unwrap_err()
        .to_string()
        .contains("at least 2 ranks"));

    // An existing run is not overwritten.
    let opts = options(&dir.path().join("run2"), TopologySource::None);
    InProcessWorld::new(2).run(|t| run(&t, &mut Recorder::new(Duration::ZERO), &opts).unwrap());
    let again = InProcessWorld::new(2).run(|t| run(&t, &mut Recorder::new(Duration::ZERO), &opts));
    assert!(again[0]
        .as_ref()
        .unwrap_err()
        .to_string()
        .contains("already holds a run"));
}

#[test]
fn auto_topology_groups_ranks_by_host() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options(&dir.path().join("run"), TopologySource::Auto);
    let hosts = ["n1", "n1", "n1", "n2", "n2", "n2"]
        .map(String::from)
        .to_vec();
    let test = Recorder::new(Duration::from_millis(10));
    InProcessWorld::new(6)
        .with_hosts(hosts)
        .run(|t| run(&t, &mut test.clone(), &opts).unwrap());
    let meta = RunDir::open(&dir.path().join("run"))
        .unwrap()
        .read_meta()
        .unwrap();
    assert_eq!(meta.schedule.topology_source, "auto");
    let topology = meta.schedule.topology.expect("a topology");
    assert_eq!(topology.tree().sorted_groups()[1], [3, 4, 5]);
    assert_eq!(topology.labels().expect("host labels")[3], "n2");
    let log = test.log.lock().unwrap().clone();
    let on =
        |iv: &&Interval, h: usize| iv.rank == iv.pair.i && iv.pair.i / 3 == h && iv.pair.j / 3 == h;
    let n1: Vec<_> = log.iter().filter(|iv| on(iv, 0)).collect();
    let n2: Vec<_> = log.iter().filter(|iv| on(iv, 1)).collect();
    assert!(
        n1.iter()
            .any(|a| n2.iter().any(|b| a.start < b.end && b.start < a.end)),
        "hosts in parallel"
    );
}
