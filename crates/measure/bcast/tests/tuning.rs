//! The benchmark over the in-process transport: every candidate timed and checked, the
//! decision table built from it, written, read back and applied.

use std::time::Duration;

use lgate_bcast::bench::payload;
use lgate_bcast::{
    bench, broadcast_tuned, parse_candidate, prune_to_depth, BaseAlgorithm, BenchOptions,
    BroadcastTable, Candidate, Plan, Tuning,
};
use lgate_topology::TopologyNode;
use lgate_transport::{InProcessWorld, Transport};

fn tree() -> TopologyNode {
    TopologyNode::cluster(vec![
        TopologyNode::group(vec![0, 1]),
        TopologyNode::group(vec![2, 3]),
        TopologyNode::group(vec![4]),
    ])
}

#[test]
fn bench_times_every_candidate_and_the_table_applies() {
    let world = InProcessWorld::new(5);
    let mut candidates: Vec<Candidate> = BaseAlgorithm::all(&[3])
        .into_iter()
        .map(|a| Candidate::Plan(Plan::Flat(a)))
        .collect();
    candidates.push(Candidate::Plan(Plan::Magpie {
        tree: tree(),
        between: BaseAlgorithm::Flat,
        inside: BaseAlgorithm::Binomial,
    }));
    // The in-process transport has no library broadcast: that candidate is left out.
    candidates.push(Candidate::Library);
    let options = BenchOptions {
        sizes: vec![0, 5, 100],
        candidates: candidates.clone(),
        warmup: 2,
        rounds: 6,
        budget: Duration::from_millis(50),
        root: 3,
    };
    let results = world.run(|t| bench(&t, &options, &mut |_| {}).unwrap());
    let result = results[0].clone().expect("rank 0 has the timings");
    assert!(results[1..].iter().all(Option::is_none));
    // Every rank's time, busy broadcasting and waiting between broadcasts.
    assert_eq!(result.rank_time.len(), 5);
    for r in &result.rank_time {
        assert!(r.busy_s > 0.0 && r.waiting_s > 0.0, "{r:?}");
    }
    let timings = result.timings;
    assert_eq!(timings.len(), 3 * (candidates.len() - 1));
    for t in &timings {
        assert!(t.correct, "{t:?}");
        assert!(t.rounds >= 5 && t.rounds <= 6, "{t:?}");
        assert!(t.min_us <= t.median_us && t.median_us <= t.p90_us, "{t:?}");
        assert!(t.trimmed_us <= t.p90_us + 1e-9, "{t:?}");
    }
    let tuning = Tuning::from_timings(timings, 5, 3, Some(&tree()), Default::default());
    assert_eq!(tuning.ranges.len(), 3);
    assert_eq!(tuning.range_for(0).measured_bytes, 0);
    assert_eq!(tuning.range_for(50).measured_bytes, 5);
    assert_eq!(tuning.range_for(1 << 20).measured_bytes, 100);
    assert_eq!(tuning.ranges[2].to_bytes, None);
    let text = serde_json::to_string_pretty(&tuning).unwrap();
    let back = Tuning::parse(&text).unwrap();
    assert_eq!(back, tuning);
    assert_eq!(back.tree().unwrap(), Some(tree()));
    let rules = tuning.openmpi_rules();
    assert!(rules.contains("7 # collective id: bcast"), "{rules}");
    assert!(rules.contains("5 # communicator size"), "{rules}");
    assert_eq!(rules.lines().filter(|l| l.contains("# from")).count(), 3);

    // Every rank applies the table to lengths in every range, from every root.
    for root in 0..5 {
        for len in [0, 3, 64, 1000] {
            let got = world.run(|t| {
                let mut buf = if t.rank() == root {
                    payload(root, len)
                } else {
                    vec![0; len]
                };
                broadcast_tuned(&t, &mut buf, root, &back).unwrap();
                buf
            });
            assert!(
                got.iter().all(|b| *b == payload(root, len)),
                "root {root}, {len} bytes"
            );
        }
    }
}

#[test]
fn names_parse_back_to_their_plans() {
    let full = TopologyNode::cluster(vec![
        TopologyNode::cluster(vec![
            TopologyNode::group(vec![0, 1]),
            TopologyNode::group(vec![2, 3]),
        ]),
        TopologyNode::cluster(vec![
            TopologyNode::group(vec![4, 5]),
            TopologyNode::group(vec![6, 7]),
        ]),
    ]);
    for depth in 1..=2 {
        let plan = Plan::Magpie {
            tree: prune_to_depth(&full, depth),
            between: BaseAlgorithm::Pipeline { segment: 8192 },
            inside: BaseAlgorithm::ScatterAllgather,
        };
        let name = plan.name();
        assert_eq!(
            parse_candidate(&name, Some(&full)),
            Ok(Candidate::Plan(plan)),
            "{name}"
        );
    }
    let interpipe = Plan::Interpipe {
        tree: prune_to_depth(&full, 2),
        between: BaseAlgorithm::Flat,
        inside: BaseAlgorithm::Binomial,
        segment: 65536,
    };
    assert_eq!(interpipe.name(), "interpipe:64KiB(flat/binomial)@2");
    assert_eq!(
        parse_candidate(&interpipe.name(), Some(&full)),
        Ok(Candidate::Plan(interpipe))
    );
    assert!(parse_candidate("interpipe:0(flat/flat)@1", Some(&full)).is_err());
    assert_eq!(parse_candidate("MPI_Bcast", None), Ok(Candidate::Library));
    assert!(parse_candidate("magpie(flat/flat)@1", None).is_err());
    assert!(parse_candidate("magpie(flat)@1", Some(&full)).is_err());
    assert!(Tuning::parse("{}").is_err());
}
