//! The flags of `measure` that choose the pair test and what is derived from it.

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use lgate_derive::OutputOptions;
use lgate_harness::{AnyPairTest, PingPong};
use lgate_plogp_bench::{OptionsError, PLogP, PLogPOptions};
use lgate_rundir::MessageSize;

/// The pair test and its outputs, as `measure`'s flags give them.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// The pair test.
    #[arg(long, value_enum, default_value_t = TestKind::Plogp)]
    test: TestKind,
    /// PLogP: the largest message size; sizes are 0 and powers of two up to it [default: 2MiB].
    #[arg(long, value_name = "SIZE")]
    max_size: Option<MessageSize>,
    /// Repetitions per message size (and per PLogP procedure).
    #[arg(long, default_value_t = PingPong::DEFAULT_REPS, value_name = "R")]
    reps: usize,
    /// PLogP: the sender waits K x RTT before timing the receive of o_r(m) [default: 1.3].
    #[arg(long, value_name = "K")]
    or_wait: Option<f64>,
    /// PLogP: the pair test's time budget in seconds, shared by its sizes and procedures: a
    /// procedure stops repeating (after at least 3 repetitions) once its share is spent; 0
    /// runs every repetition whatever it costs [default: 0.3].
    #[arg(long, value_name = "SECONDS")]
    pair_budget: Option<f64>,
    /// PLogP: do not measure midpoints where a size misses the interpolation of its
    /// neighbours.
    #[arg(long)]
    no_adaptive: bool,
    /// Sizes of the matrices: PLogP's t(m), o_s, o_r, g and features, ping-pong's RTT(m)
    /// [default: 0,1KiB,64KiB,1MiB up to the largest size measured; a ping-pong: those of them
    /// it measures, else its smallest and largest size].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    matrix_sizes: Option<Vec<MessageSize>>,
    /// The statistic of the repetitions used in matrices.
    #[arg(long, default_value = "median", value_parser = crate::estimator_parser())]
    estimator: lgate_rundir::Estimator,
    /// PLogP: keep every repetition (raw.parquet).
    #[arg(long)]
    raw: bool,
    /// PLogP: also write the tables as CSV.
    #[arg(long)]
    csv: bool,
    /// Ping-pong: message sizes [default: 0 and 1 B to 1 MiB in powers of two].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    sizes: Option<Vec<MessageSize>>,
}

/// The pair tests `measure` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TestKind {
    /// The PLogP parameters L, o_s(m), o_r(m), g(m) and RTT(m), and distance matrices.
    Plogp,
    /// Round-trip times for each message size.
    Pingpong,
}

/// `--max-size` unless given: 2 MiB.
const DEFAULT_MAX_SIZE: usize = 2 << 20;

/// `--or-wait` unless given.
const DEFAULT_OR_WAIT: f64 = 1.3;

impl TestArgs {
    /// The pair test the arguments ask for and what is derived from it, checked: a flag of the
    /// other test is refused, not dropped.
    pub fn test(&self) -> Result<(Box<dyn AnyPairTest>, OutputOptions)> {
        crate::count("--reps", lgate_stats::check_repetitions(self.reps))?;
        let (test, outputs, largest): (Box<dyn AnyPairTest>, OutputOptions, usize) = match self.test
        {
            TestKind::Pingpong => {
                let plogp_only: Vec<&str> = [
                    (self.max_size.is_some(), "--max-size"),
                    (self.or_wait.is_some(), "--or-wait"),
                    (self.pair_budget.is_some(), "--pair-budget"),
                    (self.no_adaptive, "--no-adaptive"),
                    (self.raw, "--raw"),
                ]
                .into_iter()
                .filter_map(|(given, flag)| given.then_some(flag))
                .collect();
                if !plogp_only.is_empty() {
                    bail!(
                        "{} set the PLogP test, not --test pingpong (whose message sizes are \
                         --sizes)",
                        plogp_only.join(", ")
                    );
                }
                let sizes: Vec<usize> = match &self.sizes {
                    Some(s) => s.iter().map(|m| m.0).collect(),
                    None => PingPong::default_sizes(),
                };
                let largest = sizes.iter().copied().max().unwrap_or(0);
                let outputs = OutputOptions::from_pingpong_flags(
                    self.matrix_sizes.clone(),
                    &sizes,
                    self.estimator,
                    self.csv,
                )?;
                (Box::new(PingPong::new(sizes, self.reps)?), outputs, largest)
            }
            TestKind::Plogp => {
                if self.sizes.is_some() {
                    bail!(
                        "--sizes sets the message sizes of --test pingpong: PLogP measures 0 and \
                         the powers of two up to --max-size (2MiB unless given), and midpoints \
                         where they are needed"
                    );
                }
                let max = self.max_size.map_or(DEFAULT_MAX_SIZE, |m| m.0);
                let budget = self.pair_budget.unwrap_or(PLogPOptions::DEFAULT_BUDGET_S);
                let options = PLogPOptions {
                    reps: self.reps,
                    or_wait: self.or_wait.unwrap_or(DEFAULT_OR_WAIT),
                    adaptive: !self.no_adaptive,
                    raw: self.raw,
                    budget_s: (budget > 0.0).then_some(budget),
                    ..PLogPOptions::new(max)
                };
                let outputs = OutputOptions::from_flags(
                    self.matrix_sizes.clone(),
                    max,
                    self.estimator,
                    self.csv,
                )?;
                let test = PLogP::new(options).map_err(|e| match e {
                    OptionsError::OrWait(_) => anyhow::anyhow!(
                        "--or-wait must be at least 1 (the sender waits k x RTT before the receive)"
                    ),
                    OptionsError::Budget(_) => {
                        anyhow::anyhow!("--pair-budget must be above 0 seconds")
                    }
                    OptionsError::Reps(e) => anyhow::anyhow!("--reps {e}"),
                    e => e.into(),
                })?;
                (Box::new(test), outputs, max)
            }
        };
        outputs.check_largest(largest)?;
        Ok((test, outputs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_the_help_names_are_those_used() {
        // The help says [default: 0.3] for --pair-budget and [default: 2MiB] for --max-size.
        assert_eq!(PLogPOptions::DEFAULT_BUDGET_S, 0.3);
        assert_eq!(DEFAULT_MAX_SIZE, "2MiB".parse::<MessageSize>().unwrap().0);
    }
}
