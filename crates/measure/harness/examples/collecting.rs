//! Rank 0's cost of collecting results: a staged run over the in-process transport with
//! `HOSTS` hosts of `PER_HOST` ranks (threads), printing rank 0's collecting CPU per result;
//! the journal binary, or JSON lines when a third argument says `json`.
//!
//!     cargo run --release -p lgate-harness --example collecting -- 16 8 [json]

use std::time::{Duration, Instant};

use lgate_harness::{
    run, AnyPairTest, InProcessWorld, PingPong, PlanKind, ProgressStyle, RunOptions,
    StagedPlanOptions, TopologySource,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let hosts: usize = args.next().map_or(Ok(16), |a| a.parse())?;
    let per_host: usize = args.next().map_or(Ok(8), |a| a.parse())?;
    let journal = match args.next().as_deref() {
        Some("json") => lgate_rundir::JournalFormat::Json,
        _ => lgate_rundir::JournalFormat::Binary,
    };
    let size = hosts * per_host;
    let dir = tempfile_dir()?;
    let names = (0..size).map(|r| format!("h{}", r / per_host)).collect();
    let world = InProcessWorld::new(size)
        .with_hosts(names)
        .with_timeout(Duration::from_secs(600));
    let options = RunOptions {
        progress: ProgressStyle::Quiet,
        seed: Some(1),
        topology: TopologySource::Auto,
        plan: PlanKind::Staged(StagedPlanOptions {
            screen_reps: 4,
            ..StagedPlanOptions::default()
        }),
        journal,
        // As `measure` runs it: the confidence budget asks `cluster`'s judge.
        judge: Some(&lgate_cluster::ScreenedJudge),
        ..RunOptions::new(&dir)
    };
    let started = Instant::now();
    let reports = world.run(|t| {
        let mut test = PingPong::new(vec![0], 4)?;
        run(&t, &mut test as &mut dyn AnyPairTest, &options)
    });
    let wall = started.elapsed().as_secs_f64();
    let mut report = None;
    for r in reports {
        if let Some(r) = r? {
            report = Some(r);
        }
    }
    let report = report.ok_or("rank 0 returned no report")?;
    let results = report.summary.pairs_measured.max(1);
    let zero = report
        .summary
        .rank_time
        .iter()
        .find(|r| r.rank == 0)
        .ok_or("no rank 0 time")?;
    println!(
        "{hosts} hosts x {per_host} ranks: {results} results in {wall:.2} s; rank 0 collecting {:.3} s CPU, {:.2} us a result",
        zero.collecting_cpu_s,
        zero.collecting_cpu_s / results as f64 * 1e6
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

fn tempfile_dir() -> std::io::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("lgate-collecting-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir.join("run"))
}
