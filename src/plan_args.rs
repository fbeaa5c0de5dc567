//! The flags that choose a measurement plan (`measure --plan`, and `simulate` modelling it).

use anyhow::Result;
use clap::{Args, ValueEnum};
use lgate_harness::{PlanKind, StagedOptions, StagedPlanOptions};
use lgate_rundir::MessageSize;

/// How the pairs of a job are measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanName {
    /// Screening tests (milliseconds a pair) for every pair inside each host, all hosts at
    /// once, and for K sampled pairs per pair of hosts in tournament rounds; the full test for
    /// a sample of pairs; unmeasured matrix entries filled from their hosts' pairs.
    Staged,
    /// The full test for every pair (hours at a thousand ranks).
    Full,
}

/// Options of the measurement plan.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The plan: `staged` screens every pair inside hosts and samples pairs between hosts;
    /// `full` gives every pair the full test.
    #[arg(long, value_enum, default_value_t = PlanName::Staged)]
    plan: PlanName,
    /// Staged: rank pairs screened per pair of hosts (groups), spread over their ranks.
    #[arg(long, default_value_t = StagedOptions::default().pairs_between, value_name = "K")]
    pairs_between: usize,
    /// Staged: pairs given the full test, inside hosts and between them each (spread over the
    /// screening's distances; the slowest pair between hosts is added).
    #[arg(long, default_value_t = StagedOptions::default().samples, value_name = "N")]
    samples: usize,
    /// Staged: screened pairs tested again alone at the end, to measure the bias of testing
    /// side by side.
    #[arg(long, default_value_t = StagedOptions::default().alone, value_name = "N")]
    alone: usize,
    /// Staged: the most extra screening tests for pairs of hosts whose K samples disagree
    /// (several rails, one slow link), screened one at a time.
    #[arg(long, default_value_t = StagedOptions::default().refine, value_name = "N")]
    refine: usize,
    /// Staged: the most extra screening tests between hosts whose grouping (a leaf, a switch)
    /// the K samples nearly decide, screened one at a time: the pairs that would decide it
    /// (none on a fabric whose levels are clear; 0: none ever).
    #[arg(long, default_value_t = StagedOptions::default().confidence, value_name = "N")]
    confidence: usize,
    /// Staged: screen every pair between hosts, LinkTest's way (P - 1 rounds of P/2 pairs at
    /// once, up to 4096 ranks), instead of K sampled pairs per pair of hosts; the pairs slow
    /// against their hosts' others are retested alone, each beside a usual pair, and the run's
    /// health names those that stay slow (a bad link, port or cable).
    #[arg(long)]
    sweep: bool,
    /// Staged: the most pair tests running at once across the machine [default: one per
    /// host].
    #[arg(long, value_name = "N")]
    concurrency: Option<usize>,
    /// Staged: the screening test's largest message size (round trips at 0 B and at it).
    #[arg(long, default_value = "64KiB", value_name = "SIZE")]
    screen_size: MessageSize,
    /// Staged: repetitions per screening size.
    #[arg(long, default_value_t = StagedPlanOptions::default().screen_reps, value_name = "R")]
    screen_reps: usize,
    /// Staged: also above 4096 ranks, write dense P x P matrices (matrices/, 8 bytes a pair and
    /// size: 131 GB at 128 000 ranks) and the screening table; the host blocks (hosts/) are
    /// always written.
    #[arg(long)]
    dense: bool,
}

impl PlanArgs {
    /// The plan the flags ask for, checked.
    pub fn plan(&self) -> Result<PlanKind> {
        let staged = StagedPlanOptions {
            plan: StagedOptions {
                pairs_between: self.pairs_between,
                samples: self.samples,
                alone: self.alone,
                refine: self.refine,
                confidence: self.confidence,
                concurrency: self.concurrency,
                sweep: self.sweep,
            },
            screen_sizes: if self.screen_size.0 == 0 {
                vec![0]
            } else {
                vec![0, self.screen_size.0]
            },
            screen_reps: self.screen_reps,
        };
        lgate_harness::staged::check_options(&staged.plan)
            .map_err(|e| anyhow::anyhow!(schedule_said(&e)))?;
        crate::count(
            "--screen-reps",
            lgate_stats::check_repetitions(staged.screen_reps),
        )?;
        Ok(match self.plan {
            PlanName::Staged => PlanKind::Staged(staged),
            PlanName::Full => PlanKind::Full,
        })
    }

    /// When a staged run writes dense matrices.
    pub fn dense(&self) -> lgate_derive::DenseMatrices {
        if self.dense {
            lgate_derive::DenseMatrices::Always
        } else {
            lgate_derive::DenseMatrices::UpToLimit
        }
    }

    /// Whether the plan is staged.
    pub fn staged(&self) -> bool {
        self.plan == PlanName::Staged
    }
}

/// A plan's error as `measure` and `simulate` say it: each choice named by its flag.
pub fn schedule_said(e: &lgate_harness::ScheduleError) -> String {
    use lgate_harness::{ScheduleError, StagedChoice};
    match e {
        ScheduleError::NoneOf(choice) => {
            let flag = match choice {
                StagedChoice::PairsBetween => "--pairs-between",
                StagedChoice::Concurrency => "--concurrency",
            };
            format!("{flag} must be at least 1")
        }
        ScheduleError::SweepTooLarge { pairs, size, most } => format!(
            "--sweep tests every pair between hosts: {pairs} pairs at {size} ranks; it runs on \
             up to {most} ranks: sweep a part of the machine at a time"
        ),
        e => e.to_string(),
    }
}

/// Refuses a fast-mode share of ranks (`--fast`, of `measure` and `simulate`) outside (0, 1].
pub fn check_fast(fast: Option<f64>) -> Result<()> {
    match fast {
        Some(f) if !(f > 0.0 && f <= 1.0) => {
            anyhow::bail!("--fast {f}: the share of ranks to test must be above 0 and at most 1")
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lgate_harness::{ScheduleError, StagedChoice};

    #[test]
    fn a_refused_plan_names_the_flag_of_its_choice() {
        let said = schedule_said(&ScheduleError::NoneOf(StagedChoice::PairsBetween));
        assert_eq!(said, "--pairs-between must be at least 1");
        let said = schedule_said(&ScheduleError::NoneOf(StagedChoice::Concurrency));
        assert_eq!(said, "--concurrency must be at least 1");
        let said = schedule_said(&ScheduleError::SweepTooLarge {
            pairs: 10,
            size: 5,
            most: 4,
        });
        assert!(said.starts_with("--sweep tests every pair between hosts: 10 pairs at 5 ranks"));
        // The library says it without flags.
        let e = ScheduleError::NoneOf(StagedChoice::PairsBetween).to_string();
        assert_eq!(e, "pairs_between must be at least 1");
    }
}
