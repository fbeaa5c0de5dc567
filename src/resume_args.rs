//! `measure --resume`: a run's recorded flags, with those given now on top.

use anyhow::Result;

use lgate_rundir::PlanItem;

use crate::measure_args::MeasureArgs;

/// `measure`'s flags alone, parsed from words: a resumed run's recorded ones, then those given
/// now, a later flag replacing an earlier one.
#[derive(Debug, clap::Parser)]
#[command(name = "measure", args_override_self = true)]
struct MeasureLine {
    #[command(flatten)]
    args: MeasureArgs,
}

/// Flags of a run's command line that do not carry over to its resumption, and whether each
/// takes a value.
const NOT_RESUMED: &[(&str, bool)] = &[
    ("--out", true),
    ("--output", true),
    ("-o", true),
    ("--force", false),
    ("--resume", true),
    ("--dry-run", false),
    ("--stop-after", true),
    ("--quiet", false),
    ("-q", false),
];

/// The flags of a recorded command line that a resumption takes over: those after `measure`
/// but the ones in [`NOT_RESUMED`]; `None` when it is no `measure` command.
fn carried_over(recorded: &[String]) -> Option<Vec<String>> {
    let at = recorded.iter().position(|w| w == "measure")?;
    let mut out = Vec::new();
    let mut words = recorded[at + 1..].iter();
    while let Some(word) = words.next() {
        let name = word.split('=').next().unwrap_or(word);
        match NOT_RESUMED.iter().find(|(flag, _)| *flag == name) {
            Some((_, takes_value)) => {
                if *takes_value && !word.contains('=') {
                    words.next();
                }
            }
            None => out.push(word.clone()),
        }
    }
    Some(out)
}

/// The arguments of a resumption: the run's `recorded` command line, then the words given
/// `now` (after `measure`); `None` when the recorded line is not one this version reads.
pub(crate) fn resumed_args(recorded: &[String], now: &[String]) -> Option<MeasureArgs> {
    let mut words = vec!["measure".to_string()];
    words.extend(carried_over(recorded)?);
    words.extend(now.iter().cloned());
    <MeasureLine as clap::Parser>::try_parse_from(words)
        .ok()
        .map(|line| line.args)
}

/// With `--resume DIR`: the run's recorded flags with those given now on top. Rank 0 reads
/// DIR/meta.json and every rank takes its reading, so the run directory need only be visible
/// to rank 0.
#[cfg(feature = "mpi")]
pub fn with_run_flags(
    mpi: &lgate_mpi::MpiTransport,
    dir: &std::path::Path,
    args: MeasureArgs,
) -> Result<MeasureArgs> {
    use lgate_harness::Transport;

    let rank = mpi.rank();
    // Rank 0 reads the run's command line and sends it to every rank; none when unreadable.
    let reading = (rank == 0).then(|| {
        lgate_rundir::RunDir::open(dir)
            .and_then(|r| r.read_meta())
            .map(|m| m.command_line)
    });
    let shared = match &reading {
        Some(Ok(line)) => Some(line.clone()),
        _ => None,
    };
    let recorded = match lgate_harness::broadcast(mpi, (rank == 0).then_some(&shared))? {
        Some(recorded) => recorded,
        None => match reading {
            Some(Err(e)) => return Err(e.into()),
            _ => return Err(anyhow::Error::new(crate::output::SaidByRankZero)),
        },
    };
    let now: Vec<String> = std::env::args()
        .skip_while(|w| w != "measure")
        .skip(1)
        .collect();
    match resumed_args(&recorded, &now) {
        Some(merged) => Ok(merged),
        None => {
            if rank == 0 {
                eprintln!(
                    "lgate-plogp: warning: {}: the run's recorded command line is not one this \
                     version reads; resuming with the flags given now",
                    dir.display()
                );
            }
            Ok(args)
        }
    }
}

/// A harness error as `measure` says it: a resumption refused for other parameters names the
/// flag that sets each one that differs, a plan refused the flag of its choice.
pub(crate) fn said(e: lgate_harness::HarnessError) -> anyhow::Error {
    let (run, differences) = match e {
        lgate_harness::HarnessError::ResumeParameters { run, differences } => (run, differences),
        lgate_harness::HarnessError::Schedule(e) => {
            return anyhow::anyhow!(crate::plan_args::schedule_said(&e))
        }
        e => return e.into(),
    };
    let each: Vec<String> = (differences.iter())
        .map(|d| match (flag_of(&d.what), &d.what) {
            (Some(flag), what) => format!("{what} ({flag}): {} in the run, {} now", d.then, d.now),
            (None, PlanItem::TestParameter(key)) => {
                format!("test parameter {key}: {} in the run, {} now", d.then, d.now)
            }
            (None, _) => d.to_string(),
        })
        .collect();
    anyhow::anyhow!(
        "{}: cannot resume with other parameters: {}",
        run.display(),
        each.join("; ")
    )
}

/// The flag of `measure` that sets `item` alone, where one does.
fn flag_of(item: &PlanItem) -> Option<&'static str> {
    match item {
        PlanItem::TestParameter(key) => match key.as_str() {
            "reps" => Some("--reps"),
            "or_wait" => Some("--or-wait"),
            "budget_s" => Some("--pair-budget"),
            "adaptive" => Some("--no-adaptive"),
            "raw" => Some("--raw"),
            "sizes" => Some("--max-size or --sizes"),
            _ => None,
        },
        PlanItem::Test => Some("--test"),
        PlanItem::Sweeps => Some("--sweeps"),
        PlanItem::Seed => Some("--seed"),
        PlanItem::Fast => Some("--fast"),
        PlanItem::Ranks | PlanItem::Topology | PlanItem::Plan => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_resumption_names_the_flags_of_what_differs() {
        let differ = |what: PlanItem, then: &str, now: &str| lgate_rundir::PlanDifference {
            what,
            then: then.into(),
            now: now.into(),
        };
        let e = lgate_harness::HarnessError::ResumeParameters {
            run: "lgate-run-x".into(),
            differences: vec![
                differ(PlanItem::TestParameter("reps".into()), "4", "5"),
                differ(PlanItem::TestParameter("estimator".into()), "median", "p10"),
                differ(PlanItem::Ranks, "4", "2"),
            ],
        };
        assert_eq!(
            said(e).to_string(),
            "lgate-run-x: cannot resume with other parameters: reps (--reps): 4 in the run, 5 \
             now; test parameter estimator: median in the run, p10 now; ranks: 4 in the run, 2 now"
        );
    }
}
