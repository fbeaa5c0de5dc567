//! `simulate`'s flags for a machine that changed since its first measurement: odd host facts,
//! slower hosts, links and ranks, and the noise drawn anew.

use clap::Args;
use lgate_simulate::{ChangeKind, SimulateError};

/// What differs from the machine's first measurement.
#[derive(Debug, Args)]
pub struct ChangeArgs {
    /// Make one host's facts differ from the rest (meta.json's `hosts`), as HOST:FACT=VALUE
    /// with the host by name or number: 3:governor=powersave, n1:smt=off, 0:boost=off.
    /// Repeatable.
    #[arg(long, value_name = "HOST:FACT=VALUE")]
    pub odd_host: Vec<lgate_simulate::HostChange>,
    /// Make a host slower: every pair with a rank on it takes FACTOR times as long, as
    /// HOST=FACTOR with the host by name or number (2=1.15). Repeatable; for the "after" run
    /// of `diff`.
    #[arg(long, value_name = "HOST=FACTOR", value_parser = |s: &str| lgate_simulate::Degradation::parse(s, false))]
    pub slow_host: Vec<lgate_simulate::Degradation>,
    /// Make the link between two hosts slower: every pair with a rank on each takes FACTOR
    /// times as long, as HOST:HOST=FACTOR (0:3=2). Repeatable.
    #[arg(long, value_name = "HOST:HOST=FACTOR", value_parser = |s: &str| lgate_simulate::Degradation::parse(s, true))]
    pub slow_link: Vec<lgate_simulate::Degradation>,
    /// Make a rank slower: every pair it is in takes FACTOR times as long, as RANK=FACTOR
    /// (5=1.5): a busy or slow core. Repeatable.
    #[arg(long, value_name = "RANK=FACTOR", value_parser = lgate_simulate::RankSlowdown::parse)]
    pub slow_rank: Vec<lgate_simulate::RankSlowdown>,
    /// Make one pair of ranks slower: that pair alone takes FACTOR times as long, as
    /// RANK:RANK=FACTOR (3:12=2): a bad link, port or cable between two particular ranks.
    /// Repeatable.
    #[arg(long, value_name = "RANK:RANK=FACTOR", value_parser = lgate_simulate::RankSlowdown::parse_pair)]
    pub slow_pair: Vec<lgate_simulate::RankSlowdown>,
    /// Measure the same machine again: this run's noise is drawn anew (N = 1, 2, ...) while the
    /// placement and the artifacts stay those of --seed.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub rerun: u64,
}

impl ChangeArgs {
    /// The slower hosts and links, hosts first.
    pub fn degraded(&self) -> Vec<lgate_simulate::Degradation> {
        self.slow_host
            .iter()
            .chain(&self.slow_link)
            .cloned()
            .collect()
    }
}

/// A simulation's error as `simulate` says it: a change that does not fit the machine is named
/// by its flag.
pub fn said(e: SimulateError) -> anyhow::Error {
    match e {
        SimulateError::Change {
            what,
            given,
            problem,
        } => anyhow::anyhow!("{} {given}: {problem}", flag_of(what)),
        SimulateError::Harness(lgate_harness::HarnessError::Schedule(e)) => {
            anyhow::anyhow!(crate::plan_args::schedule_said(&e))
        }
        e => e.into(),
    }
}

/// The flag that asks for a change of the machine.
fn flag_of(what: ChangeKind) -> &'static str {
    match what {
        ChangeKind::SlowHost => "--slow-host",
        ChangeKind::SlowLink => "--slow-link",
        ChangeKind::SlowRank => "--slow-rank",
        ChangeKind::SlowPair => "--slow-pair",
        ChangeKind::OddHost => "--odd-host",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_that_does_not_fit_is_named_by_its_flag() {
        let e = SimulateError::Change {
            what: ChangeKind::SlowPair,
            given: "3:999=2".into(),
            problem: "no rank 999; the ranks are 0-15".into(),
        };
        assert_eq!(
            e.to_string(),
            "slow pair 3:999=2: no rank 999; the ranks are 0-15"
        );
        assert_eq!(
            said(e).to_string(),
            "--slow-pair 3:999=2: no rank 999; the ranks are 0-15"
        );
    }
}
