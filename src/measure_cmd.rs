//! `lgate-plogp measure`: run a pair test between every pair of MPI ranks.

use anyhow::Result;

pub use crate::measure_args::MeasureArgs;

/// Runs `measure` on this rank.
#[cfg(feature = "mpi")]
pub fn run(args: MeasureArgs) -> Result<()> {
    use lgate_harness::Transport;

    // Flags every rank reads alike are checked before MPI starts, and rank 0 alone says what
    // is wrong with them.
    if args.resume.is_none() {
        args.options().map_err(crate::output::once_per_job)?;
        args.pair_test.test().map_err(crate::output::once_per_job)?;
    }
    let started = std::time::Instant::now();
    let mpi = lgate_mpi::MpiTransport::init_for_pair_tests()?;
    let mpi_init_s = started.elapsed().as_secs_f64();
    let rank = mpi.rank();
    let args = match args.resume.clone() {
        Some(dir) => crate::resume_args::with_run_flags(&mpi, &dir, args)?,
        None => args,
    };
    let once = |e: anyhow::Error| match rank {
        0 => e,
        _ => anyhow::Error::new(crate::output::SaidByRankZero),
    };
    let options = args.options().map_err(once)?;
    let (mut test, mut outputs) = args.pair_test.test().map_err(once)?;
    outputs.dense = args.plan.dense();
    if args.dry_run {
        return match lgate_harness::dry_run(&mpi, test.as_mut(), &options) {
            Ok(Some(plan)) => {
                for line in plan.lines {
                    println!("{line}");
                }
                Ok(())
            }
            Ok(None) | Err(lgate_harness::HarnessError::Aborted) => Ok(()),
            Err(e) if e.leaves_others_waiting() => {
                eprintln!("lgate-plogp: rank {rank}: error: {e}");
                mpi.abort(1)
            }
            Err(e) => Err(crate::resume_args::said(e)),
        };
    }
    match lgate_harness::run(&mpi, test.as_mut(), &options) {
        Ok(Some(report)) => {
            // Measured; now derived, on rank 0 alone, once every rank is done.
            let deriving = std::time::Instant::now();
            let derived = lgate_rundir::RunDir::open(&report.run_dir)
                .map_err(anyhow::Error::from)
                .and_then(|run| Ok((lgate_derive::derive(&run, &outputs)?, run)));
            // The levels `cluster` finds, with their confidence, recorded in report.json.
            let found = (derived.as_ref().ok()).map(|(_, run)| record_levels(run, &report));
            let deriving_s = deriving.elapsed().as_secs_f64();
            // The others sleep until then (also when deriving failed), not spin in MPI_Finalize.
            lgate_harness::wait_for_rank_0(&mpi)?;
            let (derived, run) = derived?;
            // Everything is written: a signal from here on (a launcher ending a rank stuck in
            // MPI_Finalize) has nothing to continue.
            lgate_harness::interrupt::disarm();
            if !args.quiet {
                let meta = run.read_meta().ok();
                let job = lgate_harness::JobTimes {
                    mpi_init_s,
                    setup_s: report.setup_s,
                    measuring_s: report.summary.wall_s,
                    deriving_s,
                    total_s: started.elapsed().as_secs_f64(),
                };
                let summary = lgate_harness::MeasureSummary {
                    report: &report,
                    meta: meta.as_ref(),
                    derived: &derived,
                    job: Some(job),
                };
                eprint!("{summary}");
                match found {
                    Some(Ok(levels)) => eprint!("{}", levels_lines(&levels, &run)),
                    Some(Err(e)) => eprintln!("warning: the levels were not clustered: {e:#}"),
                    None => {}
                }
            }
            Ok(())
        }
        Ok(None) => Ok(lgate_harness::wait_for_rank_0(&mpi)?),
        // Rank 0 says why and its exit status becomes mpirun's; the others finish MPI cleanly
        // and quietly, so that mpirun does not kill rank 0 before it has said it.
        Err(lgate_harness::HarnessError::Aborted) => Ok(()),
        Err(e) if e.leaves_others_waiting() => {
            eprintln!("lgate-plogp: rank {rank}: error: {e}");
            mpi.abort(1)
        }
        Err(e) => Err(crate::resume_args::said(e)),
    }
}

/// Clusters the run in `run` as `cluster` does with its defaults and records the levels found,
/// with their confidence and what measuring said about levels in doubt, in its report.json.
#[cfg(feature = "mpi")]
fn record_levels(
    run: &lgate_rundir::RunDir,
    report: &lgate_harness::RunReport,
) -> Result<lgate_rundir::FoundLevels> {
    let notes = (report.summary.notes.iter())
        .filter(|n| n.starts_with("confidence:"))
        .cloned()
        .collect();
    let found = lgate_cluster::found_levels(run.path(), notes)?;
    // A ping-pong run derives no report.json: its levels are said, not recorded.
    if run.file(lgate_rundir::files::REPORT_FILE).is_file() {
        let mut written = run.read_report()?;
        written.set_levels(Some(found.clone()));
        run.write_file(
            lgate_rundir::files::REPORT_FILE,
            written.to_json().as_bytes(),
        )?;
    }
    Ok(found)
}

/// The levels found, for people: each with its groups and confidence, then the undecided.
#[cfg(feature = "mpi")]
fn levels_lines(found: &lgate_rundir::FoundLevels, run: &lgate_rundir::RunDir) -> String {
    use std::fmt::Write;
    let recorded = run.file(lgate_rundir::files::REPORT_FILE).is_file();
    let mut text = format!(
        "levels: {} as `cluster` finds them with its defaults{}\n",
        found.levels.len(),
        if recorded { " (in report.json)" } else { "" }
    );
    for l in &found.levels {
        let sure = l
            .confidence
            .map_or(String::new(), |c| format!(", confidence {c:.2}"));
        let _ = writeln!(text, "  {:<8} {} groups{sure}", l.name, l.groups);
    }
    for u in &found.undecided {
        if let Some(z) = u.z {
            let _ = writeln!(
                text,
                "  undecided: {} groups of hosts, nearly decided by the pairs between hosts \
                 (z = {z:.1}, 4 decides)",
                u.groups
            );
            continue;
        }
        let _ = writeln!(
            text,
            "  undecided: {}{} groups, in {:.0} % of the resamples",
            u.name.as_ref().map_or(String::new(), |n| format!("{n}, ")),
            u.groups,
            100.0 * u.share
        );
    }
    text
}

/// Runs `measure` on this rank.
#[cfg(not(feature = "mpi"))]
pub fn run(args: MeasureArgs) -> Result<()> {
    // The arguments are still checked, so a script fails for the right reason.
    args.options()?;
    args.pair_test.test()?;
    anyhow::bail!(
        "this lgate-plogp was built without MPI (--no-default-features), so it cannot measure; \
         build it with the default features on a machine with an MPI library"
    )
}
